import NarniaCrypto
import NarniaLanguage
import Glibc
import NarniaStore
import NarniaSystem

/// `sync REMOTE`: exchanges the store with an rclone remote (`name:path` from the user's own
/// `rclone config`, or a plain path), so that both hold every file of both. See `SyncPlan` for
/// what moves; the remote is itself a store another device can open or sync with.
enum SyncCommand {
    static func run(_ s: Session, _ a: ParsedArguments) throws {
        // `~/Sync` is the home's, as for every host path (it made a folder named `~`: review AK).
        guard a.operands.count == 1, let word = a.operands.first, !word.text.isEmpty else {
            throw CommandFailure("needs one remote", hint: CommandTable.usage(of: "sync") + "  (an rclone remote name:path, or a folder)")
        }
        // A folder here is a host path: `~` and wildcards as for `lcd` (`sync backup*` made a
        // folder named `backup*` beside the one it matched: review BC-6).
        let matches: [String]
        do {
            matches = try s.expandHost(word)
        } catch let failure as CommandFailure where word.text.contains(":") {
            throw CommandFailure(failure.message, hint: "a remote's path is taken as it is: quote the * ? [ in it, as in '\(word.text)'")
        }
        guard matches.count == 1, let remote = matches.first else { throw CommandFailure("\(word.text): names more than one folder") }
        var rclone = try Rclone.find()
        rclone.isCancelled = { Session.interruptRequested != 0 }
        if !rclone.withheldSettings.isEmpty {
            s.note("sync", "not given to rclone: \(rclone.withheldSettings.joined(separator: ", ")) (they would change which store files rclone lists, copies, replaces or deletes, or what it prints)")
        }
        let vault = s.vault
        // The user's rclone config, read once, and only when a configured remote's name is met.
        var configFile: [String: [String: String]]?
        func configSection(_ name: String) -> [String: String]? {
            if configFile == nil { configFile = rclone.configSections() }
            return configFile?[name]
        }
        // The folders here that rclone's local backend reaches, if it does (`RcloneRemote`).
        let localFolders = try folders(reachedBy: remote, s, remote, section: configSection)
        for folder in localFolders { try checkFolderRemote(s, remote, folder, section: configSection) }
        let probe = vault.makeStoreProbe()
        let listing = Result { try rclone.list(remote) }
        if let probe { vault.removeStoreProbe(probe) }
        let (there, misspelled, links) = try listing.get()
        let probeSeen = probe.map { there[StorePath($0)] != nil } ?? false
        if try probeSeen || (localFolders.isEmpty && writesIntoStore(rclone, remote, vault)) {
            throw CommandFailure("\(s.err.name(remote)) is the vault's own store, reached by another path; nothing was sent", hint: "sync with a folder or remote outside the store")
        }
        if vault.holdsOnlyAnotherVault(there.keys.lazy.map(\.text)) {
            throw CommandFailure("\(s.err.name(remote)): holds the store of another vault (none of its journals, key files or objects is this vault's): syncing would mix the two in one folder; nothing was sent",
                                 hint: "sync with an empty folder or remote, or one that holds a copy of this vault (a copy looks so when another device rotated the master key, passwd --rotate, and its first sync there was cut short: run that sync again first)")
        }
        // A remote with no store file is filled: the user's own files there (a folder given
        // for the one in it, a drive's top) would have the store's put among them (review AS).
        if !there.keys.contains(where: { vault.syncFile($0.text) != nil }) {
            let others = try rclone.topNames(remote).filter(isUsersOwn).sorted(by: utf8Order)
            if !others.isEmpty {
                let shown = others.prefix(3).map(s.err.name).joined(separator: ", ") + (others.count > 3 ? ", …" : "")
                throw CommandFailure("\(s.err.name(remote)): holds no vault's store but \(others.count == 1 ? "1 file or folder" : "\(others.count) files and folders") of its own (\(shown)): the store's files would be put among them; nothing was sent",
                                     hint: "sync with an empty folder or remote, or a folder of its own in it (\(s.err.name(Rclone.join(remote, "vault"))), say)")
            }
        }
        // A shard folder there that is a link is not listed, yet what is sent goes through it:
        // journals in it would be replaced unseen by shorter copies (review AF).
        if let shard = links.first(where: Vault.isShardFolder) {
            throw CommandFailure("\(s.err.name(Rclone.join(remote, shard))) is a symbolic link, which rclone does not follow: the store files in the folder it points to cannot be listed, and files sent there would replace them unseen; nothing was sent",
                                 hint: "put the folder there in place of the link")
        }
        // Store files there that rclone cannot fetch are said, not taken for files that went
        // during the sync (which fails it: review AC); they stay there, unread, until renamed.
        warnUnread(s, remote, misspelled, "that rclone lists under another name and cannot fetch (not UTF-8, or holding a control character or ‛)") {
            "rename \($0) there in UTF-8 without those, keeping the hex digits and the sync engine's suffix"
        }
        warnUnread(s, remote, links, "that are symbolic links, which rclone does not follow") { _ in "put the file there in place of the link" }
        let folder = try vault.makeReceivingFolder()
        defer { vault.removeReceivingFolder(folder) }
        var fetching = SyncPlan.make(here: try vault.localSyncFiles(), there: there, vault: vault)
        try compareSameLengthJournals(&fetching, remote: remote, rclone: rclone, vault: vault, listIn: folder,
                                      folderThere: oneFolderHoldingAll(localFolders))
        let keyFilesDiffering = try differingSameLengthKeyFiles(fetching, remote: remote, rclone: rclone, vault: vault, listIn: folder,
                                                                folderThere: oneFolderHoldingAll(localFolders))
        var retiredThereConfirmed: [StorePath: Bool] = [:]
        try confirmRetiredThere(&fetching, remote: remote, rclone: rclone, vault: vault, known: &retiredThereConfirmed, fetchingOthers: true)
        let meter = ProgressMeter(session: s, label: "sync", totalBytes: UInt64(fetching.fetchBytes + fetching.sendBytes))
        func watch(_ label: String) {
            meter?.begin(item: label)
            rclone.progress = meter.map { m in { m.update(itemBytes: $0) } }
        }
        var report = Report()
        // Journals there that do not read and hold more than the copies here: not taken, and
        // said when the sync ends, after this device's own files went (review BE-4).
        var unreadThere: [UnreadJournal] = []
        // A content file that could not be fetched, said once the rest is sent (review DT-1).
        var fetchFailure: CommandFailure?
        let startSize = Dictionary(fetching.here.map { ($0.0.key, $0.1) }, uniquingKeysWith: { a, _ in a })
        func isHere(_ path: String) -> Bool { (try? FileSystem.lstatIfExists(vault.directory + "/" + path)) != nil }
        // Journals put in place from the remote (some retired, fetched to be read first).
        var takenJournals: [SyncFile] = []
        var takenFiles: [SyncFile] = []
        // Retired journals fetched and found as a retirement read them (`retiredToCheck`).
        var readAsRetiredThere: [SyncFile] = []
        // One name for the copies of forked journals, here and there.
        let copySuffix = conflictSuffix(vault)

        // 1. Fetch what is missing here; objects and key files are put in place before the
        // journals that name them — but this device's own objects after every journal, and
        // only once all have arrived: one here that no record here names is taken for the
        // trace of records this copy lost, and another copy writing as this device wrote it
        // (a fork, whose journal must arrive with it to be seen; review AA).
        if !fetching.fetch.isEmpty {
            watch("fetching")
            let (ahead, journalsRun) = try fetchObjectsThenJournals(fetching.fetch, rclone: rclone, from: remote, to: folder)
            if ahead.cancelled || journalsRun?.cancelled == true { throw Cancelled() }
            try vault.syncReceived(in: folder, fetching.fetch, placed: false)
            let own = Set(fetching.fetch.filter(vault.isOwnObject).map(\.key))
            var journalsArrived = true
            var missing = 0, missingJournals = 0
            // Key files that may hold a rotation's master key and did not arrive whole
            // (unreadable there, or cut short), and the journals that wait for such a key file.
            let keyFilesNotArrived = try fetching.fetch.filter { file in
                guard file.kind == .keyFile, let size = there[file.key] else { return false }
                return try vault.rotationKeyFileDidNotArrive(folder + "/" + file.path, lengthThere: size)
            }
            var awaitingKeyFile: [SyncFile] = []
            func place(_ file: SyncFile) throws {
                // A retired journal no version of which is here: the one a retirement read goes
                // there; another is taken in and read first.
                if fetching.retiredToCheck.contains(file.key) && vault.isAsRetirementRead(folder + "/" + file.path, as: file) {
                    readAsRetiredThere.append(file)
                    return
                }
                let outcome = try vault.acceptReceived(folder + "/" + file.path, as: file, conflictSuffix: copySuffix,
                                                       aKeyFileDidNotArrive: !keyFilesNotArrived.isEmpty)
                // The version there was fetched and is read here (or is a prefix of the one
                // here): once retired, it goes there without another look (`confirmRetiredThere`).
                if file.kind == .journal && [.taken, .keptAsCopy, .forked, .hereIsLonger].contains(outcome) { retiredThereConfirmed[file.key] = true }
                switch outcome {
                case .taken, .keptAsCopy:
                    report.received += 1
                    if file.kind == .journal { takenJournals.append(file) } else { takenFiles.append(file) }
                case .forked:
                    report.received += 1
                    report.forks.append(file)
                case .hereIsLonger: if file.kind == .journal { report.extendsThere.insert(file.key) }
                case .damaged(let why):
                    // Not taken (it would make the vault refuse to open); the version here,
                    // which reads, replaces it there when it holds as much (review BD-1).
                    journalsArrived = false
                    let shown = s.err.name(Rclone.join(remote, file.path))
                    if file.isCopy {
                        // A sync engine's copy, which no device writes: said at each sync
                        // while it is there, and a failure only when it may hold records that
                        // the journal here lacks (review BF-1: every sync failed for good); a
                        // longer one is judged with the journals, after the merge (`unreadFailure`).
                        let journal = max(startSize[file.originalKey] ?? 0, there[file.originalKey] ?? 0)
                        if journal >= (there[file.key] ?? .max) {
                            s.warning("sync", "\(shown) does not read (\(why)); a sync engine's copy, not longer than the journal, which no device writes: it was not taken; delete it there")
                        } else {
                            unreadThere.append(UnreadJournal(file: file, size: there[file.key] ?? 0, shown: shown, why: why))
                        }
                    } else if (startSize[file.key] ?? 0) >= (there[file.key] ?? .max) || vault.isOwnJournalFollowedByGarbage(folder + "/" + file.path, as: file) {
                        s.warning("sync", "\(shown) does not read (\(why)); it was not taken, and the copy here replaces it")
                        report.extendsThere.insert(file.key)
                        fetching.forkedThere.remove(file.key)
                    } else {
                        unreadThere.append(UnreadJournal(file: file, size: there[file.key] ?? 0, shown: shown, why: why))
                    }
                case .awaitsKeyFile:
                    journalsArrived = false
                    awaitingKeyFile.append(file)
                case .incomplete:
                    if file.kind == .journal { journalsArrived = false }
                    if (try FileSystem.lstatIfExists(folder + "/" + file.path)) == nil {
                        missing += 1
                        if file.kind == .journal { missingJournals += 1 }
                    }
                }
            }
            // Journals that retire a key file here, and inbox public key files, go in after the
            // others, and only when no journal waits for a rotation's key file. A rotation's
            // first step retires the key files it replaces under the old key: taken without its
            // key file, it refused the old passphrase while none other opened the vault (review
            // EM-1's cure made it arrive). An inbox public key file whose record waits was taken
            // at open for one planted by an old key file's holder, and deleted (review EO-2).
            var retiringKeyFiles: [SyncFile] = [], inboxKeyFiles: [SyncFile] = []
            for file in fetching.fetch where !own.contains(file.key) {
                if file.kind == .journal && vault.retiresKeyFileHere(journalAt: folder + "/" + file.path, id: file.id) {
                    retiringKeyFiles.append(file)
                } else if file.kind == .keyFile && there[file.key] == Int64(InboxPublicKeyFile.length) {
                    inboxKeyFiles.append(file)
                } else {
                    try place(file)
                }
            }
            if awaitingKeyFile.isEmpty { for file in retiringKeyFiles + inboxKeyFiles { try place(file) } }
            for file in fetching.fetch where own.contains(file.key) {
                if !journalsArrived { break }
                try place(file)
            }
            try vault.syncReceived(in: folder, fetching.fetch, placed: true)
            // A journal that could not be fetched (a file rclone cannot open there, a full disk
            // here) fails the sync before anything is sent: the plan to send was made against
            // journals there that were to be read first (review DU-1: sent after a failed fetch,
            // a torn copy here of another device's journal replaced the whole one there, unread).
            // When every journal came, one content file that could not come (a bad sector
            // there) holds back nothing this device sends: the sync goes on, and fails at its
            // end (review DT-1: every device's changes stayed out of that remote for good).
            // Review EE-3: the journals' failure is said when there is one, as it is what
            // stops the sync.
            if let journalsRun, journalsRun.status != 0 {
                return try finish(s, remote, report, rclone.failure("fetch from \(remote)", journalsRun))
            }
            // Journals sealed under a master key of another device's rotation whose key file is
            // not here whole wait for it (`Vault.Received.awaitsKeyFile`); the sync stops, as
            // what it sends is weighed against the journals there.
            if !awaitingKeyFile.isEmpty {
                return try holdBackForKeyFile(s, remote, report, awaitingKeyFile, retiringKeyFiles, keyFilesNotArrived, ahead, rclone)
            }
            if ahead.status != 0 {
                let failure = rclone.failure("fetch from \(remote)", ahead)
                guard missingJournals == 0 else { return try finish(s, remote, report, failure) }
                fetchFailure = failure
            }
            if (fetchFailure == nil && missing > 0) || missingJournals > 0 {
                // rclone says nothing of a listed file that went before it was fetched (review
                // AB): the remote changed during the sync, and what was planned against its
                // listing (the version of a forked journal to send, say) no longer holds.
                return try finish(s, remote, report, CommandFailure("\(missing) of the files listed in \(s.err.name(remote)) did not arrive: it changed during the sync"))
            }
        }

        // 2. Merge what arrived (this device acknowledges what others retired, and retires
        // what the merge left unneeded), then send what the remote lacks: objects and key
        // files, then journals, then the copies of forked journals; and delete retired files
        // every device has heard of, on both sides.
        // Nothing arrived, and nothing came into the store by other ways since it was read (a
        // drop made meanwhile, which is adopted after the merge: review BK-4): the merge would
        // change nothing, and the plan stands as it was.
        var sending: SyncPlan
        var forgedThere: [SyncFile] = []
        if report.received > 0 || vault.holdsFilesNotRead(fetching.here.map(\.0)) {
            report.change = try merge(vault)
            report.merged = true
            for (path, items) in try vault.dropDamagedAmongArrived(takenFiles, appeared: report.change?.addedItems ?? []) {
                if takenFiles.contains(where: { $0.path == path }) { report.received -= 1 }
                report.damagedThere.append("\(s.err.name(Rclone.join(remote, path))) (\(items.map { s.shown(VaultPath.resolve($0, relativeTo: .root), on: s.err) }.joined(separator: ", ")))")
            }
            // An inbox public key file that arrived and that the vault did not make (put on
            // the remote by someone who can write there, to read what is dropped into it) is
            // deleted here, as at open, and there (review DJ-1: fetched again at every sync,
            // it stayed there for good, and droppers writing into the remote sealed to it).
            let forged = Set(vault.checkInboxPublicFiles())
            forgedThere = takenFiles.filter { forged.contains($0.path) }
            sending = SyncPlan.make(here: try vault.localSyncFiles(), there: there, vault: vault)
            try confirmRetiredThere(&sending, remote: remote, rclone: rclone, vault: vault, known: &retiredThereConfirmed, fetchingOthers: false)
            // A retired journal the merge read and then deleted here held nothing unread: nor
            // does its copy there, the one fetched or one of the same length (which, longer than
            // any retirement of it read by a cut tail, the plan would fetch again and again).
            let readThen = takenJournals + fetching.here.map(\.0).filter {
                $0.kind == .journal && startSize[$0.key] == there[$0.key] && retiredThereConfirmed[$0.key] != false
            }
            for file in readThen where vault.isRetired(file) && !sending.deleteThere.contains(file) && !isHere(file.path) {
                sending.deleteThere.append(file)
            }
            // A forked journal of this device that the merge's snapshot retired (every version
            // of its records is in the snapshot, and no other device waits for it) is gone.
            report.forks.removeAll { !isHere($0.path + copySuffix) }
        } else {
            report.change = TreeChange(added: [], removed: 0)
            sending = fetching
        }
        for file in readAsRetiredThere where !sending.deleteThere.contains(file) { sending.deleteThere.append(file) }
        // Journals to send: new ones; those the remote has a shorter copy of that the one here
        // extends (compared in step 1); and those that were the same on both sides and have
        // grown here since (the merge appended to this device's own) — not one it deleted,
        // nor one whose version there forks from this one's (it came here, or the sync failed).
        // Among them those of one length on both sides found older there in step 1 (torn, or not
        // reading), which a plan made again after a merge no longer fetches (review BE-5).
        let foundOlder = fetching.fetch.filter {
            report.extendsThere.contains($0.key) && !sending.fetch.contains($0) && !sending.sendJournals.contains($0)
        }
        let grown = (sending.fetch + foundOlder).filter { file in
            file.kind == .journal && !fetching.forkedThere.contains(file.key) && isHere(file.path)
                && (report.extendsThere.contains(file.key) || startSize[file.key] == there[file.key])
        }
        for (file, size) in keyFilesDiffering where vault.isCheckedKeyFile(file) && isHere(file.path) { sending.replaceThere(file, size) }
        func kind(of file: SyncFile) -> String { vault.isInboxPublicKeyFile(file) ? "inbox public key file" : "key file" }
        for file in sending.keyFilesAlteredThere {
            s.warning("sync", "\(s.err.name(Rclone.join(remote, file.path))) is not the \(kind(of: file)) here (damaged or altered there; it is written once and never changes): it was not taken, and the copy here replaces it")
        }
        for (file, _) in keyFilesDiffering where !vault.isCheckedKeyFile(file) {
            s.warning("sync", "\(s.err.name(Rclone.join(remote, file.path))) differs from the \(kind(of: file)) of that name here (one of them damaged or altered; it is written once and never changes): neither was changed")
        }
        // A later failure ends the sync; one to fetch a content file, which it went on
        // without, is said too (review EE-4: only the later one was).
        func stop(_ failure: CommandFailure) throws {
            if let fetchFailure { s.note("sync", "\(fetchFailure.message); the sync went on without it") }
            try finish(s, remote, report, failure)
        }
        if !sending.sendFirst.isEmpty {
            watch("sending")
            let outcome = try rclone.copy(sending.sendFirst.map(\.path), from: vault.directory, to: remote, listIn: folder)
            if outcome.cancelled { throw Cancelled() }
            guard outcome.status == 0 else {
                report.sent += arrivedWhole(sending.sendFirst, of: sending, in: remote, rclone)
                return try stop(rclone.failure("send to \(remote)", outcome))
            }
            report.sent += sending.sendFirst.count
        }
        // A journal replaces the remote's copy only whole: rclone writes some remotes in place,
        // so it goes under a temporary name first and is then renamed over the old copy.
        let sendingSuffix = temporarySuffix(vault)
        for file in sending.sendJournals + grown {
            watch("sending journals")
            var outcome = try rclone.copy(file: vault.directory + "/" + file.path, to: Rclone.join(remote, file.path + sendingSuffix))
            if outcome.status == 0 && !outcome.cancelled, try !renamedInPlace(localFolders, file.path + sendingSuffix, as: file.path) {
                outcome = try rclone.move(Rclone.join(remote, file.path + sendingSuffix), to: Rclone.join(remote, file.path))
            }
            if outcome.cancelled { throw Cancelled() }
            guard outcome.status == 0 else { return try stop(rclone.failure("send to \(remote)", outcome)) }
            report.sent += 1
        }
        for file in report.forks {
            let copy = file.path + copySuffix
            let outcome = try rclone.copy(file: vault.directory + "/" + copy, to: Rclone.join(remote, copy))
            guard outcome.status == 0 else { return try stop(rclone.failure("send to \(remote)", outcome)) }
            report.sent += 1
        }
        for file in sending.deleteHere { vault.deleteRetired(file) }
        // This device's temporary copies an interrupted sync left there go too.
        let leftovers = there.keys.map(\.text).filter { isOwnTemporary($0, vault) }
        if !sending.deleteThere.isEmpty || !leftovers.isEmpty || !forgedThere.isEmpty {
            let outcome = try rclone.delete(sending.deleteThere.map(\.path) + leftovers + forgedThere.map(\.path), in: remote, listIn: folder)
            guard outcome.status == 0 else { return try stop(rclone.failure("delete retired files in \(remote)", outcome)) }
        }
        for file in forgedThere {
            // Why is the vault's warning, said when the sync ends (review DK-3: "this vault did
            // not make" was wrong of a rotation on another device whose record had not arrived).
            s.warning("sync", "\(s.err.name(Rclone.join(remote, file.path))), an inbox public key file deleted here for the reason said below, was deleted there too")
        }
        report.deleted = sending.deleteHere.count + sending.deleteThere.count
        let sent = sending.sendFirst.map(\.path) + (sending.sendJournals + grown).map(\.path)
            + report.forks.map { $0.path + copySuffix }
        for folder in localFolders { try syncLocalRemote(folder, sent) }
        // Damage there, or a journal there that does not read, is the failure said; a content
        // file that could not be fetched beside it, a note (review EG-5: it hid them).
        if let failure = unreadFailure(s, unreadThere) ?? damagedFailure(report.damagedThere) { return try stop(failure) }
        try finish(s, remote, report, fetchFailure)
    }

    /// Puts a journal sent under a temporary name in place with `rename(2)`, which replaces the
    /// copy there at once, when the remote is one folder here that holds every file sent under
    /// its own name. `rclone moveto` deletes the copy there first: a session open on that store
    /// saw the journal's items go and come back, and a sync cut between the two left the remote
    /// without the journal, its items gone there with `verify` passing (review CL-4). Returns
    /// false where rclone must rename it.
    private static func renamedInPlace(_ folders: [RcloneRemote.Folder], _ temporary: String, as path: String) throws -> Bool {
        guard let folder = oneFolderHoldingAll(folders), (try FileSystem.lstatIfExists(folder + "/" + temporary)) != nil else { return false }
        try FileSystem.rename(folder + "/" + temporary, folder + "/" + path)
        return true
    }

    /// How many of `files` a failed send left there whole (at their length here), by a new
    /// listing: some went before the failure, and the summary counts them (review CH-6).
    private static func arrivedWhole(_ files: [SyncFile], of plan: SyncPlan, in remote: String, _ rclone: Rclone) -> Int {
        guard let there = try? rclone.list(remote).files else { return 0 }
        let sizeHere = Dictionary(plan.here.map { ($0.0.key, $0.1) }, uniquingKeysWith: { a, _ in a })
        return files.filter { file in there[file.key].map { $0 == sizeHere[file.key] } ?? false }.count
    }

    /// True when a file written through `remote` lands at the store's top here: a remote that
    /// changes names on the way (crypt) hides the store probe from its listing, and one over a
    /// server on this machine reaches the store (review CG-7: `sync` wrote an encrypted second
    /// copy of the store into the store, exit 0). The file is removed through the remote. A
    /// remote that takes no file is no store here.
    private static func writesIntoStore(_ rclone: Rclone, _ remote: String, _ vault: Vault) throws -> Bool {
        let before = Set(try FileSystem.listDirectory(vault.directory))
        let probe = Rclone.join(remote, ".narnia-remote-probe-" + String(Identifier.random().hex.prefix(12)))
        guard try rclone.run(["touch"], paths: [probe]).status == 0 else { return false }
        // New names at the top that are no store file nor a temporary file of narnia's.
        let landed = try FileSystem.listDirectory(vault.directory).contains { name in
            !before.contains(name) && (name.hasPrefix(".narnia-remote-probe-") || (vault.syncFile(name) == nil && !name.hasPrefix(".narnia-")))
        }
        _ = try? rclone.run(["deletefile"], paths: [probe])
        return landed
    }

    /// Objects that arrived altered (`Vault.dropDamagedAmongArrived`): not kept here, and
    /// said, since the copy there stays as it is until someone replaces it.
    private static func damagedFailure(_ damaged: [String]) -> CommandFailure? {
        guard !damaged.isEmpty else { return nil }
        return CommandFailure("files there are damaged (they arrived whole in length but do not authenticate) and were not taken: \(damaged.joined(separator: "; "))",
                              hint: "delete them there: a device that holds them whole ('verify' there says so) sends them again at its next sync")
    }

    /// A journal there, or a sync engine's copy of one, that does not read and may hold more
    /// than the copies here: `size` is its length there, `shown` its name for messages, `why`
    /// what did not read.
    private struct UnreadJournal {
        let file: SyncFile
        let size: Int64
        let shown: String
        let why: String
    }

    /// Judges the journals there that did not read and may hold more than the copies here,
    /// once the merge has read what arrived (which may retire them): the failure that ends the
    /// sync, if any.
    ///
    /// One that is retired and no longer than what its retirements read is only warned of:
    /// every record of it that reads was carried on, and no device appends to it again, so
    /// failing would fail every sync for good (reviews BF-1, BH-4). One that no device writes
    /// again and that may hold records no device has read — retired, and longer than its
    /// retirements read (a fork's records, or this device's own lost ones: review BK-2); or
    /// a journal, or an engine's copy of one, whose device was forgotten or went on in a later
    /// journal (BL-1) — fails the sync, saying that only the user can replace it. Any other
    /// journal is replaced by its device at its next change and sync, and an engine's copy of
    /// one is only warned of once the journal is as long.
    private static func unreadFailure(_ s: Session, _ unread: [UnreadJournal]) -> CommandFailure? {
        let vault = s.vault
        func allRead(_ j: UnreadJournal) -> Bool { vault.isRetired(j.file) && !vault.isUnreadThere(j.file, size: j.size) }
        func forGood(_ j: UnreadJournal) -> Bool { vault.isRetired(j.file) || vault.isWrittenNoMore(j.file) }
        for j in unread where allRead(j) {
            let what = j.file.isCopy ? "a sync engine's copy of a retired journal" : "a retired journal"
            s.warning("sync", "\(j.shown) does not read (\(j.why)); \(what), no longer than its retirement read, which no device writes again: it was not taken; delete it there")
        }
        let failing = unread.filter { !allRead($0) }
        guard !failing.isEmpty else { return nil }
        let named = failing.map { j in "\(j.shown) (\(j.why)\(forGood(j) ? "; no device writes it again" : ""))" }.joined(separator: ", ")
        if failing.contains(where: forGood) {
            return CommandFailure("journals there do not read and may hold records that no device here has read, and were not taken: \(named)",
                                  hint: "no device writes such a journal again, so only you can replace it: copy it there whole from a backup; or delete it there, giving up what it holds past the copies here")
        }
        // A journal not read here may be one whose device was forgotten or went on: said too
        // (review BL-2), since this device cannot tell.
        let unlessForgotten = "unless its device was forgotten or went on in a later journal: then only you can replace it, with a whole copy from a backup, or by deleting it there (giving up what it holds past the copies here)"
        if failing.allSatisfy(\.file.isCopy) {
            return CommandFailure("sync engines' copies of journals there do not read and are longer than the journals here, and were not taken: \(named)",
                                  hint: "no device writes such a copy; once the journal is as long (its device has synced), it is only warned of: delete it there then — \(unlessForgotten)")
        }
        // This device's own newest journal: it is the writer the hint speaks of (review CG-5).
        if failing.allSatisfy({ !$0.file.isCopy && vault.isNewestOwnJournal($0.file) }) {
            return CommandFailure("this device's journal there does not read and holds more than the copy here, and was not taken: \(named)",
                                  hint: "this device writes that journal: change anything in the vault (mkdir, say) and sync again, and the copy here replaces it there")
        }
        return CommandFailure("journals there do not read and hold more than the copies here, and were not taken: \(named)",
                              hint: "a device that holds such a journal whole replaces the copy there at its next sync, where the remote keeps a hash rclone can compare; its writer does when it next changes the vault and syncs, \(unlessForgotten)")
    }

    /// Ends a sync that left `journals` there, sealed under a master key this vault does not
    /// hold, waiting for the key file that holds it (`Vault.Received.awaitsKeyFile`): nothing is
    /// sent, as what a sync sends is weighed against the journals there. Names the journals and
    /// the key files that did not arrive whole (`notArrived`): a stray file named like a key
    /// file there holds the journals back too, for good, until deleted (review EJ-3). Journals
    /// that retire a key file here (`retiring`) wait with them.
    private static func holdBackForKeyFile(_ s: Session, _ remote: String, _ report: Report, _ journals: [SyncFile], _ retiring: [SyncFile],
                                           _ notArrived: [SyncFile], _ ahead: Rclone.Outcome, _ rclone: Rclone) throws {
        func named(_ files: [SyncFile]) -> String { files.map { s.err.name(Rclone.join(remote, $0.path)) }.joined(separator: ", ") }
        let one = journals.count == 1
        let which = notArrived.isEmpty ? "which is not here whole" : "and \(named(notArrived)) did not arrive whole (unreadable there, or cut short)"
        let alsoWaiting = retiring.isEmpty ? "" : "; \(named(retiring)), which retire\(retiring.count == 1 ? "s" : "") a key file here, \(retiring.count == 1 ? "waits" : "wait") with \(one ? "it" : "them")"
        s.note("sync", "\(one ? "a journal there opens" : "journals there open") under none of this vault's master keys: \(named(journals)); sealed under the master key of a passwd --rotate on another device (or damaged there), \(one ? "it waits" : "they wait") for that rotation's key file, \(which): read without it, \(one ? "it" : "they") would leave a vault that neither passphrase opens\(alsoWaiting); nothing was sent")
        // What to do, said as a hint, or as a note beside rclone's failure (review EK-3: its
        // error took the hint's place).
        let remedy = "sync again once the device that ran passwd --rotate has synced: it sends its key file again where the copy there is cut short or damaged "
            + "(or copy that device's key files, named by 32 hex digits, into this store by hand); if the rotation's key file is here and another did not arrive, "
            + "opening the vault with the passphrase chosen then and syncing takes the journals; a file there named like a key file that is none of this vault's "
            + "holds them back until you delete it there. Should no device have run passwd --rotate, the journal is damaged there: its device sends it again whole at its next sync"
        guard ahead.status == 0 else {
            s.note("sync", remedy)
            return try finish(s, remote, report, rclone.failure("fetch from \(remote)", ahead))
        }
        try finish(s, remote, report, CommandFailure("\(one ? "a journal there waits" : "journals there wait") for the key file of a passwd --rotate on another device", hint: remedy))
    }

    /// A name at a remote's top that is the user's own: not hidden (`.stfolder`, a sync
    /// engine's), nor what a file system or a system puts at a drive's top.
    private static func isUsersOwn(_ name: String) -> Bool {
        !name.hasPrefix(".") && !["lost+found/", "System Volume Information/", "$RECYCLE.BIN/", "desktop.ini", "Thumbs.db"].contains(name)
    }

    /// Warns of the files of `paths` on the remote named like store files that this sync does
    /// not read (`what` they are), naming them and how to have them read (`fix`, given "it"
    /// or "them"); they are left there.
    private static func warnUnread(_ s: Session, _ remote: String, _ paths: [String], _ what: String, fix: (String) -> String) {
        let unread = paths.filter { s.vault.syncFile($0) != nil }.sorted(by: utf8Order)
        guard !unread.isEmpty else { return }
        let (files, it) = unread.count == 1 ? ("1 file", "it") : ("\(unread.count) files", "them")
        s.warning("sync", "\(s.err.name(remote)) holds \(files) named like store files \(what): \(unread.map(s.err.name).joined(separator: ", ")) (to have \(it) read, \(fix(it)))")
    }

    /// A journal of the same length on both sides can still differ. This device's newest:
    /// another copy of this store wrote as this device (a backup restored and used while the
    /// original went on, a clone of its disk) and its version got there first: records are
    /// written once each with a random nonce, so two versions of the same length end in
    /// different bytes, and a journal whose last bytes differ is fetched, to be kept beside
    /// this one (`Vault.acceptReceived`). Or a copier that reads until the end of the file
    /// took the remote's copy while this device appended, and ended it after the last write:
    /// the final length, the last record's first byte still zero (review BA-1). That one is
    /// fetched too, and read as an older copy of this journal, which then replaces it there.
    /// Older journals of this device no longer grow, and a fork of another device's is found
    /// by that device. And any journal whose copy here ends in bytes that are no whole record
    /// (such a copy, taken from elsewhere) is fetched when the first of them differs there:
    /// the copy there may hold that record whole (review BD-3).
    ///
    /// The others are compared whole (`compareWhole`; review CG-2: a byte that rotted in the
    /// middle of another device's journal there was never found by the devices holding it
    /// whole, and a device that still needed those records failed every sync until the
    /// journal's writer next changed something): one that differs is fetched, and one that
    /// does not read is replaced there by the copy here.
    static func compareSameLengthJournals(_ plan: inout SyncPlan, remote: String, rclone: Rclone, vault: Vault, listIn folder: String,
                                          folderThere: String? = nil) throws {
        for (file, size) in plan.sameLengthJournals {
            let path = Rclone.join(remote, file.path)
            if let tail = vault.tailStart(of: file, size: size) {
                if try rclone.bytes(of: path, offset: tail, count: 1) != vault.bytes(of: file, offset: tail, count: 1) { plan.fetch(file, size) }
                continue
            }
            guard let start = vault.lastRecordStart(of: file, size: size) else { continue }
            // The last record, read whole up to 64 KiB (a byte changed in it is found too);
            // a longer one by its nonce, its first bytes, which no other version of the journal
            // holds there: one rclone run either way.
            let count = size - start <= 1 << 16 ? Int(size - start) : AEAD.nonceLength
            let there = try rclone.bytes(of: path, offset: start, count: count)
            let here = try vault.bytes(of: file, offset: start, count: count)
            guard there != here else { continue }
            plan.fetch(file, size)
            if !(there.first == 0 && there.dropFirst() == here.dropFirst()) { plan.forkedThere.insert(file.key) }
        }
        try compareWhole(&plan, remote: remote, rclone: rclone, vault: vault, listIn: folder, folderThere: folderThere)
    }

    /// Compares whole the same-length journals not already to be fetched (see
    /// `compareSameLengthJournals`): byte for byte where the remote is one folder here
    /// (`folderThere`), else by a hash both sides have; one that differs is fetched.
    private static func compareWhole(_ plan: inout SyncPlan, remote: String, rclone: Rclone, vault: Vault, listIn folder: String,
                                     folderThere: String?) throws {
        let fetched = Set(plan.fetch.map(\.key))
        let unchecked = plan.sameLengthJournals.filter { !fetched.contains($0.0.key) }
        guard !unchecked.isEmpty else { return }
        if let folderThere {
            for (file, size) in unchecked where try !sameBytes(vault.directory + "/" + file.path, folderThere + "/" + file.path) {
                plan.fetch(file, size)
            }
        } else if let differing = try rclone.differing(unchecked.map(\.0.path), here: vault.directory, there: remote, listIn: folder) {
            for (file, size) in unchecked where differing.contains(file.path) { plan.fetch(file, size) }
        }
    }

    /// Fetches `files` into `folder`: objects and key files in one rclone run, then the
    /// journals, which name them, in another, whatever became of the objects: one object that
    /// cannot be fetched (a full disk, a bad sector there) must not hold back every device's
    /// changes (review DS-2). Its items show as not on this device, which the sync says (review
    /// DR-2: in one run, rclone fetched journals beside the objects they name, and the items
    /// of an object it could not fetch were said `new:` as if whole). A key file that did not
    /// come holds back only the journals sealed under a master key it alone may hold, once
    /// fetched (`Vault.Received.awaitsKeyFile`), no other (review EG-2). Returns each run's
    /// outcome; the journals' is nil when there were none, or the first run was cancelled.
    private static func fetchObjectsThenJournals(_ files: [SyncFile], rclone: Rclone,
                                                 from remote: String, to folder: String) throws -> (ahead: Rclone.Outcome, journals: Rclone.Outcome?) {
        let (ahead, journals) = (files.filter { $0.kind != .journal }, files.filter { $0.kind == .journal })
        var outcome = Rclone.Outcome(status: 0, output: [], errors: [], cancelled: false)
        if !ahead.isEmpty { outcome = try rclone.copy(ahead.map(\.path), from: remote, to: folder, listIn: folder) }
        guard !outcome.cancelled, !journals.isEmpty else { return (outcome, nil) }
        return (outcome, try rclone.copy(journals.map(\.path), from: remote, to: folder, listIn: folder))
    }

    /// The key files and inbox public key files of one length here and there whose bytes
    /// differ: written once, they never change, so a copy that differs is damage or forgery —
    /// an inbox public key file put in place of the vault's own on the remote, to read what is
    /// dropped there (review DK-2: sizes alone were compared, and it stayed there for good).
    /// Compared byte for byte where the remote is one folder here, else by a hash both sides
    /// have, else read (they are a few hundred bytes).
    private static func differingSameLengthKeyFiles(_ plan: SyncPlan, remote: String, rclone: Rclone, vault: Vault, listIn folder: String,
                                                    folderThere: String?) throws -> [(SyncFile, Int64)] {
        let files = plan.sameLengthKeyFiles
        guard !files.isEmpty else { return [] }
        // One there that cannot be read (a bad sector) is not known to differ, and is left as
        // it is (review EH-2: taken as altered, it was sent again at every sync, the send
        // failed, and no journal went).
        if let folderThere {
            return files.filter { file, _ in
                let there = folderThere + "/" + file.path
                guard (try? FileDescriptor.open(there, .readOnly)) != nil else { return false }
                return (try? sameBytes(vault.directory + "/" + file.path, there)) == false
            }
        }
        if let differing = try rclone.differing(files.map(\.0.path), here: vault.directory, there: remote, listIn: folder) {
            return files.filter { differing.contains($0.0.path) }
        }
        return try files.filter { file, size in
            guard let bytes = try? rclone.bytes(of: Rclone.join(remote, file.path), offset: 0, count: Int(size)) else { return false }
            return try bytes != vault.bytes(of: file, offset: 0, count: Int(size))
        }
    }

    /// True when the files at `a` and `b` hold the same bytes (a file gone counts as differing).
    private static func sameBytes(_ a: String, _ b: String) throws -> Bool {
        guard let one = try? FileDescriptor.open(a, .readOnly), let other = try? FileDescriptor.open(b, .readOnly) else { return false }
        let size = 1 << 20
        let buffers = UnsafeMutableRawPointer.allocate(byteCount: 2 * size, alignment: 16)
        defer { buffers.deallocate() }
        while true {
            let n = try one.readFully(into: buffers, count: size)
            guard try other.readFully(into: buffers + size, count: size) == n, memcmp(buffers, buffers + size, n) == 0 else { return false }
            if n < size { return true }
        }
    }

    /// The folder here that a remote reaches, when it is one that holds every file sent under
    /// its own name (`RcloneRemote.Folder`); nil otherwise.
    private static func oneFolderHoldingAll(_ folders: [RcloneRemote.Folder]) -> String? {
        guard folders.count == 1, let folder = folders.first, folder.exact, folder.namesKept, folder.receivesAll else { return nil }
        return folder.path
    }

    /// Decides the retired journals of `plan.retiredToConfirm`: the last bytes of the copy
    /// there (up to 32: a record's tag) the same as the bytes here at that place, it is this
    /// one or a prefix of it, and goes there; otherwise it is another version (a fork of one
    /// length, or shorter), fetched and read first (`fetchingOthers`, the plan that fetches)
    /// or left there. Two versions that differ differ in every record from the first that
    /// does, their last included (each record's nonce is random). `known` keeps each verdict
    /// for the sync, so that the plan made after the merge asks rclone nothing again.
    static func confirmRetiredThere(_ plan: inout SyncPlan, remote: String, rclone: Rclone, vault: Vault,
                                    known: inout [StorePath: Bool], fetchingOthers: Bool) throws {
        for (file, size, here) in plan.retiredToConfirm {
            let same: Bool
            if let verdict = known[file.key] {
                same = verdict
            } else {
                let count = Int(min(size, 32))
                let offset = size - Int64(count)
                same = try count == 0 || rclone.bytes(of: Rclone.join(remote, file.path), offset: offset, count: count)
                    == vault.bytes(atStorePath: here, offset: offset, count: count)
                known[file.key] = same
            }
            if same {
                plan.deleteThere.append(file)
            } else if fetchingOthers {
                plan.fetch(file, size)
            }
        }
        plan.retiredToConfirm = []
        // Those of which no version is here, fetched and read earlier in this sync, go.
        for file in plan.fetch where plan.retiredToCheck.contains(file.key) && known[file.key] == true {
            plan.deleteThere.append(file)
        }
    }

    /// Refuses a `folder` remote (reached through rclone's local backend) that is the vault's
    /// own store, lies inside it, or holds it (a Syncthing folder the store is kept in, say):
    /// the store's files would land among its own, or among the user's (review AJ). Compared
    /// by identity, as `export` compares its destination; a copy of the store elsewhere is a
    /// remote like any other.
    ///
    /// A folder in an rclone mount is followed to the folder behind it, when that is one here
    /// (`RcloneMounts`): the mount may cache listings, hiding the store probe.
    /// `section` gives a configured remote's settings (`RcloneRemote.localFolders`).
    private static func checkFolderRemote(_ s: Session, _ remote: String, _ reached: RcloneRemote.Folder,
                                          section: (String) -> [String: String]?, mountsFollowed: Int = 0) throws {
        let store = HostFileIdentity.storeFolders(of: s.vault.directory)   // its shards too (CB-2)
        guard !store.isEmpty else { return }
        let folder = reached.path
        // As rclone reads it, made absolute with `.` and `..` resolved as text (Go's
        // `filepath.Clean`: `nonexistent/..` is here, review AK), as a tree path is; a folder
        // not made yet is where its nearest folder that exists is.
        let here = TreePath(components: try s.currentHostDirectory().pathComponents)
        let cleaned = TreePath.resolve(folder, relativeTo: here).description
        var nearest = cleaned
        while HostFileIdentity(of: nearest) == nil && nearest != "/" { nearest = FileSystem.parentDirectory(of: nearest) }
        if HostFileIdentity.isInStore(nearest, store: store, marker: nil) {
            throw CommandFailure("\(s.err.name(remote)): the vault's own store, or inside it; nothing was sent", hint: "sync with a folder outside the store")
        }
        // Below a folder (`exact` false), the remote lies in the store when the folder does,
        // and holds it only if rclone's names for it happened to spell the store's path.
        if reached.exact, let around = HostFileIdentity(of: cleaned), HostFileIdentity.isInStore(s.vault.directory, store: [around], marker: nil) {
            throw CommandFailure("\(s.err.name(remote)): holds the vault's own store; its files would be put among the folder's; nothing was sent",
                                 hint: "sync with a folder of its own, outside the store")
        }
        if mountsFollowed < 4, let behind = RcloneMounts.remote(reaching: cleaned, mounts: RcloneMounts.current()) {
            for var folder in try folders(reachedBy: behind, s, remote, section: section) {
                folder.exact = folder.exact && reached.exact
                try checkFolderRemote(s, remote, folder, section: section, mountsFollowed: mountsFollowed + 1)
            }
        }
    }

    /// The folders here that `text` reaches (`RcloneRemote.localFolders`); refused, as
    /// `remote`, when it leads too far to tell.
    private static func folders(reachedBy text: String, _ s: Session, _ remote: String,
                                section: (String) -> [String: String]?) throws -> [RcloneRemote.Folder] {
        guard let folders = RcloneRemote.localFolders(of: text, section: section) else {
            let (deep, inAll) = RcloneRemote.followed
            throw CommandFailure("\(s.err.name(remote)) leads through more than \(deep) remotes one inside another, or \(inAll) in all: where it reaches, the store's own folder among them perhaps, is not known; nothing was sent",
                                 hint: "sync with a remote nearer the folder it reaches")
        }
        return folders
    }

    /// When the remote is a `folder` here (rclone's local backend, `RcloneRemote.localFolders`),
    /// makes what was sent there durable before the sync says it is done: rclone does not
    /// sync what it writes, and a power cut left a remote one sync behind (a review). One
    /// `syncfs` where that reaches the disk, else an `fsync` of each file and folder — where
    /// their names are known: under names rclone makes (crypt), only the `syncfs`. A folder of
    /// several that receive (a union's) holds those of the files sent that are there.
    private static func syncLocalRemote(_ folder: RcloneRemote.Folder, _ sent: [String]) throws {
        guard !sent.isEmpty, let top = try? FileDescriptor.open(folder.path, .readOnly, options: .directory) else { return }
        guard folder.exact && folder.namesKept else {
            if top.syncFileSystemReachesDisk { try top.syncFileSystem() }
            return
        }
        let files = sent.map { folder.path + "/" + $0 }.filter { path in
            folder.receivesAll || (try? FileSystem.lstatIfExists(path)) != nil
        }
        try FileSystem.makeDurable(files: files, folders: Set(files.map(FileSystem.parentDirectory(of:))).sorted() + [folder.path], on: top)
    }

    /// Merges what arrived (`Vault.reload`). Journals sealed under a master key this session
    /// does not hold — another device ran `passwd --rotate` — are here now, but only a new
    /// unlock reads them: said so, and the session goes on with the vault as it was.
    private static func merge(_ vault: Vault) throws -> TreeChange {
        do {
            return try vault.reload()
        } catch MetadataError.unknownMasterKey {
            throw CommandFailure("journals sealed under a new master key arrived (another device ran 'passwd --rotate'): this session cannot read them and goes on with the vault as it was",
                                 hint: "open the vault again, with the passphrase chosen with 'passwd --rotate', and sync again")
        }
    }

    /// Counts for the summary.
    struct Report {
        var sent = 0, received = 0, deleted = 0
        /// Journals the remote has a shorter copy of, which the one here extends.
        var extendsThere = Set<StorePath>()
        /// Journals that forked: the version that was here is kept as a conflict copy, and
        /// sent there as one.
        var forks: [SyncFile] = []
        /// How the merge changed the tree.
        var change: TreeChange?
        /// True when the store was read again (what arrived, or came in by other ways).
        var merged = false
        /// Objects that arrived altered, as said: their paths there and the items they hold.
        var damagedThere: [String] = []
    }

    /// Merges what arrived, says what changed, and fails with `failure` when a transfer did
    /// (both sides stay valid: files are whole or ignored, and a rerun finishes the job). A
    /// failed sync says what it did on standard error, as notes: a failed command prints
    /// nothing on standard output, so a script never takes it for a sync.
    private static func finish(_ s: Session, _ remote: String, _ report: Report, _ failure: CommandFailure?) throws {
        let change = try report.change ?? merge(s.vault)
        // What the merge found, when files arrived or the merge is made here (opening's own
        // warnings were said at open).
        if report.merged || report.change == nil {
            for warning in s.vault.warnings { s.warning("sync", warning) }
        }
        // Drops the sync brought in are adopted now, as at unlock: new items too.
        let adopted = s.adoptDrops(announcing: false)
        // Item numbers shown before (hide-names) may name other items now, as after changes
        // read between lines.
        if change.changedTree || !adopted.isEmpty { HiddenNames.arrivals += 1 }
        let say: (String) -> Void = failure == nil ? { s.out.line($0) } : { s.note("sync", $0) }
        let on = failure == nil ? s.out : s.err
        say("\(failure == nil ? "synced" : "partly synced") with \(on.name(remote)): sent \(report.sent) files, received \(report.received), deleted \(report.deleted) retired")
        let added = (change.added + adopted).sorted(by: utf8Order)
        let shown = s.interactive ? Array(added.prefix(20)) : added
        for path in shown { say("new: \(s.shown(VaultPath.resolve(path, relativeTo: .root), on: on))") }   // #N under hide-names (CC-6)
        if shown.count < added.count { say("… and \(added.count - shown.count) more new items") }
        // A file here renamed as a conflict copy: its name now holds another device's file,
        // said above as new (review EC-2). Its old name is not shown under hide-names.
        let hidden = on.isTerminal && ViewingPreferences(s).hideNames
        for (was, now) in change.becameConflictCopies.sorted(by: { utf8Order($0.now, $1.now) }) {
            let copy = s.shown(VaultPath.resolve(now, relativeTo: .root), on: on)
            // A folder always keeps the name (rule 5; review EE-6: "a file" of a folder).
            let holder = s.resolve(VaultPath.resolve(was, relativeTo: .root)).map(s.vault.isFolder) == true ? "a folder" : "a file"
            say(hidden ? "conflict: \(copy) is a conflict copy now: \(holder) from another device has its name"
                       : "conflict: \(on.name(was)) is now \(copy): \(holder) from another device has its name")
        }
        let notHere = added.count { path in
            s.resolve(VaultPath.resolve(path, relativeTo: .root)).flatMap(s.vault.item).map { !$0.isFolder && !s.vault.isHere($0) } ?? false
        }
        if notHere > 0 {
            s.note("sync", "\(notHere == 1 ? "1 new item is" : "\(notHere) new items are") not on this device yet (their content has not arrived): 'ls -l' marks them; a later sync brings it")
        }
        // Where removed items were (with what they held), but not under hide-names on a
        // terminal, where names are not shown and a gone item has no number.
        if !hidden {
            let gone = change.removedPaths.sorted(by: utf8Order)
            let shownGone = s.interactive ? Array(gone.prefix(20)) : gone
            for path in shownGone { say("removed: \(on.name(path))") }
            if shownGone.count < gone.count { say("… and \(gone.count - shownGone.count) more removed") }
        }
        if change.removed > 0 { say(change.removed == 1 ? "1 item was removed on another device" : "\(change.removed) items were removed on other devices") }
        if let failure { throw failure }
    }

    /// The suffix of a journal being sent, before it is renamed into place: not a store name
    /// (so every reader ignores it), and this device's own (so only it deletes its leftovers),
    /// in a way only it can tell (`Vault.newSendingTag`).
    static func temporarySuffix(_ vault: Vault) -> String {
        sendingMark + vault.newSendingTag()
    }

    private static let sendingMark = ".narnia-sending-"

    /// True for a journal's temporary name that this device gave it (`temporarySuffix`), or
    /// that an earlier version of it did, ending in its identifier's first 8 hex digits.
    static func isOwnTemporary(_ path: String, _ vault: Vault) -> Bool {
        guard let mark = path.range(of: sendingMark, options: .backwards) else { return false }
        let tag = path[mark.upperBound...]
        return tag == vault.device.hex.prefix(8) || vault.isOwnSendingTag(tag)
    }

    /// The name a forked journal's copy gets: Syncthing's form, so that every reader knows it.
    static func conflictSuffix(_ vault: Vault) -> String {
        var t = time(nil)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let date = "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))-\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec))"
        return ".sync-conflict-\(date)-\(vault.device.hex.prefix(7).uppercased())"
    }
}

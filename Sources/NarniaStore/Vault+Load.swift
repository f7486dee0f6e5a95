import Glibc
import NarniaSystem

/// What was read of one journal file and the copies sync engines made of it.
struct JournalFile {
    let id: Identifier
    /// The device that writes it.
    var device: Identifier
    /// The device's last record number before this journal.
    var previousSeq: UInt64
    /// True when the journal begins with a snapshot of all its device wrote before.
    var snapshot: Bool
    /// What the main file holds (nil when only copies are present).
    var end: JournalEnd?
    /// What each copy a sync engine made holds, by path, as read.
    var copyEnds: [StorePath: JournalEnd] = [:]
    /// The most records any copy holds, and the bytes after them in the copy that holds them
    /// (0 when one of the copies that hold the most ends whole).
    var records: UInt64
    var cutBytesOfLongest: Int64 = 0
    /// True when those bytes are its writer's unfinished last append (`JournalEnd.unfinished`).
    var longestEndsUnfinished = false
    /// The record number of its last record.
    var lastSeq: UInt64
    /// In a snapshot journal of this device: where the snapshot ends (after the record that
    /// retires the journals it replaced); what this device appended since is growth.
    var snapshotEnd: Int64?
    /// False when its records are sealed under a master key that a rotation replaced.
    var underCurrentMaster = true

    var firstSeq: UInt64 { previousSeq + 1 }

    /// What the file or copy holding the most records holds.
    var longestEnd: JournalEnd? {
        ([end].compactMap { $0 } + copyEnds.values).filter { $0.records == records }.max { $0.offset < $1.offset }
    }
}

extension Vault {
    /// Reads every journal present and merges them, then derives the tree. A store with no
    /// journal is refused unless it is a format-1 store about to be upgraded.
    func load(upgrading: Bool = false) throws {
        // One key per file is added: keep the table open rather than change page protection
        // twice per key (see `KeyTable`).
        let hold = keys.holdOpen()
        defer { withExtendedLifetime(hold) {} }
        let journalFiles = tags.journals(among: inventory.files.compactMap { $0.value.legacy ? nil : $0.key })
            .map { (id: $0, entry: inventory.files[$0]!) }
        // About one item per 120 bytes of journal: size the tables once.
        let bytes = journalFiles.compactMap(\.entry.main).reduce(0) { total, path in
            let st = (try? FileSystem.lstatIfExists(layout.root + "/" + path)) ?? nil
            return total + Int(st?.st_size ?? 0)
        }
        state.reserveCapacity(items: bytes / 120, objects: min(bytes / 120, inventory.files.count))
        // Every journal is read before a journal under an unknown master key is reported, so
        // that the report names them all.
        var unreadable: [Identifier] = []
        unreadableCopies = []
        var copyForks: [Identifier: UInt64] = [:]
        (inboxPairsUnderCurrentKey, inboxPairsUnderReplacedKeys, recordsReadUnderCurrentKey) = ([], [], false)
        for (id, entry) in journalFiles {
            var failed: [String] = []
            // Copies are compared record by record: two versions of one record are a fork.
            var versions = JournalVersions()
            var ends: [StorePath: JournalEnd] = [:]
            for path in entry.all {
                // A file gone since the listing — most often a retired journal another device
                // deleted, whose deletion a sync engine carried here meanwhile — is read as if the
                // listing had come after it (review FM-5: the open failed, naming the file). So
                // is one no record retires, or a sync engine's copy of a journal in use (review
                // FO-3 had it fail then; FP-1, FP-2: a copy's going failed an open its journal
                // read whole, and a journal deleted just before the open is read so too, saying
                // so where records another device read are missing).
                guard let fd = try openListedJournalFile(path) else {
                    if inventory.files[id]?.forget(path) == true { inventory.files[id] = nil }
                    continue
                }
                do {
                    ends[StorePath(path)] = try readJournal(id, fd, isMain: path == entry.main,
                                                 eachRecord: entry.all.count > 1 ? { versions.note(index: $0, payload: $1) } : nil)
                } catch MetadataError.unknownMasterKey {
                    failed.append(path)
                }
            }
            // What each file held, once the journal is known (a file read before the one that
            // holds its first record, holding none, counts too).
            if var file = journals[id] {
                for (path, end) in ends {
                    if path.text == entry.main { file.end = end } else { file.copyEnds[path] = end }
                }
                journals[id] = file
            }
            if let index = versions.firstDifference { copyForks[id] = index }
            guard !failed.isEmpty else { continue }
            guard journals[id] != nil else { unreadable.append(id); continue }
            // Every file of a journal begins with the same first record, which another file of
            // it opened: these are no copies of it, or altered. Set aside, not a refusal.
            for path in failed {
                unreadableCopies.append(StorePath(path))
                warnings.append("\(path), named as a file of journal \(id.hex.prefix(8)), does not open as one (no copy of it, or altered); it is not read, and left as it is")
            }
        }
        guard unreadable.isEmpty else { throw MetadataError.unknownMasterKey(unreadable) }
        guard !journals.isEmpty || upgrading else {
            if let empty = warnings.first(where: { $0.contains("holds no whole record") }) { throw MetadataError.incomplete("its only \(empty)") }
            throw MetadataError.incomplete("no journal")
        }
        state.settleRemovals()
        try state.addConflictCopies()
        computeKnowledge()
        noteRecordForks(copies: copyForks)
        chooseAppendTarget()
        rebuildView()
        bytesAtLastCompaction = ownJournalBytesAtLastCompaction
    }

    /// What this device's journals not retired held when its newest snapshot was written (the
    /// snapshot, and any older one not retired): the growth since, not since this session
    /// began, is what `compactIfWorthIt` weighs — a vault used through `-c` and `-b` opened
    /// anew at every command, and never compacted (review AG). Without a snapshot, 0.
    var ownJournalBytesAtLastCompaction: Int64 {
        let own = liveOwnJournals
        guard let last = own.filter({ $0.snapshotEnd != nil }).max(by: { $0.previousSeq < $1.previousSeq }) else { return 0 }
        return own.filter { $0.previousSeq < last.previousSeq }.reduce(last.snapshotEnd!) { $0 + ($1.end?.offset ?? 0) }
    }

    /// The journal file at `path` (relative to the store), opened to read; nil when it is gone.
    private func openListedJournalFile(_ path: String) throws -> FileDescriptor? {
        do {
            return try JournalReader.openStoreFile(layout.root + "/" + path)
        } catch let e as SystemError where e.code == ENOENT {
            return nil
        }
    }

    /// Reads one file of journal `id`, open as `fd`, applying its records to the merged state,
    /// and returns what it holds. `eachRecord` hears every record's index and payload.
    private func readJournal(_ id: Identifier, _ fd: FileDescriptor, isMain: Bool, eachRecord: ((UInt64, [UInt8]) -> Void)?) throws -> JournalEnd {
        var file = journals[id]
        var owner = file?.device
        var seq: UInt64 = 0
        var snapshotEnd: Int64?
        var inboxPairsSet: [String] = []
        let name = "journal \(id.hex.prefix(8))"
        let (end, keyIndex) = try JournalReader.read(fd, id: id, keyChain: journalKeyChain, name: name) { index, payload, recordEnd in
            eachRecord?(index, payload)
            var header: RecordHeader?
            var stamp: Stamp?
            var first = true
            var retiresJournals = false
            var contents: [Identifier] = []
            try RecordCoding.decode(payload, begin: { header = $0 }) { op, key in
                defer { first = false }
                if case .retire(let retired, _) = op, retired.kind == .journal { retiresJournals = true }
                if owner == self.device, let object = op.contentGiven?.objectID { contents.append(object) }
                if case .setSetting(let key, _?) = op, key.hasPrefix(Self.inboxKeySettingPrefix) { inboxPairsSet.append(key) }
                if case .journal(let device, let previous, let snapshot) = op {
                    guard index == 0, first else { throw MalformedRecord(why: "starts a journal in the middle of one") }
                    guard header!.seq == previous + 1 else { throw MalformedRecord(why: "has the wrong record number") }
                    if let known = file, known.device != device || known.previousSeq != previous {
                        throw MalformedRecord(why: "disagrees with another copy of its journal")
                    }
                    owner = device
                    if file == nil {
                        file = JournalFile(id: id, device: device, previousSeq: previous, snapshot: snapshot, end: nil,
                                           records: 0, lastSeq: previous)
                    }
                    return
                }
                guard let owner else { throw MalformedRecord(why: "does not begin with its journal's owner") }
                if stamp == nil { stamp = Stamp(wall: header!.wall, counter: header!.counter, device: owner) }
                if case .stamp(let s) = op { stamp = s } else { try state.apply(op, stamp: stamp!, key: key, author: owner) }
                if let s = stamp { clock.observe(s) }
            }
            guard let owner, let header, let file else { throw MalformedRecord(why: "does not begin with its journal's owner") }
            guard header.seq == file.previousSeq + 1 + index else { throw MalformedRecord(why: "has the wrong record number") }
            clock.observe(Stamp(wall: header.wall, counter: header.counter, device: owner))
            state.noteRecord(device: owner, header: header)
            seq = header.seq
            if retiresJournals && isMain && file.snapshot && owner == device { snapshotEnd = recordEnd }
            if owner == device && header.seq >= newestOwnRecordContents.seq { newestOwnRecordContents = (header.seq, contents) }
        }
        guard var file else {
            // Not one whole record: a journal created by a device that crashed before its
            // first record was durable, or one still arriving. Nothing in it to read.
            if end.cutBytes > 0 || isMain { warnings.append("journal \(id.hex.prefix(8)) holds no whole record yet (\(end.cutBytes) bytes)") }
            return end
        }
        if let keyIndex, keyIndex > 0 {
            file.underCurrentMaster = false
            inboxPairsUnderReplacedKeys.formUnion(inboxPairsSet)
        } else {
            inboxPairsUnderCurrentKey.formUnion(inboxPairsSet)
            recordsReadUnderCurrentKey = true
        }
        if let snapshotEnd { file.snapshotEnd = snapshotEnd }
        if end.records > file.records || file.lastSeq < file.firstSeq {
            file.records = end.records
            file.lastSeq = seq
            file.cutBytesOfLongest = end.cutBytes
            file.longestEndsUnfinished = end.unfinished
        } else if end.records == file.records {
            // Of the copies that hold the most, the shortest tail counts (none, when one ends
            // whole); it is an unfinished append only when every one is: a copy that holds the
            // record's first byte saw it finished (review AZ-7).
            file.cutBytesOfLongest = min(file.cutBytesOfLongest, end.cutBytes)
            file.longestEndsUnfinished = file.longestEndsUnfinished && end.unfinished
        }
        journals[id] = file
        return end
    }

    /// What this device has read: for each device, every record up to the highest number
    /// reached without a gap (a snapshot journal stands for all records before it).
    private func computeKnowledge() {
        var ranges: [Identifier: [(UInt64, UInt64)]] = [:]
        for file in journals.values {
            if file.snapshot { ranges[file.device, default: []].append((1, file.previousSeq)) }
            if file.records > 0 { ranges[file.device, default: []].append((file.firstSeq, file.lastSeq)) }
        }
        knowledge = Knowledge()
        for (device, list) in ranges {
            var reached: UInt64 = 0
            for (low, high) in list.sorted(by: { $0.0 < $1.0 }) where low <= reached + 1 { reached = max(reached, high) }
            knowledge[device] = reached
        }
        let mine = journals.values.filter { $0.device == device }.map(\.lastSeq).max() ?? 0
        let acknowledged = state.devices.filter { $0.key != device }.map { $0.value.lastKnowledge[device] }.max() ?? 0
        lastSeq = max(mine, acknowledged)
        if knowledge[device] < lastSeq {
            ownRecordsMayBeLost = true
            let gaps = Self.gaps(in: ranges[device] ?? [], upTo: lastSeq)
            let one = gaps.count == 1 && gaps[0].count == 1
            let named = gaps.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)–\($0.upperBound)" }.joined(separator: ", ")
            warnings.append("record\(one ? "" : "s") \(named) of this device \(one ? "is" : "are") missing from this copy of the store; objects they may name are kept")
        }
        noteOthersRecordsMissing()
    }

    /// The record numbers from 1 to `last` that none of `ranges` holds, as ranges.
    static func gaps(in ranges: [(UInt64, UInt64)], upTo last: UInt64) -> [ClosedRange<UInt64>] {
        var gaps: [ClosedRange<UInt64>] = []
        var next: UInt64 = 1
        for (low, high) in ranges.sorted(by: { $0.0 < $1.0 }) where next <= last {
            if low > next { gaps.append(next...min(low - 1, last)) }
            next = max(next, high + 1)
        }
        if next <= last { gaps.append(next...last) }
        return gaps
    }

    /// Another device's records that this device has read here (its own latest record says
    /// so) but that this copy no longer holds: that device's journal was cut or removed (a
    /// sync engine's revert, a restore, a hand), or its newer journal has not arrived yet. The
    /// vault is then shown without them: said at open, and `verify` fails, never an older vault
    /// in silence. (Another device's acknowledgements are no witness here: what it read may
    /// simply not have reached this copy yet.)
    private func noteOthersRecordsMissing() {
        guard let read = state.devices[device]?.lastKnowledge else { return }
        othersRecordsMissing = read.seen.filter { $0.key != device && knowledge[$0.key] < $0.value }
            .sorted { $0.key < $1.key }
            .map { other, seq in
                let first = knowledge[other] + 1
                let records = first == seq ? "record \(seq)" : "records \(first)–\(seq)"
                return "\(records) of device \(deviceName(other)), which this device has read here, \(first == seq ? "is" : "are") missing from this copy of the store (its journal was cut or removed, or its newer journal has not arrived); the vault is shown without \(first == seq ? "it" : "them")"
            }
        warnings += othersRecordsMissing
    }

    /// Finds record numbers that name two records (`RecordFork`; `copies` gives, for journals
    /// whose copies disagree, the first record index where they do). Another device's are
    /// noted by `verify`: both versions are read. This device's mean another copy of its store
    /// writes as it: while a journal holding a fork is not retired (no compaction has carried
    /// it) it is reported, appends stop, and `tidy` compacts at once, past every number either
    /// copy used. (Whether the fork reached the newest journal is no test: a sync killed while
    /// it took the other version in left this device to begin a new journal before the fork
    /// was seen, and it was never carried; review AA.)
    private func noteRecordForks(copies: [Identifier: UInt64]) {
        let copyForks = copies.compactMap { id, index -> RecordFork? in
            guard let file = journals[id], file.firstSeq + index <= file.lastSeq else { return nil }
            return RecordFork(device: file.device, seqs: (file.firstSeq + index)...file.lastSeq)
        }
        recordForks = RecordFork.find(copies: copyForks, journals: journals.values)
        let mine = journals.values.filter { $0.device == device && $0.records > 0 }
        newOwnForks = recordForks.filter { fork in
            fork.device == device && mine.contains { file in
                file.firstSeq <= fork.seqs.upperBound && fork.seqs.lowerBound <= file.lastSeq
                    && state.retired[RetiredFile(kind: .journal, id: file.id)] == nil
            }
        }
        for fork in newOwnForks {
            warnings.append("\(fork.twoVersions(of: "this device")): two copies of this store wrote as one device (a backup restored and used while the original went on, or a copy of its disk); both versions are read, and this device goes on after them. If the other copy is still in use, stop using one of them, or give this one a device of its own now (copy the store to a new folder with cp -a and use the copy): while both write as one device, changes can be lost")
        }
    }

    /// Appends go to this device's newest journal when it is whole, holds its latest record
    /// and is not forked; otherwise the next change starts a new journal, leaving the old one
    /// as it is.
    private func chooseAppendTarget() {
        let mine = journals.values.filter { $0.device == device }
        for file in mine {
            guard let end = file.end, end.cutBytes > 0, state.notedTails[file.id] == nil else { continue }
            if isRecordOfKilledCommit(file, end: end) {
                if removeRecordOfKilledCommit(from: file, end: end) { continue }
                // Kept, and said once (`tail noted`); this device goes on in a new journal.
                warnings.append("this device's journal \(file.id.hex.prefix(8)) ends in \(end.cutBytes) bytes of a write that a kill or crash stopped before it finished (no change reported done is missing); they could not be cut off (another program has the journal open, or the store is not on a local disk), so they are kept")
                continue
            }
            ownRecordsMayBeLost = true
            newlyFoundCuts.insert(file.id)
            warnings.append("this device's journal \(file.id.hex.prefix(8)) ends in \(end.cutBytes) bytes that are not a whole record (a write cut short, or the file was cut); they are kept, and so are objects the lost records may name")
        }
        guard let newest = newestOwnJournal, newest.underCurrentMaster, let end = newest.end,
              end.cutBytes == 0, end.records == newest.records, newest.lastSeq == lastSeq, newOwnForks.isEmpty,
              let path = inventory.files[newest.id]?.main else { return }
        journal = try? JournalWriter.reopen(id: newest.id, path: layout.root + "/" + path, keys: journalKeys, end: end)
    }

    /// True when the tail of this device's journal `file` is the record of a commit that a
    /// kill or crash stopped while the record was written (a `kill -9` during a large
    /// record's write leaves part of it: review AW). That commit never finished, so nothing
    /// of it was reported.
    ///
    /// The tail says so itself (`JournalEnd.unfinished`: the first byte an append writes
    /// after the rest is zero, or the last byte, written last, is missing), where a journal
    /// cut after its records were whole does not. And the journal must be the newest, holding
    /// this device's latest record as far as any device or copy knows, under the current
    /// master key, and not forked.
    private func isRecordOfKilledCommit(_ file: JournalFile, end: JournalEnd) -> Bool {
        end.unfinished && file.id == newestOwnJournal?.id && file.underCurrentMaster && end.records == file.records
            && file.lastSeq == lastSeq && newOwnForks.isEmpty
    }

    /// Cuts off the tail of `file` that `isRecordOfKilledCommit` found, and returns true;
    /// objects that commit wrote are then leftovers, deleted as those of any batch that never
    /// committed. It is cut only on a local file system, when the kernel grants a write lease
    /// on it (no other descriptor has it open; none can open it until the cut is durable) and
    /// it is as long as when it was read: a copy still arriving whose copier brings bytes out
    /// of order is not cut, and on FUSE, NFS or SMB, where a copier on another machine holds
    /// no lease here, nothing is (review AY). Otherwise the tail is kept.
    private func removeRecordOfKilledCommit(from file: JournalFile, end: JournalEnd) -> Bool {
        guard let path = inventory.files[file.id]?.main.map({ layout.root + "/" + $0 }),
              let fd = try? FileDescriptor.open(path, .readWrite, options: [.noFollow, .nonBlocking]),
              fd.syncFileSystemReachesDisk   // a local file system: its leases see every writer
        else { return false }
        var cut = false
        guard (try? fd.whileAloneWithIt {
                  guard try fd.size() == end.offset + end.cutBytes else { return }
                  // The record before, read with its first byte found again (a restore of a
                  // copier's copy), gets it back first: left zero as the last record, the next
                  // open would take it for an unfinished append too (review BE-2).
                  if var first = end.lastRecordFoundFirstByte {
                      try fd.pwriteAll(&first, count: 1, offset: end.lastRecordStart)
                  }
                  try fd.truncate(to: end.offset)
                  try fd.dataSync()
                  cut = true
              }) == true, cut else { return false }
        journals[file.id]?.end?.cutBytes = 0
        journals[file.id]?.end?.unfinished = false
        journals[file.id]?.cutBytesOfLongest = 0
        journals[file.id]?.longestEndsUnfinished = false
        return true
    }

    /// This device's journal that begins last: the one it appends to.
    var newestOwnJournal: JournalFile? {
        journals.values.filter { $0.device == device }.max { $0.firstSeq < $1.firstSeq }
    }

    /// The bytes of this device's journals that no retirement retired: the newest snapshot and
    /// what followed it. Retired ones wait for other devices to read their retirement and are
    /// not counted (review DL-1: counted, they kept the size past 8 MiB after a compaction
    /// while another device was away, and every few kilobytes of changes compacted again, each
    /// snapshot retiring all before it anew: 490 MB of journals for 1 MB of renames).
    var liveOwnJournalBytes: Int64 {
        liveOwnJournals.reduce(0) { $0 + ($1.end?.offset ?? 0) }
    }

    /// This device's journals that no retirement retired.
    private var liveOwnJournals: [JournalFile] {
        journals.values.filter { $0.device == device && state.retired[RetiredFile(kind: .journal, id: $0.id)] == nil }
    }

    /// Derives the tree anew from the merged state.
    func rebuildView() {
        view = TreeView.build(state) { [state] device in state.recordedName(of: device) }
    }
}

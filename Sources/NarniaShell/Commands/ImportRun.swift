import NarniaCrypto
import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaStore

/// Sizes of host files and folders, for the progress bar (links not followed).
enum HostTree {
    static func size(of path: String) -> UInt64 {
        var total: UInt64 = 0
        var pending = [path]
        var first = true
        while let next = pending.popLast() {
            // The path given may be a link to a file or folder, as `cp` follows; nothing below it is.
            let st = first ? (try? FileSystem.statIfExists(next)) ?? nil : (try? FileSystem.lstatIfExists(next)) ?? nil
            first = false
            guard let st else { continue }
            if st.isRegularFile { total += UInt64(st.st_size) }
            if st.isDirectory { pending += ((try? FileSystem.listDirectory(next)) ?? []).map { next + "/" + $0 } }
        }
        return total
    }
}

/// One `import` command: walks host paths, stages items in group-committed batches, reports
/// each item only once committed, and removes originals (with `--move`) only after that.
/// With `--skip-existing` (to finish an import cut short) a folder of the same name is merged
/// into and a file of the same name, size and modification time is left alone — with `--move`,
/// taken in again over that copy when it holds the same bytes, so that its original can go.
struct ImportRun: HostTreeVisitor {
    let session: Session
    let verb = "import"
    let move: Bool
    let skipExisting: Bool
    let report: TransferReport
    let progress: ProgressMeter?
    let storeFolders: Set<HostFileIdentity>
    let storeMarker: String?
    private let batch: ImportBatch
    /// Staged files, by item id: their host path for the report, and their original (where it
    /// lies and what it was when read) for `--move`.
    private var pendingOriginals: [(Identifier, String, Original)] = []
    /// The folders `pendingOriginals` keep open.
    private var retainedFolders = Set<ObjectIdentifier>()
    /// With `--move`, the host folders walked whose vault folders a commit made durable (to
    /// remove once emptied), and those whose vault folders wait in the batch.
    private var movedFolders = EmptiedFolders()
    private var pendingFolders: [(identity: HostFileIdentity, path: String, top: String, vaultFolder: Identifier?)] = []
    /// The path named on the command line whose folder is being walked.
    private var walkTop = ""
    /// With `--move`, originals removed that had other names (hard links), still open: their
    /// bytes stay on the disk under a name this import did not remove (`warnOfOtherNames`).
    private var removedWithOtherNames: [(path: String, file: FileDescriptor)] = []
    /// With `--move`, how many originals were removed where no lease could be taken, and the
    /// first with the error (`Original.Removal.uncheckedBecause`): said once, at the end.
    private var removedUnchecked: (count: Int, first: (path: String, code: Int32)?) = (0, nil)
    /// With `--skip-existing`, the names in each vault folder that entries of this run took
    /// (imported to, or skipped as copied there before), so that no two entries take one item
    /// for their earlier copy (`existing`).
    private var namesTaken: [Identifier: Set<String>] = [:]
    /// With `--move --skip-existing`, the items of `pendingOriginals` that hold a file taken in
    /// again over the copy an earlier run made of it (`importFile`): said so in its line.
    private var takenInAgain = Set<Identifier>()
    private(set) var failed = false
    /// The content a batch holds before it commits: `Transfer.batchBytes`, or less on a
    /// nearly full disk (`Transfer.batchBytes(available:)`), set again after each commit.
    private var batchBytes: UInt64
    /// Set when the store's disk filled up: nothing more can be imported, so the run stops.
    private(set) var diskFull = false
    /// Set when the run stopped with work left (interrupted, or out of space).
    private(set) var stoppedEarly = false
    /// True when Ctrl-C stopped the run before everything was imported (not when it came
    /// after the last file was staged: that file is committed and reported, not "interrupted").
    var interrupted: Bool { stoppedEarly && Session.interruptRequested != 0 }

    init(session: Session, move: Bool, skipExisting: Bool, report: TransferReport, progress: ProgressMeter?) {
        self.session = session
        self.move = move
        self.skipExisting = skipExisting
        self.report = report
        self.progress = progress
        storeFolders = HostFileIdentity.storeFolders(of: session.vault.directory)
        storeMarker = session.vault.keyFileName
        batch = ImportBatch.begin(in: session.vault)
        batchBytes = Transfer.batchBytes(available: FileSystem.availableBytes(on: session.vault.directory))
    }

    /// True when the run must stop (interrupted, or out of space) with work left.
    mutating func mustStop() -> Bool {
        guard diskFull || Session.interruptRequested != 0 else { return false }
        stoppedEarly = true
        return true
    }

    var err: Output { session.err }

    mutating func fail(_ message: String) {
        session.error("import", message)
        failed = true
    }

    func warn(_ message: String) {
        session.warning("import", message)
    }

    private func itemName(_ hostPath: String) throws -> String {
        let base = hostPath.lastPathComponent ?? hostPath
        do {
            return try ItemName.validated(base)
        } catch let e as NameError {
            throw CommandFailure("\(hostPath): \(e.description)")
        }
    }

    /// Imports one host path named on the command line into `folder`: a file or a folder (a
    /// link to one is followed there, as `cp` does, and nowhere below).
    mutating func importPath(_ path: String, into folder: Identifier) {
        do {
            if liesInStore(path) {
                throw CommandFailure("\(path): not imported: it is the vault's own store, or inside it")
            }
            let st = try FileSystem.statIfExists(path)
            if st?.isDirectory == true {
                let fd = try FileDescriptor.open(path, .readOnly, options: .directory)
                walkTop = path
                walkFolder(fd, display: path, name: try itemName(path), in: folder)
            } else {
                let fd = try FileDescriptor.open(path, .readOnly, options: [.noControllingTerminal, .nonBlocking])
                importFile(fd, display: path, name: try itemName(path), original: nil, linkedFile: move ? Self.linkedFile(path) : nil, into: folder)
            }
        } catch {
            fail(describe(error))
        }
    }

    /// The file a path named on the command line points to, when it is a symbolic link.
    private static func linkedFile(_ path: String) -> String? {
        guard (try? FileSystem.lstatIfExists(path))??.isSymbolicLink == true else { return nil }
        return FileSystem.realPath(path)
    }

    /// Imports an opened host file, which must be a regular file (`readyToRead`). `original`
    /// is where it lies (its folder, opened, and its name there), for `--move`; `linkedFile`,
    /// the file a link named on the command line points to (then nothing is removed).
    private mutating func importFile(_ fd: FileDescriptor, display path: String, name: String,
                                     original place: (folder: FileDescriptor, name: String)?, linkedFile: String? = nil,
                                     into folder: Identifier) {
        var expectedSize: UInt64?
        var replacing: Item?
        do {
            let started = SystemClock.nowNanoseconds()
            let st = try readyToRead(fd, shown: path)
            let modified = st.modifiedNanoseconds
            // A file sent to the inbox recipient with age goes in decrypted, without `.age`.
            let hostName = name
            var age = try AgeImport.open(fd, size: Int64(st.st_size), name: name, vault: session.vault)
            if age == nil, name.hasSuffix(".age"), try AgeImport.hasUnreadableHeader(fd, size: Int64(st.st_size)) {
                warn("\(path): begins as an age file, but its header does not read (cut, or altered): imported as it is, not decrypted")
            }
            let (name, size) = age.map { ($0.name, $0.size) } ?? (name, UInt64(st.st_size))
            expectedSize = size
            if skipExisting {
                // With `--move`, a file an earlier run took in (a move cut short) is taken in
                // again, as new content of that copy (`cp -f`), so that its original can go:
                // this run's record then keeps its bytes should another device remove or
                // replace the copy meanwhile (FORMAT rule 7). Removed after a comparison alone,
                // with no record, they were lost then (review FI-1); kept, they were left to
                // the user (FD-2). Only a copy holding the same bytes is taken so; one whose
                // bytes differ is looked for further, and failing that the file is imported
                // anew, numbered (review FF-1).
                let takeAgain = move && linkedFile == nil   // a linked file is never removed
                var notCompared: Error?
                let there = existing(named: name, in: folder, matching: { item in
                    guard !item.isFolder, Transfer.isCopiedBefore(size: size, modified: modified, there: (item.size, item.modified)) else { return false }
                    guard takeAgain, notCompared == nil else { return true }
                    do {
                        try fd.seek(to: 0)
                        return try Self.holds(fd, asAge: age != nil, sameBytesAs: item, in: session.vault, stoppable: true)
                    } catch {
                        notCompared = error
                        return true
                    }
                })
                if let stop = notCompared as? Cancelled { throw stop }
                if let there, !takeAgain || notCompared != nil {
                    take(there)
                    reportSkipped(path, there.id)
                    if let notCompared {
                        warn("\(path): skipped as already in the vault; its original is kept: its bytes could not be compared with the vault's copy (\(describe(notCompared))); 'verify' checks that copy, and an import without --skip-existing puts the file beside it")
                    } else if move, let linkedFile {
                        warn(Original.keptAsLinked(path, to: linkedFile))   // review FN-4: said by a plain --move, not here
                    }
                    return
                }
                if takeAgain {   // read again from its start
                    try fd.seek(to: 0)
                    if age != nil { age = try AgeImport.open(fd, size: Int64(st.st_size), name: hostName, vault: session.vault) }
                }
                replacing = there
            }
            progress?.begin(item: name)
            // A file that grows after its end was read is imported as read (and, moved, kept as
            // changed); one that changed before is not imported (`readingToEnd`).
            let bytes = readingToEnd(fd, unchangedSince: st, shown: path, notDone: "not imported")
            let item = try batch.addFile(named: name, in: folder, modified: modified, sizeHint: size, source: { buffer, count in
                if let age { return try age.payload.read(into: buffer, max: count) }
                return try bytes(buffer, count)
            }, classifyLater: session.classifyLater, observer: session.observer(progress: progress))
            if let replacing {
                try batch.take(nameOf: replacing.id, for: item.id)
                takenInAgain.insert(replacing.id)
            }
            let id = replacing?.id ?? item.id
            take(replacing ?? item)
            // Only `--move` compares the file after the read with the file before, and keeps
            // the original's folder open to remove it from.
            let original = Original(place: move ? place : nil, path: path, linkedFile: linkedFile, read: st, after: move ? try fd.status() : st,
                                    bytesRead: age == nil ? item.size : nil, readStarted: started)
            pendingOriginals.append((id, path, original))
            if move, let place { retainedFolders.insert(ObjectIdentifier(place.folder)) }
            // With --move each original's folder stays open until its commit: commit before too
            // many are (descriptors are limited).
            if batch.stagedBytes >= batchBytes || batch.count >= Transfer.batchItems
                || retainedFolders.count >= Transfer.retainedFolders { commit() }
        } catch is Cancelled {
            stoppedEarly = true
        } catch let e as AgeError {
            fail("\(path): not imported: \(e)")
        } catch let e as NameError {
            // The name an age file is given without `.age` (review BK-5: said without the path).
            fail("\(path): not imported: \(e)")
        } catch let e as SystemError where e.isDiskFull && replacing != nil {
            // The copy an earlier run made stays: the file is skipped as without `--move`.
            take(replacing!)
            notTakenInAgain(path, replacing!.id, because: "the disk holding the vault is full")
        } catch let e as SystemError where e.isDiskFull {
            // A file larger than all the space free (what it wrote is gone again) stops only
            // itself: the files after it may fit (review CO-7: none was tried, run after run).
            if let size = expectedSize, let free = FileSystem.availableBytes(on: session.vault.directory), size > free {
                // Its folders are imported, as those of a file that cannot be read are (review
                // CQ-8: left out, every empty folder of the run with them, without a word).
                fail("\(path): not imported: larger than the space free on the disk holding the vault (\(humanSize(free)))")
            } else {
                diskFull = true
                fail("\(path): not imported: the disk holding the vault is full")
            }
        } catch let e as SystemError where e.path != path {
            // A failure on the store's side: name the file being imported, not the object.
            fail("\(path): \(SystemError.reason(for: e.code))")
        } catch {
            fail(describe(error))
        }
    }

    /// A folder of the walk: a new vault folder of its name (with `--skip-existing`, the one
    /// there), into which its entries go.
    mutating func enterFolder(_ fd: FileDescriptor, path: String, name: String, in parent: Identifier) throws -> Identifier {
        let st = try fd.status()
        if skipExisting, let there = existing(named: name, in: parent, matching: \.isFolder) {
            if move { pendingFolders.append((HostFileIdentity(st), path, walkTop, nil)) }
            take(there)
            return there.id
        }
        let modified = st.modifiedNanoseconds
        let made = try batch.addFolder(named: name, in: parent, modified: modified)
        if move { pendingFolders.append((HostFileIdentity(st), path, walkTop, made.id)) }
        take(made)
        return made.id
    }

    /// With `--skip-existing`, the item an entry named `name` was imported to before, as
    /// `matches` tells: under `name`, or under the numbered name an import gave it where the
    /// name was taken (`name (2)`, `name (3)`…, while they exist), and not taken by another
    /// entry of this run. NFC and NFD twins (two host names the vault spells alike) went to
    /// `café` and `café (2)`, and a file met a name taken by another: each looked at `café`
    /// alone and was imported anew at every run (review AR2, AU).
    private func existing(named name: String, in folder: Identifier, matching matches: (Item) -> Bool) -> Item? {
        var n = 1
        while true {
            let candidate = n == 1 ? name : ItemName.numbered(name, n)
            guard let there = session.vault.child(named: candidate, in: folder) else { return nil }
            if namesTaken[folder]?.contains(candidate) != true, matches(there) { return there }
            n += 1
        }
    }

    /// Notes that an entry of this run took `item`'s name (`namesTaken`).
    private mutating func take(_ item: Item) {
        if skipExisting { namesTaken[item.parent, default: []].insert(item.name) }
    }

    mutating func visitFile(_ fd: FileDescriptor, path: String, name: String, folder: FileDescriptor, entry: String, in place: Identifier) {
        importFile(fd, display: path, name: name, original: (folder, entry), into: place)
    }

    /// Commits the batch, reports each file, then removes originals when moving. A run that
    /// stopped early commits no folder it did not begin to fill, and so removes no host folder
    /// it made none for (`ImportBatch.unstageEmptyFolders`).
    mutating func commit() {
        // Out of space at the last file visited too, when nothing asked whether to stop (BP-5).
        if stoppedEarly || diskFull {
            let unstaged = batch.unstageEmptyFolders()
            pendingFolders.removeAll { $0.vaultFolder.map(unstaged.contains) == true }
        }
        do {
            try batch.commit()
        } catch {
            let why = (error as? SystemError)?.isDiskFull == true ? "the disk holding the vault is full" : describe(error)
            let takenAgain = pendingOriginals.filter { takenInAgain.contains($0.0) }
            let files = pendingOriginals.filter { !takenInAgain.contains($0.0) }.map { err.name($0.1) }
            takenInAgain.removeAll()
            for (id, host, _) in takenAgain { notTakenInAgain(host, id, because: why) }
            let named = files.count > 5 ? files.prefix(5).joined(separator: ", ") + " and \(files.count - 5) more" : files.joined(separator: ", ")
            // Named, as imported ones are (review CH-1: "3 files not imported", which?).
            if !files.isEmpty || takenAgain.isEmpty { fail("\(files.count) file\(files.count == 1 ? "" : "s") not imported (\(named)): could not commit them: \(why)") }
            if (error as? SystemError)?.isDiskFull == true { diskFull = true }
            batch.abandon()
            pendingOriginals.removeAll()
            retainedFolders.removeAll()
            pendingFolders.removeAll()
            return
        }
        for folder in pendingFolders { movedFolders.append(folder.identity, path: folder.path, top: folder.top) }
        pendingFolders.removeAll()
        var keptAtTermination = 0, keptUnreported = 0
        for (id, host, _) in pendingOriginals {
            let again = takenInAgain.remove(id) != nil ? " (again, over the copy an earlier run made)" : ""
            report.done(bytes: session.vault.item(id)?.size ?? 0, "imported \(session.out.name(host)) -> \(session.shown(id, on: session.out))\(again)")
        }
        // Every file committed is said before the first original goes (review DR-1: the lines
        // waited in the buffer, and a kill during the removals left originals gone and the
        // log of a script without a word of them).
        session.out.flush()
        // Nor does one go whose line could not be written (review DS-1: `> /dev/full`, every
        // original removed and none named anywhere).
        let reportLost = Output.standardOutputFailure != nil
        for (id, host, original) in pendingOriginals where move {
            if Session.terminationRequested {
                // The process ends within its grace, wherever it is: no removal is begun (review
                // DF-2: cut inside one, on a slow file system, a hidden copy was left).
                keptAtTermination += 1
            } else if reportLost {
                keptUnreported += 1
            } else if let what = session.filesOpenedWith[HostFileIdentity(original.read)] {
                session.warning("import", "\(session.err.name(host)): the original is kept: it is \(what)")
            } else {
                do {
                    let removal = try original.removeIfUnchanged { file in
                        guard let item = session.vault.item(id) else { return false }
                        return try Self.holds(file, asAge: original.bytesRead == nil, sameBytesAs: item, in: session.vault)
                    }
                    if let code = removal.uncheckedBecause {
                        removedUnchecked.count += 1
                        if removedUnchecked.first == nil { removedUnchecked.first = (host, code) }
                    }
                    if let linked = removal.otherNames {
                        removedWithOtherNames.append((host, linked))
                        // Descriptors are limited: the oldest is looked at now (the other names
                        // of a file are most often in its folder, removed by then).
                        if removedWithOtherNames.count > Transfer.retainedFolders { warnOfOtherNames(removedWithOtherNames.removeFirst()) }
                    }
                } catch let e as CommandFailure {
                    session.warning("import", e.message)
                } catch {
                    session.warning("import", "\(host): could not remove the original: \(describe(error))")
                }
            }
        }
        session.out.flush()
        if keptAtTermination > 0 {
            session.warning("import", "ended by a signal: the originals of the last \(keptAtTermination) file\(keptAtTermination == 1 ? "" : "s") imported are kept (the vault holds \(keptAtTermination == 1 ? "it" : "them"))")
        }
        if keptUnreported > 0 {
            session.warning("import", "standard output could not be written: the originals of \(keptUnreported) file\(keptUnreported == 1 ? "" : "s") imported are kept, as nothing says which they are (the vault holds \(keptUnreported == 1 ? "it" : "them"))")
        }
        pendingOriginals.removeAll()
        retainedFolders.removeAll()
        batchBytes = Transfer.batchBytes(available: FileSystem.availableBytes(on: session.vault.directory))
    }

    /// A file `--move --skip-existing` found a copy of (`importFile`) that could not be taken in
    /// again over it: skipped, its original kept, and the run fails.
    private mutating func notTakenInAgain(_ host: String, _ id: Identifier, because why: String) {
        reportSkipped(host, id)
        fail("\(host): not moved: could not take it in again over the copy an earlier run made (\(why)); that copy stays, and so does the original")
    }

    /// The line of a file `--skip-existing` left, its copy being the vault's item `id`.
    private func reportSkipped(_ host: String, _ id: Identifier) {
        report.skip("skipped \(session.out.name(host)) -> \(session.shown(id, on: session.out)) (already there)")
    }

    /// True when `file` holds exactly the bytes of `item` in the vault: read from where it
    /// stands, or, `asAge`, decrypted as an age file sent to this vault (opened at its start;
    /// false when it no longer opens as one). When `stoppable`, Ctrl-C stops the comparison
    /// (`Cancelled`).
    static func holds(_ file: FileDescriptor, asAge: Bool, sameBytesAs item: Item, in vault: Vault, stoppable: Bool = false) throws -> Bool {
        guard asAge else { return try reads(sameBytesAs: item, in: vault, stoppable: stoppable) { try file.readFully(into: $0, count: $1) } }
        do {
            guard let age = try AgeImport.decrypting(file, size: Int64(try file.status().st_size), vault: vault) else { return false }
            return try reads(sameBytesAs: item, in: vault, stoppable: stoppable) { try age.payload.read(into: $0, max: $1) }
        } catch is AgeError {
            return false
        }
    }

    /// True when `source` (which fills a buffer and returns the count, 0 at its end) gives
    /// exactly the bytes of `item` in the vault, and then ends.
    private static func reads(sameBytesAs item: Item, in vault: Vault, stoppable: Bool,
                              from source: (UnsafeMutableRawPointer, Int) throws -> Int) throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var same = true
        try vault.readContent(of: item) { p, n in
            if stoppable && Session.interruptRequested != 0 { throw Cancelled() }
            var done = 0
            while same && done < n {
                let k = min(n - done, buffer.count)
                var got = 0
                while got < k, case let r = try buffer.withUnsafeMutableBytes({ try source($0.baseAddress! + got, k - got) }), r > 0 { got += r }
                same = got == k && buffer.withUnsafeBytes { memcmp($0.baseAddress!, p + done, k) == 0 }
                done += k
            }
        }
        var extra: UInt8 = 0
        return try same && source(&extra, 1) == 0
    }

    /// With `--move`, removes the now-empty host folders whose vault folders were committed,
    /// deepest first; non-empty ones stay. Then names the originals removed whose bytes other
    /// names still hold.
    mutating func finishMove() {
        movedFolders.removeAll(warn: warn)
        removedWithOtherNames.forEach(warnOfOtherNames)
        removedWithOtherNames.removeAll()
        if let (path, code) = removedUnchecked.first {
            let why = code == EACCES ? "only a file's owner may take a lease on it"
                : code == EREMOTE ? "on this file system (FUSE: sshfs, an rclone mount) a lease sees only the programs that opened the file through this mount, not one writing to it beneath, on the server or on another machine"
                : "no lease could be taken (\(SystemError.reason(for: code)): the file system takes none, or leases are off)"
            let which = removedUnchecked.count == 1 ? session.err.name(path) : "\(session.err.name(path)) and \(removedUnchecked.count - 1) more"
            warn("\(which): removed without the check that no other program had \(removedUnchecked.count == 1 ? "it" : "them") open for writing: \(why); what such a program writes after goes to the removed file")
        }
    }

    /// Warns when a removed original still has names: a hard link this import did not take
    /// keeps its plaintext on the disk, which `--move` is meant to take away.
    private func warnOfOtherNames(_ removed: (path: String, file: FileDescriptor)) {
        guard let st = try? removed.file.status(), st.st_nlink > 0 else { return }
        let names = st.st_nlink == 1 ? "another name (a hard link) still holds" : "\(st.st_nlink) other names (hard links) still hold"
        warn("\(removed.path): removed, but \(names) its bytes on the disk")
    }
}

/// An imported file's original, for `--move`: where it lies and what it was when read. It is
/// removed only if it is still that file, unchanged — not one still being written (a
/// download), grown or rewritten since, nor a new version renamed over it (an editor's save):
/// those are kept, with a warning, since the vault holds only what was read.
struct Original {
    /// Its folder, opened, and its name there; nil for a path named on the command line.
    let place: (folder: FileDescriptor, name: String)?
    /// The path shown in messages (and removed when `place` is nil).
    let path: String
    /// Set when `path`, named on the command line, is a symbolic link: the file it points to.
    /// Neither is removed (review AE): the link is not the original, and the file may be
    /// another's to keep.
    let linkedFile: String?
    /// Its status when opened, and once read to its end.
    let read: stat
    let after: stat
    /// The bytes taken from it, when they are its own bytes (not an age file's payload).
    let bytesRead: UInt64?
    /// When its reading began (nanoseconds since the epoch).
    let readStarted: Int64

    /// How close before its reading a file's modification time makes its status no proof:
    /// a rewrite in place of the same size within the file system's time step leaves the same
    /// status (FAT keeps times to 2 s, exFAT to 10 ms, a coarse kernel clock to a tick).
    static let racyWindow: Int64 = 3_000_000_000

    /// Modified so shortly before it was read that a later rewrite could leave its status
    /// unchanged: its bytes are compared with the vault's copy before it goes, as git does
    /// for an index entry as new as the index.
    var isRacy: Bool { read.modifiedNanoseconds > Nanoseconds.difference(readStarted, Self.racyWindow) }

    /// Removes the original if it is unchanged and no program has it open for writing; throws
    /// `CommandFailure` (a warning) if not. `sameBytes` says whether the file, open at its
    /// start, still holds the bytes the vault took (an age file: still decrypts to them), for a
    /// file too new for its status to tell or on a file system whose change time tells nothing
    /// (`fileSystemKeepsChangeTimes`).
    @discardableResult
    func removeIfUnchanged(sameBytes: (FileDescriptor) throws -> Bool) throws -> Removal {
        if let linkedFile { throw CommandFailure(Self.keptAsLinked(path, to: linkedFile)) }
        let options: OpenOptions = [.nonBlocking, .noControllingTerminal]
        let file = try place.map { try $0.folder.open($0.name, .readOnly, options: options.union(.noFollow), displayPath: path) }
            ?? FileDescriptor.open(path, .readOnly, options: options)
        let now = try file.status()
        let changes = [Self.change(from: read, to: after), Self.change(from: read, to: now)]
        guard !changes.contains(.other), bytesRead.map({ $0 == UInt64(read.st_size) }) ?? true else {
            throw Self.changedWhileImported(path)
        }
        // A link added or removed since (another name of it imported and removed first) may
        // hide a rewrite that put the times back: its bytes are compared, as for a racy file.
        let linksChanged = changes.contains(.links)
        // Relative to the folder that was read: a folder swapped meanwhile loses nothing.
        let check = try file.whileNoOneWrites { writerWaits in
            // Where the change time witnesses nothing, a rewrite of the same size that puts
            // the modification time back (`rsync --inplace -t`) leaves the status as it was.
            if isRacy || linksChanged || !file.fileSystemKeepsChangeTimes {
                guard try sameBytes(file) else {
                    throw Self.changedWhileImported(path)
                }
            }
            // A program that opened it for writing meanwhile waits for the lease: removed
            // now, the original would take its write with it, in silence (review AD).
            guard !writerWaits() else { throw Self.openedForWriting(path) }
            try removeAside(read: now, writerWaits: writerWaits)
        }
        guard check != .writer else {
            throw CommandFailure("\(path): another program has it open for writing; the original is kept (the vault holds the version read)")
        }
        let unchecked: Int32? = if case .unchecked(let code) = check { code } else { nil }
        return Removal(otherNames: now.st_nlink > 1 ? file : nil, uncheckedBecause: unchecked)
    }

    /// What removing an original left to say.
    struct Removal {
        /// The file, still open, when it had other names (hard links), which may still hold
        /// its bytes once this one is gone.
        let otherNames: FileDescriptor?
        /// Set when no lease could be taken on it (the error), so that nothing checked that no
        /// program had it open for writing (review CB-4).
        let uncheckedBecause: Int32?
    }

    /// Removes the original by first renaming it to a hidden name in its folder, while the
    /// lease is held: a program that looked its name up before the rename waits for the lease
    /// and is seen before the removal (the original goes back under its name); one that looks
    /// it up after finds nothing there. A program whose open was under way in the kernel across
    /// the rename and the last look is still seen once the file is gone, and said. Where the
    /// file system cannot rename, the original is removed under its name, when that still names
    /// it. A file put under the name since the original (`read`) was looked at —
    /// a program saving by renaming its new version over it — is the one renamed aside: it
    /// is put back, not removed (review AR).
    private func removeAside(read: stat, writerWaits: () -> Bool) throws {
        let (folder, name) = try place ?? (FileDescriptor.open(FileSystem.parentDirectory(of: path), .readOnly, options: .directory),
                                           path.lastPathComponent ?? path)
        let aside = Self.asidePrefix + String(UInt64.random(in: 0 ... .max), radix: 16)
        // A plain rename to a random name of narnia's own, seen free: one step, whatever the
        // file system (review CI-1: where `RENAME_NOREPLACE` is missing, FUSE, its emulation by
        // link then unlink removed a version saved over the name between the two).
        guard try folder.statusOfEntry(aside) == nil else { throw CommandFailure("\(path): \(folder.pathOfEntry(aside)) exists; the original is kept") }
        do {
            try folder.rename(name, to: aside)
        } catch let e as SystemError where e.code != ENOENT {
            guard let there = try folder.statusOfEntry(name), there.st_dev == read.st_dev, there.st_ino == read.st_ino else {
                throw Self.replacedWhileRemoved(path)
            }
            try folder.unlink(name)
            return
        }
        let replaced = try folder.statusOfEntry(aside).map { $0.st_dev != read.st_dev || $0.st_ino != read.st_ino } ?? false
        if replaced || writerWaits() {
            let why = replaced ? Self.replacedReason : Self.openedReason
            do {
                try folder.renameWithoutReplacing(aside, to: name)
            } catch {
                throw CommandFailure("\(path): \(why); the file is kept as \(folder.pathOfEntry(aside)) (\(describe(error)))")
            }
            throw replaced ? Self.replacedWhileRemoved(path) : Self.openedForWriting(path)
        }
        try folder.unlink(aside)
        if writerWaits() {
            throw CommandFailure("\(path): another program opened it for writing as it was removed: what that program writes goes to the removed file (save it again)")
        }
    }

    /// How the hidden name of an original being removed begins; a random `UInt64` in lowercase
    /// hex follows.
    static let asidePrefix = ".narnia-removing-"

    /// Whether `name` is of the form `removeAside` gives an original: a walk of its folder skips
    /// a file so named (left by a narnia killed between the rename and the removal). Only that
    /// form: a name of the user's own that merely begins so is imported (review EY-1: the loose
    /// match skipped `.narnia-removing-notes.txt`, and the run still exited 0).
    static func isAsideName(_ name: String) -> Bool {
        HiddenHostName.matches(name, prefix: asidePrefix, digits: 1...16)
    }

    private static func changedWhileImported(_ path: String) -> CommandFailure {
        CommandFailure("\(path): changed while it was imported; the original is kept (the vault holds the version read)")
    }

    /// Why the original named by a symbolic link on the command line stays: nothing is removed
    /// through a link.
    static func keptAsLinked(_ path: String, to linkedFile: String) -> String {
        "\(path): a symbolic link: the file it points to, \(linkedFile), is kept, and so is the link (the vault holds its bytes; remove them once you are sure)"
    }

    private static let openedReason = "another program opened it for writing"
    private static let replacedReason = "another file took its name as it was removed (a program saving a new version)"

    private static func openedForWriting(_ path: String) -> CommandFailure {
        CommandFailure("\(path): \(openedReason); the original is kept (the vault holds the version read)")
    }

    private static func replacedWhileRemoved(_ path: String) -> CommandFailure {
        CommandFailure("\(path): \(replacedReason); that file is kept (the vault holds the version read)")
    }

    /// How a file's status `b` differs from an earlier one, `a`.
    enum StatusChange {
        /// The same file, size and times, its change time included.
        case none
        /// The same file, size and modification time, with another number of links and a new
        /// change time: a link added or removed (two hard links imported together, one of them
        /// removed first), or that and a rewrite in place that put the times back, which the
        /// status cannot tell apart.
        case links
        /// Anything else: another file, size or time.
        case other
    }

    static func change(from a: stat, to b: stat) -> StatusChange {
        guard a.st_dev == b.st_dev, a.st_ino == b.st_ino, a.st_size == b.st_size,
              a.st_mtim.tv_sec == b.st_mtim.tv_sec, a.st_mtim.tv_nsec == b.st_mtim.tv_nsec else { return .other }
        if a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec { return .none }
        return a.st_nlink != b.st_nlink ? .links : .other
    }

    /// True when two statuses of a file show it unchanged: the same file, size and times, its
    /// change time included (review DF-4: a new link count once excused a new change time, and
    /// a rewrite in place with the times put back went unseen, in the read and at removal).
    static func same(_ a: stat, _ b: stat) -> Bool {
        change(from: a, to: b) == .none
    }
}

import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaKinds
import NarniaStore

/// `import`, `export`, `cat`: moving content between the host and the vault.
enum Transfer {
    /// A batch is committed once it holds this much content or this many items.
    static let batchBytes: UInt64 = 64 << 20
    static let batchItems = 2000
    /// The content an import batch holds before it commits on a disk with `available` bytes
    /// free: `batchBytes`, or half what is free when that is less. A batch is committed whole
    /// or not at all (its small files share one pack), so on a nearly full disk smaller
    /// batches let an import get as far as the space allows, and with `--move` free the
    /// originals' space as it goes, rather than fail whole, run after run (review CH-4).
    static func batchBytes(available: UInt64?) -> UInt64 {
        min(batchBytes, (available ?? .max) / 2)
    }
    /// With `--move`, the most originals' folders an import keeps open before it commits: a
    /// quarter of the descriptor limit, at most 256.
    static let retainedFolders: Int = {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 64 }
        return Int(max(8, min(256, limit.rlim_cur / 4)))
    }()
    /// Descriptors the files an export writes may hold before it makes them durable and puts
    /// them in place: each file's own and its folders' (review DC-2: counted one per file, a
    /// batch of files in folders of their own ran out); or this much content.
    static let exportBatchDescriptors = retainedFolders
    static let exportBatchBytes: UInt64 = batchBytes

    /// `--skip-existing`'s check, rsync's quick check: a file of the same size and
    /// modification time as the one to copy is taken for a copy made before (import and export
    /// both keep the time). Times count to 2 seconds, which FAT keeps. Size alone took another
    /// file of the same size, a document edited in place, for the copy (review AE).
    static func isCopiedBefore(size: UInt64, modified: Int64, there: (size: UInt64, modified: Int64)) -> Bool {
        size == there.size && Nanoseconds.distance(modified, there.modified) < 2 * Nanoseconds.perSecond
    }

    // MARK: import

    /// `import [--move|--keep] [--skip-existing] [-v|-q] HOSTPATH... | import - NAME`. Every source
    /// that can be imported is, as cp does; each bad one is reported and makes the exit 1.
    static func importCommand(_ s: Session, _ a: ParsedArguments) throws {
        guard !a.operands.isEmpty else { throw CommandFailure("missing host path", hint: CommandTable.usage(of: "import")) }
        guard let folder = s.resolve(s.cwd) else { throw CommandFailure("the current folder no longer exists") }
        func report() -> TransferReport { TransferReport(out: s.out, verb: "imported", verbose: a.has("-v"), quiet: a.has("-q")) }
        if a.operands[0].text == "-" && a.operands[0].quotedScalars.first != true {
            return try importStandardInput(s, a, into: folder, report: report())
        }
        var sources: [String] = []
        var named = Set<[UInt8]>(), namedFolders = Set<HostFileIdentity>()
        let badSource = try s.forEachOperand(a.operands, of: "import") { word in
            for path in try s.expandHost(word) {
                guard let st = try FileSystem.statIfExists(path) else { throw CommandFailure("\(path): \(FileSystem.absenceReason(path))") }
                guard st.isDirectory || st.isRegularFile else { throw CommandFailure("\(path): not a regular file or folder") }
                // Named twice (`import b b`, `import d/x d/*`): one copy, as cp warns (review
                // BG-6: two copies, and --move then warned that the original was missing).
                guard named.insert(sourceKey(path, st)).inserted else {
                    s.warning("import", "\(s.err.name(path)): named before; imported once")
                    continue
                }
                if st.isDirectory { namedFolders.insert(HostFileIdentity(st)) }
                sources.append(path)
            }
        }
        if !namedFolders.isEmpty && sources.count > 1 {
            sources.removeAll { path in
                guard let folder = namedFolder(around: path, among: namedFolders) else { return false }
                s.warning("import", "\(s.err.name(path)): inside \(s.err.name(folder)), also named; imported with it, once")
                return true
            }
        }
        guard !sources.isEmpty else { throw Reported() }
        let move = try a.has("--move") || (!a.has("--keep") && s.removeOriginalsAskedOnce())
        // Made after the question, whose answer takes no part of the time the summary gives.
        let report = report()
        var run = ImportRun(session: s, move: move, skipExisting: a.has("--skip-existing"), report: report,
                            progress: ProgressMeter(session: s, label: "import", totalBytes: sources.reduce(0) { $0 + HostTree.size(of: $1) }))
        for path in sources {
            if run.mustStop() { break }
            run.importPath(path, into: folder)
        }
        run.commit()
        run.finishMove()
        run.progress?.finish()
        report.finish()
        // The files never tried are said too, and how to finish (review CH-1: only the file
        // that met the full disk was named, and a plain rerun imported the rest a second time).
        if run.diskFull {
            s.error("import", run.stoppedEarly ? "the disk holding the vault is full: the import stopped there, and the files after it were not imported either"
                                              : "the disk holding the vault is full",
                    hint: "free space on it, then run the import again with --skip-existing: it imports only what the vault lacks (and, moving, takes in again the files whose originals are still there, to remove them)")
        }
        if run.interrupted { throw Cancelled() }
        if run.failed || badSource { throw Reported() }
    }

    /// What a source named to `import` is, however its path is written (links, `..`, a bind
    /// mount: review CB-5): a folder by its identity; a file by its folder's identity and its
    /// name there, byte for byte (Swift's `==` takes NFC and NFD twins for one), so that two
    /// names of one file (hard links) are two files, as in a folder walked (BJ-2).
    private static func sourceKey(_ path: String, _ st: stat) -> [UInt8] {
        func key(_ identity: HostFileIdentity) -> [UInt8] { Array("\(identity.device):\(identity.inode)/".utf8) }
        if st.isDirectory { return key(HostFileIdentity(st)) }
        let real = FileSystem.realPath(path) ?? path
        guard let folder = HostFileIdentity(of: FileSystem.parentDirectory(of: real)) else { return Array(real.utf8) }
        return key(folder) + (real.utf8.split(separator: UInt8(ascii: "/")).last.map(Array.init) ?? [])
    }

    /// The folder above `path` (its real path, walked up) whose identity is among `named`, the
    /// folders named to one `import`: `import d d/x` gave x twice, as `import b b` did (BG-6).
    private static func namedFolder(around path: String, among named: Set<HostFileIdentity>) -> String? {
        HostFileIdentity.folderOnRealPath(of: path, includingItself: false) { folder in
            HostFileIdentity(of: folder).map(named.contains) ?? false
        }
    }

    private static func importStandardInput(_ s: Session, _ a: ParsedArguments, into folder: Identifier, report: TransferReport) throws {
        guard a.operands.count == 2 else { throw CommandFailure("usage: import - NAME") }
        // Standard input has no original to remove or keep.
        for flag in ["--move", "--keep", "--skip-existing"] where a.has(flag) {
            throw CommandFailure("\(flag) does not go with 'import - NAME'")
        }
        guard !s.commandsFromStandardInput else {
            throw CommandFailure("standard input carries the commands here (the terminal, or a script read from it)", hint: "use narnia -c 'import - NAME' < FILE")
        }
        let name: String
        do { name = try ItemName.validated(a.operands[1].text) } catch let e as NameError { throw CommandFailure("\(nameInMessage(a.operands[1].text)): \(e.description)") }
        let input = try StandardInputSource()
        let batch = ImportBatch.begin(in: s.vault)
        do {
            _ = try batch.addFile(named: name, in: folder, source: { try input.read(into: $0, count: $1) },
                                  classify: s.classify, observer: s.observer(progress: nil))
            for item in try batch.commit() where !item.isFolder {
                report.done(bytes: item.size, "imported - -> \(s.shown(item.id, on: s.out))")
            }
            report.finish()
        } catch {
            batch.abandon()
            throw error
        }
    }

    // MARK: export

    static func export(_ s: Session, _ a: ParsedArguments) throws {
        guard !a.operands.isEmpty else {
            throw CommandFailure("missing path", hint: CommandTable.usage(of: "export"))
        }
        // One operand: into the current host folder (`lcd`), as sftp's get does; and every
        // operand a vault path for `mget`, as sftp's (review AJ: `mget a b` wrote a to b).
        var dest: String
        let named: ArraySlice<Word>
        if a.operands.count == 1 || a.typedName == "mget" {
            dest = try s.currentHostDirectory()
            named = a.operands[...]
        } else {
            let destinations = try s.expandHost(a.operands.last!)
            guard destinations.count == 1 else { throw CommandFailure("\(a.operands.last!.text): names more than one host path") }
            dest = destinations[0]
            named = a.operands.dropLast()
        }
        var sources: [(VaultPath, Identifier)] = []
        for word in named { sources += try s.existing(word) }
        // A trailing `/` only says the destination is a folder, as for `cp -r d newd/`
        // (review DC-8: `export /d newd/` was "no such folder" where `export /d newd` made it).
        if dest.count > 1 && dest.hasSuffix("/") {
            dest = String(dest.reversed().drop { $0 == "/" }.reversed())
            if dest.isEmpty { dest = "/" }
            if !FileSystem.isDirectory(dest), (try? FileSystem.lstatIfExists(dest)) != nil {
                throw CommandFailure("\(s.err.name(dest)): not a folder")
            }
            if sources.count == 1, !s.vault.isFolder(sources[0].1), let reason = FileSystem.notAFolderReason(dest) {
                throw CommandFailure("\(s.err.name(dest)): \(reason)")
            }
        }
        // The destination named may be a folder (or a link to one, as cp allows): the items go
        // inside it. Otherwise it is a new name in an existing folder, for one item.
        let destIsFolder = FileSystem.isDirectory(dest)
        guard destIsFolder || sources.count == 1 else {
            throw CommandFailure("\(s.err.name(dest)): \(FileSystem.notAFolderReason(dest) ?? "not a folder")")
        }
        let base = destIsFolder ? dest : FileSystem.parentDirectory(of: dest)
        if let reason = FileSystem.notAFolderReason(base) { throw CommandFailure("\(s.err.name(base)): \(reason)") }
        // Not into the store (`HostFolder.inStore`), here or in a folder below.
        let store = HostFileIdentity(of: s.vault.directory).map { (folder: $0, marker: s.vault.keyFileName) }
        if let store, HostFileIdentity.isInStore(base, store: [store.folder], marker: store.marker) {
            throw HostFolder.inStore(s.err.name(base))
        }
        let host = HostFolder(top: try FileDescriptor.open(base, .readOnly, options: .directory), display: base, store: store)
        let force = a.has("--force") || a.has("-f")
        let skipExisting = a.has("--skip-existing")
        let report = TransferReport(out: s.out, verb: "exported", verbose: a.has("-v"), quiet: a.has("-q"))
        // Plan every file first, so that a refusal changes nothing on the host.
        var plan: [(Item, [String])] = []
        var folders: [[String]] = []
        var folderTimes: [[String]: Int64] = [:]
        var namedItems = Set<Identifier>()
        for (path, id) in sources {
            // Named twice (`export /x/f /x/f DIR`): once, as import says (review EP-3: refused,
            // "/x/f and another").
            guard namedItems.insert(id).inserted else {
                s.warning("export", "\(s.shown(id, on: s.err)): named before; exported once")
                continue
            }
            let top = destIsFolder ? (path.lastComponent ?? "vault") : dest.lastPathComponent ?? ""
            guard !top.isEmpty, top != ".", top != ".." else { throw CommandFailure("\(nameInMessage(dest)): not a name to export to") }
            if s.vault.isFolder(id) {
                folders.append([top])
                folderTimes[[top]] = s.vault.item(id)?.modified
                let depth = s.vault.pathComponents(of: id).count
                // In path order, so that the lines a script reads come the same way every time.
                let below = s.vault.descendants(of: id)
                    .map { ($0, [top] + s.vault.pathComponents(of: $0.id).dropFirst(depth)) }
                    .sorted { $0.1.lexicographicallyPrecedes($1.1) }
                for (item, relative) in below {
                    if item.isFolder {
                        folders.append(relative)
                        folderTimes[relative] = item.modified
                    } else {
                        plan.append((item, relative))
                    }
                }
            } else {
                plan.append((s.vault.item(id)!, [top]))
            }
        }
        // Two items bound for one host path (`export -f /a/x /b/x DIR`): the second would
        // replace the file the first just wrote, as cp refuses to.
        var destinations: [[String]: Identifier] = [:]
        for (item, components) in plan {
            if let earlier = destinations.updateValue(item.id, forKey: components) {
                throw CommandFailure("\(s.err.name(host.path(components))): more than one item would be exported there (\(s.shown(earlier, on: s.err)) and \(s.shown(item.id, on: s.err)))")
            }
        }
        // Nor a file where a folder of this export goes (`export /x/d /y/d out`): half was
        // exported before the folder made met the file (review BG-11).
        for folder in folders {
            if let file = (1...folder.count).lazy.map({ Array(folder[..<$0]) }).first(where: { destinations[$0] != nil }) {
                throw CommandFailure("\(s.err.name(host.path(file))): a file and a folder would be exported there; nothing was exported")
            }
        }
        // Every folder and file in the way is named, not only the first; then nothing is
        // written, and the last line says so (review AR2: a folder in a file's way did not).
        func refuse(_ found: [CommandFailure]) throws {
            // A file where a folder goes is met again by every folder below it: said once.
            var said = Set<String>()
            let blocked = found.filter { said.insert($0.message).inserted }
            guard !blocked.isEmpty else { return }
            for (i, e) in blocked.enumerated() {
                s.error(a.command, e.message, hint: i == blocked.count - 1 ? e.hint ?? "nothing was exported" : nil)
            }
            throw Reported()
        }
        try refuse(folders.compactMap { folder in
            do { _ = try host.folder(folder, create: false) } catch let e as CommandFailure { return e }
            return nil
        })
        // Said once nothing is in the way: a failed command prints nothing on standard output.
        var skipped: [String] = []
        if skipExisting {
            plan = try plan.filter { item, components in
                guard try host.holdsFile(components, size: item.size, modified: item.modified) else { return true }
                try host.makeExistingDurable(components)
                try host.lookForLeftFiles(besides: components)
                skipped.append("skipped \(s.shown(item.id, on: s.out)) -> \(s.out.name(host.path(components))) (already there)")
                return false
            }
        }
        try refuse(plan.compactMap { _, components in
            do { try host.checkWritable(components, force: force, skipping: skipExisting) } catch let e as CommandFailure { return e }
            return nil
        })
        // A vault item may bear such a name itself: its own destination is no leftover (review
        // DC-6: called one, "delete it", beside "skipped … (already there)").
        let destinationPaths = Set(destinations.keys.map(host.path))
        for left in host.leftTemporaryFiles where !destinationPaths.contains(left) {
            s.warning("export", "\(s.err.name(left)): left by an export killed before it renamed it into place, unless an export into this folder is running now; it holds a copy of a vault file, whole or in part: delete it once none is")
        }
        for line in skipped { report.skip(line) }
        // A folder the host cannot make (FAT takes `dir` for the `Dir` just made) is reported
        // once, and the files below it are not tried.
        var refused: [[String]] = []
        for folder in folders where !refused.contains(where: { folder.starts(with: $0) }) {
            do {
                _ = try host.folder(folder, create: true)
            } catch let e as CommandFailure {
                s.error("export", e.message)
                refused.append(folder)
            } catch let e as SystemError where e.isDiskFull || e.code == EROFS {
                // Every folder and file after it would fail the same way: said once, and the
                // folders made before it go (review DD-5: one error per folder).
                s.error("export", "\(describe(e)); nothing was exported")
                host.removeEmptyFoldersMade()
                refused.append([])
                break
            } catch let e as SystemError {
                // Not made (permission denied): said, and the files below it are not tried;
                // the rest is exported (review AR2).
                s.error("export", describe(e))
                refused.append(folder)
            }
        }
        plan.removeAll { _, components in refused.contains { components.starts(with: $0) } }
        let progress = ProgressMeter(session: s, label: "export", totalBytes: plan.reduce(0) { $0 + $1.0.size })
        defer {
            progress?.finish()
            report.finish()
        }
        var failed = !refused.isEmpty
        var stoppedEarly = false
        // Files are reported once they are in place and on disk, a batch at a time: one
        // `syncfs` covers many small files, and a power cut leaves only whole ones.
        var pending: [(item: Item, file: PendingFile)] = []
        var pendingBytes: UInt64 = 0
        var pendingFolders = Set<ObjectIdentifier>()
        func placePending() {
            defer { pending.removeAll(); pendingBytes = 0; pendingFolders.removeAll() }
            var placed: [(item: Item, file: PendingFile)] = []
            do {
                try host.makeDurable(pending.map(\.file))
                for (item, file) in pending {
                    do {
                        try host.place(file, replace: force)
                        placed.append((item, file))
                    } catch {
                        s.error("export", "\(s.shown(item.id, on: s.err)): \(describe(error))")
                        failed = true
                    }
                }
            } catch {
                let files = pending.count
                s.error("export", "\(files) file\(files == 1 ? "" : "s") not exported: could not write \(files == 1 ? "it" : "them") to disk: \(describe(error))")
                failed = true
                return
            }
            do {
                try host.makeNamesDurable(placed.map(\.file))
            } catch {
                // In place, whole, but their names may not be on the disk (review DC-1: said
                // "not exported", and `--skip-existing` then took them for done).
                let files = placed.count
                s.error("export", "\(files) file\(files == 1 ? " is" : "s are") in place, but the disk did not confirm \(files == 1 ? "its name" : "their names"): \(describe(error))",
                        hint: "once the disk is sound, run the export again with --skip-existing, which makes what it skips durable")
                failed = true
                return
            }
            for (item, file) in placed {
                report.done(bytes: item.size, "exported \(s.shown(item.id, on: s.out)) -> \(s.out.name(host.path(file.components)))")
            }
            exported += placed.count
        }
        var exported = 0
        // The folders made get the times the vault shows, deepest first, once nothing more is
        // put in them (review DC-5: every folder had the export's time; cp -a keeps them).
        func setFolderTimes() {
            for folder in folders.sorted(by: { $0.count > $1.count }) {
                if let modified = folderTimes[folder] { host.setTimeOfFolderMade(folder, modified: modified) }
            }
        }
        // Interrupted: the files not placed go (`PendingFile`), and so do the folders made for
        // them that hold nothing; the note says what was done (review DC-10: the whole tree was
        // left, empty, and "interrupted" said nothing more).
        func interrupted() -> Cancelled {
            pending.removeAll()
            host.removeEmptyFoldersMade()
            setFolderTimes()   // review DE-2: the rerun finds them there, and keeps their time
            s.note("export", "\(exported) of \(plan.count) file\(plan.count == 1 ? " was" : "s were") exported before the interruption; 'export --skip-existing' with the same operands does the rest")
            return Cancelled()
        }
        for (index, (item, components)) in plan.enumerated() {
            if Session.interruptRequested != 0 { throw interrupted() }
            // Its `#N` under hide-names, as every listing shows it (review AQ).
            progress?.begin(item: HiddenNames.maskedName(of: item, in: s) ?? item.name)
            do {
                let file = try host.write(components, modified: item.modified) { fd in
                    try s.vault.export(item, to: fd, observer: s.observer(progress: progress))
                }
                pending.append((item, file))
                pendingBytes += item.size
                pendingFolders.formUnion(file.folders.map(ObjectIdentifier.init))
                if pending.count + pendingFolders.count >= Self.exportBatchDescriptors || pendingBytes >= Self.exportBatchBytes { placePending() }
            } catch is Cancelled {
                throw interrupted()
            } catch let e as SystemError where e.isDiskFull || e.code == EROFS {
                // Every file after it would fail the same way: stop, as import does (review
                // DC-11: a read-only disk gave one error per file).
                let after = plan.count - index - 1
                s.error("export", "\(s.shown(item.id, on: s.err)): not exported: \(e.isDiskFull ? "the disk is full" : "the file system is read-only")"
                        + (after == 0 ? "" : "; the \(after == 1 ? "file" : "\(after) files") after it \(after == 1 ? "was" : "were") not exported either"))
                failed = true
                stoppedEarly = true
                break
            } catch {
                s.error("export", "\(s.shown(item.id, on: s.err)): \(describe(error))")
                failed = true
            }
        }
        placePending()
        if stoppedEarly { host.removeEmptyFoldersMade() }
        setFolderTimes()
        if failed { throw Reported() }
    }

    // MARK: cat

    static func cat(_ s: Session, _ a: ParsedArguments) throws {
        guard !a.operands.isEmpty else { throw CommandFailure("missing path", hint: CommandTable.usage(of: "cat")) }
        var items: [Item] = []
        for word in a.operands {
            for (path, id) in try s.existing(word) {
                guard let item = s.vault.item(id), !item.isFolder else { throw CommandFailure("\(s.inMessage(path)): is a folder") }
                items.append(item)
            }
        }
        if s.out.isTerminal && !a.has("--force") {
            for item in items where !Classifier.isText(mime: item.content!.mime) {
                throw CommandFailure("\(s.shown(item.id, on: s.err)): is not text (\(item.content!.mime)); not writing it to the terminal",
                                     hint: "use cat --force to write it anyway, or export it")
            }
        }
        s.out.flush()
        if s.out.descriptor == 1 && StandardDescriptors.outputWasClosed { throw CommandFailure("standard output is closed") }
        // Content goes straight to the descriptor, after the buffered text flushed above; on a
        // terminal (without --force) with its control characters made harmless, as `open` shows
        // text without a pager, so a text file's escape sequences cannot drive the terminal.
        let out = FileDescriptor.borrowing(s.out.descriptor, name: "standard output")
        let sanitising = s.out.isTerminal && !a.has("--force")
        do {
            for item in items {
                var filter = TerminalTextFilter()
                do {
                    try s.vault.readContent(of: item, observer: s.observer(progress: nil)) { p, n in
                        guard sanitising else { return try out.writeAll(p, count: n) }
                        try out.writeAll(filter.filter(UnsafeRawBufferPointer(start: p, count: n)))
                    }
                    try out.writeAll(filter.finish())
                } catch let e as ContentError {
                    throw CommandFailure("\(s.shown(item.id, on: s.err)): \(e.description)")
                }
            }
        } catch let e as SystemError where e.code == EPIPE {
            // The reader went away (`cat f | head`): no failure, as for every other command's
            // output (man, EXIT STATUS; review AX3). Only a write gives EPIPE.
        }
    }
}

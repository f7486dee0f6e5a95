import NarniaSystem
import Glibc
import NarniaStore

/// `import`, `export`, `cat`: moving content between the host and the vault.
enum Transfer {
    /// A batch is committed once it holds this much content or this many items.
    static let batchBytes: UInt64 = 64 << 20
    static let batchItems = 2000

    // MARK: import

    static func importCommand(_ s: Session, _ a: ParsedArguments) throws {
        guard !a.operands.isEmpty else { throw CommandFailure("missing host path", hint: "usage: import [--move] HOSTPATH... | import - NAME") }
        guard let folder = s.resolve(s.cwd) else { throw CommandFailure("the current folder no longer exists") }
        if a.operands[0].text == "-" && a.operands[0].quotedScalars.first != true {
            return try importStandardInput(s, a, into: folder)
        }
        var sources: [String] = []
        for word in a.operands {
            for path in try s.expandHost(word) {
                guard let st = try FileSystem.statIfExists(path) else { throw CommandFailure("\(path): no such file or folder") }
                guard st.isDirectory || st.isRegularFile else { throw CommandFailure("\(path): not a regular file or folder") }
                sources.append(path)
            }
        }
        let move = try a.has("--move") || s.removeOriginalsAskedOnce()
        var run = ImportRun(session: s, move: move, progress: ProgressMeter(session: s, label: "import",
                                                                            totalBytes: sources.reduce(0) { $0 + HostTree.size(of: $1) }))
        defer { run.progress?.finish() }
        for path in sources {
            if run.mustStop { break }
            let st = try FileSystem.statIfExists(path)
            if st?.isDirectory == true {
                run.importFolder(path, into: folder)
            } else {
                run.importFile(path, into: folder)
            }
        }
        run.commit()
        run.removeMovedFolders()
        if Session.interruptRequested != 0 { throw Cancelled() }
        if run.failed { throw Reported(CommandFailure("some items were not imported")) }
    }

    private static func importStandardInput(_ s: Session, _ a: ParsedArguments, into folder: Identifier) throws {
        guard a.operands.count == 2 else { throw CommandFailure("usage: import - NAME") }
        guard !s.commandsFromStandardInput else {
            throw CommandFailure("standard input carries the commands", hint: "use narnia -c 'import - NAME' < FILE")
        }
        let name: String
        do { name = try ItemName.validated(a.operands[1].text) } catch let e as NameError { throw CommandFailure("\(a.operands[1].text): \(e.description)") }
        let input = FileDescriptor.borrowing(0, name: "standard input")
        let batch = ImportBatch.begin(in: s.vault)
        do {
            _ = try batch.addFile(named: name, in: folder, source: { try input.readFully(into: $0, count: $1) },
                                  classify: s.classify, observer: s.observer(progress: nil))
            for item in try batch.commit() where !item.isFolder {
                s.out.line("imported - -> \(s.vaultPath(of: item.id))")
            }
        } catch {
            batch.abandon()
            throw error
        }
    }

    // MARK: export

    static func export(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.count >= 2 else { throw CommandFailure("missing destination", hint: "usage: export [--force] PATH... HOSTDEST") }
        let destinations = try s.expandHost(a.operands.last!)
        guard destinations.count == 1 else { throw CommandFailure("\(a.operands.last!.text): names more than one host path") }
        let dest = destinations[0]
        var sources: [(VaultPath, Identifier)] = []
        for word in a.operands.dropLast() { sources += try s.existing(word) }
        let destIsFolder = FileSystem.isDirectory(dest)
        guard destIsFolder || sources.count == 1 else { throw CommandFailure("\(dest): not a folder") }
        if !destIsFolder && !FileSystem.isDirectory(FileSystem.parentDirectory(of: dest)) {
            throw CommandFailure("\(FileSystem.parentDirectory(of: dest)): no such folder")
        }
        let force = a.has("--force")
        // Plan every file first, so that a refusal changes nothing on the host.
        var plan: [(Item, String)] = []
        var folders: [String] = []
        for (path, id) in sources {
            let top = destIsFolder ? s.hostJoin(dest, path.lastComponent ?? "vault") : dest
            if s.vault.isFolder(id) {
                if let st = try FileSystem.lstatIfExists(top), !st.isDirectory { throw CommandFailure("\(top): exists and is not a folder") }
                folders.append(top)
                for item in s.vault.descendants(of: id) {
                    let relative = s.vault.pathComponents(of: item.id).dropFirst(s.vault.pathComponents(of: id).count)
                    let host = top + "/" + relative.joined(separator: "/")
                    if item.isFolder { folders.append(host) } else { plan.append((item, host)) }
                }
            } else {
                plan.append((s.vault.item(id)!, top))
            }
        }
        for (item, host) in plan {
            if let st = try FileSystem.lstatIfExists(host) {
                if st.isDirectory { throw CommandFailure("\(host): a folder is in the way of \(s.vault.path(of: item.id))") }
                if !force { throw CommandFailure("\(host): already exists", hint: "use export --force to replace it") }
            }
        }
        for folder in folders { try FileSystem.makeDirectory(folder, mode: 0o700, existingOK: true) }
        let progress = ProgressMeter(session: s, label: "export", totalBytes: plan.reduce(0) { $0 + $1.0.size })
        defer { progress?.finish() }
        var failed = false
        for (item, host) in plan {
            if Session.interruptRequested != 0 { throw Cancelled() }
            progress?.begin(item: item.name)
            do {
                try writeHostFile(s, item, to: host, progress: progress)
                s.out.line("exported \(s.vault.path(of: item.id)) -> \(host)")
            } catch is Cancelled {
                throw Cancelled()
            } catch {
                s.error("export", "\(s.vault.path(of: item.id)): \(describe(error))")
                failed = true
            }
        }
        if failed { throw Reported(CommandFailure("some items were not exported")) }
    }

    /// Writes `item` to a temporary file beside `host` and renames it into place, so that no
    /// partial file is ever left under the final name. Like `cp`, it leaves flushing the
    /// exported copy to the system (the vault copy is the durable one).
    private static func writeHostFile(_ s: Session, _ item: Item, to host: String, progress: ProgressMeter?) throws {
        let dir = FileSystem.parentDirectory(of: host)
        let temporary = s.hostJoin(dir, ".narnia-partial-" + randomSuffix())
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(temporary, .writeOnly, options: [.create, .exclusive], permissions: 0o600)
        } catch let e as SystemError {
            throw CommandFailure("\(host): cannot write: \(String(cString: strerror(e.code)))")
        }
        do {
            try s.vault.export(item, to: fd, observer: s.observer(progress: progress))
            var times = [timespec(tv_sec: Int(item.modified / 1_000_000_000), tv_nsec: Int(item.modified % 1_000_000_000)),
                         timespec(tv_sec: Int(item.modified / 1_000_000_000), tv_nsec: Int(item.modified % 1_000_000_000))]
            _ = futimens(fd.raw, &times)
            try FileSystem.rename(temporary, host)
        } catch {
            try? FileSystem.unlink(temporary, missingOK: true)
            throw error
        }
    }

    private static func randomSuffix() -> String {
        Identifier.random().hex.prefix(12).description
    }

    // MARK: cat

    static func cat(_ s: Session, _ a: ParsedArguments) throws {
        guard !a.operands.isEmpty else { throw CommandFailure("missing path", hint: "usage: cat [--force] PATH...") }
        var items: [Item] = []
        for word in a.operands {
            for (path, id) in try s.existing(word) {
                guard let item = s.vault.item(id), !item.isFolder else { throw CommandFailure("\(path): is a folder") }
                items.append(item)
            }
        }
        if s.out.isTerminal && !a.has("--force") {
            for item in items where !(item.content!.mime.hasPrefix("text/") || item.content!.mime == "application/x-empty" || item.content!.mime == "application/json") {
                throw CommandFailure("\(s.vault.path(of: item.id)): is not text (\(item.content!.mime)); not writing it to the terminal",
                                     hint: "use cat --force to write it anyway, or export it")
            }
        }
        s.out.flush()
        let out = s.out
        for item in items {
            do {
                try s.vault.readContent(of: item, observer: s.observer(progress: nil)) { p, n in try out.writeRaw(p, count: n) }
            } catch let e as ContentError {
                throw CommandFailure("\(s.vault.path(of: item.id)): \(e.description)")
            }
        }
    }
}

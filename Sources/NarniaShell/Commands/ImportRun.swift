import NarniaSystem
import Glibc
import NarniaStore

/// Sizes of host files and folders, for the progress bar (links not followed).
enum HostTree {
    static func size(of path: String) -> UInt64 {
        guard let st = try? FileSystem.lstatIfExists(path) ?? FileSystem.statIfExists(path) else { return 0 }
        if st.isRegularFile { return UInt64(st.st_size) }
        guard st.isDirectory, let names = try? FileSystem.listDirectory(path) else { return 0 }
        return names.reduce(0) { total, name in
            let child = path + "/" + name
            guard let c = try? FileSystem.lstatIfExists(child) else { return total }
            if c.isRegularFile { return total + UInt64(c.st_size) }
            if c.isDirectory { return total + size(of: child) }
            return total
        }
    }
}

/// One `import` command: walks host paths, stages items in group-committed batches, reports
/// each item only once committed, and removes originals (with `--move`) only after that.
struct ImportRun {
    let session: Session
    let move: Bool
    let progress: ProgressMeter?
    private let batch: ImportBatch
    /// Host paths of staged files, by item id, for the report and for `--move`.
    private var pendingOriginals: [(Identifier, String)] = []
    private var movedFolders: [String] = []
    private(set) var failed = false
    /// Set when the store's disk filled up: nothing more can be imported, so the run stops.
    private(set) var diskFull = false
    /// True when the run should stop: interrupted, or out of space.
    var mustStop: Bool { diskFull || Session.interruptRequested != 0 }

    init(session: Session, move: Bool, progress: ProgressMeter?) {
        self.session = session
        self.move = move
        self.progress = progress
        batch = ImportBatch.begin(in: session.vault)
    }

    private mutating func fail(_ message: String) {
        session.error("import", message)
        failed = true
    }

    private func itemName(_ hostPath: String) throws -> String {
        let base = hostPath.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? hostPath
        do {
            return try ItemName.validated(base)
        } catch let e as NameError {
            throw CommandFailure("\(hostPath): \(e.description)")
        }
    }

    /// Imports one host file into `folder`.
    mutating func importFile(_ path: String, into folder: Identifier) {
        do {
            let name = try itemName(path)
            let fd = try FileDescriptor.open(path, .readOnly, options: .noControllingTerminal)
            fd.adviseSequential()
            let st = try fd.status()
            let modified = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
            progress?.begin(item: name)
            let size = st.isRegularFile ? UInt64(st.st_size) : nil
            let item = try batch.addFile(named: name, in: folder, modified: modified, sizeHint: size,
                                         source: { try fd.readFully(into: $0, count: $1) },
                                         classifyLater: session.classifyLater, observer: session.observer(progress: progress))
            pendingOriginals.append((item.id, path))
            if batch.stagedBytes >= Transfer.batchBytes || batch.count >= Transfer.batchItems { commit() }
        } catch is Cancelled {
            return
        } catch let e as SystemError where e.isDiskFull {
            diskFull = true
            fail("\(path): not imported: the disk holding the vault is full")
        } catch let e as SystemError where e.path != path {
            // A failure on the store's side: name the file being imported, not the object.
            fail("\(path): \(String(cString: strerror(e.code)))")
        } catch {
            fail(describe(error))
        }
    }

    /// Imports a host folder and everything under it; symbolic links and special files inside
    /// are skipped with a warning, never followed.
    mutating func importFolder(_ path: String, into parent: Identifier) {
        let created: Item
        do {
            let st = try FileSystem.statIfExists(path)
            let modified = st.map { Int64($0.st_mtim.tv_sec) * 1_000_000_000 + Int64($0.st_mtim.tv_nsec) }
            created = try batch.addFolder(named: try itemName(path), in: parent, modified: modified)
        } catch {
            fail(describe(error))
            return
        }
        if move { movedFolders.append(path) }
        let names: [String]
        do {
            let listing = try FileSystem.listDirectoryCountingUndecodable(path)
            names = listing.names.sorted(by: utf8Order)
            for name in listing.undecodable {
                fail("\(path.hasSuffix("/") ? path : path + "/")\(name): the name is not valid UTF-8; rename it to import it")
            }
        } catch {
            fail(describe(error))
            return
        }
        for name in names {
            if mustStop { return }
            let child = path.hasSuffix("/") ? path + name : path + "/" + name
            guard let st = try? FileSystem.lstatIfExists(child) else { continue }
            if st.isSymbolicLink {
                session.warning("import", "\(child): symbolic link skipped")
            } else if st.isDirectory {
                importFolder(child, into: created.id)
            } else if st.isRegularFile {
                importFile(child, into: created.id)
            } else {
                session.warning("import", "\(child): special file skipped")
            }
        }
    }

    /// Commits the batch, reports each file, then removes originals when moving.
    mutating func commit() {
        do {
            try batch.commit()
        } catch {
            let files = pendingOriginals.count
            let why = (error as? SystemError)?.isDiskFull == true ? "the disk holding the vault is full" : describe(error)
            fail("\(files) file\(files == 1 ? "" : "s") not imported: could not commit them: \(why)")
            if (error as? SystemError)?.isDiskFull == true { diskFull = true }
            batch.abandon()
            pendingOriginals.removeAll()
            return
        }
        for (id, host) in pendingOriginals {
            session.out.line("imported \(host) -> \(session.vault.path(of: id))")
            if move {
                do { try FileSystem.unlink(host) } catch {
                    session.warning("import", "\(host): could not remove the original: \(describe(error))")
                }
            }
        }
        session.out.flush()
        pendingOriginals.removeAll()
    }

    /// With `--move`, removes the now-empty host folders, deepest first; non-empty ones stay.
    func removeMovedFolders() {
        for folder in movedFolders.reversed() { _ = Glibc.rmdir(folder) }
    }
}

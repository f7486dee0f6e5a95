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
/// into and a file of the same name and size is left alone, its original too.
struct ImportRun: HostTreeVisitor {
    let session: Session
    let verb = "import"
    let move: Bool
    let skipExisting: Bool
    let report: TransferReport
    let progress: ProgressMeter?
    private let batch: ImportBatch
    /// Staged files, by item id: their host path for the report, and where they lie (their
    /// folder, opened, and their name there) for `--move`.
    private var pendingOriginals: [(Identifier, String, (folder: FileDescriptor, name: String)?)] = []
    /// The folders `pendingOriginals` keep open.
    private var retainedFolders = Set<ObjectIdentifier>()
    private var movedFolders: [String] = []
    private(set) var failed = false
    /// Set when the store's disk filled up: nothing more can be imported, so the run stops.
    private(set) var diskFull = false
    /// Set when the run stopped with work left (interrupted, or out of space).
    private var stoppedEarly = false
    /// True when Ctrl-C stopped the run before everything was imported (not when it came
    /// after the last file was staged: that file is committed and reported, not "interrupted").
    var interrupted: Bool { stoppedEarly && Session.interruptRequested != 0 }

    init(session: Session, move: Bool, skipExisting: Bool, report: TransferReport, progress: ProgressMeter?) {
        self.session = session
        self.move = move
        self.skipExisting = skipExisting
        self.report = report
        self.progress = progress
        batch = ImportBatch.begin(in: session.vault)
    }

    /// True when the run must stop (interrupted, or out of space) with work left.
    mutating func mustStop() -> Bool {
        guard diskFull || Session.interruptRequested != 0 else { return false }
        stoppedEarly = true
        return true
    }

    mutating func fail(_ message: String) {
        session.error("import", message)
        failed = true
    }

    func warn(_ message: String) {
        session.warning("import", message)
    }

    private func itemName(_ hostPath: String) throws -> String {
        let base = hostPath.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? hostPath
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
            let st = try FileSystem.statIfExists(path)
            if st?.isDirectory == true {
                let fd = try FileDescriptor.open(path, .readOnly, options: .directory)
                walkFolder(fd, display: path, name: try itemName(path), in: folder)
            } else {
                let fd = try FileDescriptor.open(path, .readOnly, options: [.noControllingTerminal, .nonBlocking])
                importFile(fd, display: path, name: try itemName(path), original: nil, into: folder)
            }
        } catch {
            fail(describe(error))
        }
    }

    /// Imports an opened host file, which must be a regular file (`readyToRead`). `original`
    /// is where it lies (its folder, opened, and its name there), for `--move`.
    private mutating func importFile(_ fd: FileDescriptor, display path: String, name: String,
                                     original: (folder: FileDescriptor, name: String)?, into folder: Identifier) {
        do {
            let st = try readyToRead(fd, shown: path)
            let modified = st.modifiedNanoseconds
            // A file sent to the inbox recipient with age goes in decrypted, without `.age`.
            let age = try AgeImport.open(fd, size: Int64(st.st_size), name: name, vault: session.vault)
            let (name, size) = age.map { ($0.name, $0.size) } ?? (name, UInt64(st.st_size))
            if skipExisting, let there = session.vault.child(named: name, in: folder), !there.isFolder, there.size == size {
                report.skip("skipped \(session.out.name(path)) -> \(session.shown(there.id, on: session.out)) (already there)")
                return
            }
            progress?.begin(item: name)
            let item = try batch.addFile(named: name, in: folder, modified: modified, sizeHint: size,
                                         source: { try age?.payload.read(into: $0, max: $1) ?? fd.readFully(into: $0, count: $1) },
                                         classifyLater: session.classifyLater, observer: session.observer(progress: progress))
            pendingOriginals.append((item.id, path, original))
            if let original { retainedFolders.insert(ObjectIdentifier(original.folder)) }
            // With --move each original's folder stays open until its commit: commit before too
            // many are (descriptors are limited).
            if batch.stagedBytes >= Transfer.batchBytes || batch.count >= Transfer.batchItems || retainedFolders.count >= 256 { commit() }
        } catch is Cancelled {
            stoppedEarly = true
        } catch let e as AgeError {
            fail("\(path): not imported: \(e)")
        } catch let e as SystemError where e.isDiskFull {
            diskFull = true
            fail("\(path): not imported: the disk holding the vault is full")
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
        if move { movedFolders.append(path) }
        if skipExisting, let there = session.vault.child(named: name, in: parent), there.isFolder { return there.id }
        let modified = st.modifiedNanoseconds
        return try batch.addFolder(named: name, in: parent, modified: modified).id
    }

    mutating func visitFile(_ fd: FileDescriptor, path: String, name: String, folder: FileDescriptor, entry: String, in place: Identifier) {
        importFile(fd, display: path, name: name, original: (folder, entry), into: place)
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
            retainedFolders.removeAll()
            return
        }
        for (id, host, original) in pendingOriginals {
            report.done(bytes: session.vault.item(id)?.size ?? 0, "imported \(session.out.name(host)) -> \(session.shown(id, on: session.out))")
            if move {
                // Relative to the folder that was read: a folder swapped meanwhile loses nothing.
                do {
                    if let original { try original.folder.unlink(original.name) } else { try FileSystem.unlink(host) }
                } catch {
                    session.warning("import", "\(host): could not remove the original: \(describe(error))")
                }
            }
        }
        session.out.flush()
        pendingOriginals.removeAll()
        retainedFolders.removeAll()
    }

    /// With `--move`, removes the now-empty host folders, deepest first; non-empty ones stay.
    func removeMovedFolders() {
        for folder in movedFolders.reversed() { _ = Glibc.rmdir(folder) }
    }
}

import NarniaLanguage
import Glibc
import NarniaStore
import NarniaSystem

/// A host folder `export` writes into, and the folders below it, each opened relative to the
/// one above it (`openat`) and never through a symbolic link: a link planted inside the
/// destination cannot send files elsewhere, as `cp -r` refuses too. Only the destination the
/// user names may itself be a link to a folder.
final class HostFolder {
    private let top: FileDescriptor
    private let display: String
    /// The folders open below the top: those of the path last asked for, outermost first
    /// (`chain[i]` is at its first i + 1 names). Only one path's folders are kept, so a tree
    /// of any number of folders, written in path order, holds as many descriptors as it is
    /// deep (every folder kept, a tree of a thousand ran out of them).
    private var chain: [(name: String, folder: FileDescriptor)] = []
    /// The files and folders this export made, by identity, with the components they were made
    /// at: on a file system that does not tell names apart by case (FAT, exFAT, NTFS), `photo.jpg`
    /// finds the `Photo.jpg` written just before, which must not be taken for its own.
    private var made: [HostFileIdentity: [String]] = [:]
    /// The components of the files and folders this export made: on a file system that numbers
    /// a file anew at each lookup (fusefat), `made` misses them by identity.
    private var madePaths = Set<[String]>()
    /// The exact names (bytes) in the folders at these components, read when first needed: an
    /// entry that was there before the export counts only if it bears the very name asked for.
    private var listings: [[String]: Set<[UInt8]>] = [:]
    /// The names in the folders at these components that are not in NFC, by their NFC form,
    /// read when first needed (`otherForm`).
    private var otherForms: [[String]: [String: String]] = [:]
    /// The file systems synced whole, and the folders synced, by `makeExistingDurable`.
    private var confirmedFileSystems = Set<UInt64>()
    private var confirmedFolders = Set<HostFileIdentity>()
    /// The folders looked into for temporary files left (`leftTemporaryFiles`).
    private var lookedForLeftFiles = Set<[String]>()
    /// The host paths of temporary files (`temporaryName`) found in the folders files are
    /// checked for: left by an export killed (`kill -9`, a crash) before it renamed them, each
    /// holding a copy of a vault file, whole or in part, that nothing removes.
    private(set) var leftTemporaryFiles: [String] = []
    /// The vault's store folder and the name of its key file: a folder below the top that is
    /// the store, or holds a file of that name (a copy of the store), is never written into.
    private let store: (folder: HostFileIdentity, marker: String)?

    init(top: FileDescriptor, display: String, store: (folder: HostFileIdentity, marker: String)?) {
        self.top = top
        self.display = display
        self.store = store
    }

    /// The refusal of a destination that is the vault's store or lies in it (`shown`): plaintext
    /// there would travel with the store to every device and cloud it syncs to, and `--force`
    /// could replace the key file, the only way in.
    static func inStore(_ shown: String) -> CommandFailure {
        CommandFailure("\(shown): inside the vault's own store, or a copy of it", hint: "export to a folder outside it; nothing was exported")
    }

    /// The host path of `components` below the top, for messages: below the current host
    /// folder as typed (`out.txt`, not `./out.txt`: review AX).
    func path(_ components: [String]) -> String {
        if display == "." && !components.isEmpty { return components.joined(separator: "/") }
        return components.reduce(display) { $0.appendingPathComponent($1) }
    }

    /// The folder at `components`, opened without following links; made (mode 0700) when
    /// missing and `create`; nil when missing otherwise.
    /// - Throws: `CommandFailure` when a component is a link or not a folder.
    func folder(_ components: [String], create: Bool) throws -> FileDescriptor? {
        var kept = 0
        while kept < min(chain.count, components.count) && chain[kept].name == components[kept] { kept += 1 }
        chain.removeLast(chain.count - kept)
        var current = chain.last?.folder ?? top
        for depth in kept..<components.count {
            var name = components[depth]
            let shown = path(Array(components[...depth]))
            // A folder whose name is this one in another Unicode form stands for it, as a
            // file's does (review CO-3: an NFC twin was made beside it, and every file written
            // again there).
            var otherFormHere = false
            if try current.statusOfEntry(name) == nil, let other = try otherForm(of: Array(components[...depth]), in: current) {
                (name, otherFormHere) = (other, true)
            }
            let madeHere = create && !otherFormHere ? try current.makeDirectory(name, permissions: 0o700, existingOK: true) : false
            guard let st = try current.statusOfEntry(name) else { return nil }
            if st.isSymbolicLink { throw CommandFailure("\(shown): is a symbolic link; export does not write through links") }
            guard st.isDirectory else { throw CommandFailure("\(shown): exists and is not a folder") }
            if madeHere {
                remember(Array(components[...depth]), st)
            } else if !otherFormHere {
                try checkSameName(Array(components[...depth]), found: st, in: current)
            }
            let next = try current.open(name, .readOnly, options: [.directory, .noFollow], displayPath: shown)
            // A folder named like the store's (`export / ~` with the store at `~/vault`) is it
            // (review BG-2); the identity is the folder's as opened, not as looked up.
            if let store, !madeHere, try HostFileIdentity(next.status()) == store.folder || next.statusOfEntry(store.marker) != nil {
                throw Self.inStore(shown)
            }
            chain.append((components[depth], next))
            current = next
        }
        return current
    }

    /// True when a regular file of `size` bytes modified at `modified` is at `components`
    /// (`--skip-existing`: a file exported before, `Transfer.isCopiedBefore`), not following
    /// links. A file there under another spelling (`Photo.jpg` for `photo.jpg` on FAT) is not.
    func holdsFile(_ components: [String], size: UInt64, modified: Int64) throws -> Bool {
        guard let (_, _, st) = try entry(components) else { return false }
        return st.isRegularFile && Transfer.isCopiedBefore(size: size, modified: modified, there: (UInt64(st.st_size), st.modifiedNanoseconds))
    }

    /// Makes a file `holdsFile` found durable, bytes and name, as an export makes those it
    /// writes: it may be one an export placed and never confirmed, killed before its names'
    /// sync or told by the disk that it failed (review DC-1: `--skip-existing` took such
    /// files for done, exit 0, and a script then removed the vault's copies).
    func makeExistingDurable(_ components: [String]) throws {
        guard let (dir, name, _) = try entry(components) else { return }
        // One `syncfs` per file system covers every file found (none is written meanwhile),
        // through its folder; elsewhere each file, and each folder once. A file this user may
        // not read (mode 0200, another user's) was not written by an export of this user: its
        // folders are synced all the same (review DD-1: it failed the whole export).
        if !dir.syncFileSystemReachesDisk {
            do {
                try dir.open(name, .readOnly, options: [.noFollow], displayPath: path(components)).sync()
            } catch let e as SystemError where e.code == EACCES || e.code == EPERM {
            }
        }
        for folder in [top] + chain.map(\.folder) {
            let st = try folder.status()
            if folder.syncFileSystemReachesDisk {
                if confirmedFileSystems.insert(UInt64(st.st_dev)).inserted { try folder.syncFileSystem() }
            } else if confirmedFolders.insert(HostFileIdentity(st)).inserted {
                try folder.sync()
            }
        }
    }

    /// The folder, name and status of what stands at `components`, not following links: the
    /// entry of that very name (`checkSameName`), or of the name in another Unicode form.
    private func entry(_ components: [String]) throws -> (FileDescriptor, String, stat)? {
        guard let dir = try folder(Array(components.dropLast()), create: false) else { return nil }
        if let found = try dir.statusOfEntry(components.last!) {
            guard (try? checkSameName(components, found: found, in: dir)) != nil else { return nil }
            return (dir, components.last!, found)
        }
        if let other = try otherForm(of: components, in: dir), let found = try dir.statusOfEntry(other) {
            return (dir, other, found)   // exported before under that spelling, or imported from it
        }
        return nil
    }

    /// The name in `dir` (the folder of `components`) that is the last of `components` in
    /// another Unicode form, if any: a decomposed (NFD) `café`, as macOS and some programs
    /// write names, for the NFC one every vault name is (review CN-5: an export back into the
    /// folder an item was imported from wrote a second `café` beside the first).
    private func otherForm(of components: [String], in dir: FileDescriptor) throws -> String? {
        let parent = Array(components.dropLast())
        if otherForms[parent] == nil {
            var forms: [String: String] = [:]
            for entry in try dir.typedEntries().entries {
                let nfc = ItemName.nfc(entry.name)
                if !nfc.utf8.elementsEqual(entry.name.utf8) { forms[nfc] = entry.name }
            }
            otherForms[parent] = forms
        }
        return otherForms[parent]![ItemName.nfc(components.last!)]
    }

    /// Checks that `found`, the entry that the last of `components` finds in `dir`, is the one
    /// of that very name: not a file or folder this export made under another spelling, nor
    /// one there before that the file system takes for the same name.
    /// - Throws: `CommandFailure` naming the other.
    private func checkSameName(_ components: [String], found: stat, in dir: FileDescriptor) throws {
        let name = components.last!
        let parent = Array(components.dropLast())
        if let other = made[HostFileIdentity(found)] {
            guard other != components else { return }
            throw CommandFailure("\(path(components)): this file system takes it for \(path(other)), exported just before (it does not tell the two names apart)")
        }
        if listings[parent] == nil {
            let listed = try dir.typedEntries()
            listings[parent] = Set(listed.entries.map { Array($0.name.utf8) } + listed.undecodable)
        }
        guard !listings[parent]!.contains(Array(name.utf8)) else { return }
        let listed = listedName(of: HostFileIdentity(found), like: name, in: dir)
        // Made by this export all the same, where the identity changed (review DC-9: fusefat's
        // `Photo.jpg`, written an instant before, was "already there").
        let madeJustBefore = listed.map { madePaths.contains(parent + [$0]) } ?? false
        let other = listed.map { path(parent + [$0]) } ?? "another name"
        throw CommandFailure("\(path(components)): this file system takes it for \(other), \(madeJustBefore ? "exported just before" : "already there") (it does not tell the two names apart)")
    }

    /// The name under which `dir` lists the file or folder `identity` (or, where the file
    /// system numbers a file anew at each lookup, as fusefat does, a name equal to `name` but
    /// for case), for a message.
    private func listedName(of identity: HostFileIdentity, like name: String, in dir: FileDescriptor) -> String? {
        let entries = ((try? dir.typedEntries().entries) ?? []).map(\.name)
        return entries.first { entry in
            guard let st = try? dir.statusOfEntry(entry) else { return false }
            return HostFileIdentity(st) == identity
        } ?? entries.first { $0.lowercased() == name.lowercased() }
    }

    /// Checks that a file may be written at `components`: no link or non-folder on the way,
    /// nothing there, or (with `force`) a file or link to replace, never a folder. With
    /// `skipping` (`--skip-existing`) what is there is not the file exported before.
    func checkWritable(_ components: [String], force: Bool, skipping: Bool) throws {
        guard let dir = try folder(Array(components.dropLast()), create: false) else { return }
        lookForLeftFiles(in: dir, at: Array(components.dropLast()))
        let shown = path(components)
        guard let st = try dir.statusOfEntry(components.last!) else {
            if let other = try otherForm(of: components, in: dir) {
                throw CommandFailure("\(shown): \(path(Array(components.dropLast()) + [other])) is there, the same name in another Unicode form (decomposed)",
                                     hint: "nothing was exported; a second file of that name would look the same: rename or move that one aside, or export elsewhere")
            }
            return
        }
        try checkSameName(components, found: st, in: dir)
        if st.isDirectory {
            throw CommandFailure("\(shown): a folder is in the way", hint: "nothing was exported; a folder is never replaced, even with --force: move it aside, or export elsewhere")
        }
        // A program's FIFO or socket, or a device, replaced by a file breaks what uses it
        // (review BG-9: `export -f /v /dev/null`, as root, replaced the device). So does a link
        // to one, or to a process's open file (review CI-5: `export -f /v /dev/stdout`, as root,
        // replaced the system's link to /proc/self/fd/1 with the item's plaintext); and a link
        // to a folder stands for the folder.
        let special = "nothing was exported; export writes regular files and never replaces another kind, even with --force: to write into it, redirect narnia -c 'cat PATH'"
        if !st.isRegularFile && !st.isSymbolicLink {
            throw CommandFailure("\(shown): a special file (FIFO, socket or device) is in the way", hint: special)
        }
        if st.isSymbolicLink {
            let name = components.last!
            if Self.linkLeadsIntoProc(dir, name) {
                throw CommandFailure("\(shown): a link to a process's open file (in /proc) is in the way", hint: special)
            }
            if let target = dir.statusOfTarget(name), !target.isRegularFile {
                if target.isDirectory {
                    throw CommandFailure("\(shown): a link to a folder is in the way", hint: "nothing was exported; a folder, or a link to one, is never replaced, even with --force: export into it by naming it with a / at the end, or export elsewhere")
                }
                throw CommandFailure("\(shown): a link to a special file (FIFO, socket or device) is in the way", hint: special)
            }
        }
        if !force {
            throw CommandFailure("\(shown): already exists", hint: skipping
                ? "nothing was exported; it is another file than the one exported (its size or modification time differs): --force replaces it"
                : "nothing was exported; --force replaces what is there, --skip-existing leaves it and exports the rest")
        }
    }

    /// Writes a file for `components` with what `fill` writes into the descriptor it is given,
    /// not yet in place: unnamed (`O_TMPFILE`), or where the file system has no unnamed files
    /// (vfat, some FUSE and network file systems) under a hidden temporary name, removed if
    /// the file is never placed. `makeDurable` then `place` put it where it belongs, so that
    /// an export cut short (Ctrl-C, a crash, `kill -9`, a power cut) leaves only whole files.
    func write(_ components: [String], modified: Int64, fill: (FileDescriptor) throws -> Void) throws -> PendingFile {
        let dir = try folder(Array(components.dropLast()), create: true)!
        let folders = [top] + chain.map(\.folder)
        let shown = path(components)
        let pending: PendingFile
        do {
            let file = try dir.open(".", .writeOnly, options: .unnamedTemporary, permissions: 0o600, displayPath: shown)
            pending = PendingFile(file: file, folders: folders, components: components, temporary: nil)
        } catch let e as SystemError where e.operation == "open" && [EOPNOTSUPP, EISDIR, EINVAL].contains(e.code) {
            let temporary = Self.temporaryName()
            let file = try dir.open(temporary, .writeOnly, options: [.create, .exclusive, .noFollow], permissions: 0o600, displayPath: shown)
            pending = PendingFile(file: file, folders: folders, components: components, temporary: temporary)
        }
        try fill(pending.file)
        pending.file.setTimes(nanoseconds: modified)
        return pending
    }

    /// Makes the bytes of written files durable: one `syncfs` per file system where that
    /// reaches the disk, else an `fsync` of each file.
    func makeDurable(_ files: [PendingFile]) throws {
        try Self.sync(files.map(\.file))
    }

    /// Puts a written file in its place. With `replace`, an existing file (or link) of that
    /// very name is replaced; otherwise its appearing meanwhile is an error.
    func place(_ pending: PendingFile, replace: Bool) throws {
        let dir = pending.folders.last!
        let name = pending.components.last!
        let shown = path(pending.components)
        let exists = try there(pending.components, in: dir)
        if let temporary = pending.temporary {
            if !replace && exists { throw SystemError(code: EEXIST, operation: "link", path: shown) }
            if replace {
                try dir.rename(temporary, to: name)
            } else {
                // Not over a file that appeared since the look above (review CI-2: a plain
                // rename replaced it): the temporary is narnia's own, so the emulation by link
                // then unlink is sound; where neither works, the rename after the look.
                do {
                    try dir.renameWithoutReplacing(temporary, to: name)
                } catch let e as SystemError where e.code == EEXIST {
                    throw SystemError(code: EEXIST, operation: "link", path: shown)
                } catch let e as SystemError where [EPERM, ENOSYS, EOPNOTSUPP].contains(e.code) {
                    try dir.rename(temporary, to: name)
                }
            }
        } else if replace && exists {
            let temporary = Self.temporaryName()
            try pending.file.link(as: temporary, in: dir, displayPath: shown)
            do { try dir.rename(temporary, to: name) } catch { try? dir.unlink(temporary, missingOK: true); throw error }
        } else {
            try pending.file.link(as: name, in: dir, displayPath: shown)
        }
        pending.placed = true
        remember(pending.components, try pending.file.status())
    }

    /// True when the symbolic link `name` in `dir` leads, link after link, into /proc (a
    /// process's open file, as /dev/stdout does), however its text is written (review CJ-3: a
    /// relative link, or one through /dev/stdout, was replaced). Each link's folder is taken
    /// as the system resolves it.
    private static func linkLeadsIntoProc(_ dir: FileDescriptor, _ name: String) -> Bool {
        guard let folder = FileSystem.realPath("/proc/self/fd/\(dir.raw)") else { return false }
        var link = (folder == "/" ? "" : folder) + "/" + name
        for _ in 0..<40 {
            guard let text = FileSystem.linkTarget(link) else { return false }   // no link: the end
            let absolute = text.hasPrefix("/") ? text : FileSystem.parentDirectory(of: link) + "/" + text
            guard let parent = FileSystem.realPath(FileSystem.parentDirectory(of: absolute)) else { return false }
            if parent == "/proc" || parent.hasPrefix("/proc/") { return true }
            link = (parent == "/" ? "" : parent) + "/" + (absolute.lastPathComponent ?? "")
            if link == "/proc" { return true }
        }
        return false
    }

    /// Removes the folders this export made that hold nothing, deepest first: an export a full
    /// disk stopped leaves no empty folders of the items it never reached (review CH-5). A
    /// folder that holds anything stays (`rmdir` refuses it), as does anything else made.
    func removeEmptyFoldersMade() {
        for components in made.values.sorted(by: { $0.count > $1.count }) {
            guard let parent = try? folder(Array(components.dropLast()), create: false) else { continue }
            try? parent.removeDirectory(components.last!)
        }
    }

    /// Gives the folder at `components` the modification time `modified`, if this export made
    /// it (a folder that was there keeps its own, as the user left it).
    func setTimeOfFolderMade(_ components: [String], modified: Int64) {
        guard madePaths.contains(components), let folder = try? folder(components, create: false) else { return }
        folder.setTimes(nanoseconds: modified)
    }

    /// Notes a file or folder this export made at `components`.
    private func remember(_ components: [String], _ st: stat) {
        madePaths.insert(components)
        made[HostFileIdentity(st)] = components
        listings[Array(components.dropLast())]?.insert(Array(components.last!.utf8))
    }

    /// Makes the names of placed files durable: the folders holding them and those above,
    /// which the export may have made.
    func makeNamesDurable(_ files: [PendingFile]) throws {
        var seen = Set<HostFileIdentity>()
        var folders: [FileDescriptor] = []
        for folder in files.flatMap(\.folders) where seen.insert(HostFileIdentity(try folder.status())).inserted {
            folders.append(folder)
        }
        try Self.sync(folders)
    }

    /// `syncfs` once per file system where it reaches the disk; `fsync` of each file elsewhere.
    private static func sync(_ files: [FileDescriptor]) throws {
        var synced = Set<UInt64>()
        for file in files {
            if file.syncFileSystemReachesDisk {
                if synced.insert(UInt64(try file.status().st_dev)).inserted { try file.syncFileSystem() }
            } else {
                try file.sync()
            }
        }
    }

    /// Whether something is at `components` (in `dir`, its folder) that a file may replace:
    /// only a file of that very name (`checkSameName`).
    private func there(_ components: [String], in dir: FileDescriptor) throws -> Bool {
        guard let st = try dir.statusOfEntry(components.last!) else { return false }
        try checkSameName(components, found: st, in: dir)
        return true
    }

    private static let temporaryPrefix = ".narnia-partial-"

    private static func temporaryName() -> String {
        temporaryPrefix + Identifier.random().hex.prefix(12)
    }

    /// Looks for temporary files left in the folder of the file at `components`, which is not
    /// written (`--skip-existing` found it there): a re-run after a kill that finds every file
    /// of a folder in place named no leftover there (review ET-2).
    func lookForLeftFiles(besides components: [String]) throws {
        guard let dir = try folder(Array(components.dropLast()), create: false) else { return }
        lookForLeftFiles(in: dir, at: Array(components.dropLast()))
    }

    /// Adds the temporary files in `dir`, the folder at `components`, to `leftTemporaryFiles`
    /// (once per folder). They are named, not removed: one may be another export's, under way.
    private func lookForLeftFiles(in dir: FileDescriptor, at components: [String]) {
        guard lookedForLeftFiles.insert(components).inserted, let listed = try? dir.typedEntries() else { return }
        for (name, _) in listed.entries where HiddenHostName.matches(name, prefix: Self.temporaryPrefix, digits: 12...12) {
            if (try? dir.statusOfEntry(name))??.isRegularFile == true {
                leftTemporaryFiles.append(path(components + [name]))
            }
        }
    }
}

/// A file `HostFolder.write` wrote, not yet in place.
final class PendingFile {
    let file: FileDescriptor
    /// The top folder and those down to the file's own, last: open while the file waits.
    let folders: [FileDescriptor]
    let components: [String]
    /// Its hidden temporary name, where the file system has no unnamed files.
    let temporary: String?
    var placed = false

    init(file: FileDescriptor, folders: [FileDescriptor], components: [String], temporary: String?) {
        self.file = file
        self.folders = folders
        self.components = components
        self.temporary = temporary
    }

    /// One never placed leaves nothing: an unnamed file goes with its descriptor, a named one
    /// is removed.
    deinit {
        if !placed, let temporary { try? folders.last!.unlink(temporary, missingOK: true) }
    }
}

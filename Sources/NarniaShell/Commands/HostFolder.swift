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

    init(top: FileDescriptor, display: String) {
        self.top = top
        self.display = display
    }

    /// The host path of `components` below the top, for messages.
    func path(_ components: [String]) -> String {
        components.reduce(display) { $0.hasSuffix("/") ? $0 + $1 : $0 + "/" + $1 }
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
            let name = components[depth]
            let shown = path(Array(components[...depth]))
            if create { try current.makeDirectory(name, permissions: 0o700, existingOK: true) }
            guard let st = try current.statusOfEntry(name) else { return nil }
            if st.isSymbolicLink { throw CommandFailure("\(shown): is a symbolic link; export does not write through links") }
            guard st.isDirectory else { throw CommandFailure("\(shown): exists and is not a folder") }
            let next = try current.open(name, .readOnly, options: [.directory, .noFollow], displayPath: shown)
            chain.append((name, next))
            current = next
        }
        return current
    }

    /// True when a regular file of `size` bytes is at `components` (`--skip-existing`: a file
    /// exported before), not following links.
    func holdsFile(_ components: [String], size: UInt64) throws -> Bool {
        guard let dir = try folder(Array(components.dropLast()), create: false),
              let st = try dir.statusOfEntry(components.last!) else { return false }
        return st.isRegularFile && UInt64(st.st_size) == size
    }

    /// Checks that a file may be written at `components`: no link or non-folder on the way,
    /// nothing there, or (with `force`) a file or link to replace, never a folder.
    func checkWritable(_ components: [String], force: Bool) throws {
        guard let dir = try folder(Array(components.dropLast()), create: false) else { return }
        guard let st = try dir.statusOfEntry(components.last!) else { return }
        let shown = path(components)
        if st.isDirectory { throw CommandFailure("\(shown): a folder is in the way") }
        if !force { throw CommandFailure("\(shown): already exists", hint: "nothing was exported; --force replaces what is there, --skip-existing leaves it and exports the rest") }
    }

    /// Writes a file at `components` with what `fill` writes into the descriptor it is given.
    /// The file appears whole or not at all: it is written unnamed (`O_TMPFILE`) and linked in,
    /// so an export cut short (Ctrl-C, a crash, `kill -9`) leaves nothing. Where the file
    /// system has no unnamed files (vfat, some FUSE and network file systems) it is written
    /// under a hidden temporary name, removed on every exit path but `kill -9`. With `replace`,
    /// an existing file (or link) of that name is replaced, by a file synced first; otherwise
    /// its appearing meanwhile is an error.
    func writeFile(_ components: [String], replace: Bool, modified: Int64, fill: (FileDescriptor) throws -> Void) throws {
        let dir = try folder(Array(components.dropLast()), create: true)!
        let name = components.last!
        let shown = path(components)
        do {
            let file = try dir.open(".", .writeOnly, options: .unnamedTemporary, permissions: 0o600, displayPath: shown)
            try fill(file)
            file.setTimes(nanoseconds: modified)
            let exists = try dir.statusOfEntry(name) != nil
            if replace && exists {
                // Whole on disk before it takes the old file's place: a crash leaves one or the other.
                try file.sync()
                let temporary = Self.temporaryName()
                try file.link(as: temporary, in: dir, displayPath: shown)
                do { try dir.rename(temporary, to: name) } catch { try? dir.unlink(temporary, missingOK: true); throw error }
            } else {
                try file.link(as: name, in: dir, displayPath: shown)
            }
        } catch let e as SystemError where e.operation == "open" && [EOPNOTSUPP, EISDIR, EINVAL].contains(e.code) {
            let temporary = Self.temporaryName()
            let file = try dir.open(temporary, .writeOnly, options: [.create, .exclusive, .noFollow], permissions: 0o600, displayPath: shown)
            do {
                try fill(file)
                file.setTimes(nanoseconds: modified)
                let exists = try dir.statusOfEntry(name) != nil
                if !replace && exists { throw SystemError(code: EEXIST, operation: "link", path: shown) }
                if exists { try file.sync() }
                try dir.rename(temporary, to: name)
            } catch {
                try? dir.unlink(temporary, missingOK: true)
                throw error
            }
        }
    }

    private static func temporaryName() -> String {
        ".narnia-partial-" + Identifier.random().hex.prefix(12)
    }
}

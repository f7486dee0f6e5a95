import Glibc
import NarniaLanguage
import NarniaSystem

/// The host folders an `import --move` walked whose vault folders were committed, removed
/// once emptied. Each is reached from the path named on the command line one name at a time
/// (`openat`, never through a link) and removed only while it is still the folder walked: a
/// tree deeper than `PATH_MAX` is emptied whole, and a folder swapped for a link meanwhile
/// takes no other folder with it (review AR2: both, removed by path, failed without a word).
struct EmptiedFolders {
    private struct Folder {
        /// The path named on the command line, the walk's top.
        let top: String
        /// Its names below `top`; none for the top itself.
        let components: [String]
        /// The path shown in messages.
        let path: String
        let identity: HostFileIdentity
    }

    private var folders: [Folder] = []
    /// The folders open on the way to the last one removed (`chain[i]` is at its first i
    /// names below `chainTop`), kept for its siblings.
    private var chainTop: (path: String, folder: FileDescriptor)?
    private var chain: [(name: String, folder: FileDescriptor)] = []

    /// Notes the folder `identity` at `path`, that the walk from `top` entered.
    mutating func append(_ identity: HostFileIdentity, path: String, top: String) {
        let below = String(decoding: path.utf8.dropFirst(top.utf8.count), as: UTF8.self).pathComponents
        folders.append(Folder(top: top, components: below, path: path, identity: identity))
    }

    /// Removes the folders, deepest first. One not empty stays without a word (what is left
    /// in it was reported as it was left); one that could not be removed, or is no longer
    /// the folder walked, is named through `warn`.
    mutating func removeAll(warn: (String) -> Void) {
        for folder in folders.reversed() {
            do {
                try remove(folder)
            } catch let e as SystemError where [ENOTEMPTY, EEXIST, ENOENT].contains(e.code) {
                continue
            } catch let e as CommandFailure {
                warn(e.message)
            } catch let e as SystemError {
                warn("\(folder.path): emptied, but not removed: \(SystemError.reason(for: e.code))")
            } catch {
                warn("\(folder.path): emptied, but not removed: \(describe(error))")
            }
        }
        folders.removeAll()
        chain.removeAll()
        chainTop = nil
    }

    private mutating func remove(_ folder: Folder) throws {
        guard let name = folder.components.last else {
            // The top, as named: a link to a folder is not removed, nor the folder it leads to
            // (`link/` too, which lstat follows: review AU).
            var named = folder.top.unicodeScalars[...]
            while named.count > 1 && named.last == "/" { named = named.dropLast() }
            guard let st = try FileSystem.lstatIfExists(String(named)), st.isDirectory else { return }
            guard HostFileIdentity(st) == folder.identity else { throw replaced(folder) }
            try removeIfEmptied { try FileSystem.removeDirectory(folder.top) } holding: {
                try FileDescriptor.open(folder.top, .readOnly, options: [.directory, .noFollow])
            }
            return
        }
        let parent = try open(folder.components.dropLast(), below: folder.top)
        guard let st = try parent.statusOfEntry(name) else { return }
        guard st.isDirectory, HostFileIdentity(st) == folder.identity else { throw replaced(folder) }
        try removeIfEmptied { try parent.removeDirectory(name) } holding: {
            try parent.open(name, .readOnly, options: [.directory, .noFollow])
        }
    }

    /// Runs `remove`; a failure is thrown only when the folder `opened` gives is empty: a
    /// folder something was left in is kept without a word, whatever the reason `rmdir` gave
    /// first (an immutable folder says "not permitted" before "not empty").
    private func removeIfEmptied(_ remove: () throws -> Void, holding opened: () throws -> FileDescriptor) throws {
        do {
            try remove()
        } catch let e as SystemError where ![ENOTEMPTY, EEXIST, ENOENT].contains(e.code) {
            let listing = try? opened().typedEntries()
            if let listing, !listing.entries.isEmpty || !listing.undecodable.isEmpty { return }
            throw e
        }
    }

    private func replaced(_ folder: Folder) -> CommandFailure {
        CommandFailure("\(folder.path): emptied, but not removed: something else stands there now, not the folder imported")
    }

    /// The folder at `components` below `top`, opened name by name without following links.
    private mutating func open(_ components: ArraySlice<String>, below top: String) throws -> FileDescriptor {
        // Names compared byte for byte: Swift's == takes NFC and NFD twins for one name, and
        // the other twin's folder, removed already, for this one (review AU).
        if chainTop.map({ !$0.path.utf8.elementsEqual(top.utf8) }) ?? true {
            // The walk followed a link named on the command line to its folder; so does this.
            chainTop = (top, try FileDescriptor.open(top, .readOnly, options: .directory))
            chain.removeAll()
        }
        var kept = 0
        while kept < min(chain.count, components.count)
                && chain[kept].name.utf8.elementsEqual(components[components.startIndex + kept].utf8) { kept += 1 }
        chain.removeLast(chain.count - kept)
        var current = chain.last?.folder ?? chainTop!.folder
        for name in components.dropFirst(kept) {
            current = try current.open(name, .readOnly, options: [.directory, .noFollow])
            chain.append((name, current))
        }
        return current
    }
}

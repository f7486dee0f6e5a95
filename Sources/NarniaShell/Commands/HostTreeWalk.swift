import Glibc
import NarniaLanguage
import NarniaStore
import NarniaSystem

/// A host file or folder's identity: its device and inode.
struct HostFileIdentity: Hashable {
    let device: UInt64
    let inode: UInt64

    init(_ st: stat) {
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
    }

    /// The identity of what `path` names (links followed), or nil when it cannot be read.
    init?(of path: String) {
        guard let st = try? FileSystem.statIfExists(path) else { return nil }
        self.init(st)
    }

    /// The identities of the store folder `directory` and of the folders directly in it (its
    /// shards): a view of one of those (a bind mount) is the store too (review CB-2: `import
    /// --move` of a shard's bind mount took the vault's objects away).
    static func storeFolders(of directory: String) -> Set<HostFileIdentity> {
        guard let top = HostFileIdentity(of: directory) else { return [] }
        let inside = ((try? FileSystem.listDirectory(directory)) ?? []).compactMap { name -> HostFileIdentity? in
            guard let st = try? FileSystem.lstatIfExists(directory + "/" + name), st.isDirectory else { return nil }
            return HostFileIdentity(st)
        }
        return Set(inside).union([top])
    }

    /// Whether `path` is the store folder `store` or lies inside it: each folder of its real
    /// path is compared with the store by identity, so no spelling, link or bind mount hides
    /// it; a folder holding the file `marker` (the store's key file) counts as the store too,
    /// for a copy of it.
    static func isInStore(_ path: String, store: Set<HostFileIdentity>, marker: String?) -> Bool {
        folderOnRealPath(of: path, includingItself: true) { folder in
            if let identity = HostFileIdentity(of: folder), store.contains(identity) { return true }
            guard let marker else { return false }
            return (try? FileSystem.lstatIfExists(folder + "/" + marker)) ?? nil != nil
        } != nil
    }

    /// The first folder of `path`'s real path, from the end up to `/` (`path` itself first when
    /// `includingItself`), for which `matches` holds; nil when none does or the path does not
    /// resolve.
    static func folderOnRealPath(of path: String, includingItself: Bool, where matches: (String) -> Bool) -> String? {
        guard var current = FileSystem.realPath(path) else { return nil }
        if !includingItself {
            guard current != "/" else { return nil }
            current = FileSystem.parentDirectory(of: current)
        }
        while true {
            if matches(current) { return current }
            if current == "/" || current.isEmpty { return nil }
            current = FileSystem.parentDirectory(of: current)
        }
    }
}

/// What walks a host folder for `import` and `drop` does with what it finds: a folder gives a
/// place for what is inside it, a regular file is taken in, and problems are reported.
protocol HostTreeVisitor {
    /// Where the entries of a folder go: a vault folder for `import`, a relative path for `drop`.
    associatedtype Place
    /// The command's verb, for messages (`import`, `drop`).
    var verb: String { get }
    /// The vault's own store folder and its shards (`HostFileIdentity.storeFolders`). The walk
    /// never enters them: taking in the store's own files (and, with `--move`, removing them as
    /// originals) would destroy the vault.
    var storeFolders: Set<HostFileIdentity> { get }
    /// The name of the vault's key file, when known: a folder holding a file of that name is
    /// the store seen another way (an overlay or network mount gives it another device number)
    /// or a copy of it, and is not entered either.
    var storeMarker: String? { get }
    /// Called for each folder, the top one first, once it is open: the place for its entries.
    mutating func enterFolder(_ fd: FileDescriptor, path: String, name: String, in parent: Place) throws -> Place
    /// Called for each regular file, opened without following links; `folder` and `entry` say
    /// where it lies.
    mutating func visitFile(_ fd: FileDescriptor, path: String, name: String, folder: FileDescriptor, entry: String, in place: Place)
    /// An entry that cannot be taken in: reported, and the command fails.
    mutating func fail(_ message: String)
    /// Where `fail` and `warn` write (names that are not UTF-8 are spelled for it).
    var err: Output { get }
    /// An entry skipped on purpose (a link, a special file): reported only.
    func warn(_ message: String)
    /// True when the walk must stop (interrupted, out of space).
    mutating func mustStop() -> Bool
}

extension HostTreeVisitor {
    /// Walks the open folder `top` and everything under it, depth first without recursion.
    /// Each folder is opened only when its turn comes, relative to its parent (kept open
    /// meanwhile), and each entry without following links (`openat` with `O_NOFOLLOW`):
    /// symbolic links and special files inside are skipped with a warning, never followed,
    /// even if one replaces a file meanwhile. Entries go in name order; names that are not
    /// UTF-8 or not legal item names are reported.
    mutating func walkFolder(_ top: FileDescriptor, display: String, name: String, in parent: Place) {
        var pending: [(folder: FileDescriptor, entry: String?, display: String, name: String, parent: Place)] =
            [(top, nil, display, name, parent)]
        while let (above, entry, path, name, parent) = pending.popLast() {
            if mustStop() { return }
            let fd: FileDescriptor
            let place: Place
            let entries: [(name: String, type: UInt8)]
            do {
                fd = try entry.map { try above.open($0, .readOnly, options: [.directory, .noFollow], displayPath: path) } ?? above
                if storeFolders.contains(HostFileIdentity(try fd.status())) {
                    warn("\(path): the vault's own store skipped")
                    continue
                }
                do {
                    if let marker = storeMarker, try fd.statusOfEntry(marker) != nil {
                        warn("\(path): the vault's own store (another view of it, or a copy) skipped")
                        continue
                    }
                } catch let e as SystemError {
                    // A folder that can be listed but not searched: the folder is what failed,
                    // not the key file's name asked after in it.
                    throw SystemError(code: e.code, operation: e.operation, path: path)
                }
                place = try enterFolder(fd, path: path, name: name, in: parent)
                let listing = try fd.typedEntries()
                entries = Self.ordered(listing.entries)
                for bad in listing.undecodable {
                    fail("\(path.appendingPathComponent(err.undecodableName(bad))): the name is not valid UTF-8; rename it to \(verb) it")
                }
            } catch let e as SystemError where e.code == ELOOP {
                warn("\(path): symbolic link skipped")
                continue
            } catch {
                fail(describe(error))
                continue
            }
            var subfolders: [(FileDescriptor, String?, String, String, Place)] = []
            for (entry, type) in entries {
                if mustStop() { return }
                let child = path.appendingPathComponent(entry)
                do {
                    // What the listing says a file or folder is, opening confirms (`O_NOFOLLOW`, then
                    // `fstat` or `O_DIRECTORY`); anything else is looked at first, so that nothing
                    // special is ever opened. The `fstatat` saved is most of a small file's cost here.
                    let kind: mode_t
                    switch type {
                    case UInt8(DT_REG): kind = S_IFREG
                    case UInt8(DT_DIR): kind = S_IFDIR
                    default:
                        guard let st = try fd.statusOfEntry(entry) else { continue }
                        kind = st.st_mode & S_IFMT
                    }
                    if kind == S_IFLNK {
                        warn("\(child): symbolic link skipped")
                    } else if kind == S_IFDIR {
                        subfolders.append((fd, entry, child, try ItemName.validated(entry), place))
                    } else if kind == S_IFREG && Original.isAsideName(entry) {
                        // Said of what such a name most likely is, never as a fact: the vault
                        // it went into may be another, or no longer hold it, and the name may
                        // have been made by hand (review DF-3: "delete it" could lose the only copy).
                        warn("\(child): skipped: an import --move gives an original such a name just before removing it, so this is most likely one left by an import that was killed; the vault it went into should hold it, under a name this one does not tell: check that before you delete it, or rename the file to take it in")
                    } else if kind == S_IFREG {
                        let file = try fd.open(entry, .readOnly, options: [.noFollow, .nonBlocking, .noControllingTerminal], displayPath: child)
                        visitFile(file, path: child, name: try ItemName.validated(entry), folder: fd, entry: entry, in: place)
                    } else {
                        warn("\(child): special file skipped")
                    }
                } catch let e as NameError {
                    fail("\(child): \(e.description)")
                } catch let e as SystemError where e.code == ELOOP {
                    warn("\(child): symbolic link skipped")
                } catch {
                    fail(describe(error))
                }
            }
            pending += subfolders.reversed()
        }
    }

    /// Whether `path` (a path named on the command line) is the vault's store folder or lies
    /// inside it (`HostFileIdentity.isInStore`). `import` and `drop` refuse such a path.
    func liesInStore(_ path: String) -> Bool {
        HostFileIdentity.isInStore(path, store: storeFolders, marker: storeMarker)
    }

    /// Readies an opened host file for reading to its end and returns its status. It must be
    /// a regular file: what was opened is checked (`fstat`), not the path, so a path swapped
    /// for a FIFO or a device meanwhile is refused ("`shown`: not a regular file").
    func readyToRead(_ fd: FileDescriptor, shown: String) throws -> stat {
        let st = try fd.status()
        guard st.isRegularFile else { throw CommandFailure("\(shown): not a regular file") }
        try fd.setBlockingReader()
        // Read-ahead already covers a small file whole; the hint pays only for larger ones.
        if st.st_size > 256 << 10 { fd.adviseSequential() }
        return st
    }

    /// A source of `fd`'s bytes to its end (a short read meets it: asking again would cost
    /// another read(2)) that fails there when the file changed while it was read — grew,
    /// shrank or was rewritten since `read`, its status when readied: its copy would mix two
    /// versions, one that never existed (review CB-1). `notDone` says what was not done.
    func readingToEnd(_ fd: FileDescriptor, unchangedSince read: stat, shown: String, notDone: String) -> (UnsafeMutableRawPointer, Int) throws -> Int {
        var atEnd = false
        return { buffer, count in
            if atEnd { return 0 }
            let n = try fd.readFully(into: buffer, count: count)
            if n < count {
                atEnd = true
                let now = try fd.status()
                guard Original.same(read, now) else {
                    // Only its change time tells: a new mode or link, or a rewrite that put its
                    // times back (`rsync --inplace -t`), which no status tells apart (CD-3).
                    let rewritten = now.st_size != read.st_size || now.st_mtim.tv_sec != read.st_mtim.tv_sec || now.st_mtim.tv_nsec != read.st_mtim.tv_nsec
                    throw CommandFailure(rewritten
                        ? "\(shown): changed while it was read; \(notDone) (its copy would mix two versions): try again once it is written"
                        : "\(shown): its status changed while it was read (a new mode or link, or a rewrite that kept its times); \(notDone), as its copy might mix two versions: try again")
                }
            }
            return n
        }
    }

    /// A folder's entries in the order they are taken: by name in UTF-8 byte order, their
    /// vault names (NFC) first, so that of two spellings of one name (NFC and NFD twins) the
    /// one already spelled as the vault spells it keeps it, and the other is numbered (review
    /// AR2: the NFD twin, first in byte order, took it, and the exported `café` held the other
    /// file's bytes).
    static func ordered(_ entries: [(name: String, type: UInt8)]) -> [(name: String, type: UInt8)] {
        entries.map { (entry: $0, order: HostNameOrder($0.name)) }.sorted { $0.order < $1.order }.map(\.entry)
    }
}

/// A host name in the order an import takes names (`HostTreeWalk.ordered`): by its vault
/// name (NFC) in UTF-8 byte order, and of two spellings of one vault name, the one spelled as
/// the vault spells it first. Equal only byte for byte.
struct HostNameOrder: Comparable {
    let name: String
    let vaultName: String

    init(_ name: String) {
        self.name = name
        vaultName = name.utf8.allSatisfy { $0 < 0x80 } ? name : ItemName.nfc(name)
    }

    static func < (a: HostNameOrder, b: HostNameOrder) -> Bool {
        guard a.vaultName.utf8.elementsEqual(b.vaultName.utf8) else { return utf8Order(a.vaultName, b.vaultName) }
        let aIsNFC = a.name.utf8.elementsEqual(a.vaultName.utf8), bIsNFC = b.name.utf8.elementsEqual(b.vaultName.utf8)
        return aIsNFC != bIsNFC ? aIsNFC : utf8Order(a.name, b.name)
    }

    static func == (a: HostNameOrder, b: HostNameOrder) -> Bool { a.name.utf8.elementsEqual(b.name.utf8) }
}

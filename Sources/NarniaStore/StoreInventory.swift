import Dispatch
import Glibc
import NarniaSystem
import Synchronization

/// The files of a store directory, by what their names say (docs/FORMAT.md, "Files"), read
/// without opening any of them. Copies that sync engines made of a file are kept with it.
/// Names that are none of these (a sync engine's temporary files and marker folders, say)
/// are left alone.
struct StoreInventory {
    /// A store file and the copies a sync engine made of it, as paths relative to the store.
    struct Entry {
        var main: String?
        var copies: [String] = []
        /// A format-1 object (`<2 hex>/<30 hex>`).
        var legacy = false

        var all: [String] { (main.map { [$0] } ?? []) + copies }

        /// Forgets `path`, gone from the store; true when nothing of the entry is left.
        mutating func forget(_ path: String) -> Bool {
            if path == main { main = nil }
            copies.removeAll { $0 == path }
            return all.isEmpty
        }
    }

    /// Key files at the top level, by identifier.
    var keyFiles: [Identifier: Entry] = [:]
    /// Inbox public key files at the top level (their length tells them from key files).
    var inboxKeys: [Identifier: Entry] = [:]
    /// Files in the shard folders: journals, content objects and packs, by identifier.
    var files: [Identifier: Entry] = [:]
    /// The shard folders present.
    var shards = Set<String>()
    /// Top-level folders named like an identifier (a sync's receiving folder, for instance).
    var folders: [Identifier] = []
    /// Top-level names shaped like a shard folder's, as `scanTopLevel` found them: what
    /// `scanShards` looks into, so the top level is listed once.
    var shardNames: [String] = []
    /// Files named like a store file followed by something that is no copy name a known sync
    /// engine gives (`<id>.bak`, say): never read, never deleted, and `verify` names them, since
    /// they may hold what a copy would.
    var unrecognised: [(path: String, id: Identifier)] = []
    /// Files named as a store file or a copy of one outside the folder their name belongs in:
    /// in another shard folder (`atTop` false), or at the top without a key file's length
    /// (`atTop`, also among `keyFiles`, which pass it over). Never read, never deleted: the
    /// vault names those it may need (review DI-1: a journal moved there, holding records the
    /// one in place lacked, was passed over without a word, and `verify` said all intact).
    var misplaced: [(path: String, id: Identifier, atTop: Bool)] = []
    /// Names shaped like a store file's (they begin with its hex digits) that are not valid
    /// UTF-8 (a copy a sync engine named after a host in Latin-1, say), as the bytes of their
    /// paths in the store: a `String` cannot hold them, so they are never read nor deleted, and
    /// `verify` names them.
    var undecodable: [[UInt8]] = []
    /// Names of shard folders that are something else (a symbolic link, a special file):
    /// nothing in them is read, and nothing is written through them (`StoreLayout.ensureShard`).
    var notShards: [String] = []
    /// Names of key files at the top that are not regular files (a symbolic link, a FIFO):
    /// not read.
    var notKeyFiles: [String] = []
    /// Files this program writes under a temporary name and renames or removes when done
    /// (`WholeFile`'s fallback, the file-mode probe, the store probe of `sync`), and store
    /// files' transfers in flight (`sync`'s `.narnia-sending-…`, rclone's `.partial`, Resilio's
    /// `.!sync`), as paths relative to the store: any listed was left by a process killed
    /// meanwhile, or is being written now.
    var temporaryFiles: [String] = []

    /// The prefixes of the temporary names in `temporaryFiles`.
    static let temporaryPrefixes = [WholeFile.temporaryPrefix, Vault.modeProbePrefix, Vault.storeProbePrefix]

    private static func isTemporary(_ name: String) -> Bool {
        temporaryPrefixes.contains { name.hasPrefix($0) }
    }

    /// What `notShards` and `notKeyFiles` mean, said at open and by `verify`: a line for each
    /// kind, however many.
    var misshapenProblems: [String] {
        var problems: [String] = []
        if !notShards.isEmpty {
            let (one, listed) = Self.list(notShards)
            problems.append(one
                ? "the store's shard folder \(listed) is not a folder (a symbolic link?): nothing in it is read, and nothing is written through it: put a folder of that name there"
                : "the store's shard folders \(listed) are not folders (symbolic links?): nothing in them is read, and nothing is written through them: put folders of those names there")
        }
        if !notKeyFiles.isEmpty {
            let (one, listed) = Self.list(notKeyFiles)
            problems.append(one
                ? "\(listed) at the store's top, named as a key file, is not a regular file (a symbolic link?): it is not read; remove it, or put the file itself there"
                : "\(listed) at the store's top, named as key files, are not regular files (symbolic links?): they are not read; remove them, or put the files themselves there")
        }
        return problems
    }

    /// Whether `names` is one name, and the first few of them sorted.
    private static func list(_ names: [String]) -> (one: Bool, listed: String) {
        let sorted = names.sorted()
        return (sorted.count == 1, sorted.prefix(4).joined(separator: ", ") + (sorted.count > 4 ? ", … (\(sorted.count) in all)" : ""))
    }

    /// Lists the store at `root`; with `readingShards` false, only its top level (key files,
    /// inbox public key files, folders), which is all a dropper needs.
    static func scan(_ root: String, readingShards: Bool = true) throws -> StoreInventory {
        var inventory = try scanTopLevel(root)
        if readingShards { try inventory.scanShards(root, names: inventory.shardNames) }
        return inventory
    }

    /// Lists the top level of the store at `root`: key files, inbox public key files, folders.
    static func scanTopLevel(_ root: String) throws -> StoreInventory {
        var inventory = StoreInventory()
        let listing = try FileSystem.listDirectoryCountingUndecodable(root)
        inventory.undecodable += listing.undecodable.filter { StoreName.beginsLikeStoreFile(FileSystem.spelled(undecodable: $0), digits: 32) }
        for name in listing.names {
            if StoreName.isShardName(name) {
                inventory.shardNames.append(name)
            } else if isTemporary(name) {
                inventory.temporaryFiles.append(name)
            } else if let (id, isCopy) = StoreName.identifier(in: name, digits: 32) {
                guard let st = try FileSystem.lstatIfExists(root + "/" + name) else { continue }
                // A copy is a regular file: anything else under a copy's name is no copy, and is
                // left alone (a main name that is not a regular file is refused when read).
                if isCopy && !st.isRegularFile { continue }
                if st.isDirectory && !isCopy {
                    inventory.folders.append(id)
                } else if !st.isRegularFile {
                    // A link or a special file is not read (a sync engine carries links; one
                    // refused at every unlock made the vault unopenable): it is said.
                    inventory.notKeyFiles.append(name)
                } else if st.st_size == InboxPublicKeyFile.length {
                    inventory.inboxKeys[id, default: Entry()].add(name, isCopy: isCopy)
                } else {
                    inventory.keyFiles[id, default: Entry()].add(name, isCopy: isCopy)
                    if KeyFile.masterCount(ofLength: Int(st.st_size)) == nil { inventory.misplaced.append((name, id, true)) }
                }
            } else if let id = StoreName.unrecognisedCopy(in: name, digits: 32) {
                inventory.unrecognised.append((name, id))
            } else if StoreName.isTransferInFlight(name, digits: 32) {
                inventory.temporaryFiles.append(name)
            }
        }
        return inventory
    }

    /// Adds the shard folders among `names` (top-level names of the store at `root`) and the
    /// files in them.
    mutating func scanShards(_ root: String, names: [String]) throws {
        for name in names {
            guard let st = try FileSystem.lstatIfExists(root + "/" + name) else { continue }
            guard st.isDirectory else {
                notShards.append(name)
                continue
            }
            shards.insert(name)
            let listing = try FileSystem.listDirectoryCountingUndecodable(root + "/" + name)
            for entry in listing.names {
                addShardEntry(entry, shard: name, root: root)
            }
            undecodable += listing.undecodable.filter { bytes in
                let spelled = FileSystem.spelled(undecodable: bytes)
                return StoreName.beginsLikeStoreFile(spelled, digits: 32) || StoreName.beginsLikeStoreFile(spelled, digits: 30)
            }.map { Array((name + "/").utf8) + $0 }
        }
    }

    private mutating func addShardEntry(_ name: String, shard: String, root: String) {
        let path = shard + "/" + name
        if Self.isTemporary(name) {
            temporaryFiles.append(path)
            return
        }
        // A name's hex digits are the identifier's own (lower case), so its shard is their start.
        if let (id, isCopy) = StoreName.identifier(in: name, digits: 32), name.utf8.starts(with: shard.utf8) {
            if isCopy && !isRegularFile(root + "/" + path) { return }
            files[id, default: Entry()].add(path, isCopy: isCopy)
        } else if let (id, isCopy) = StoreName.identifier(in: name, digits: 30, prefix: shard) {
            if isCopy && !isRegularFile(root + "/" + path) { return }
            var entry = files[id] ?? Entry()
            entry.legacy = true
            entry.add(path, isCopy: isCopy)
            files[id] = entry
        } else if let (id, _) = StoreName.identifier(in: name, digits: 32) {
            misplaced.append((path, id, false))
        } else if let id = StoreName.unrecognisedCopy(in: name, digits: 32)
                    ?? StoreName.unrecognisedCopy(in: name, digits: 30, prefix: shard) {
            unrecognised.append((path, id))
        } else if StoreName.isTransferInFlight(name, digits: 32) || StoreName.isTransferInFlight(name, digits: 30, prefix: shard) {
            // Looked for last, after the names of store files (a store holds 100,000 of them).
            temporaryFiles.append(path)
        }
    }
}

/// True for a regular file (not a link, folder or special file): what a sync engine's copy is.
private func isRegularFile(_ path: String) -> Bool {
    ((try? FileSystem.lstatIfExists(path)) ?? nil)?.isRegularFile ?? false
}

extension StoreInventory.Entry {
    mutating func add(_ path: String, isCopy: Bool) {
        if isCopy { copies.append(path) } else { main = path }
    }
}

/// The shard folders of a store, listed on another thread: opening starts it before the key
/// derivation, which keeps one core busy (about half a second at the default limits), and the
/// listing (a tenth of a second for 100,000 files, far more when the folders are not in the
/// page cache yet) needs no key.
final class ShardListing: Sendable {
    private let root: String
    private let names: [String]
    private let result = Mutex<Result<StoreInventory, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    /// Starts listing the shard folders `names` of the store at `root` (its top level's
    /// `shardNames`), on a thread of its own (not a queue's: a caller that waits on a busy pool
    /// must not wait for the pool). When no thread can be had, the listing is made at once, on
    /// the calling thread.
    init(root: String, names: [String]) {
        self.root = root
        self.names = names
        if !startThread() { list() }
    }

    /// Starts the listing thread with every signal blocked, so that signals keep reaching the
    /// threads that handle them. False when `pthread_create` fails.
    private func startThread() -> Bool {
        var all = sigset_t(), previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
        var thread = pthread_t()
        let box = Unmanaged.passRetained(self).toOpaque()
        guard pthread_create(&thread, nil, { arg in
            Unmanaged<ShardListing>.fromOpaque(arg!).takeRetainedValue().list()
            return nil
        }, box) == 0 else {
            Unmanaged<ShardListing>.fromOpaque(box).release()
            return false
        }
        pthread_detach(thread)
        return true
    }

    private func list() {
        var listed = StoreInventory()
        let outcome = Result { try listed.scanShards(root, names: names); return listed }
        result.withLock { $0 = outcome }
        done.signal()
    }

    /// Waits for the listing and adds it to `inventory`.
    /// - Throws: what listing a folder threw.
    func wait(addingTo inventory: inout StoreInventory) throws {
        waitUntilDone()
        let listed = try result.withLock { $0! }.get()
        inventory.files = listed.files
        inventory.shards = listed.shards
        inventory.unrecognised += listed.unrecognised
        inventory.misplaced += listed.misplaced
        inventory.undecodable += listed.undecodable
        inventory.notShards += listed.notShards
        inventory.temporaryFiles += listed.temporaryFiles
    }

    /// Waits for the listing to end; later calls return at once.
    func waitUntilDone() {
        done.wait()
        done.signal()
    }
}

import Glibc
import NarniaSystem

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

    /// Lists the store at `root`; with `readingShards` false, only its top level (key files,
    /// inbox public key files, folders), which is all a dropper needs.
    static func scan(_ root: String, readingShards: Bool = true) throws -> StoreInventory {
        var inventory = StoreInventory()
        for name in try FileSystem.listDirectory(root) {
            if StoreName.isShardName(name) {
                guard readingShards else { continue }
                guard let st = try FileSystem.lstatIfExists(root + "/" + name), st.isDirectory else { continue }
                inventory.shards.insert(name)
                for entry in try FileSystem.listDirectory(root + "/" + name) {
                    inventory.addShardEntry(entry, shard: name)
                }
            } else if let (id, isCopy) = StoreName.identifier(in: name, digits: 32) {
                guard let st = try FileSystem.lstatIfExists(root + "/" + name) else { continue }
                if st.isDirectory && !isCopy {
                    inventory.folders.append(id)
                } else if st.isRegularFile && st.st_size == InboxPublicKeyFile.length {
                    inventory.inboxKeys[id, default: Entry()].add(name, isCopy: isCopy)
                } else {
                    // Links and special files are kept here too, so that reading refuses them.
                    inventory.keyFiles[id, default: Entry()].add(name, isCopy: isCopy)
                }
            }
        }
        return inventory
    }

    private mutating func addShardEntry(_ name: String, shard: String) {
        let path = shard + "/" + name
        // A name's hex digits are the identifier's own (lower case), so its shard is their start.
        if let (id, isCopy) = StoreName.identifier(in: name, digits: 32), name.utf8.starts(with: shard.utf8) {
            files[id, default: Entry()].add(path, isCopy: isCopy)
        } else if let (id, isCopy) = StoreName.identifier(in: name, digits: 30, prefix: shard) {
            var entry = files[id] ?? Entry()
            entry.legacy = true
            entry.add(path, isCopy: isCopy)
            files[id] = entry
        }
    }
}

extension StoreInventory.Entry {
    mutating func add(_ path: String, isCopy: Bool) {
        if isCopy { copies.append(path) } else { main = path }
    }
}

import NarniaSystem
import Glibc

/// Where things live inside a store directory (docs/FORMAT.md, "Files").
///
/// ```
/// DIR/<32 hex>            the key file: the only regular file at the top
/// DIR/<32 hex>.new        a key file being replaced (removed on open)
/// DIR/<2 hex>/<30 hex>    objects: item contents and the metadata journal
/// ```
/// Every name is random; the first two hex digits of an object's identifier pick its
/// sub-directory so that no directory grows past a few thousand entries per million items.
struct StoreLayout {
    let root: String

    func shardDirectory(for id: Identifier) -> String {
        let hex = id.hex
        return root + "/" + String(hex.prefix(2))
    }

    func objectPath(for id: Identifier) -> String {
        let hex = id.hex
        return root + "/" + String(hex.prefix(2)) + "/" + String(hex.dropFirst(2))
    }

    func keyFilePath(named id: Identifier) -> String {
        root + "/" + id.hex
    }

    /// Creates the shard directory of `id` if needed, making its entry durable.
    func ensureShard(for id: Identifier, known: inout Set<String>) throws {
        let dir = shardDirectory(for: id)
        if known.contains(dir) { return }
        if !FileSystem.isDirectory(dir) {
            try FileSystem.makeDirectory(dir, existingOK: true)
            try FileSystem.syncDirectory(root)
        }
        known.insert(dir)
    }

    /// Every object file, as identifiers.
    func scanObjects() throws -> [Identifier] {
        var objects: [Identifier] = []
        for shard in try FileSystem.listDirectory(root) where shard.utf8.count == 2 && isHex(shard) {
            let dir = root + "/" + shard
            guard FileSystem.isDirectory(dir) else { continue }
            for name in try FileSystem.listDirectory(dir) {
                if name.utf8.count == 30, let id = Identifier(hex: Substring(shard + name)) {
                    objects.append(id)
                }
            }
        }
        return objects
    }

    private func isHex(_ s: String) -> Bool {
        s.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }
}

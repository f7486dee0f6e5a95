/// Rewriting packs that removals have left mostly empty (docs/FORMAT.md, "Packs").
extension Vault {
    /// A pack is rewritten once at least this many of its bytes are dead…
    static let repackDeadBytes: Int64 = 1 << 20

    /// …and they are more than half of it.
    func isWorthRepacking(_ object: Identifier) -> Bool {
        guard let use = state.objectUses[object] else { return false }
        return use.deadBytes >= Self.repackDeadBytes && use.deadBytes * 2 > use.length
    }

    /// Called after a commit that removed or replaced contents in `objects`: rewrites those
    /// that have become mostly dead space. Housekeeping, like compaction: the change is
    /// committed, and a repack that fails (a full disk) leaves the pack as it was, so it must
    /// not fail the command.
    func repackSparse(_ objects: [Identifier]) {
        let sparse = Set(objects).filter { isWorthRepacking($0) }
        if !sparse.isEmpty { try? repack(sparse) }
    }

    /// Re-encrypts the items still in `packs`, each under a fresh key, into new packs in one
    /// batch (durable, then one journal record that gives each item its new content, under the
    /// stamp of the content it replaces, and retires the old packs): housekeeping that never
    /// wins over a change made elsewhere meanwhile. The items keep their identity, names, places, times and types;
    /// their cached thumbnails go (they are made again when next shown). On failure nothing
    /// changes but leftovers that the next open removes.
    func repack(_ packs: Set<Identifier>) throws {
        let live = view.items.values.filter { $0.content.map { packs.contains($0.objectID) } ?? false }
        let batch = ImportBatch.begin(in: self)
        batch.objectsAfter = packs.max { $0.hex < $1.hex }
        do {
            for item in live {
                guard let stamp = state.items[item.id]?.contentStamp else { continue }
                let plaintext = PlaintextSource(try reader(for: item.content!), keys: keys)
                try batch.rewriteContent(of: item, stamp: stamp) { try plaintext.read(into: $0, max: $1) }
            }
            try batch.commit()
        } catch {
            batch.abandon()
            throw error
        }
    }
}

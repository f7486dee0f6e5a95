/// What a session needs to see other devices' changes arrive while it is open (review CF-4: a
/// session showed the vault as it was when opened, for its whole life, and a removed item's
/// content "not yet on this device").
extension Vault {
    /// The store's folder and its shard folders, as they are now: what a session watches.
    public var foldersToWatch: [String] {
        let shards = (try? StoreInventory.scanTopLevel(layout.root).shardNames) ?? []
        return [layout.root] + shards.sorted().map { layout.root + "/" + $0 }
    }

    /// True when one of `names`, changed in the shard folders, may change what the vault
    /// holds: a journal of another device, or a copy of any journal (a sync engine's). Each
    /// name once, and the key opened once (a session's own import changes many objects).
    public func changesMatter(_ names: Set<String>) -> Bool {
        var unknown: [Identifier] = []
        for name in names {
            guard let (id, isCopy) = StoreName.identifier(in: name, digits: 32) else { continue }
            if isCopy { return true }
            if let file = journals[id] {
                if file.device != device { return true }
            } else if inventory.files[id] == nil {
                unknown.append(id)
            }
        }
        return !unknown.isEmpty && tags.withKeyOpen { unknown.contains { tags.isJournal($0) } }
    }

    /// True when `names` hold that of the journal this session appends to (a change to it is
    /// another program's: the session's own appends are no change a watch reports).
    public func isOpenJournal(amongNames names: Set<String>) -> Bool {
        journal.map { names.contains($0.id.hex) } ?? false
    }

    /// True for the name of a shard folder at the store's top, in `folder`.
    public func isShardFolder(_ name: String, in folder: String) -> Bool {
        folder == layout.root && StoreName.isShardName(name)
    }
}

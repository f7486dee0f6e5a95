/// What a session needs to see other devices' changes arrive while it is open (review CF-4: a
/// session showed the vault as it was when opened, for its whole life, and a removed item's
/// content "not yet on this device").
extension Vault {
    /// The store's folder and its shard folders, as they are now: what a session watches.
    public var foldersToWatch: [String] {
        let shards = (try? StoreInventory.scanTopLevel(layout.root).shardNames) ?? []
        return [layout.root] + shards.sorted().map { layout.root + "/" + $0 }
    }

    /// True when `name`, changed in `folder` (a watched one), may change what the vault holds:
    /// a journal of another device, or a copy of any journal (a sync engine's), in a shard
    /// folder; a shard folder made at the top, which must be watched too.
    public func changeMatters(name: String, in folder: String, isNewFolder: Bool) -> Bool {
        if folder == layout.root { return isNewFolder && StoreName.isShardName(name) }
        guard let (id, isCopy) = StoreName.identifier(in: name, digits: 32) else { return false }
        if isCopy { return true }
        if let file = journals[id] { return file.device != device }
        return tags.withKeyOpen { tags.isJournal(id) }
    }
}

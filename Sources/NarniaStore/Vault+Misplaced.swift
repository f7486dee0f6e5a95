extension Vault {
    /// What the store's misplaced files (`StoreInventory.misplaced`) mean: a problem for each
    /// that is named as a journal of this vault or an object it holds or wrote, since it may
    /// hold what the store lacks (said at open and by `verify`, which fails), and a note
    /// naming the others in shard folders. At the top, a file of no key file's length that is
    /// neither is a key file cut short, which the key's own errors say.
    func misplacedFileReports() -> (problems: [String], note: String?) {
        guard !inventory.misplaced.isEmpty else { return ([], nil) }
        var problems: [String] = [], others: [String] = []
        tags.withKeyOpen {
            for file in inventory.misplaced.sorted(by: { $0.path < $1.path }) {
                let what: String
                if tags.isJournal(file.id) {
                    what = "a journal of this vault"
                } else if state.referencedObjects.contains(file.id) || tags.isOwnObject(file.id) {
                    what = "an object of this vault"
                } else {
                    if !file.atTop { others.append(file.path) }
                    continue
                }
                let shard = layout.shardName(for: file.id)
                let place = file.atTop ? "at the store's top" : "in \(file.path.prefix(2))/"
                problems.append("\(file.path), named as \(what), is \(place), not in the folder \(shard)/ its name belongs in: it is not read, and may hold what the store lacks; move it into \(shard)/, adding .sync-conflict to its name if a file of that name is there")
            }
        }
        guard !others.isEmpty else { return (problems, nil) }
        return (problems, "\(someFiles(others)) named like store files outside the folders their names belong in, and not read: \(firstFew(others))")
    }
}

import NarniaSystem
import Glibc

extension Vault {
    /// The number of items (files and folders) in the vault.
    public var itemCount: Int { items.count }

    /// The item with `id`, if it exists.
    public func item(_ id: Identifier) -> Item? { items[id] }

    /// The items directly inside `folder`, in no particular order.
    public func children(of folder: Identifier) -> [Item] {
        (childrenByFolder[folder] ?? [:]).values.compactMap { items[$0] }
    }

    /// The names directly inside `folder`, in no particular order (cheap: no item copies).
    public func childNames(of folder: Identifier) -> Dictionary<String, Identifier>.Keys? {
        childrenByFolder[folder]?.keys
    }

    /// The item called `name` directly inside `folder`.
    public func child(named name: String, in folder: Identifier) -> Item? {
        guard let id = childrenByFolder[folder]?[name] else { return nil }
        return items[id]
    }

    /// True when `id` is the root or a folder.
    public func isFolder(_ id: Identifier) -> Bool {
        id == .root || items[id]?.isFolder == true
    }

    /// The names from the root down to `id` (empty for the root).
    public func pathComponents(of id: Identifier) -> [String] {
        var parts: [String] = []
        var current = id
        while current != .root, let item = items[current] {
            parts.append(item.name)
            current = item.parent
        }
        return parts.reversed()
    }

    /// The absolute path of `id`: `/a/b`, or `/` for the root.
    public func path(of id: Identifier) -> String {
        "/" + pathComponents(of: id).joined(separator: "/")
    }

    /// True when `ancestor` is `id` itself or one of the folders above it.
    public func isSelfOrAncestor(_ ancestor: Identifier, of id: Identifier) -> Bool {
        var current = id
        while true {
            if current == ancestor { return true }
            if current == .root { return false }
            guard let item = items[current] else { return false }
            current = item.parent
        }
    }

    /// Every item in the subtree under `id` (not `id` itself), parents before children.
    public func descendants(of id: Identifier) -> [Item] {
        var out: [Item] = []
        var queue = [id]
        while let folder = queue.popLast() {
            for child in children(of: folder) {
                out.append(child)
                if child.isFolder { queue.append(child.id) }
            }
        }
        return out
    }

    /// A name not used in `folder` (nor in `reserved`): `name`, else `name (2)`, `name (3)`…
    public func availableName(_ name: String, in folder: Identifier, reserved: Set<String> = []) -> String {
        func taken(_ n: String) -> Bool { childrenByFolder[folder]?[n] != nil || reserved.contains(n) }
        if !taken(name) { return name }
        var n = 2
        while taken(ItemName.numbered(name, n)) { n += 1 }
        return ItemName.numbered(name, n)
    }

    static func now() -> Int64 { SystemClock.nowNanoseconds() }

    /// Creates a folder called `name` in `parent`.
    /// - Throws: `NameError` for a bad name, `VaultError.refused` when the name is taken or the
    ///   parent is not a folder.
    @discardableResult
    public func makeFolder(named name: String, in parent: Identifier) throws -> Item {
        let valid = try ItemName.validated(name)
        guard isFolder(parent) else { throw VaultError.refused("not a folder") }
        guard child(named: valid, in: parent) == nil else { throw VaultError.refused("already exists") }
        let t = Self.now()
        let item = Item(id: .random(), parent: parent, name: valid, created: t, modified: t, content: nil)
        try commit([.putItem(item)])
        return item
    }

    /// Removes `id` and, for a folder, everything under it, in one transaction; content
    /// objects no item uses any more are deleted after the commit (a crash in between leaves
    /// orphans that the next open removes).
    public func remove(_ id: Identifier) throws {
        guard id != .root, let item = items[id] else { throw VaultError.refused("cannot remove the root") }
        let doomed = [item] + descendants(of: id)
        let objects = doomed.compactMap { $0.content?.objectID }
        try commit(doomed.reversed().map { .removeItem($0.id) })
        release(objects)
    }

    /// Moves and/or renames `id` to `name` inside `parent`. When `replacing` names an existing
    /// file at the target, it is removed in the same transaction.
    public func move(_ id: Identifier, to parent: Identifier, name: String, replacing: Identifier? = nil) throws {
        guard id != .root, var item = items[id] else { throw VaultError.refused("cannot move the root") }
        let valid = try ItemName.validated(name)
        guard isFolder(parent) else { throw VaultError.refused("not a folder") }
        if item.isFolder && isSelfOrAncestor(id, of: parent) { throw VaultError.refused("cannot move a folder into itself") }
        if let existing = child(named: valid, in: parent), existing.id != id, existing.id != replacing {
            throw VaultError.refused("already exists")
        }
        var ops: [MetadataOperation] = []
        var doomedObject: Identifier?
        if let replacing, let victim = items[replacing], victim.id != id {
            guard !victim.isFolder else { throw VaultError.refused("cannot replace a folder") }
            ops.append(.removeItem(victim.id))
            doomedObject = victim.content?.objectID
        }
        item.parent = parent
        item.name = valid
        ops.append(.putItem(item))
        try commit(ops)
        if let doomedObject { release([doomedObject]) }
    }
}

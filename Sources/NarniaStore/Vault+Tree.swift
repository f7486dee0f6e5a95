import Glibc
import NarniaSystem

extension Vault {
    /// The items shown, by identifier.
    var items: DenseTable<Item> { view.items }

    /// The number of items (files and folders) shown.
    public var itemCount: Int { view.items.count }

    /// The item with `id`, if it is shown.
    public func item(_ id: Identifier) -> Item? { view.items[id] }

    /// The root folder as an item, for listings that show it (`ls -d /`): named `/`, and dated
    /// by its newest item (it has no times of its own).
    public var rootItem: Item {
        let newest = children(of: .root).map(\.modified).max() ?? 0
        return Item(id: .root, parent: .root, name: "/", created: newest, modified: newest, content: nil)
    }

    /// The items directly inside `folder`, in no particular order.
    public func children(of folder: Identifier) -> [Item] {
        (view.children[folder] ?? [:]).values.compactMap { view.items[$0] }
    }

    /// The names directly inside `folder`, in no particular order (cheap: no item copies).
    public func childNames(of folder: Identifier) -> Dictionary<String, Identifier>.Keys? {
        view.children[folder]?.keys
    }

    /// Every folder's children by name as they are now: a value later changes to the vault
    /// leave as it is (cheap to take, copied only when the vault next changes).
    public var childrenByFolder: [Identifier: [String: Identifier]] { view.children }

    /// True when the folder shown as `shown` stands for `id` too: a folder of one name that
    /// several devices made, merged (docs/FORMAT.md, "Merging").
    public func folder(_ shown: Identifier, standsFor id: Identifier) -> Bool {
        view.members(of: shown).contains(id)
    }

    /// True when a device removed the item `id` (it may still be shown, when another device
    /// put items in it meanwhile: rule 3 of "Merging" in docs/FORMAT.md).
    public func wasRemoved(_ id: Identifier) -> Bool {
        state.tombstones.contains(id)
    }

    /// The item called `name` directly inside `folder`.
    public func child(named name: String, in folder: Identifier) -> Item? {
        guard let id = view.children[folder]?[name] else { return nil }
        return view.items[id]
    }

    /// True when `id` is the root or a folder.
    public func isFolder(_ id: Identifier) -> Bool {
        id == .root || view.items[id]?.isFolder == true
    }

    /// The names from the root down to `id` (empty for the root).
    public func pathComponents(of id: Identifier) -> [String] {
        Self.pathComponents(of: id, in: view.items)
    }

    /// The names from the root down to `id` in the tree `items` (this one, or one shown before).
    static func pathComponents(of id: Identifier, in items: DenseTable<Item>) -> [String] {
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

    /// True when one of the folders above item `id` is in `folders`.
    public func hasAncestor(_ id: Identifier, in folders: Set<Identifier>) -> Bool {
        guard var current = view.items[id]?.parent else { return false }
        while current != .root {
            if folders.contains(current) { return true }
            guard let folder = view.items[current] else { return false }
            current = folder.parent
        }
        return false
    }

    /// True when `ancestor` is `id` itself or one of the folders above it.
    public func isSelfOrAncestor(_ ancestor: Identifier, of id: Identifier) -> Bool {
        var current = id
        while true {
            if current == ancestor { return true }
            if current == .root { return false }
            guard let item = view.items[current] else { return false }
            current = item.parent
        }
    }

    /// True when a move of one of `moved` can change where `folder`, shown where it fell back
    /// (rule 2), is shown at the next open: one of them lies in the cycle its skipped move
    /// closes, or, when it fell back to the root because its `from` led back into it, on the
    /// way from its `from` to it — by the places in force, and the fallbacks of the folders on
    /// the way. Not a folder above where it is shown (review EA-1): moving one carries it along.
    private func canMoveTheFallback(of folder: Identifier, _ moved: Set<Identifier>) -> Bool {
        guard let record = state.items[folder] else { return false }
        var pending = [record.place?.parent]
        if view.fallenBack[folder]?.parent == .root { pending.append(record.from?.parent) }
        var seen: Set<Identifier> = [folder]
        while let next = pending.popLast() {
            guard let next, next != .root else { continue }
            if moved.contains(next) { return true }
            guard seen.insert(next).inserted else { continue }
            pending += [state.items[next]?.place?.parent, view.fallenBack[next]?.parent]
        }
        return false
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
    package func availableName(_ name: String, in folder: Identifier, reserved: Set<String> = []) -> String {
        func taken(_ n: String) -> Bool { view.children[folder]?[n] != nil || reserved.contains(n) }
        if !taken(name) { return name }
        var n = 2
        while taken(ItemName.numbered(name, n)) { n += 1 }
        return ItemName.numbered(name, n)
    }

    static func now() -> Int64 { SystemClock.nowNanoseconds() }

    /// Where the merged state places item `id` (its recorded name, which the name shown can
    /// differ from), for a move's `from`.
    func recordedPlace(of id: Identifier) -> Place? { state.items[id]?.place }

    /// Creates a folder called `name` in `parent`.
    /// - Throws: `NameError` for a bad name, `VaultError.refused` when the name is taken or the
    ///   parent is not a folder.
    @discardableResult
    package func makeFolder(named name: String, in parent: Identifier) throws -> Item {
        let valid = try ItemName.validated(name)
        guard isFolder(parent) else { throw VaultError.refused("not a folder") }
        guard child(named: valid, in: parent) == nil else { throw VaultError.refused("already exists") }
        let t = Self.now()
        let item = Item(id: .random(), parent: parent, name: valid, created: t, modified: t, content: nil)
        try commit([.createFolder(id: item.id, place: Place(parent: parent, name: valid), created: t, modified: t)],
                   view: .change { $0.insert(item) })
        return item
    }

    /// Creates folders along `names` under `parent`, those missing, in one transaction: the
    /// last folder (`mkdir -p`). Existing folders are used as they are.
    /// - Throws: `NameError`, `VaultError.refused` when a name on the way is a file.
    @discardableResult
    public func makeFolders(_ names: [String], in parent: Identifier) throws -> Identifier {
        var current = parent
        var ops: [Operation] = []
        var made: [Item] = []
        let t = Self.now()
        for name in names {
            let valid = try ItemName.validated(name)
            if made.isEmpty, let existing = child(named: valid, in: current) {
                guard existing.isFolder else { throw VaultError.refused("\(valid): not a folder") }
                current = existing.id
                continue
            }
            let item = Item(id: .random(), parent: current, name: valid, created: t, modified: t, content: nil)
            ops.append(.createFolder(id: item.id, place: Place(parent: current, name: valid), created: t, modified: t))
            made.append(item)
            current = item.id
        }
        if !ops.isEmpty {
            try commit(ops, view: .change { view in for item in made { view.insert(item) } })
        }
        return current
    }

    /// Removes `id` and, for a folder, everything under it, in one transaction: every item
    /// shown in it is listed as removed (items that other devices put there meanwhile are
    /// not, and survive), with the conflict copy each file's content would become (a change
    /// made meanwhile on another device is not, and survives as one). Objects no item uses
    /// any more are retired in the same record.
    public func remove(_ id: Identifier) throws {
        try remove([id])
    }

    /// Removes each of `ids` as `remove(_:)` does, all in one transaction (`rm` of several
    /// operands: killed part way, it removed some and not others, with a record and an
    /// `fdatasync` each — review ET-3). One inside another is removed with it.
    public func remove(_ ids: [Identifier]) throws {
        let named = Set(ids)
        var tops: [Item] = [], taken = Set<Identifier>()
        for id in ids {
            guard id != .root, let item = view.items[id] else { throw VaultError.refused("cannot remove the root") }
            if taken.insert(id).inserted && !hasAncestor(id, in: named) { tops.append(item) }
        }
        guard !tops.isEmpty else { return }
        let doomed = tops.flatMap { [$0] + descendants(of: $0.id) }
        let members = doomed.flatMap { view.members(of: $0.id) }
        let contents = doomed.compactMap(\.content)
        let update: ViewUpdate = tops.allSatisfy { view.isRegular($0.parent) } ? .change { view in for item in tops { view.remove(item.id) } } : .rebuild
        try commit([.remove(state.removalList(members))] + retirements(freeing: contents), view: update)
        repackSparse(contents.map(\.objectID))
    }

    /// Moves and/or renames `id` to `name` inside `parent`. When `replacing` names an existing
    /// file at the target, it is removed in the same transaction.
    public func move(_ id: Identifier, to parent: Identifier, name: String, replacing: Identifier? = nil) throws {
        guard id != .root, let item = view.items[id] else { throw VaultError.refused("cannot move the root") }
        let valid = try ItemName.validated(name)
        guard isFolder(parent) else { throw VaultError.refused("not a folder") }
        if item.isFolder && isSelfOrAncestor(id, of: parent) { throw VaultError.refused("cannot move a folder into itself") }
        if let existing = child(named: valid, in: parent), existing.id != id, existing.id != replacing {
            throw VaultError.refused("already exists")
        }
        var ops: [Operation] = []
        // Moves skipped to break a cycle: the places shown instead are recorded with this move,
        // so that it builds on the tree everyone was shown (docs/FORMAT.md, "Merging", rule 2).
        // So is a removed folder shown again to hold what survived it, but only when this move
        // can change where it falls back: left out then, its skipped move came back at the next
        // open, this move being the latest of its cycle (test_model seed 2242). The record takes
        // it out of its removal, as a move of it would (rule 3; what the removal took under it
        // is listed anew below); recorded at every move, it left its removal whatever the user
        // moved (review DZ-2). A removed folder not shown is never recorded: that would show it
        // again.
        let members = Set(view.members(of: id))
        let settled = view.fallenBack
            .filter { fallen, _ in
                !members.contains(fallen)
                    && (!state.tombstones.contains(fallen) || view.shows(fallen) && canMoveTheFallback(of: fallen, members))
            }
            .sorted { $0.key < $1.key }
        ops += settled.map { .move(id: $0.key, place: $0.value, from: $0.value) }
        var victim: Item?
        if let replacing, let target = view.items[replacing], target.id != id {
            guard !target.isFolder else { throw VaultError.refused("cannot replace a folder") }
            victim = target
        }
        if let victim { ops.append(.remove(state.removalList([victim.id]))) }
        for member in view.members(of: id) {
            ops.append(.move(id: member, place: Place(parent: parent, name: valid), from: recordedPlace(of: member)))
        }
        // A folder a removal listed (shown again to hold what survived it, rule 3, or taken
        // out of it by a move made elsewhere) carries nothing out of it as it moves: what that
        // removal took under it stays removed. So too under a folder recorded where it fell back:
        // that record keeps the tree as shown, and shows nothing the removal took (test_model
        // seed 1560: the next open showed, under it, a folder this session did not).
        let stillRemoved = state.removedItems(under: members.union(settled.map(\.key)))
        if !stillRemoved.isEmpty { ops.append(.remove(stillRemoved)) }
        if let content = victim?.content { ops += retirements(freeing: [content]) }
        // A conflict copy moved is kept where it is put, whatever becomes of its version: its
        // creation (and where it stood) go last, under its version's stamp (docs/FORMAT.md,
        // "Merging", rule 7).
        for member in view.members(of: id) { ops += try state.recordsKeepingCopy(member) }
        // Conflict copies of the item move with it (see `MergeState.placeConflictCopies`).
        // An item shown where it fell back is shown where it goes by a rebuild, which forgets the
        // fallback: moved in place, the view kept it, and the next move recorded that place again
        // under a newer stamp, undoing this one (test_model seed 1315).
        let regular = settled.isEmpty && view.isRegular(item.parent) && (victim.map { view.isRegular($0.parent) } ?? true)
            && state.contentVersions[id] == nil && members.allSatisfy { view.fallenBack[$0] == nil }
        try commit(ops, view: regular ? .change { view in
            if let victim { view.remove(victim.id) }
            view.move(id, to: parent, name: valid)
        } : .rebuild)
        if let object = victim?.content?.objectID { repackSparse([object]) }
    }
}

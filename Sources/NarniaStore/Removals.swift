/// One `remove` of an item: the record's stamp, which tells one removal from another, and the
/// stamp of the place the removing device showed the item in.
struct Removal: Equatable {
    var by: Stamp
    var seenPlace: Stamp
    /// True for a removal this device's journals hold (compaction writes it again).
    var isOwn: Bool

    /// True when a place stamped `stamp` is not the one this removal saw: a `move` there was
    /// made without reading it (`MergeState.wasMoved`). Never for a removal that saw every
    /// place (`Stamp.latest`).
    func sawAnotherPlace(than stamp: Stamp) -> Bool {
        seenPlace != stamp && seenPlace != .latest
    }

    /// The same removal read again (a copy of a journal, a snapshot beside the journals it
    /// retired): the later place it saw is kept.
    mutating func absorb(_ again: Removal) {
        seenPlace = max(seenPlace, again.seenPlace)
        isOwn = isOwn || again.isOwn
    }
}

/// The removals of one item: almost always one, so the first is held inline.
struct ItemRemovals {
    var first: Removal
    var more: [Removal] = []

    var all: [Removal] { [first] + more }

    /// The removal recorded under `stamp`, if any.
    func removal(by stamp: Stamp) -> Removal? {
        first.by == stamp ? first : more.first { $0.by == stamp }
    }

    /// Adds a removal, or absorbs one read again.
    mutating func add(_ removal: Removal) {
        if first.by == removal.by {
            first.absorb(removal)
        } else if let i = more.firstIndex(where: { $0.by == removal.by }) {
            more[i].absorb(removal)
        } else {
            more.append(removal)
        }
    }
}

/// Removal (docs/FORMAT.md, "Merging", rule 3): a `remove` takes every item its device showed
/// under what it removed, as it showed them. A `move` in force other than the place a removal
/// saw was made by a device that had not read it (stamped later: that device's clock had passed
/// the place it moved the item from, which the removal saw at least; earlier: the removal saw
/// another creation of the item, `wasMoved`), and takes the item, with what it
/// carried that the same removal listed, out of that removal: a `mv -f` swap on two devices at
/// once keeps both files, and a folder moved out of one removed meanwhile keeps what it held
/// (review DB-2: both were lost). A removal recorded before places were (tag 7) saw every
/// place.
extension MergeState {
    /// Notes a removal of `id`. The item is removed at once — a removal this device makes
    /// takes items as they are shown — and `settleRemovals` decides again once every record
    /// is read. Once that is done (and the conflict copies derived), a removal read again (a
    /// compaction's snapshot writing this device's removals anew) is decided as settling
    /// decides it: a move made meanwhile elsewhere still shows the item again (review EZ-1: a
    /// snapshot removed it again for the rest of the session, its content uncounted, and its
    /// object — a pack it shared, after `passwd --rotate` — was deleted here and from the
    /// remote while the file lived).
    mutating func remove(_ id: Identifier, _ removal: Removal) {
        let readAgain = removals[id]?.removal(by: removal.by) != nil
        if removals[id] == nil { removals[id] = ItemRemovals(first: removal) } else { removals[id]!.add(removal) }
        if conflictCopiesAdded && readAgain { settleRemoval(id) } else { setRemoved(id, true) }
    }

    /// Decides, once every record is read, which listed items are removed: those some removal
    /// still takes (see `takes`).
    mutating func settleRemovals() {
        movedSinceRemoved = Set(removals.keys.filter { id in removals[id]!.all.contains { wasMoved(id, since: $0) } })
        // Almost always none: every listed item is removed, as `remove` left it.
        guard !movedSinceRemoved.isEmpty else { return }
        for id in removals.keys { settleRemoval(id) }
    }

    /// Decides whether the listed item `id` is removed (a conflict copy once derived beside its
    /// file: a folder holding it may have been moved since).
    mutating func settleRemoval(_ id: Identifier) {
        guard let list = removals[id] else { return }
        if wasMoved(id, since: list.first) || list.more.contains(where: { wasMoved(id, since: $0) }) { movedSinceRemoved.insert(id) }
        setRemoved(id, takes(list.first, id) || list.more.contains { takes($0, id) })
    }

    /// True when `id`'s place in force is a `move` other than the place `removal` saw: stamped
    /// later, or earlier. A move the removing device had read would be the place it saw (a
    /// move beats a creation, and the latest move wins), so one stamped earlier was made
    /// without reading it — by a device that saw another creation of the item: one drop
    /// adopted on two devices, filed away on the one before the other adopted and removed it
    /// (review FB-2: the filed file was removed, and its object deleted everywhere).
    private func wasMoved(_ id: Identifier, since removal: Removal) -> Bool {
        guard let record = items[id], record.place != nil, !record.placeIsInitial else { return false }
        return removal.sawAnotherPlace(than: record.placeStamp)
    }

    /// True when `removal` takes `id`: neither the item, nor a folder holding it through folders
    /// the same removal lists — what it removed, as it showed it — that carried it, was moved
    /// since that removal saw it. A folder carried what was placed in it before its move; what
    /// was put in it later, and a folder the removal did not list, are no part of that move
    /// (`movedSinceRemoved` holds every item moved since one of its removals).
    private func takes(_ removal: Removal, _ id: Identifier) -> Bool {
        guard !movedSinceRemoved.isEmpty else { return true }
        var current = id
        var placedLatest: Stamp?
        // The places followed may form a cycle (rule 2): no item is deeper than there are items.
        for _ in 0...items.count {
            guard current != .root, let seen = removals[current]?.removal(by: removal.by),
                  let record = items[current] else { return true }
            if movedSinceRemoved.contains(current) && wasMoved(current, since: seen)
                && placedLatest.map({ $0 < record.placeStamp }) ?? true {
                return false
            }
            placedLatest = max(placedLatest ?? record.placeStamp, record.placeStamp)
            guard let parent = record.place?.parent else { return true }
            current = parent
        }
        return true
    }

    /// What a move of `folders` lists as removed anew: the removed items under them through
    /// folders one removal lists, each with its place's stamp. Moved, a folder that removal
    /// lists — one shown again to hold what survived it (rule 3), or one a move made elsewhere
    /// took out of it — would carry them out of it, and the device moving it did not show them.
    /// The folders themselves are not listed, though by the places in force (a cycle, rule 2)
    /// one may lie under another: listed with the place their move replaces, they would take
    /// back out of the list what it holds (test_model seed 2242).
    func removedItems(under folders: Set<Identifier>) -> [RemovedItem] {
        let listing = Set(folders.flatMap { removals[$0]?.all.map(\.by) ?? [] })
        guard !listing.isEmpty else { return [] }
        return tombstones.sorted().compactMap { id in
            guard !folders.contains(id), let record = items[id], let list = removals[id] else { return nil }
            for removal in list.all where listing.contains(removal.by) {
                var current = record.place?.parent
                for _ in 0...items.count {
                    guard let folder = current, folder != .root, removals[folder]?.removal(by: removal.by) != nil else { break }
                    if folders.contains(folder) { return RemovedItem(id: id, seenPlace: record.placeStamp) }
                    current = items[folder]?.place?.parent
                }
            }
            return nil
        }
    }

    /// Removes `id`, or shows it again: its content counts toward its object's use only while
    /// it is shown, and it keeps the content and its key either way.
    private mutating func setRemoved(_ id: Identifier, _ removed: Bool) {
        if removed {
            guard tombstones.insert(id).inserted else { return }
            if let content = items[id]?.content { releaseUse(content) }
        } else {
            guard tombstones.remove(id) != nil else { return }
            if let content = items[id]?.content { useContent(content) }
        }
    }

    /// This device's removals, as compaction writes them again: one list per removal, under
    /// its own stamp.
    var ownRemovals: [(by: Stamp, items: [RemovedItem])] {
        var lists: [Stamp: [RemovedItem]] = [:]
        for (id, list) in removals {
            for removal in list.all where removal.isOwn {
                lists[removal.by, default: []].append(RemovedItem(id: id, seenPlace: removal.seenPlace))
            }
        }
        return lists.sorted { $0.key < $1.key }.map { ($0.key, $0.value.sorted { $0.id < $1.id }) }
    }
}

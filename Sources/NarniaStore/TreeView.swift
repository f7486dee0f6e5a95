/// The folder tree a person sees, derived from the merged registers (docs/FORMAT.md,
/// "Merging"): which items are shown, where, and under which names.
///
/// - An item is shown when its creation has arrived, the folders above it have too, and it is
///   not removed; a removed folder is still shown while it holds an item shown (one another
///   device put there without knowing of the removal). Items waiting for their folder are
///   *held*.
/// - Concurrent moves that would form a cycle: the latest move in the cycle falls back to the
///   place its device saw the item in (and, should that form a cycle too, to the root).
/// - Folders of one name in one folder are one folder, shown under the identifier of the one
///   placed first; their contents merge.
/// - Files of one name in one folder (or a file and a folder): the one placed first keeps the
///   name (a folder always does), the others are shown as `NAME (conflict DATE DEVICE).EXT`.
///
/// The view is a function of the registers alone, so every device that holds the same records
/// shows the same tree. `build` derives it whole; the vault updates it in place after its own
/// changes where that is simple, and rebuilds it otherwise.
struct TreeView {
    /// Shown items by their identifier (for a merged folder: the first one's).
    private(set) var items = DenseTable<Item>()
    /// Each shown folder's children, by the name shown.
    private(set) var children: [Identifier: [String: Identifier]] = [Identifier.root: [:]]
    /// The items a merged folder stands for, by its shown identifier (only merged folders).
    private(set) var members: [Identifier: [Identifier]] = [:]
    /// Folders whose children include merged folders or names in conflict, and removed folders
    /// shown for what survives in them: changes there rebuild the view.
    private(set) var irregular = Set<Identifier>()
    /// Items whose folder has not arrived.
    private(set) var held = 0
    /// Where the items whose move was skipped are shown instead (their fallback places).
    private(set) var fallenBack: [Identifier: Place] = [:]

    /// The items an identifier shown in the view stands for.
    func members(of id: Identifier) -> [Identifier] { members[id] ?? [id] }

    /// True when `id` is shown: as an item, or as one of the folders a merged folder stands for.
    func shows(_ id: Identifier) -> Bool { items[id] != nil || members.values.contains { $0.contains(id) } }

    // MARK: Deriving

    /// Derives the whole view from `state`; `deviceName` names the devices of conflict copies.
    static func build(_ state: MergeState, deviceName: (Identifier) -> String) -> TreeView {
        var view = TreeView()
        // Index the candidates: created, placed, and not a removed file.
        // The registers each step needs, by index, read in one pass over the records (each
        // record is a few hundred bytes: looking one up again copies it again). `shownItems`
        // holds each candidate as an item, to be given its folder and shown name.
        var ids: [Identifier] = []
        var places: [Place] = []
        var isFolder: [Bool] = []
        var placeStamps: [Stamp] = []
        var removed: [Bool] = []
        var froms: [Place?] = []
        var shownItems: [Item] = []
        let capacity = state.items.count
        ids.reserveCapacity(capacity)
        places.reserveCapacity(capacity)
        isFolder.reserveCapacity(capacity)
        placeStamps.reserveCapacity(capacity)
        removed.reserveCapacity(capacity)
        froms.reserveCapacity(capacity)
        shownItems.reserveCapacity(capacity)
        for (id, record) in state.items {
            guard let creation = record.creation, let place = record.place else { continue }
            let tombstoned = state.tombstones.contains(id)
            if !creation.isFolder && tombstoned { continue }
            ids.append(id)
            places.append(place)
            isFolder.append(creation.isFolder)
            placeStamps.append(record.placeStamp)
            removed.append(tombstoned)
            froms.append(record.from)
            shownItems.append(Item(id: id, parent: .root, name: "", created: creation.created,
                                   modified: creation.isFolder ? creation.modified : record.contentModified,
                                   content: creation.isFolder ? nil : record.content))
        }
        let count = ids.count
        var index: [Identifier: Int] = [:]
        index.reserveCapacity(count)
        for (i, id) in ids.enumerated() { index[id] = i }
        func item(_ i: Int, parent: Identifier, name: String) -> Item {
            var item = shownItems[i]
            item.parent = parent
            item.name = name
            return item
        }
        let rootIndex = -1, missing = -2
        func parentIndex(_ place: Place) -> Int {
            place.parent == .root ? rootIndex : (index[place.parent] ?? missing)
        }
        var parent = places.map(parentIndex)

        // Cycles: the latest move of each falls back to where its device saw the item, or, when
        // that closes a cycle too, to the root (docs/FORMAT.md rule 2: the same folder; it
        // skipped the latest move of the new cycle instead, another folder's). Each round
        // breaks every cycle present; an item falls back at most twice.
        var fallbacks = [UInt8](repeating: 0, count: count)
        /// True when `place`'s folder is `item` or lies inside it, by the places as they stand.
        func leadsBack(_ place: Place, to item: Int) -> Bool {
            var i = parentIndex(place)
            for _ in 0...count {
                guard i >= 0 else { return false }
                if i == item { return true }
                i = parent[i]
            }
            return false   // into another cycle, which a round breaks in turn
        }
        while true {
            // The latest move of each cycle, the latest first: a fallback may close or open a
            // path another cycle's fallback follows, so the order is the stamps', never the
            // order the records were read in (review DX-1: devices holding the same records
            // showed different trees).
            let latestMoves = findCycles(parent)
                .map { cycle in cycle.max { placeStamps[$0] < placeStamps[$1] }! }
                .sorted { placeStamps[$0] > placeStamps[$1] }
            if latestMoves.isEmpty { break }
            for latest in latestMoves {
                if fallbacks[latest] == 0, let from = froms[latest], !leadsBack(from, to: latest) {
                    places[latest] = from
                    fallbacks[latest] = 1
                } else {
                    // Under its `from` name, whichever round it falls back in (seed 1092).
                    places[latest] = Place(parent: .root, name: froms[latest]?.name ?? places[latest].name)
                    fallbacks[latest] = 2
                }
                parent[latest] = parentIndex(places[latest])
            }
        }

        for i in 0..<count where fallbacks[i] > 0 { view.fallenBack[ids[i]] = places[i] }

        // Reachable from the root through arrived folders (else held).
        var reach = [Int8](repeating: 0, count: count)   // 0 unknown, 1 reachable, -1 held
        var path: [Int] = []
        for start in 0..<count where reach[start] == 0 {
            var i = start
            var verdict: Int8 = 1
            while true {
                if reach[i] != 0 { verdict = reach[i]; break }
                path.append(i)
                let p = parent[i]
                if p == rootIndex { verdict = 1; break }
                if p == missing || !isFolder[p] { verdict = -1; break }
                i = p
            }
            for j in path { reach[j] = verdict }
            path.removeAll(keepingCapacity: true)
        }

        // Shown: reachable and not removed; a removed folder above a shown item is shown too.
        var shown = [Bool](repeating: false, count: count)
        var resurrected = [Bool](repeating: false, count: count)
        for i in 0..<count where reach[i] == 1 && !removed[i] { shown[i] = true }
        for i in 0..<count where shown[i] && !resurrected[i] {
            var p = parent[i]
            while p >= 0 && !shown[p] {
                shown[p] = true
                resurrected[p] = true
                p = parent[p]
            }
        }
        view.held = reach.lazy.filter { $0 == -1 }.count

        var childrenOf: [Int: [Int]] = [:]
        for i in 0..<count where shown[i] { childrenOf[parent[i], default: []].append(i) }
        view.items.reserveCapacity(count)
        view.children.reserveCapacity(childrenOf.count)

        // From the root down: merge folders of one name, give files in conflict their names.
        var queue: [(view: Identifier, members: [Int])] = [(.root, [rootIndex])]
        while let (folder, folderMembers) = queue.popLast() {
            // Most names have one candidate: they are found with one hash each, and only the
            // names with several (merged folders, conflicts) get a list.
            var only: [String: Int] = [:]
            only.reserveCapacity(folderMembers.reduce(0) { $0 + (childrenOf[$1]?.count ?? 0) })
            var contested: [String: [Int]] = [:]
            for m in folderMembers {
                for c in childrenOf[m] ?? [] {
                    if let previous = only.updateValue(c, forKey: places[c].name) {
                        only[places[c].name] = previous
                        contested[places[c].name, default: [previous]].append(c)
                    }
                }
            }
            var names: [String: Identifier] = [:]
            var conflicts: [(index: Int, name: String)] = []
            func earlier(_ a: Int, _ b: Int) -> Bool {
                let sa = placeStamps[a], sb = placeStamps[b]
                return sa != sb ? sa < sb : ids[a] < ids[b]
            }
            if contested.isEmpty {
                // The usual folder: the names as they are (mapValues keeps the hash table).
                names = only.mapValues { ids[$0] }
            } else {
                names.reserveCapacity(only.count)
            }
            for (name, c) in only where contested.isEmpty || contested[name] == nil {
                if !contested.isEmpty { names[name] = ids[c] }
                view.items[ids[c]] = item(c, parent: folder, name: name)
                if isFolder[c] { queue.append((ids[c], [c])) }
                if resurrected[c] { view.irregular.formUnion([folder, ids[c]]) }
            }
            for (name, candidates) in contested {
                view.irregular.insert(folder)
                let sorted = candidates.sorted(by: earlier)
                let folders = sorted.filter { isFolder[$0] }
                let files = sorted.filter { !isFolder[$0] }
                if let first = folders.first {
                    names[name] = ids[first]
                    view.items[ids[first]] = item(first, parent: folder, name: name)
                    if folders.count > 1 { view.members[ids[first]] = folders.map { ids[$0] } }
                    if folders.contains(where: { resurrected[$0] }) { view.irregular.insert(ids[first]) }
                    queue.append((ids[first], folders))
                    conflicts += files.map { ($0, name) }
                } else {
                    names[name] = ids[files[0]]
                    view.items[ids[files[0]]] = item(files[0], parent: folder, name: name)
                    conflicts += files.dropFirst().map { ($0, name) }
                }
            }
            conflicts.sort { earlier($0.index, $1.index) }
            for (c, name) in conflicts {
                let stamp = placeStamps[c]
                var shownName = ItemName.conflictCopy(name, date: stamp.wall, device: deviceName(stamp.device))
                if names[shownName] != nil {
                    var n = 2
                    while names[ItemName.numbered(shownName, n)] != nil { n += 1 }
                    shownName = ItemName.numbered(shownName, n)
                }
                names[shownName] = ids[c]
                view.items[ids[c]] = item(c, parent: folder, name: shownName)
            }
            view.children[folder] = names
        }
        return view
    }

    /// Every cycle of the parent map, each as its members.
    private static func findCycles(_ parent: [Int]) -> [[Int]] {
        var state = [UInt8](repeating: 0, count: parent.count)   // 0 new, 1 on the current path, 2 done
        var cycles: [[Int]] = []
        var path: [Int] = []
        for start in 0..<parent.count where state[start] == 0 {
            var i = start
            while i >= 0 && state[i] == 0 {
                state[i] = 1
                path.append(i)
                i = parent[i]
            }
            if i >= 0 && state[i] == 1, let at = path.firstIndex(of: i) {
                cycles.append(Array(path[at...]))
            }
            for j in path { state[j] = 2 }
            path.removeAll(keepingCapacity: true)
        }
        return cycles
    }

    // MARK: Changes made here

    /// True when a change to items in `folder` can be made in place: no merged folders, names
    /// in conflict or removed folders are involved.
    func isRegular(_ folder: Identifier) -> Bool { !irregular.contains(folder) }

    /// Shows a new item (its name is free in its folder).
    mutating func insert(_ item: Item) {
        items[item.id] = item
        children[item.parent, default: [:]][item.name] = item.id
        if item.isFolder && children[item.id] == nil { children[item.id] = [:] }
    }

    /// Moves a shown item (a merged folder with all it stands for) to a free name.
    mutating func move(_ id: Identifier, to parent: Identifier, name: String) {
        guard var item = items[id] else { return }
        children[item.parent]?[item.name] = nil
        item.parent = parent
        item.name = name
        items[id] = item
        children[parent, default: [:]][name] = id
    }

    /// Stops showing an item and everything under it.
    mutating func remove(_ id: Identifier) {
        guard let item = items.removeValue(forKey: id) else { return }
        children[item.parent]?[item.name] = nil
        var queue = [id]
        while let folder = queue.popLast() {
            members[folder] = nil
            irregular.remove(folder)
            for child in (children.removeValue(forKey: folder) ?? [:]).values {
                if items.removeValue(forKey: child)?.isFolder == true { queue.append(child) }
            }
        }
    }

    /// Replaces a shown file's content.
    mutating func setContent(_ id: Identifier, _ content: ContentInfo, modified: Int64) {
        items[id]?.content = content
        items[id]?.modified = modified
    }
}

extension ItemName {
    /// The name shown for a file that lost its name to another placed earlier:
    /// `NAME (conflict YYYY-MM-DD DEVICE).EXT`, the date (UTC) and device of its placing,
    /// shortened (`marked`) to keep within 255 bytes. A `/` or NUL in the device name (one
    /// named before names were refused them) shows as `_`: a name holds neither (review AX4).
    static func conflictCopy(_ name: String, date: Int64, device: String) -> String {
        let shown = String(String.UnicodeScalarView(device.unicodeScalars.map { $0 == "/" || $0 == "\0" ? "_" : $0 }))
        return marked(name, " (conflict \(utcDate(date)) \(shown))")
    }

    /// `YYYY-MM-DD` of a time in nanoseconds since the epoch, in UTC (the civil calendar from
    /// days since 1970-01-01, Howard Hinnant's algorithm).
    static func utcDate(_ nanoseconds: Int64) -> String {
        let days = Int64((Double(nanoseconds) / 86_400e9).rounded(.down))
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        let y = yoe + era * 400 + (m <= 2 ? 1 : 0)
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(y)-\(two(m))-\(two(d))"
    }
}

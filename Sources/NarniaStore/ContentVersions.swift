import NarniaCrypto

/// The versions of one file's content that `set content` operations gave and no other one
/// replaced: its *heads* (docs/FORMAT.md, "Concurrent contents").
///
/// A `cp -f` names the version it wrote over, so a change made knowing another replaces it.
/// Two changes made at once on two devices replace the same version and neither knows the
/// other: both stay heads. The one with the greatest stamp is the file's content, as the
/// content register keeps; `MergeState.addConflictCopies()` shows every other head beside it
/// as a conflict copy, so that neither device's change is lost.
struct ContentVersions {
    struct Version {
        var content: ContentInfo
        var lineage: ContentLineage
        var modified: Int64
        var stamp: Stamp
        var isOwn: Bool
    }

    /// The heads, by version: for each, the value that wins among that version's (the first
    /// write, or a repack of it).
    var heads: [Identifier: Version] = [:]
    /// Versions that some `set content` replaced.
    var replaced = Set<Identifier>()
    /// The greatest stamp of a legacy `set content`, which replaced every version before it.
    var legacyFloor: Stamp?

    /// The heads that count: not a legacy `set content`'s, nor stamped before one.
    var liveHeads: [Version] {
        heads.values.filter { version in !version.lineage.isLegacy && (legacyFloor.map { version.stamp >= $0 } ?? true) }
    }
}

extension MergeState {
    /// Notes a `set content`'s version (before its value goes into the content register). A
    /// version's key is copied in only while it stays a head and was read from a journal;
    /// a change this device just made (no `key`) is the content, never a copy.
    mutating func noteVersion(of id: Identifier, _ new: ContentVersions.Version, key: ArraySlice<UInt8>?) throws {
        if let replaced = new.lineage.replaces {
            noteReplaced(replaced, of: id)
            if new.isOwn { ownReplaced[id, default: []].insert(replaced) }
        }
        guard isTracked(id) else { return }
        var versions = contentVersions[id] ?? ContentVersions()
        defer { contentVersions[id] = versions }
        if new.lineage.isLegacy, versions.legacyFloor.map({ $0 < new.stamp }) ?? true { versions.legacyFloor = new.stamp }
        let version = new.lineage.version
        guard !versions.replaced.contains(version) else { return }
        if let old = versions.heads[version] {
            if old.content.objectID == new.content.objectID && old.stamp == new.stamp {
                if new.isOwn { versions.heads[version]!.isOwn = true }
                return
            }
            guard Self.wins(new.stamp, new.content.objectID.hex, over: old.stamp, old.content.objectID.hex) else { return }
            forgetKey(of: old)
        }
        var head = new
        head.content.keySlot = -1
        if let key { head.content.keySlot = try key.withUnsafeBytes { try keys.add($0) } }
        versions.heads[version] = head
    }

    /// Notes that a `set content` replaced `version` of file `id`: it is no head, now or when
    /// its own record arrives.
    mutating func noteReplaced(_ version: Identifier, of id: Identifier) {
        guard isTracked(id), contentVersions[id, default: ContentVersions()].replaced.insert(version).inserted,
              let gone = contentVersions[id]!.heads.removeValue(forKey: version) else { return }
        forgetKey(of: gone)
    }

    /// True while `id`'s versions are worth keeping: all of them until the copies are
    /// derived, then only those of files with copies (this session's own changes make no new
    /// copies, and an entry for every file it changes would only make each later `mv` of one
    /// rebuild the view).
    private func isTracked(_ id: Identifier) -> Bool {
        !conflictCopiesAdded || contentVersions[id] != nil
    }

    /// Shows heads as conflict copies: items of their own, whose identifiers are derived from
    /// the file's and the version's, in the file's folder, under the file's name marked
    /// `(conflict DATE DEVICE)` with the date and the device of the version's writing. Every
    /// head but the file's content is shown so; of a removed file, every head — a removal
    /// lists the copy of the version its device showed (`removalList`), so what the remover
    /// saw goes and what it did not stays. Called once every record is read. The copies are
    /// derived, not stored: every device that holds the same records shows the same ones, and
    /// a `move`, `set content` or `remove` of a copy is recorded under its identifier like any
    /// item's.
    ///
    /// Afterwards only the files with a copy still shown keep their versions, and only this
    /// device's versions keep their keys (compaction writes them again).
    mutating func addConflictCopies() throws {
        defer { conflictCopiesAdded = true }
        // A copy's own versions (`cp -f` onto a copy on two devices at once) are looked at once
        // the copy exists: the files first, then the copies they gave, and so on.
        var pending = Set(contentVersions.keys)
        while true {
            let ready = pending.filter(isPlacedFile)
            if ready.isEmpty { break }
            pending.subtract(ready)
            for id in ready.sorted() { try addConflictCopies(of: id) }
        }
        for id in pending { forgetVersions(of: id) }
    }

    private mutating func addConflictCopies(of id: Identifier) throws {
        guard let versions = contentVersions[id] else { return }
        var heads = versions.liveHeads
        var shown = false
        if isPlacedFile(id), let place = items[id]?.place {
            if !tombstones.contains(id) {
                let content = heads.max { Self.wins($1.stamp, $1.content.objectID.hex, over: $0.stamp, $0.content.objectID.hex) }
                heads.removeAll { $0.lineage.version == content?.lineage.version }
            }
            for head in heads {
                shown = try addConflictCopy(of: id, head, place: place) || shown
            }
        }
        guard shown else { return forgetVersions(of: id) }
        for (version, head) in versions.heads where !head.isOwn {
            forgetKey(of: head)
            contentVersions[id]!.heads[version]!.content.keySlot = -1
        }
    }

    /// True for a file whose copies can be placed: shown (created and placed), or removed with
    /// a place known — a compaction keeps a removed file's place, not its creation, and a
    /// removed copy is known but not shown.
    private func isPlacedFile(_ id: Identifier) -> Bool {
        guard let record = items[id], record.place != nil, record.creation?.isFolder != true else { return false }
        return record.creation != nil || tombstones.contains(id)
    }

    /// Forgets the versions of a file with no conflict copy shown, and their keys.
    private mutating func forgetVersions(of id: Identifier) {
        guard let versions = contentVersions.removeValue(forKey: id) else { return }
        for head in versions.heads.values { forgetKey(of: head) }
    }

    /// What a removal of `ids` lists: the items, and for each file the conflict copy its
    /// version in force would become were another device to change the file meanwhile.
    /// Each with the stamp of the place this device shows it in (rule 3: a move stamped later
    /// keeps it); a copy not derived here stands where its file does.
    func removalList(_ ids: [Identifier]) -> [RemovedItem] {
        let placeStamp = { (id: Identifier) in self.items[id]?.placeStamp ?? Stamp.latest }
        return ids.map { RemovedItem(id: $0, seenPlace: placeStamp($0)) } + ids.compactMap { id in
            guard let record = items[id], record.content != nil else { return nil }
            let copy = Self.conflictCopyIdentifier(of: id, version: record.contentLineage.version)
            return RemovedItem(id: copy, seenPlace: items[copy]?.placeStamp ?? record.placeStamp)
        }
    }

    /// What a change (`cp -f`) or a move of `id` writes besides, after every other operation
    /// of its record, when `id` is a conflict copy that only the derivation creates: a `create
    /// file` of its derived values and a `move` to where it stands, under its version's stamp
    /// (the result begins with a `stamp`). A copy is derived only while its version is a head,
    /// and the device whose version it is may replace that version meanwhile (as its file's
    /// content, not knowing of the copy): the copy is then a file of its own, and stays where
    /// it stands, no longer following its file. Every device deriving it holds these values
    /// already, and a move another device made meanwhile, stamped later, still wins
    /// (docs/FORMAT.md, "Merging", rule 7). Nothing for any other item.
    func recordsKeepingCopy(_ id: Identifier) throws -> [Operation] {
        guard derivedCopies.contains(id), let record = items[id], !record.creationIsOwn, let creation = record.creation,
              let place = record.place, var content = record.content else { return [] }
        // The record hands its content's key slot to the state: a copy of the item's.
        content.keySlot = try keys.copy(content.keySlot)
        let creating = Operation.createFile(id: id, place: place, created: creation.created, modified: record.contentModified,
                                            content: content)
        return [.stamp(creation.stamp), creating, .move(id: id, place: place, from: nil)]
    }

    /// The identifier of the conflict copy that shows `version` of file `id`.
    static func conflictCopyIdentifier(of id: Identifier, version: Identifier) -> Identifier {
        Identifier(genericHash(Array("conflict copy".utf8) + id.bytes + version.bytes, length: 16))
    }

    /// Adds the conflict copy of `head`, created and modified when the version was written (not
    /// when its file was: a removed file's creation goes at compaction); true when it is shown
    /// (not removed).
    private mutating func addConflictCopy(of id: Identifier, _ head: ContentVersions.Version, place: Place) throws -> Bool {
        let copy = Self.conflictCopyIdentifier(of: id, version: head.lineage.version)
        guard head.content.keySlot >= 0 else { return false }
        create(copy, Creation(isFolder: false, created: head.modified, modified: head.modified, stamp: head.stamp), own: false)
        setPlace(copy, conflictCopyPlace(head, beside: place), from: nil, stamp: head.stamp, initial: true, own: false)
        // A removed copy is known, not shown: changes made to it meanwhile elsewhere are its
        // own heads, shown as copies in turn. Placed beside its file, it follows the folders
        // holding it out of a removal (rule 3).
        settleRemoval(copy)
        guard !tombstones.contains(copy) else { return false }
        derivedCopies.insert(copy)
        var content = head.content
        content.keySlot = try keys.copy(head.content.keySlot)
        try setContent(copy, content, lineage: .initial(head.lineage.version), modified: head.modified, stamp: head.stamp,
                       initial: true, key: nil, own: false)
        return true
    }

    /// Where the copy of `head` stands: beside the file at `place`, under its name marked.
    private func conflictCopyPlace(_ head: ContentVersions.Version, beside place: Place) -> Place {
        Place(parent: place.parent, name: ItemName.conflictCopy(place.name, date: head.stamp.wall, device: recordedName(of: head.stamp.device)))
    }

    /// Places the conflict copies of `id` anew after its place changed in this session: they
    /// stand beside it, as deriving them from the records gives, until moved themselves.
    mutating func placeConflictCopies(of id: Identifier) {
        guard let versions = contentVersions[id], let place = items[id]?.place else { return }
        for head in versions.heads.values {
            let copy = Self.conflictCopyIdentifier(of: id, version: head.lineage.version)
            guard items[copy]?.creation != nil, items[copy]!.placeIsInitial else { continue }
            items[copy]!.place = conflictCopyPlace(head, beside: place)
            placeConflictCopies(of: copy)   // a copy's own copies stand beside it
        }
    }

    private func forgetKey(of version: ContentVersions.Version) {
        if version.content.keySlot >= 0 { keys.remove(version.content.keySlot) }
    }

    /// A device's name as its records give it (the first eight hex digits of its identifier
    /// until one arrives): what conflict names show, alike on every device.
    func recordedName(of device: Identifier) -> String {
        devices[device]?.name ?? String(device.hex.prefix(8))
    }
}

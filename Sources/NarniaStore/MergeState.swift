/// The merged metadata of every journal present: one register per item field, setting and
/// attachment, each keeping the value with the greatest stamp, the latest place each item's
/// removals saw, plus the grow-only sets of retired files and kept objects (docs/FORMAT.md,
/// "Merging").
///
/// Applying an operation twice, or operations in any order, gives the same state: the
/// registers keep their maximum, the sets their union. That is what lets every device merge
/// whatever journals it holds, in whatever order they arrived, and agree once they hold the
/// same ones. The tree a person sees is derived from this by `TreeView`.
struct MergeState {
    /// How an item came to be: the first operation that created it.
    struct Creation {
        var isFolder: Bool
        var created: Int64
        /// A folder's modification time (a file's goes with its content).
        var modified: Int64
        var stamp: Stamp
    }

    /// The registers of one item. An item exists once its creation has arrived; moves and
    /// content that arrive before it wait here.
    struct ItemRecord {
        var creation: Creation?
        var place: Place?
        var placeStamp = Stamp(wall: .min, counter: 0, device: .root)
        /// True while the place is the one a `create` gave, which any `move` beats.
        var placeIsInitial = false
        /// Where the device that moved it saw it (nil for the place it was created in).
        var from: Place?
        var content: ContentInfo?
        /// Which version the content is, and what it replaced (for compaction to write again).
        var contentLineage = ContentLineage(version: .root, replaces: nil)
        var contentModified: Int64 = 0
        var contentStamp = Stamp(wall: .min, counter: 0, device: .root)
        /// True while the content is the one a `create file` gave, which any `set content` beats.
        var contentIsInitial = false
        /// Which of the values this device's own journals hold (what its compaction keeps).
        var creationIsOwn = false, placeIsOwn = false, contentIsOwn = false

        var isFolder: Bool { creation?.isFolder == true }
    }

    /// A blob attached to an item for one content object.
    struct Attachment {
        var object: Identifier
        var bytes: [UInt8]?
        var stamp: Stamp
        var isOwn: Bool
    }

    /// What the records say of one device.
    struct DeviceRecord {
        var name: String?
        var nameStamp = Stamp(wall: .min, counter: 0, device: .root)
        /// The highest record number seen, and what that record says the device had read.
        var lastSeq: UInt64 = 0
        var lastKnowledge = Knowledge()
        /// When it last wrote (the wall time of its newest record).
        var lastWall: Int64 = 0
        var forgotten = false
        /// The highest record number of it that a record here (another device's) says was
        /// read: it wrote at least that many, though none may have reached this copy yet.
        var seqReadElsewhere: UInt64 = 0

        /// True once it is known to have written: a record of it is here, or another
        /// device's record says it read one.
        var hasWritten: Bool { lastSeq > 0 || seqReadElsewhere > 0 }
    }

    var items = DenseTable<ItemRecord>()
    /// The versions `set content` gave each file that no other version replaced: more than
    /// one when devices changed the file at once (see `ContentVersions`). Once every record
    /// is read, only the files with a conflict copy shown keep theirs.
    var contentVersions: [Identifier: ContentVersions] = [:]
    /// Set once every record is read and the conflict copies are derived (`addConflictCopies`).
    var conflictCopiesAdded = false
    /// The conflict copies shown because a version of their file is a head (created by the
    /// derivation, whether or not a record creates them too).
    var derivedCopies = Set<Identifier>()
    /// The items removed: those a `remove` lists and no `move` made meanwhile elsewhere took
    /// out of it (see `settleRemovals`). A removed item keeps its values, its content
    /// uncounted in `objectUses`.
    var tombstones = Set<Identifier>()
    /// Every removal of each item, with the place it saw (see `Removals.swift`).
    var removals: [Identifier: ItemRemovals] = [:]
    /// The listed items moved since a removal of them saw them (see `settleRemovals`).
    var movedSinceRemoved = Set<Identifier>()
    var settings: [String: (value: String?, stamp: Stamp, isOwn: Bool)] = [:]
    var attachments: [Identifier: [String: Attachment]] = [:]
    var devices: [Identifier: DeviceRecord] = [:]
    var retired: [RetiredFile: [Knowledge]] = [:]
    var kept = Set<Identifier>()
    /// Journals whose cut tails their devices noted (`tail noted`), with where the whole
    /// records ended each time.
    var notedTails: [Identifier: Set<Int64>] = [:]
    /// What retirements of journals read of their copies (`JournalRead`), by journal.
    var journalReads: [Identifier: Set<JournalRead>] = [:]
    /// Format-1 stores this one was upgraded from.
    var upgrades = Set<Upgrade>()
    /// Every object any content value has named, winning or not: what is not in
    /// `objectUses` among them is no longer needed by any item.
    var referencedObjects = Set<Identifier>()
    /// Who uses each content object (a pack serves several): the items whose current content
    /// it holds, removed items not counted.
    var objectUses: [Identifier: ObjectUse] = [:]
    /// Item keys of the winning content values.
    let keys: KeyTable
    /// This device, whose own journals' operations are marked as such.
    let device: Identifier
    /// What this device's own journals removed, retired, read of retired journals, kept, noted
    /// and forgot.
    var ownRetired: [RetiredFile: [Knowledge]] = [:]
    var ownKept = Set<Identifier>()
    var ownNotedTails: [Identifier: (offset: Int64, bytes: Int64)] = [:]
    var ownForgotten = Set<Identifier>()
    var ownUpgrades = Set<Upgrade>()
    var ownJournalReads = Set<JournalRead>()
    /// The versions this device's `set content`s replaced, by file (see `Operation.replaced`).
    var ownReplaced: [Identifier: Set<Identifier>] = [:]

    init(keys: KeyTable, device: Identifier) {
        self.keys = keys
        self.device = device
    }

    /// Sizes the tables once for about `items` items and at most `objects` content objects,
    /// rather than growing them step by step as records are read.
    mutating func reserveCapacity(items: Int, objects: Int) {
        self.items.reserveCapacity(items)
        referencedObjects.reserveCapacity(objects)
        objectUses.reserveCapacity(objects)
    }

    // MARK: Applying

    /// Applies one operation under `stamp`, read from a journal of `author`. `key` is the
    /// item key of a content operation, copied into the key table only when its value wins.
    mutating func apply(_ op: Operation, stamp: Stamp, key: ArraySlice<UInt8>?, author: Identifier) throws {
        let own = author == device
        switch op {
        case .createFolder(let id, let place, let created, let modified):
            create(id, Creation(isFolder: true, created: created, modified: modified, stamp: stamp), own: own)
            setPlace(id, place, from: nil, stamp: stamp, initial: true, own: own)
        case .createFile(let id, let place, let created, let modified, let content):
            create(id, Creation(isFolder: false, created: created, modified: modified, stamp: stamp), own: own)
            setPlace(id, place, from: nil, stamp: stamp, initial: true, own: own)
            try setContent(id, content, lineage: .initial(content.objectID), modified: modified, stamp: stamp,
                           initial: true, key: key, own: own)
        case .move(let id, let place, let from):
            setPlace(id, place, from: from, stamp: stamp, initial: false, own: own)
            if conflictCopiesAdded && contentVersions[id] != nil { placeConflictCopies(of: id) }
        case .setContent(let id, let modified, let content, let lineage):
            try noteVersion(of: id, ContentVersions.Version(content: content, lineage: lineage, modified: modified, stamp: stamp, isOwn: own),
                            key: key)
            try setContent(id, content, lineage: lineage, modified: modified, stamp: stamp, initial: false, key: key, own: own)
        case .remove(let removed):
            for item in removed { remove(item.id, Removal(by: stamp, seenPlace: item.seenPlace, isOwn: own)) }
        case .setSetting(let key, let value):
            if let old = settings[key], old.stamp == stamp, old.value == value {
                if own { settings[key]!.isOwn = true }
                return
            }
            if let old = settings[key], !Self.wins(stamp, value ?? "", over: old.stamp, old.value ?? "") { return }
            settings[key] = (value, stamp, own)
        case .setAttachment(let item, let object, let purpose, let bytes):
            if let old = attachments[item]?[purpose], old.stamp == stamp, old.object == object {
                if own { attachments[item]![purpose]!.isOwn = true }
                return
            }
            if let old = attachments[item]?[purpose], !Self.wins(stamp, object.hex, over: old.stamp, old.object.hex) { return }
            attachments[item, default: [:]][purpose] = Attachment(object: object, bytes: bytes, stamp: stamp, isOwn: own)
        case .retire(let file, let knowledge):
            var list = retired[file] ?? []
            if !list.contains(knowledge) { list.append(knowledge) }
            retired[file] = list
            if own && !(ownRetired[file]?.contains(knowledge) ?? false) { ownRetired[file, default: []].append(knowledge) }
        case .deviceName(let name):
            var device = devices[stamp.device] ?? DeviceRecord()
            if device.name == nil || Self.wins(stamp, name, over: device.nameStamp, device.name!) {
                device.name = name
                device.nameStamp = stamp
            }
            devices[stamp.device] = device
            // Conflict copies' names show device names.
            if conflictCopiesAdded { for id in contentVersions.keys { placeConflictCopies(of: id) } }
        case .forgetDevice(let id):
            devices[id, default: DeviceRecord()].forgotten = true
            if own { ownForgotten.insert(id) }
        case .keep(let ids):
            kept.formUnion(ids)
            if own { ownKept.formUnion(ids) }
        case .tailNoted(let journal, let offset, let bytes):
            notedTails[journal, default: []].insert(offset)
            if own { ownNotedTails[journal] = (offset, bytes) }
        case .upgraded(let journal, let keyFile):
            upgrades.insert(Upgrade(journal: journal, keyFile: keyFile))
            if own { ownUpgrades.insert(Upgrade(journal: journal, keyFile: keyFile)) }
        case .replaced(let id, let versions):
            for version in versions { noteReplaced(version, of: id) }
            if own { ownReplaced[id, default: []].formUnion(versions) }
        case .journalRead(let read):
            journalReads[read.journal, default: []].insert(read)
            if own { ownJournalReads.insert(read) }
        case .stamp, .journal:
            break
        }
    }

    /// True when a value with `stamp` replaces one with `old`. Equal stamps (format-1 records,
    /// which share one, a repack, which keeps the stamp of what it re-encrypts, or a forged
    /// journal) are ordered by the values themselves, so that every device keeps the same one.
    static func wins(_ stamp: Stamp, _ value: String, over old: Stamp, _ oldValue: String) -> Bool {
        if stamp != old { return stamp > old }
        return value.utf8.lexicographicallyPrecedes(oldValue.utf8) == false && value != oldValue
    }

    /// True when an item's place or content (`initial` when a `create` gave it) replaces the
    /// one in force: a change (`move`, `set content`) wins over a creation's value whatever
    /// their stamps — only items with derived identifiers (adopted drops) are created twice,
    /// and a change made after one creation must not lose to the other — otherwise `wins`.
    private static func replaces(initial: Bool, _ stamp: Stamp, _ value: @autoclosure () -> String,
                                 over oldInitial: Bool, _ old: Stamp, _ oldValue: @autoclosure () -> String) -> Bool {
        if initial != oldInitial { return !initial }
        return wins(stamp, value(), over: old, oldValue())
    }

    // The registers change in place (`items[id, default:]`): an item record is a few hundred
    // bytes, and copying it out and back was a fifth of an open of 100,000 items.
    mutating func create(_ id: Identifier, _ creation: Creation, own: Bool) {
        var released: ContentInfo?
        func update(_ record: inout ItemRecord) {
            if let existing = record.creation, existing.stamp <= creation.stamp {
                if own && existing.stamp == creation.stamp { record.creationIsOwn = true }
                return
            }
            record.creation = creation
            record.creationIsOwn = own
            // Content that arrived for what turns out to be a folder belongs to nothing.
            if creation.isFolder, let content = record.content {
                record.content = nil
                released = content
            }
        }
        update(&items[id, default: ItemRecord()])
        if let released { releaseContent(released, counted: !tombstones.contains(id)) }
    }

    /// Sets a place register (`initial` for a `create`'s place; see `replaces`).
    mutating func setPlace(_ id: Identifier, _ place: Place, from: Place?, stamp: Stamp, initial: Bool, own: Bool) {
        func update(_ record: inout ItemRecord) {
            if record.place == place && record.placeStamp == stamp {
                if own { record.placeIsOwn = true }
                if !initial { record.placeIsInitial = false }
                return
            }
            if let current = record.place {
                guard Self.replaces(initial: initial, stamp, place.parent.hex + "/" + place.name,
                                    over: record.placeIsInitial, record.placeStamp, current.parent.hex + "/" + current.name) else { return }
            }
            record.place = place
            record.placeStamp = stamp
            record.placeIsInitial = initial
            record.from = from
            record.placeIsOwn = own
        }
        update(&items[id, default: ItemRecord()])
        // This session's move of a removed folder shown again (rule 3) takes it out of the
        // removal, as the next open will.
        if conflictCopiesAdded && removals[id] != nil { settleRemoval(id) }
    }

    /// Sets a content register. A replayed value brings its key (`key`), copied in only when
    /// it wins; a value this device just wrote brings the slot it holds, which the state takes
    /// over, or wipes when the value does not win (`initial` for a `create file`'s content;
    /// see `replaces`).
    mutating func setContent(_ id: Identifier, _ content: ContentInfo, lineage: ContentLineage, modified: Int64,
                             stamp: Stamp, initial: Bool, key: ArraySlice<UInt8>?, own: Bool) throws {
        referencedObjects.insert(content.objectID)
        let keys = self.keys
        var content = content
        /// nil: the value does not win (its slot, if it brought one, is wiped unless the record
        /// holds it); else the value it replaced, if any.
        func update(_ record: inout ItemRecord) throws -> ContentInfo?? {
            if record.isFolder { return .none }
            if let old = record.content {
                if old.objectID == content.objectID && record.contentStamp == stamp {
                    if own { record.contentIsOwn = true }
                    // One value as a `create file` and a `set content` (a compacted repack
                    // writes both): the `set content` names the version, which the object,
                    // a repack's new pack, is not.
                    if !initial {
                        record.contentIsInitial = false
                        record.contentLineage = lineage
                    }
                    return .none
                }
                guard Self.replaces(initial: initial, stamp, content.objectID.hex,
                                    over: record.contentIsInitial, record.contentStamp, old.objectID.hex) else { return .none }
            }
            if let key { content.keySlot = try key.withUnsafeBytes { try keys.add($0) } }
            let replaced = record.content
            record.content = content
            record.contentLineage = lineage
            record.contentModified = modified
            record.contentStamp = stamp
            record.contentIsInitial = initial
            record.contentIsOwn = own
            return .some(replaced)
        }
        guard let replaced = try update(&items[id, default: ItemRecord()]) else {
            if key == nil && content.keySlot >= 0 && items[id]?.content?.keySlot != content.keySlot { keys.remove(content.keySlot) }
            return
        }
        // A removed file's content is kept, with its key, uncounted: a move made meanwhile
        // elsewhere may show the file again (`settleRemovals`).
        let counted = !tombstones.contains(id)
        if let replaced { releaseContent(replaced, counted: counted) }
        if counted { useContent(content) }
    }

    mutating func useContent(_ c: ContentInfo) {
        var use = objectUses[c.objectID] ?? ObjectUse()
        use.items += 1
        use.liveBytes += ContentFormat.objectLength(size: c.size)
        use.length = c.objectLength
        objectUses[c.objectID] = use
    }

    /// Gives up a content value: its key slot is wiped, and its object counts one user less
    /// when it counted (`counted`: the item is not removed).
    private mutating func releaseContent(_ c: ContentInfo, counted: Bool) {
        if c.keySlot >= 0 { keys.remove(c.keySlot) }
        if counted { releaseUse(c) }
    }

    /// Counts one user less of a content value's object.
    mutating func releaseUse(_ c: ContentInfo) {
        guard var use = objectUses[c.objectID], use.items > 1 else {
            objectUses[c.objectID] = nil
            return
        }
        use.items -= 1
        use.liveBytes -= ContentFormat.objectLength(size: c.size)
        objectUses[c.objectID] = use
    }

    /// Notes a record of `device`: its number, what it had read, and when it was written;
    /// and the devices it had read records of, which may have none here yet.
    mutating func noteRecord(device: Identifier, header: RecordHeader) {
        var record = devices[device] ?? DeviceRecord()
        if header.seq >= record.lastSeq {
            record.lastSeq = header.seq
            record.lastKnowledge = header.knowledge
            record.lastWall = max(record.lastWall, header.wall)
        }
        devices[device] = record
        for (other, seq) in header.knowledge.seen where other != device && seq > devices[other]?.seqReadElsewhere ?? 0 {
            devices[other, default: DeviceRecord()].seqReadElsewhere = seq
        }
    }

    // MARK: Reading

    /// The settings that have a value.
    var settingValues: [String: String] {
        settings.compactMapValues { $0.value }
    }

    /// Objects that no item needs any more but that are not yet retired: a removal or a newer
    /// content on another device made them so.
    var unneededObjects: [Identifier] {
        referencedObjects.filter { objectUses[$0] == nil && retired[RetiredFile(kind: .object, id: $0)] == nil }
    }

    /// The devices that hold back deletions: known to have written a record and not
    /// forgotten. One heard of only through another device's records, none of its own here
    /// yet, has acknowledged nothing here: it may have moved what was removed (rule 3).
    var waitingDevices: [Identifier: DeviceRecord] {
        devices.filter { $0.value.hasWritten && !$0.value.forgotten }
    }

    /// True when every device that holds back deletions has read everything `knowledge` covers.
    func everyDeviceHasRead(_ knowledge: Knowledge) -> Bool {
        waitingDevices.allSatisfy { $0.value.lastKnowledge.covers(knowledge) }
    }

    /// True when `file` is retired and no item's content is in it (see `isInUse`).
    func isRetired(_ file: RetiredFile) -> Bool {
        retired[file] != nil && !isInUse(file)
    }

    /// True when `file` is retired, no item's content is in it, and every device has
    /// acknowledged one of its retirements — of an object, all of them: an item a move shows
    /// again after its removal (rule 3) may be removed again, and a move made meanwhile
    /// elsewhere of that removal must have been read before its object goes.
    func mayDelete(_ file: RetiredFile) -> Bool {
        !isInUse(file) && retirements(of: file, areRead: everyDeviceHasRead)
    }

    /// True when `isRead` holds of `file`'s retirements as its deletion needs (see
    /// `mayDelete`): of an object every one, of any other file one.
    func retirements(of file: RetiredFile, areRead isRead: (Knowledge) -> Bool) -> Bool {
        guard let list = retired[file] else { return false }
        return file.kind == .object ? list.allSatisfy(isRead) : list.contains(where: isRead)
    }

    /// True for an object that holds an item's content after the merge, retired or not: a
    /// device that retired it may not have known every record that names it again (two
    /// devices adopting one drop, one of them replacing it at once), and it is needed.
    func isInUse(_ file: RetiredFile) -> Bool {
        file.kind == .object && objectUses[file.id] != nil
    }
}

/// The format-1 journal and key file of an upgraded store.
struct Upgrade: Hashable {
    var journal: Identifier
    var keyFile: Identifier
}

/// How much of a content object is in use: by how many items, and how many of its bytes are
/// their segments (the rest, in a pack, is dead space left by removed items).
struct ObjectUse: Equatable {
    var items = 0
    var liveBytes: Int64 = 0
    /// The object file's length, as its items record it.
    var length: Int64 = 0

    /// Dead bytes: the segments of removed items, in a pack some of whose items remain.
    var deadBytes: Int64 { length - liveBytes }
}

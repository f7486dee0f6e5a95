import NarniaKinds

/// An item's place: the folder holding it and its name there (as recorded; the name shown
/// can differ when two devices gave one name to two items, see `TreeView`).
struct Place: Equatable, Sendable {
    var parent: Identifier
    var name: String
}

/// A file that has been retired and may be deleted once every device has read the record
/// that retired it (docs/FORMAT.md, "Retirement").
struct RetiredFile: Hashable, Sendable {
    enum Kind: UInt8, Sendable {
        /// A content object or pack (format 2, or format 1 after an upgrade).
        case object = 1
        /// A journal replaced by a compaction, or a format-1 journal after an upgrade.
        case journal = 2
        /// A key file replaced by `passwd`, or a format-1 key file after an upgrade.
        case keyFile = 3
    }
    var kind: Kind
    var id: Identifier
}

/// What a device read of one copy of a journal it retired: the bytes of its whole records,
/// by length and BLAKE2b-128 hash (a copy with other records, or more, was not read; see
/// `Vault.holdsRecordsItsRetirementsDidNotRead`).
struct JournalRead: Hashable, Sendable, Comparable {
    var journal: Identifier
    var length: Int64
    var digest: [UInt8]

    static let digestLength = 16

    static func < (a: JournalRead, b: JournalRead) -> Bool {
        if a.journal != b.journal { return a.journal < b.journal }
        if a.length != b.length { return a.length < b.length }
        return a.digest.lexicographicallyPrecedes(b.digest)
    }
}

/// One change to the vault's metadata, as journal records hold it (docs/FORMAT.md,
/// "Operations"). A record holds a list of them, applied together, all under the record's
/// stamp unless a `stamp` operation in it gives another (compacted snapshots do).
enum Operation {
    /// The stamp of the operations that follow in this record.
    case stamp(Stamp)
    /// The first operation of every journal: whose it is, the last record number of that
    /// device before this journal, and whether this journal begins with a snapshot of
    /// everything the device wrote up to then (so that its older journals can go).
    case journal(device: Identifier, previousSeq: UInt64, snapshot: Bool)
    /// A new folder.
    case createFolder(id: Identifier, place: Place, created: Int64, modified: Int64)
    /// A new file with its content.
    case createFile(id: Identifier, place: Place, created: Int64, modified: Int64, content: ContentInfo)
    /// An item's new place; `from` is where the device that moved it saw it, for the case
    /// where concurrent moves would form a cycle (docs/FORMAT.md, "Moves").
    case move(id: Identifier, place: Place, from: Place?)
    /// A file's new content (a repack, `cp -f`), and which version of the file it is.
    case setContent(id: Identifier, modified: Int64, content: ContentInfo, lineage: ContentLineage)
    /// Removes items: the writing device lists every item it knew under what it removed, each
    /// with the stamp of the place it showed the item in (docs/FORMAT.md, "Merging", rule 3).
    case remove([RemovedItem])
    /// Sets a setting, or with nil removes it.
    case setSetting(key: String, value: String?)
    /// Attaches a small blob to an item for one content object, or with nil removes it.
    case setAttachment(item: Identifier, object: Identifier, purpose: String, bytes: [UInt8]?)
    /// A file no longer needed, and what the retiring device had read when it said so.
    case retire(RetiredFile, Knowledge)
    /// The name of the writing device.
    case deviceName(String)
    /// Another device no longer holds back deletions (`devices forget`).
    case forgetDevice(Identifier)
    /// Objects this device wrote that no record names any more, kept because records of this
    /// device may have been lost (a journal found cut short).
    case keep([Identifier])
    /// This device has reported that its journal ends in bytes that are not a whole record.
    case tailNoted(journal: Identifier, offset: Int64, bytes: Int64)
    /// The store was upgraded from format 1, whose journal and key file had these identifiers.
    case upgraded(formerJournal: Identifier, formerKeyFile: Identifier)
    /// Versions of a file that this device's `set content`s replaced: what a compaction keeps
    /// of the records it drops, so that no replaced version becomes a conflict copy again.
    case replaced(id: Identifier, versions: [Identifier])
    /// What a compaction read of a copy of a journal it retires (written beside the `retire`).
    case journalRead(JournalRead)

    enum Tag: UInt8 {
        case stamp = 1, journal, createFolder, createFile, move, setContent, remove, setSetting, removeSetting
        case setAttachment, removeAttachment, retire, deviceName, forgetDevice, keep, tailNoted, upgraded
        /// A `set content` that names its version and what it replaced (`setContent`, tag 6,
        /// is read as a legacy one).
        case setContentVersion, replaced
        /// What a retirement of a journal read of one of its copies.
        case journalRead
        /// A `remove` that gives, with each item, the stamp of the place its device showed
        /// (`remove`, tag 7, is read as one that saw every place).
        case removeSeen
    }
}

/// One item a `remove` lists, and the stamp of the place the removing device showed it in: a
/// `move` stamped later was made by a device that did not know of the removal, and the item
/// stays where that move put it (docs/FORMAT.md, "Merging", rule 3).
struct RemovedItem: Hashable, Sendable {
    var id: Identifier
    var seenPlace: Stamp

    /// What a removal written before places were recorded (tag 7) saw: every place.
    static func everyPlace(_ id: Identifier) -> RemovedItem { RemovedItem(id: id, seenPlace: .latest) }
}

extension Operation {
    /// The content a `createFile` or `setContent` gives its file; nil for every other operation.
    var contentGiven: ContentInfo? {
        switch self {
        case .createFile(_, _, _, _, let content), .setContent(_, _, let content, _): content
        default: nil
        }
    }
}

/// Which version of a file a content value is, and which version it replaced: what tells a
/// change made knowing another from two made at once on two devices, both of which are kept
/// (docs/FORMAT.md, "Concurrent contents").
struct ContentLineage: Equatable, Sendable {
    /// The version: the object identifier of the content as first written (a repack keeps
    /// the version of what it re-encrypts).
    var version: Identifier
    /// The version it was written over (`cp -f`), or nil for a re-encryption of `version`.
    var replaces: Identifier?
    /// A `set content` of a store written before versions were recorded: it replaced every
    /// version stamped before it.
    var isLegacy = false

    /// The lineage of content first written by a `create file` (`objectID` is its version).
    static func initial(_ objectID: Identifier) -> ContentLineage {
        ContentLineage(version: objectID, replaces: nil)
    }
}

/// The head of every record: the device's record number, the clock, and what it had read.
struct RecordHeader {
    var seq: UInt64
    var wall: Int64
    var counter: UInt32
    var knowledge: Knowledge
}

/// Encodes and decodes journal records (docs/FORMAT.md, "Records").
enum RecordCoding {
    static let maximumAttachment = 64 << 10
    static let maximumDeviceName = 64

    static func encode(_ header: RecordHeader, _ operations: [Operation], keys: KeyTable, into w: inout ByteWriter) {
        w.u64(header.seq)
        w.i64(header.wall)
        w.u32(header.counter)
        encode(header.knowledge, into: &w)
        for op in operations { encode(op, keys: keys, into: &w) }
    }

    private static func encode(_ k: Knowledge, into w: inout ByteWriter) {
        w.u16(UInt16(k.seen.count))
        for (device, seq) in k.seen.sorted(by: { $0.key < $1.key }) {
            w.raw(device.bytes)
            w.u64(seq)
        }
    }

    private static func encode(_ place: Place, into w: inout ByteWriter) {
        w.raw(place.parent.bytes)
        w.string(place.name)
    }

    private static func encode(_ c: ContentInfo, modified: Int64, keys: KeyTable, into w: inout ByteWriter) {
        w.raw(c.objectID.bytes)
        keys.withKey(c.keySlot) { w.raw($0) }
        w.u64(c.size)
        w.string(c.mime)
        w.u8(c.kind.rawValue)
        w.u64(c.offset)
        w.u64(UInt64(c.objectLength))
        w.i64(modified)
    }

    private static func encode(_ op: Operation, keys: KeyTable, into w: inout ByteWriter) {
        typealias T = Operation.Tag
        switch op {
        case .stamp(let s):
            w.u8(T.stamp.rawValue); w.i64(s.wall); w.u32(s.counter); w.raw(s.device.bytes)
        case .journal(let device, let previous, let snapshot):
            w.u8(T.journal.rawValue); w.raw(device.bytes); w.u64(previous); w.u8(snapshot ? 1 : 0)
        case .createFolder(let id, let place, let created, let modified):
            w.u8(T.createFolder.rawValue); w.raw(id.bytes); encode(place, into: &w); w.i64(created); w.i64(modified)
        case .createFile(let id, let place, let created, let modified, let content):
            w.u8(T.createFile.rawValue); w.raw(id.bytes); encode(place, into: &w); w.i64(created)
            encode(content, modified: modified, keys: keys, into: &w)
        case .move(let id, let place, let from):
            w.u8(T.move.rawValue); w.raw(id.bytes); encode(place, into: &w)
            if let from { w.u8(1); encode(from, into: &w) } else { w.u8(0) }
        case .setContent(let id, let modified, let content, let lineage) where lineage.isLegacy:
            w.u8(T.setContent.rawValue); w.raw(id.bytes); encode(content, modified: modified, keys: keys, into: &w)
        case .setContent(let id, let modified, let content, let lineage):
            w.u8(T.setContentVersion.rawValue); w.raw(id.bytes); encode(content, modified: modified, keys: keys, into: &w)
            w.raw(lineage.version.bytes)
            if let replaced = lineage.replaces { w.u8(1); w.raw(replaced.bytes) } else { w.u8(0) }
        case .remove(let items):
            // Those that saw every place (an upgrade's, or a compaction's of such a removal)
            // as tag 7, which says so in 16 bytes each; the rest with their stamps.
            let everyPlace = items.filter { $0.seenPlace == .latest }
            let seen = items.filter { $0.seenPlace != .latest }
            if !everyPlace.isEmpty {
                w.u8(T.remove.rawValue); w.u32(UInt32(everyPlace.count)); for item in everyPlace { w.raw(item.id.bytes) }
            }
            if !seen.isEmpty {
                w.u8(T.removeSeen.rawValue); w.u32(UInt32(seen.count))
                for item in seen { w.raw(item.id.bytes); w.i64(item.seenPlace.wall); w.u32(item.seenPlace.counter); w.raw(item.seenPlace.device.bytes) }
            }
        case .setSetting(let key, let value?):
            w.u8(T.setSetting.rawValue); w.string(key); w.string(value)
        case .setSetting(let key, nil):
            w.u8(T.removeSetting.rawValue); w.string(key)
        case .setAttachment(let item, let object, let purpose, let bytes?):
            w.u8(T.setAttachment.rawValue); w.raw(item.bytes); w.raw(object.bytes); w.string(purpose)
            w.u32(UInt32(bytes.count)); w.raw(bytes)
        case .setAttachment(let item, let object, let purpose, nil):
            w.u8(T.removeAttachment.rawValue); w.raw(item.bytes); w.raw(object.bytes); w.string(purpose)
        case .retire(let file, let knowledge):
            w.u8(T.retire.rawValue); w.u8(file.kind.rawValue); w.raw(file.id.bytes); encode(knowledge, into: &w)
        case .deviceName(let name):
            w.u8(T.deviceName.rawValue); w.string(name)
        case .forgetDevice(let device):
            w.u8(T.forgetDevice.rawValue); w.raw(device.bytes)
        case .keep(let ids):
            w.u8(T.keep.rawValue); w.u32(UInt32(ids.count)); for id in ids { w.raw(id.bytes) }
        case .tailNoted(let journal, let offset, let bytes):
            w.u8(T.tailNoted.rawValue); w.raw(journal.bytes); w.i64(offset); w.i64(bytes)
        case .upgraded(let journal, let keyFile):
            w.u8(T.upgraded.rawValue); w.raw(journal.bytes); w.raw(keyFile.bytes)
        case .replaced(let id, let versions):
            w.u8(T.replaced.rawValue); w.raw(id.bytes); w.u32(UInt32(versions.count)); for v in versions { w.raw(v.bytes) }
        case .journalRead(let read):
            w.u8(T.journalRead.rawValue); w.raw(read.journal.bytes); w.i64(read.length); w.raw(read.digest)
        }
    }

    /// Decodes a record: its header, handed to `begin`, then every operation, handed to
    /// `apply` with the key bytes of a content operation (a view into the payload, which the
    /// caller wipes). Checks every rule a well-formed record keeps.
    /// - Throws: `MalformedRecord` saying what is wrong.
    static func decode(_ payload: [UInt8], begin: (RecordHeader) throws -> Void,
                       apply: (Operation, ArraySlice<UInt8>?) throws -> Void) throws {
        var r = ByteReader(payload)
        let header = RecordHeader(seq: try r.u64(), wall: try r.i64(), counter: try r.u32(), knowledge: try knowledge(&r))
        guard header.seq > 0 else { throw MalformedRecord(why: "has record number 0") }
        try begin(header)
        while !r.isAtEnd {
            guard let tag = Operation.Tag(rawValue: try r.u8()) else { throw MalformedRecord(why: "holds an unknown operation") }
            switch tag {
            case .stamp:
                try apply(.stamp(Stamp(wall: try r.i64(), counter: try r.u32(), device: try identifier(&r))), nil)
            case .journal:
                let device = try identifier(&r)
                let previous = try r.u64()
                let snapshot = try r.u8()
                guard snapshot <= 1 else { throw MalformedRecord() }
                try apply(.journal(device: device, previousSeq: previous, snapshot: snapshot == 1), nil)
            case .createFolder:
                let id = try item(&r)
                let place = try self.place(&r, of: id)
                try apply(.createFolder(id: id, place: place, created: try r.i64(), modified: try r.i64()), nil)
            case .createFile:
                let id = try item(&r)
                let place = try self.place(&r, of: id)
                let created = try r.i64()
                let (content, modified, key) = try self.content(&r)
                try apply(.createFile(id: id, place: place, created: created, modified: modified, content: content), key)
            case .move:
                let id = try item(&r)
                let place = try self.place(&r, of: id)
                let hasFrom = try r.u8()
                guard hasFrom <= 1 else { throw MalformedRecord() }
                let from = hasFrom == 1 ? try self.place(&r, of: id) : nil
                try apply(.move(id: id, place: place, from: from), nil)
            case .setContent:
                let id = try item(&r)
                let (content, modified, key) = try self.content(&r)
                let lineage = ContentLineage(version: content.objectID, replaces: nil, isLegacy: true)
                try apply(.setContent(id: id, modified: modified, content: content, lineage: lineage), key)
            case .setContentVersion:
                let id = try item(&r)
                let (content, modified, key) = try self.content(&r)
                let version = try identifier(&r)
                let hasReplaced = try r.u8()
                guard hasReplaced <= 1 else { throw MalformedRecord() }
                let replaced = hasReplaced == 1 ? try identifier(&r) : nil
                guard replaced != version else { throw MalformedRecord(why: "gives a version that replaces itself") }
                let lineage = ContentLineage(version: version, replaces: replaced)
                try apply(.setContent(id: id, modified: modified, content: content, lineage: lineage), key)
            case .remove:
                try apply(.remove(try identifiers(&r).map { id in
                    guard id != .root else { throw MalformedRecord(why: "removes the root") }
                    return .everyPlace(id)
                }), nil)
            case .removeSeen:
                let count = Int(try r.u32())
                guard count <= (r.bytes.count - r.offset) / 44 else { throw MalformedRecord() }
                try apply(.remove(try (0..<count).map { _ in
                    let id = try identifier(&r)
                    guard id != .root else { throw MalformedRecord(why: "removes the root") }
                    return RemovedItem(id: id, seenPlace: Stamp(wall: try r.i64(), counter: try r.u32(), device: try identifier(&r)))
                }), nil)
            case .setSetting:
                let key = try r.string()
                try apply(.setSetting(key: key, value: try r.string()), nil)
            case .removeSetting:
                try apply(.setSetting(key: try r.string(), value: nil), nil)
            case .setAttachment, .removeAttachment:
                let id = try item(&r)
                let object = try identifier(&r)
                let purpose = try r.string()
                var bytes: [UInt8]?
                if tag == .setAttachment {
                    let count = Int(try r.u32())
                    guard count <= maximumAttachment else { throw MalformedRecord(why: "holds an attachment over 64 KiB") }
                    bytes = Array(try r.take(count))
                }
                try apply(.setAttachment(item: id, object: object, purpose: purpose, bytes: bytes), nil)
            case .retire:
                guard let kind = RetiredFile.Kind(rawValue: try r.u8()) else { throw MalformedRecord(why: "retires an unknown kind of file") }
                let id = try identifier(&r)
                try apply(.retire(RetiredFile(kind: kind, id: id), try knowledge(&r)), nil)
            case .deviceName:
                let name = try r.string()
                guard !name.isEmpty, name.utf8.count <= maximumDeviceName, name == ItemName.nfc(name),
                      !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                    throw MalformedRecord(why: "names a device badly")
                }
                try apply(.deviceName(name), nil)
            case .forgetDevice:
                try apply(.forgetDevice(try identifier(&r)), nil)
            case .keep:
                try apply(.keep(try identifiers(&r)), nil)
            case .tailNoted:
                try apply(.tailNoted(journal: try identifier(&r), offset: try r.i64(), bytes: try r.i64()), nil)
            case .upgraded:
                try apply(.upgraded(formerJournal: try identifier(&r), formerKeyFile: try identifier(&r)), nil)
            case .replaced:
                try apply(.replaced(id: try item(&r), versions: try identifiers(&r)), nil)
            case .journalRead:
                let journal = try identifier(&r)
                let length = try r.i64()
                guard length > 0 else { throw MalformedRecord(why: "says a journal was read to a length below one record") }
                try apply(.journalRead(JournalRead(journal: journal, length: length, digest: Array(try r.take(JournalRead.digestLength)))), nil)
            }
        }
    }

    private static func identifier(_ r: inout ByteReader) throws -> Identifier { Identifier(try r.take(16)) }

    private static func identifiers(_ r: inout ByteReader) throws -> [Identifier] {
        let count = Int(try r.u32())
        guard count <= (r.bytes.count - r.offset) / 16 else { throw MalformedRecord() }
        return try (0..<count).map { _ in try identifier(&r) }
    }

    private static func item(_ r: inout ByteReader) throws -> Identifier {
        let id = try identifier(&r)
        guard id != .root else { throw MalformedRecord(why: "changes the root as an item") }
        return id
    }

    private static func knowledge(_ r: inout ByteReader) throws -> Knowledge {
        var k = Knowledge()
        for _ in 0..<Int(try r.u16()) { k[try identifier(&r)] = try r.u64() }
        return k
    }

    /// A place whose name is one legal component (NFC, no `/`, not `.` or `..`, ≤ 255 bytes)
    /// and whose folder is not the item itself.
    private static func place(_ r: inout ByteReader, of id: Identifier) throws -> Place {
        let parent = try identifier(&r)
        let name = try r.string()
        // Compared as bytes: Swift's == would take a decomposed name for its NFC form.
        guard let valid = try? ItemName.validated(name), valid.utf8.elementsEqual(name.utf8) else {
            throw MalformedRecord(why: "names an item \(String(reflecting: name)), which is not a legal name")
        }
        guard parent != id else { throw MalformedRecord(why: "puts an item inside itself") }
        return Place(parent: parent, name: name)
    }

    private static func content(_ r: inout ByteReader) throws -> (ContentInfo, Int64, ArraySlice<UInt8>) {
        let object = try identifier(&r)
        let key = try r.take(KeyTable.keyLength)
        let size = try r.u64()
        let mime = try r.string()
        guard let kind = ItemKind(rawValue: try r.u8()), kind != .folder else { throw MalformedRecord(why: "gives a file an unknown kind") }
        let offset = try r.u64()
        let length = try r.u64()
        let modified = try r.i64()
        guard size < UInt64(Int64.max) / 2, length <= UInt64(Int64.max), offset <= length,
              UInt64(ContentFormat.objectLength(size: size)) <= length - offset else {
            throw MalformedRecord(why: "gives a content's place in its object badly")
        }
        let info = ContentInfo(objectID: object, keySlot: -1, size: size, mime: mime, kind: kind,
                               offset: offset, objectLength: Int64(length))
        return (info, modified, key)
    }
}

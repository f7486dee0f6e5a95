import NarniaKinds
import NarniaCrypto
import NarniaSystem

/// Upgrading a format-1 store at unlock (docs/FORMAT.md, "Upgrading from format 1").
///
/// Format 1 kept one journal that every writer appended to, named by a 114-byte key file.
/// The upgrade reads it (never changing it), writes what it holds into this device's first
/// format-2 journal as a snapshot under one stamp older than any real one, writes a 98-byte
/// key file for the same master key and passphrase, and then retires the format-1 key file
/// and journal. Each step is durable before the next, and rerunning after a crash at any
/// point finishes the job. Content objects stay where they are (`<2 hex>/<30 hex>`), which a
/// format-1 program would not take for its own leftovers; it would refuse the store anyway,
/// finding a key file of the wrong length.
extension Vault {
    func upgrade(formerJournal: Identifier, formerKeyFile: Identifier, kek: Secret, salt: [UInt8],
                 parameters: KDFParameters) throws {
        if !state.upgrades.contains(where: { $0.journal == formerJournal }) {
            var former = try readFormerJournal(formerJournal)
            try former.loadKeys(keys)   // the merged state takes the slots over
            for ops in former.snapshot(formerJournal: formerJournal, formerKeyFile: formerKeyFile) {
                try commit(ops, view: .none)
            }
            rebuildView()
        }
        let id = Identifier.random()
        try writeKeyFile(id: id, kek: kek, salt: salt, parameters: parameters)
        keyFileID = id
        // `tidy` then retires the format-1 key file and journal (`upgradeRetirements`).
    }

    /// `retire` operations for the format-1 key file and journal of every upgrade whose files
    /// are not retired yet. Only ever after the new key file exists: `tidy` runs after it.
    var upgradeRetirements: [Operation] {
        let known = knowledgeOfNextRecord
        return state.upgrades.sorted { $0.journal < $1.journal }.flatMap { upgrade in
            [RetiredFile(kind: .journal, id: upgrade.journal), RetiredFile(kind: .keyFile, id: upgrade.keyFile)]
                .filter { state.retired[$0] == nil }
                .map { Operation.retire($0, known) }
        }
    }

    /// Reads the format-1 journal and the copies sync engines made of it, read-only: a cut
    /// tail is read up to its last whole record.
    private func readFormerJournal(_ id: Identifier) throws -> FormerState {
        var former = FormerState()
        guard let entry = inventory.files[id], entry.legacy else {
            throw MetadataError.damaged("the format-1 journal is missing")
        }
        for path in entry.all {
            let fd = try JournalReader.openStoreFile(layout.root + "/" + path)
            var copy = FormerState()
            _ = try JournalReader.read(fd, id: id, keys: journalKeys, name: "the format-1 journal") { _, payload, _ in
                try FormerRecord.decode(payload) { try copy.apply($0) }
            }
            former.absorb(copy)
        }
        return former
    }
}

/// A format-1 journal's state: "put" replaced an item whole; "remove" took one item.
struct FormerState {
    var items: [Identifier: (item: Item, key: [UInt8]?)] = [:]
    var removed = Set<Identifier>()
    var settings: [String: String] = [:]
    var attachments: [Identifier: [String: [UInt8]]] = [:]

    mutating func apply(_ op: FormerRecord.Operation) throws {
        switch op {
        case .put(let item, let key):
            if let old = items[item.id], old.item.content?.objectID != item.content?.objectID { attachments[item.id] = nil }
            items[item.id] = (item, key)
            removed.remove(item.id)
        case .remove(let id):
            items[id] = nil
            attachments[id] = nil
            removed.insert(id)
        case .setting(let key, let value):
            settings[key] = value
        case .attachment(let id, let purpose, let bytes):
            guard items[id] != nil else { return }
            attachments[id, default: [:]][purpose] = bytes
            if attachments[id]?.isEmpty == true { attachments[id] = nil }
        }
    }

    /// Adds what another copy of the journal holds (a sync engine's conflict copy).
    mutating func absorb(_ other: FormerState) {
        for (id, entry) in other.items where items[id] == nil && !removed.contains(id) { items[id] = entry }
        removed.formUnion(other.removed)
        for id in removed { items[id] = nil }
        settings.merge(other.settings) { mine, _ in mine }
        attachments.merge(other.attachments) { mine, _ in mine }
    }

    /// The snapshot, as records of at most about 16 MiB: every item as created, the removed
    /// ones as removed, settings and attachments, all under one stamp older than any real
    /// one, and last the note of the upgrade. Call `loadKeys` first.
    func snapshot(formerJournal: Identifier, formerKeyFile: Identifier) -> [[Operation]] {
        let stamp = Operation.stamp(Stamp.legacy(0, device: formerJournal))
        var records: [[Operation]] = []
        var current: [Operation] = [stamp]
        var bytes = 0
        func add(_ op: Operation, size: Int) {
            current.append(op)
            bytes += size
            if bytes > 16 << 20 { records.append(current); current = [stamp]; bytes = 0 }
        }
        for (id, entry) in items.sorted(by: { $0.key < $1.key }) {
            let item = entry.item
            let place = Place(parent: item.parent, name: item.name)
            if let content = item.content {
                add(.createFile(id: id, place: place, created: item.created, modified: item.modified, content: content),
                    size: 160 + item.name.utf8.count + content.mime.utf8.count)
            } else {
                add(.createFolder(id: id, place: place, created: item.created, modified: item.modified), size: 64 + item.name.utf8.count)
            }
            for (purpose, blob) in attachments[id] ?? [:] {
                add(.setAttachment(item: id, object: item.content?.objectID ?? id, purpose: purpose, bytes: blob), size: 64 + blob.count)
            }
        }
        if !removed.isEmpty { add(.remove(removed.sorted().map(RemovedItem.everyPlace)), size: 16 * removed.count) }
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) { add(.setSetting(key: key, value: value), size: 8 + key.utf8.count + value.utf8.count) }
        current.append(.upgraded(formerJournal: formerJournal, formerKeyFile: formerKeyFile))
        records.append(current)
        return records
    }

    /// Puts every item's key in the key table (for encoding the snapshot).
    mutating func loadKeys(_ keys: KeyTable) throws {
        for (id, entry) in items {
            guard var content = entry.item.content, let key = entry.key else { continue }
            content.keySlot = try key.withUnsafeBytes { try keys.add($0) }
            var item = entry.item
            item.content = content
            items[id] = (item, nil)
        }
    }
}

/// The operations of a format-1 journal record (its docs/FORMAT.md, "The journal", tags 1–8).
enum FormerRecord {
    enum Operation {
        case put(Item, key: [UInt8]?)
        case remove(Identifier)
        case setting(String, String?)
        case attachment(Identifier, String, [UInt8]?)
    }

    static func decode(_ payload: [UInt8], apply: (Operation) throws -> Void) throws {
        var r = ByteReader(payload)
        while !r.isAtEnd {
            let tag = try r.u8()
            switch tag {
            case 1, 2, 8:
                let id = Identifier(try r.take(16))
                let parent = Identifier(try r.take(16))
                let name = try r.string()
                guard let valid = try? ItemName.validated(name), valid.utf8.elementsEqual(name.utf8), id != .root, parent != id else {
                    throw MalformedRecord(why: "names an item badly")
                }
                var item = Item(id: id, parent: parent, name: name, created: try r.i64(), modified: try r.i64(), content: nil)
                var key: [UInt8]?
                if tag != 1 {
                    let object = Identifier(try r.take(16))
                    key = Array(try r.take(KeyTable.keyLength))
                    let size = try r.u64()
                    let mime = try r.string()
                    let kind = ItemKind(rawValue: try r.u8()).flatMap { $0 == .folder ? nil : $0 } ?? .other
                    item.content = ContentInfo(objectID: object, keySlot: -1, size: size, mime: mime, kind: kind)
                    if tag == 8 {
                        item.content!.offset = try r.u64()
                        let length = try r.u64()
                        guard length <= UInt64(Int64.max) else { throw MalformedRecord() }
                        item.content!.objectLength = Int64(length)
                    }
                }
                try apply(.put(item, key: key))
            case 3:
                try apply(.remove(Identifier(try r.take(16))))
            case 4:
                let key = try r.string()
                try apply(.setting(key, try r.string()))
            case 5:
                try apply(.setting(try r.string(), nil))
            case 6:
                let id = Identifier(try r.take(16))
                let purpose = try r.string()
                let count = Int(try r.u32())
                try apply(.attachment(id, purpose, Array(try r.take(count))))
            case 7:
                let id = Identifier(try r.take(16))
                try apply(.attachment(id, try r.string(), nil))
            default:
                throw MalformedRecord(why: "holds an unknown format-1 operation")
            }
        }
    }
}

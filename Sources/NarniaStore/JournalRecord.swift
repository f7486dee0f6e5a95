/// One change to the vault's metadata. A journal record holds a list of them that is applied
/// atomically (a transaction). The encoding is documented in docs/FORMAT.md, "Operations".
enum MetadataOperation {
    /// Creates or replaces an item. For files the item key (from the vault's key table)
    /// is written with it.
    case putItem(Item)
    /// Removes an item (its content object is deleted after the commit).
    case removeItem(Identifier)
    /// Sets a setting.
    case setSetting(key: String, value: String)
    /// Removes a setting.
    case removeSetting(key: String)
    /// Attaches a small blob (a thumbnail, say) to an item under `purpose`; nil removes it.
    case setAttachment(item: Identifier, purpose: String, bytes: [UInt8]?)

    enum Tag: UInt8 {
        case putFolder = 1
        case putFile = 2
        case removeItem = 3
        case setSetting = 4
        case removeSetting = 5
        case setAttachment = 6
        case removeAttachment = 7
        /// A file whose content is one segment of a pack: `putFile` plus offset and pack length.
        case putPackedFile = 8
    }
}

/// Encodes and decodes the operations of one journal record.
enum RecordCoding {
    static func encode(_ operations: [MetadataOperation], keys: KeyTable, into w: inout ByteWriter) {
        for op in operations {
            switch op {
            case .putItem(let item):
                if let c = item.content {
                    w.u8((c.isPacked ? MetadataOperation.Tag.putPackedFile : .putFile).rawValue)
                    encodeCommon(item, into: &w)
                    w.raw(c.objectID.bytes)
                    keys.withKey(c.keySlot) { w.raw($0) }
                    w.u64(c.size)
                    w.string(c.mime)
                    w.u8(c.kind.rawValue)
                    if c.isPacked {
                        w.u64(c.offset)
                        w.u64(UInt64(c.objectLength))
                    }
                } else {
                    w.u8(MetadataOperation.Tag.putFolder.rawValue)
                    encodeCommon(item, into: &w)
                }
            case .removeItem(let id):
                w.u8(MetadataOperation.Tag.removeItem.rawValue)
                w.raw(id.bytes)
            case .setSetting(let key, let value):
                w.u8(MetadataOperation.Tag.setSetting.rawValue)
                w.string(key)
                w.string(value)
            case .removeSetting(let key):
                w.u8(MetadataOperation.Tag.removeSetting.rawValue)
                w.string(key)
            case .setAttachment(let item, let purpose, let bytes?):
                w.u8(MetadataOperation.Tag.setAttachment.rawValue)
                w.raw(item.bytes)
                w.string(purpose)
                w.u32(UInt32(bytes.count))
                w.raw(bytes)
            case .setAttachment(let item, let purpose, nil):
                w.u8(MetadataOperation.Tag.removeAttachment.rawValue)
                w.raw(item.bytes)
                w.string(purpose)
            }
        }
    }

    private static func encodeCommon(_ item: Item, into w: inout ByteWriter) {
        w.raw(item.id.bytes)
        w.raw(item.parent.bytes)
        w.string(item.name)
        w.i64(item.created)
        w.i64(item.modified)
    }

    /// Decodes every operation of a payload and hands each to `apply`. The key bytes passed
    /// with `putFile` live in the payload, which the caller wipes afterwards.
    static func decode(_ payload: [UInt8], apply: (DecodedOperation) throws -> Void) throws {
        var r = ByteReader(payload)
        while !r.isAtEnd {
            guard let tag = MetadataOperation.Tag(rawValue: try r.u8()) else { throw MalformedRecord() }
            switch tag {
            case .putFolder, .putFile, .putPackedFile:
                let id = Identifier(try r.take(16))
                let parent = Identifier(try r.take(16))
                let name = try r.string()
                let created = try r.i64()
                let modified = try r.i64()
                var item = Item(id: id, parent: parent, name: name, created: created, modified: modified, content: nil)
                if tag != .putFolder {
                    let object = Identifier(try r.take(16))
                    let key = try r.take(KeyTable.keyLength)
                    let size = try r.u64()
                    let mime = try r.string()
                    let kind = ItemKind(rawValue: try r.u8()) ?? .other
                    item.content = ContentInfo(objectID: object, keySlot: -1, size: size, mime: mime, kind: kind)
                    if tag == .putPackedFile {
                        item.content!.offset = try r.u64()
                        let length = try r.u64()
                        guard length <= UInt64(Int64.max) else { throw MalformedRecord() }
                        item.content!.objectLength = Int64(length)
                    }
                    try apply(.putItem(item, key: key))
                } else {
                    try apply(.putItem(item, key: nil))
                }
            case .removeItem:
                try apply(.removeItem(Identifier(try r.take(16))))
            case .setSetting:
                let key = try r.string()
                try apply(.setSetting(key: key, value: try r.string()))
            case .removeSetting:
                try apply(.removeSetting(key: try r.string()))
            case .setAttachment:
                let id = Identifier(try r.take(16))
                let purpose = try r.string()
                let count = Int(try r.u32())
                try apply(.setAttachment(item: id, purpose: purpose, bytes: Array(try r.take(count))))
            case .removeAttachment:
                let id = Identifier(try r.take(16))
                try apply(.setAttachment(item: id, purpose: try r.string(), bytes: nil))
            }
        }
    }

    /// An operation as read back; `key` is a view into the payload being decoded.
    enum DecodedOperation {
        case putItem(Item, key: ArraySlice<UInt8>?)
        case removeItem(Identifier)
        case setSetting(key: String, value: String)
        case removeSetting(key: String)
        case setAttachment(item: Identifier, purpose: String, bytes: [UInt8]?)
    }
}

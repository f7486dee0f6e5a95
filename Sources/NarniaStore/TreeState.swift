/// The folder tree as a pair of indexes, and how journal operations change it.
struct TreeState {
    var items: [Identifier: Item] = [:]
    var children: [Identifier: [String: Identifier]] = [Identifier.root: [:]]
    var settings: [String: String] = [:]
    /// Small blobs per item and purpose (thumbnails); dropped with the item or its content.
    var attachments: [Identifier: [String: [UInt8]]] = [:]
    /// Who uses each content object (a pack serves several); absent means no item does.
    var objectUses: [Identifier: ObjectUse] = [:]

    /// Applies a replayed operation, storing a file's key in `keys`.
    mutating func apply(_ op: RecordCoding.DecodedOperation, keys: KeyTable) throws {
        switch op {
        case .putItem(var item, let key):
            if let key, item.content != nil {
                if let old = items[item.id]?.content { keys.remove(old.keySlot) }
                item.content!.keySlot = try key.withUnsafeBytes { try keys.add($0) }
            }
            put(item)
        case .removeItem(let id):
            if let c = items[id]?.content { keys.remove(c.keySlot) }
            remove(id)
        case .setSetting(let k, let v): settings[k] = v
        case .removeSetting(let k): settings[k] = nil
        case .setAttachment(let id, let purpose, let bytes): attach(bytes, purpose: purpose, to: id)
        }
    }

    /// Applies an operation the running vault just committed (keys are already in the table).
    mutating func apply(_ op: MetadataOperation) {
        switch op {
        case .putItem(let item): put(item)
        case .removeItem(let id): remove(id)
        case .setSetting(let k, let v): settings[k] = v
        case .removeSetting(let k): settings[k] = nil
        case .setAttachment(let id, let purpose, let bytes): attach(bytes, purpose: purpose, to: id)
        }
    }

    private mutating func attach(_ bytes: [UInt8]?, purpose: String, to id: Identifier) {
        guard items[id] != nil else { return }
        attachments[id, default: [:]][purpose] = bytes
        if attachments[id]?.isEmpty == true { attachments[id] = nil }
    }

    private mutating func put(_ item: Item) {
        if let old = items[item.id] {
            children[old.parent]?[old.name] = nil
            if old.content?.objectID != item.content?.objectID { attachments[item.id] = nil }
            if let content = old.content { release(content) }
        }
        if let c = item.content {
            var use = objectUses[c.objectID] ?? ObjectUse()
            use.items += 1
            use.liveBytes += ContentFormat.objectLength(size: c.size)
            use.length = c.objectLength
            objectUses[c.objectID] = use
        }
        items[item.id] = item
        children[item.parent, default: [:]][item.name] = item.id
        if item.isFolder && children[item.id] == nil { children[item.id] = [:] }
    }

    private mutating func remove(_ id: Identifier) {
        guard let old = items.removeValue(forKey: id) else { return }
        if let content = old.content { release(content) }
        children[old.parent]?[old.name] = nil
        attachments[id] = nil
        if old.isFolder { children[id] = nil }
    }

    private mutating func release(_ content: ContentInfo) {
        guard var use = objectUses[content.objectID], use.items > 1 else {
            objectUses[content.objectID] = nil
            return
        }
        use.items -= 1
        use.liveBytes -= ContentFormat.objectLength(size: content.size)
        objectUses[content.objectID] = use
    }
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

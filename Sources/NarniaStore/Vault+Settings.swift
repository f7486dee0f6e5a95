import NarniaCrypto

extension Vault {
    /// Settings (`set KEY VALUE`), encrypted in the journal like everything else.
    public var settings: [String: String] { state.settingValues }

    /// Sets (or with nil, removes) a setting, durably. The latest change on any device wins.
    public func setSetting(_ key: String, _ value: String?) throws {
        try commit([.setSetting(key: key, value: value)], view: .none)
    }

    // MARK: Attachments

    /// The most bytes one attachment may hold.
    public static let maximumAttachment = RecordCoding.maximumAttachment

    /// The blob attached to item `id` under `purpose` for its current content (a cached
    /// thumbnail, say), if any.
    public func attachment(_ purpose: String, of id: Identifier) -> [UInt8]? {
        guard let attachment = state.attachments[id]?[purpose], attachment.object == attachedObject(of: id) else { return nil }
        return attachment.bytes
    }

    /// What an attachment of `id` is bound to: its content object, or for a folder itself.
    private func attachedObject(of id: Identifier) -> Identifier? {
        guard let item = view.items[id] else { return nil }
        return item.content?.objectID ?? id
    }

    /// Attaches blobs to items, or with nil removes them, in one durable transaction. They are
    /// encrypted in the journal like all metadata, bound to the item's current content, and
    /// dropped with the item. Blobs over `maximumAttachment` bytes are refused.
    public func setAttachments(_ changes: [(id: Identifier, purpose: String, bytes: [UInt8]?)]) throws {
        for c in changes where (c.bytes?.count ?? 0) > Self.maximumAttachment {
            throw VaultError.refused("an attachment can hold at most \(Self.maximumAttachment) bytes")
        }
        let ops: [Operation] = changes.compactMap { c in
            attachedObject(of: c.id).map { .setAttachment(item: c.id, object: $0, purpose: c.purpose, bytes: c.bytes) }
        }
        guard !ops.isEmpty else { return }
        try commit(ops, view: .none)
    }

    // MARK: The passphrase

    /// Wraps the master key under a new passphrase in a new key file with a fresh name and
    /// salt, and retires every other key file present: once every device has heard, they are
    /// deleted, and one that comes back is never used. Content is not re-encrypted.
    ///
    /// The retirement is recorded first and the new key file written after, so that a crash
    /// in between leaves exactly one passphrase that opens the vault: the old one (a retired
    /// key file opens while no live one is present) until the new key file exists, then only
    /// the new one.
    public func changePassphrase(to passphrase: Secret, parameters: KDFParameters) throws {
        let salt = randomBytes(PassphraseKey.saltLength)
        let kek = try PassphraseKey.derive(passphrase: passphrase, salt: salt, parameters: parameters)
        let id = Identifier.random()
        let known = knowledgeOfNextRecord
        // Every key file present, those already retired too: a device that hears of this
        // record but not of the earlier one must not take an older key file for a live one.
        let others = Array(inventory.keyFiles.keys)
        try commit(others.sorted().map { .retire(RetiredFile(kind: .keyFile, id: $0), known) }, view: .none)
        try writeKeyFile(id: id, kek: kek, salt: salt, parameters: parameters)
        keyFileID = id
        kdfParameters = parameters
        deleteRetiredFiles(others.map { RetiredFile(kind: .keyFile, id: $0) })
    }
}

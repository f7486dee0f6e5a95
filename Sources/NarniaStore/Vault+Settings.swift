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

    /// Refuses a change of passphrase or master key in a session that found another device's
    /// `passwd --rotate` and cannot read past it (review DH-2: `passwd` then said "passphrase
    /// changed" for a passphrase that opened only the replaced master key, and `--rotate`
    /// began a second rotation at once, after which neither passphrase opened the vault in a
    /// script). Unless `rotating`, also one that found the rotation's key file alone, ahead of
    /// its records: a key file not retired that holds more master keys than this session knows
    /// (review FH-1: a plain `passwd` retired it with the others present, and the rotation's
    /// passphrase then opened the vault only as during a sync under way, warning of a key file
    /// "still arriving"). A `passwd --rotate` goes on: two rotations at once, which merge.
    public func refuseKeyChangeAfterRotationElsewhere(rotating: Bool) throws {
        if rotationElsewhereArrived {
            throw VaultError.refused("another device changed the vault's master key ('passwd --rotate'), which this session cannot read; nothing was changed: open the vault again, with the passphrase chosen then, and change it there")
        }
        let newer = rotating ? nil : inventory.keyFiles.keys.sorted().first { unretiredKeyFile($0, in: inventory, holdingAtLeast: masters.all.count + 1) != nil }
        if let newer {
            throw VaultError.refused("the key file \(newer.hex) holds a newer master key than this session knows: another device's 'passwd --rotate', whose records have not arrived yet; nothing was changed: open the vault with the passphrase chosen then, and change it there (should no device have run it, that file is not the vault's: 'passwd --rotate' retires it)")
        }
    }

    /// Wraps the master key under a new passphrase in a new key file with a fresh name and
    /// salt, and retires every other key file present: once every device has heard, they are
    /// deleted, and one that comes back is never used. Content is not re-encrypted.
    ///
    /// The retirement is recorded first and the new key file written after, so that a crash
    /// in between leaves exactly one passphrase that opens the vault: the old one (a retired
    /// key file opens while no live one is present) until the new key file exists, then only
    /// the new one.
    public func changePassphrase(to passphrase: Secret, parameters: KDFParameters) throws {
        try refuseKeyChangeAfterRotationElsewhere(rotating: false)
        let salt = randomBytes(PassphraseKey.saltLength)
        let kek = try PassphraseKey.derive(passphrase: passphrase, salt: salt, parameters: parameters)
        try replaceKeyFiles(keyFilesToRetire, kek: kek, salt: salt, parameters: parameters)
    }

    /// The key files a `passwd` retires: every one present, those already retired too (a
    /// device that hears of this record but not of an earlier one must not take an older key
    /// file for a live one), and the key files another device's record retired that are gone
    /// from here. Those were deleted once every device this one knew of had read of them; a
    /// device it did not know yet may still hold one, not retired as far as it knows, and
    /// take it for the live key file until that other record arrives: its passphrase opened
    /// that copy, and a newer one, retired here, was refused (test_model seed 621). Each is
    /// retired once by this device (its snapshots carry its own retirements).
    private var keyFilesToRetire: [Identifier] {
        let settings = state.settingValues
        let gone = state.retired.keys.filter { file in
            file.kind == .keyFile && state.ownRetired[file] == nil && inventory.keyFiles[file.id] == nil
                && settings[Self.inboxKeySettingPrefix + file.id.hex] == nil
        }
        return inventory.keyFiles.keys.sorted() + gone.map(\.id).sorted()
    }

    /// Retires `others` (`keyFilesToRetire`, or the key files a merge replaces), then writes
    /// the master keys under `kek` in a new key file.
    private func replaceKeyFiles(_ others: [Identifier], kek: Secret, salt: [UInt8], parameters: KDFParameters) throws {
        let id = Identifier.random()
        let known = knowledgeOfNextRecord
        try commit(others.sorted().map { .retire(RetiredFile(kind: .keyFile, id: $0), known) }, view: .none)
        let notDurable = try writingKeyFile(again: "passwd") { try writeKeyFile(id: id, kek: kek, salt: salt, parameters: parameters) }
        keyFileID = id
        kdfParameters = parameters
        if let notDurable { throw notDurable }
        deleteRetiredFiles(others.map { RetiredFile(kind: .keyFile, id: $0) })
        dateRetiredKeyFilesBack()
    }

    /// Runs `write`, which writes a new key file; returns, rather than throws, the error to
    /// report when the file was written but its name may not be durable: the new passphrase
    /// is in force from then on (the retired key files are kept, and open again only should
    /// the name be lost), which the error says, so that no one throws it away; running
    /// `command` again finishes the change (review AI). A key file not written leaves the old
    /// passphrase in force, which the error says (review DH-3: a full disk said only "look at
    /// what is there, then do the rest").
    private func writingKeyFile(again command: String, _ write: () throws -> Void) throws -> VaultError? {
        do {
            try write()
            return nil
        } catch let e as WholeFile.NameNotDurable {
            return .refused("\(e): the new passphrase opens the vault now; run '\(command)' again with it as the current one")
        } catch {
            throw VaultError.refused("the new key file could not be written (\(error)): the passphrase was not changed, and the old one still opens the vault; run '\(command)' again once that is mended")
        }
    }

    /// True when `passphrase` opens the key file this session uses (`passwd` asks for it
    /// first on a terminal). Costs one key derivation.
    public func opens(withPassphrase passphrase: Secret) throws -> Bool {
        guard let path = inventory.keyFiles[keyFileID]?.main else { return false }
        let bytes = try JournalReader.openStoreFile(layout.root + "/" + path).readToEnd(limit: 4096)
        guard let (salt, parameters, _) = KeyFile.header(of: bytes), parameters.isAcceptable else { return false }
        let kek = try PassphraseKey.derive(passphrase: passphrase, salt: salt, parameters: parameters)
        guard let contents = try? KeyFile.open(bytes, kek: kek, id: keyFileID) else { return false }
        return contents.masters.current.isEqual(to: masters.current)
    }

    /// `passwd --rotate`: a new master key under a new passphrase (docs/FORMAT.md, "Rotating
    /// the master key"). Every key file present is retired and the new one, holding the new key
    /// and those it replaced, is written; then a new inbox key pair is made (its secret half
    /// under the new key), or the old key file would read every file dropped afterwards
    /// (review AH); last, this device's records are written anew, as a snapshot under the new
    /// key, and its old journals retired. Nothing written afterwards opens with an old key file.
    /// Content keeps its per-item keys.
    ///
    /// A crash before the snapshot leaves the new key file, which reads everything: the next
    /// open writes the snapshot (see `resealOwnRecordsIfNeeded`).
    public func rotateMasterKey(passphrase: Secret, parameters: KDFParameters) throws {
        try refuseKeyChangeAfterRotationElsewhere(rotating: true)
        let salt = randomBytes(PassphraseKey.saltLength)
        let kek = try PassphraseKey.derive(passphrase: passphrase, salt: salt, parameters: parameters)
        var rotated = masters
        try rotated.rotate(to: try Secret.random(count: 32))
        let fresh = try JournalKeys(masterKey: rotated.current)
        let others = keyFilesToRetire
        try retireReplacedKeyFiles(others)
        let previous = masters
        masters = rotated
        let id = Identifier.random()
        let notDurable: VaultError?
        do {
            notDurable = try writingKeyFile(again: "passwd --rotate") { try writeKeyFile(id: id, kek: kek, salt: salt, parameters: parameters) }
        } catch {
            masters = previous
            throw error
        }
        keyFileID = id
        kdfParameters = parameters
        journalKeyChain.insert(fresh, at: 0)
        for id in journals.keys { journals[id]!.underCurrentMaster = false }
        // The next record starts a journal under the new key: appended to the one open, it
        // would be sealed under the old key, which old key files read.
        journal = nil
        if let notDurable { throw notDurable }
        deleteRetiredFiles(others.map { RetiredFile(kind: .keyFile, id: $0) })
        dateRetiredKeyFilesBack()
        // From here only the new passphrase opens the vault: a failure must say so, or the
        // user keeps the old one, believing nothing changed (review CH-3: a full disk said
        // "run the command again", which the old passphrase could no longer do).
        // The new inbox pair first, in a journal under the new key, then the snapshot: the
        // snapshot writes the old pairs again under the new key (older drops still open), so
        // a kill between the two left the old pair in force, read by an old key file, and no
        // open could tell (review DH-1).
        do {
            _ = try rotateInboxKey()
            try compact()
        } catch {
            throw VaultError.refused("the passphrase was changed, and the new one opens the vault now (the old one no longer does), but writing this device's records under the new master key failed (\(error)); the next open with the new passphrase tries again")
        }
    }

    /// A rotation's first step: retires the key files it replaces, in a record under the
    /// master key they hold, so that their passphrases read that a later rotation replaced
    /// them (`Vault.open`: told to use the passphrase chosen then, not asked for another).
    /// The record starts a journal of its own, which the snapshot written under the new key
    /// retires at once, like every older journal of this device, but which is sent all the
    /// same (`isRotationsRetirementOfKeyFiles`); appended to a journal never sent, it reached
    /// no one (review EM-1), and sending that journal would have shown its other records,
    /// written before the rotation, to the replaced key.
    private func retireReplacedKeyFiles(_ keyFiles: [Identifier]) throws {
        let known = knowledgeOfNextRecord
        let appendingTo = journal
        journal = nil
        do {
            try commit(keyFiles.map { .retire(RetiredFile(kind: .keyFile, id: $0), known) }, view: .none)
        } catch {
            if journal == nil { journal = appendingTo }
            throw error
        }
    }

    /// True for the journal a rotation wrote its retirement of the replaced key files in
    /// (`retireReplacedKeyFiles`): sealed under a master key a rotation replaced, one record,
    /// which retired a key file. Retired by the rotation's snapshot, it is copied where it
    /// lacks all the same, until every device has read that snapshot: only there do the
    /// replaced passphrases read the retirement (review EM-1).
    func isRotationsRetirementOfKeyFiles(_ id: Identifier) -> Bool {
        guard let file = journals[id], !file.underCurrentMaster, file.records == 1, let path = inventory.files[id]?.main else { return false }
        return retiresKeyFile(journalAt: layout.root + "/" + path, id: id)
    }

    /// After a rotation made elsewhere (or one cut short here), this device's journals are
    /// under a master key that was replaced: its records are written anew under the current
    /// one and the old journals retired, so that old key files read nothing it writes later.
    /// Journals it retired already (they stay until every device has read the snapshot) need
    /// nothing more: compacting at every open until then would only rewrite the vault's
    /// metadata each time.
    ///
    /// Should that fail (a full disk), the vault opens all the same, saying so: every record
    /// still reads, and the next open tries again (review CH-3: with the disk full, the new
    /// passphrase opened nothing, naming a store folder).
    func resealOwnRecordsIfNeeded() {
        guard journals.values.contains(where: { file in
            file.device == device && !file.underCurrentMaster && state.retired[RetiredFile(kind: .journal, id: file.id)] == nil
        }) else { return }
        do { try compact() } catch {
            warnings.append("this device's records could not be written anew under the vault's new master key (\(error)); they still read, and the next open tries again")
        }
    }

    /// After rotations on two devices at once, opened with one passphrase: one key file, under
    /// that passphrase, now holds the keys of all, and `merged` are retired.
    func mergeKeyFiles(_ merged: [Identifier], kek: Secret, salt: [UInt8], parameters: KDFParameters) throws {
        try replaceKeyFiles(merged, kek: kek, salt: salt, parameters: parameters)
        warnings.append("this vault's master key was rotated on two devices at once; one key file now holds both keys")
    }
}

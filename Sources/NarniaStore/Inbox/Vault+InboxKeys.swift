import NarniaCrypto
import NarniaSystem

/// An inbox key pair as the metadata holds it: the secret half, the public half the vault
/// expects its public file to hold, and that file's name and time.
struct InboxKeyPair {
    let file: Identifier
    let secret: Secret
    let publicKey: [UInt8]
    let created: Int64
}

/// The inbox public key this vault hands droppers, as `inbox-key` shows it.
public struct InboxKey: Sendable {
    /// The X25519 public key drops are sealed to.
    public let publicKey: [UInt8]
    /// When the pair was made (nanoseconds since the epoch).
    public let created: Int64

    /// What a person compares between the vault (`inbox-key`) and a dropper (`drop
    /// --show-key`): 32 hex digits of BLAKE2b over a label and the key, in groups of four.
    public var fingerprint: String {
        let digest = genericHash(Array("narnia inbox key".utf8) + publicKey, length: 16)
        let hex = Hex.string(digest)
        return stride(from: 0, to: hex.count, by: 4).map { i in
            String(hex.dropFirst(i).prefix(4))
        }.joined(separator: " ")
    }

    /// The key in hex.
    public var hex: String { Hex.string(publicKey) }
}

/// The inbox's keys (docs/FORMAT.md, "The inbox"). Each pair is a setting named
/// `inbox-key.<public file id>` whose value is the secret and public halves in hex and the time,
/// encrypted in the journals like every setting; the public half is also a 72-byte file at the
/// top of the store, which droppers read.
extension Vault {
    static let inboxKeySettingPrefix = "inbox-key."

    /// Every inbox key pair the metadata holds, the one in force first: those whose public
    /// file `inbox-key --rotate` retired come after the others whatever their clocks said, then
    /// newest first (a pair made while a clock ran ahead must not outlive its rotation).
    var inboxKeyPairs: [InboxKeyPair] {
        state.settingValues.compactMap { key, value -> InboxKeyPair? in
            guard key.hasPrefix(Self.inboxKeySettingPrefix),
                  let file = Identifier(hex: key.dropFirst(Self.inboxKeySettingPrefix.count)) else { return nil }
            let parts = value.split(separator: " ")
            guard parts.count == 3, let created = Int64(parts[2]), let publicKey = Hex.bytes(parts[1]), publicKey.count == 32,
                  let secret = try? Hex.secret(parts[0]), secret.count == 32 else { return nil }
            return InboxKeyPair(file: file, secret: secret, publicKey: publicKey, created: created)
        }.sorted { (isLive($0), $0.created, $0.file) > (isLive($1), $1.created, $1.file) }
    }

    private func isLive(_ pair: InboxKeyPair) -> Int {
        state.retired[RetiredFile(kind: .keyFile, id: pair.file)] == nil ? 1 : 0
    }

    /// The inbox key droppers use now, made first when the vault has none.
    public func inboxKey() throws -> InboxKey {
        try ensureInboxKey()
        let pair = inboxKeyPairs[0]
        return InboxKey(publicKey: pair.publicKey, created: pair.created)
    }

    /// The file key of an age file sent to this vault's inbox (`inbox-key`'s `age1…`
    /// recipient, any inbox key made so far), or nil when none of its recipients is one.
    /// - Throws: `AgeError.headerAuthentication` when its header was altered.
    public func ageFileKey(_ header: AgeHeader) throws -> Secret? {
        for pair in inboxKeyPairs {
            if let key = try header.fileKey(identity: pair.secret, recipient: pair.publicKey) { return key }
        }
        return nil
    }

    /// `inbox-key --rotate`: a new pair for droppers to use from now on. The old public files
    /// are retired; the old secret halves stay, so drops made with them are still adopted.
    public func rotateInboxKey() throws -> InboxKey {
        let old = Array(inventory.inboxKeys.keys)
        let pair = try makeInboxKeyPair(retiring: old)
        return InboxKey(publicKey: pair.publicKey, created: pair.created)
    }

    /// Makes an inbox key pair when the vault has none (at `init`; at the first unlock of an
    /// older vault, by a device that writes anyway), and writes the public file of the newest
    /// pair when it is missing (a crash between the record and the file, or a file deleted).
    func ensureInboxKey() throws {
        guard let newest = inboxKeyPairs.first else {
            _ = try makeInboxKeyPair(retiring: [])
            return
        }
        if inventory.inboxKeys[newest.file] == nil && state.retired[RetiredFile(kind: .keyFile, id: newest.file)] == nil {
            try writeInboxPublicFile(newest)
        }
    }

    /// A new pair: the record holding it is durable before its public file exists, so no drop
    /// is ever sealed to a key the vault could lose; and the old public files are retired (and
    /// so deleted) only once the new one is in place, so that a dropper always finds one
    /// (review BK-3: between the two, or after a kill there, `drop` failed, blaming an old
    /// version of narnia). A kill before the retirement leaves an old public file, unused
    /// (droppers take the newest) until the next rotation retires it.
    private func makeInboxKeyPair(retiring old: [Identifier]) throws -> InboxKeyPair {
        let (secret, publicKey) = try X25519.generateKeyPair()
        let pair = InboxKeyPair(file: .random(), secret: secret, publicKey: publicKey, created: SystemClock.nowNanoseconds())
        let value = secret.withUnsafeBytes { Hex.string($0) } + " " + Hex.string(publicKey) + " " + String(pair.created)
        try commit([.setSetting(key: Self.inboxKeySettingPrefix + pair.file.hex, value: value)], view: .none)
        try writeInboxPublicFile(pair)
        if !old.isEmpty {
            let known = knowledgeOfNextRecord
            try commit(old.sorted().map { .retire(RetiredFile(kind: .keyFile, id: $0), known) }, view: .none)
        }
        return pair
    }

    private func writeInboxPublicFile(_ pair: InboxKeyPair) throws {
        var file = InboxPublicKeyFile(id: pair.file, publicKey: pair.publicKey, created: pair.created, authenticator: [])
        file.authenticator = tags.withKeyOpen { tags.inboxKeyAuthenticator(file: pair.file, body: file.body) }
        try WholeFile.write(file.encoded, named: pair.file.hex, in: lockHandle, path: layout.keyFilePath(named: pair.file))
        inventory.inboxKeys[pair.file] = StoreInventory.Entry(main: pair.file.hex)
    }

    /// At open: the inbox key pair in force, when only records under a master key a rotation
    /// replaced hold it, is one an old key file reads — one a device recorded before it heard
    /// of the rotation, or the rotation's own step 4 cut short — and every file dropped to it
    /// would open to whoever holds one (reviews CP-4, CQ-6). Droppers get a new pair, as at the
    /// rotation itself, from the first device that opens with the new key.
    func replaceInboxKeyAnOldKeyFileReads() {
        guard isKnownDevice, let pair = inboxKeyPairs.first else { return }
        let setting = Self.inboxKeySettingPrefix + pair.file.hex
        guard inboxPairsUnderReplacedKeys.contains(setting), !inboxPairsUnderCurrentKey.contains(setting) else { return }
        do {
            _ = try rotateInboxKey()
            // No record under the new key: the rotation's own are still arriving, or it wrote
            // none (review FI-4: the warning named only causes that did not apply then).
            let why = recordsReadUnderCurrentKey
                ? "a device made it before it heard of the rotation"
                : "the rotation's records, with the new one it made, have not arrived here yet, or it was cut short before it made a new one"
            warnings.append("the inbox key in force was recorded under the master key 'passwd --rotate' replaced (\(why)), which an old key file reads: droppers now get a new one; check the fingerprint 'inbox-key' shows where you drop from")
        } catch {
            warnings.append("the inbox key in force was recorded under the master key 'passwd --rotate' replaced, which an old key file reads, and could not be replaced (\(error)): run 'inbox-key --rotate'")
        }
    }

    /// At open: an inbox public file the vault did not make (its authenticator fails) was put
    /// there by someone who can write the store, to read what is dropped later. It is deleted
    /// (it provably is not the vault's), and the user is told. Returns the paths deleted,
    /// relative to the store (`sync` deletes them on the remote too).
    ///
    /// One made with a key file (its authenticator holds) that no pair known here names is
    /// deleted too, after a rotation — unless this session is behind one: while a live key file
    /// holds more master keys than it knows, the file is most likely that rotation's, whose
    /// record is still arriving, and it is left, with a warning at every open that says what to
    /// do should no device have rotated (a planted key file beside it would otherwise keep a
    /// planted inbox key for good, without a word). Deleted, a sync engine carried the deletion
    /// to every device, the one that rotated too, and droppers sealed to the inbox key the
    /// rotation replaced, which an old key file reads, until a device with the new key opened
    /// (review FM-1).
    @discardableResult
    public func checkInboxPublicFiles() -> [String] {
        guard !inventory.inboxKeys.isEmpty else { return [] }
        var deleted: [String] = []
        let pairs = inboxKeyPairs
        let newerKeyFile = inventory.keyFiles.keys.sorted().first { liveKeyFile($0, holdsMoreThan: masters.all.count) }
        for (id, entry) in inventory.inboxKeys {
            for path in entry.all {
                guard let bytes = try? JournalReader.openStoreFile(layout.root + "/" + path).readToEnd(limit: 4096),
                      let file = InboxPublicKeyFile.parse(id: id, bytes: bytes) else { continue }
                let expected = tags.withKeyOpen { tags.inboxKeyAuthenticator(file: id, body: file.body) }
                let pair = pairs.first { $0.file == id }
                let which = path == entry.main ? "the inbox public key file \(id.hex.prefix(8))" : "a copy of the inbox public key file \(id.hex.prefix(8)) (\(path))"
                if file.authenticator == expected && pair == nil, let newerKeyFile {
                    warnings.append("\(which) is named by no inbox key pair this session knows, and the key file \(newerKeyFile.hex.prefix(8)) has the length of one holding a newer master key than this passphrase opens: most likely another device's 'passwd --rotate', whose records have not arrived yet; both are left for it. Should no device of yours have run it, both were put there by someone who can write the store, and files dropped now are theirs to read: run 'passwd --rotate', which retires that key file, and the next open deletes the inbox file")
                    continue
                } else if file.authenticator == expected && pair == nil && journalKeyChain.count > 1 {
                    // Its authenticator is made with the names subkey, which every key file
                    // holds, old ones too (review CM-1: after a rotation, an old key file's
                    // holder planted one, and drops were sealed to them).
                    warnings.append("\(which) is named by no inbox key pair of this vault: someone who holds an old key file of it (from before 'passwd --rotate') and can write the store added it, to read files dropped later — or a device of yours rotated the inbox key and its record has not arrived yet (that device writes the file again); it was deleted. Check the fingerprint 'inbox-key' shows where you drop from")
                } else if file.authenticator != expected || (pair != nil && pair!.publicKey != file.publicKey) {
                    warnings.append("\(which) was not made by this vault: someone who can write the store replaced or added it, to read files dropped later — or a second vault was made in this folder ('init' on two copies of a synced folder); it was deleted. Files dropped with it cannot be adopted here; check the fingerprint 'inbox-key' shows where you drop from")
                } else {
                    continue
                }
                try? FileSystem.unlink(layout.root + "/" + path, missingOK: true)
                deleted.append(path)
                if inventory.inboxKeys[id]?.forget(path) == true { inventory.inboxKeys[id] = nil }
            }
        }
        return deleted
    }
}

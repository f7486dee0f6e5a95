import NarniaCrypto
import NarniaSystem

/// Adds files to a vault without its passphrase (`narnia drop`; docs/FORMAT.md, "The inbox"):
/// each is sealed to the inbox public key, under a random content key, as a new file with a
/// random name. It takes no lock and writes only new files, so it works while a session holds
/// the vault; the next unlock, on any device, adopts what it dropped.
public final class InboxDropper {
    let layout: StoreLayout
    private let recipient: InboxPublicKeyFile
    private let pipeline = ChunkPipeline()
    /// Shared by the files of this dropper: the folders a folder drop makes are keyed by it.
    private let batch = Identifier.random()

    /// The longest relative path a drop can carry, in bytes.
    public static let maximumPathBytes = DropFormat.maximumPathBytes

    /// The store folder drops go into.
    public var store: String { layout.root }

    /// The key drops are sealed to (to compare with what `inbox-key` shows in the vault).
    public var recipientKey: InboxKey { InboxKey(publicKey: recipient.publicKey, created: recipient.created) }

    /// Prepares to drop into the store at `root`, which must be a private store folder of this
    /// user with an inbox public key file.
    /// - Throws: `VaultError.noVault`, `.unsafeDirectory`, `.refused` (no inbox yet),
    ///   `StoreFileError`, `SystemError`.
    public init(store root: String) throws {
        Sodium.ensureInitialized()
        guard let st = try FileSystem.statIfExists(root), st.isDirectory else { throw VaultError.noVault(root) }
        _ = try Vault.openStoreDirectory(root)
        let top = try StoreInventory.scan(root, readingShards: false)
        guard !top.keyFiles.isEmpty || !top.inboxKeys.isEmpty else { throw VaultError.noVault(root) }
        guard let newest = InboxPublicKeyFile.newest(try InboxPublicKeyFile.all(inStore: root, names: top.inboxKeys)) else {
            throw VaultError.refused("this vault has no inbox key yet: unlock it once with this version of narnia, which makes one")
        }
        layout = StoreLayout(root: root)
        recipient = newest
    }

    /// Seals what `source` yields as a drop whose path in the inbox folder is `path` (a name,
    /// or names joined by `/`), durably and whole or not at all (`WholeFile`). Returns the
    /// content size.
    /// - Throws: `VaultError.refused` for a path too long, `Cancelled`, `SystemError`.
    @discardableResult
    public func drop(path: String, modified: Int64, source: (UnsafeMutableRawPointer, Int) throws -> Int,
                     observer: TransferObserver = .none) throws -> UInt64 {
        guard path.utf8.count <= DropFormat.maximumPathBytes else {
            throw VaultError.refused("the path is longer than a drop can carry (\(DropFormat.maximumPathBytes) bytes)")
        }
        let id = Identifier.random()
        try layout.ensureShard(for: id)
        let shard = try FileDescriptor.open(layout.shardDirectory(for: id), .readOnly, options: .directory)
        var size: UInt64 = 0
        try WholeFile.write(named: id.hex, in: shard, path: layout.objectPath(for: id)) { fd in
            let contentKey = try Secret.random(count: SymmetricKeyLength)
            try fd.seek(to: Int64(DropFormat.headerLength))
            let writer = ContentWriter(layout: layout, pipeline: pipeline)
            size = try contentKey.withUnsafeBytes { key in
                try writer.append(to: fd, at: Int64(DropFormat.headerLength), objectID: id, key: key, source: source,
                                  inspect: { _ in }, observer: observer)
            }
            let header = DropHeader(size: size, modified: modified, dropped: SystemClock.nowNanoseconds(), batch: batch, path: path)
            let sealed = try sealHeader(header, contentKey: contentKey, drop: id)
            try sealed.withUnsafeBytes { try fd.pwriteAll($0.baseAddress!, count: $0.count, offset: 0) }
        }
        return size
    }

    /// The first 4,096 bytes of a drop: the ephemeral public key (its top bit random, as X25519
    /// ignores it, so that drops do not stand out), the nonce and the sealed header.
    func sealHeader(_ header: DropHeader, contentKey: Secret, drop: Identifier) throws -> [UInt8] {
        let (ephemeralSecret, publicKey) = try X25519.generateKeyPair()
        var ephemeral = publicKey
        ephemeral[31] |= randomBytes(1)[0] & 0x80
        let recipientKey = recipient.publicKey
        guard let key = try X25519.agreedKey(secret: ephemeralSecret, publicKey: recipientKey, context: DropFormat.keyContext,
                                             binding: DropFormat.binding(ephemeral: ephemeral, recipient: recipientKey)) else {
            throw VaultError.refused("the inbox public key is not a usable X25519 key (the file was altered)")
        }
        var plaintext = contentKey.withUnsafeBytes { header.encoded(contentKey: $0) }
        defer { plaintext.withUnsafeMutableBytes { wipe($0) } }
        let nonce = randomBytes(AEAD.nonceLength)
        let ad = DropFormat.additionalData(drop: drop, ephemeral: ephemeral, recipient: recipientKey)
        return ephemeral + nonce + AEAD.seal(plaintext, additionalData: ad, nonce: nonce, key: key)
    }
}

import NarniaSystem
import Glibc
import NarniaCrypto

/// An open, unlocked vault: the store directory, its keys and its folder tree.
///
/// Holds an exclusive `flock` on the store directory for its whole life. Every metadata change
/// is one authenticated journal record made durable before the call returns; the in-memory
/// tree changes only after that. Not thread-safe: one shell drives it.
public final class Vault {
    /// The store directory.
    public let directory: String
    /// The Argon2id limits the passphrase is wrapped with.
    public private(set) var kdfParameters: KDFParameters

    let layout: StoreLayout
    let lockHandle: FileDescriptor
    private var keyFileID: Identifier
    private var kek: Secret
    private var salt: [UInt8]
    private let masterKey: Secret
    private let journalBodyKey: Secret
    private let journalHeaderKey: Secret
    var journal: Journal
    let keys: KeyTable
    let pipeline = ChunkPipeline()
    var knownShards = Set<String>()

    var items: [Identifier: Item] = [:]
    var childrenByFolder: [Identifier: [String: Identifier]] = [Identifier.root: [:]]
    /// Settings (`set KEY VALUE`), encrypted in the journal like everything else.
    public private(set) var settings: [String: String] = [:]
    var attachments: [Identifier: [String: [UInt8]]] = [:]
    /// Who uses each content object; see `release(_:)`.
    var objectUses: [Identifier: ObjectUse] = [:]
    /// Counts committed changes, so that views derived from the tree know when to recompute.
    public private(set) var generation = 0
    private var bytesAtLastCompaction: Int64 = 0

    // MARK: Creating and opening

    /// Creates a new vault in `directory` (which must be missing or empty) and opens it.
    /// - Throws: `VaultError.alreadyExists`, `SystemError`, `CryptoError`.
    public static func create(at directory: String, passphrase: Secret, parameters: KDFParameters) throws -> Vault {
        Sodium.ensureInitialized()
        if try checkCanCreate(at: directory) {
            try FileSystem.makeDirectories(directory, mode: 0o700)
            try? FileSystem.syncDirectory(FileSystem.parentDirectory(of: directory))
        }
        let lock = try FileDescriptor.open(directory, .readOnly, options: .directory)
        guard try lock.tryLockExclusive() else { throw VaultError.locked(directory) }
        let layout = StoreLayout(root: directory)
        let salt = randomBytes(PassphraseKey.saltLength)
        let kek = try PassphraseKey.derive(passphrase: passphrase, salt: salt, parameters: parameters)
        let master = try Secret.random(count: 32)
        let journalID = Identifier.random()
        var shards = Set<String>()
        let bodyKey = try master.deriveSubkey(.journalBody)
        let headerKey = try master.deriveSubkey(.journalHeader)
        let keyFileID = Identifier.random()
        let journal: Journal
        do {
            try layout.ensureShard(for: journalID, known: &shards)
            journal = try Journal.create(id: journalID, path: layout.objectPath(for: journalID), bodyKey: bodyKey, headerKey: headerKey)
            try journal.syncFile()
            try FileSystem.syncDirectory(layout.shardDirectory(for: journalID))
            let contents = KeyFile.Contents(masterKey: master, journalID: journalID, chunkSizeLog2: ContentFormat.chunkSizeLog2)
            try writeKeyFile(KeyFile.seal(contents, kek: kek, salt: salt, parameters: parameters), layout: layout, id: keyFileID)
        } catch {
            // Leave the folder empty again (a full disk, say), so that `init` can simply be rerun.
            try? FileSystem.unlink(layout.keyFilePath(named: keyFileID) + ".new", missingOK: true)
            try? FileSystem.unlink(layout.objectPath(for: journalID), missingOK: true)
            try? FileSystem.removeDirectory(layout.shardDirectory(for: journalID))
            throw error
        }
        let vault = try Vault(directory: directory, lock: lock, keyFileID: keyFileID, kek: kek, salt: salt,
                              parameters: parameters, master: master, journal: journal, bodyKey: bodyKey, headerKey: headerKey)
        vault.knownShards = shards
        return vault
    }

    /// Checks that a vault can be created in `directory`: it must be missing or an empty folder.
    /// Returns true when the folder must be created.
    /// - Throws: `VaultError.alreadyExists` when it holds a store, `.notEmpty` for anything else.
    @discardableResult
    public static func checkCanCreate(at directory: String) throws -> Bool {
        guard let st = try FileSystem.statIfExists(directory) else { return true }
        guard st.isDirectory else { throw VaultError.notEmpty(directory) }
        let names = try FileSystem.listDirectoryCountingUndecodable(directory)
        guard names.names.isEmpty && names.undecodable.isEmpty else {
            let hasKeyFile = names.names.contains { $0.utf8.count == 32 && Identifier(hex: Substring($0)) != nil }
            throw hasKeyFile ? VaultError.alreadyExists(directory) : VaultError.notEmpty(directory)
        }
        return false
    }

    /// Opens the vault in `directory` with `passphrase`: takes the lock, unwraps the master
    /// key, replays the journal (dropping a torn tail) and removes leftovers of interrupted writes.
    /// - Throws: `VaultError.noVault`, `.wrongPassphrase`, `.locked`, `.damagedKeyFile`,
    ///   `MetadataError.damaged`, `SystemError`.
    public static func open(at directory: String, passphrase: Secret) throws -> Vault {
        Sodium.ensureInitialized()
        guard let st = try FileSystem.statIfExists(directory), st.isDirectory else { throw VaultError.noVault(directory) }
        let lock = try FileDescriptor.open(directory, .readOnly, options: .directory)
        guard try lock.tryLockExclusive() else { throw VaultError.locked(directory) }
        let layout = StoreLayout(root: directory)
        let keyFiles = try FileSystem.listDirectory(directory).compactMap { name -> Identifier? in
            guard name.utf8.count == 32, let id = Identifier(hex: Substring(name)),
                  (try? FileSystem.lstatIfExists(directory + "/" + name))??.isRegularFile == true else { return nil }
            return id
        }
        guard !keyFiles.isEmpty else { throw VaultError.noVault(directory) }
        guard keyFiles.count == 1 else { throw VaultError.damagedKeyFile("more than one key file") }
        let keyFileID = keyFiles[0]
        let bytes = try FileDescriptor.open(layout.keyFilePath(named: keyFileID), .readOnly).readToEnd(limit: 4096)
        guard let (salt, parameters) = KeyFile.header(of: bytes) else { throw VaultError.wrongPassphrase }
        guard parameters.isAcceptable else { throw VaultError.wrongPassphrase }
        let kek = try PassphraseKey.derive(passphrase: passphrase, salt: salt, parameters: parameters)
        let contents: KeyFile.Contents
        do {
            contents = try KeyFile.open(bytes, kek: kek)
        } catch CryptoError.authenticationFailed {
            throw VaultError.wrongPassphrase
        }
        guard contents.chunkSizeLog2 == ContentFormat.chunkSizeLog2 else { throw VaultError.damagedKeyFile("unknown chunk size") }
        let bodyKey = try contents.masterKey.deriveSubkey(.journalBody)
        let headerKey = try contents.masterKey.deriveSubkey(.journalHeader)
        let keys = try KeyTable()
        var state = TreeState()
        let journal = try Journal.open(id: contents.journalID, path: layout.objectPath(for: contents.journalID),
                                       bodyKey: bodyKey, headerKey: headerKey) { payload in
            try RecordCoding.decode(payload) { op in try state.apply(op, keys: keys) }
        }
        let vault = try Vault(directory: directory, lock: lock, keyFileID: keyFileID, kek: kek, salt: salt,
                              parameters: parameters, master: contents.masterKey, journal: journal,
                              bodyKey: bodyKey, headerKey: headerKey, keys: keys)
        vault.items = state.items
        vault.childrenByFolder = state.children
        vault.settings = state.settings
        vault.attachments = state.attachments
        vault.objectUses = state.objectUses
        vault.bytesAtLastCompaction = journal.endOffset
        try vault.removeLeftovers()
        return vault
    }

    private init(directory: String, lock: FileDescriptor, keyFileID: Identifier, kek: Secret, salt: [UInt8],
                 parameters: KDFParameters, master: Secret, journal: Journal, bodyKey: Secret, headerKey: Secret,
                 keys: KeyTable? = nil) throws {
        self.directory = directory
        self.layout = StoreLayout(root: directory)
        self.lockHandle = lock
        self.keyFileID = keyFileID
        self.kek = kek
        self.salt = salt
        self.kdfParameters = parameters
        self.masterKey = master
        self.journal = journal
        self.journalBodyKey = bodyKey
        self.journalHeaderKey = headerKey
        self.keys = try keys ?? KeyTable()
    }

    /// Deletes what an interrupted write left: objects no item refers to, old journals,
    /// a half-written key file.
    private func removeLeftovers() throws {
        for id in try layout.scanObjects() where id != journal.id && objectUses[id] == nil {
            try FileSystem.unlink(layout.objectPath(for: id), missingOK: true)
        }
        for name in try FileSystem.listDirectory(directory) where name.hasSuffix(".new") {
            try FileSystem.unlink(directory + "/" + name, missingOK: true)
        }
    }

    // MARK: Committing

    /// Called after a commit that removed or replaced items using `objects`: deletes those no
    /// item uses any more (a pack goes with the last of its items), and rewrites packs that have
    /// become mostly dead space. (A crash before this leaves orphans that the next open removes,
    /// or a sparse pack that the next removal from it rewrites.)
    func release(_ objects: [Identifier]) {
        let objects = Set(objects)  // the items of a pack name it once each
        deleteUnusedObjects(objects)
        let sparse = objects.filter { isWorthRepacking($0) }
        // Housekeeping, like compaction: the removal is committed, and a repack that fails (a
        // full disk) leaves the pack as it was, so it must not fail the command.
        if !sparse.isEmpty { try? repack(sparse) }
    }

    /// Deletes those of `objects` that no item uses.
    func deleteUnusedObjects<Objects: Sequence<Identifier>>(_ objects: Objects) {
        for object in objects where objectUses[object] == nil {
            try? FileSystem.unlink(layout.objectPath(for: object), missingOK: true)
        }
    }

    /// Appends one transaction to the journal, durably, then applies it to the tree.
    func commit(_ operations: [MetadataOperation]) throws {
        guard !operations.isEmpty else { return }
        var w = ByteWriter(capacity: 256 * operations.count)
        RecordCoding.encode(operations, keys: keys, into: &w)
        defer { w.wipe() }
        try journal.append(w.bytes)
        generation += 1
        // Keys of removed items, and of items whose content was rewritten under a new key.
        let freedSlots = operations.compactMap { op -> Int? in
            switch op {
            case .removeItem(let id): return items[id]?.content?.keySlot
            case .putItem(let item):
                guard let old = items[item.id]?.content?.keySlot, old != item.content?.keySlot else { return nil }
                return old
            default: return nil
            }
        }
        var state = TreeState(items: items, children: childrenByFolder, settings: settings, attachments: attachments,
                              objectUses: objectUses)
        items = [:]; childrenByFolder = [:]; attachments = [:]; objectUses = [:]
        for op in operations { state.apply(op) }
        items = state.items
        childrenByFolder = state.children
        settings = state.settings
        attachments = state.attachments
        objectUses = state.objectUses
        for slot in freedSlots { keys.remove(slot) }
        // The change is committed; compaction is housekeeping, and a failed one (a full disk)
        // leaves the current journal valid, so it must not fail the command.
        try? compactIfWorthIt()
    }

    /// Rewrites the journal as a snapshot when it has grown to several times the live
    /// metadata, so replay at open stays proportional to the vault, not to its history.
    private func compactIfWorthIt() throws {
        let growth = journal.endOffset - bytesAtLastCompaction
        let estimate = Int64(items.count) * 160 + 4096
        guard journal.endOffset > 8 << 20, growth > 2 * estimate else { return }
        // Only now, when compaction is likely, count attachments (a walk over them).
        guard growth > 2 * (estimate + Int64(attachedBytes)) else { return }
        try compact()
    }

    /// Writes a new journal holding the current state, points the key file at it, and removes
    /// the old one. A crash at any point leaves either the old or the new journal in force.
    func compact() throws {
        let newID = Identifier.random()
        try layout.ensureShard(for: newID, known: &knownShards)
        let fresh = try Journal.create(id: newID, path: layout.objectPath(for: newID), bodyKey: journalBodyKey, headerKey: journalHeaderKey)
        var batch: [MetadataOperation] = []
        var batchBytes = 0
        func flush() throws {
            guard !batch.isEmpty else { return }
            var w = ByteWriter(capacity: batchBytes + 64)
            RecordCoding.encode(batch, keys: keys, into: &w)
            defer { w.wipe() }
            try fresh.append(w.bytes)
            batch.removeAll(keepingCapacity: true)
            batchBytes = 0
        }
        for (k, v) in settings { batch.append(.setSetting(key: k, value: v)) }
        // Parents before children, so a replay never sees an orphan.
        var queue: [Identifier] = [Identifier.root]
        while let folder = queue.popLast() {
            for id in (childrenByFolder[folder] ?? [:]).values {
                guard let item = items[id] else { continue }
                batch.append(.putItem(item))
                batchBytes += 120 + item.name.utf8.count
                for (purpose, bytes) in attachments[id] ?? [:] {
                    batch.append(.setAttachment(item: id, purpose: purpose, bytes: bytes))
                    batchBytes += 32 + bytes.count
                }
                if item.isFolder { queue.append(id) }
                if batchBytes > 1 << 20 { try flush() }
            }
        }
        try flush()
        try fresh.syncFile()
        try FileSystem.syncDirectory(layout.shardDirectory(for: newID))
        try rewriteKeyFile(journalID: newID, kek: kek, salt: salt, parameters: kdfParameters)
        let old = journal
        journal = fresh
        bytesAtLastCompaction = fresh.endOffset
        try? FileSystem.unlink(old.path, missingOK: true)
    }

    // MARK: The key file

    private func rewriteKeyFile(journalID: Identifier, kek: Secret, salt: [UInt8], parameters: KDFParameters) throws {
        let contents = KeyFile.Contents(masterKey: masterKey, journalID: journalID, chunkSizeLog2: ContentFormat.chunkSizeLog2)
        try Self.writeKeyFile(KeyFile.seal(contents, kek: kek, salt: salt, parameters: parameters), layout: layout, id: keyFileID)
    }

    /// Writes the key file as `<id>.new`, syncs it, renames it into place and syncs the directory.
    private static func writeKeyFile(_ bytes: [UInt8], layout: StoreLayout, id: Identifier) throws {
        let final = layout.keyFilePath(named: id)
        let temporary = final + ".new"
        let fd = try FileDescriptor.open(temporary, .writeOnly, options: [.create, .truncate], permissions: 0o600)
        try fd.writeAll(bytes)
        try fd.sync()
        try FileSystem.rename(temporary, final)
        try FileSystem.syncDirectory(layout.root)
    }

    /// Re-wraps the master key under a new passphrase (fresh salt; content is not re-encrypted).
    public func changePassphrase(to passphrase: Secret, parameters: KDFParameters) throws {
        let newSalt = randomBytes(PassphraseKey.saltLength)
        let newKEK = try PassphraseKey.derive(passphrase: passphrase, salt: newSalt, parameters: parameters)
        try rewriteKeyFile(journalID: journal.id, kek: newKEK, salt: newSalt, parameters: parameters)
        kek = newKEK
        salt = newSalt
        kdfParameters = parameters
    }

    // MARK: Settings and attachments

    /// The most bytes one attachment may hold.
    public static let maximumAttachment = 64 << 10

    /// The blob attached to item `id` under `purpose` (a cached thumbnail, say), if any.
    public func attachment(_ purpose: String, of id: Identifier) -> [UInt8]? {
        attachments[id]?[purpose]
    }

    /// Attaches blobs to items, or with nil removes them, in one durable transaction. They are
    /// encrypted in the journal like all metadata, and dropped when their item is removed or
    /// its content replaced. Blobs over `maximumAttachment` bytes are refused.
    public func setAttachments(_ changes: [(id: Identifier, purpose: String, bytes: [UInt8]?)]) throws {
        for c in changes where (c.bytes?.count ?? 0) > Self.maximumAttachment {
            throw VaultError.refused("an attachment can hold at most \(Self.maximumAttachment) bytes")
        }
        try commit(changes.filter { items[$0.id] != nil }.map { .setAttachment(item: $0.id, purpose: $0.purpose, bytes: $0.bytes) })
    }

    var attachedBytes: Int {
        attachments.values.reduce(0) { $0 + $1.values.reduce(0) { $0 + $1.count + 32 } }
    }

    /// Sets (or with nil, removes) a setting, durably.
    public func setSetting(_ key: String, _ value: String?) throws {
        if let value { try commit([.setSetting(key: key, value: value)]) } else { try commit([.removeSetting(key: key)]) }
    }
}



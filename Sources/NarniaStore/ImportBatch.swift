import NarniaSystem
import Glibc

/// A group of new items made durable and visible together (group commit).
///
/// Each file's content is written as it is added: a large file into an object of its own, a
/// small one (`OpenPack.largestMember`) as the next segment of a pack shared with the batch's
/// other small files, so that thousands of small files cost a few object files, not thousands.
/// `commit()` then makes every object durable with one `syncfs` and publishes all the items in
/// one journal record. Until then nothing is visible, and `abandon()` (or a crash) leaves only
/// orphan objects that the next open removes. Names are made unique with "keep both"
/// numbering, counting staged items.
public final class ImportBatch {
    private let vault: Vault
    private var operations: [MetadataOperation] = []
    private var reservedNames: [Identifier: Set<String>] = [:]
    private var stagedFolders = Set<Identifier>()
    private var stagedObjects: [Identifier] = []
    private var stagedSlots: [Int] = []
    private var staged: [Item] = []
    private var replacedObjects: [Identifier] = []
    /// This batch's packs; the last one may still be accepting segments.
    private var packs: [OpenPack] = []
    /// Keeps the key table open from the first file to the commit (see `KeyTable`).
    private var keyHold: KeyTable.Hold?
    /// Types still being worked out, by item.
    private var pendingTypes: [Identifier: () -> ContentType] = [:]
    /// Content bytes written since the batch began.
    public private(set) var stagedBytes: UInt64 = 0

    init(vault: Vault) { self.vault = vault }

    /// The number of items waiting for `commit()`.
    public var count: Int { staged.count }

    /// Starts a batch of new items.
    public static func begin(in vault: Vault) -> ImportBatch { ImportBatch(vault: vault) }

    private func ensureFolder(_ parent: Identifier) throws {
        guard vault.isFolder(parent) || stagedFolders.contains(parent) else { throw VaultError.refused("not a folder") }
    }

    private func claimName(_ name: String, in parent: Identifier) throws -> String {
        let valid = try ItemName.validated(name)
        let unique = vault.availableName(valid, in: parent, reserved: reservedNames[parent] ?? [])
        reservedNames[parent, default: []].insert(unique)
        return unique
    }

    /// Stages a new folder called `name` (or a numbered variant) inside `parent`.
    public func addFolder(named name: String, in parent: Identifier, modified: Int64? = nil) throws -> Item {
        try ensureFolder(parent)
        let t = Vault.now()
        let item = Item(id: .random(), parent: parent, name: try claimName(name, in: parent), created: t, modified: modified ?? t, content: nil)
        operations.append(.putItem(item))
        stagedFolders.insert(item.id)
        staged.append(item)
        return item
    }

    /// The MIME type and kind of a new item, as a classifier names them.
    public typealias ContentType = (mime: String, kind: ItemKind)

    /// Encrypts everything `source` yields into a new file item called `name` (or a numbered
    /// variant) in `parent`. `classify` sees the first chunk and names the MIME type and kind.
    /// `source` fills the buffer and returns the byte count, 0 at the end. `sizeHint`, the size
    /// the source expects to yield when known, lets a small file share a pack.
    public func addFile(named name: String, in parent: Identifier, modified: Int64? = nil, sizeHint: UInt64? = nil,
                        source: (UnsafeMutableRawPointer, Int) throws -> Int,
                        classify: (UnsafeRawBufferPointer) -> ContentType,
                        observer: TransferObserver = .none) throws -> Item {
        try addFile(named: name, in: parent, modified: modified, sizeHint: sizeHint, source: source,
                    classifyLater: { bytes in let type = classify(bytes); return { type } }, observer: observer)
    }

    /// As `addFile(named:in:modified:sizeHint:source:classify:observer:)`, but classification
    /// may finish later, on another thread: `classifyLater` sees the first chunk and returns a
    /// function that gives the type, called at the latest by `commit()`. Until then the
    /// returned item carries no type.
    public func addFile(named name: String, in parent: Identifier, modified: Int64? = nil, sizeHint: UInt64? = nil,
                        source: (UnsafeMutableRawPointer, Int) throws -> Int,
                        classifyLater: (UnsafeRawBufferPointer) -> () -> ContentType,
                        observer: TransferObserver = .none) throws -> Item {
        try ensureFolder(parent)
        let unique = try claimName(name, in: parent)
        let t = Vault.now()
        let item = Item(id: .random(), parent: parent, name: unique, created: t, modified: modified ?? t, content: nil)
        do {
            return try stage(item, sizeHint: sizeHint, source: source, classifyLater: classifyLater, observer: observer)
        } catch {
            reservedNames[parent]?.remove(unique)
            throw error
        }
    }

    /// Stages the existing file `item` with the content `source` yields (its own, read back)
    /// re-encrypted under a fresh key, into a pack when small; name, place, times and type stay.
    /// For rewriting sparse packs (`Vault.repack`).
    func rewriteContent(of item: Item, source: (UnsafeMutableRawPointer, Int) throws -> Int) throws {
        guard let old = item.content else { return }
        _ = try stage(item, sizeHint: old.size, source: source, classifyLater: { _ in { (old.mime, old.kind) } }, observer: .none)
    }

    /// Encrypts what `source` yields as `item`'s content (into a pack when `sizeHint` says the
    /// file is small) and stages the item with it.
    private func stage(_ item: Item, sizeHint: UInt64?, source: (UnsafeMutableRawPointer, Int) throws -> Int,
                       classifyLater: (UnsafeRawBufferPointer) -> () -> ContentType, observer: TransferObserver) throws -> Item {
        if keyHold == nil { keyHold = vault.keys.holdOpen() }
        var type: () -> ContentType = { ("application/octet-stream", .other) }
        var pack: OpenPack?
        var slot: Int?
        let objectID: Identifier, offset: Int64, size: UInt64
        do {
            pack = try sizeHint.map { $0 <= OpenPack.largestMember } == true ? packForNextFile() : nil
            (objectID, offset) = (pack?.objectID ?? .random(), pack?.length ?? 0)
            slot = try vault.keys.addRandom()
            size = try vault.keys.withKey(slot!) { key in
                try writeContent(into: pack, objectID: objectID, at: offset, key: key, source: source,
                                 inspect: { type = classifyLater($0) }, observer: observer)
            }
        } catch {
            pack?.accepting = false
            if let slot { vault.keys.remove(slot) }
            throw error
        }
        var item = item
        item.content = ContentInfo(objectID: objectID, keySlot: slot!, size: size, mime: "", kind: .other, offset: UInt64(offset))
        if let pack {
            pack.length = offset + ContentFormat.objectLength(size: size)
            pack.members.append(item.id)
            if pack.length >= OpenPack.capacity { pack.accepting = false }
        } else {
            stagedObjects.append(objectID)
        }
        operations.append(.putItem(item))
        pendingTypes[item.id] = type
        stagedSlots.append(slot!)
        staged.append(item)
        stagedBytes += size
        return item
    }

    /// Seals what `source` yields as the next segment of `pack`, or, without one, into a new
    /// object `objectID` of its own. Returns the content size.
    private func writeContent(into pack: OpenPack?, objectID: Identifier, at offset: Int64, key: UnsafeRawBufferPointer,
                              source: (UnsafeMutableRawPointer, Int) throws -> Int,
                              inspect: (UnsafeRawBufferPointer) -> Void, observer: TransferObserver) throws -> UInt64 {
        let writer = ContentWriter(layout: vault.layout, pipeline: vault.pipeline)
        if let pack {
            return try writer.append(to: pack.fd, at: offset, objectID: objectID, key: key, source: source,
                                     inspect: inspect, observer: observer)
        }
        try vault.layout.ensureShard(for: objectID, known: &vault.knownShards)
        return try writer.write(objectID: objectID, key: key, source: source, inspect: inspect, observer: observer)
    }

    /// The pack the next small file goes into: the batch's current one, or a new one.
    private func packForNextFile() throws -> OpenPack {
        if let pack = packs.last, pack.accepting { return pack }
        let pack = try OpenPack(layout: vault.layout, knownShards: &vault.knownShards)
        packs.append(pack)
        stagedObjects.append(pack.objectID)
        return pack
    }

    /// Gives the staged item `id` the name of the existing file `victim` in the same folder and
    /// removes `victim` in the same transaction, so that a replacement (`cp -f`) is all or
    /// nothing. The victim's content object is deleted after the commit.
    public func take(nameOf victim: Identifier, for id: Identifier) throws {
        guard let old = vault.item(victim), !old.isFolder else { throw VaultError.refused("cannot replace a folder") }
        guard let index = operations.firstIndex(where: { if case .putItem(let i) = $0 { i.id == id } else { false } }),
              case .putItem(var item) = operations[index], item.parent == old.parent else {
            throw VaultError.refused("nothing staged to take the name")
        }
        item.name = old.name
        operations[index] = .putItem(item)
        if let i = staged.firstIndex(where: { $0.id == id }) { staged[i] = item }
        operations.insert(.removeItem(victim), at: 0)
        if let object = old.content?.objectID { replacedObjects.append(object) }
    }

    /// Makes every staged object durable (`syncfs`), then publishes all staged items in one
    /// journal record. Returns them; the batch is empty afterwards and can be reused.
    @discardableResult
    public func commit() throws -> [Item] {
        guard !operations.isEmpty else { return [] }
        try finishPacks()
        resolveTypes()
        if !stagedObjects.isEmpty { try vault.syncStore() }
        try vault.commit(operations)
        vault.release(replacedObjects)
        let done = staged
        reset()
        return done
    }

    /// Closes the batch's packs to further segments and records each pack's final length in its
    /// items; a pack left empty (by a failed append) is deleted.
    private func finishPacks() throws {
        var lengths: [Identifier: Int64] = [:]
        for pack in packs {
            pack.accepting = false
            guard !pack.members.isEmpty else {
                try? FileSystem.unlink(vault.layout.objectPath(for: pack.objectID), missingOK: true)
                continue
            }
            let length = try pack.fd.size()
            for id in pack.members { lengths[id] = length }
        }
        guard !lengths.isEmpty else { return }
        updateStaged { item in
            guard let length = lengths[item.id] else { return false }
            item.content?.objectLength = length
            return true
        }
    }

    /// Writes each pending type into its item's operation (waiting for any classification
    /// still running).
    private func resolveTypes() {
        guard !pendingTypes.isEmpty else { return }
        var resolved: [Identifier: ContentType] = [:]
        for (id, resolve) in pendingTypes { resolved[id] = resolve() }
        updateStaged { item in
            guard let type = resolved[item.id] else { return false }
            item.content?.mime = type.mime
            item.content?.kind = type.kind
            return true
        }
        pendingTypes.removeAll()
    }

    /// Applies `change` (which returns whether it changed anything) to every staged item, in
    /// both the pending operations and the list `commit()` returns.
    private func updateStaged(_ change: (inout Item) -> Bool) {
        for index in operations.indices {
            if case .putItem(var item) = operations[index], change(&item) { operations[index] = .putItem(item) }
        }
        for index in staged.indices { _ = change(&staged[index]) }
    }

    /// Drops every staged item and deletes their objects.
    public func abandon() {
        for resolve in pendingTypes.values { _ = resolve() }  // let running classifications finish
        for object in stagedObjects { try? FileSystem.unlink(vault.layout.objectPath(for: object), missingOK: true) }
        for slot in stagedSlots { vault.keys.remove(slot) }
        reset()
    }

    private func reset() {
        operations.removeAll()
        reservedNames.removeAll()
        stagedFolders.removeAll()
        stagedObjects.removeAll()
        stagedSlots.removeAll()
        staged.removeAll()
        replacedObjects.removeAll()
        packs.removeAll()
        keyHold = nil
        pendingTypes.removeAll()
        stagedBytes = 0
    }
}

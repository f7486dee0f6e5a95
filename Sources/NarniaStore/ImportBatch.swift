import NarniaKinds
import Glibc
import NarniaSystem

/// A group of new items made durable and visible together (group commit).
///
/// Each file's content is written as it is added: a large file into an object of its own, a
/// small one (`OpenPack.largestMember`) as the next segment of a pack shared with the batch's
/// other small files. `commit()` then makes every object durable (one `syncfs`, or an
/// `fsync` of each where that does not reach the disk) and publishes all the items in one journal record. Until then nothing is visible, and
/// `abandon()` deletes what the batch wrote; after a crash the next open deletes it, as
/// objects of this device that no record names (docs/FORMAT.md, "Leftovers"). Names are
/// made unique with "keep both" numbering, counting staged items.
public final class ImportBatch {
    /// A staged change: a new folder or file, or new content for an existing file.
    private enum Staged {
        case folder(Item)
        case file(Item)
        /// `cp -f` and repacking: the file keeps its identity, name and place. A repack's new
        /// content keeps the stamp of the content it re-encrypts (`keeping`).
        case content(of: Item, ContentInfo, modified: Int64, keeping: Stamp?)

        var id: Identifier {
            switch self {
            case .folder(let item), .file(let item), .content(of: let item, _, _, _): return item.id
            }
        }
    }

    private let vault: Vault
    private var staged: [Staged] = []
    private var reservedNames: [Identifier: Set<String>] = [:]
    private var stagedFolders = Set<Identifier>()
    private var stagedObjects: [Identifier] = []
    private var stagedSlots: [Int] = []
    /// Contents the commit releases (replaced by `take(nameOf:for:)` or `rewriteContent`).
    private var releasedContents: [ContentInfo] = []
    /// This batch's packs; the last one may still be accepting segments.
    private var packs: [OpenPack] = []
    /// Keeps the key table open from the first file to the commit (see `KeyTable`).
    private var keyHold: KeyTable.Hold?
    /// Types still being worked out, by item.
    private var pendingTypes: [Identifier: () -> ContentType] = [:]
    /// Content bytes written since the batch began.
    public private(set) var stagedBytes: UInt64 = 0
    /// For a repack: every object the batch writes gets an identifier greater than this one's
    /// (see `rewriteContent`).
    var objectsAfter: Identifier?

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
        staged.append(.folder(item))
        stagedFolders.insert(item.id)
        return item
    }

    /// The MIME type and kind of a new item, as a classifier names them.
    public typealias ContentType = NarniaKinds.ContentType

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
        var item = Item(id: .random(), parent: parent, name: unique, created: t, modified: modified ?? t, content: nil)
        do {
            item.content = try seal(item.id, sizeHint: sizeHint, source: source, classifyLater: classifyLater, observer: observer)
        } catch {
            reservedNames[parent]?.remove(unique)
            throw error
        }
        staged.append(.file(item))
        return item
    }

    /// Stages the existing file `item` with the content `source` yields (its own, read back)
    /// re-encrypted under a fresh key, into a pack when small; name, place, times and type stay.
    /// For rewriting sparse packs (`Vault.repack`).
    ///
    /// The new content keeps the stamp of the old (`stamp`), so that a change another device
    /// made meanwhile, stamped later, still wins over this housekeeping; at that equal stamp
    /// the merge keeps the value whose object identifier is greater (docs/FORMAT.md,
    /// "Merging"), which `objectsAfter` makes the new one.
    func rewriteContent(of item: Item, stamp: Stamp, source: (UnsafeMutableRawPointer, Int) throws -> Int) throws {
        guard let old = item.content else { return }
        let content = try seal(item.id, sizeHint: old.size, source: source, classifyLater: { _ in { (old.mime, old.kind) } }, observer: .none)
        staged.append(.content(of: item, content, modified: item.modified, keeping: stamp))
        releasedContents.append(old)
    }

    /// A fresh identifier for an object this batch writes, greater than `objectsAfter` when
    /// set.
    private func newObjectID() throws -> Identifier {
        guard let floor = objectsAfter else { return vault.tags.newObject() }
        guard let id = vault.tags.newObject(after: floor) else {
            throw VaultError.refused("no object identifier orders after \(floor.hex)")
        }
        return id
    }

    /// Encrypts what `source` yields as the content of item `id` (into a pack when `sizeHint`
    /// says the file is small); the type is filled in at commit.
    private func seal(_ id: Identifier, sizeHint: UInt64?, source: (UnsafeMutableRawPointer, Int) throws -> Int,
                      classifyLater: (UnsafeRawBufferPointer) -> () -> ContentType, observer: TransferObserver) throws -> ContentInfo {
        if keyHold == nil { keyHold = vault.keys.holdOpen() }
        var type: () -> ContentType = { ("application/octet-stream", .other) }
        var pack: OpenPack?
        var slot: Int?
        var objectID = Identifier.root
        let offset: Int64, size: UInt64
        do {
            pack = try sizeHint.map { $0 <= OpenPack.largestMember } == true ? packForNextFile() : nil
            (objectID, offset) = (try pack?.objectID ?? newObjectID(), pack?.length ?? 0)
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
        if pack == nil {
            stagedObjects.append(objectID)
            vault.inventory.files[objectID] = StoreInventory.Entry(main: vault.layout.shardName(for: objectID) + "/" + objectID.hex)
        }
        if let pack {
            pack.length = offset + ContentFormat.objectLength(size: size)
            pack.members.append(id)
            if pack.length >= OpenPack.capacity { pack.accepting = false }
        }
        pendingTypes[id] = type
        stagedSlots.append(slot!)
        stagedBytes += size
        return ContentInfo(objectID: objectID, keySlot: slot!, size: size, mime: "", kind: .other, offset: UInt64(offset))
    }

    /// Seals what `source` yields as the next segment of `pack`, or, without one, into a new
    /// object `objectID` of its own. Returns the content size.
    private func writeContent(into pack: OpenPack?, objectID: Identifier, at offset: Int64, key: UnsafeRawBufferPointer,
                              source: (UnsafeMutableRawPointer, Int) throws -> Int,
                              inspect: (UnsafeRawBufferPointer) -> Void, observer: TransferObserver) throws -> UInt64 {
        let writer = ContentWriter(layout: vault.layout, pipeline: vault.pipeline)
        if let pack {
            return try writer.append(to: pack.file, at: offset, objectID: objectID, key: key, source: source,
                                     inspect: inspect, observer: observer)
        }
        try vault.layout.ensureShard(for: objectID, durable: false)   // made durable by the commit
        return try writer.write(objectID: objectID, key: key, source: source, inspect: inspect, observer: observer)
    }

    /// The pack the next small file goes into: the batch's current one, or a new one.
    private func packForNextFile() throws -> OpenPack {
        if let pack = packs.last, pack.accepting { return pack }
        let pack = try OpenPack(layout: vault.layout, objectID: try newObjectID())
        packs.append(pack)
        stagedObjects.append(pack.objectID)
        vault.inventory.files[pack.objectID] = StoreInventory.Entry(main: vault.layout.shardName(for: pack.objectID) + "/" + pack.objectID.hex)
        return pack
    }

    /// Puts the content of the staged new file `id` into the existing file `victim` in the
    /// same folder instead (`cp -f`): the file keeps its identity, so that a rename of it on
    /// another device and this replacement both survive the merge. Its old content object is
    /// retired in the same transaction.
    public func take(nameOf victim: Identifier, for id: Identifier) throws {
        guard let old = vault.item(victim), !old.isFolder else { throw VaultError.refused("cannot replace a folder") }
        guard let index = staged.firstIndex(where: { $0.id == id }), case .file(let item) = staged[index],
              item.parent == old.parent, let content = item.content else {
            throw VaultError.refused("nothing staged to take the name")
        }
        staged[index] = .content(of: old, content, modified: item.modified, keeping: nil)
        reservedNames[item.parent]?.remove(item.name)
        if let type = pendingTypes.removeValue(forKey: id) { pendingTypes[victim] = type }
        if let oldContent = old.content { releasedContents.append(oldContent) }
        for pack in packs { pack.members = pack.members.map { $0 == id ? victim : $0 } }
    }

    /// Makes every staged object durable (`Vault.syncObjects`), then publishes all staged items in one
    /// journal record. Returns them; the batch is empty afterwards and can be reused.
    @discardableResult
    public func commit() throws -> [Item] {
        guard !staged.isEmpty else {
            abandon()   // a pack whose only file failed
            return []
        }
        let lengths = try finishPacks()
        // The objects are made durable while the last classifications finish on other threads.
        if !stagedObjects.isEmpty { try vault.syncObjects(stagedObjects) }
        let types = resolveTypes()
        func finished(_ content: ContentInfo, of id: Identifier) -> ContentInfo {
            var c = content
            if let length = lengths[id] { c.objectLength = length }
            if let type = types[id] { (c.mime, c.kind) = type }
            return c
        }
        var ops: [Operation] = []
        /// Content values under stamps of their own, which go last (a `stamp` operation sets the
        /// stamp of every operation after it in the record).
        var stampedOps: [Operation] = []
        var done: [Item] = []
        for change in staged {
            switch change {
            case .folder(let item):
                ops.append(.createFolder(id: item.id, place: Place(parent: item.parent, name: item.name), created: item.created, modified: item.modified))
                done.append(item)
            case .file(var item):
                item.content = finished(item.content!, of: item.id)
                ops.append(.createFile(id: item.id, place: Place(parent: item.parent, name: item.name), created: item.created,
                                       modified: item.modified, content: item.content!))
                done.append(item)
            case .content(of: var item, let content, let modified, let stamp):
                item.content = finished(content, of: item.id)
                item.modified = modified
                // A repack (`stamp`) re-encrypts the version in force; `cp -f` writes a new
                // version over it.
                let inForce = vault.state.items[item.id]?.contentLineage.version
                let lineage = stamp != nil ? ContentLineage(version: inForce ?? content.objectID, replaces: nil)
                                           : ContentLineage(version: content.objectID, replaces: inForce)
                let op = Operation.setContent(id: item.id, modified: modified, content: item.content!, lineage: lineage)
                if let stamp {
                    stampedOps += [.stamp(stamp), op]
                } else {
                    ops.append(op)
                    stampedOps += try vault.state.recordsKeepingCopy(item.id)
                }
                done.append(item)
            }
        }
        ops += vault.retirements(freeing: releasedContents) + stampedOps
        let shown = done
        try vault.commit(ops, view: .change { view in
            for item in shown {
                if view.items[item.id] != nil, let content = item.content {
                    view.setContent(item.id, content, modified: item.modified)
                } else {
                    view.insert(item)
                }
            }
        })
        let released = releasedContents.map(\.objectID)
        reset()
        vault.repackSparse(released)
        return done
    }

    /// Closes the batch's packs to further segments and returns each packed item's pack
    /// length; a pack left empty (by a failed append) is deleted.
    private func finishPacks() throws -> [Identifier: Int64] {
        var lengths: [Identifier: Int64] = [:]
        for pack in packs {
            pack.accepting = false
            guard !pack.members.isEmpty else {
                vault.deleteUncommittedObject(pack.objectID)
                stagedObjects.removeAll { $0 == pack.objectID }
                continue
            }
            let length = try pack.file.finish()
            for id in pack.members { lengths[id] = length }
        }
        return lengths
    }

    /// Waits for any classification still running and returns the types, by item.
    private func resolveTypes() -> [Identifier: ContentType] {
        var resolved: [Identifier: ContentType] = [:]
        for (id, resolve) in pendingTypes { resolved[id] = resolve() }
        pendingTypes.removeAll()
        return resolved
    }

    /// Unstages the new folders that hold nothing staged, innermost first, and returns them: an
    /// import stopped early (out of space, interrupted) publishes what it took in, but no
    /// folder it did not begin to fill (review BO-1: the disk filled at a folder's first file,
    /// and the vault was left with that folder, empty).
    @discardableResult
    public func unstageEmptyFolders() -> Set<Identifier> {
        var dropped = Set<Identifier>()
        while true {
            let parents = Set(staged.map { change -> Identifier in
                switch change {
                case .folder(let item), .file(let item), .content(of: let item, _, _, _): return item.parent
                }
            })
            let empty = staged.compactMap { change -> Item? in
                if case .folder(let item) = change, !parents.contains(item.id) { return item }
                return nil
            }
            guard !empty.isEmpty else { return dropped }
            for item in empty {
                dropped.insert(item.id)
                stagedFolders.remove(item.id)
                reservedNames[item.parent]?.remove(item.name)
            }
            staged.removeAll { dropped.contains($0.id) }
        }
    }

    /// Drops every staged item and deletes their objects.
    public func abandon() {
        for resolve in pendingTypes.values { _ = resolve() }  // let running classifications finish
        for object in stagedObjects { vault.deleteUncommittedObject(object) }
        try? vault.layout.syncUnsyncedShards()   // no commit will: a later journal may go there
        for slot in stagedSlots { vault.keys.remove(slot) }
        reset()
    }

    private func reset() {
        staged.removeAll()
        reservedNames.removeAll()
        stagedFolders.removeAll()
        stagedObjects.removeAll()
        stagedSlots.removeAll()
        releasedContents.removeAll()
        packs.removeAll()
        keyHold = nil
        pendingTypes.removeAll()
        stagedBytes = 0
        objectsAfter = nil
    }
}

extension Vault {
    /// Deletes an object this device wrote and never committed (a failed or abandoned batch).
    func deleteUncommittedObject(_ id: Identifier) {
        try? FileSystem.unlink(layout.objectPath(for: id), missingOK: true)
        inventory.files[id] = nil
    }
}

import NarniaSystem
import Glibc
import NarniaCrypto

/// A damaged item found by `verify`.
public struct VerifyFailure: Sendable {
    public let item: Item
    public let path: String
    public let reason: String
}

extension Vault {
    /// Flushes every written object to the disk (`syncfs` on the store's file system).
    func syncStore() throws {
        try lockHandle.syncFileSystem()
    }

    /// Decrypts `item`'s content and hands it, in order, to `write` (called on a writer thread,
    /// overlapping decryption). Stops at the first chunk that fails authentication.
    /// - Throws: `ContentError`, `Cancelled`, or what `write` throws.
    public func readContent(of item: Item, observer: TransferObserver = .none,
                            write: @escaping @Sendable (UnsafeRawPointer, Int) throws -> Void) throws {
        guard let content = item.content else { throw VaultError.refused("is a folder") }
        let reader = try ContentReader(layout: layout, content: content)
        try keys.withKey(content.keySlot) { key in
            try reader.stream(pipeline: pipeline, key: key, observer: observer, write: write)
        }
    }

    /// Writes `item`'s content to `fd`.
    public func export(_ item: Item, to fd: FileDescriptor, observer: TransferObserver = .none) throws {
        try readContent(of: item, observer: observer) { p, n in try fd.writeAll(p, count: n) }
    }

    /// Reads and authenticates the first `limit` bytes of `item` (for type checks and previews).
    public func readPrefix(of item: Item, limit: Int) throws -> [UInt8] {
        guard let content = item.content else { throw VaultError.refused("is a folder") }
        let reader = try ContentReader(layout: layout, content: content)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: ContentFormat.chunkSize + AEAD.tagLength, alignment: 64)
        defer {
            wipe(UnsafeMutableRawBufferPointer(start: buffer, count: ContentFormat.chunkSize + AEAD.tagLength))
            buffer.deallocate()
        }
        let n = try keys.withKey(content.keySlot) { try reader.readChunk(0, into: buffer, key: $0) }
        return Array(UnsafeRawBufferPointer(start: buffer, count: min(n, limit)))
    }

    /// Copies a file item to `name` in `parent` (the content is re-encrypted under a fresh key),
    /// or a folder with everything under it, in one transaction. With `replacing`, the existing
    /// file of that name is replaced in the same transaction.
    @discardableResult
    public func copy(_ id: Identifier, to parent: Identifier, name: String, replacing: Identifier? = nil,
                     observer: TransferObserver = .none) throws -> Item {
        guard let source = items[id] else { throw VaultError.refused("no such item") }
        let existing = child(named: try ItemName.validated(name), in: parent)
        guard existing == nil || (existing!.id == replacing && !source.isFolder) else { throw VaultError.refused("already exists") }
        if source.isFolder && isSelfOrAncestor(id, of: parent) { throw VaultError.refused("cannot copy a folder into itself") }
        let batch = ImportBatch.begin(in: self)
        do {
            var top = try copyItem(source, to: parent, name: name, batch: batch, observer: observer)
            if let victim = existing?.id {
                try batch.take(nameOf: victim, for: top.id)
                top.name = name
            }
            try batch.commit()
            return items[top.id] ?? top
        } catch {
            batch.abandon()
            throw error
        }
    }

    private func copyItem(_ source: Item, to parent: Identifier, name: String, batch: ImportBatch, observer: TransferObserver) throws -> Item {
        if source.isFolder {
            let folder = try batch.addFolder(named: name, in: parent, modified: source.modified)
            for child in children(of: source.id).sorted(by: { $0.name < $1.name }) {
                _ = try copyItem(child, to: folder.id, name: child.name, batch: batch, observer: observer)
            }
            return folder
        }
        let content = source.content!
        let plaintext = try PlaintextSource(layout: layout, content: content, keys: keys)
        let copied = try batch.addFile(named: name, in: parent, modified: source.modified, sizeHint: content.size,
                                       source: { try plaintext.read(into: $0, max: $1) },
                                       classify: { _ in (content.mime, content.kind) }, observer: observer)
        return copied
    }

    /// Authenticates every chunk of every file item. Returns the damaged items, by path.
    public func verify(observer: TransferObserver = .none) throws -> (checked: Int, failures: [VerifyFailure]) {
        let size = ContentFormat.chunkSize + AEAD.tagLength
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer {
            wipe(UnsafeMutableRawBufferPointer(start: buffer, count: size))
            buffer.deallocate()
        }
        var failures: [VerifyFailure] = []
        var done: UInt64 = 0
        let files = items.values.filter { !$0.isFolder }
        for item in files {
            let content = item.content!
            do {
                let reader = try ContentReader(layout: layout, content: content)
                for index in 0..<reader.chunkCount {
                    if observer.isCancelled() { throw Cancelled() }
                    let n = try keys.withKey(content.keySlot) { try reader.readChunk(index, into: buffer, key: $0) }
                    done += UInt64(n)
                    observer.progress(done)
                }
            } catch let error as ContentError {
                failures.append(VerifyFailure(item: item, path: path(of: item.id), reason: error.description))
            }
        }
        return (items.count, failures.sorted { $0.path < $1.path })
    }

    /// Bytes the store uses for `item`'s content (padding and tags included).
    public func storedSize(of item: Item) -> Int64 {
        guard let c = item.content else { return 0 }
        return ContentFormat.objectLength(size: c.size)
    }
}

import NarniaSystem
import Glibc
import NarniaCrypto

/// An item `verify` could not read whole.
public struct VerifyFailure: Sendable {
    public let item: Item
    public let path: String
    public let reason: String
}

/// What `verify` found.
public struct VerifyReport: Sendable {
    /// The items looked at.
    public var checked: Int
    /// Items whose content failed authentication or has the wrong length: the store was altered.
    public var damaged: [VerifyFailure] = []
    /// Items whose content is not (wholly) on this device: not yet arrived, or deleted.
    public var missing: [VerifyFailure] = []
    /// What else keeps the vault from being whole in this copy.
    public var problems: [String] = []
    /// What is worth knowing but is not a fault.
    public var notes: [String] = []
    /// Files named like store files whose names are not UTF-8, as the bytes of their paths in
    /// the store: not read. Said after the notes (`undecodableNote`).
    public var undecodableStoreFiles: [[UInt8]] = []
    /// The folders whose latest move, made on one device while another device's move put
    /// them in a cycle, was skipped (FORMAT.md, "Merging", rule 2), in path order: a note names them
    /// (`skippedMovesNote`).
    public var skippedMoves: [Identifier] = []

    /// True when nothing is damaged, missing or otherwise wrong.
    public var isWhole: Bool { damaged.isEmpty && missing.isEmpty && problems.isEmpty }

    /// The note naming the folders in `skippedMoves`, each shown by `name` for the stream the
    /// note goes to (review DB-3: a count, "1 moves …", named none); nil when there are none.
    public func skippedMovesNote(showing name: (Identifier) -> String) -> String? {
        guard !skippedMoves.isEmpty else { return nil }
        let one = skippedMoves.count == 1
        return "moves made on different devices at once would have put \(one ? "a folder inside itself; the latest was skipped, and the folder stays where it stood before it" : "folders inside themselves; the latest of each cycle was skipped, and those folders stay where they stood before it"): \(firstFew(skippedMoves.map(name)))"
    }

    /// The note naming `undecodableStoreFiles`, each spelled by `spell` for the stream the note
    /// goes to (`?` on a terminal, review BD-6); nil when there are none.
    public func undecodableNote(spelling spell: ([UInt8]) -> String) -> String? {
        guard !undecodableStoreFiles.isEmpty else { return nil }
        let names = undecodableStoreFiles.map(spell)
        return "\(someFiles(names)) named like store files but not in UTF-8, and not read: \(firstFew(names)) (to have one read as a copy, rename it in UTF-8, keeping its hex digits and its sync engine's suffix)"
    }
}

/// "1 file is" or "N files are".
func someFiles(_ names: [String]) -> String {
    names.count == 1 ? "1 file is" : "\(names.count) files are"
}

/// The first three of `names`, with an ellipsis when there are more.
func firstFew(_ names: [String]) -> String {
    names.prefix(3).joined(separator: ", ") + (names.count > 3 ? ", …" : "")
}

extension Vault {
    /// Makes the written objects `ids` durable, with the entries of new shard directories: one
    /// `syncfs` of the store's file system where that reaches the disk, else (FUSE, NFS, SMB:
    /// `FileDescriptor.syncFileSystemReachesDisk`) an `fsync` of each object, of the shard
    /// directories holding them and of the store's directory.
    func syncObjects(_ ids: [Identifier]) throws {
        try layout.syncingShards {
            try FileSystem.makeDurable(files: ids.map { layout.objectPath(for: $0) },
                                       folders: Set(ids.map(layout.shardDirectory(for:))).sorted() + [layout.root], on: lockHandle)
        }
    }

    /// The path of the object holding `content` in this copy of the store, or nil when it has
    /// not arrived. Of the original and the copies sync engines made of it, the one with the
    /// length the metadata gives is taken (a whole copy stands in for an original still
    /// arriving); failing that the longest, whose reading then says what is wrong.
    func objectPath(of content: ContentInfo) -> String? {
        guard let entry = inventory.files[content.objectID] else { return nil }
        let candidates = entry.all.map { (path: layout.root + "/" + $0, size: objectFileSize(layout.root + "/" + $0, atLeast: content.objectLength)) }
        if let whole = candidates.first(where: { $0.size == content.objectLength }) { return whole.path }
        return candidates.max { $0.size < $1.size }?.path
    }

    /// True when the object of a file is wholly in this copy of the store (false for folders;
    /// false for an object still arriving, shorter than its metadata says).
    public func isHere(_ item: Item) -> Bool {
        guard let content = item.content, let path = objectPath(of: content) else { return false }
        return objectFileSize(path, atLeast: content.objectLength) >= content.objectLength
    }

    /// Throws why `item`'s content cannot be read from this copy of the store, as reading it
    /// would (`ContentError`); returns when its object is here with the length it should have.
    public func checkHere(_ item: Item) throws {
        guard let content = item.content else { return }
        _ = try notingDamage { try reader(for: content) }
    }

    /// The size of an object file. Sizes of at least `atLeast` bytes are remembered (objects
    /// never change once written), so listing a folder stats each whole object once; a shorter
    /// one is asked again (a sync engine may be completing it).
    func objectFileSize(_ path: String, atLeast: Int64) -> Int64 {
        if let known = wholeObjectSizes[path] { return known }
        guard let st = (try? FileSystem.lstatIfExists(path)) ?? nil else { return -1 }
        let size = Int64(st.st_size)
        if size >= atLeast { wholeObjectSizes[path] = size }
        return size
    }

    /// Opens the object of `content`. An object this device wrote was whole in its store
    /// before any record named it (docs/FORMAT.md, "Leftovers"): missing, it was deleted —
    /// or the store is a backup restored in place, to which a sync engine has not yet brought
    /// it back (the same device, by the directory) — not merely "not yet on this device".
    func reader(for content: ContentInfo) throws -> ContentReader {
        do {
            return try ContentReader(path: objectPath(of: content), content: content)
        } catch ContentError.missing where isOwnObject(content.objectID) {
            throw ContentError.lost
        }
    }

    private func isOwnObject(_ id: Identifier) -> Bool {
        tags.withKeyOpen { tags.isOwnObject(id) }
    }

    /// Decrypts `item`'s content and hands it, in order, to `write`, called on this thread
    /// while the next chunks are decrypted on the pipeline's workers. Stops at the first chunk
    /// that fails authentication.
    /// - Throws: `ContentError`, `Cancelled`, or what `write` throws.
    public func readContent(of item: Item, observer: TransferObserver = .none,
                            write: (UnsafeRawPointer, Int) throws -> Void) throws {
        guard let content = item.content else { throw VaultError.refused("is a folder") }
        try withOpenContent(content) { reader, key in
            try reader.stream(pipeline: pipeline, key: key, observer: observer, write: write)
        }
    }

    /// Opens the object of `content` and runs `body` with it and its key, counting damage.
    private func withOpenContent(_ content: ContentInfo, _ body: (ContentReader, UnsafeRawBufferPointer) throws -> Void) throws {
        try notingDamage {
            let reader = try reader(for: content)
            try keys.withKey(content.keySlot) { key in try body(reader, key) }
        }
    }

    /// Runs `body`, counting content that fails authentication or has grown (`damageFound`).
    func notingDamage<T>(_ body: () throws -> T) rethrows -> T {
        do {
            return try body()
        } catch let error as ContentError {
            switch error {
            case .chunkFailed, .wrongLength: damageFound += 1
            case .missing, .incomplete, .lost: break
            }
            throw error
        }
    }

    /// Writes `item`'s content to `fd`, a new, empty file. A file of a chunk or more goes past
    /// the page cache (`AlignedFileWriter`, as objects are written): export makes what it writes
    /// durable before it reports it, and copying it into the cache first only costs time. A
    /// smaller one goes through the cache, where many are made durable together. The chunks
    /// of a large one are written on the pipeline's writer while the next are read and opened.
    public func export(_ item: Item, to fd: FileDescriptor, observer: TransferObserver = .none) throws {
        guard let content = item.content, content.size >= UInt64(ContentFormat.chunkSize) else {
            try readContent(of: item, observer: observer) { p, n in try fd.writeAll(p, count: n) }
            return
        }
        let file = AlignedFileWriter(fd)
        try withOpenContent(content) { reader, key in
            try reader.streamInBackground(pipeline: pipeline, key: key, observer: observer) { p, n in try file.append(p, count: n) }
        }
        try file.finish()
    }

    /// Reads and authenticates the first `limit` bytes of `item` (for type checks and previews).
    public func readPrefix(of item: Item, limit: Int) throws -> [UInt8] {
        guard let content = item.content else { throw VaultError.refused("is a folder") }
        let reader = try reader(for: content)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: ContentFormat.chunkSize + AEAD.tagLength, alignment: 64)
        defer {
            wipe(UnsafeMutableRawBufferPointer(start: buffer, count: ContentFormat.chunkSize + AEAD.tagLength))
            buffer.deallocate()
        }
        let n = try notingDamage { try keys.withKey(content.keySlot) { try reader.readChunk(0, into: buffer, key: $0) } }
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
            var top = try notingDamage { try copyItem(source, to: parent, name: name, batch: batch, observer: observer) }
            if let victim = existing {
                try batch.take(nameOf: victim.id, for: top.id)
                top = victim
            }
            try batch.commit()
            return items[top.id] ?? top
        } catch {
            batch.abandon()
            throw error
        }
    }

    /// Stages a copy of `source` (and, for a folder, everything under it, depth first without
    /// recursion) as `name` in `parent`; returns the copy of `source`.
    private func copyItem(_ source: Item, to parent: Identifier, name: String, batch: ImportBatch, observer: TransferObserver) throws -> Item {
        var top: Item?
        var pending: [(source: Item, parent: Identifier, name: String)] = [(source, parent, name)]
        while let (item, parent, name) = pending.popLast() {
            let copied: Item
            if item.isFolder {
                copied = try batch.addFolder(named: name, in: parent, modified: item.modified)
                pending += children(of: item.id).sorted(by: { $0.name > $1.name }).map { ($0, copied.id, $0.name) }
            } else {
                let content = item.content!
                let plaintext = PlaintextSource(try reader(for: content), keys: keys)
                copied = try batch.addFile(named: name, in: parent, modified: item.modified, sizeHint: content.size,
                                           source: { try plaintext.read(into: $0, max: $1) },
                                           classify: { _ in (content.mime, content.kind) }, observer: observer)
            }
            if top == nil { top = copied }
        }
        return top!
    }

    /// Authenticates every chunk of every file item, and reports what else keeps the vault
    /// from being whole in this copy: content not here, journals cut short, items held for
    /// folders that have not arrived, records of this device lost.
    public func verify(observer: TransferObserver = .none) throws -> VerifyReport {
        try verify(only: nil, observer: observer)
    }

    /// Reads and authenticates the content of the files among `items` (nil: every file), as
    /// `verify` does, without looking at the metadata: those damaged, and those not (wholly)
    /// on this device.
    func authenticateContent(only items: Set<Identifier>?, observer: TransferObserver = .none) throws
        -> (damaged: [VerifyFailure], missing: [VerifyFailure]) {
        let size = ContentFormat.chunkSize + AEAD.tagLength
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer {
            wipe(UnsafeMutableRawBufferPointer(start: buffer, count: size))
            buffer.deallocate()
        }
        var damaged: [VerifyFailure] = [], missing: [VerifyFailure] = []
        var done: UInt64 = 0
        for item in view.items.values where !item.isFolder && (items?.contains(item.id) ?? true) {
            let content = item.content!
            do {
                let reader = try reader(for: content)
                for index in 0..<reader.chunkCount {
                    if observer.isCancelled() { throw Cancelled() }
                    let n = try keys.withKey(content.keySlot) { try reader.readChunk(index, into: buffer, key: $0) }
                    done += UInt64(n)
                    observer.progress(done)
                }
            } catch let error as ContentError {
                let failure = VerifyFailure(item: item, path: path(of: item.id), reason: error.description)
                switch error {
                case .missing, .incomplete, .lost: missing.append(failure)
                default: damaged.append(failure)
                }
            } catch let error as StoreFileError {
                damaged.append(VerifyFailure(item: item, path: path(of: item.id), reason: error.description))
            }
        }
        return (damaged, missing)
    }

    /// As `verify(observer:)`, authenticating only the files among `items` (nil: every file);
    /// the metadata's problems are reported all the same.
    public func verify(only items: Set<Identifier>?, observer: TransferObserver = .none) throws -> VerifyReport {
        var report = VerifyReport(checked: items?.count ?? view.items.count)
        (report.damaged, report.missing) = try authenticateContent(only: items, observer: observer)
        damageFound += report.damaged.count
        report.damaged.sort { $0.path < $1.path }
        report.missing.sort { $0.path < $1.path }
        for file in journals.values.sorted(by: { $0.id < $1.id }) {
            if file.device != device {
                // Another device's journal: a problem only when no copy of it holds more, and
                // not when that write is unfinished in every copy (its device cuts it off), nor
                // once its device noted that very cut — its whole records ending where they end
                // here (not a cut earlier since: review BP-1) — and went on in a later journal
                // (`tail noted`; review BN-3: every verify of every other device failed for good).
                let named = "the journal of device \(deviceName(file.device)) (\(file.id.hex.prefix(8)))"
                if file.cutBytesOfLongest > 0 && file.longestEndsUnfinished {
                    report.notes.append("\(named) ends in \(file.cutBytesOfLongest) bytes of a write that device never finished (a kill or crash there, or a copy taken while it was written)")
                } else if file.cutBytesOfLongest > 0, let end = file.longestEnd, state.notedTails[file.id]?.contains(end.offset) == true {
                    report.notes.append("\(named) ends in \(file.cutBytesOfLongest) bytes that are not a whole record, which that device noted, going on in a later journal")
                } else if file.cutBytesOfLongest > 0 {
                    report.problems.append("\(named) ends in \(file.cutBytesOfLongest) bytes that are not a whole record: still arriving, or cut short")
                } else if let end = file.longestEnd, let noted = state.notedTails[file.id]?.max(), noted > end.offset {
                    // Cut between two records before where its device noted its records ending
                    // (review BQ-3): whole, yet short of records that device committed.
                    report.problems.append("\(named) ends \(noted - end.offset) bytes before where that device noted its records ending: records it committed are missing here (a copy still arriving, or cut short)")
                }
                continue
            }
            guard let end = file.end, end.cutBytes > 0 else { continue }
            // An unfinished write kept (`chooseAppendTarget`); one whose record another device
            // had read is a cut, below, with this device's records missing (review BA-3), and
            // so is one in a journal a snapshot has retired since (which, when records were
            // missing, stands for them: `tidy`), since it can no longer tell.
            if end.unfinished && !newlyFoundCuts.contains(file.id) && !ownRecordsMayBeLost
                && !state.isRetired(RetiredFile(kind: .journal, id: file.id)) {
                report.notes.append("this device's journal (\(file.id.hex.prefix(8))) ends in \(end.cutBytes) bytes of a write that a kill or crash stopped before it finished, kept (they could not be cut off)")
                continue
            }
            let text = "this device's journal (\(file.id.hex.prefix(8))) ends in \(end.cutBytes) bytes that are not a whole record: a write cut short, or the file was cut"
            // Reported the first time it is found; afterwards a note (the objects the lost
            // records may name are kept).
            if newlyFoundCuts.contains(file.id) { report.problems.append(text) } else { report.notes.append(text + " (reported before)") }
        }
        if ownRecordsMayBeLost && newlyFoundCuts.isEmpty {
            report.problems.append("records of this device are missing from this copy of the store")
        }
        for fork in recordForks {
            let whose = fork.device == device ? "this device" : "device \(deviceName(fork.device))"
            let text = fork.twoVersions(of: whose) + " (two copies of a store wrote as one device); both are read"
            if newOwnForks.contains(fork) { report.problems.append(text) } else { report.notes.append(text) }
        }
        for id in journalsWithUnreadRecordsFound.sorted() {
            report.problems.append("this device's journal \(id.hex.prefix(8)) held records that its retirement did not read (another copy of this store writing as this device, or records this copy had lost); they were kept")
        }
        if let lostOwnRecordsFound { report.problems.append(lostOwnRecordsFound) }
        report.problems += inventory.misshapenProblems
        let misplaced = misplacedFileReports()
        report.problems += misplaced.problems
        if let note = misplaced.note { report.notes.append(note) }
        report.problems += dropsLeft.filter { !$0.mayBeArriving }.map(\.said)
        report.notes += dropsLeft.filter(\.mayBeArriving).map(\.said)
        report.problems += unreadableCopies.map { "\($0), named as a file of a journal, does not open as one (no copy of it, or altered)" }
        report.problems += othersRecordsMissing
        // Review DW-1: objects were kept back for these without a word.
        for other in devicesWithRecordsMissing where other != device {
            let first = knowledge[other] + 1, last = state.devices[other]!.lastSeq
            let records = first == last ? "record \(first) of device \(deviceName(other)) (\(other.hex.prefix(8))) is" : "records \(first)–\(last) of device \(deviceName(other)) (\(other.hex.prefix(8))) are"
            report.notes.append("\(records) not here yet (an older journal of it has not arrived): no retired object is deleted until they are, or until 'devices forget \(other.hex.prefix(8))'")
        }
        for (other, record) in state.waitingDevices.sorted(by: { $0.key < $1.key }) where other != device && record.lastSeq == 0 {
            report.notes.append("device \(other.hex.prefix(8)) has written records that another device read, none of which is here yet: no retired file is deleted until they are, or until 'devices forget \(other.hex.prefix(8))'")
        }
        if view.held > 0 {
            report.problems.append(view.held == 1 ? "1 item waits for a folder whose records have not arrived" : "\(view.held) items wait for folders whose records have not arrived")
        }
        report.skippedMoves = view.fallenBack.keys.map { ($0, path(of: $0)) }.sorted { $0.1 < $1.1 }.map(\.0)
        // Once the lost records are back (a whole journal restored), the objects they name are
        // no longer kept for them: not worth a note.
        let keptUnnamed = state.kept.filter { !state.referencedObjects.contains($0) && inventory.files[$0] != nil }
        if !keptUnnamed.isEmpty {
            // Kept by whichever device lost them (`keep` is merged across devices).
            report.notes.append(keptUnnamed.count == 1 ? "1 object is kept because records that may name it were lost (by the device that wrote it)"
                                : "\(keptUnnamed.count) objects are kept because records that may name them were lost (by the devices that wrote them)")
        }
        // Files named like objects that no record here names and no device's tag marks as its
        // own leftovers: another device's whose records have not arrived, or put there by
        // hand or by a remote (review CG-4: taken in by `sync` and kept, said nowhere), or a drop
        // whose header a flipped bit keeps from opening (review EZ-4: said as none of these).
        let strangers = inventory.files.filter { id, entry in
            journals[id] == nil && !entry.legacy && !state.referencedObjects.contains(id) && !state.kept.contains(id)
                && state.retired[RetiredFile(kind: .object, id: id)] == nil
        }.map(\.key)
        let unnamedByAnyone = tags.withKeyOpen { strangers.filter { !tags.isOwnObject($0) && !tags.isJournal($0) } }
        if !unnamedByAnyone.isEmpty {
            let bytes = unnamedByAnyone.reduce(Int64(0)) { total, id in
                total + (inventory.files[id]?.main.flatMap { try? FileSystem.lstatIfExists(layout.root + "/" + $0) }.map { Int64($0.st_size) } ?? 0)
            }
            let one = unnamedByAnyone.count == 1
            report.notes.append("\(unnamedByAnyone.count) file\(one ? "" : "s") in the store named like \(one ? "an object is" : "objects are") named by no record here (\(bytes) bytes): another device's whose records have not arrived yet, a drop whose header does not open (damaged), or put there by hand or by a remote; kept")
        }
        // Files named after a retired file are backups of something no longer needed: not worth
        // a word (and made copies, they would go with it).
        let names = inventory.unrecognised.filter { file in
            ![RetiredFile.Kind.object, .journal, .keyFile].contains { state.isRetired(RetiredFile(kind: $0, id: file.id)) }
        }.map(\.path).sorted()
        if !names.isEmpty {
            report.notes.append("\(someFiles(names)) named like store files but as no sync engine names a copy, and not read: \(firstFew(names)) (to have one read as a copy, add .sync-conflict to its name)")
        }
        report.undecodableStoreFiles = inventory.undecodable.sorted { $0.lexicographicallyPrecedes($1) }
        return report
    }

    /// Bytes the store uses for `item`'s content (padding and tags included).
    public func storedSize(of item: Item) -> Int64 {
        guard let c = item.content else { return 0 }
        return ContentFormat.objectLength(size: c.size)
    }
}

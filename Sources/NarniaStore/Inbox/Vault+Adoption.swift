import NarniaCrypto
import NarniaKinds
import NarniaSystem

/// What adopting the drops found at unlock did.
public struct Adoption: Sendable {
    /// The files adopted, now items of the vault.
    public var items: [Item] = []
    /// The path of the inbox folder the files went to (the `inbox` setting, or the folder
    /// made for it where a file holds that name).
    public var folder = Vault.defaultInboxFolder
    /// Drops that were found damaged or incomplete and left as they are, one sentence each.
    public var problems: [String] = []
}

/// Adopting drops (docs/FORMAT.md, "The inbox"): at unlock, the objects no record names are
/// tried as drops; each one whose header opens under an inbox secret key, whose length is
/// whole and whose every chunk authenticates becomes an ordinary item under the inbox folder,
/// keeping the drop's content key (nothing is re-encrypted), in one journal record.
extension Vault {
    /// The inbox folder when the `inbox` setting does not name one.
    public static let defaultInboxFolder = "/Inbox"
    /// The attachment purpose that marks an item as having come through the inbox; its bytes
    /// are the drop time (i64, little-endian nanoseconds).
    static let inboxMark = "inbox"

    /// The inbox folder's path (the `inbox` setting).
    public var inboxFolder: String {
        let path = settings["inbox"] ?? Self.defaultInboxFolder
        return path.unicodeScalars.first == "/" ? path : Self.defaultInboxFolder
    }

    /// When `item` came through the inbox, the time it was dropped; nil for everything else.
    public func droppedTime(of item: Item) -> Int64? {
        guard let bytes = attachment(Self.inboxMark, of: item.id), bytes.count == 8 else { return nil }
        return bytes.reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
    }

    /// Finds the drops in this copy of the store and adopts every whole one. `classifyLater`
    /// names each file's type from its first chunk, as for `import`. Damaged or incomplete
    /// drops are reported in the result and left alone. Without an inbox key, or without
    /// drops, nothing is written.
    /// - Throws: what committing the record throws (a full disk, say); nothing is adopted then.
    public func adoptDrops(classifyLater: (UnsafeRawBufferPointer) -> () -> ContentType) throws -> Adoption {
        var adoption = Adoption(folder: inboxFolder)
        let pairs = inboxKeyPairs
        guard !pairs.isEmpty else { return adoption }
        let hold = keys.holdOpen()
        defer { withExtendedLifetime(hold) {} }
        let opener = try DropOpener(pairs: pairs)
        opener.beginAccess()
        defer { opener.endAccess() }
        var found: [FoundDrop] = []
        dropsLeft = []
        func leave(_ id: Identifier, _ why: String, mayBeArriving: Bool = false) {
            let said = "drop \(id.hex.prefix(8)) \(why); it was left as it is"
            adoption.problems.append(said)
            dropsLeft.append((said, mayBeArriving))
        }
        for (id, paths) in dropCandidates() {
            do {
                guard let drop = try openDrop(id, paths: paths, opener: opener, classifyLater: classifyLater) else { continue }
                found.append(drop)
            } catch let problem as DropProblem {
                leave(id, problem.why, mayBeArriving: problem.mayBeArriving)
            } catch {
                leave(id, "could not be read (\(error))")
            }
        }
        guard !found.isEmpty else { return adoption }
        found.sort { ($0.header.dropped, $0.id) < ($1.header.dropped, $1.id) }
        var plan = AdoptionPlan(vault: self)
        let inbox = plan.folder(path: adoption.folder)
        var adopted: [Identifier] = []
        for drop in found {
            var components = drop.names
            let name = components.removeLast()
            var parent = inbox
            for (depth, folder) in components.enumerated() {
                let relative = components[...depth].joined(separator: "/")
                parent = plan.subfolder(named: folder, in: parent, key: drop.header.batch.bytes + Array(relative.utf8))
            }
            let id = inboxItemID(of: drop.id)
            guard state.items[id] == nil, !state.tombstones.contains(id) else { keys.remove(drop.content.keySlot); continue }
            var content = drop.content
            (content.mime, content.kind) = drop.type()
            let now = Vault.now()
            var dropped = ByteWriter(capacity: 8)
            dropped.i64(drop.header.dropped)
            plan.ops.append(.createFile(id: id, place: Place(parent: parent, name: plan.claim(name, in: parent)), created: now,
                                        modified: drop.header.modified, content: content))
            plan.ops.append(.setAttachment(item: id, object: drop.id, purpose: Self.inboxMark, bytes: dropped.bytes))
            adopted.append(id)
        }
        guard !adopted.isEmpty else { return adoption }
        do {
            try commit(plan.ops, view: .rebuild)
        } catch {
            for drop in found where adopted.contains(inboxItemID(of: drop.id)) { keys.remove(drop.content.keySlot) }
            throw error
        }
        adoption.items = adopted.compactMap { view.items[$0] }
        adoption.folder = path(of: inbox)
        return adoption
    }

    /// The identifier of the item adopting drop `id`: the same on every device.
    private func inboxItemID(of id: Identifier) -> Identifier {
        tags.withKeyOpen { tags.inboxItemIdentifier(Array("drop".utf8) + id.bytes) }
    }

    /// Objects in this copy that no record names and that are neither journals nor this
    /// device's own: drops, or other devices' objects whose records have not arrived.
    private func dropCandidates() -> [(Identifier, [String])] {
        let unnamed = inventory.files.filter { id, entry in
            !entry.legacy && journals[id] == nil && !state.referencedObjects.contains(id) && !state.kept.contains(id)
                && state.retired[RetiredFile(kind: .object, id: id)] == nil
        }
        return tags.withKeyOpen {
            unnamed.compactMap { id, entry in
                guard !tags.isJournal(id), !tags.isOwnObject(id), !entry.all.isEmpty else { return nil }
                return (id, entry.all)
            }
        }.sorted { $0.0 < $1.0 }
    }

    /// A drop whose header opened, whose length is whole and whose content authenticates.
    private struct FoundDrop {
        let id: Identifier
        let header: DropHeader
        /// The names of its path (folders, then the file's), NFC.
        let names: [String]
        /// Its content, with the key in the key table; type not yet filled in.
        let content: ContentInfo
        let type: () -> ContentType
    }

    /// Why a recognised drop is not adopted.
    private struct DropProblem: Error {
        let why: String
        /// True for a drop not whole yet (a sync engine still bringing it): not a fault.
        var mayBeArriving = false
    }

    /// Tries the files of object `id` (its file, then the copies a sync engine made of it) as
    /// a drop, and gives the first whole one: a whole copy stands in for a cut file, as it
    /// does once a record names the object. Nil when no inbox key opens a header; the first
    /// file's problem when none is whole.
    private func openDrop(_ id: Identifier, paths: [String], opener: DropOpener,
                          classifyLater: (UnsafeRawBufferPointer) -> () -> ContentType) throws -> FoundDrop? {
        var firstProblem: Error?
        for path in paths {
            do {
                if let drop = try openDrop(id, path: path, opener: opener, classifyLater: classifyLater) { return drop }
            } catch {
                firstProblem = firstProblem ?? error
            }
        }
        if let firstProblem { throw firstProblem }
        return nil
    }

    /// Tries the file `path` as a drop: nil when no inbox key opens its header (not a drop,
    /// or not one this vault can read); a problem when it is a drop but not a whole one.
    private func openDrop(_ id: Identifier, path: String, opener: DropOpener,
                          classifyLater: (UnsafeRawBufferPointer) -> () -> ContentType) throws -> FoundDrop? {
        let fd = try JournalReader.openStoreFile(layout.root + "/" + path)
        let length = try fd.size()
        guard length >= Int64(DropFormat.headerLength) else { return nil }
        var bytes = [UInt8](repeating: 0, count: DropFormat.headerLength)
        _ = try bytes.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: $0.count, offset: 0) }
        guard let header = opener.open(bytes, drop: id) else { return nil }
        return try check(id, header: header, contentKey: opener.contentKey, fd: fd, length: length, classifyLater: classifyLater)
    }

    /// Checks a drop whose header opened: its length, its path, and every chunk.
    private func check(_ id: Identifier, header: DropHeader, contentKey: Secret, fd: FileDescriptor, length: Int64,
                       classifyLater: (UnsafeRawBufferPointer) -> () -> ContentType) throws -> FoundDrop {
        guard header.size <= DropFormat.largestSize else {
            throw DropProblem(why: "says it holds \(header.size) bytes, more than any drop can (altered)")
        }
        let expected = DropFormat.length(size: header.size)
        if length < expected {
            throw DropProblem(why: "is incomplete (\(length) of its \(expected) bytes are here: still arriving, or cut)", mayBeArriving: true)
        }
        if length > expected { throw DropProblem(why: "has \(length) bytes instead of \(expected) (altered)") }
        // Names as `import` gives them (NFC): a dropper other than this program may send others.
        // Split by scalar: a name may begin with a combining mark (review BH-5).
        let given = header.path.unicodeScalars.split(separator: "/", omittingEmptySubsequences: false).map { String(String.UnicodeScalarView($0)) }
        let names = given.compactMap { try? ItemName.validated($0) }
        guard !names.isEmpty, names.count == given.count else {
            throw DropProblem(why: "carries a name that is not allowed")
        }
        let slot = try contentKey.withUnsafeBytes { try keys.add($0) }
        let content = ContentInfo(objectID: id, keySlot: slot, size: header.size, mime: "", kind: .other,
                                  offset: UInt64(DropFormat.headerLength), objectLength: length)
        var first: [UInt8] = []
        do {
            let reader = try ContentReader(fd: fd, content: content)
            try keys.withKey(slot) { key in
                try reader.stream(pipeline: pipeline, key: key, observer: .none) { p, n in
                    if first.count < ContentFormat.chunkSize {
                        first.append(contentsOf: UnsafeRawBufferPointer(start: p, count: min(n, ContentFormat.chunkSize - first.count)))
                    }
                }
            }
        } catch let e as ContentError {
            keys.remove(slot)
            throw DropProblem(why: "is damaged: \(e)")
        } catch {
            keys.remove(slot)
            throw error
        }
        defer { first.withUnsafeMutableBytes { wipe($0) } }
        let type = first.withUnsafeBytes { classifyLater($0) }
        return FoundDrop(id: id, header: header, names: names, content: content, type: type)
    }
}

/// Opens drop headers with the inbox secret keys, reusing its secret memory from one drop to
/// the next (an unlock may meet a thousand drops): the header key and the content key of the
/// last header opened live here.
private final class DropOpener {
    let pairs: [InboxKeyPair]
    let agreement: X25519.Agreement
    let headerKey: Secret
    let contentKey: Secret

    init(pairs: [InboxKeyPair]) throws {
        self.pairs = pairs
        agreement = try X25519.Agreement(context: DropFormat.keyContext, bindingLength: 2 * X25519.keyLength)
        headerKey = try Secret(zeroedCount: SymmetricKeyLength)
        contentKey = try Secret(zeroedCount: SymmetricKeyLength)
    }

    func beginAccess() {
        agreement.beginAccess()
        for secret in [headerKey, contentKey] + pairs.map(\.secret) { secret.beginAccess() }
    }

    func endAccess() {
        agreement.endAccess()
        for secret in [headerKey, contentKey] + pairs.map(\.secret) { secret.endAccess() }
    }

    /// The header of the drop whose first 4,096 bytes are `bytes`, its content key put in
    /// `contentKey`; nil when no inbox key opens it.
    func open(_ bytes: [UInt8], drop id: Identifier) -> DropHeader? {
        let ephemeral = Array(bytes[0..<32]), nonce = Array(bytes[32..<56]), sealed = Array(bytes[56...])
        for pair in pairs {
            guard agreement.agree(secret: pair.secret, publicKey: ephemeral,
                                  binding: DropFormat.binding(ephemeral: ephemeral, recipient: pair.publicKey), into: headerKey),
                  var plaintext = try? AEAD.open(sealed, additionalData: DropFormat.additionalData(drop: id, ephemeral: ephemeral, recipient: pair.publicKey),
                                                 nonce: nonce, key: headerKey) else { continue }
            defer { plaintext.withUnsafeMutableBytes { wipe($0) } }
            return contentKey.withUnsafeMutableBytes { DropHeader.decode(plaintext, keyOut: $0) }
        }
        return nil
    }
}

/// The folders and names of one adoption: the inbox folder and the folders of folder drops,
/// found by name or made with identifiers derived from the master key, so that two devices
/// adopting the same drops make the same folders.
private struct AdoptionPlan {
    let vault: Vault
    var ops: [Operation] = []
    /// Folders this adoption makes, by parent and name.
    var made: [Identifier: [String: Identifier]] = [:]
    var claimed: [Identifier: Set<String>] = [:]

    init(vault: Vault) { self.vault = vault }

    /// The folder at `path` (absolute), made where missing.
    mutating func folder(path: String) -> Identifier {
        var parent = Identifier.root
        var walked = ""
        for name in path.pathComponents {   // by scalar, as `set inbox` checks it (review BH-6)
            walked += "/" + name
            parent = subfolder(named: name, in: parent, key: Array("folder".utf8) + Array(walked.utf8))
        }
        return parent
    }

    /// The folder `name` in `parent`; where a file holds the name, the folder an earlier
    /// adoption made for `key` beside it under a numbered name, if still shown (files of one
    /// drop arriving over several unlocks, or a file where the inbox folder should be, go to
    /// one folder, not a new numbered one each time); else a folder made with an identifier
    /// derived from `key`. A folder of the name moved or renamed away is not followed: a new
    /// one is made.
    mutating func subfolder(named name: String, in parent: Identifier, key: [UInt8]) -> Identifier {
        let clean = (try? ItemName.validated(name)) ?? "Inbox"
        if let id = made[parent]?[clean] { return id }
        if let existing = vault.child(named: clean, in: parent) {
            if existing.isFolder { return existing.id }
            if let earlier = shownFolder(derivedFrom: key, in: parent, numbering: clean) { return earlier }
        }
        let id = freshIdentifier(key)
        let now = Vault.now()
        ops.append(.createFolder(id: id, place: Place(parent: parent, name: claim(clean, in: parent)), created: now, modified: now))
        made[parent, default: [:]][clean] = id
        return id
    }

    /// A name in `parent` that no item and no other adopted item holds.
    mutating func claim(_ name: String, in parent: Identifier) -> String {
        let unique = vault.availableName(name, in: parent, reserved: claimed[parent] ?? [])
        claimed[parent, default: []].insert(unique)
        return unique
    }

    /// The latest folder an adoption made for `key` when the vault still shows it in `parent`
    /// under a numbered form of `name`; nil when there is none, or it was removed, moved or
    /// renamed.
    private func shownFolder(derivedFrom key: [UInt8], in parent: Identifier, numbering name: String) -> Identifier? {
        let had = Array(derivedIdentifiers(key).prefix { vault.state.items[$0] != nil || vault.state.tombstones.contains($0) })
        guard let latest = had.last, let folder = vault.view.items[latest], folder.isFolder, folder.parent == parent,
              (2...1000).contains(where: { ItemName.numbered(name, $0) == folder.name }) else { return nil }
        return latest
    }

    /// The first identifier derived from `key` (and a counter) that no item has had.
    private func freshIdentifier(_ key: [UInt8]) -> Identifier {
        derivedIdentifiers(key).first { id in
            vault.state.items[id] == nil && !vault.state.tombstones.contains(id)
                && !made.values.contains(where: { $0.values.contains(id) })
        }!
    }

    /// The identifiers derived from `key` and a counter n = 0, 1, …
    private func derivedIdentifiers(_ key: [UInt8]) -> some Sequence<Identifier> {
        (UInt32(0)...).lazy.map { n in
            var input = key
            withUnsafeBytes(of: n.littleEndian) { input += $0 }
            return vault.tags.withKeyOpen { vault.tags.inboxItemIdentifier(input) }
        }
    }
}

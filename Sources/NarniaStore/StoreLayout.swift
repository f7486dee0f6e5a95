import Dispatch
import Glibc
import NarniaCrypto
import NarniaSystem
import Synchronization

/// Where things live inside a store directory (docs/FORMAT.md, "Files").
///
/// ```
/// DIR/<32 hex>            key files (format 2: 98 bytes; format 1: one of 114 bytes)
/// DIR/<2 hex>/<32 hex>    format-2 files: journals, content objects and packs
/// DIR/<2 hex>/<30 hex>    format-1 objects, kept where they are after an upgrade
/// ```
/// Every name is random hex; the first two digits of an identifier pick its sub-directory so
/// that no directory grows past a few thousand entries per million files. Copies that sync
/// engines make of a file (`NAME.sync-conflict-…`, `NAME (conflicted copy …)`) keep the
/// name they copy as a prefix, and are recognised by it.
final class StoreLayout: Sendable {
    let root: String
    /// The shard directories known to exist (made durable), so that each is checked once.
    private let knownShards = Mutex(Set<String>())
    /// Shard directories this process made whose entries wait for the next `syncfs`
    /// (`ensureShard(for:durable: false)`).
    private let unsyncedShards = Mutex(Set<String>())

    init(root: String) { self.root = root }

    func shardName(for id: Identifier) -> String { String(id.hex.prefix(2)) }

    func shardDirectory(for id: Identifier) -> String { root + "/" + shardName(for: id) }

    /// The path of a format-2 file (`legacy: false`) or of a format-1 object.
    func objectPath(for id: Identifier, legacy: Bool = false) -> String {
        let hex = id.hex
        return root + "/" + String(hex.prefix(2)) + "/" + (legacy ? String(hex.dropFirst(2)) : hex)
    }

    func keyFilePath(named id: Identifier) -> String { root + "/" + id.hex }

    /// Creates the shard directory of `id` if needed, making its entry durable at once, or,
    /// with `durable: false`, at the next `syncfs` of the store (`syncingShards`): for the
    /// objects of an import batch, whose commit syncs the store before any record names them.
    /// A new vault's first import otherwise paid one `fsync` of the store per shard, 256 in all.
    func ensureShard(for id: Identifier, durable: Bool = true) throws {
        let dir = shardDirectory(for: id)
        if knownShards.withLock({ $0.contains(dir) }) { return }
        if unsyncedShards.withLock({ $0.contains(dir) }) {
            if durable { try syncUnsyncedShards() }
            return
        }
        if let st = try FileSystem.lstatIfExists(dir) {
            // A link there (someone who can write the store, a sync engine carrying links)
            // is not followed: what went through it would be reported done, yet never read
            // (review AH).
            guard st.isDirectory else {
                throw VaultError.refused("\(dir) in the store is \(st.isSymbolicLink ? "a symbolic link" : "not a folder"): nothing is written through it; put a folder of that name there")
            }
        } else {
            try FileSystem.makeDirectory(dir, existingOK: true)
            if !durable {
                unsyncedShards.withLock { _ = $0.insert(dir) }
                return
            }
            try FileSystem.syncDirectory(root)
        }
        knownShards.withLock { _ = $0.insert(dir) }
    }

    /// The shard directories made without `durable` whose entries are not yet known durable.
    var shardsAwaitingSync: Set<String> { unsyncedShards.withLock { $0 } }

    /// Makes the entries of the shard directories made without `durable` durable now.
    func syncUnsyncedShards() throws {
        guard unsyncedShards.withLock({ !$0.isEmpty }) else { return }
        try syncingShards { try FileSystem.syncDirectory(root) }
    }

    /// Runs `sync`, which makes the store's directory durable (its `fsync`, or a `syncfs`);
    /// the shard directories made without `durable` before it began are durable after it.
    func syncingShards(_ sync: () throws -> Void) throws {
        let made = unsyncedShards.withLock { $0 }
        try sync()
        unsyncedShards.withLock { $0.subtract(made) }
        knownShards.withLock { $0.formUnion(made) }
    }
}

/// How a store file's name is read: the identifier it names, and whether it is a copy that a
/// sync engine made.
enum StoreName {
    /// True when `rest`, what follows an identifier in a file name, is how a sync engine names
    /// a conflicting copy: Syncthing `.sync-conflict-…`, Dropbox and Nextcloud
    /// ` (conflicted copy …)`, ownCloud `_conflict-…`, rclone bisync `.conflict1` or `..path1`,
    /// the OneDrive Linux client's `-HOST-safeBackup-NNNN`. Nothing broader: a copy of a
    /// retired file goes with it, and a hand backup must not — so OneDrive's Windows form,
    /// `-COMPUTERNAME`, which cannot be told from `KEY-OLD`, is not taken (`verify` names such a
    /// file, and how to have it read).
    ///
    /// A copy's transfer in flight is none: `J.sync-conflict-….narnia-sending-…`, cut short,
    /// was fetched as a copy, sent back and never deleted (review AM).
    static func isConflictSuffix(_ rest: Substring) -> Bool {
        if rest.isEmpty || isTransferInFlight(rest) { return false }
        let lower = rest.lowercased()
        return lower.contains("conflict") || lower.hasPrefix("..path") || isOneDriveSuffix(rest)
    }

    private static func isOneDriveSuffix(_ rest: Substring) -> Bool {
        guard rest.hasPrefix("-"), let backup = rest.dropFirst().firstRange(of: "-safeBackup-") else { return false }
        let number = rest[backup.upperBound...]
        return backup.lowerBound > rest.index(after: rest.startIndex) && !number.isEmpty && number.allSatisfy { ("0"..."9").contains($0) }
    }

    /// The identifier named by `name` when it is exactly `digits` hex digits, or that followed
    /// by a conflict suffix; nil otherwise. `prefix` is prepended (a shard's two digits).
    static func identifier(in name: String, digits: Int, prefix: String = "") -> (id: Identifier, isCopy: Bool)? {
        guard let (id, rest) = split(name, digits: digits, prefix: prefix), rest.isEmpty || isConflictSuffix(rest) else { return nil }
        return (id, !rest.isEmpty)
    }

    /// `name` as the identifier its first `digits` hex digits name (after `prefix`) and what
    /// follows them; nil when it does not begin with exactly `digits` hex digits.
    private static func split(_ name: String, digits: Int, prefix: String) -> (id: Identifier, rest: Substring)? {
        let utf8 = name.utf8
        guard utf8.prefix(while: isHexDigit).count == digits else { return nil }
        let hex = Substring(utf8.prefix(digits))
        guard let id = Identifier(hex: prefix.isEmpty ? hex : Substring(prefix + hex)) else { return nil }
        return (id, Substring(utf8.dropFirst(digits)))
    }

    /// The identifier `name` begins with when it is exactly `digits` hex digits followed by
    /// something that is neither a conflict suffix nor a temporary name a transfer in flight
    /// gives (this program's `.narnia-sending-…`, rclone's `.….partial`, Resilio's `.!sync`);
    /// nil otherwise. `prefix` is prepended (a shard's two digits).
    static func unrecognisedCopy(in name: String, digits: Int, prefix: String = "") -> Identifier? {
        guard let (id, rest) = split(name, digits: digits, prefix: prefix), !rest.isEmpty, !isConflictSuffix(rest),
              !isTransferInFlight(rest) else { return nil }
        return id
    }

    /// True when `name` is exactly `digits` hex digits (after `prefix`) followed by a temporary
    /// name a transfer in flight gives (`isTransferInFlight`).
    static func isTransferInFlight(_ name: String, digits: Int, prefix: String = "") -> Bool {
        guard let (_, rest) = split(name, digits: digits, prefix: prefix) else { return false }
        return isTransferInFlight(rest)
    }

    /// True when `rest`, what follows an identifier, names a transfer in flight, of the file or
    /// of a copy of it: this program's `.narnia-sending-DEVICE`, rclone's `.….partial`,
    /// Resilio's `.!sync`.
    private static func isTransferInFlight(_ rest: Substring) -> Bool {
        rest.contains(".narnia-sending-") || rest.hasSuffix(".partial") || rest.hasSuffix(".!sync")
    }

    /// True when `name` begins with exactly `digits` hex digits followed by something: the
    /// shape of a store file's copy, whatever the rest says.
    static func beginsLikeStoreFile(_ name: String, digits: Int) -> Bool {
        name.utf8.prefix(while: isHexDigit).count == digits && name.utf8.count > digits
    }

    static func isHexDigit(_ c: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(c)
    }

    static func isShardName(_ name: String) -> Bool { name.utf8.count == 2 && name.utf8.allSatisfy(isHexDigit) }
}

/// The tags that let the vault, and nobody without its master key, tell its files apart by
/// name (docs/FORMAT.md, "Names"): a journal's identifier and a content object's end with six
/// bytes of keyed BLAKE2b over their first ten, so the names look random to everybody else.
final class NameTags {
    private let key: Secret
    /// This device, whose content objects carry its tag.
    let device: Identifier

    static let randomLength = 10
    static let tagLength = 6

    init(key: Secret, device: Identifier) {
        self.key = key
        self.device = device
    }

    private enum Domain: UInt8 {
        case journal = 0x6a, object = 0x6f, syncTemporary = 0x74, device = 0x64, inboxPublicKey = 0x70, inboxItem = 0x69
    }

    private func tag(_ domain: Domain, device: Identifier?, random: ArraySlice<UInt8>) -> [UInt8] {
        var input: [UInt8] = [domain.rawValue]
        if let device { input += device.bytes }
        input += random
        return key.keyedHash(input, length: Self.tagLength)
    }

    private func make(_ domain: Domain, device: Identifier?, random: [UInt8] = randomBytes(randomLength)) -> Identifier {
        Identifier(random + tag(domain, device: device, random: random[...]))
    }

    /// A fresh identifier for a content object of this device that orders after `floor`
    /// (hex digits, as the merge compares them): its random part drawn uniformly from those
    /// greater than `floor`'s. Nil when none is (a pack repacked some fifty times in a row).
    func newObject(after floor: Identifier) -> Identifier? {
        let bits = UInt128(8 * Self.randomLength)
        let top = (UInt128(1) << bits) - 1
        let low = floor.bytes.prefix(Self.randomLength).reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
        guard low < top else { return nil }
        let draw = randomBytes(16).reduce(UInt128(0)) { $0 << 8 | UInt128($1) }
        var value = low + 1 + draw % (top - low)
        var random = [UInt8](repeating: 0, count: Self.randomLength)
        for i in stride(from: Self.randomLength - 1, through: 0, by: -1) {
            random[i] = UInt8(truncatingIfNeeded: value)
            value >>= 8
        }
        return make(.object, device: device, random: random)
    }

    private func check(_ id: Identifier, _ domain: Domain, device: Identifier?) -> Bool {
        let b = id.bytes
        return Array(b[Self.randomLength...]) == tag(domain, device: device, random: b[..<Self.randomLength])
    }

    /// A fresh journal identifier.
    func newJournal() -> Identifier { make(.journal, device: nil) }
    /// True when `id` names a journal (of any device).
    func isJournal(_ id: Identifier) -> Bool { check(id, .journal, device: nil) }

    /// The journals (of any device) among `ids`, in their order. A long list (an open of a
    /// store of 100,000 files) is checked on every core: it is one keyed hash a file.
    func journals(among ids: [Identifier]) -> [Identifier] {
        var found = [Bool](repeating: false, count: ids.count)
        let parts = ids.count < 4096 ? 1 : max(1, min(8, sysconf(Int32(_SC_NPROCESSORS_ONLN))))
        key.withKeyedHashing { hash in
            found.withUnsafeMutableBufferPointer { found in
                // Each part writes its own stretch of `found`.
                nonisolated(unsafe) let flags = found
                DispatchQueue.concurrentPerform(iterations: parts) { part in
                    // The tag's input and its place in the name, as `check` has them.
                    var input = [Domain.journal.rawValue] + [UInt8](repeating: 0, count: Self.randomLength)
                    var tag = [UInt8](repeating: 0, count: Self.tagLength)
                    for i in stride(from: ids.count * part / parts, to: ids.count * (part + 1) / parts, by: 1) {
                        let bytes = ids[i].bytes
                        input.replaceSubrange(1..., with: bytes[..<Self.randomLength])
                        input.withUnsafeBytes { i in tag.withUnsafeMutableBytes { hash(i, $0) } }
                        flags[i] = tag.elementsEqual(bytes[Self.randomLength...])
                    }
                }
            }
        }
        return ids.indices.lazy.filter { found[$0] }.map { ids[$0] }
    }

    /// A fresh identifier for a content object or pack written by this device.
    func newObject() -> Identifier { make(.object, device: device) }
    /// True when this device wrote the object `id`.
    func isOwnObject(_ id: Identifier) -> Bool { check(id, .object, device: device) }
    /// A fresh name for a folder `sync` receives files into.
    func newSyncTemporary() -> Identifier { make(.syncTemporary, device: device) }
    /// True when this device made the folder `id` for a sync.
    func isOwnSyncTemporary(_ id: Identifier) -> Bool { check(id, .syncTemporary, device: device) }

    /// The authenticator of an inbox public key file's first bytes (docs/FORMAT.md, "The
    /// inbox"): only the vault can make one, so that it notices a replaced file.
    func inboxKeyAuthenticator(file: Identifier, body: [UInt8]) -> [UInt8] {
        key.keyedHash([Domain.inboxPublicKey.rawValue] + file.bytes + body, length: 32)
    }

    /// The identifier of an item that adopting drops makes (the inbox folder, a folder of a
    /// folder drop, an adopted file): derived from the master key and what names it, so that
    /// two devices adopting the same drops make the same items.
    func inboxItemIdentifier(_ what: [UInt8]) -> Identifier {
        Identifier(key.keyedHash([Domain.inboxItem.rawValue] + what, length: 16))
    }

    /// Keeps the key readable for a run of checks (a scan of the whole store).
    func withKeyOpen<R>(_ body: () throws -> R) rethrows -> R {
        key.beginAccess()
        defer { key.endAccess() }
        return try body()
    }

    /// The identifier of the device that is this store directory on this machine: keyed
    /// BLAKE2b of the machine id and the directory's device and inode numbers, facts that a
    /// sync engine does not copy. A copy at another path, or a moved or restored one, is
    /// another device.
    static func deviceIdentifier(key: Secret, machineID: [UInt8], fileSystemDevice: UInt64, inode: UInt64) -> Identifier {
        var input: [UInt8] = [Domain.device.rawValue]
        input += machineID
        withUnsafeBytes(of: fileSystemDevice.littleEndian) { input += $0 }
        withUnsafeBytes(of: inode.littleEndian) { input += $0 }
        return Identifier(key.keyedHash(input, length: 16))
    }
}

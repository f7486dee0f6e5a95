import NarniaCrypto
import NarniaSystem

/// The inbox's public key as a dropper finds it, without the passphrase: a 72-byte file at the
/// top of the store, named by a random identifier (docs/FORMAT.md, "The inbox").
///
/// ```
/// 0   32  X25519 public key
/// 32  8   created (nanoseconds since the epoch): droppers use the newest file
/// 40  32  BLAKE2b-256 keyed with the names subkey over "p" || file id || bytes 0..<40
/// ```
/// A dropper cannot check the last field (it has no key); the vault can, and so notices a file
/// that someone who can write the store replaced.
public struct InboxPublicKeyFile: Sendable {
    public static let length = 72

    let id: Identifier
    /// The X25519 public key drops are sealed to.
    public let publicKey: [UInt8]
    let created: Int64
    /// Made by the vault when it writes the file (see the layout above).
    var authenticator: [UInt8]

    init(id: Identifier, publicKey: [UInt8], created: Int64, authenticator: [UInt8]) {
        (self.id, self.publicKey, self.created, self.authenticator) = (id, publicKey, created, authenticator)
    }

    /// The authenticated part: the key and its time.
    var body: [UInt8] {
        var w = ByteWriter(capacity: 40)
        w.raw(publicKey)
        w.i64(created)
        return w.bytes
    }

    var encoded: [UInt8] { body + authenticator }

    /// Reads a file's bytes; nil when it does not have the length of one.
    static func parse(id: Identifier, bytes: [UInt8]) -> InboxPublicKeyFile? {
        guard bytes.count == length else { return nil }
        var r = ByteReader(bytes)
        guard let key = try? r.take(32), let created = try? r.i64(), let tag = try? r.take(32) else { return nil }
        return InboxPublicKeyFile(id: id, publicKey: Array(key), created: created, authenticator: Array(tag))
    }

    /// Every inbox public key file at the top of the store `root` (copies a sync engine made
    /// included), read without the passphrase. Links and special files are refused as for any
    /// store file.
    static func all(inStore root: String, names: [Identifier: StoreInventory.Entry]) throws -> [InboxPublicKeyFile] {
        var found: [InboxPublicKeyFile] = []
        for (id, entry) in names {
            for path in entry.all {
                let bytes = try JournalReader.openStoreFile(root + "/" + path).readToEnd(limit: 4096)
                if let file = parse(id: id, bytes: bytes) { found.append(file) }
            }
        }
        return found
    }

    /// The file a dropper seals to: the newest (then the greatest identifier, so that every
    /// dropper picks the same one).
    static func newest(_ files: [InboxPublicKeyFile]) -> InboxPublicKeyFile? {
        files.max { ($0.created, $0.id) < ($1.created, $1.id) }
    }
}

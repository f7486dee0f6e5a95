import NarniaCrypto

/// The layout of a drop: a file added to the store without the passphrase, sealed to the
/// vault's inbox public key (docs/FORMAT.md, "The inbox").
///
/// ```
/// 0     32    ephemeral X25519 public key E, its top bit set at random
/// 32    24    header nonce
/// 56    4040  XChaCha20-Poly1305(K, nonce, AD = drop id || E || R)(header[4024]) || tag
/// 4096  …     the content: a segment (base nonce, chunks) under the content key, AD naming the drop id
/// K = BLAKE2b-256("narnia drop" || X25519(e, R) || E || R), R the inbox public key
/// ```
enum DropFormat {
    static let headerLength = 4096
    static let sealedHeaderPlaintext = headerLength - X25519.keyLength - AEAD.nonceLength - AEAD.tagLength
    static let version: UInt8 = 1
    /// Fixed fields before the path: version, content key, size, modified, dropped, batch, path length.
    static let fixedFields = 1 + 32 + 8 + 8 + 8 + 16 + 2
    /// The longest relative path a drop can carry, in bytes.
    static let maximumPathBytes = sealedHeaderPlaintext - fixedFields
    static let keyContext = "narnia drop"
    /// The largest content a drop may say it holds (64 PiB): anyone with the public key can
    /// write a header, and a larger size overflowed the length check, which stopped every
    /// unlock of the vault on every device (review AH).
    static let largestSize: UInt64 = 1 << 56

    /// The drop file's exact length for content of `size` bytes.
    static func length(size: UInt64) -> Int64 { Int64(headerLength) + ContentFormat.objectLength(size: size) }

    /// What binds the header key to one exchange: the ephemeral key as written and the
    /// recipient's public key.
    static func binding(ephemeral: [UInt8], recipient: [UInt8]) -> [UInt8] { ephemeral + recipient }

    static func additionalData(drop: Identifier, ephemeral: [UInt8], recipient: [UInt8]) -> [UInt8] {
        drop.bytes + ephemeral + recipient
    }
}

/// What a drop's sealed header says.
struct DropHeader {
    var size: UInt64
    var modified: Int64
    var dropped: Int64
    /// Shared by the files of one `drop` command: the folders a folder drop makes are keyed by it.
    var batch: Identifier
    /// The path relative to the inbox folder: a file name, or names joined by `/`.
    var path: String

    /// The header's plaintext with `contentKey`, zero-padded to its fixed length (the caller
    /// wipes it once sealed).
    func encoded(contentKey: UnsafeRawBufferPointer) -> [UInt8] {
        var w = ByteWriter(capacity: DropFormat.sealedHeaderPlaintext)
        w.u8(DropFormat.version)
        w.raw(Array(contentKey))
        w.u64(size)
        w.i64(modified)
        w.i64(dropped)
        w.raw(batch.bytes)
        let name = Array(path.utf8)
        w.u16(UInt16(name.count))
        w.raw(name)
        w.raw([UInt8](repeating: 0, count: DropFormat.sealedHeaderPlaintext - w.bytes.count))
        return w.bytes
    }

    /// Reads a header's plaintext; the content key goes to `keyOut` (32 bytes).
    /// Nil when it is not one this program writes.
    static func decode(_ bytes: [UInt8], keyOut: UnsafeMutableRawBufferPointer) -> DropHeader? {
        var r = ByteReader(bytes)
        guard (try? r.u8()) == DropFormat.version, let key = try? r.take(32) else { return nil }
        key.withUnsafeBytes { keyOut.copyMemory(from: $0) }
        guard let size = try? r.u64(), let modified = try? r.i64(), let dropped = try? r.i64(),
              let batch = try? r.take(16), let count = try? r.u16(), let name = try? r.take(Int(count)),
              let path = String(validating: name, as: UTF8.self) else { return nil }
        return DropHeader(size: size, modified: modified, dropped: dropped, batch: Identifier(batch), path: path)
    }
}

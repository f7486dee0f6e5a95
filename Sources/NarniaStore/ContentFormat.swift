import NarniaCrypto

/// The geometry and per-chunk parameters of a content object (docs/FORMAT.md, "Content objects").
///
/// ```
/// base nonce[24] | chunk 0 | chunk 1 | … | chunk n-1
/// chunk i = XChaCha20-Poly1305(plaintext_i) | tag[16]
///   key   = the item's random key
///   nonce = base nonce with bytes 16..<24 XOR i (little-endian u64)
///   AD    = object id[16] | i (u64 LE) | last (u8: 1 for chunk n-1, else 0)
/// ```
/// The plaintext is the content followed by zeros up to its Padmé length P; every chunk but
/// the last holds `chunkSize` bytes, and there is always at least one chunk (an empty file
/// has one empty chunk).
package struct ContentFormat: Sendable {
    /// Plaintext bytes per chunk: 1 MiB.
    package static let chunkSizeLog2: UInt8 = 20
    package static let chunkSize = 1 << Int(chunkSizeLog2)
    static let adLength = 16 + 8 + 1

    /// The padded plaintext length for content of `size` bytes.
    package static func paddedLength(_ size: UInt64) -> UInt64 { Padme.paddedLength(size) }

    /// The number of chunks for content of `size` bytes.
    package static func chunkCount(size: UInt64) -> Int {
        let p = paddedLength(size)
        return max(1, Int((p + UInt64(chunkSize) - 1) / UInt64(chunkSize)))
    }

    /// The object file's exact length for content of `size` bytes.
    package static func objectLength(size: UInt64) -> Int64 {
        Int64(AEAD.nonceLength) + Int64(paddedLength(size)) + Int64(chunkCount(size: size) * AEAD.tagLength)
    }

    /// The plaintext length of chunk `index` (padding included).
    static func plaintextLength(ofChunk index: Int, size: UInt64) -> Int {
        let p = Int(paddedLength(size))
        return min(chunkSize, p - index * chunkSize)
    }

    /// Where chunk `index` starts in the object file.
    static func offset(ofChunk index: Int) -> Int64 {
        Int64(AEAD.nonceLength) + Int64(index) * Int64(chunkSize + AEAD.tagLength)
    }

    static func nonce(base: [UInt8], index: Int, into out: inout [UInt8]) {
        out = base
        var i = UInt64(index)
        for k in 16..<24 {
            out[k] ^= UInt8(truncatingIfNeeded: i)
            i >>= 8
        }
    }

    static func additionalData(object: Identifier, index: Int, last: Bool, into out: inout [UInt8]) {
        var w = ByteWriter(capacity: adLength)
        w.raw(object.bytes)
        w.u64(UInt64(index))
        w.u8(last ? 1 : 0)
        out = w.bytes
    }
}

import NarniaCrypto

/// A 128-bit random identifier: of an item in the tree, of a content object, of a journal.
public struct Identifier: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The 16 bytes, stored as two words for cheap hashing and comparison.
    let high: UInt64
    let low: UInt64

    /// The identifier of the root folder: all zero bits. It is never drawn at random in practice.
    public static let root = Identifier(high: 0, low: 0)

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A fresh random identifier.
    public static func random() -> Identifier {
        let b = randomBytes(16)
        return Identifier(b[...])
    }

    /// Reads 16 bytes.
    init<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        precondition(bytes.count == 16)
        var h: UInt64 = 0, l: UInt64 = 0
        for (i, b) in bytes.enumerated() {
            if i < 8 { h = h << 8 | UInt64(b) } else { l = l << 8 | UInt64(b) }
        }
        high = h
        low = l
    }

    /// The 16 bytes, big-endian.
    public var bytes: [UInt8] {
        var out = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            out[i] = UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64(i)))
            out[8 + i] = UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64(i)))
        }
        return out
    }

    /// 32 lowercase hex digits.
    public var hex: String { Hex.string(bytes) }

    /// Parses 32 lowercase hex digits.
    public init?(hex: Substring) {
        guard hex.utf8.count == 32, let bytes = Hex.bytes(hex) else { return nil }
        self.init(bytes)
    }

    public var description: String { hex }

    /// Identifiers are random: one word of them hashes as well as both, at half the cost.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(low)
    }

    /// What dictionaries and sets use (Hashable's customisation point): the identifier's own
    /// random bits, mixed with the table's seed, without a round of SipHash. Hash flooding
    /// would need identifiers chosen to collide, and only a device holding the master key can
    /// put identifiers in a journal (records are authenticated). An open of 100,000 items looks
    /// identifiers up about a million times; SipHash was a fifth of it.
    public func _rawHashValue(seed: Int) -> Int {
        Int(truncatingIfNeeded: (low ^ UInt64(truncatingIfNeeded: seed)) &* 0x9E37_79B9_7F4A_7C15 ^ high)
    }

    public static func < (a: Identifier, b: Identifier) -> Bool {
        (a.high, a.low) < (b.high, b.low)
    }
}

/// Overwrites memory with zeros in a way the compiler does not elide (`sodium_memzero`).
func wipeMemory(_ buffer: UnsafeMutableRawBufferPointer) {
    NarniaCrypto.wipe(buffer)
}

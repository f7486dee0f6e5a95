/// Bech32 (BIP-173), the text form age uses for its keys: `age1…` recipients and
/// `AGE-SECRET-KEY-1…` identities.
///
/// This is the original Bech32, with checksum constant 1, not Bech32m (BIP-350): age never
/// moved to Bech32m. BIP-173's 90-character limit is not enforced, since age identities
/// (and post-quantum recipients) are longer and age does not enforce it either.
public enum Bech32 {
    /// Encodes `data` (8-bit bytes, regrouped into 5-bit groups with zero padding) under
    /// `humanReadablePart`. The result is lowercase; uppercase it when a format asks for that
    /// (age's secret keys), which leaves the checksum valid.
    ///
    /// The human-readable part must be non-empty printable ASCII (33–126); anything else is a
    /// programming error and traps.
    public static func encode(humanReadablePart: String, data: [UInt8]) -> String {
        encode(humanReadablePart: humanReadablePart, groups: regroup(data, from: 8, to: 5, pad: true)!)
    }

    /// Decodes a Bech32 string into its lowercased human-readable part and its bytes.
    ///
    /// Returns nil unless the string is entirely lowercase or entirely uppercase (mixed case
    /// is how BIP-173 catches a half-retyped string), the checksum verifies, and the data
    /// regroups into whole bytes with at most 4 zero padding bits (so each byte string has
    /// exactly one encoding).
    public static func decode(_ string: String) -> (humanReadablePart: String, data: [UInt8])? {
        guard let (hrp, groups) = decodeGroups(string),
              let data = regroup(groups, from: 5, to: 8, pad: false) else { return nil }
        return (hrp, data)
    }

    // MARK: 5-bit groups (internal so tests can build strings with bad padding)

    static let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)

    /// The encoding of `groups` (values 0–31) under `humanReadablePart`, checksum appended.
    static func encode(humanReadablePart: String, groups: [UInt8]) -> String {
        let hrp = Array(humanReadablePart.lowercased().utf8)
        precondition(!hrp.isEmpty && hrp.allSatisfy { (33...126).contains($0) },
                     "Bech32: the human-readable part must be non-empty printable ASCII")
        precondition(groups.allSatisfy { $0 < 32 }, "Bech32: a group holds 5 bits")
        let residue = polymod(expand(hrp) + groups + [0, 0, 0, 0, 0, 0]) ^ 1
        let checksum = (0..<6).map { UInt8((residue >> (5 * (5 - $0))) & 31) }
        let characters = (groups + checksum).map { alphabet[Int($0)] }
        return String(decoding: hrp + [UInt8(ascii: "1")] + characters, as: UTF8.self)
    }

    /// The lowercased human-readable part and the 5-bit groups (checksum removed) of a valid
    /// Bech32 string; nil for any string BIP-173 rejects (length limit aside).
    static func decodeGroups(_ string: String) -> (String, [UInt8])? {
        let bytes = Array(string.utf8)
        guard bytes.allSatisfy({ (33...126).contains($0) }) else { return nil }
        let hasLower = bytes.contains { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }
        let hasUpper = bytes.contains { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
        guard !(hasLower && hasUpper) else { return nil }

        let lower = Array(string.lowercased().utf8)
        // The separator is the last "1": the human-readable part may itself contain ones.
        guard let separator = lower.lastIndex(of: UInt8(ascii: "1")),
              separator > 0, lower.count - separator - 1 >= 6 else { return nil }
        let hrp = Array(lower[..<separator])
        var values: [UInt8] = []
        for character in lower[(separator + 1)...] {
            guard let value = alphabet.firstIndex(of: character) else { return nil }
            values.append(UInt8(value))
        }
        guard polymod(expand(hrp) + values) == 1 else { return nil }
        return (String(decoding: hrp, as: UTF8.self), Array(values.dropLast(6)))
    }

    /// BIP-173's checksum: a BCH code over GF(32), computed as a polynomial remainder.
    private static func polymod(_ values: [UInt8]) -> UInt32 {
        let generator: [UInt32] = [0x3b6a_57b2, 0x2650_8e6d, 0x1ea1_19fa, 0x3d42_33dd, 0x2a14_62b3]
        var checksum: UInt32 = 1
        for value in values {
            let top = checksum >> 25
            checksum = (checksum & 0x1ff_ffff) << 5 ^ UInt32(value)
            for i in 0..<5 where (top >> i) & 1 == 1 {
                checksum ^= generator[i]
            }
        }
        return checksum
    }

    /// The human-readable part as the checksum sees it: high bits, a zero, then low bits.
    private static func expand(_ hrp: [UInt8]) -> [UInt8] {
        hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 }
    }

    /// Regroups a bit string from `from`-bit to `to`-bit values, most significant bit first.
    /// With `pad`, a partial last group is filled with zeros; without it, leftover bits must
    /// be fewer than `from` and all zero, or the result is nil.
    private static func regroup(_ values: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var accumulator: UInt32 = 0
        var bits = 0
        let mask: UInt32 = (1 << to) - 1
        let kept: UInt32 = (1 << (from + to - 1)) - 1    // the most bits still pending
        var result: [UInt8] = []
        result.reserveCapacity(values.count * from / to + 1)
        for value in values {
            accumulator = (accumulator << from | UInt32(value)) & kept
            bits += from
            while bits >= to {
                bits -= to
                result.append(UInt8((accumulator >> bits) & mask))
            }
        }
        if pad {
            if bits > 0 { result.append(UInt8((accumulator << (to - bits)) & mask)) }
        } else if bits >= from || (accumulator << (to - bits)) & mask != 0 {
            return nil
        }
        return result
    }
}

/// age's X25519 recipients (`age1…`): the 32-byte public key in Bech32 under the
/// human-readable part "age", so keys can be exchanged in the form `age` itself prints.
public enum AgeRecipient {
    /// The `age1…` string for a 32-byte X25519 public key. Traps on any other length.
    public static func string(forX25519PublicKey key: [UInt8]) -> String {
        precondition(key.count == 32, "an X25519 public key is 32 bytes")
        return Bech32.encode(humanReadablePart: "age", data: key)
    }

    /// The X25519 public key in an `age1…` string; nil unless it is valid Bech32 with the
    /// human-readable part "age" and exactly 32 bytes of data.
    public static func x25519PublicKey(from recipient: String) -> [UInt8]? {
        guard let (hrp, data) = Bech32.decode(recipient), hrp == "age", data.count == 32 else { return nil }
        return data
    }
}

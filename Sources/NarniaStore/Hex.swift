import NarniaCrypto

/// Lowercase hex: store file names, identifiers, the inbox key setting.
enum Hex {
    static func string<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 15)]) }
        return String(decoding: out, as: UTF8.self)
    }

    static func bytes(_ text: Substring) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        for i in stride(from: 0, to: utf8.count, by: 2) {
            guard let high = digit(utf8[i]), let low = digit(utf8[i + 1]) else { return nil }
            out.append(high << 4 | low)
        }
        return out
    }

    /// Parses hex into secret memory (the parsed copy is wiped).
    static func secret(_ text: Substring) throws -> Secret? {
        guard var bytes = self.bytes(text) else { return nil }
        defer { bytes.withUnsafeMutableBytes { wipe($0) } }
        return try bytes.withUnsafeBytes { try Secret(copying: $0) }
    }

    private static func digit(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}

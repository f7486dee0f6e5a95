/// The hex view of `open` for items no viewer shows: `xxd`'s layout, built here so it needs
/// no program and streams chunk by chunk.
///
/// ```
/// 00000000: 8950 4e47 0d0a 1a0a 0000 000d 4948 4452  .PNG........IHDR
/// ```
final class HexFormatter {
    private var offset: UInt64 = 0
    private var pending: [UInt8] = []

    /// The lines for `bytes` following what came before; a partial line waits for more.
    func lines(_ bytes: UnsafeRawBufferPointer) -> String {
        pending.append(contentsOf: bytes)
        let whole = pending.count / 16 * 16
        guard whole > 0 else { return "" }
        var text = ""
        text.reserveCapacity(whole / 16 * 68)
        var start = 0
        while start < whole {
            text += Self.line(offset: offset, pending[start..<start + 16])
            offset += 16
            start += 16
        }
        pending.removeFirst(whole)
        return text
    }

    /// The last, partial line (empty when the content ended on a line boundary).
    func finish() -> String {
        guard !pending.isEmpty else { return "" }
        defer { pending.removeAll() }
        return Self.line(offset: offset, pending[...])
    }

    /// One line of up to 16 bytes.
    static func line(offset: UInt64, _ bytes: ArraySlice<UInt8>) -> String {
        var hex = ""
        var ascii = ""
        for (i, b) in bytes.enumerated() {
            hex += byteHex(b)
            if i % 2 == 1 { hex += " " }
            ascii.unicodeScalars.append(b >= 0x20 && b < 0x7F ? Unicode.Scalar(b) : ".")
        }
        let width = 40  // 16 bytes: 32 hex digits and 8 spaces
        hex += String(repeating: " ", count: max(0, width - hex.count))
        return offsetHex(offset) + ": " + hex + " " + ascii + "\n"
    }

    private static let digits = Array("0123456789abcdef")

    private static func byteHex(_ b: UInt8) -> String {
        String([digits[Int(b >> 4)], digits[Int(b & 15)]])
    }

    private static func offsetHex(_ n: UInt64) -> String {
        let s = String(n, radix: 16)
        return s.count >= 8 ? s : String(repeating: "0", count: 8 - s.count) + s
    }
}

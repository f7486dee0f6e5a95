import NarniaLanguage

/// Content shown on a terminal as text (`cat`, `open` without a pager), made unable to drive it,
/// chunk by chunk: every character `isUnsafeOnTerminal` names — C0 controls but tab and line
/// feed, DEL, the C1 controls (as UTF-8), the bidirectional marks — becomes `.`, and so does a
/// byte 0x80–0x9F that is not part of a UTF-8 character: a terminal in an 8-bit mode (Latin-1,
/// `LANG=C`) takes it for a C1 control (0x9B is CSI; review BC-5). Everything else passes as it
/// is, other bytes that are not UTF-8 included (a UTF-8 terminal shows them as U+FFFD, a
/// Latin-1 one as letters). A character split between two chunks is held until the next one.
struct TerminalTextFilter {
    /// The start of a character the last chunk ended inside.
    private var held: [UInt8] = []

    /// The chunk, filtered; a character it ends inside waits for the next call.
    mutating func filter(_ chunk: UnsafeRawBufferPointer) -> [UInt8] {
        var bytes = held
        bytes.append(contentsOf: chunk)
        held = []
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            let lead = bytes[i]
            if lead < 0x80 {
                out.append(Self.isSafeASCII(lead) ? lead : Self.replacement)
                i += 1
                continue
            }
            let length = lead >= 0xF0 && lead <= 0xF4 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 1
            if length == 1 || lead > 0xF4 {
                out.append(Self.alone(lead))
                i += 1
                continue
            }
            if i + length > bytes.count {
                held = Array(bytes[i...])
                break
            }
            let sequence = bytes[i..<i + length]
            guard let scalar = String(validating: sequence, as: UTF8.self)?.unicodeScalars.first else {
                out.append(Self.alone(lead))
                i += 1
                continue
            }
            if isUnsafeOnTerminal(scalar) { out.append(Self.replacement) } else { out.append(contentsOf: sequence) }
            i += length
        }
        return out
    }

    /// What is still held at the end of the content: a character cut short, its bytes passed
    /// as bytes that are not UTF-8 are.
    mutating func finish() -> [UInt8] {
        defer { held = [] }
        return held.map(Self.alone)
    }

    private static let replacement = UInt8(ascii: ".")

    /// A byte that is not part of a UTF-8 character: `.` for the 8-bit C1 controls.
    private static func alone(_ b: UInt8) -> UInt8 {
        b >= 0x80 && b <= 0x9F ? replacement : b
    }

    private static func isSafeASCII(_ b: UInt8) -> Bool {
        b == 0x09 || b == 0x0A || (b >= 0x20 && b != 0x7F)
    }
}

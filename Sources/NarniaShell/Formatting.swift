import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaStore

/// Text forms shared by the listing commands.
enum Formatting {
    /// `YYYY-MM-DD HH:MM` in local time, as `ls -l --time-style=+%Y-%m-%d\ %H:%M` prints.
    static func shortDate(_ nanoseconds: Int64) -> String {
        format(nanoseconds, "%Y-%m-%d %H:%M", utc: false)
    }

    /// `YYYY-MM-DD HH:MM:SS` in local time.
    static func dateTime(_ nanoseconds: Int64) -> String {
        format(nanoseconds, "%Y-%m-%d %H:%M:%S", utc: false)
    }

    /// ISO 8601 in UTC: `2026-11-29T17:25:00Z`.
    static func isoDate(_ nanoseconds: Int64) -> String {
        format(nanoseconds, "%Y-%m-%dT%H:%M:%SZ", utc: true)
    }

    private static func format(_ nanoseconds: Int64, _ pattern: String, utc: Bool) -> String {
        var t = time_t(Nanoseconds.seconds(nanoseconds))
        var parts = tm()
        if utc { gmtime_r(&t, &parts) } else { localtime_r(&t, &parts) }
        var buffer = [CChar](repeating: 0, count: 64)
        let n = strftime(&buffer, buffer.count, pattern, &parts)
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A JSON string literal.
    static func json(_ s: String) -> String {
        var out = "\""
        for (scalar, escaped) in nameScalars(s) {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where escaped:
                // Past U+FFFF (the tag characters), as a UTF-16 surrogate pair, as JSON has it.
                if c.value > 0xFFFF {
                    let v = c.value - 0x10000
                    out += String(format4: 0xD800 + (v >> 10)) + String(format4: 0xDC00 + (v & 0x3FF))
                } else {
                    out += String(format4: c.value)
                }
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// One `ls --json` object; a file says whether its content is on this device (`here`), and
    /// when it came through the inbox, when it was dropped.
    static func jsonObject(_ item: Item, path: String, here: Bool, dropped: Int64? = nil) -> String {
        var fields = ["\"name\":\(json(item.name))", "\"path\":\(json(path))"]
        if let c = item.content {
            fields += ["\"type\":\"file\"", "\"kind\":\"\(c.kind.name)\"", "\"mime\":\(json(c.mime))", "\"size\":\(c.size)",
                       "\"here\":\(here)"]
        } else {
            fields += ["\"type\":\"folder\"", "\"kind\":\"folder\""]
        }
        fields.append("\"modified\":\"\(isoDate(item.modified))\"")
        if let dropped { fields.append("\"dropped\":\"\(isoDate(dropped))\"") }
        return "{" + fields.joined(separator: ",") + "}"
    }

    /// A size for people on a terminal, exact bytes for scripts.
    static func size(_ bytes: UInt64, human: Bool) -> String {
        human ? humanSize(bytes) : String(bytes)
    }
}

extension String {
    /// `\uXXXX` for a character a JSON string shows escaped (every character that could drive
    /// a terminal, C1 and bidirectional marks included: the JSON stays exact).
    init(format4 v: UInt32) {
        let hex = Array("0123456789abcdef")
        self = "\\u" + (0..<4).map { String(hex[Int(v >> (12 - 4 * UInt32($0))) & 15]) }.joined()
    }
}

import Foundation

/// Why a name was refused (INTERFACE.md, Semantics: the rules for names).
public enum NameError: Error, Equatable, CustomStringConvertible {
    case empty
    case containsSlash
    case containsNUL
    case dotOrDotDot
    case tooLong(bytes: Int)
    case notUTF8

    public var description: String {
        switch self {
        case .empty: return "a name cannot be empty"
        case .containsSlash: return "a name cannot contain '/'"
        case .containsNUL: return "a name cannot contain a NUL byte"
        case .dotOrDotDot: return "'.' and '..' cannot be used as names"
        case .tooLong(let n): return "a name can be at most 255 bytes (this one has \(n))"
        case .notUTF8: return "a name must be valid UTF-8"
        }
    }
}

/// Item-name rules: UTF-8, NFC-normalised, no `/` or NUL, not `.` or `..`, at most 255 bytes.
public enum ItemName {
    /// The longest name, in bytes of its NFC UTF-8 form.
    package static let maximumBytes = 255

    /// The NFC form of any string.
    public static func nfc(_ s: String) -> String { s.precomposedStringWithCanonicalMapping }

    /// Returns the NFC form of `raw` if it is a valid item name.
    /// - Throws: `NameError` saying which rule the name breaks.
    public static func validated(_ raw: String) throws -> String {
        // ASCII is its own NFC form, and most names are ASCII: skip Foundation's normalisation.
        let name = raw.utf8.allSatisfy({ $0 < 0x80 }) ? raw : raw.precomposedStringWithCanonicalMapping
        if name.isEmpty { throw NameError.empty }
        if name == "." || name == ".." { throw NameError.dotOrDotDot }
        if name.utf8.contains(UInt8(ascii: "/")) { throw NameError.containsSlash }
        if name.utf8.contains(0) { throw NameError.containsNUL }
        let bytes = name.utf8.count
        if bytes > maximumBytes { throw NameError.tooLong(bytes: bytes) }
        return name
    }

    /// Decodes a host file name (bytes) as an item name; host names that are not UTF-8 are refused.
    package static func fromHost(_ bytes: [UInt8]) throws -> String {
        guard let s = String(validating: bytes, as: UTF8.self) else { throw NameError.notUTF8 }
        return try validated(s)
    }

    /// The "keep both" variant number `n` (n ≥ 2) of `name`: `a.jpg` → `a (2).jpg`,
    /// `notes` → `notes (2)`, `.profile` → `.profile (2)`, `a.tar.gz` → `a (2).tar.gz`.
    /// Shortened as `marked` says when the result would pass 255 bytes.
    package static func numbered(_ name: String, _ n: Int) -> String {
        marked(name, " (\(n))")
    }

    /// `name` with `suffix` put before its extension, kept within 255 bytes: the longer of
    /// stem and extension (in bytes) loses its last character until it fits — the stem, but
    /// for a name whose "extension" is most of it.
    static func marked(_ name: String, _ suffix: String) -> String {
        var (stem, ext) = splitExtension(name)
        while stem.utf8.count + suffix.utf8.count + ext.utf8.count > maximumBytes {
            if stem.utf8.count >= ext.utf8.count { stem.removeLast() } else { ext.removeLast() }
        }
        return "\(stem)\(suffix)\(ext)"
    }

    /// Splits `name` into stem and extension (with its dot). A leading dot does not start an
    /// extension; `.tar.gz`-style double extensions stay together.
    package static func splitExtension(_ name: String) -> (String, String) {
        let scalars = Array(name.unicodeScalars)
        guard let lastDot = scalars.lastIndex(of: "."), lastDot > 0 else { return (name, "") }
        var dot = lastDot
        let ext = String(String.UnicodeScalarView(scalars[(lastDot + 1)...])).lowercased()
        if ["gz", "bz2", "xz", "zst"].contains(ext),
           let prev = scalars[..<lastDot].lastIndex(of: "."), prev > 0,
           String(String.UnicodeScalarView(scalars[(prev + 1)..<lastDot])).lowercased() == "tar" {
            dot = prev
        }
        if dot == scalars.count - 1 { return (name, "") }
        return (String(String.UnicodeScalarView(scalars[..<dot])), String(String.UnicodeScalarView(scalars[dot...])))
    }
}

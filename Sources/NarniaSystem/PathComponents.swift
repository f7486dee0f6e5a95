extension StringProtocol {
    /// The names of a path between its `/` characters, split scalar by scalar: a name may
    /// begin with a combining mark, which a split by `Character` joins to the `/` before it,
    /// making `u/\u{301}dir` one name (review BG-12: `..` then climbed two folders, and
    /// `import --move` left emptied folders without a word). Empty names are left out.
    public var pathComponents: [String] {
        unicodeScalars.split(separator: "/").map { String(String.UnicodeScalarView($0)) }
    }

    /// The last name of a path (`pathComponents`), or nil for `/` and the empty path.
    public var lastPathComponent: String? { pathComponents.last }

    /// Whether the path ends in `/`, by scalar: a Prepend character (U+0600, say) before the
    /// `/` joins it in one Character, so `hasSuffix("/")` missed `b\u{600}/` (review BI-1).
    public var endsWithSlash: Bool { unicodeScalars.last == "/" }

    /// `name` joined below the folder path (one `/` between them).
    public func appendingPathComponent(_ name: String) -> String {
        endsWithSlash ? self + name : self + "/" + name
    }
}

/// A shell glob that matches one name (one path component), built from a `Word`.
///
/// `*` matches any run of characters, `?` one character, `[…]` one character of a set: single
/// characters, ranges (`a-z`), POSIX classes (`[:digit:]`), negated by a leading `!` or `^`, with
/// a `]` right after the opening (or after the negation) taken literally, and a `-` first or last
/// taken literally. A `[` with no closing `]` is an ordinary character. Only bare characters are
/// special: whatever was quoted or backslash-escaped matches itself. A name that starts with `.`
/// is matched only by a pattern that starts with a literal `.` (as `fnmatch` with `FNM_PERIOD`).
///
/// Matching works on extended grapheme clusters (Swift `Character`s), compared with Swift's
/// canonical equivalence: `?` matches one user-perceived character (`é`, `🇫🇷`, `👩‍👩‍👧`), and a
/// pattern typed in NFD matches the NFC name the vault stores. Ranges compare characters in
/// Swift's order, which is the order of their NFC Unicode scalars.
public struct GlobPattern: Hashable, Sendable, CustomStringConvertible {
    /// The pattern's text, quotes removed (as the user would read it back).
    public let text: String
    private let elements: [Element]

    /// The pattern for `word`: its bare `*`, `?` and `[` are wildcards, the rest literal.
    public init(_ word: Word) {
        text = word.text
        elements = GlobPattern.parse(GlobPattern.characters(of: word))
    }

    /// A pattern all of whose characters are taken as typed bare (`*` is a wildcard).
    public init(unquoted pattern: String) {
        self.init(Word(unquoted: pattern))
    }

    /// A pattern that matches exactly `name` and nothing else.
    public init(literal name: String) {
        self.init(Word(quoted: name))
    }

    public var description: String { text }

    /// Whether the pattern has any wildcard, and so may match names other than its own text.
    public var hasWildcards: Bool {
        elements.contains { if case .literal = $0 { false } else { true } }
    }

    /// The one name this pattern matches when it has no wildcards (escapes removed); `nil` when
    /// it has wildcards.
    public var literalText: String? {
        hasWildcards ? nil : text
    }

    /// Whether `name` (one path component, no `/`) matches the whole pattern.
    public func matches(_ name: String) -> Bool {
        let characters = Array(name)
        if characters.first == "." {
            guard case .literal(".")? = elements.first else { return false }
        }
        return GlobPattern.match(elements[...], characters[...])
    }

    /// Whether `name` could be completed into a match of this pattern followed by `*`: the
    /// completion of a partial word that holds wildcards.
    public func matchesPrefix(of name: String) -> Bool {
        GlobPattern(elements: elements + [.star], text: text + "*").matches(name)
    }

    private init(elements: [Element], text: String) {
        self.elements = elements
        self.text = text
    }

    // MARK: - Parsing

    /// One position of a pattern.
    private enum Element: Hashable, Sendable {
        case literal(Character)
        case one
        case star
        case set(BracketSet)
    }

    /// The characters of `word`, each marked quoted if any of its scalars was quoted.
    private static func characters(of word: Word) -> [(character: Character, quoted: Bool)] {
        var result: [(Character, Bool)] = []
        var index = 0
        for character in word.text {
            let count = character.unicodeScalars.count
            let quoted = word.quotedScalars[index..<index + count].contains(true)
            result.append((character, quoted))
            index += count
        }
        return result
    }

    private static func parse(_ chars: [(character: Character, quoted: Bool)]) -> [Element] {
        func bare(_ i: Int, _ c: Character) -> Bool {
            i < chars.count && !chars[i].quoted && chars[i].character == c
        }
        var elements: [Element] = []
        var i = 0
        while i < chars.count {
            if bare(i, "*") {
                if elements.last != .star { elements.append(.star) }
                i += 1
            } else if bare(i, "?") {
                elements.append(.one)
                i += 1
            } else if bare(i, "["), let (set, next) = parseBracket(chars, from: i + 1, bare: bare) {
                elements.append(.set(set))
                i = next
            } else {
                elements.append(.literal(chars[i].character))
                i += 1
            }
        }
        return elements
    }

    /// Parses a bracket expression whose `[` is just before `start`; `nil` if it never closes.
    private static func parseBracket(
        _ chars: [(character: Character, quoted: Bool)], from start: Int,
        bare: (Int, Character) -> Bool
    ) -> (BracketSet, Int)? {
        var i = start
        var set = BracketSet()
        if bare(i, "!") || bare(i, "^") { set.negated = true; i += 1 }
        var first = true
        while i < chars.count {
            if bare(i, "]") && !first { return (set, i + 1) }
            first = false
            if bare(i, "["), bare(i + 1, ":"), let (posix, next) = parseClass(chars, from: i + 2, bare: bare) {
                set.items.append(.posix(posix))
                i = next
                continue
            }
            let low = chars[i].character
            if bare(i + 1, "-"), i + 2 < chars.count, !bare(i + 2, "]") {
                set.items.append(.range(low, chars[i + 2].character))
                i += 3
            } else {
                set.items.append(.character(low))
                i += 1
            }
        }
        return nil
    }

    /// Parses the name of a POSIX class after `[:`, up to `:]`.
    private static func parseClass(
        _ chars: [(character: Character, quoted: Bool)], from start: Int,
        bare: (Int, Character) -> Bool
    ) -> (PosixClass, Int)? {
        var name = ""
        var i = start
        while i < chars.count, !bare(i, ":") {
            name.append(chars[i].character)
            i += 1
        }
        guard bare(i, ":"), bare(i + 1, "]"), let posix = PosixClass(rawValue: name) else { return nil }
        return (posix, i + 2)
    }

    // MARK: - Matching

    /// Classic wildcard matching that backtracks only to the last `*`: linear in practice,
    /// quadratic at worst, never exponential.
    private static func match(_ pattern: ArraySlice<Element>, _ name: ArraySlice<Character>) -> Bool {
        var p = pattern.startIndex, n = name.startIndex
        var starP: Int? = nil, starN = n
        while n < name.endIndex {
            if p < pattern.endIndex {
                switch pattern[p] {
                case .star:
                    starP = p; starN = n; p += 1
                    continue
                case .one:
                    p += 1; n += 1
                    continue
                case .literal(let c) where c == name[n]:
                    p += 1; n += 1
                    continue
                case .set(let set) where set.contains(name[n]):
                    p += 1; n += 1
                    continue
                default:
                    break
                }
            }
            guard let star = starP else { return false }
            p = star + 1
            starN += 1
            n = starN
        }
        while p < pattern.endIndex, pattern[p] == .star { p += 1 }
        return p == pattern.endIndex
    }
}

/// The members of a `[…]` expression.
private struct BracketSet: Hashable, Sendable {
    enum Item: Hashable, Sendable {
        case character(Character)
        case range(Character, Character)
        case posix(PosixClass)
    }
    var negated = false
    var items: [Item] = []

    func contains(_ c: Character) -> Bool {
        let found = items.contains { item in
            switch item {
            case .character(let m): m == c
            case .range(let low, let high): low <= c && c <= high
            case .posix(let posix): posix.contains(c)
            }
        }
        return found != negated
    }
}

/// The POSIX character classes usable as `[[:name:]]`, judged by Unicode properties.
private enum PosixClass: String, Hashable, Sendable {
    case alpha, digit, alnum, upper, lower, space, punct, xdigit

    func contains(_ c: Character) -> Bool {
        switch self {
        case .alpha: c.isLetter
        case .digit: c.isASCII && c.isWholeNumber
        case .alnum: c.isLetter || c.isNumber
        case .upper: c.isUppercase
        case .lower: c.isLowercase
        case .space: c.isWhitespace
        case .punct: c.isPunctuation || c.isSymbol
        case .xdigit: c.isHexDigit
        }
    }
}

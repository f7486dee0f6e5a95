/// One word of a command line after quote removal, remembering which of its characters were
/// quoted or backslash-escaped.
///
/// The shell needs both: commands see `text`, while globbing treats `*`, `?` and `[` as special
/// only where the user typed them bare, and a leading `-` or `~` means something only when bare.
/// The mask is kept per Unicode scalar (not per `Character`) because quoting works on what was
/// typed, and a quote boundary may fall inside a grapheme cluster (`e'\u{301}'`).
public struct Word: Hashable, Sendable, CustomStringConvertible {
    /// The word with quotes and escaping backslashes removed.
    public let text: String
    /// One flag per Unicode scalar of `text`: `true` where that scalar was quoted or escaped.
    public let quotedScalars: [Bool]

    /// A word from its text and quote mask. `quotedScalars` must have one entry per Unicode
    /// scalar of `text` (a programmer error otherwise).
    public init(text: String, quotedScalars: [Bool]) {
        precondition(quotedScalars.count == text.unicodeScalars.count, "one quote flag per scalar")
        self.text = text
        self.quotedScalars = quotedScalars
    }

    /// A word none of whose characters were quoted, as if typed bare.
    public init(unquoted text: String) {
        self.init(text: text, quotedScalars: Array(repeating: false, count: text.unicodeScalars.count))
    }

    /// A word all of whose characters were quoted: it is always taken literally.
    public init(quoted text: String) {
        self.init(text: text, quotedScalars: Array(repeating: true, count: text.unicodeScalars.count))
    }

    public var description: String { text }

    /// Whether the word's first character is a bare `-`, so that a command may take it as a
    /// flag. `'-x'` and `\-x` do not look like flags: quoting is how to name a file `-x`.
    public var looksLikeFlag: Bool {
        guard let first = text.unicodeScalars.first else { return false }
        return first == "-" && !quotedScalars[0]
    }

    /// Whether the word starts with a bare `~`, which host paths expand to the home folder.
    public var startsWithBareTilde: Bool {
        guard let first = text.unicodeScalars.first else { return false }
        return first == "~" && !quotedScalars[0]
    }

    /// Whether the word holds a bare `*`, `?` or `[`. A `[` without its closing `]` is literal
    /// when matched, but still counts here; `GlobPattern.hasWildcards` is the precise answer.
    public var hasBareGlobCharacters: Bool {
        zip(text.unicodeScalars, quotedScalars).contains { scalar, quoted in
            !quoted && (scalar == "*" || scalar == "?" || scalar == "[")
        }
    }

    /// The word with `transform` applied to each run of characters that share a quote state,
    /// the result of each run keeping that run's state. Use it to normalise a word (to NFC, say)
    /// without losing which of its characters were quoted; a transform that merges characters
    /// across a quote boundary cannot be expressed, and is applied to each side apart.
    public func mapSegments(_ transform: (String) -> String) -> Word {
        var text = ""
        var mask: [Bool] = []
        var run = String.UnicodeScalarView()
        var runQuoted = false
        func flush() {
            guard !run.isEmpty else { return }
            let mapped = transform(String(run))
            text += mapped
            mask += Array(repeating: runQuoted, count: mapped.unicodeScalars.count)
            run = String.UnicodeScalarView()
        }
        for (scalar, quoted) in zip(self.text.unicodeScalars, quotedScalars) {
            if quoted != runQuoted { flush(); runQuoted = quoted }
            run.append(scalar)
        }
        flush()
        return Word(text: text, quotedScalars: mask)
    }

    /// The word with a bare leading `~` (alone or followed by `/`) replaced by `home`, whose
    /// characters count as quoted (a `*` in a home folder's name is no wildcard). Any other word,
    /// `~user` included, is returned unchanged.
    public func expandingTilde(home: String) -> Word {
        guard startsWithBareTilde else { return self }
        let rest = text.unicodeScalars.dropFirst()
        guard rest.isEmpty || rest.first == "/" else { return self }
        var base = home
        if rest.first == "/", base.unicodeScalars.last == "/" { base.unicodeScalars.removeLast() }
        return Word(text: base + String(rest),
                    quotedScalars: Array(repeating: true, count: base.unicodeScalars.count) + quotedScalars.dropFirst())
    }

    /// The word cut at every `/` (quoted or not: no name may contain a slash), keeping each
    /// piece's quote mask. `"/a//b/"` gives `["", "a", "", "b", ""]`.
    public func split(separator: Unicode.Scalar = "/") -> [Word] {
        var pieces: [Word] = []
        var scalars = String.UnicodeScalarView()
        var mask: [Bool] = []
        for (scalar, quoted) in zip(text.unicodeScalars, quotedScalars) {
            if scalar == separator {
                pieces.append(Word(text: String(scalars), quotedScalars: mask))
                scalars = String.UnicodeScalarView()
                mask = []
            } else {
                scalars.append(scalar)
                mask.append(quoted)
            }
        }
        pieces.append(Word(text: String(scalars), quotedScalars: mask))
        return pieces
    }
}

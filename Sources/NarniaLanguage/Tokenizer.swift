// Splitting a command line into commands and words, the way sftp and sh do.
//
// - Blanks (space, tab, carriage return) separate words.
// - `'…'` quotes everything up to the next `'`.
// - `"…"` quotes everything up to the next unescaped `"`; inside it a backslash escapes only
//   `"`, `\`, `$` and the backquote, and is kept before any other character.
// - `$'…'` quotes everything up to the next unescaped `'`, and reads inside it the escapes of
//   bash's `$'…'`, and the forms scripts' output spells names with: `\n`, `\t`, `\r`, `\e`, `\a`,
//   `\b`, `\f`, `\v`, `\\`, `\'`, `\"`, `\xHH`, `\uHHHH`, `\UHHHHHHHH` and `\u{H…}` (one to six hex
//   digits; `\xHH` is the character U+00HH, as `\x9b` in a listing). A backslash before anything
//   else is kept, with it. So a name holding a line feed can be typed (`new$'\n'line`).
// - Outside quotes, `\x` makes `x` literal, whatever `x` is.
// - Outside quotes, `;` and a newline end a command.
// - Outside quotes, a `#` that begins a word begins a comment running to the end of the line;
//   at the interactive shell's prompt where listings show `#N` for names (`hide-names`), not
//   when a digit follows it (`#3` names an item there). Elsewhere `rm -rf tmp #2024 photos are
//   kept` removed `photos` (reviews BG-7, BH-1).
//
// Nothing else (no `$` expansion, no pipes, no redirections) is special: a vault shell has no
// use for them, and each extra rule is one more way to surprise a user with a hostile file name.

/// The quote open at some point of a command line.
public enum QuoteState: Sendable, Equatable {
    /// No quote is open.
    case none
    /// Inside `'…'`.
    case single
    /// Inside `"…"`.
    case double
    /// Inside `$'…'`.
    case ansiC
}

/// Why a command line could not be split into words.
public enum TokenizeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A `'` or `"` opened at byte `offset` of the line is never closed.
    case unterminatedQuote(QuoteState, offset: Int)
    /// The line ends with a backslash that escapes nothing.
    case trailingBackslash
    /// A word holds a NUL character (`$'\x00'`, or a NUL byte in a batch file): no name or
    /// path can, and a path given to the system would end there (review BD-5).
    case nulCharacter

    public var description: String {
        switch self {
        case .unterminatedQuote(let quote, _):
            return "unterminated quote: a \(quote == .double ? "\"" : quote == .ansiC ? "$'" : "'") is never closed"
        case .trailingBackslash:
            return "a backslash at the end of the line escapes nothing"
        case .nulCharacter:
            return "a word holds a NUL character, which no name or path can"
        }
    }
}

/// Splits `line` into commands (separated by `;` or newlines), each a list of words. Empty
/// commands (`;;`, blank lines, comments) are left out. With `numberedItems` (the prompt, where
/// names are hidden as `#N`), a `#` before a digit begins a word, not a comment.
///
/// - Throws: `TokenizeError` for an unterminated quote, a trailing backslash or a NUL.
public func tokenize(_ line: String, numberedItems: Bool = false) throws(TokenizeError) -> [[Word]] {
    try tokenizeCommands(line, numberedItems: numberedItems).map(\.words)
}

/// As `tokenize`, with each command's text as typed: from its first word's first character to
/// its last word's last (quotes and backslashes kept; not the `;` or a comment after it). A
/// host command (`!COMMAND`) is given to `/bin/sh` so.
public func tokenizeCommands(_ line: String, numberedItems: Bool = false) throws(TokenizeError) -> [(words: [Word], source: String)] {
    var scanner = LineScanner(numberedItems: numberedItems)
    scanner.scan(line, upTo: line.utf8.count)
    if scanner.quote != .none {
        throw .unterminatedQuote(scanner.quote, offset: scanner.quoteOffset)
    }
    if scanner.pendingEscape {
        throw .trailingBackslash
    }
    if scanner.heldNUL {
        throw .nulCharacter
    }
    scanner.endCommand()
    let bytes = Array(line.utf8)
    return zip(scanner.commands, scanner.sources).map { ($0, String(decoding: bytes[$1], as: UTF8.self)) }
}

/// What Tab completion needs to know about the command line left of the cursor.
public struct PartialCommandLine: Sendable, Equatable {
    /// The complete words of the command the cursor is in (after the last `;`), before the
    /// partial word. The first of them, if any, is the command name.
    public var previousWords: [Word]
    /// The word under the cursor, from its start up to the cursor, quotes removed. Empty when
    /// the cursor follows a blank or starts the line.
    public var partial: Word
    /// The byte offset in the line where the partial word begins (at its opening quote, if it
    /// starts with one); the cursor when the partial word is empty.
    public var partialStart: Int
    /// The quote open at the cursor, so that completed text can be escaped to fit it.
    public var quote: QuoteState
    /// The bytes right before the cursor of an escape not yet whole: 1 for a backslash still
    /// waiting for the character it escapes; inside `$'…'`, the backslash and the start of an
    /// escape (`\x0`: 3). 0 when there is none.
    public var pendingEscapeBytes: Int
    /// Whether the cursor follows an escape not yet whole (`pendingEscapeBytes`).
    public var pendingEscape: Bool { pendingEscapeBytes > 0 }
    /// Whether the cursor is inside a `#` comment, where there is nothing to complete.
    public var inComment: Bool
    /// The cursor as a byte offset, clamped to the line and at the start of a character.
    public var cursor: Int

    /// A description of a partial command line, field by field.
    public init(previousWords: [Word], partial: Word, partialStart: Int, quote: QuoteState,
                pendingEscapeBytes: Int, inComment: Bool, cursor: Int) {
        self.cursor = cursor
        self.previousWords = previousWords
        self.partial = partial
        self.partialStart = partialStart
        self.quote = quote
        self.pendingEscapeBytes = pendingEscapeBytes
        self.inComment = inComment
    }
}

/// Reads `line` up to `cursor` (a byte offset into its UTF-8, clamped to the line and moved back
/// to the start of a character if it falls inside one) and describes the word being typed there.
/// Never fails: an unterminated quote is exactly what a user in the middle of typing has.
/// With `numberedItems` (as `tokenize`'s), a `#` just before the cursor begins a word too: the
/// start of a number being typed (review BQ-6: Tab after it rang the bell).
public func tokenizeForCompletion(line: String, cursor: Int, numberedItems: Bool = false) -> PartialCommandLine {
    let utf8 = line.utf8
    var end = min(max(cursor, 0), utf8.count)
    while end > 0, end < utf8.count,
          utf8[utf8.index(utf8.startIndex, offsetBy: end)] & 0xC0 == 0x80 {
        end -= 1   // a continuation byte: back up to the start of the scalar
    }
    var scanner = LineScanner(numberedItems: numberedItems, completing: true)
    scanner.scan(line, upTo: end)
    return PartialCommandLine(
        previousWords: scanner.words,
        partial: Word(text: String(scanner.scalars), quotedScalars: scanner.mask),
        partialStart: scanner.inWord ? scanner.wordStart : end,
        quote: scanner.quote,
        pendingEscapeBytes: scanner.pendingEscape ? 1 : scanner.ansiEscape.map { $0.count + 1 } ?? 0,
        inComment: scanner.inComment,
        cursor: end)
}

/// The state machine both entry points share. It stops where told and leaves its state for the
/// caller to inspect.
private struct LineScanner {
    /// Whether `#` before a digit begins a word (`#3`, an item where names are hidden).
    let numberedItems: Bool
    /// True when scanning up to the cursor for completion, where a `#` ending the scan may be
    /// the start of a number.
    var completing = false
    /// Where the scan stops (a byte offset).
    var end = 0
    var commands: [[Word]] = []
    /// Where each of `commands` lies in the line, as byte offsets (`tokenizeCommands`).
    var sources: [Range<Int>] = []
    /// Where the command under way began, and where its last character so far ends.
    var commandStart: Int?
    var commandEnd = 0
    var words: [Word] = []
    var scalars = String.UnicodeScalarView()
    var mask: [Bool] = []
    var inWord = false
    var wordStart = 0
    var quote = QuoteState.none
    var quoteOffset = 0
    var pendingEscape = false
    var inComment = false
    /// Inside `$'…'`, the characters typed after a backslash, until they make an escape.
    var ansiEscape: [Unicode.Scalar]?
    /// True right after a `$` that begins `$'`: the `'` that follows opens the quote.
    var opensANSIQuote = false
    /// True once a word has held a NUL character.
    var heldNUL = false

    mutating func scan(_ line: String, upTo end: Int) {
        self.end = end
        var offset = 0
        var scalars = line.unicodeScalars.makeIterator()
        var current = scalars.next()
        while let scalar = current {
            if offset >= end { break }
            let next = scalars.next()
            if step(scalar, at: offset, next: next) { commandEnd = offset + UTF8.width(scalar) }
            offset += UTF8.width(scalar)
            current = next
        }
    }

    /// Whether a `#` beginning a word begins a comment: unless `numberedItems` and a digit
    /// follows (`#3`, an item under `hide-names`), or, completing, the cursor.
    private func startsComment(at offset: Int, before next: Unicode.Scalar?) -> Bool {
        guard numberedItems else { return true }
        if completing && offset + 1 == end { return false }
        guard let next else { return true }
        return !("0"..."9").contains(next)
    }

    /// Reads one character; returns whether it belongs to a word (then the command's text
    /// runs at least to it): a quote's, an escaped one, or one a word holds.
    private mutating func step(_ scalar: Unicode.Scalar, at offset: Int, next: Unicode.Scalar?) -> Bool {
        if inComment {
            if scalar == "\n" { inComment = false; endCommand() }
            return false
        }
        let quoted = quote != .none || pendingEscape
        read(scalar, at: offset, next: next)
        return quoted || inWord
    }

    private mutating func read(_ scalar: Unicode.Scalar, at offset: Int, next: Unicode.Scalar?) {
        switch quote {
        case .single:
            if scalar == "'" { quote = .none } else { append(scalar, quoted: true) }
        case .ansiC:
            stepInANSIQuote(scalar)
        case .double:
            if pendingEscape {
                pendingEscape = false
                if !(scalar == "\"" || scalar == "\\" || scalar == "$" || scalar == "`") {
                    append("\\", quoted: true)
                }
                append(scalar, quoted: true)
            } else if scalar == "\\" {
                pendingEscape = true
            } else if scalar == "\"" {
                quote = .none
            } else {
                append(scalar, quoted: true)
            }
        case .none:
            if pendingEscape {
                pendingEscape = false
                append(scalar, quoted: true)
                return
            }
            switch scalar {
            case " ", "\t", "\r", "\u{0B}", "\u{0C}":
                endWord()
            case "\n", ";":
                endCommand()
            case "#" where !inWord && startsComment(at: offset, before: next):
                inComment = true
            case "\\":
                startWord(at: offset)
                pendingEscape = true
            case "$" where next == "'":
                startWord(at: offset)
                opensANSIQuote = true
                quoteOffset = offset
            case "'" where opensANSIQuote:
                opensANSIQuote = false
                quote = .ansiC
            case "'", "\"":
                startWord(at: offset)
                quote = scalar == "'" ? .single : .double
                quoteOffset = offset
            default:
                startWord(at: offset)
                append(scalar, quoted: false)
            }
        }
    }

    /// One character inside `$'…'`: the end of the quote, a backslash beginning an escape, a
    /// character of an escape under way, or a character as it is.
    private mutating func stepInANSIQuote(_ scalar: Unicode.Scalar) {
        guard var typed = ansiEscape else {
            if scalar == "'" {
                quote = .none
            } else if scalar == "\\" {
                ansiEscape = []
                pendingEscape = true
            } else {
                append(scalar, quoted: true)
            }
            return
        }
        pendingEscape = false
        typed.append(scalar)
        switch ANSIEscape.read(typed) {
        case .incomplete:
            ansiEscape = typed
        case .character(let c):
            ansiEscape = nil
            append(c, quoted: true)
        case .endsBefore(let c):
            ansiEscape = nil
            append(c, quoted: true)
            stepInANSIQuote(scalar)
        case .none:
            // No escape: the backslash and what followed it are kept, and the character that
            // showed it read again (it may end the quote).
            ansiEscape = nil
            append("\\", quoted: true)
            for c in typed.dropLast() { append(c, quoted: true) }
            stepInANSIQuote(scalar)
        }
    }

    private mutating func startWord(at offset: Int) {
        if !inWord { inWord = true; wordStart = offset }
        if commandStart == nil { commandStart = offset }
    }

    private mutating func append(_ scalar: Unicode.Scalar, quoted: Bool) {
        if scalar == "\0" { heldNUL = true }
        scalars.append(scalar)
        mask.append(quoted)
    }

    mutating func endWord() {
        guard inWord else { return }
        words.append(Word(text: String(scalars), quotedScalars: mask))
        scalars = String.UnicodeScalarView()
        mask = []
        inWord = false
    }

    mutating func endCommand() {
        endWord()
        if !words.isEmpty {
            commands.append(words)
            sources.append((commandStart ?? commandEnd)..<commandEnd)
        }
        words = []
        commandStart = nil
    }
}

/// The escapes of `$'…'` (see the top of this file).
enum ANSIEscape {
    /// What the characters typed after a backslash make so far.
    enum Reading: Equatable {
        /// Not yet an escape: more characters may complete it.
        case incomplete
        /// The escape of this character, whole with the last one typed.
        case character(Unicode.Scalar)
        /// The escape of this character, whole before the last one typed (a hex digit fewer
        /// than the most, then something else), which is read on its own.
        case endsBefore(Unicode.Scalar)
        /// No escape: the backslash is kept as it is.
        case none
    }

    static let simple: [Unicode.Scalar: Unicode.Scalar] = [
        "n": "\n", "t": "\t", "r": "\r", "e": "\u{1B}", "E": "\u{1B}", "a": "\u{07}", "b": "\u{08}",
        "f": "\u{0C}", "v": "\u{0B}", "\\": "\\", "'": "'", "\"": "\"",
    ]

    /// Reads `typed`, the characters after the backslash.
    static func read(_ typed: [Unicode.Scalar]) -> Reading {
        guard let first = typed.first else { return .incomplete }
        if let c = simple[first] { return .character(c) }
        let most: Int
        switch first {
        case "x": most = 2
        case "u" where typed.count > 1 && typed[1] == "{": return braced(Array(typed.dropFirst(2)))
        case "u": most = 4
        case "U": most = 8
        default: return .none
        }
        let digits = typed.dropFirst()
        if let last = digits.last, last.properties.isASCIIHexDigit == false {
            let before = digits.dropLast()
            guard !before.isEmpty, let c = scalar(before) else { return .none }
            return .endsBefore(c)
        }
        guard digits.count == most else { return .incomplete }
        return scalar(digits).map(Reading.character) ?? .none
    }

    /// `\u{H…}`: one to six hex digits, then `}`.
    private static func braced(_ digits: [Unicode.Scalar]) -> Reading {
        guard let last = digits.last else { return .incomplete }
        if last == "}" {
            let hex = digits.dropLast()
            guard (1...6).contains(hex.count), let c = scalar(hex) else { return .none }
            return .character(c)
        }
        return last.properties.isASCIIHexDigit && digits.count <= 6 ? .incomplete : .none
    }

    private static func scalar(_ hex: ArraySlice<Unicode.Scalar>) -> Unicode.Scalar? {
        guard hex.allSatisfy(\.properties.isASCIIHexDigit), let value = UInt32(String(String.UnicodeScalarView(hex)), radix: 16) else { return nil }
        return Unicode.Scalar(value)
    }
}

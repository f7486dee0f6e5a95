// Writing text back as shell input: the inverse of `tokenize(_:)`, used by Tab completion to
// insert names, and by anyone who must show a user a path they can paste back into the shell.

/// Escapes `text` so that, typed at a point of a command line where `quote` is open, it reads
/// back as exactly `text`, every character literal.
///
/// - Outside quotes, a backslash goes before blanks, quotes, backslashes, the glob characters
///   `*?[]`, `;` and the characters other shells treat specially (`$` `` ` `` `&` `|` `<` `>`
///   `(` `)` `{` `}` `!`), and, when the text begins a word (`atWordStart`), before a first `#`
///   (a comment), `~` (the home folder) or `-` (a flag; see `Word.looksLikeFlag`).
/// - Inside `'…'`, only `'` needs care: it becomes `'\''` (close, escaped quote, reopen).
/// - Inside `"…"`, a backslash goes before `"`, `\`, `$` and the backquote.
public func shellEscape(_ text: String, in quote: QuoteState = .none, atWordStart: Bool = false) -> String {
    var out = String.UnicodeScalarView()
    var first = atWordStart
    for scalar in text.unicodeScalars {
        defer { first = false }
        switch quote {
        case .single:
            if scalar == "'" { out.append(contentsOf: "'\\''".unicodeScalars) } else { out.append(scalar) }
        case .double:
            if scalar == "\"" || scalar == "\\" || scalar == "$" || scalar == "`" { out.append("\\") }
            out.append(scalar)
        case .none:
            if needsBackslash(scalar) || (first && (scalar == "#" || scalar == "~" || scalar == "-")) {
                out.append("\\")
            }
            out.append(scalar)
        }
    }
    return String(out)
}

/// Quotes `text` as one word for any position of a command line: bare when nothing in it is
/// special, otherwise in single quotes (the most readable form for names with blanks).
public func shellQuote(_ text: String) -> String {
    if !text.isEmpty, shellEscape(text, atWordStart: true) == text { return text }
    return "'" + shellEscape(text, in: .single) + "'"
}

private func needsBackslash(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar {
    case " ", "\t", "\n", "\r", "\u{0B}", "\u{0C}",
         "'", "\"", "\\", "*", "?", "[", "]", ";",
         "$", "`", "&", "|", "<", ">", "(", ")", "{", "}", "!":
        return true
    default:
        return false
    }
}

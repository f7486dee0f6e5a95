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
/// - Inside `$'…'`, a backslash goes before `'` and `\`.
///
/// A character a name is shown with escaped (a control, a line feed, one that shows as
/// nothing: `nameScalars`) is written visibly, as scripts' output spells it, inside `$'…'`
/// (`new$'\x0a'line`; in quotes, the quote closed and opened again around it): the line being
/// edited stays on one line and shows what it holds (review AX7-13).
public func shellEscape(_ text: String, in quote: QuoteState = .none, atWordStart: Bool = false) -> String {
    var out = String.UnicodeScalarView()
    var first = atWordStart
    let (open, close) = switch quote {
    case .none: ("$'", "'")
    case .single: ("'$'", "''")
    case .double: ("\"$'", "'\"")
    case .ansiC: ("", "")
    }
    let scalars = mayHoldEscapedInNames(text) ? nameScalars(text) : text.unicodeScalars.map { ($0, false) }
    for (i, (scalar, escaped)) in scalars.enumerated() {
        defer { first = false }
        if escaped {
            if i == 0 || !scalars[i - 1].escaped { out.append(contentsOf: open.unicodeScalars) }
            out.append(contentsOf: escapedForScripts(scalar).unicodeScalars)
            if i == scalars.count - 1 || !scalars[i + 1].escaped { out.append(contentsOf: close.unicodeScalars) }
            continue
        }
        switch quote {
        case .ansiC:
            if scalar == "'" || scalar == "\\" { out.append("\\") }
            out.append(scalar)
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

// Every name the program prints goes through here: a hostile name (one holding ESC, CR, LF, C1
// controls or bidirectional overrides) can neither drive the terminal nor hide or reorder what
// is shown, and a script can tell every name from every other.

/// True for the characters that must never reach a terminal as they are: C0 controls, DEL,
/// C1 controls, and the bidirectional marks, embeddings, overrides and isolates (U+061C,
/// U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), which can make a name display in a
/// misleading order.
public func isUnsafeOnTerminal(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F, 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
}

/// True for the characters a name may hold that show as nothing, so that two names differing
/// only by them look alike (review AQ): Unicode's default-ignorable characters (the soft
/// hyphen, the combining grapheme joiner, the Hangul fillers, the zero-width space, the word
/// joiner and invisible operators, the byte order mark, the deprecated format characters, ...:
/// review CC-7) and the line and paragraph separators — but not those that are visible where
/// they stand (`isContextuallyVisible`). Escaped in names only: text shown (`cat`) keeps them.
///
/// So are the format characters Unicode does not list as ignorable but that a terminal draws
/// as nothing (the interlinear annotation marks U+FFF9–FFFB, the Egyptian hieroglyph format
/// controls: review CI-4), all but the prepended concatenation marks (the Arabic number sign,
/// the end of ayah…), which show where they stand.
public func isInvisibleInName(_ scalar: Unicode.Scalar) -> Bool {
    if scalar.value == 0x2028 || scalar.value == 0x2029 { return true }
    if scalar.properties.isDefaultIgnorableCodePoint { return !isContextuallyVisible(scalar) }
    return scalar.properties.generalCategory == .format && !isPrependedConcatenationMark(scalar)
}

/// Unicode's Prepended_Concatenation_Mark characters (PropList.txt): format characters drawn
/// as a sign that spans the digits after them.
private func isPrependedConcatenationMark(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x0600...0x0605, 0x06DD, 0x070F, 0x0890...0x0891, 0x08E2, 0x110BD, 0x110CD: true
    default: false
    }
}

/// The invisible characters that are part of what a screen shows where they stand, and
/// escaped elsewhere (`nameScalars`): the zero-width joiner and non-joiner (emoji sequences,
/// Persian and Indic words), the variation selectors (an emoji's presentation, an ideograph's
/// variant, a Mongolian letter's form) and the tag characters (the flags of England, Scotland
/// and Wales: review CC-8).
func isContextuallyVisible(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x200C, 0x200D, 0xFE00...0xFE0F, 0xE0100...0xE01EF, 0x180B...0x180D, 0x180F, 0xE0020...0xE007F: true
    default: false
    }
}

/// The characters a name is printed with escaped wherever they stand: `isUnsafeOnTerminal`'s
/// and `isInvisibleInName`'s (the others `isContextuallyVisible` names, by where they stand:
/// `nameScalars`).
public func isEscapedInNames(_ scalar: Unicode.Scalar) -> Bool { isUnsafeOnTerminal(scalar) || isInvisibleInName(scalar) }

/// True when `text` holds a character that `nameScalars` may print escaped.
func mayHoldEscapedInNames(_ text: String) -> Bool {
    text.unicodeScalars.contains { isEscapedInNames($0) || isContextuallyVisible($0) }
}

/// The characters of a name, each with whether it is printed escaped: those
/// `isEscapedInNames` names, and those `isContextuallyVisible` names where a screen shows
/// nothing of them — a joiner at the name's start or end, or beside an ASCII character,
/// another joiner or an escaped character (so that `ab\u{200C}c` cannot pass for `abc`); a
/// variation selector after a character it does not select a form of (`selects`); tag
/// characters outside one of the three flags made of them (`flagTagSequences`). Between two
/// other characters (an emoji sequence, a Persian or Indic word) a joiner is kept.
public func nameScalars(_ text: String) -> [(scalar: Unicode.Scalar, escaped: Bool)] {
    let scalars = Array(text.unicodeScalars)
    func shown(_ i: Int) -> Bool {
        scalars.indices.contains(i) && scalars[i].value >= 0x80 && !isContextuallyVisible(scalars[i]) && !isEscapedInNames(scalars[i])
    }
    // What a joiner follows: the character before, past its emoji variation selector (👁️‍🗨️).
    func shownBefore(_ i: Int) -> Bool {
        var k = i - 1
        if k >= 0, (0xFE00...0xFE0F).contains(scalars[k].value) { k -= 1 }
        return shown(k)
    }
    let flagTags = flagTagSequences(scalars)
    return scalars.indices.map { i in
        let scalar = scalars[i]
        guard !isEscapedInNames(scalar) else { return (scalar, true) }
        switch scalar.value {
        case 0x200C, 0x200D:
            return (scalar, !(shownBefore(i) && shown(i + 1)))
        case 0xE0020...0xE007F:
            return (scalar, !flagTags.contains(i))
        case 0xFE00...0xFE0F, 0xE0100...0xE01EF, 0x180B...0x180D, 0x180F:
            return (scalar, !(i > 0 && selects(scalar, after: scalars[i - 1], before: i + 1 < scalars.count ? scalars[i + 1] : nil)))
        default:
            return (scalar, false)
        }
    }
}

/// True when the variation selector `selector` may change how `base` shows (review CD-1:
/// after any letter it showed as nothing, so `résumé\u{FE0F}.pdf` passed for `résumé.pdf`):
/// an emoji's presentation selector after an emoji shown as text by default (CE-1: after 😀,
/// an emoji already, it showed as nothing), or after a keycap's digit, `#` or `*` before
/// U+20E3; a standardized one after an ideograph, a mathematical symbol or a Myanmar letter
/// (CE-2); an ideographic one after an ideograph; a Mongolian one after a Mongolian letter.
private func selects(_ selector: Unicode.Scalar, after base: Unicode.Scalar, before next: Unicode.Scalar?) -> Bool {
    switch selector.value {
    case 0xFE0E, 0xFE0F:
        if base.isASCII { return "0123456789#*".unicodeScalars.contains(base) && next?.value == 0x20E3 }
        return base.properties.isEmoji && !base.properties.isEmojiPresentation
    case 0xFE00...0xFE0D:
        return base.properties.isUnifiedIdeograph || base.properties.generalCategory == .mathSymbol
            || (0x1000...0x109F).contains(base.value)
    case 0xE0100...0xE01EF:
        return base.properties.isUnifiedIdeograph
    case 0x180B...0x180D, 0x180F:
        return (0x1820...0x18AA).contains(base.value)
    default:
        return false
    }
}

/// The positions of the tag characters that make the flags Unicode recommends: U+1F3F4, then
/// the tags of `gbeng`, `gbsct` or `gbwls`, ended by U+E007F (review CD-1: any run of tags
/// there showed as nothing).
private func flagTagSequences(_ scalars: [Unicode.Scalar]) -> Set<Int> {
    let flags: Set<String> = ["gbeng", "gbsct", "gbwls"]
    var found = Set<Int>()
    for (i, scalar) in scalars.enumerated() where scalar.value == 0x1F3F4 {
        var j = i + 1
        var letters = ""
        while j < scalars.count, (0xE0020...0xE007E).contains(scalars[j].value) {
            letters.unicodeScalars.append(Unicode.Scalar(scalars[j].value - 0xE0000)!)
            j += 1
        }
        if flags.contains(letters), j < scalars.count, scalars[j].value == 0xE007F { found.formUnion((i + 1)...j) }
    }
    return found
}

/// `text` made safe to print on a terminal, as `ls -q` does: every character `nameScalars`
/// escapes becomes `?`, so that a name with a newline stays on one line and no name can move
/// the cursor, clear the screen or reorder what follows it. Everything else is kept. Use it
/// only for display: the result no longer names the item.
public func terminalSafe(_ text: String) -> String {
    guard mayHoldUnsafe(text, orBackslash: false), mayHoldEscapedInNames(text) else { return text }
    var out = String.UnicodeScalarView()
    for (scalar, escaped) in nameScalars(text) {
        out.append(escaped ? "?" : scalar)
    }
    return String(out)
}

/// `text` in the unambiguous form scripts read (docs/INTERFACE.md, "Names in output"): a
/// backslash as `\\`, and each character `nameScalars` escapes as `\xHH` (below U+0100)
/// or `\u{HHHH}`; everything else as it is. Every name has exactly one such form.
public func scriptSafe(_ text: String) -> String {
    escapingUnsafe(text, doublingBackslashes: true)
}

/// `scalar` as scripts' output spells an escaped character: `\xHH` below U+0100, else
/// `\u{HHHH}` (which `$'…'` on a command line reads back).
public func escapedForScripts(_ scalar: Unicode.Scalar) -> String {
    let hex = String(scalar.value, radix: 16)
    return scalar.value < 0x100 ? "\\x" + (hex.count < 2 ? "0" + hex : hex) : "\\u{" + hex + "}"
}

/// Each character `nameScalars` escapes as `\xHH` or `\u{HHHH}`, and with
/// `doublingBackslashes` each backslash as `\\`.
public func escapingUnsafe(_ text: String, doublingBackslashes: Bool) -> String {
    guard mayHoldUnsafe(text, orBackslash: doublingBackslashes),
          (doublingBackslashes && text.unicodeScalars.contains("\\")) || mayHoldEscapedInNames(text) else { return text }
    var out = ""
    for (scalar, escaped) in nameScalars(text) {
        if doublingBackslashes && scalar == "\\" {
            out += "\\\\"
        } else if escaped {
            out += escapedForScripts(scalar)
        } else {
            out.unicodeScalars.append(scalar)
        }
    }
    return out
}

/// A name as it is printed on a stream: `terminalSafe` on a terminal, `scriptSafe` otherwise.
public func shownName(_ text: String, onTerminal: Bool) -> String {
    onTerminal ? terminalSafe(text) : scriptSafe(text)
}

/// A line of text (a message, a listing) as it may be written: no character that could drive a
/// terminal, and none that a name shows escaped (`nameScalars`: one that shows as nothing),
/// goes out as it is — on a terminal it shows as `?` (`terminalSafe`), elsewhere as `\xHH`
/// (`escapingUnsafe`, backslashes not doubled). So a host path or a typed word put into a
/// message raw shows as a name does (review BC-1). Line feeds and tabs are kept only when
/// `allowingLineBreaks` (a listing of several lines); a diagnostic is one line, so that a name
/// put into it raw cannot start a line that imitates another message.
public func shownText(_ text: String, onTerminal: Bool, allowingLineBreaks: Bool) -> String {
    guard mayHoldUnsafe(text, orBackslash: false, allowingLineBreaks: allowingLineBreaks),
          text.unicodeScalars.contains(where: {
              (isUnsafeOnTerminal($0) && !(allowingLineBreaks && ($0 == "\n" || $0 == "\t"))) || isInvisibleInName($0) || isContextuallyVisible($0)
          }) else {
        return text
    }
    func safe(_ part: Substring) -> String {
        onTerminal ? terminalSafe(String(part)) : escapingUnsafe(String(part), doublingBackslashes: false)
    }
    guard allowingLineBreaks else { return safe(text[...]) }
    return text.split(separator: "\n", omittingEmptySubsequences: false).map { line in
        line.split(separator: "\t", omittingEmptySubsequences: false).map(safe).joined(separator: "\t")
    }.joined(separator: "\n")
}

/// False when `text` is printable ASCII with no character `isUnsafeOnTerminal` names (and no
/// backslash, with `orBackslash`; line feeds and tabs pass with `allowingLineBreaks`): the
/// common case, decided on the UTF-8 bytes without decoding. True means "look closer".
public func mayHoldUnsafe(_ text: String, orBackslash: Bool, allowingLineBreaks: Bool = false) -> Bool {
    func suspicious(_ b: UInt8) -> Bool {
        if b < 0x20 { return !(allowingLineBreaks && (b == 0x0A || b == 0x09)) }
        return b >= 0x7F || (orBackslash && b == 0x5C)
    }
    if let answer = text.utf8.withContiguousStorageIfAvailable({ $0.contains(where: suspicious) }) { return answer }
    return text.utf8.contains(where: suspicious)
}

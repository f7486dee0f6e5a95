/// The number of terminal columns `text` takes.
///
/// Counted per extended grapheme cluster, as current terminals draw them: a cluster is 2 columns
/// wide if any of its scalars is East Asian Wide or Fullwidth or has emoji presentation (or is an emoji followed by VS16, U+FE0F) (so a
/// flag or a ZWJ family is 2, not the sum of its parts), 0 if all its scalars are zero-width
/// (combining marks, format characters, controls), else 1. ANSI CSI escape sequences
/// (`ESC [ … m`, as used for colour) take no columns.
///
/// The table is our own rather than `wcwidth(3)`, whose answers depend on the process locale
/// (in the C locale every non-ASCII character is "unprintable").
public func displayWidth(_ text: String) -> Int {
    var width = 0
    var escape = EscapeState.text
    for character in text {
        if character.isASCII, let scalar = character.unicodeScalars.first, character.unicodeScalars.count == 1 {
            switch (escape, scalar.value) {
            case (.text, 0x1B): escape = .escape; continue
            case (.escape, 0x5B): escape = .csi; continue
            case (.escape, _): escape = .text; continue
            case (.csi, 0x40...0x7E): escape = .text; continue
            case (.csi, _): continue
            case (.text, 0x20..<0x7F): width += 1; continue
            case (.text, _): continue   // ASCII controls take no column
            }
        }
        escape = .text
        width += clusterWidth(character)
    }
    return width
}

private enum EscapeState { case text, escape, csi }

private func clusterWidth(_ character: Character) -> Int {
    var zero = true
    for scalar in character.unicodeScalars {
        if isWide(scalar) { return 2 }
        // VS16 asks for emoji presentation of the emoji before it (❤️).
        if scalar.value == 0xFE0F, character.unicodeScalars.first?.properties.isEmoji == true { return 2 }
        if !isZeroWidth(scalar) { zero = false }
    }
    return zero ? 0 : 1
}

private func isZeroWidth(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.properties.generalCategory {
    case .nonspacingMark, .enclosingMark, .format, .control:
        return true
    default:
        // Hangul medial vowels and final consonants join the syllable before them.
        return (0x1160...0x11FF).contains(scalar.value) || (0xD7B0...0xD7FF).contains(scalar.value)
    }
}

private func isWide(_ scalar: Unicode.Scalar) -> Bool {
    let value = scalar.value
    if value < 0x1100 { return false }
    if scalar.properties.isEmojiPresentation { return true }
    return wideRanges.contains { $0.contains(value) }
}

/// East Asian Wide (W) and Fullwidth (F) ranges of Unicode 15 other than emoji with emoji
/// presentation, which `isEmojiPresentation` covers.
private let wideRanges: [ClosedRange<UInt32>] = [
    0x1100...0x115F, 0x2329...0x232A, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF,
    0x4E00...0x9FFF, 0xA000...0xA4CF, 0xA960...0xA97F, 0xAC00...0xD7A3, 0xF900...0xFAFF,
    0xFE10...0xFE19, 0xFE30...0xFE6F, 0xFF00...0xFF60, 0xFFE0...0xFFE6, 0x16FE0...0x16FE4,
    0x16FF0...0x16FF1, 0x17000...0x187F7, 0x18800...0x18CD5, 0x18D00...0x18D08,
    0x1AFF0...0x1B2FB, 0x1F200...0x1F202, 0x1F210...0x1F23B, 0x1F240...0x1F248,
    0x1F250...0x1F251, 0x1F260...0x1F265, 0x20000...0x2FFFD, 0x30000...0x3FFFD,
]

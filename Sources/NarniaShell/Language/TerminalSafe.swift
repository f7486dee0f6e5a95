/// `text` made safe to print on a terminal, as `ls` does with `-q` on a terminal: every control
/// character (C0, DEL, C1) becomes `?`, so that a hostile name cannot move the cursor, clear the
/// screen or inject an escape sequence, and a name with a newline stays on one line. Bidirectional
/// overrides and isolates (U+202A–U+202E, U+2066–U+2069) become `?` too, so that a name cannot
/// display its characters in a misleading order. Everything else is kept.
///
/// Use it only for display: the result no longer names the item.
public func terminalSafe(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: isUnsafe) else { return text }
    var out = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
        out.append(isUnsafe(scalar) ? "?" : scalar)
    }
    return String(out)
}

private func isUnsafe(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar.value {
    case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069: true
    default: false
    }
}

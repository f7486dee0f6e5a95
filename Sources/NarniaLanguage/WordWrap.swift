/// `text` in lines of at most `width` columns, broken at spaces (a word longer than the width
/// gets a line of its own). Widths are display widths (`displayWidth`), so wide characters
/// count two.
public func wrapWords(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    var current = ""
    var currentWidth = 0
    for word in text.split(separator: " ", omittingEmptySubsequences: true) {
        let w = displayWidth(String(word))
        if currentWidth > 0 && currentWidth + 1 + w > width {
            lines.append(current)
            current = ""
            currentWidth = 0
        }
        if currentWidth > 0 {
            current += " "
            currentWidth += 1
        }
        current += word
        currentWidth += w
    }
    if !current.isEmpty || lines.isEmpty { lines.append(current) }
    return lines
}

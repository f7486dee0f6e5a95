/// Lays out `items` in columns for a terminal `width` columns wide, like `ls -C`: filled column
/// by column, in as few rows as fit (each column count taking the rows it needs, as `ls` does), each column as wide as its widest item, columns `spacing`
/// blanks apart. As GNU `ls` does, a line is kept shorter than `width`, so that a terminal that
/// wraps at its last column never wraps a listing. Widths are measured with `measure` (`displayWidth(_:)` by default, which skips
/// colour escapes). Returns the lines, without trailing blanks or newlines; one item per line
/// when even two columns do not fit; no lines for no items.
public func layoutColumns(_ items: [String], width: Int, spacing: Int = 2,
                          measure: (String) -> Int = displayWidth) -> [String] {
    guard !items.isEmpty else { return [] }
    let widths = items.map(measure)
    let count = items.count
    var rows = count
    var columnWidths = [widths.max() ?? 0]
    // As ls does: try column counts from the most that could fit down to two, each with the
    // rows it needs, and keep the first that fits. No column is narrower than one cell.
    let maxColumns = min(count, max(1, (width + spacing) / (1 + spacing)))
    if maxColumns > 1 {
        for wanted in stride(from: maxColumns, through: 2, by: -1) {
            let candidate = (count + wanted - 1) / wanted
            let columns = (count + candidate - 1) / candidate
            guard columns > 1, candidate < rows else { continue }
            let maxima = (0..<columns).map { column in
                widths[(column * candidate)..<min((column + 1) * candidate, count)].max() ?? 0
            }
            if maxima.reduce(0, +) + spacing * (columns - 1) < width {
                rows = candidate
                columnWidths = maxima
                break
            }
        }
    }
    return (0..<rows).map { row in
        var line = ""
        var index = row
        var column = 0
        while index < count {
            line += items[index]
            if index + rows < count {
                line += String(repeating: " ", count: columnWidths[column] - widths[index] + spacing)
            }
            index += rows
            column += 1
        }
        return line
    }
}

/// Lays out `items` in columns for a terminal `width` columns wide, like `ls -C`: filled column
/// by column, in as few rows as fit, each column as wide as its widest item, columns `spacing`
/// blanks apart. Widths are measured with `measure` (`displayWidth(_:)` by default, which skips
/// colour escapes). Returns the lines, without trailing blanks or newlines; one item per line
/// when even two columns do not fit; no lines for no items.
public func layoutColumns(_ items: [String], width: Int, spacing: Int = 2,
                          measure: (String) -> Int = displayWidth) -> [String] {
    guard !items.isEmpty else { return [] }
    let widths = items.map(measure)
    let count = items.count
    var rows = count
    var columnWidths = [widths.max() ?? 0]
    // No column is narrower than one cell, so no more columns than this can fit.
    let maxColumns = max(1, (width + spacing) / (1 + spacing))
    let fewestRows = (count + maxColumns - 1) / maxColumns
    if columnWidths[0] < width {
        for candidate in max(1, fewestRows)..<count {
            let columns = (count + candidate - 1) / candidate
            let maxima = (0..<columns).map { column in
                widths[(column * candidate)..<min((column + 1) * candidate, count)].max() ?? 0
            }
            if maxima.reduce(0, +) + spacing * (columns - 1) <= width {
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

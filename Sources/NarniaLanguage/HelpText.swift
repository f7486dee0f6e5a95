/// The text of `help` and `help CMD`, for both shells: wrapped at word boundaries to `width`.
public enum HelpText {
    /// The width help is wrapped to: the terminal's, at most 100 columns; 80 off a terminal.
    public static func width(terminalColumns: Int?) -> Int {
        terminalColumns.map { min($0, 100) } ?? 80
    }

    /// `help`: one line per command, its name and abstract.
    public static func overview(_ commands: [any CommandDescription], width: Int) -> [String] {
        let nameWidth = commands.map(\.name.count).max() ?? 0
        var lines: [String] = []
        for command in commands {
            let wrapped = wrapWords(command.abstract, width: max(20, width - nameWidth - 2))
            for (i, line) in wrapped.enumerated() {
                let left = i == 0 ? padded(command.name, to: nameWidth) : String(repeating: " ", count: nameWidth)
                lines.append(left + "  " + line)
            }
        }
        return lines
    }

    /// `help CMD`: usage (and that of an alias taking other operands), aliases, abstract,
    /// details and one line per flag.
    public static func page(_ command: any CommandDescription, width: Int) -> [String] {
        var lines = [command.usageLine(as: command.name)]
        for alias in command.aliases where command.aliasUsages[alias] != nil {
            lines.append("       " + command.usageLine(as: alias).dropFirst("usage: ".count))
        }
        if !command.aliases.isEmpty { lines.append("also: \(command.aliases.joined(separator: ", "))") }
        lines += ["", command.abstract]
        if !command.details.isEmpty {
            lines.append("")
            lines += wrapWords(command.details, width: width)
        }
        if !command.flags.isEmpty {
            lines.append("")
            let lefts = command.flags.map { f in f.spellings.joined(separator: ", ") + (f.valueName.map { " " + $0 } ?? "") }
            let leftWidth = lefts.map(\.count).max() ?? 0
            for (left, flag) in zip(lefts, command.flags) {
                let prefix = "  " + padded(left, to: leftWidth) + "  "
                for (i, line) in wrapWords(flag.help, width: max(20, width - prefix.count)).enumerated() {
                    lines.append((i == 0 ? prefix : String(repeating: " ", count: prefix.count)) + line)
                }
            }
        }
        return lines
    }

    private static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - text.count))
    }
}

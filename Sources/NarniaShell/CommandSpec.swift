/// One command of the vault shell, declared once: parsing, `help`, `help CMD` and Tab
/// completion all read this table (see `CommandTable`).
public struct CommandSpec {
    /// What an argument position holds, for completion.
    public enum Operand: Sendable {
        case none, vaultPath, hostPath, settingKey
    }

    /// A flag the command accepts; `takesValue` flags consume the next word.
    public struct Flag: Sendable {
        public let spelling: String
        public let takesValue: Bool
        public let help: String
    }

    public let name: String
    public let aliases: [String]
    /// The usage line after the name, as in `help` and the man page.
    public let usage: String
    /// One line for `help`.
    public let abstract: String
    /// A few sentences for `help CMD`.
    public let details: String
    public let flags: [Flag]
    /// The operand kinds in order; the last one repeats.
    public let operands: [Operand]
    /// For commands whose last operand is a host path (`export`), that kind overrides the rest.
    public let lastOperandIsHost: Bool
    let run: (Session, ParsedArguments) throws -> Void

    init(_ name: String, aliases: [String] = [], usage: String = "", abstract: String, details: String = "",
         flags: [Flag] = [], operands: [Operand] = [], lastOperandIsHost: Bool = false,
         run: @escaping (Session, ParsedArguments) throws -> Void) {
        self.name = name
        self.aliases = aliases
        self.usage = usage
        self.abstract = abstract
        self.details = details
        self.flags = flags
        self.operands = operands
        self.lastOperandIsHost = lastOperandIsHost
        self.run = run
    }

}

extension CommandSpec.Flag {
    static func flag(_ spelling: String, _ help: String, value: Bool = false) -> Self {
        Self(spelling: spelling, takesValue: value, help: help)
    }
}

/// A command's words after flag parsing.
public struct ParsedArguments {
    /// The command name as typed.
    public let command: String
    /// Flags present, by spelling (`-l`), with their value for flags that take one.
    public var flags: [String: String] = [:]
    /// The operands, in order, as words (quoting kept for globbing).
    public var operands: [Word] = []

    public func has(_ flag: String) -> Bool { flags[flag] != nil }
}

extension CommandSpec {
    /// True when `words` ask for this command's help: `--help`, or `-h` where the command has
    /// no `-h` of its own (`ls -h` and `du -h` are human sizes), before any `--`.
    func asksForHelp(_ words: [Word]) -> Bool {
        for word in words where word.quotedScalars.first != true {
            if word.text == "--" { return false }
            if word.text == "--help" { return true }
            if word.text == "-h" && !flags.contains(where: { $0.spelling == "-h" }) { return true }
        }
        return false
    }

    /// Splits `words` into flags and operands. Short flags combine (`-rf`); `--` ends flags;
    /// a lone `-` is an operand.
    func parse(_ words: [Word]) throws -> ParsedArguments {
        var parsed = ParsedArguments(command: name)
        var index = 0
        var flagsDone = false
        while index < words.count {
            let word = words[index]
            let text = word.text
            index += 1
            if flagsDone || !text.hasPrefix("-") || text == "-" || word.quotedScalars.first == true {
                parsed.operands.append(word)
                continue
            }
            if text == "--" { flagsDone = true; continue }
            if let flag = flags.first(where: { $0.spelling == text }) {
                if flag.takesValue {
                    guard index < words.count else { throw CommandFailure("\(text) needs a value") }
                    parsed.flags[text] = words[index].text
                    index += 1
                } else {
                    parsed.flags[text] = ""
                }
                continue
            }
            // Combined short flags: -rf
            let letters = text.dropFirst()
            if !text.hasPrefix("--"), letters.count > 1,
               letters.allSatisfy({ l in flags.contains { $0.spelling == "-\(l)" && !$0.takesValue } }) {
                for l in letters { parsed.flags["-\(l)"] = "" }
                continue
            }
            throw CommandFailure("unknown option \(text)", hint: "see 'help \(name)'")
        }
        return parsed
    }
}

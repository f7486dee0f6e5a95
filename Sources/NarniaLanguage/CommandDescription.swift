/// A flag a command accepts. One that takes a value consumes the next word, or the text after
/// `=` in `--flag=value`.
public struct FlagSpec: Sendable {
    /// Every spelling (`-c`, `--colour`); the first one keys `ParsedArguments.flags`.
    public let spellings: [String]
    /// The value's name in help (`COLOUR`), or nil for a flag without a value.
    public let valueName: String?
    /// One line for `help CMD`.
    public let help: String
    /// The values Tab offers, if any.
    public let choices: [String]

    public init(_ spellings: [String], value: String? = nil, _ help: String, choices: [String] = []) {
        self.spellings = spellings
        self.valueName = value
        self.help = help
        self.choices = choices
    }

    /// The first spelling.
    public var spelling: String { spellings[0] }
    /// True when the flag consumes a value.
    public var takesValue: Bool { valueName != nil }
}

/// What both shells know of a command for parsing and `help`: each shell's command type adds
/// what its operands are and how it runs.
public protocol CommandDescription {
    var name: String { get }
    var aliases: [String] { get }
    /// The usage line after the name, as in `help` and the man page.
    var usage: String { get }
    /// The usage of an alias that takes other operands (`mget PATH...`, where `export` takes a
    /// HOSTDEST last), by alias.
    var aliasUsages: [String: String] { get }
    /// One line for `help`.
    var abstract: String { get }
    /// A few sentences for `help CMD`.
    var details: String { get }
    var flags: [FlagSpec] { get }
    /// Flags that contradict each other (`-v` and `-q`): two of one group are refused.
    var exclusive: [[String]] { get }
}

extension CommandDescription {
    public var exclusive: [[String]] { [] }
    public var aliasUsages: [String: String] { [:] }

    /// The usage line of the command as `typed` (its name or an alias): `usage: mget PATH...`.
    public func usageLine(as typed: String) -> String {
        let name = aliases.contains(typed) ? typed : self.name
        let operands = aliasUsages[name] ?? usage
        return "usage: \(name)\(operands.isEmpty ? "" : " " + operands)"
    }
}

/// A command's words after flag parsing.
public struct ParsedArguments {
    /// The command's name (an alias typed gives the name it stands for).
    public let command: String
    /// The name typed, an alias (`mget`) or the command's name; empty where none was typed.
    public var typedName = ""
    /// Flags present, by first spelling (`-l`), with their value for flags that take one.
    public var flags: [String: String]
    /// The operands, in order, as words (quoting kept for globbing).
    public var operands: [Word]
    /// Flags taking a value that were given more than once (`flags` holds the last value).
    public var givenTwice = Set<String>()

    public init(command: String, flags: [String: String] = [:], operands: [Word] = []) {
        self.command = command
        self.flags = flags
        self.operands = operands
    }

    public func has(_ flag: String) -> Bool { flags[flag] != nil }
    /// The operands' texts, quotes removed.
    public var operandTexts: [String] { operands.map(\.text) }
}

extension CommandDescription {
    /// The one-letter flags `letters` stand for, each with its value when it takes one and the
    /// rest of the letters give it; `valueFollows` when the last takes one from the next word.
    /// Nil when a letter is no flag of this command.
    private func combined(_ letters: Substring) -> (flags: [(FlagSpec, String?)], valueFollows: Bool)? {
        var flags: [(FlagSpec, String?)] = []
        var rest = letters
        while let letter = rest.first {
            rest = rest.dropFirst()
            guard let flag = flag("-\(letter)") else { return nil }
            guard flag.takesValue else {
                flags.append((flag, nil))
                continue
            }
            flags.append((flag, rest.isEmpty ? nil : String(rest)))
            return (flags, rest.isEmpty)
        }
        return (flags, false)
    }

    /// The flag spelled `spelling`.
    public func flag(_ spelling: String) -> FlagSpec? {
        flags.first { $0.spellings.contains(spelling) }
    }

    /// True when `words` ask for this command's help: `--help`, or `-h` where the command has
    /// no `-h` of its own (`ls -h` and `du -h` are human sizes), before any `--`.
    public func asksForHelp(_ words: [Word]) -> Bool {
        for word in words where word.quotedScalars.first != true {
            if word.text == "--" { return false }
            if word.text == "--help" { return true }
            if word.text == "-h" && flag("-h") == nil { return true }
        }
        return false
    }

    /// Splits `words` into flags and operands. Short flags without values combine (`-rf`);
    /// `--flag=value` gives a value inline; `--` ends the flags; a lone `-` and a word that
    /// starts with a quote are operands.
    public func parse(_ words: [Word]) throws -> ParsedArguments {
        var parsed = ParsedArguments(command: name)
        var index = 0
        var flagsDone = false
        func give(_ flag: FlagSpec, _ value: String) {
            if flag.takesValue && parsed.flags[flag.spelling] != nil { parsed.givenTwice.insert(flag.spelling) }
            parsed.flags[flag.spelling] = value
        }
        while index < words.count {
            let word = words[index]
            let text = word.text
            index += 1
            if flagsDone || !text.hasPrefix("-") || text == "-" || word.quotedScalars.first == true {
                parsed.operands.append(word)
                continue
            }
            if text == "--" { flagsDone = true; continue }
            if let flag = flag(text) {
                if flag.takesValue {
                    guard index < words.count else { throw CommandFailure("\(text) needs a value") }
                    give(flag, words[index].text)
                    index += 1
                } else {
                    give(flag, "")
                }
                continue
            }
            if text.hasPrefix("--"), let equals = text.firstIndex(of: "="),
               let flag = flag(String(text[..<equals])), flag.takesValue {
                give(flag, String(text[text.index(after: equals)...]))
                continue
            }
            // One-letter flags combined, as getopt reads them: `-rf`; one that takes a value
            // takes the rest of the word (`-L2`), or the next word when it ends it (`-dL 1`).
            if !text.hasPrefix("--"), text.count > 2, let cluster = combined(text.dropFirst()) {
                for (flag, value) in cluster.flags { give(flag, value ?? "") }
                if cluster.valueFollows {
                    guard index < words.count else { throw CommandFailure("\(text) needs a value") }
                    give(cluster.flags.last!.0, words[index].text)
                    index += 1
                }
                continue
            }
            throw CommandFailure("unknown option \(text)", hint: "see 'help \(name)'")
        }
        for group in exclusive {
            let given = group.filter(parsed.has)
            if given.count > 1 { throw CommandFailure("\(given.joined(separator: " and ")) cannot both be given") }
        }
        return parsed
    }
}

/// A failed command, in words for the user: printed as `narnia: error: CMD: MESSAGE` (the cover:
/// `wardrobe: CMD: MESSAGE`), with an optional `hint` line that says what to do instead.
public struct CommandFailure: Error, CustomStringConvertible, Equatable {
    public let message: String
    public let hint: String?

    public init(_ message: String, hint: String? = nil) {
        self.message = message
        self.hint = hint
    }

    public var description: String { message }
}

import NarniaShell

/// One command of the Wardrobe, declared once: parsing, `help`, `help CMD` and Tab completion
/// all read `WardrobeCommand.all`.
public struct WardrobeCommand: Sendable {
    /// What an operand names, for completion.
    public enum Operand: Sendable {
        /// Nothing to complete (a new garment's name).
        case none
        /// A tab (`cd`).
        case tab
        /// A tab or a garment.
        case place
        /// A command name (`help`).
        case command
    }

    /// A flag; one that takes a value consumes the next word (or `--flag=value`).
    public struct Flag: Sendable {
        public let spellings: [String]
        public let valueName: String?
        public let help: String
        /// The choices offered by Tab for the value, if any.
        public let choices: [String]

        init(_ spellings: [String], value: String? = nil, _ help: String, choices: [String] = []) {
            self.spellings = spellings
            self.valueName = value
            self.help = help
            self.choices = choices
        }
    }

    public let name: String
    public let aliases: [String]
    public let usage: String
    public let abstract: String
    public let details: String
    public let flags: [Flag]
    public let operand: Operand
    let run: @Sendable (Wardrobe, WardrobeArguments) throws -> Void

    init(_ name: String, aliases: [String] = [], usage: String = "", abstract: String, details: String = "",
         flags: [Flag] = [], operand: Operand = .none, run: @escaping @Sendable (Wardrobe, WardrobeArguments) throws -> Void) {
        self.name = name
        self.aliases = aliases
        self.usage = usage
        self.abstract = abstract
        self.details = details
        self.flags = flags
        self.operand = operand
        self.run = run
    }

    /// Every command, in `help` order.
    public static let all: [WardrobeCommand] = [
        WardrobeCommand("ls", aliases: ["list"], usage: "[-l] [TAB|GARMENT...]", abstract: "list the tabs, or the garments in a tab",
                        details: "At the top, each tab with the number of garments in it; in a tab, its garments by name. -l adds each garment's colour and season.",
                        flags: [Flag(["-l"], "long listing: name, colour, season")], operand: .place, run: { try Wardrobe.ls($0, $1) }),
        WardrobeCommand("cd", usage: "[TAB|..]", abstract: "go into a tab, or back to the top",
                        details: "Without a tab, or with '..', go back to the top of the wardrobe.", operand: .tab, run: { try Wardrobe.cd($0, $1) }),
        WardrobeCommand("add", usage: "[-c COLOUR] [-s SEASON] [-n NOTES] [[TAB/]NAME]", abstract: "add a garment",
                        details: "Adds a garment to the current tab (or to TAB). Without flags, on a terminal, add asks for the name, colour, season and notes; an empty answer leaves a detail blank. Seasons: \(Season.all.joined(separator: ", ")).",
                        flags: [Flag(["-c", "--colour", "--color"], value: "COLOUR", "its colour"),
                                Flag(["-s", "--season"], value: "SEASON", "when it is worn", choices: Season.all),
                                Flag(["-n", "--notes"], value: "NOTES", "anything worth remembering")],
                        operand: .none, run: { try Wardrobe.add($0, $1) }),
        WardrobeCommand("open", usage: "GARMENT...", abstract: "show a garment's details", operand: .place, run: { try Wardrobe.open($0, $1) }),
        WardrobeCommand("hold", usage: "GARMENT", abstract: "hold a garment up for a closer look", operand: .place, run: { try Wardrobe.hold($0, $1) }),
        WardrobeCommand("mv", usage: "GARMENT... TAB | GARMENT NEWNAME", abstract: "move garments to another tab, or rename one",
                        details: "When the last word is a tab, the garments move into it. Otherwise the one garment is renamed (TAB/NEWNAME moves and renames it). A name already in the tab is never replaced.",
                        operand: .place, run: { try Wardrobe.mv($0, $1) }),
        WardrobeCommand("rm", usage: "GARMENT...", abstract: "take garments out of the wardrobe", operand: .place, run: { try Wardrobe.rm($0, $1) }),
        WardrobeCommand("help", usage: "[COMMAND]", abstract: "list the commands, or explain one", operand: .command, run: { try Wardrobe.help($0, $1) }),
        WardrobeCommand("exit", aliases: ["quit"], abstract: "close the wardrobe (also Ctrl-D)", run: { try Wardrobe.exit($0, $1) }),
    ]

    /// The command called `name`, or with that alias.
    public static func find(_ name: String) -> WardrobeCommand? {
        all.first { $0.name == name || $0.aliases.contains(name) }
    }

    /// The flag spelled `spelling`.
    func flag(_ spelling: String) -> Flag? { flags.first { $0.spellings.contains(spelling) } }

    /// Splits words into flags (by their first spelling) and operands. `--` ends the flags;
    /// a quoted word is always an operand.
    func parse(_ words: [Word]) throws -> WardrobeArguments {
        var parsed = WardrobeArguments()
        var i = 0
        var flagsDone = false
        while i < words.count {
            let word = words[i]
            i += 1
            let text = word.text
            guard !flagsDone, word.looksLikeFlag, text != "-" else { parsed.operands.append(text); continue }
            if text == "--" { flagsDone = true; continue }
            var spelling = text, inline: String?
            if text.hasPrefix("--"), let eq = text.firstIndex(of: "=") {
                spelling = String(text[..<eq])
                inline = String(text[text.index(after: eq)...])
            }
            guard let f = flag(spelling) else { throw WardrobeError("unknown option \(text)", hint: "see 'help \(name)'") }
            if f.valueName != nil {
                if let inline { parsed.flags[f.spellings[0]] = inline; continue }
                guard i < words.count else { throw WardrobeError("\(text) needs a value") }
                parsed.flags[f.spellings[0]] = words[i].text
                i += 1
            } else {
                parsed.flags[f.spellings[0]] = ""
            }
        }
        return parsed
    }
}

/// A command's words after flag parsing: flags by their first spelling, operands as typed
/// (quotes removed).
public struct WardrobeArguments: Sendable {
    public var flags: [String: String] = [:]
    public var operands: [String] = []
    public func has(_ flag: String) -> Bool { flags[flag] != nil }
}

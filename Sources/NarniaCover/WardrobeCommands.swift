import NarniaLanguage

/// One command of the Wardrobe, declared once: parsing, `help`, `help CMD` and Tab completion
/// all read `WardrobeCommand.all`.
public struct WardrobeCommand: CommandDescription, Sendable {
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

    public let name: String
    public let aliases: [String]
    public let usage: String
    public let abstract: String
    public let details: String
    public let flags: [FlagSpec]
    public let operand: Operand
    let run: @Sendable (Wardrobe, ParsedArguments) throws -> Void

    init(_ name: String, aliases: [String] = [], usage: String = "", abstract: String, details: String = "",
         flags: [FlagSpec] = [], operand: Operand = .none, run: @escaping @Sendable (Wardrobe, ParsedArguments) throws -> Void) {
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
                        flags: [FlagSpec(["-l"], "long listing: name, colour, season")], operand: .place, run: { try Wardrobe.ls($0, $1) }),
        WardrobeCommand("cd", usage: "[TAB|..]", abstract: "go into a tab, or back to the top",
                        details: "Without a tab, or with '..', go back to the top of the wardrobe.", operand: .tab, run: { try Wardrobe.cd($0, $1) }),
        WardrobeCommand("add", usage: "[-c COLOUR] [-s SEASON] [-n NOTES] [[TAB/]NAME]", abstract: "add a garment",
                        details: "Adds a garment to the current tab (or to TAB). Without flags, on a terminal, add asks for the name, colour, season and notes; an empty answer leaves a detail blank. Seasons: \(Season.all.joined(separator: ", ")).",
                        flags: [FlagSpec(["-c", "--colour", "--color"], value: "COLOUR", "its colour"),
                                FlagSpec(["-s", "--season"], value: "SEASON", "when it is worn", choices: Season.all),
                                FlagSpec(["-n", "--notes"], value: "NOTES", "anything worth remembering")],
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
}

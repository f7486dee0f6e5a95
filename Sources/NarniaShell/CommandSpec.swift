import NarniaLanguage

/// One command of the vault shell, declared once: parsing, `help`, `help CMD` and Tab
/// completion all read this table (see `CommandTable`).
public struct CommandSpec: CommandDescription, Sendable {
    /// What an argument position holds, for completion.
    public enum Operand: Sendable {
        case none, vaultPath, hostPath, settingKey
    }

    public let name: String
    public let aliases: [String]
    /// The usage line after the name, as in `help` and the man page.
    public let usage: String
    public let aliasUsages: [String: String]
    /// One line for `help`.
    public let abstract: String
    /// A few sentences for `help CMD`.
    public let details: String
    public let flags: [FlagSpec]
    /// The operand kinds in order; the last one repeats.
    public let operands: [Operand]
    /// For commands whose last operand is a host path (`export`), that kind overrides the rest.
    public let lastOperandIsHost: Bool
    public let exclusive: [[String]]
    /// How the command depends on the vault's folders as the user last saw them.
    public let treeUse: TreeUse
    /// Flags that make it replace what is there (`export -f`): it then `.reshapes`.
    public let reshapingFlags: [String]
    /// True for arguments with which the command names no item as seen from the current folder
    /// (`cd /keep`): it then uses `.none` of the tree.
    let namesNothingRelative: (@Sendable (ParsedArguments) -> Bool)?
    let run: @Sendable (Session, ParsedArguments) throws -> Void

    init(_ name: String, aliases: [String] = [], usage: String = "", aliasUsages: [String: String] = [:], abstract: String,
         details: String = "", flags: [FlagSpec] = [], exclusive: [[String]] = [], operands: [Operand] = [],
         lastOperandIsHost: Bool = false, treeUse: TreeUse = .namesItems, reshapingFlags: [String] = [],
         namesNothingRelative: (@Sendable (ParsedArguments) -> Bool)? = nil, run: @escaping @Sendable (Session, ParsedArguments) throws -> Void) {
        self.name = name
        self.aliases = aliases
        self.usage = usage
        self.aliasUsages = aliasUsages
        self.abstract = abstract
        self.details = details
        self.flags = flags
        self.operands = operands
        self.lastOperandIsHost = lastOperandIsHost
        self.exclusive = exclusive
        self.treeUse = treeUse
        self.reshapingFlags = reshapingFlags
        self.namesNothingRelative = namesNothingRelative
        self.run = run
    }

    /// What the command, given `arguments` (nil when they do not parse), needs of the tree.
    func treeUse(of arguments: ParsedArguments?) -> TreeUse {
        if reshapingFlags.contains(where: { arguments?.has($0) == true }) { return .reshapes }
        if let arguments, namesNothingRelative?(arguments) == true { return .none }
        return treeUse
    }

    /// What a command needs of the vault's folders, from least to most: what decides whether a
    /// line still runs after other devices' changes arrived while it was typed or read
    /// (`Session.readChangesArrived(beforeRunning:typedAtPrompt:)`).
    public enum TreeUse: Int, Comparable, Sendable {
        /// Names no item: the session itself, settings, keys, devices, the host's folders, the
        /// current folder's path; or goes to a folder named from the root (`cd /keep`, `cd`).
        case none
        /// Reads items by path, or adds new ones: on a tree that changed it shows or adds to
        /// what is there now.
        case namesItems
        /// Removes, moves or overwrites items: named as the user saw them, they may be others now.
        case reshapes

        public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    }
}

extension FlagSpec {
    /// A vault-shell flag without a value: one spelling.
    static func flag(_ spelling: String, _ help: String) -> Self {
        Self([spelling], help)
    }

    /// A flag taking a value, named in help as the usage line names it (`DEPTH`, `GLOB`).
    static func flag(_ spelling: String, value name: String, _ help: String) -> Self {
        Self([spelling], value: name, help)
    }
}

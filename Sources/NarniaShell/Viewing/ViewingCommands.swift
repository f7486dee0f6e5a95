extension CommandTable {
    /// The commands that show items by type (BRIEF §5).
    static let viewingCommands: [CommandSpec] = []
}

extension CommandTable {
    /// The commands about the session itself, listed last in `help`.
    static let sessionCommands: [CommandSpec] = [
        F("help", usage: "[COMMAND]", abstract: "list the commands, or explain one", run: Maintenance.help),
        F("exit", aliases: ["quit"], abstract: "leave the vault", run: Maintenance.exit),
    ]
}

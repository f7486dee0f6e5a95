extension CommandTable {
    /// The commands that show items by type (man narnia, open).
    static let viewingCommands: [CommandSpec] = [
        CommandSpec("open", usage: "PATH...", abstract: "show items by kind: photos, videos, documents, others",
          details: "Photos are drawn in the terminal (chafa), videos play in mpv muted and with no config, scripts, network or resume files, text and PDF text page in less, other items show their type and a hex view. 'set viewer.KIND CMD' or 'set viewer.TYPE/SUBTYPE CMD' chooses another viewer: %s in CMD becomes a path to the content in memory, else CMD reads it on standard input. Several items are shown one after another: n next, p previous, q quit. Nothing is written to disk.",
          operands: [.vaultPath], run: Viewing.open),
        CommandSpec("grid", usage: "[-a] [PATH...]", abstract: "show folders as a thumbnail grid (as ls -g)",
          details: "Photos as small thumbnails, videos as a frame from about one second in with a play glyph, documents, other items and folders as icons with their names. Thumbnails are made once per item and kept, encrypted, in the vault (the first grid of items not drawn before adds a record to the journal), so later grids need no chafa or ffmpeg.",
          flags: [.flag("-a", "include names starting with a dot")], operands: [.vaultPath], run: Grid.ls),
    ]
}

import NarniaLanguage
import Glibc
import Synchronization

extension CommandTable {
    /// The commands about the session itself, listed last in `help`.
    static let sessionCommands: [CommandSpec] = [
        CommandSpec("help", aliases: ["?"], usage: "[COMMAND]", abstract: "list the commands, or explain one",
          details: "Every command also takes --help (and -h, where it has no -h of its own).", treeUse: .none, run: Maintenance.help),
        CommandSpec("panic", abstract: "quick exit: stop viewers, wipe keys, clear the screen and scrollback",
          details: "Kills every viewer, wipes the keys from memory, clears the screen and the terminal's scrollback, and exits at once: status 0, or 1 after a command of the run failed, as exit gives. On a terminal (the shell, the Wardrobe, the passphrase question, -c and -b runs, which it ends with status 131) Ctrl-\\ does the same at any moment, even while a viewer runs; not inside the shell '!' alone starts, which takes the terminal for itself.",
          treeUse: .none, run: Session.panic),
        CommandSpec("!", usage: "[COMMAND]", abstract: "run a host command, or a host shell",
          details: "'!COMMAND' runs COMMAND with /bin/sh in the host folder (see lcd), as typed; it goes last on its line (one followed by ';' and more is refused: use !sh -c '…; …'), and so is one with a here-document or that the next line would finish (an open quote, 'if …; then'); in -c and -b such a refusal ends the run, whatever --keep-going or a '-' mark says. '!' alone starts your shell ($SHELL). They get the terminal and nothing of the vault: no open store file, no key. As in sftp.",
          treeUse: .none, run: HostShell.run),
        CommandSpec("exit", aliases: ["quit", "bye"], abstract: "leave the vault", treeUse: .none, run: Maintenance.exit),
    ]
}

extension Session {
    /// Set by `panic` and by the panic key: the process must finish the panic (clear the
    /// terminal, exit) as soon as the session has been released and its keys wiped. Written
    /// from a signal handler, hence a lock-free atomic word.
    public static var panicRequested: Int32 {
        get { panicFlag.load(ordering: .relaxed) }
        set { panicFlag.store(newValue, ordering: .relaxed) }
    }
    private static let panicFlag = Atomic<Int32>(0)

    /// Sets the colours back to the terminal's own (a viewer killed mid-frame left its last
    /// one, in which the cleared screen was painted: review BN-2), clears the screen shown,
    /// leaves the alternate screen (a pager or viewer killed while it
    /// showed one never switched back, and the main screen would come back whole with the next
    /// program that leaves it), then clears the scrollback, the main screen, homes the cursor,
    /// and clears the scrollback again (some terminals push the cleared screen into it); last,
    /// shows the cursor and sets the cursor keys and keypad back to normal, which a viewer
    /// killed while it played had changed (mpv hides the cursor: review BM-4):
    /// `ESC[0m ESC[H ESC[2J ESC[?1049l ESC[3J ESC[H ESC[2J ESC[3J ESC[?25h ESC[?1l ESC>`.
    public static let clearScreenAndScrollback = "\u{1B}[0m\u{1B}[H\u{1B}[2J\u{1B}[?1049l\u{1B}[3J\u{1B}[H\u{1B}[2J\u{1B}[3J\u{1B}[?25h\u{1B}[?1l\u{1B}>"

    /// Writes `clearScreenAndScrollback` to standard output if it is a terminal, else to the
    /// controlling terminal if there is one; never into a pipe. Uses only `write(2)`.
    /// What a viewer killed while it had the terminal leaves to undo: its alternate screen left
    /// (its page, plaintext, goes with it), colours, cursor and keypad back to normal:
    /// `ESC[0m ESC[?1049l ESC[?25h ESC[?1l ESC>` (the guard writes the same after narnia's
    /// death, `narnia_restore_terminal`).
    public static let leaveViewerScreen = "\u{1B}[0m\u{1B}[?1049l\u{1B}[?25h\u{1B}[?1l\u{1B}>"

    /// Writes `sequence` (by default `clearScreenAndScrollback`) to the terminal: standard
    /// output when it is one, else /dev/tty.
    public static func clearTerminal(_ sequence: String = clearScreenAndScrollback) {
        let bytes = Array(sequence.utf8)
        var fd: Int32 = 1
        var opened = false
        if isatty(1) != 1 {
            fd = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)
            guard fd >= 0 else { return }
            opened = true
        }
        bytes.withUnsafeBytes { b in
            var done = 0
            while done < b.count {
                let n = write(fd, b.baseAddress! + done, b.count - done)
                if n < 0 { if errno == EINTR { continue }; break }
                done += n
            }
        }
        if opened { close(fd) }
    }

    /// Asks a yes-or-no question on the terminal: true for yes, false for no, nil when nobody
    /// can answer. The program sets it for interactive sessions; batch runs never ask.
    // Set once by the launcher before the first command runs, then only read, on the main
    // thread: no other thread touches it.
    nonisolated(unsafe) public static var askYesNo: ((String) -> Bool?)?

    /// The question `import` asks once per vault, at the first import without `--move`.
    public static let removeOriginalsQuestion =
        "Remove each original once its copy is safely in the vault?\n(Asked once; 'set remove-originals on|off' changes it.) [y/N] "

    /// Whether `import` removes originals: the `remove-originals` setting, asked once (at the
    /// first import into a vault) and then remembered in the vault. Without a terminal to ask
    /// on, and until answered, the answer is no.
    public func removeOriginalsAskedOnce() throws -> Bool {
        if let value = vault.settings["remove-originals"] { return value == "on" }
        guard interactive, let ask = Session.askYesNo, let yes = ask(Session.removeOriginalsQuestion) else { return false }
        try vault.setSetting("remove-originals", yes ? "on" : "off")
        return yes
    }

    /// Ends the session from outside a command (the panic key): the shell loop stops after the
    /// running command, and the vault is released.
    public func requestExit() { exitRequested = true }

    /// `panic`: viewers killed and the terminal cleared now; the loop then stops, the session
    /// (and with it every key) is released, and the program exits (see `panicRequested`).
    static func panic(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.isEmpty else { throw CommandTable.tooManyArguments(for: "panic") }
        Session.panicRequested = 1
        ChildProcesses.killAll()
        s.out.flush()
        s.err.flush()
        Session.clearTerminal()
        s.exitRequested = true
    }
}

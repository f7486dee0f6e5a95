import CEditLine
import Glibc
import NarniaShell
import NarniaStore

/// The interactive shell on a terminal: libedit with a prompt that shows the vault folder,
/// emacs bindings, `~/.editrc`, in-memory history and Tab completion.
///
/// Used only when standard input is a terminal (the launcher decides). Ctrl-C at the prompt
/// abandons the line; during a command it asks the command to stop (see `Signals`). Ctrl-D on
/// an empty line, `exit` and `quit` end the session with status 0; SIGTERM and SIGHUP end it
/// with 128 + the signal number, after the session (and with it the vault's keys) is released.
final class InteractiveLoop {
    let session: Session
    private var promptStorage: [CChar] = [0]
    private var editor: OpaquePointer?
    /// The candidates of the last Tab that only announced a long list; Tab again lists them.
    private var announcedCandidates: [String]?

    /// Lines kept in the in-memory history.
    static let historySize: Int32 = 1000

    init(session: Session) { self.session = session }

    /// Whether colour escapes may be used: not under NO_COLOR (set and not empty, as
    /// no-color.org asks) nor on a `dumb` terminal.
    static var colourAllowed: Bool { TerminalStyle.current().colour }

    /// The prompt: `narnia:/path> `, the path made terminal-safe, in colour unless NO_COLOR.
    /// `\u{1}` brackets the escape sequences (EL_PROMPT_ESC) so that libedit does not count
    /// them as columns; `terminalSafe` turns any `\u{1}` in a name into `?`.
    func prompt() -> UnsafePointer<CChar> {
        let path = terminalSafe(session.shown(session.cwd, on: session.out))
        let text: String
        if Self.colourAllowed {
            text = "\u{1}\u{1B}[1;34m\u{1}narnia:\(path)\u{1}\u{1B}[0m\u{1}> "
        } else {
            text = "narnia:\(path)> "
        }
        promptStorage = Array(text.utf8CString)
        return promptStorage.withUnsafeBufferPointer { $0.baseAddress! }
    }

    /// Tab: asks the pure completion function, edits the line, and lists the candidates when
    /// the choice is not unique. A list taller than the terminal is first announced with its
    /// size; a second Tab lists it.
    func complete(line: String, cursorByte: Int) -> Int32 {
        guard let el = editor else { return Int32(NARNIA_EL_COMPLETE_NOTHING) }
        let result = NarniaShell.complete(line: line, cursor: cursorByte, source: ShellCompletionSource(session: session))
        var edited = false
        if result.changesLine {
            edited = narnia_el_replace_before_cursor(el, Int32(result.deleteScalars), result.insertText) == 0
        }
        guard result.candidates.count > 1 else {
            announcedCandidates = nil
            return Int32(edited ? NARNIA_EL_COMPLETE_EDITED : NARNIA_EL_COMPLETE_NOTHING)
        }
        let width = Int(narnia_el_columns(el))    // re-read: the window may have been resized
        let height = Int(narnia_el_lines(el))
        let rows = layoutColumns(result.candidates.map(terminalSafe), width: width)
        var text = "\n"
        if rows.count > max(height - 2, 1) && announcedCandidates != result.candidates {
            announcedCandidates = result.candidates
            text += "\(result.candidates.count) candidates (\(rows.count) lines); press Tab again to list them\n"
        } else {
            announcedCandidates = nil
            for row in rows { text += row + "\n" }
        }
        fputs(text, stdout)
        fflush(stdout)
        return Int32(NARNIA_EL_COMPLETE_LISTED)
    }

    /// Runs the shell until exit, Ctrl-D or a terminating signal; returns the exit status.
    func run() -> Int32 {
        let client = Unmanaged.passUnretained(self).toOpaque()
        editor = narnia_el_open("narnia", stdin, stdout, stderr, client, { c in
            Unmanaged<InteractiveLoop>.fromOpaque(c!).takeUnretainedValue().prompt()
        }, { c, line, cursor in
            Unmanaged<InteractiveLoop>.fromOpaque(c!).takeUnretainedValue().complete(line: String(cString: line!), cursorByte: Int(cursor))
        }, Self.historySize)
        guard let el = editor else {
            fputs("narnia: error: cannot start the line editor\n", stderr)
            return 1
        }
        defer {
            narnia_el_close(el)
            editor = nil
        }
        while true {
            if let status = Signals.terminationStatus() { return status }
            if session.exitRequested { return 0 }
            announcedCandidates = nil
            switch readPrompt(el) {
            case .line(let line):
                guard line.utf8.count <= Session.maximumLineBytes else {
                    session.err.line("narnia: error: the line has \(line.utf8.count) bytes, more than a command line may (\(Session.maximumLineBytes)); not run")
                    session.err.flush()
                    continue
                }
                _ = session.runBatchLine(line, keepGoing: true)
                session.out.flush()
            case .again: continue
            case .end: return 0
            case .terminated(let status): return status
            }
        }
    }
}


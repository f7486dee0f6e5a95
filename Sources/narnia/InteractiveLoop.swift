import NarniaLanguage
import NarniaSystem
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

    /// Lines kept in the in-memory history.
    static let historySize: Int32 = 1000

    init(session: Session) { self.session = session }

    /// Whether colour escapes may be used: not under NO_COLOR (set and not empty, as
    /// no-color.org asks) nor on a `dumb` terminal.
    static var colourAllowed: Bool { TerminalStyle.current().colour }

    /// The prompt: `narnia:/path> `, the path made terminal-safe, in colour unless NO_COLOR.
    /// `\u{1}` brackets the escape sequences (EL_PROMPT_ESC) so that libedit does not count
    /// them as columns; `terminalSafe` turns any `\u{1}` in a name into `?`.
    func prompt() -> String {
        let path = terminalSafe(session.shown(session.cwd, on: session.out))
        guard Self.colourAllowed else { return "narnia:\(path)> " }
        return "\u{1}\u{1B}[1;34m\u{1}narnia:\(path)\u{1}\u{1B}[0m\u{1}> "
    }

    /// The first character typed or pasted at the prompt that libedit echoes as it is but a
    /// terminal may show as nothing where it stands, or that reorders the line on one that does
    /// bidirectional text (review BN-6: `rm` of a pasted name could read otherwise than what
    /// ran): one a name shows escaped (`nameScalars`). Controls are echoed as `^X`, visibly:
    /// they pass.
    static func firstShownOtherwise(in line: String) -> Unicode.Scalar? {
        nameScalars(line).first { $0.escaped && $0.scalar.value >= 0xA0 }?.scalar
    }

    /// Runs the shell until exit, Ctrl-D or a terminating signal; returns the exit status.
    func run() -> Int32 {
        guard let editor = LineEditor(historySize: Self.historySize, prompt: { [unowned self] in prompt() },
                                      complete: { [unowned self] in
                                          complete(line: $0, cursor: $1, source: ShellCompletionSource(session: session))
                                      }) else {
            fputs("narnia: error: cannot start the line editor\n", StandardStream.error)
            return 1
        }
        while true {
            if let status = Signals.terminationStatus() { return status }
            if session.exitRequested { return 0 }
            session.readChangesArrived()
            switch editor.read() {
            case .line(let line):
                guard line.utf8.count <= Session.maximumLineBytes else {
                    session.err.line("narnia: error: the line has \(line.utf8.count) bytes, more than a command line may (\(Session.maximumLineBytes)); not run")
                    session.err.flush()
                    continue
                }
                if let unseen = Self.firstShownOtherwise(in: line) {
                    let spelled = escapedForScripts(unseen)
                    session.err.messageLine("narnia: error: the line holds \(spelled), which a terminal may show as nothing or in another order than it is read; not run")
                    session.err.messageLine("narnia: hint: type it as $'\(spelled)', or let Tab complete the name that holds it")
                    session.err.flush()
                    continue
                }
                // What arrived while the line was typed, before it runs (review CL-1: the
                // line ran on the tree shown at the prompt, and the note came after its output).
                guard session.readChangesArrived(beforeRunning: line, typedAtPrompt: true) else { continue }
                _ = session.runBatchLine(line, keepGoing: true)
                session.out.flush()
            case .again: continue
            case .end: return 0
            case .terminated(let status): return status
            }
        }
    }
}

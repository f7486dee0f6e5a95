import CEditLine
import Glibc
import NarniaShell

/// What one read at a libedit prompt gave.
enum PromptInput {
    /// A line worth running (not blank), already added to the in-memory history.
    case line(String)
    /// Nothing to run: Ctrl-C abandoned the line, the read was interrupted, or it was blank.
    case again
    /// Ctrl-D on an empty line, or the terminal is gone.
    case end
    /// SIGTERM or SIGHUP arrived: leave with this status.
    case terminated(Int32)
}

/// Reads one line at the prompt with `el_gets`, and sorts out what the shells do with it alike.
/// An interrupted read — Ctrl-C, or a Ctrl-Z that could not stop the process because its
/// process group is orphaned (under tmux or setsid) — gives a fresh prompt, not the end.
func readPrompt(_ el: OpaquePointer) -> PromptInput {
    Session.interruptRequested = 0
    var count: Int32 = 0
    let raw = narnia_el_gets(el, &count)
    let readError = errno
    if let status = Signals.terminationStatus() {
        fputs("\n", stdout)
        return .terminated(status)
    }
    guard let raw else {
        if Session.panicRequested != 0 { return .end }
        if count < 0 && (Session.interruptRequested != 0 || readError == EINTR) {
            if Session.interruptRequested != 0 { fputs("^C\n", stdout) }
            return .again
        }
        fputs("\n", stdout)
        return .end
    }
    var line = String(cString: raw)
    if line.hasSuffix("\n") { line.removeLast() }
    guard !line.allSatisfy({ $0 == " " || $0 == "\t" }) else { return .again }
    narnia_el_history_add(el, line)
    return .line(line)
}

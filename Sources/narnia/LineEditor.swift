import NarniaSystem
import CEditLine
import Glibc
import NarniaLanguage
import NarniaShell

/// One libedit prompt, for both shells: emacs bindings, `~/.editrc`, in-memory history, and
/// Tab through a pure completion function with the candidates listed in columns (a list
/// taller than the terminal is first announced with its size; a second Tab lists it). The
/// libedit handle is closed when the editor is released.
final class LineEditor {
    private let makePrompt: () -> String
    /// The name messages begin with: `wardrobe` under the cover, which never names narnia.
    private let program: String
    private let completeLine: (_ line: String, _ cursorByte: Int) -> Completion
    private var handle: OpaquePointer?
    private var promptStorage: [CChar] = [0]
    /// The candidates of the last Tab that only announced a long list; Tab again lists them.
    private var announcedCandidates: [String]?

    /// Opens the editor on the standard streams; nil when libedit cannot start. `prompt` may
    /// bracket escape sequences with `\u{1}` (EL_PROMPT_ESC) so they count as no columns.
    init?(historySize: Int32, program: String = "narnia", prompt: @escaping () -> String,
          complete: @escaping (_ line: String, _ cursorByte: Int) -> Completion) {
        makePrompt = prompt
        self.program = program
        completeLine = complete
        let client = Unmanaged.passUnretained(self).toOpaque()
        handle = narnia_el_open("narnia", StandardStream.input, StandardStream.output, StandardStream.error, client, { c in
            Unmanaged<LineEditor>.fromOpaque(c!).takeUnretainedValue().prompt()
        }, { c, line, cursor in
            Unmanaged<LineEditor>.fromOpaque(c!).takeUnretainedValue().tab(line: String(cString: line!), cursorByte: Int(cursor))
        }, historySize)
        if handle == nil { return nil }
    }

    deinit {
        if let handle { narnia_el_close(handle) }
    }

    private func prompt() -> UnsafePointer<CChar> {
        promptStorage = Array(makePrompt().utf8CString)
        return promptStorage.withUnsafeBufferPointer { $0.baseAddress! }
    }

    private func tab(line: String, cursorByte: Int) -> Int32 {
        guard let el = handle else { return Int32(NARNIA_EL_COMPLETE_NOTHING) }
        let result = completeLine(line, cursorByte)
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
        fputs(text, StandardStream.output)
        fflush(StandardStream.output)
        return Int32(NARNIA_EL_COMPLETE_LISTED)
    }

    /// Reads one line at the prompt with `el_gets`. An interrupted read — Ctrl-C, or a Ctrl-Z
    /// that could not stop the process because its process group is orphaned (under tmux or
    /// setsid) — gives `.again`, a fresh prompt, not the end.
    func read() -> PromptInput {
        guard let el = handle else { return .end }
        announcedCandidates = nil
        Session.interruptRequested = 0
        var count: Int32 = 0
        let raw = narnia_el_gets(el, &count)
        let readError = errno
        if let status = Signals.terminationStatus() {
            fputs("\n", StandardStream.output)
            return .terminated(status)
        }
        guard let raw else {
            if Session.panicRequested != 0 { return .end }
            if count < 0 && (Session.interruptRequested != 0 || readError == EINTR) {
                if Session.interruptRequested != 0 { fputs("^C\n", StandardStream.output) }
                return .again
            }
            fputs("\n", StandardStream.output)
            return .end
        }
        // Decoded lossily, a byte that is not UTF-8 would name another item: refused.
        guard var line = String(validatingCString: raw) else {
            fputs("\(program): error: the line is not valid UTF-8; not run\n", StandardStream.error)
            return .again
        }
        if line.hasSuffix("\n") { line.removeLast() }
        guard !line.allSatisfy({ $0 == " " || $0 == "\t" }) else { return .again }
        narnia_el_history_add(el, line)
        return .line(line)
    }
}

/// What one read at the prompt gave.
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

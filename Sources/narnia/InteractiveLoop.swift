import CEditLine
import Glibc
import NarniaShell
import NarniaStore

/// The interactive shell on a terminal: libedit with a prompt that shows the vault folder,
/// emacs bindings, `~/.editrc`, in-memory history and Tab completion.
final class InteractiveLoop {
    let session: Session
    private var promptStorage: [CChar] = [0]
    private var editor: OpaquePointer?

    init(session: Session) { self.session = session }

    /// The prompt: `narnia:/path> `, coloured unless NO_COLOR is set. `\u{1}` brackets
    /// the escape sequences (EL_PROMPT_ESC) so libedit does not count them as columns.
    func prompt() -> UnsafePointer<CChar> {
        let path = session.cwd.description
        let text: String
        if getenv("NO_COLOR") == nil {
            text = "\u{1}\u{1B}[1;34m\u{1}narnia:\(path)\u{1}\u{1B}[0m\u{1}> "
        } else {
            text = "narnia:\(path)> "
        }
        promptStorage = Array(text.utf8CString)
        return promptStorage.withUnsafeBufferPointer { $0.baseAddress! }
    }

    /// Tab: asks the pure completion function, then edits the line or lists the candidates.
    func complete(line: String, cursorByte: Int) -> Int32 {
        let result = NarniaShell.complete(line: line, cursor: cursorByte, source: ShellCompletionSource(session: session))
        guard let el = editor else { return 0 }
        if result.changesLine {
            _ = narnia_el_replace_before_cursor(el, Int32(result.deleteScalars), result.insertText)
        }
        if result.candidates.count > 1 {
            let width = Int(narnia_el_columns(el))
            var text = "\n"
            for row in layoutColumns(result.candidates.map(terminalSafe), width: width) { text += row + "\n" }
            fputs(text, stdout)
            fflush(stdout)
            return 2
        }
        return result.changesLine ? 1 : 0
    }

    func run() -> Int32 {
        let client = Unmanaged.passUnretained(self).toOpaque()
        editor = narnia_el_open("narnia", stdin, stdout, stderr, client, { c in
            Unmanaged<InteractiveLoop>.fromOpaque(c!).takeUnretainedValue().prompt()
        }, { c, line, cursor in
            Unmanaged<InteractiveLoop>.fromOpaque(c!).takeUnretainedValue().complete(line: String(cString: line!), cursorByte: Int(cursor))
        }, 500)
        guard let el = editor else {
            fputs("narnia: error: cannot start the line editor\n", stderr)
            return 1
        }
        defer { narnia_el_close(el) }
        while !session.exitRequested {
            Session.interruptRequested = 0
            var count: Int32 = 0
            guard let raw = narnia_el_gets(el, &count) else {
                if count < 0 && Session.interruptRequested != 0 {
                    fputs("\n", stdout)
                    narnia_el_reset_line(el)
                    continue
                }
                fputs("\n", stdout)
                break // Ctrl-D
            }
            var line = String(cString: raw)
            if line.hasSuffix("\n") { line.removeLast() }
            if line.trimmingSpaces.isEmpty { continue }
            narnia_el_history_add(el, line)
            _ = session.runBatchLine(line, keepGoing: true)
        }
        return 0
    }
}

extension String {
    var trimmingSpaces: String {
        String(drop { $0 == " " || $0 == "\t" })
    }
}

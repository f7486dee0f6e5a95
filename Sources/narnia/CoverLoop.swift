import CEditLine
import Glibc
import NarniaCover
import NarniaCrypto
import NarniaShell

/// The Wardrobe on a terminal: libedit with the closet prompt, in-memory history and Tab
/// completion (the same machinery as the vault shell, over `Wardrobe.complete`).
final class CoverLoop {
    let wardrobe: Wardrobe
    private var promptStorage: [CChar] = [0]
    private var editor: OpaquePointer?

    init(wardrobe: Wardrobe) { self.wardrobe = wardrobe }

    /// `wardrobe> ` or `wardrobe:Tab> `, in a warm colour unless NO_COLOR is set.
    func prompt() -> UnsafePointer<CChar> {
        let text = wardrobe.promptText
        let shown: String
        if getenv("NO_COLOR") == nil, let end = text.lastIndex(of: ">") {
            shown = "\u{1}\u{1B}[1;33m\u{1}\(text[..<end])\u{1}\u{1B}[0m\u{1}" + text[end...]
        } else {
            shown = text
        }
        promptStorage = Array(shown.utf8CString)
        return promptStorage.withUnsafeBufferPointer { $0.baseAddress! }
    }

    /// Tab: the pure completion, then the edit or the candidates in columns.
    func complete(line: String, cursorByte: Int) -> Int32 {
        guard let el = editor else { return Int32(NARNIA_EL_COMPLETE_NOTHING) }
        let result = wardrobe.complete(line: line, cursor: cursorByte)
        var edited = false
        if result.changesLine {
            edited = narnia_el_replace_before_cursor(el, Int32(result.deleteScalars), result.insertText) == 0
        }
        guard result.candidates.count > 1 else {
            return Int32(edited ? NARNIA_EL_COMPLETE_EDITED : NARNIA_EL_COMPLETE_NOTHING)
        }
        var text = "\n"
        for row in layoutColumns(result.candidates.map(terminalSafe), width: Int(narnia_el_columns(el))) { text += row + "\n" }
        fputs(text, stdout)
        fflush(stdout)
        return Int32(NARNIA_EL_COMPLETE_LISTED)
    }

    /// Shows the first screen, then reads commands until `exit`, Ctrl-D, the door opening or panic.
    func run() -> Int32 {
        fputs(Wardrobe.banner + "\n", stdout)
        fflush(stdout)
        let client = Unmanaged.passUnretained(self).toOpaque()
        editor = narnia_el_open("narnia", stdin, stdout, stderr, client, { c in
            Unmanaged<CoverLoop>.fromOpaque(c!).takeUnretainedValue().prompt()
        }, { c, line, cursor in
            Unmanaged<CoverLoop>.fromOpaque(c!).takeUnretainedValue().complete(line: String(cString: line!), cursorByte: Int(cursor))
        }, 200)
        guard let el = editor else {
            fputs("wardrobe: error: cannot start the line editor\n", stderr)
            return 1
        }
        defer { narnia_el_close(el); editor = nil }
        while !wardrobe.exitRequested {
            if let status = Signals.terminationStatus() { return status }
            switch readPrompt(el) {
            case .line(let line):
                wardrobe.run(line: line)
                fflush(stdout)
            case .again: continue
            case .end: return 0
            case .terminated(let status): return status
            }
        }
        return 0
    }
}

/// The Wardrobe's console: standard output and error, and questions answered on the terminal
/// (the line editor has already handed the terminal back in its ordinary, echoing mode).
final class TerminalConsole: WardrobeConsole {
    let isTerminal = isatty(1) == 1

    func write(_ text: String) { fputs(text, stdout) }

    func writeError(_ text: String) {
        fflush(stdout)
        fputs(text, stderr)
    }

    var width: Int {
        var ws = winsize()
        return ioctl(1, UInt(TIOCGWINSZ), &ws) == 0 && ws.ws_col > 0 ? Int(ws.ws_col) : 80
    }

    /// Reads one line from standard input with `read(2)` (nothing read ahead); nil at the end
    /// of input or on Ctrl-C.
    func ask(_ question: String) -> String? {
        guard isatty(0) == 1 else { return nil }
        fputs(question, stdout)
        fflush(stdout)
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(0, &byte, 1)
            if n < 0 && errno == EINTR {
                if Session.interruptRequested != 0 || Session.panicRequested != 0 { fputs("\n", stdout); return nil }
                continue
            }
            if n <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }
}

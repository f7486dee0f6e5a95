import NarniaLanguage
import NarniaSystem
import CEditLine
import Glibc
import NarniaCover
import NarniaCrypto
import NarniaShell

/// The Wardrobe on a terminal: libedit with the closet prompt, in-memory history and Tab
/// completion (the same machinery as the vault shell, over `Wardrobe.complete`).
final class CoverLoop {
    let wardrobe: Wardrobe

    init(wardrobe: Wardrobe) { self.wardrobe = wardrobe }

    /// `wardrobe> ` or `wardrobe:Tab> `, in a warm colour when the vault shell's prompt would be
    /// coloured too (`InteractiveLoop.colourAllowed`: not under a non-empty NO_COLOR, not on a
    /// `dumb` terminal), so the two prompts follow one rule.
    func prompt() -> String {
        let text = wardrobe.promptText
        guard InteractiveLoop.colourAllowed, let end = text.lastIndex(of: ">") else { return text }
        return "\u{1}\u{1B}[1;33m\u{1}\(text[..<end])\u{1}\u{1B}[0m\u{1}" + text[end...]
    }

    /// Shows the first screen, then reads commands until `exit`, Ctrl-D, the door opening or panic.
    func run() -> Int32 {
        fputs(Wardrobe.banner + "\n", StandardStream.output)
        fflush(StandardStream.output)
        guard let editor = LineEditor(historySize: 200, program: "wardrobe", prompt: { [unowned self] in prompt() },
                                      complete: { [unowned self] in wardrobe.complete(line: $0, cursor: $1) }) else {
            fputs("wardrobe: error: cannot start the line editor\n", StandardStream.error)
            return 1
        }
        while !wardrobe.exitRequested {
            if let status = Signals.terminationStatus() { return status }
            switch editor.read() {
            case .line(let line):
                wardrobe.run(line: line)
                fflush(StandardStream.output)
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

    func write(_ text: String) { fputs(text, StandardStream.output) }

    func writeError(_ text: String) {
        fflush(StandardStream.output)
        fputs(text, StandardStream.error)
    }

    var width: Int { TerminalSize.current().columns }

    var interrupted: Bool { Session.interruptRequested != 0 || Session.panicRequested != 0 }

    /// Reads one line from standard input with `read(2)` (nothing read ahead); nil at the end
    /// of input; throws `Interrupted` on Ctrl-C (or the panic key, which then ends the process).
    func ask(_ question: String) throws -> String? {
        guard isatty(0) == 1 else { return nil }
        fputs(question, StandardStream.output)
        fflush(StandardStream.output)
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            // A Ctrl-C that comes just before `read` would not interrupt it (and was lost until
            // pressed again): the flag is looked at between short waits for input, as the
            // passphrase question does.
            if Session.interruptRequested != 0 || Session.panicRequested != 0 { fputs("\n", StandardStream.output); throw Interrupted() }
            var ready = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 200) <= 0 { continue }   // nothing yet, or interrupted
            let n = read(0, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }
}

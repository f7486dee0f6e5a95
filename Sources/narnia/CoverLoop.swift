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

// MARK: - The panic key

/// Written by the SIGQUIT handler; read by the panic thread.
nonisolated(unsafe) private var panicPipeWrite: Int32 = -1
nonisolated(unsafe) private var panicSavedTerminal = termios()
nonisolated(unsafe) private var panicHaveSavedTerminal = false
nonisolated(unsafe) private var panicMainThread = pthread_self()

/// The panic key, Ctrl-\ (the terminal's QUIT character, which sends SIGQUIT to the foreground
/// processes, so it works at the prompt and while a viewer runs).
///
/// The handler only records the request and wakes a dedicated thread through a pipe. That
/// thread does the visible part at once (kills viewers, clears the screen and scrollback,
/// restores the terminal), asks the shell loop to stop and interrupts the main thread, whose
/// unwinding releases the session and wipes every key (`sodium_free`); `finish` then exits.
/// If the main thread cannot unwind within a second (blocked in a question), the thread exits
/// the process itself.
enum PanicKey {
    nonisolated(unsafe) static weak var session: Session?
    nonisolated(unsafe) private static var installed = false

    /// Installs the handler and starts the thread; once per process, on a terminal only.
    static func install() {
        guard !installed, isatty(0) == 1 else { return }
        installed = true
        panicHaveSavedTerminal = tcgetattr(0, &panicSavedTerminal) == 0
        panicMainThread = pthread_self()
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        panicPipeWrite = fds[1]
        _ = Session.panicRequested

        // The thread starts with every signal blocked, so that signals go to the main thread.
        var all = sigset_t(), previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        var thread = pthread_t()
        pthread_create(&thread, nil, { arg in
            let fd = Int32(Int(bitPattern: arg))
            var byte: UInt8 = 0
            while read(fd, &byte, 1) < 0 && errno == EINTR {}
            PanicKey.fromThread()
            return nil
        }, UnsafeMutableRawPointer(bitPattern: Int(fds[0])))
        pthread_detach(thread)
        pthread_sigmask(SIG_SETMASK, &previous, nil)

        // SIGUSR2 only interrupts a blocking read of the main thread (no SA_RESTART).
        var wake = sigaction()
        wake.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&wake.sa_mask)
        wake.sa_flags = 0
        sigaction(SIGUSR2, &wake, nil)

        var quit = sigaction()
        quit.__sigaction_handler.sa_handler = { _ in
            Session.panicRequested = 1
            var b: UInt8 = 1
            _ = write(panicPipeWrite, &b, 1)
        }
        sigemptyset(&quit.sa_mask)
        quit.sa_flags = 0
        sigaction(SIGQUIT, &quit, nil)
    }

    /// The visible part of a panic: viewers killed, screen and scrollback cleared, terminal
    /// back in the mode it had when the program started.
    static func stopViewersAndClear() {
        ChildProcesses.killAll()
        fflush(stdout)
        Session.clearTerminal()
        if panicHaveSavedTerminal { _ = tcsetattr(0, TCSANOW, &panicSavedTerminal) }
    }

    private static func fromThread() {
        stopViewersAndClear()
        // No strong reference is kept here: the main thread must be able to release the session.
        let inside = PanicKey.requestSessionExit()
        if inside {
            _ = pthread_kill(panicMainThread, SIGUSR2)
            for _ in 0..<100 { usleep(10_000) }
        }
        Secret.wipeAllBeforeExit()
        _exit(0)
    }

    private static func requestSessionExit() -> Bool {
        guard let session else { return false }
        session.requestExit()
        return true
    }

    /// The end of every panic, on the main thread, once the session is released: clear once
    /// more (the line editor may have drawn since) and exit with status 0.
    static func finish() -> Never {
        stopViewersAndClear()
        Secret.wipeAllBeforeExit()
        _exit(0)
    }
}

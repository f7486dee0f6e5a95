import Glibc
import NarniaCrypto

/// Asks for a passphrase on the controlling terminal (`/dev/tty`) with echo off, reading it
/// with `read(2)` straight into secure memory (`Secret`): no `readLine()`, no Swift `String`.
public enum TerminalPassphrase {
    /// True when a terminal is available to ask on.
    public static var available: Bool {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        if fd < 0 { return false }
        close(fd)
        return true
    }

    /// Prints `prompt` on the terminal and reads one line without echo (the terminal's own
    /// line editing — backspace, Ctrl-U — still works). The terminal is restored afterwards,
    /// whatever happens.
    /// - Throws: `PassphraseError.unreadable` with no terminal, when Ctrl-C (or SIGTERM,
    ///   SIGHUP) interrupts the question, or on a read error; `PassphraseError.empty` for an
    ///   empty line.
    public static func ask(_ prompt: String) throws -> Secret {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw PassphraseError.unreadable("no terminal to ask for the passphrase") }
        defer { close(fd) }
        var saved = termios()
        let isTTY = tcgetattr(fd, &saved) == 0
        if isTTY {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO | ECHOE | ECHOK)
            quiet.c_lflag |= tcflag_t(ECHONL | ICANON | ISIG)   // Ctrl-C interrupts, whatever mode the line editor left
            _ = tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer { if isTTY { _ = tcsetattr(fd, TCSAFLUSH, &saved) } }
        Session.interruptRequested = 0
        _ = prompt.withCString { write(fd, $0, strlen($0)) }
        do {
            return try PassphraseSource.readLine(fd: fd, name: "the terminal") { Session.interruptRequested != 0 }
        } catch {
            if Session.interruptRequested != 0 { _ = "\n".withCString { write(fd, $0, 1) } }
            throw error
        }
    }
}

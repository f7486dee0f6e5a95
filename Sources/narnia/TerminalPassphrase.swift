import Glibc
import NarniaCrypto
import NarniaShell

/// Asks for a passphrase on the controlling terminal with echo off, reading it straight into
/// secure memory with `read(2)`.
enum TerminalPassphrase {
    /// True when a terminal is available to ask on.
    static var available: Bool {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        if fd < 0 { return false }
        close(fd)
        return true
    }

    /// Prints `prompt` on the terminal and reads one line without echo.
    static func ask(_ prompt: String) throws -> Secret {
        let fd = open("/dev/tty", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { throw PassphraseError.unreadable("no terminal to ask for the passphrase") }
        defer { close(fd) }
        var saved = termios()
        let isTTY = tcgetattr(fd, &saved) == 0
        if isTTY {
            var quiet = saved
            quiet.c_lflag &= ~tcflag_t(ECHO)
            quiet.c_lflag |= tcflag_t(ECHONL)
            _ = tcsetattr(fd, TCSAFLUSH, &quiet)
        }
        defer { if isTTY { _ = tcsetattr(fd, TCSAFLUSH, &saved) } }
        _ = prompt.withCString { write(fd, $0, strlen($0)) }
        return try PassphraseSource.readFirstLine(fd: fd, name: "the terminal")
    }
}

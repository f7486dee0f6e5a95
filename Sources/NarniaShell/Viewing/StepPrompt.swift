import Glibc

/// Between items of `open A B C` on a terminal: next, previous or quit, one key, no Enter
/// (the seed's swipe between items).
enum StepPrompt {
    enum Choice: Equatable { case next, previous, quit }

    /// Shows `(2/5) [n]ext [p]revious [q]uit` on stderr and reads one key from the terminal.
    static func ask(position: Int, of count: Int, err: Output) -> Choice {
        let last = position == count
        err.write("(\(position)/\(count)) " + (last ? "[p]revious [q]uit " : "[n]ext [p]revious [q]uit "))
        err.flush()
        defer { err.write("\r\u{1B}[K"); err.flush() }
        while true {
            guard let key = readKey(fd: 0) else { return .quit }
            // The key is read with the signal keys off: the panic key arrives as its byte.
            if key == [0x1C] {
                _ = raise(SIGQUIT)
                return .quit
            }
            let choice = choice(for: key)
            if choice == .next && last {
                err.write("\r\u{1B}[K(\(position)/\(count)) this is the last; [p]revious [q]uit ")
                err.flush()
                continue
            }
            if let choice { return choice }
        }
    }

    /// What a key means: n, space, Enter, j, → and Page Down go on; p, b, k, ←, Page Up and
    /// Backspace go back; q, Escape, Ctrl-C and Ctrl-D stop. Anything else: nil (ask again).
    static func choice(for key: [UInt8]) -> Choice? {
        switch key {
        case [UInt8(ascii: "n")], [UInt8(ascii: " ")], [0x0D], [0x0A], [UInt8(ascii: "j")],
             [0x1B, 0x5B, 0x43], [0x1B, 0x4F, 0x43], [0x1B, 0x5B, 0x36, 0x7E]:
            return .next
        case [UInt8(ascii: "p")], [UInt8(ascii: "b")], [UInt8(ascii: "k")], [0x7F], [0x08],
             [0x1B, 0x5B, 0x44], [0x1B, 0x4F, 0x44], [0x1B, 0x5B, 0x35, 0x7E]:
            return .previous
        case [UInt8(ascii: "q")], [UInt8(ascii: "Q")], [0x1B], [0x03], [0x04]:
            return .quit
        default:
            return nil
        }
    }

    /// Non-canonical mode without echo or signal keys: a read returns after `minimum` bytes, or
    /// `tenths` tenths of a second.
    private static func setRaw(_ fd: Int32, from saved: termios, minimum: UInt8, tenths: UInt8) {
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = minimum
            cc[Int(VTIME)] = tenths
        }
        _ = tcsetattr(fd, TCSANOW, &raw)
    }

    /// One key press (an escape sequence counts as one), in non-canonical mode without echo;
    /// nil at end of input.
    static func readKey(fd: Int32) -> [UInt8]? {
        var saved = termios()
        let isTerminal = tcgetattr(fd, &saved) == 0
        if isTerminal { setRaw(fd, from: saved, minimum: 1, tenths: 0) }
        defer { if isTerminal { _ = tcsetattr(fd, TCSANOW, &saved) } }
        // One byte, so that keys typed ahead stay for the line editor; the rest of an escape
        // sequence follows within a tenth of a second.
        guard let first = readByte(fd) else { return nil }
        guard first == 0x1B, isTerminal else { return [first] }
        setRaw(fd, from: saved, minimum: 0, tenths: 1)
        var key: [UInt8] = [first]
        while key.count < 8, let next = readByte(fd) {
            key.append(next)
            if key.count >= 3 && (next >= 0x40 && next <= 0x7E) { break }
        }
        return key
    }

    private static func readByte(_ fd: Int32) -> UInt8? {
        var byte: UInt8 = 0
        while true {
            let n = Glibc.read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            return n == 1 ? byte : nil
        }
    }
}

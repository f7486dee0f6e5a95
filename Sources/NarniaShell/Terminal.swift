import Glibc

/// The width of the terminal on stdout (or stderr), 80 when unknown.
func terminalWidth() -> Int {
    var ws = winsize()
    for fd: Int32 in [1, 2, 0] where ioctl(fd, UInt(TIOCGWINSZ), &ws) == 0 && ws.ws_col > 0 {
        return Int(ws.ws_col)
    }
    return 80
}

import Glibc

/// The size of the terminal the program writes to.
public enum TerminalSize {
    /// Columns and rows of the first of standard output, error and input that is a terminal
    /// (`TIOCGWINSZ`); 80×25 when none is.
    public static func current() -> (columns: Int, rows: Int) {
        var ws = winsize()
        for fd: Int32 in [1, 2, 0] where ioctl(fd, UInt(TIOCGWINSZ), &ws) == 0 && ws.ws_col > 0 {
            return (Int(ws.ws_col), ws.ws_row > 0 ? Int(ws.ws_row) : 25)
        }
        return (80, 25)
    }
}

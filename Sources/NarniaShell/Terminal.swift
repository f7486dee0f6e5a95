import NarniaSystem
import Glibc

/// The width of the terminal on stdout (or stderr), 80 when unknown.
func terminalWidth() -> Int { TerminalSize.current().columns }

import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaStore
import Synchronization

/// Buffered text output to a file descriptor; raw bytes bypass the buffer after a flush.
public final class Output {
    private let fd: Int32
    private var buffer: [UInt8] = []
    /// True when the descriptor is a terminal.
    public let isTerminal: Bool
    /// Called before text is written to a terminal, so a progress bar can clear its line first.
    static let beforeTerminalWrite: @Sendable () -> Void = { ProgressMeter.clearActive() }

    public init(fd: Int32) {
        self.fd = fd
        isTerminal = isatty(fd) == 1
        buffer.reserveCapacity(1 << 16)
    }

    /// Appends text; flushes when the buffer grows large.
    public func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Appends a line (of one or more lines of text). Whatever it holds, no character that
    /// could drive a terminal is written as it is — only line feeds and tabs are: on a terminal
    /// such a character shows as `?`, elsewhere as `\xHH` (see `terminalSafe`, `scriptSafe`).
    /// Names in it should already be in `name(_:)`'s form. Text that carries this program's own
    /// terminal styling goes through `styledLine` instead.
    public func line(_ text: String) {
        write(shownText(text, onTerminal: isTerminal, allowingLineBreaks: true))
        write("\n")
    }

    /// Appends a diagnostic (an error, warning, note or hint), or any line that must stay one:
    /// a line feed or tab in it — from a name or value put in raw — is shown like any other
    /// control character (`?` on a terminal, `\xHH` elsewhere) and cannot start a line that
    /// imitates another.
    public func messageLine(_ text: String) {
        write(shownText(text, onTerminal: isTerminal, allowingLineBreaks: false))
        write("\n")
    }

    /// Appends a line drawn by the terminal renderers (`TerminalStyle`, `TerminalListing`, the
    /// grid): their colours and glyphs are written as they are, and they made every name in
    /// it safe (`terminalSafe`) themselves.
    public func styledLine(_ text: String) { write(text); write("\n") }

    /// A name as this stream shows it: `terminalSafe` on a terminal, `scriptSafe` otherwise.
    public func name(_ text: String) -> String { shownName(text, onTerminal: isTerminal) }
    /// A name that is not valid UTF-8, spelled for a message on this stream (`FileSystem.spelled`).
    public func undecodableName(_ bytes: [UInt8]) -> String { FileSystem.spelled(undecodable: bytes, forTerminal: isTerminal) }

    /// Writes buffered text now. A reader gone (`EPIPE`: `narnia -c ls | head`) is not an
    /// error; any other failure to write standard output (a full disk, `> /dev/full`) is noted
    /// in `standardOutputFailure`, which makes the run fail at its end.
    public func flush() {
        guard !buffer.isEmpty else { return }
        if fd == 1 && StandardDescriptors.outputWasClosed {
            _ = Output.failure.compareExchange(expected: 0, desired: EBADF, ordering: .relaxed)
            buffer.removeAll(keepingCapacity: true)
            return
        }
        if isTerminal { Output.beforeTerminalWrite() }
        var done = 0
        buffer.withUnsafeBytes { b in
            while done < b.count {
                let n = Glibc.write(fd, b.baseAddress! + done, b.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    if fd == 1 && errno != EPIPE { _ = Output.failure.compareExchange(expected: 0, desired: errno, ordering: .relaxed) }
                    break
                }
                done += n
            }
        }
        buffer.removeAll(keepingCapacity: true)
    }

    private static let failure = Atomic<Int32>(0)

    /// The error number of the first failed write to standard output (other than a reader
    /// gone), if any: the launcher then says so and exits 1 rather than 0.
    public static var standardOutputFailure: Int32? {
        let code = failure.load(ordering: .relaxed)
        return code == 0 ? nil : code
    }

    /// The raw descriptor.
    public var descriptor: Int32 { fd }
}

/// Turns any error into the words a user should read (never a Swift error dump).
public func describe(_ error: Error) -> String {
    switch error {
    case let e as CommandFailure: return e.message
    case let e as NameError: return e.description
    case let e as VaultError: return e.description
    case let e as ContentError: return e.description
    case let e as MetadataError: return e.description
    case let e as SystemError: return e.description
    case let e as Cancelled: return e.description
    case let e as CustomStringConvertible: return e.description
    default: return "unexpected error"
    }
}

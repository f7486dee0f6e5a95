import NarniaSystem
import Glibc
import NarniaShell
import NarniaStore

/// Reads lines from a descriptor, up to 64 KiB at a time (what a pipe holds at the moment: a
/// process that writes one command and waits sees it run before it writes the next). A line
/// over `Session.maximumLineBytes` is read to its end without being kept, and refused.
final class LineReader {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var eof = false
    /// The number of the line `next()` returned last, for messages.
    private(set) var lineNumber = 0
    /// The error that ended the input early, if one did (`next()` then returned nil).
    private(set) var failure: SystemError?

    init(fd: Int32) { self.fd = fd }

    /// The next line without its newline, or nil at the end.
    func next() -> BatchLine? {
        var skipped = 0
        while true {
            if let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                lineNumber += 1
                defer { buffer.removeSubrange(...nl) }
                if skipped > 0 { return .tooLong(skipped + nl) }
                return BatchLine(bytes: buffer[..<nl])
            }
            if eof {
                guard !buffer.isEmpty || skipped > 0 else { return nil }
                lineNumber += 1
                defer { buffer.removeAll() }
                if skipped > 0 { return .tooLong(skipped + buffer.count) }
                return BatchLine(bytes: buffer[...])
            }
            if buffer.count > Session.maximumLineBytes {
                skipped += buffer.count
                buffer.removeAll(keepingCapacity: true)
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { failure = SystemError.current("read", "the commands' input") }
            if n <= 0 { eof = true } else { buffer.append(contentsOf: chunk[0..<n]) }
        }
    }
}

/// One line of batch input: its text, or that it was too long to run (with its length), or
/// not UTF-8 (decoded lossily, `rm NAME\xff` would name another item).
enum BatchLine {
    case text(String)
    case tooLong(Int)
    case notUTF8

    init(_ text: String) {
        self = text.utf8.count > Session.maximumLineBytes ? .tooLong(text.utf8.count) : .text(text)
    }

    /// A line read whole: too long however it arrived (a line over the limit may come with its
    /// newline in one read, before the reader starts skipping).
    init(bytes: ArraySlice<UInt8>) {
        if bytes.count > Session.maximumLineBytes {
            self = .tooLong(bytes.count)
        } else {
            self = String(validating: bytes, as: UTF8.self).map { .text($0) } ?? .notUTF8
        }
    }
}

/// Runs batch input (-c, -b, piped stdin) with sftp's rules: stop at the first counted
/// failure unless --keep-going; exit status 1 if any counted command failed.
struct BatchRunner {
    let session: Session
    let keepGoing: Bool
    /// The batch file's name (`-b FILE`): errors then name `FILE:LINE`.
    var file: String? = nil
    /// `-v`: each line is echoed before it runs, as `narnia> LINE` (sftp's `sftp> cmd`).
    var echo = false

    func run(lines: [String]) -> Int32 {
        var iterator = lines.makeIterator()
        return run { iterator.next().map(BatchLine.init) }
    }

    /// Runs the lines `reader` yields; input that cannot be read to its end fails the run.
    func run(reader: LineReader, keep: FileDescriptor?) -> Int32 {
        let status = withExtendedLifetime(keep) { run { reader.next() } }
        guard let failure = reader.failure else { return status }
        session.err.line("narnia: error: cannot read \(file.map { session.err.name($0) } ?? "the commands") to its end: \(SystemError.reason(for: failure.code))")
        session.err.flush()
        return status == 0 ? 1 : status
    }

    private func run(_ next: () -> BatchLine?) -> Int32 {
        var failed = false
        var number = 0
        // A Ctrl-C, SIGTERM or SIGHUP (during the key derivation, say) stops the run before
        // the next line, and the run ends as `stopStatus` says.
        while Session.interruptRequested == 0 && Signals.terminationSignal == 0, let batchLine = next() {
            number += 1
            guard case .text(let line) = batchLine else {
                let place = file.map { "\(session.err.name($0)):\(number): line" } ?? "line \(number)"
                session.out.flush()
                switch batchLine {
                case .tooLong(let bytes):
                    session.err.line("narnia: error: \(place) has \(bytes) bytes, more than a command line may (\(Session.maximumLineBytes)); not run")
                case .notUTF8:
                    session.err.line("narnia: error: \(place) is not valid UTF-8; not run")
                case .text: break
                }
                session.err.flush()
                failed = true
                if !keepGoing { break }
                continue
            }
            if let file { session.location = "\(file):\(number)" }
            if echo {
                session.out.line("narnia> " + line)
                session.out.flush()
            }
            if !session.readChangesArrived(beforeRunning: line) || !session.runBatchLine(line, keepGoing: keepGoing) {
                failed = true
                if !keepGoing || Session.interruptRequested != 0 { break }
            }
            if session.runMustStop {
                failed = true
                break
            }
            if session.exitRequested || Signals.terminationSignal != 0 { break }
        }
        session.out.flush()
        if let stopped = Self.stopStatus() { return stopped }
        // Damage is never quiet: content that failed authentication fails the run, even when
        // a `-` line let its command fail without stopping; so does an import or export that
        // did not do all it was asked.
        return failed || session.vault.damageFound > 0 || session.excusedTransferFailed ? 1 : 0
    }

    /// The status of a run a signal stopped: 128 + N for SIGTERM or SIGHUP, 130 for Ctrl-C
    /// (sh's convention); nil when none did. Never 0: commands were left unrun.
    static func stopStatus() -> Int32? {
        Signals.terminationStatus() ?? (Session.interruptRequested != 0 ? 128 + SIGINT : nil)
    }
}

import NarniaSystem
import Glibc
import NarniaShell
import NarniaStore

/// Reads lines from a descriptor without reading ahead past what it returns (so that a
/// process feeding commands through a pipe sees each one run before the next is read).
final class LineReader {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var eof = false

    init(fd: Int32) { self.fd = fd }

    /// The next line without its newline, or nil at the end.
    func next() -> String? {
        while true {
            if let nl = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffer[..<nl], as: UTF8.self)
                buffer.removeSubrange(...nl)
                return line
            }
            if eof {
                guard !buffer.isEmpty else { return nil }
                defer { buffer.removeAll() }
                return String(decoding: buffer, as: UTF8.self)
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { eof = true } else { buffer.append(contentsOf: chunk[0..<n]) }
        }
    }
}

/// Runs batch input (-c, -b, piped stdin) with sftp's rules: stop at the first counted
/// failure unless --keep-going; exit status 1 if any counted command failed.
struct BatchRunner {
    let session: Session
    let keepGoing: Bool

    func run(lines: [String]) -> Int32 {
        var iterator = lines.makeIterator()
        return run { iterator.next() }
    }

    func run(reader: LineReader, keep: FileDescriptor?) -> Int32 {
        withExtendedLifetime(keep) { run { reader.next() } }
    }

    private func run(_ next: () -> String?) -> Int32 {
        var failed = false
        while let line = next() {
            if !session.runBatchLine(line, keepGoing: keepGoing) {
                failed = true
                if !keepGoing || Session.interruptRequested != 0 { break }
            }
            if session.exitRequested || Signals.terminationSignal != 0 { break }
        }
        session.out.flush()
        return failed ? 1 : 0
    }
}

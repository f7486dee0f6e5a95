import NarniaSystem
import Glibc
import NarniaCrypto
import NarniaStore

/// Errors reading a passphrase.
public enum PassphraseError: Error, CustomStringConvertible {
    case empty(String)
    case tooLong(String)
    case unreadable(String)
    /// Ctrl-C (or SIGTERM, SIGHUP) at the question.
    case interrupted
    /// A new passphrase that could not be typed back as it is (`PassphraseSource.checkNew`).
    case untypable(String)
    /// A new passphrase and its repetition differed, every time they were asked.
    case mismatch

    public var description: String {
        switch self {
        case .empty(let from): return "the passphrase from \(from) is empty"
        case .tooLong(let from): return "the passphrase from \(from) is longer than \(PassphraseSource.maximumLength) bytes; narnia does not cut a passphrase short"
        case .unreadable(let why): return why
        case .interrupted: return "interrupted"
        case .untypable(let why): return why
        case .mismatch: return "the two passphrases differ"
        }
    }
}

/// Reads passphrases straight into secure memory: the first line of a file or descriptor
/// (INTERFACE.md, Passphrases: the trailing newline is not part of it; an empty passphrase is
/// refused).
public enum PassphraseSource {
    /// The longest passphrase accepted.
    public static let maximumLength = 4096

    /// The first line of the file at `path`; `warn` is told when other users may read the file
    /// too (`exposure`).
    public static func readFirstLine(path: String, warn: (String) -> Void) throws -> Secret {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(path, .readOnly) } catch { throw PassphraseError.unreadable("cannot read the passphrase file: \(describe(error))") }
        if let exposure = exposure(of: fd.raw, name: path) { warn(exposure) }
        return try readFirstLine(fd: fd.raw, name: path)
    }

    /// A warning when `fd` is a regular file that users other than its owner may read (its
    /// group or everyone: mode `0o044`), which gives them the passphrase (review EU-15). ssh
    /// refuses such a key file; narnia reads it, since a script may rely on it, and says so.
    /// A pipe, a terminal or a file only its owner reads gives nil.
    public static func exposure(of fd: Int32, name: String) -> String? {
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_mode & 0o044 != 0 else { return nil }
        let who = info.st_mode & 0o004 != 0 ? "every user" : "its group"
        let mode = String(info.st_mode & 0o777, radix: 8)
        return "\(name) holds a passphrase and \(who) may read it (mode \(mode)): chmod 600 it"
    }

    /// The first line readable from descriptor `fd`, read one byte at a time so that nothing
    /// after the line is consumed, into a `Secret`. A line longer than `maximumLength` is
    /// refused as soon as it is: the run ends there, so nothing of it could be taken for a
    /// command, and a source without line ends (`/dev/zero`) is not read for good (review EY-3).
    public static func readFirstLine(fd: Int32, name: String) throws -> Secret {
        try readLine(fd: fd, name: name, toEndOfLongLine: false, stopOnInterrupt: { false })
    }

    /// Reads one line from `fd` straight into secure memory, one byte at a time: the trailing
    /// `\n` (and a `\r` before it) is not part of it. A line longer than `maximumLength` is
    /// refused — read to its end first when `toEndOfLongLine` (a prompt asked again must not take
    /// its tail for the next answer); an empty one is refused. `stopOnInterrupt` is asked when a
    /// read is interrupted by a signal: true ends the question (Ctrl-C at a prompt).
    /// - Throws: `PassphraseError`.
    public static func readLine(fd: Int32, name: String, toEndOfLongLine: Bool = true, stopOnInterrupt: () -> Bool) throws -> Secret {
        let buffer = try Secret(zeroedCount: maximumLength + 1)
        let length: Int = try buffer.withUnsafeMutableBytes { b in
            var n = 0
            var tooLong = false
            while true {
                // A signal that arrives just before `read` would not interrupt it: look at the
                // flag between short waits for input.
                if stopOnInterrupt() { throw PassphraseError.interrupted }
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                if poll(&ready, 1, 200) <= 0 { continue }   // nothing yet, or interrupted
                let r = Glibc.read(fd, b.baseAddress! + n, 1)
                if r < 0 {
                    let code = errno
                    if code == EINTR || code == EAGAIN { continue }
                    throw PassphraseError.unreadable("cannot read the passphrase from \(name): \(SystemError.reason(for: code))")
                }
                if r == 0 || b[n] == UInt8(ascii: "\n") { break }
                if n < maximumLength { n += 1 } else {
                    tooLong = true
                    if !toEndOfLongLine { break }
                }
            }
            if tooLong {
                wipe(b)
                throw PassphraseError.tooLong(name)
            }
            if n > 0 && b[n - 1] == UInt8(ascii: "\r") { n -= 1 }
            return n
        }
        guard length > 0 else { throw PassphraseError.empty(name) }
        return try buffer.withUnsafeBytes { try Secret(copying: UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
    }

    /// Refuses a new passphrase read from a file or descriptor (`name`) that the same words
    /// typed later would not give, which would lock the vault (review BG-10): one that is not
    /// UTF-8 text, or holds a control character, or a byte order mark (U+FEFF, which editors
    /// saving "UTF-8 with BOM" put first), or is not in Unicode's composed form (NFC: macOS file
    /// names and some copy and paste spell `é` as `e` and an accent), which keyboards type.
    /// Text in NFC whose marks have no composed form (Yoruba `ẹ́`, Persian ezafe) is taken
    /// (review BJ-1: a list of marks refused it). Passphrases already set, and those typed at
    /// the terminal (the same keyboard types them again), are not looked at. Read in place
    /// (`UTF8Span.checkForNFC`): nothing leaves secure memory.
    /// - Throws: `PassphraseError.untypable`.
    public static func checkNew(_ passphrase: Secret, from name: String) throws {
        let problem: String? = passphrase.withUnsafeBytes { bytes in
            let buffer = bytes.bindMemory(to: UInt8.self)
            guard var text = try? UTF8Span(validating: Span(_unsafeElements: buffer)) else {
                return "is not UTF-8 text, which is what a terminal types; save it as UTF-8"
            }
            var iterator = bytes.makeIterator()
            var decoder = UTF8()
            while case .scalarValue(let c) = decoder.decode(&iterator) {
                if c == "\u{FEFF}" { return "holds a byte order mark (U+FEFF), which an editor saving \"UTF-8 with BOM\" writes first; save it without" }
                if (c.value < 0x20 && c != "\t") || (0x7F...0x9F).contains(c.value) { return "holds a control character, which cannot be typed" }
            }
            guard text.checkForNFC(quickCheck: false) else {
                return "is not in composed form (an accent as a character of its own after its letter, as macOS file names spell them), which a keyboard types as one: write it in Unicode NFC"
            }
            return nil
        }
        if let problem {
            throw PassphraseError.untypable("the new passphrase from \(name) \(problem): typed, the same words would not open the vault; nothing was changed")
        }
    }
}

import NarniaSystem
import Glibc
import NarniaCrypto
import NarniaStore

/// Errors reading a passphrase.
public enum PassphraseError: Error, CustomStringConvertible {
    case empty(String)
    case unreadable(String)

    public var description: String {
        switch self {
        case .empty(let from): return "the passphrase from \(from) is empty"
        case .unreadable(let why): return why
        }
    }
}

/// Reads passphrases straight into secure memory: the first line of a file or descriptor
/// (BRIEF §4: the trailing newline is not part of it; an empty passphrase is refused).
public enum PassphraseSource {
    /// The longest passphrase accepted.
    public static let maximumLength = 4096

    /// The first line of the file at `path`.
    public static func readFirstLine(path: String) throws -> Secret {
        let fd: FileDescriptor
        do { fd = try FileDescriptor.open(path, .readOnly) } catch { throw PassphraseError.unreadable("cannot read the passphrase file: \(describe(error))") }
        return try readFirstLine(fd: fd.raw, name: path)
    }

    /// The first line readable from descriptor `fd`, read one byte at a time so that nothing
    /// after the line is consumed, into a `Secret`.
    public static func readFirstLine(fd: Int32, name: String) throws -> Secret {
        let buffer = try Secret(zeroedCount: maximumLength)
        let length: Int = try buffer.withUnsafeMutableBytes { b in
            var n = 0
            while n < maximumLength {
                let r = Glibc.read(fd, b.baseAddress! + n, 1)
                if r < 0 { if errno == EINTR { continue }; throw PassphraseError.unreadable("cannot read the passphrase from \(name): \(String(cString: strerror(errno)))") }
                if r == 0 || b[n] == UInt8(ascii: "\n") { break }
                n += 1
            }
            if n > 0 && b[n - 1] == UInt8(ascii: "\r") { n -= 1 }
            return n
        }
        guard length > 0 else { throw PassphraseError.empty(name) }
        return try buffer.withUnsafeBytes { try Secret(copying: UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
    }
}

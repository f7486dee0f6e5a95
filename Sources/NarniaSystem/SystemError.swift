import Glibc

/// An operating-system error: the `errno` of a failed call, with the call and the path that
/// failed. Its description comes from `strerror`.
public struct SystemError: Error, Equatable, CustomStringConvertible {
    /// The `errno` value.
    public let code: Int32
    /// The call that failed (`open`, `write`, …).
    public let operation: String
    /// The path involved, when there is one.
    public let path: String?

    public init(code: Int32, operation: String, path: String? = nil) {
        self.code = code
        self.operation = operation
        self.path = path
    }

    /// Captures the current `errno`.
    public static func current(_ operation: String, _ path: String? = nil) -> SystemError {
        SystemError(code: errno, operation: operation, path: path)
    }

    /// The words for the code, in the shell's own wording where it has one ("no such file or
    /// folder", as vault errors say), else `strerror`'s, lower-cased as the shell's messages are.
    public var reason: String { Self.reason(for: code) }

    /// See `reason`.
    public static func reason(for code: Int32) -> String {
        switch code {
        case ENOENT: return "no such file or folder"
        case ENOTDIR: return "not a folder"
        case EISDIR: return "is a folder"
        case EEXIST: return "already exists"
        case EACCES, EPERM: return "permission denied"
        case ENOTEMPTY: return "folder is not empty"
        case ENOSPC, EDQUOT: return "the disk is full"
        case EROFS: return "the file system is read-only"
        case ELOOP: return "is a symbolic link"
        default:
            let words = String(cString: strerror(code))
            return words.prefix(1).lowercased() + words.dropFirst()
        }
    }

    public var description: String {
        if let path { return "\(nameInMessage(path)): \(reason)" }
        return "\(operation): \(reason)"
    }

    /// True when the error means the disk is full (`ENOSPC`, `EDQUOT`).
    public var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }
}

/// A name or path as a message names it: as it is, but an empty one as `''`, as the vault side
/// does (`import: : no such…` read as a broken line: review AX7).
public func nameInMessage(_ text: String) -> String { text.isEmpty ? "''" : text }

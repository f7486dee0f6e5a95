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

    /// `strerror`'s words for the code.
    public var reason: String { String(cString: strerror(code)) }

    public var description: String {
        if let path { return "\(path): \(reason)" }
        return "\(operation): \(reason)"
    }

    /// True when the error means the disk is full (`ENOSPC`, `EDQUOT`).
    public var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }
}

import Glibc

/// An operating-system error: the `errno` of a failed call, with the operation and path that
/// failed. Its description comes from `strerror`.
public struct SystemError: Error, Equatable, CustomStringConvertible {
    /// The `errno` value.
    public let code: Int32
    /// What was being done (`open`, `write`, …).
    public let operation: String
    /// The path involved, when there is one.
    public let path: String?

    public init(code: Int32, operation: String, path: String? = nil) {
        self.code = code
        self.operation = operation
        self.path = path
    }

    /// Captures the current `errno`.
    static func current(_ operation: String, _ path: String? = nil) -> SystemError {
        SystemError(code: errno, operation: operation, path: path)
    }

    public var description: String {
        let reason = String(cString: strerror(code))
        if let path { return "\(path): \(reason)" }
        return "\(operation): \(reason)"
    }

    /// True when the error means the disk is full (`ENOSPC`, `EDQUOT`).
    public var isDiskFull: Bool { code == ENOSPC || code == EDQUOT }
}

/// Runs a system call that returns -1 and sets `errno` on failure, retrying on `EINTR`,
/// and throws a `SystemError` naming `operation` and `path` on any other failure.
@inline(__always)
func sys<T: BinaryInteger>(_ operation: String, _ path: String? = nil, _ call: () -> T) throws -> T {
    while true {
        let r = call()
        if r >= 0 { return r }
        if errno == EINTR { continue }
        throw SystemError(code: errno, operation: operation, path: path)
    }
}

import Glibc
internal import CNarniaSystem

/// How a file is opened for reading and writing (the access mode of `open(2)`).
public enum AccessMode: Sendable {
    case readOnly, writeOnly, readWrite

    var flags: Int32 {
        switch self {
        case .readOnly: return O_RDONLY
        case .writeOnly: return O_WRONLY
        case .readWrite: return O_RDWR
        }
    }
}

/// The options of `open(2)` beyond the access mode. `O_CLOEXEC` is always added.
public struct OpenOptions: OptionSet, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// `O_CREAT`: create the file when missing.
    public static let create = OpenOptions(rawValue: O_CREAT)
    /// `O_EXCL` (with `.create`): fail when the name exists, even as a symbolic link.
    public static let exclusive = OpenOptions(rawValue: O_EXCL)
    /// `O_TRUNC`.
    public static let truncate = OpenOptions(rawValue: O_TRUNC)
    /// `O_APPEND`.
    public static let append = OpenOptions(rawValue: O_APPEND)
    /// `O_NOFOLLOW`: fail (`ELOOP`) when the last component is a symbolic link.
    public static let noFollow = OpenOptions(rawValue: O_NOFOLLOW)
    /// `O_NONBLOCK`: a FIFO opens at once instead of waiting for a writer.
    public static let nonBlocking = OpenOptions(rawValue: O_NONBLOCK)
    /// `O_DIRECTORY`: fail unless the path is a directory.
    public static let directory = OpenOptions(rawValue: O_DIRECTORY)
    /// `O_NOCTTY`: a terminal does not become the controlling terminal.
    public static let noControllingTerminal = OpenOptions(rawValue: O_NOCTTY)
    /// `O_TMPFILE`: an unnamed file in the given directory (see `FileDescriptor.link`).
    public static let unnamedTemporary = OpenOptions(rawValue: narnia_o_tmpfile())
    /// `O_NOATIME`: reading leaves the access time as it was, so that the file does not tell
    /// when it was read. Only the file's owner may ask; for anyone else `FileDescriptor.open`
    /// opens without it.
    public static let noAccessTime = OpenOptions(rawValue: narnia_o_noatime())
}

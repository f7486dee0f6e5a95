import Glibc

/// An environment variable naming a path or a program whose value is not UTF-8.
public struct EnvironmentNotUTF8: Error, CustomStringConvertible {
    /// The variable's name (`HOME`).
    public let name: String

    public var description: String { "$\(name) is not valid UTF-8 (read as text, it would name another path)" }
}

/// The value of the environment variable `name`, which names a path or a program (`HOME`,
/// `SHELL`, `XDG_DATA_HOME`); nil when it is unset or empty. Decoded lossily, each byte that
/// is not UTF-8 would become U+FFFD and the path another one — `lcd` went to a folder of that
/// other name, and `export` wrote there (review BC-3) — so such a value is refused.
public func environmentPath(_ name: String) throws(EnvironmentNotUTF8) -> String? {
    guard let raw = getenv(name), raw.pointee != 0 else { return nil }
    guard let value = String(validatingCString: raw) else { throw EnvironmentNotUTF8(name: name) }
    return value
}

extension Word {
    /// The word with a bare leading `~` replaced by `$HOME` (`expandingTilde(home:)`); as it
    /// is when HOME is unset.
    /// - Throws: `EnvironmentNotUTF8` when the word needs a HOME that is not UTF-8.
    public func expandingTildeFromEnvironment() throws(EnvironmentNotUTF8) -> Word {
        guard startsWithBareTilde else { return self }
        return try environmentPath("HOME").map { expandingTilde(home: $0) } ?? self
    }
}

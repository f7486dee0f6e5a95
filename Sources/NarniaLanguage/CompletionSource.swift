#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What Tab completion asks of the running shell: command names, flags, the kind of each
/// argument, and folder listings. The shell implements it over the vault and the host; tests
/// implement it over a table.
public protocol CompletionSource {
    /// Every command name the shell accepts, aliases included.
    var commandNames: [String] { get }

    /// The flags `command` takes, spelled as typed (`["-l", "-a", "--json"]`).
    func flags(for command: String) -> [String]

    /// What the argument being typed should be.
    ///
    /// - Parameters:
    ///   - command: the command name (the line's first word).
    ///   - argumentIndex: how many arguments that do not look like flags come before it.
    ///   - previousWords: every word between the command name and the argument, quotes removed,
    ///     flags included (so `find … -type` can ask for a choice of kinds).
    func argumentKind(for command: String, argumentIndex: Int, previousWords: [String]) -> ArgumentKind

    /// The entries of a vault folder. `folder` is the folder part of the word being typed, quotes
    /// removed, up to and including its last `/`: absolute (`/a/b/`), relative to the shell's
    /// current folder (`a/`, `../b/`), or `""` for the current folder itself. Return `[]` when it
    /// is not a folder.
    func vaultEntries(in folder: String) -> [CompletionEntry]

    /// The entries of a host folder, `folder` given as for `vaultEntries(in:)` but for the host:
    /// `""` is the shell's local current directory, and a leading `~` has already been replaced
    /// by `homeDirectory`.
    func hostEntries(in folder: String) -> [CompletionEntry]

    /// The keys `set` knows.
    var settingKeys: [String] { get }

    /// The values a setting takes (`["on", "off"]`), or `[]` if any value goes.
    func settingValues(for key: String) -> [String]

    /// The folder a bare `~` stands for in host paths; `nil` disables `~` expansion.
    var homeDirectory: String? { get }

    /// True when an unquoted `#` before a digit begins a word (an item's number under
    /// `hide-names`), as the line will be read when it runs; otherwise it begins a comment.
    var numbersTypedBare: Bool { get }
}

extension CompletionSource {
    /// No values to offer, by default.
    public func settingValues(for key: String) -> [String] { [] }

    /// `#` begins a comment, by default.
    public var numbersTypedBare: Bool { false }

    /// `$HOME`, by default (none when it is not UTF-8: `environmentPath`).
    public var homeDirectory: String? {
        (try? environmentPath("HOME")) ?? nil
    }
}

/// One name in a folder listing offered for completion.
public struct CompletionEntry: Hashable, Sendable {
    /// The entry's name (one path component).
    public var name: String
    /// Whether it is a folder: completed with a trailing `/` and listed with one.
    public var isFolder: Bool

    /// An entry with this name, a folder or not.
    public init(name: String, isFolder: Bool) {
        self.name = name
        self.isFolder = isFolder
    }
}

/// What an argument of a command is, and so what Tab offers for it.
public enum ArgumentKind: Hashable, Sendable {
    /// Free text: nothing to offer.
    case none
    /// A vault path: folders and items.
    case vaultPath
    /// A vault path naming a folder (`cd`): only folders are offered.
    case vaultFolder
    /// A host path: directories and files.
    case hostPath
    /// A vault path, or failing any match a host path: `export`'s arguments after the first,
    /// where more sources and the host destination are written alike.
    case vaultOrHostPath
    /// A host path naming a directory (`lcd`): only directories are offered.
    case hostFolder
    /// A key of `set`.
    case settingKey
    /// A value of the setting `key`, offered from `CompletionSource.settingValues(for:)`.
    case settingValue(key: String)
    /// One of a fixed list of words (`find -type` kinds).
    case choice([String])
}

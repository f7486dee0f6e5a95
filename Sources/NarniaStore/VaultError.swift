/// Errors of opening, creating and changing a vault.
public enum VaultError: Error, CustomStringConvertible, Equatable {
    /// No store at the path (exit status 3).
    case noVault(String)
    /// The passphrase does not open the store, or the key file was altered (exit status 3).
    case wrongPassphrase
    /// The passphrase opens only a key file that was retired (by `passwd`, or by a merge of key
    /// files), while key files that are not retired (`live`, their names) are present: refused
    /// as a wrong one, but said (review DN-1:
    /// a forged copy of another device's new key file locked a device out, and nothing said
    /// what to do). `byRotation`: a live one holds more master keys than the key file opened,
    /// so a `passwd --rotate` (or a merge of key files after two at once) replaced it (review
    /// FD-1: a rotation cut short here was said to be "passwd on another device or here").
    case retiredPassphrase(live: [String], byRotation: Bool)
    /// Every key file asks for Argon2id limits beyond SENSITIVE, which are refused before
    /// deriving (exit status 3).
    case refusedLimits(KDFParametersDescription)
    /// Another process has the store open.
    case locked(String)
    /// `init` at a path that already holds a store.
    case alreadyExists(String)
    /// `init` at a path that is not an empty folder and holds no store.
    case notEmpty(String)
    /// `init` at a path that is a file (or anything else but a folder).
    case notAFolder(String)
    /// The store folder belongs to another user, or others may write to it.
    case unsafeDirectory(String, String)
    /// The key file is unreadable or there is more than one.
    case damagedKeyFile(String)
    /// A tree operation's precondition failed; the text says which.
    case refused(String)

    /// True for the answers to a passphrase that opens nothing it may: on a terminal, asked again.
    public var isWrongPassphrase: Bool {
        switch self {
        case .wrongPassphrase, .retiredPassphrase: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .noVault(let dir): return "no vault at \(dir)"
        case .wrongPassphrase: return "wrong passphrase"
        case .retiredPassphrase(let live, let byRotation):
            let files = live.count == 1 ? "the key file that replaced it (\(live[0])) may be damaged or altered: put a copy of it"
                : "the key files that replaced it (\(live.joined(separator: ", "))) may be damaged or altered: put a copy of the right one"
            if byRotation {
                return "the key file this passphrase opens was replaced by one holding a newer master key ('passwd --rotate' here or on another device, or a merge of key files after two rotations at once): open the vault with the passphrase chosen then; should that be refused too, \(files) from another device in its place"
            }
            return "the key file this passphrase opens was replaced (by 'passwd' on another device or here, or by a merge of key files after two rotations at once): if the passphrase was changed, open the vault with the new one; should that be refused too, or if it was not changed, \(files) from another device in its place"
        case .refusedLimits(let p): return "the store's key file asks for a key derivation of \(p.text), more than narnia accepts (at most 4 passes and 1 GiB); it may have been altered"
        case .locked(let dir): return "the store at \(dir) is in use by another narnia process"
        case .alreadyExists(let dir): return "a store already exists at \(dir)"
        case .notEmpty(let dir): return "\(dir) is not an empty folder, and holds no store"
        case .notAFolder(let path): return "\(path) is not a folder"
        case .unsafeDirectory(let dir, let why): return "\(dir): \(why)"
        case .damagedKeyFile(let why): return "the store's key file is damaged (\(why))"
        case .refused(let why): return why
        }
    }
}

/// Argon2id limits, as a message shows them.
public struct KDFParametersDescription: Equatable, Sendable {
    public let passes: UInt32
    package let mebibytes: UInt32
    public var text: String { "\(passes) passes and \(mebibytes) MiB" }
}

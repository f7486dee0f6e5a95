import Glibc
import NarniaSystem

/// Writing a store file that must appear whole or not at all: written unnamed (`O_TMPFILE`),
/// synced, then linked in under its name; where the file system has no unnamed files (FAT,
/// FUSE), written under a hidden temporary name (`temporaryPrefix`), synced, then renamed to
/// its name without replacing anything. A kill leaves no file under the name, only, on those
/// file systems, the temporary one, which an open removes once left for a day and no longer
/// locked (`Vault.removeLeftTemporaryFiles`). The folder is synced after. Key files, inbox
/// public key files and drops are written this way.
enum WholeFile {
    /// The file is under its name, but the folder's `fsync` failed: it may not survive a power
    /// cut. Callers for which "not written" would mislead (a new key file is in force from now
    /// on) say so.
    struct NameNotDurable: Error, CustomStringConvertible {
        let path: String
        let cause: any Error
        var description: String { "\(path) was written, but the disk reported an error making its name durable (\(cause))" }
    }

    /// How the temporary names of the fallback begin: a hidden name no store file has, which
    /// readers skip and `verify` does not name.
    static let temporaryPrefix = ".narnia-writing-"

    static func write(_ bytes: [UInt8], named name: String, in directory: FileDescriptor, path: String) throws {
        try write(named: name, in: directory, path: path) { try $0.writeAll(bytes) }
    }

    /// As `write(_:named:in:path:)`, with what `fill` writes into the open file (it may seek
    /// and write at offsets).
    static func write(named name: String, in directory: FileDescriptor, path: String,
                      _ fill: (FileDescriptor) throws -> Void) throws {
        let file: FileDescriptor
        var temporary: String?
        do {
            file = try directory.open(".", .readWrite, options: .unnamedTemporary, permissions: 0o600)
        } catch let e as SystemError where [EOPNOTSUPP, EISDIR, EINVAL].contains(e.code) {
            temporary = temporaryPrefix + Identifier.random().hex.prefix(12)
            file = try directory.open(temporary!, .readWrite, options: [.create, .exclusive, .noFollow], permissions: 0o600)
            // Held while it is written, so that an open on this machine never takes it for one
            // left (a drop from a pipe can wait for input for longer than a day).
            _ = try? file.tryLockExclusive()
        }
        do {
            try fill(file)
            try file.sync()
            if let temporary {
                try rename(temporary, to: name, in: directory)
            } else {
                try file.link(as: name, in: directory, displayPath: path)
            }
        } catch let e as SystemError where e.operation == "unlink" && temporary != nil {
            // Linked under its name (FUSE's fallback), its temporary name not removed: the file
            // is in place; the temporary name goes at an open a day later.
        } catch {
            if let temporary { try? directory.unlink(temporary, missingOK: true) }
            throw error
        }
        do { try directory.sync() } catch { throw NameNotDurable(path: path, cause: error) }
    }

    /// Renames the temporary file to its name without replacing a file there; where the file
    /// system can neither rename so nor make hard links (a FUSE file system without links), by
    /// a plain rename, since the name is a fresh random identifier that nothing else takes.
    private static func rename(_ temporary: String, to name: String, in directory: FileDescriptor) throws {
        do {
            try directory.renameWithoutReplacing(temporary, to: name)
        } catch let e as SystemError where [EPERM, ENOSYS, EOPNOTSUPP].contains(e.code) {
            try directory.rename(temporary, to: name)
        }
    }
}

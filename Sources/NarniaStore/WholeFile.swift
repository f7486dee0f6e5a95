import Glibc
import NarniaSystem

/// Writing a store file that must appear whole or not at all: written unnamed (`O_TMPFILE`),
/// synced, then linked in under its name; where the file system has no unnamed files, written
/// under its name with `O_EXCL` and removed on failure. The folder is synced after. Key files,
/// inbox public key files and drops are written this way.
enum WholeFile {
    static func write(_ bytes: [UInt8], named name: String, in directory: FileDescriptor, path: String) throws {
        try write(named: name, in: directory, path: path) { try $0.writeAll(bytes) }
    }

    /// As `write(_:named:in:path:)`, with what `fill` writes into the open file (it may seek
    /// and write at offsets).
    static func write(named name: String, in directory: FileDescriptor, path: String,
                      _ fill: (FileDescriptor) throws -> Void) throws {
        let file: FileDescriptor
        var named = false
        do {
            file = try directory.open(".", .readWrite, options: .unnamedTemporary, permissions: 0o600)
        } catch let e as SystemError where [EOPNOTSUPP, EISDIR, EINVAL].contains(e.code) {
            file = try FileDescriptor.open(path, .readWrite, options: [.create, .exclusive, .noFollow])
            named = true
        }
        do {
            try fill(file)
            try file.sync()
            if !named { try file.link(as: name, in: directory, displayPath: path) }
        } catch {
            if named { try? FileSystem.unlink(path, missingOK: true) }
            throw error
        }
        try directory.sync()
    }
}

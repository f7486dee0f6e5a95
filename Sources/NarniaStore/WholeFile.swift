import Glibc
import NarniaSystem

/// Writing a small store file that must appear whole or not at all: written unnamed
/// (`O_TMPFILE`), synced, then linked in under its name; where the file system has no unnamed
/// files, written under its name with `O_EXCL` and removed on failure. The folder is synced
/// after.
enum WholeFile {
    static func write(_ bytes: [UInt8], named name: String, in directory: FileDescriptor, path: String) throws {
        do {
            let file = try directory.open(".", .writeOnly, options: .unnamedTemporary, permissions: 0o600)
            try file.writeAll(bytes)
            try file.sync()
            try file.link(as: name, in: directory, displayPath: path)
        } catch let e as SystemError where [EOPNOTSUPP, EISDIR, EINVAL].contains(e.code) && e.operation == "open" {
            do {
                let file = try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusive, .noFollow])
                try file.writeAll(bytes)
                try file.sync()
            } catch {
                try? FileSystem.unlink(path, missingOK: true)
                throw error
            }
        }
        try directory.sync()
    }
}

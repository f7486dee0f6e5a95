import NarniaSystem
import Glibc
import NarniaStore

/// Anonymous memory that looks like a file (`memfd_create`): how decrypted content reaches a
/// viewer that needs a path or seeking, without ever touching a disk.
///
/// The descriptor is close-on-exec in this process; `ChildCommand.extra` maps it into the one
/// child that should see it. Once filled it is sealed against writing and growing, so a
/// viewer cannot change what the next one sees; closing it shrinks it to nothing first.
final class MemoryFile {
    let fd: Int32
    private(set) var size = 0

    /// A new, empty memory file. The name shows in `/proc/PID/fd` only, and says nothing.
    /// - Throws: `SystemError` from `memfd_create`.
    init() throws {
        fd = try Processes.makeMemoryFile(name: "view")
    }

    /// A memory file holding `bytes`, sealed.
    convenience init(bytes: [UInt8]) throws {
        try self.init()
        try bytes.withUnsafeBytes { if let base = $0.baseAddress { try append(base, $0.count) } }
        seal()
    }

    /// Appends bytes.
    func append(_ p: UnsafeRawPointer, _ count: Int) throws {
        try writeAll(fd, p, count)
        size += count
    }

    /// Decrypts `item` into the memory file and seals it.
    /// - Throws: what `Vault.readContent` throws (`Cancelled` on Ctrl-C).
    func fill(from vault: Vault, item: Item, observer: TransferObserver) throws {
        try vault.readContent(of: item, observer: observer) { p, n in try append(p, n) }
        seal()
    }

    /// Forbids further writes and growth (`F_ADD_SEALS`), and rewinds.
    func seal() {
        Processes.sealMemoryFile(fd)
        _ = lseek(fd, 0, SEEK_SET)
    }

    deinit {
        _ = ftruncate(fd, 0)
        close(fd)
    }
}

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
        let fd = narnia_memfd_create("view", UInt32(MFD_CLOEXEC_VALUE | MFD_ALLOW_SEALING_VALUE))
        guard fd >= 0 else { throw SystemError(code: errno, operation: "memfd_create") }
        self.fd = fd
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
        let fd = self.fd
        let counter = ByteCounter()
        try vault.readContent(of: item, observer: observer) { p, n in
            try writeAll(fd, p, n)
            counter.add(n)
        }
        size += counter.total
        seal()
    }

    /// Forbids further writes and growth (`F_ADD_SEALS`), and rewinds.
    func seal() {
        _ = fcntl(fd, F_ADD_SEALS_VALUE, F_SEAL_WRITE_VALUE | F_SEAL_GROW_VALUE | F_SEAL_SEAL_VALUE)
        _ = lseek(fd, 0, SEEK_SET)
    }

    deinit {
        _ = ftruncate(fd, 0)
        close(fd)
    }
}

/// A running total shared with `readContent`'s writer thread.
final class ByteCounter: @unchecked Sendable {
    private(set) var total = 0
    func add(_ n: Int) { total += n }
}

// <linux/memfd.h>, <linux/fcntl.h>: constants the Glibc module does not always export.
private let MFD_CLOEXEC_VALUE: Int32 = 0x0001
private let MFD_ALLOW_SEALING_VALUE: Int32 = 0x0002
private let F_ADD_SEALS_VALUE: Int32 = 1033
private let F_SEAL_SEAL_VALUE: Int32 = 0x0001
private let F_SEAL_GROW_VALUE: Int32 = 0x0004
private let F_SEAL_WRITE_VALUE: Int32 = 0x0008

@_silgen_name("memfd_create")
private func narnia_memfd_create(_ name: UnsafePointer<CChar>, _ flags: UInt32) -> Int32


import Glibc
import Synchronization
internal import CNarniaSystem

/// Writes a new file from its start to its end through a buffer of whole blocks, with
/// `O_DIRECT` where the file system takes it: the bytes go from the buffer to the disk with no
/// copy into the kernel's page cache. For files written once, made durable, and not read soon:
/// the store's objects and packs, and the large files an export writes. An import then spends
/// no CPU filling the page cache with ciphertext, and does not push the user's own cached files
/// out of it. (On a virtual machine whose memory the host hands out as it is first touched,
/// that copy cost more than sealing the files: issue 14.)
///
/// Where direct writes are refused — tmpfs before Linux 6.6, ecryptfs, some FUSE file systems,
/// a disk whose blocks are larger than `alignment` — the writer goes on with ordinary writes of
/// what it gathered, each handed to the kernel's writeback at once.
///
/// The file is whole only after `finish`, which writes the last partial block (padded with
/// zeros, then cut to the true length). The buffer is wiped when it is freed: an export's holds
/// plaintext. One thread at a time.
public final class AlignedFileWriter: @unchecked Sendable {
    // Sendable: used by one thread at a time (an import's, or the sealing pipeline's writer
    // while that thread waits for it), which the pipeline's hand-overs order.

    /// Direct writes start, end and are read from multiples of this: the logical block of
    /// common disks, and the page.
    public static let alignment = 4096
    /// Bytes gathered before they are written.
    public static let capacity = 1 << 20

    /// The file written.
    public let fd: FileDescriptor
    private var buffer: UnsafeMutableRawPointer?
    /// Bytes in `buffer`; the first of them belongs at `written`.
    private var buffered = 0
    /// Bytes in the file: a multiple of `alignment` while the writes are direct.
    private var written: Int64 = 0
    /// True while writes go past the page cache.
    public private(set) var isDirect: Bool

    /// The length of the file once finished: what was appended and not cut off.
    public var length: Int64 { written + Int64(buffered) }

    /// Writes into `fd`, a new, empty file opened for writing, with direct writes when `direct`
    /// and the file system takes them.
    public init(_ fd: FileDescriptor, direct: Bool = true) {
        self.fd = fd
        isDirect = direct && fd.setDirect(true)
    }

    deinit { release() }

    /// Wipes the buffer (what it held may be plaintext: an export) and keeps it for the next
    /// writer, or frees it when enough are kept.
    private func release() {
        guard let buffer else { return }
        explicit_bzero(buffer, Self.capacity)
        self.buffer = nil
        let kept = Self.spares.withLock { spares in
            guard spares.count < Self.maximumSpares else { return false }
            spares.append(Spare(memory: buffer))
            return true
        }
        if !kept { free(buffer) }
    }

    /// A wiped buffer no writer holds. Sendable: taken from and given back to `spares` under
    /// its lock, then used by one writer.
    private struct Spare: @unchecked Sendable {
        let memory: UnsafeMutableRawPointer
    }

    /// Buffers of finished writers, wiped, for the next ones: an export writes one file after
    /// another, and a buffer freshly allocated costs a page fault and a cleared page every
    /// 4 KiB (8 % of an export's CPU when each file had its own).
    private static let spares = Mutex<[Spare]>([])
    private static let maximumSpares = 4

    /// A spare buffer, or a new one.
    private func allocateBuffer() throws -> UnsafeMutableRawPointer {
        if let spare = Self.spares.withLock({ $0.popLast() }) { return spare.memory }
        var memory: UnsafeMutableRawPointer?
        guard posix_memalign(&memory, Self.alignment, Self.capacity) == 0, let memory else {
            throw SystemError(code: ENOMEM, operation: "posix_memalign", path: fd.path)
        }
        return memory
    }

    /// Appends `count` bytes.
    public func append(_ bytes: UnsafeRawPointer, count: Int) throws {
        if buffer == nil { buffer = try allocateBuffer() }
        var source = bytes, remaining = count
        while remaining > 0 {
            let n = min(remaining, Self.capacity - buffered)
            (buffer! + buffered).copyMemory(from: source, byteCount: n)
            buffered += n
            source += n
            remaining -= n
            if buffered == Self.capacity { try writeBuffered() }
        }
    }

    /// Appends all of `prefix`, then `count` bytes.
    public func append(prefix: [UInt8], _ bytes: UnsafeRawPointer, count: Int) throws {
        try prefix.withUnsafeBytes { p in if p.count > 0 { try append(p.baseAddress!, count: p.count) } }
        try append(bytes, count: count)
    }

    /// Drops everything after the first `end` bytes (an append that failed). Bytes that were
    /// written already are cut from the file; if that fails, they stay, and `length` says so.
    public func cut(to end: Int64) throws {
        if end >= written {
            buffered = Int(end - written)
            return
        }
        buffered = 0
        try fd.truncate(to: end)
        written = end
        if written % Int64(Self.alignment) != 0 { stopDirectWrites() }
    }

    /// Writes what is gathered and gives the file its exact length. Returns the length; the
    /// caller makes it durable.
    @discardableResult
    public func finish() throws -> Int64 {
        let end = length
        if buffered > 0 {
            if isDirect {
                let padded = (buffered + Self.alignment - 1) / Self.alignment * Self.alignment
                (buffer! + buffered).initializeMemory(as: UInt8.self, repeating: 0, count: padded - buffered)
                try write(count: padded)
            } else {
                try write(count: buffered)
            }
        }
        if try fd.size() != end { try fd.truncate(to: end) }
        written = end
        buffered = 0
        release()
        return end
    }

    /// Writes the whole blocks gathered (all of them once direct writes stopped) and keeps the
    /// rest at the start of the buffer.
    private func writeBuffered() throws {
        let count = isDirect ? buffered / Self.alignment * Self.alignment : buffered
        guard count > 0 else { return }
        try write(count: count)
        written += Int64(count)
        buffered -= count
        if buffered > 0 { buffer!.copyMemory(from: buffer! + count, byteCount: buffered) }
    }

    /// Writes the first `count` bytes of the buffer at `written`. A direct write the file
    /// system refuses (`EINVAL`: its blocks are larger, or it takes no direct writes after
    /// all) is made again as an ordinary one, and so are the writes after it.
    private func write(count: Int) throws {
        if isDirect {
            do {
                try fd.pwriteAll(buffer!, count: count, offset: written)
                return
            } catch let error as SystemError where error.code == EINVAL {
                stopDirectWrites()
            }
        }
        try fd.pwriteAll(buffer!, count: count, offset: written)
        fd.startWriteback(offset: written, length: Int64(count))
    }

    private func stopDirectWrites() {
        _ = fd.setDirect(false)
        isDirect = false
    }
}

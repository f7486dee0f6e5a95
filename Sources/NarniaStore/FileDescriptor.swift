import Glibc

/// An owned file descriptor, closed in `deinit`. Reads and writes loop over short transfers
/// and retry `EINTR`.
public final class FileDescriptor: @unchecked Sendable {
    /// The raw descriptor number.
    public let raw: Int32
    /// The path it was opened with, for messages.
    public let path: String
    private let owned: Bool

    init(raw: Int32, path: String, owned: Bool = true) {
        self.raw = raw
        self.path = path
        self.owned = owned
    }

    /// Opens `path` with `open(2)` flags; `O_CLOEXEC` is always added.
    public static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o600) throws -> FileDescriptor {
        let fd = try sys("open", path) { Glibc.open(path, flags | O_CLOEXEC, mode) }
        return FileDescriptor(raw: fd, path: path)
    }

    /// Wraps an inherited descriptor (stdin, `--passphrase-fd`) without taking ownership.
    public static func borrowing(_ raw: Int32, name: String) -> FileDescriptor {
        FileDescriptor(raw: raw, path: name, owned: false)
    }

    private var number: Int32 { raw }

    deinit {
        if owned { Glibc.close(raw) }
    }

    /// Reads up to `count` bytes; fewer only at end of file. Returns the number read.
    public func readFully(into buffer: UnsafeMutableRawPointer, count: Int) throws -> Int {
        var done = 0
        while done < count {
            let n = try sys("read", path) { Glibc.read(number, buffer + done, count - done) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    public func preadFully(into buffer: UnsafeMutableRawPointer, count: Int, offset: Int64) throws -> Int {
        var done = 0
        while done < count {
            let n = try sys("read", path) { Glibc.pread(number, buffer + done, count - done, off_t(offset) + off_t(done)) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all `count` bytes.
    public func writeAll(_ buffer: UnsafeRawPointer, count: Int) throws {
        var done = 0
        while done < count {
            let n = try sys("write", path) { Glibc.write(number, buffer + done, count - done) }
            done += n
        }
    }

    /// Writes all of `bytes`.
    public func writeAll(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (b: UnsafeRawBufferPointer) throws in
            if b.count > 0 { try writeAll(b.baseAddress!, count: b.count) }
        }
    }

    /// Reads the whole remaining file.
    public func readToEnd(limit: Int = 1 << 30) throws -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = try chunk.withUnsafeMutableBytes { (b: UnsafeMutableRawBufferPointer) throws in
                try sys("read", path) { Glibc.read(number, b.baseAddress!, b.count) }
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
            if out.count > limit { throw SystemError(code: EFBIG, operation: "read", path: path) }
        }
        return out
    }

    /// `fsync(2)`.
    public func sync() throws {
        _ = try sys("fsync", path) { Glibc.fsync(number) }
    }

    /// `fdatasync(2)`.
    public func dataSync() throws {
        _ = try sys("fdatasync", path) { Glibc.fdatasync(number) }
    }

    /// Starts writeback of a written range without waiting (`sync_file_range` with
    /// `SYNC_FILE_RANGE_WRITE`), so that a later `fsync`/`syncfs` finds little left to do.
    /// Failures are ignored: this is only a hint.
    public func startWriteback(offset: Int64, length: Int64) {
        _ = c_sync_file_range(number, offset, length, syncFileRangeWrite)
    }

    /// `syncfs(2)`: flushes the whole file system holding this descriptor, as `sync -f` does.
    public func syncFileSystem() throws {
        _ = try sys("syncfs", path) { c_syncfs(number) }
    }

    /// The file's status (`fstat`).
    public func status() throws -> stat {
        var st = stat()
        _ = try sys("stat", path) { Glibc.fstat(number, &st) }
        return st
    }

    /// The file's size (`fstat`).
    public func size() throws -> Int64 {
        var st = stat()
        _ = try sys("stat", path) { Glibc.fstat(number, &st) }
        return Int64(st.st_size)
    }

    /// Moves the file offset to `offset` (`lseek(2)`, `SEEK_SET`).
    public func seek(to offset: Int64) throws {
        _ = try sys("seek", path) { Glibc.lseek(number, off_t(offset), SEEK_SET) }
    }

    /// `ftruncate(2)`.
    public func truncate(to length: Int64) throws {
        _ = try sys("truncate", path) { Glibc.ftruncate(number, off_t(length)) }
    }

    /// Hints sequential access (`posix_fadvise`); failures are ignored.
    public func adviseSequential() {
        _ = posix_fadvise(number, 0, 0, POSIX_FADV_SEQUENTIAL)
    }

    /// Takes an exclusive, non-blocking `flock`. Returns false when another process holds it.
    public func tryLockExclusive() throws -> Bool {
        if c_flock(number, LOCK_EX | LOCK_NB) == 0 { return true }
        if errno == EWOULDBLOCK { return false }
        throw SystemError.current("flock", path)
    }
}

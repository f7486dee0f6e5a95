import Glibc
internal import CNarniaSystem

/// An owned file descriptor, closed in `deinit`. Reads and writes loop over short transfers
/// and retry `EINTR`.
public final class FileDescriptor: @unchecked Sendable {
    // Sendable: the descriptor number and path never change; the kernel serialises the calls.
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

    /// Opens `path` (`open(2)`; `O_CLOEXEC` is always added; `.noAccessTime` is dropped where
    /// the file is not this user's).
    public static func open(_ path: String, _ access: AccessMode, options: OpenOptions = [],
                            permissions: mode_t = 0o600) throws -> FileDescriptor {
        let flags = access.flags | options.rawValue | O_CLOEXEC
        let fd = try retryingInterrupts("open", path) {
            let fd = Glibc.open(path, flags, permissions)
            guard fd < 0, errno == EPERM, options.contains(.noAccessTime) else { return fd }
            return Glibc.open(path, flags & ~OpenOptions.noAccessTime.rawValue, permissions)
        }
        return FileDescriptor(raw: fd, path: path)
    }

    /// Opens `name` relative to this directory (`openat(2)`; `O_CLOEXEC` is always added).
    /// `displayPath` names the file in errors.
    public func open(_ name: String, _ access: AccessMode, options: OpenOptions = [], permissions: mode_t = 0o600,
                     displayPath: String? = nil) throws -> FileDescriptor {
        let shown = displayPath ?? pathOfEntry(name)
        let flags = access.flags | options.rawValue | O_CLOEXEC
        let fd = try retryingInterrupts("open", shown) { Glibc.openat(raw, name, flags, permissions) }
        return FileDescriptor(raw: fd, path: shown)
    }

    /// The path of `name` in this directory, for messages (one slash, whether or not the
    /// directory was opened by a path that ends in one).
    public func pathOfEntry(_ name: String) -> String {
        path.appendingPathComponent(name)
    }

    /// Wraps an inherited descriptor (stdin, `--passphrase-fd`) without taking ownership.
    public static func borrowing(_ raw: Int32, name: String) -> FileDescriptor {
        FileDescriptor(raw: raw, path: name, owned: false)
    }

    deinit {
        if owned { Glibc.close(raw) }
    }

    /// Reads up to `count` bytes; fewer only at end of file. Returns the number read.
    public func readFully(into buffer: UnsafeMutableRawPointer, count: Int) throws -> Int {
        var done = 0
        while done < count {
            let n = try retryingInterrupts("read", path) { Glibc.read(raw, buffer + done, count - done) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Reads up to `count` bytes at `offset`; fewer only at end of file.
    public func preadFully(into buffer: UnsafeMutableRawPointer, count: Int, offset: Int64) throws -> Int {
        var done = 0
        while done < count {
            let n = try retryingInterrupts("read", path) { Glibc.pread(raw, buffer + done, count - done, off_t(offset) + off_t(done)) }
            if n == 0 { break }
            done += n
        }
        return done
    }

    /// Writes all `count` bytes.
    public func writeAll(_ buffer: UnsafeRawPointer, count: Int) throws {
        var done = 0
        while done < count {
            let n = try retryingInterrupts("write", path) { Glibc.write(raw, buffer + done, count - done) }
            done += n
        }
    }

    /// Writes all of `prefix`, then all `count` bytes of `buffer`, in one `writev` when the
    /// kernel takes them whole.
    public func writeAll(prefix: [UInt8], _ buffer: UnsafeRawPointer, count: Int) throws {
        let written = try prefix.withUnsafeBytes { p in
            var parts = [iovec(iov_base: UnsafeMutableRawPointer(mutating: p.baseAddress), iov_len: p.count),
                         iovec(iov_base: UnsafeMutableRawPointer(mutating: buffer), iov_len: count)]
            return try retryingInterrupts("write", path) { Glibc.writev(raw, &parts, 2) }
        }
        if written < prefix.count {
            try prefix.withUnsafeBytes { try writeAll($0.baseAddress! + written, count: prefix.count - written) }
            try writeAll(buffer, count: count)
        } else if written < prefix.count + count {
            try writeAll(buffer + (written - prefix.count), count: count - (written - prefix.count))
        }
    }

    /// Writes all of `bytes`.
    public func writeAll(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { (b: UnsafeRawBufferPointer) throws in
            if b.count > 0 { try writeAll(b.baseAddress!, count: b.count) }
        }
    }

    /// Writes all `count` bytes at `offset` (`pwrite(2)`).
    public func pwriteAll(_ buffer: UnsafeRawPointer, count: Int, offset: Int64) throws {
        var done = 0
        while done < count {
            let n = try retryingInterrupts("write", path) { Glibc.pwrite(raw, buffer + done, count - done, off_t(offset) + off_t(done)) }
            done += n
        }
    }

    /// Reads the whole remaining file; more than `limit` bytes is an error (`EFBIG`).
    public func readToEnd(limit: Int = 1 << 30) throws -> [UInt8] {
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = try chunk.withUnsafeMutableBytes { (b: UnsafeMutableRawBufferPointer) throws in
                try retryingInterrupts("read", path) { Glibc.read(raw, b.baseAddress!, b.count) }
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
            if out.count > limit { throw SystemError(code: EFBIG, operation: "read", path: path) }
        }
        return out
    }

    /// `fsync(2)`.
    public func sync() throws {
        _ = try retryingInterrupts("fsync", path) { Glibc.fsync(raw) }
    }

    /// `fdatasync(2)`.
    public func dataSync() throws {
        _ = try retryingInterrupts("fdatasync", path) { Glibc.fdatasync(raw) }
    }

    /// Starts writeback of a written range without waiting (`sync_file_range` with
    /// `SYNC_FILE_RANGE_WRITE`), so that a later `fsync`/`syncfs` finds little left to do.
    /// Failures are ignored: this is only a hint.
    public func startWriteback(offset: Int64, length: Int64) {
        _ = narnia_start_writeback(raw, offset, length)
    }

    /// `syncfs(2)`: flushes the whole file system holding this descriptor, as `sync -f` does.
    public func syncFileSystem() throws {
        _ = try retryingInterrupts("syncfs", path) { narnia_syncfs(raw) }
    }

    /// True when `syncFileSystem` makes what was written to the file system holding this
    /// descriptor durable: a local file system on a block device (or in memory), by its
    /// `fstatfs` type. On FUSE (sshfs, rclone mount, bindfs), NFS, SMB and other file systems
    /// whose data lives with a server, `syncfs` may only hand the data to the server's cache,
    /// or do nothing at all: each file must be `sync`ed instead.
    public var syncFileSystemReachesDisk: Bool {
        let type = narnia_file_system_type(raw)
        return type >= 0 && Self.fileSystemsSyncedWhole.contains(UInt32(truncatingIfNeeded: type))
    }

    /// False on the file systems whose drivers show every file with the mode their mount
    /// options give, whatever `chmod` did: FAT, exFAT and the kernel's NTFS (by `fstatfs`
    /// type; FUSE ones, ntfs-3g and exfat-fuse among them, cannot be told from the others).
    public var fileSystemKeepsModes: Bool {
        ![0x4D44, 0x2011_BAB0, 0x7366_746E].contains(narnia_file_system_type(raw))
    }

    /// False where a file's change time may not witness a rewrite: FAT and exFAT keep none
    /// (their drivers show the modification time), and FUSE file systems give what their
    /// server says (exfat-fuse and fusefat the modification time, sshfs what SFTP carries).
    public var fileSystemKeepsChangeTimes: Bool {
        ![0x4D44, 0x2011_BAB0, Self.fuseType].contains(narnia_file_system_type(raw))
    }

    /// The `statfs` magic numbers of the file systems whose `syncfs` writes every dirty inode
    /// and flushes the device: ext2/3/4, XFS, Btrfs, F2FS, ZFS, bcachefs, JFS, ReiserFS, NILFS,
    /// FAT, exFAT, NTFS3, HFS+, overlayfs (it syncs its upper layer), and tmpfs and ramfs (no
    /// disk).
    private static let fileSystemsSyncedWhole: Set<UInt32> = [
        0xEF53, 0x5846_5342, 0x9123_683E, 0xF2F5_2010, 0x2FC1_2FC1, 0xCA45_1A4E, 0x3153_464A, 0x5265_4973,
        0x3434, 0x4D44, 0x2011_BAB0, 0x7366_746E, 0x482B, 0x794C_7630, 0x0102_1994, 0x8584_58F6,
    ]

    /// The file's status (`fstat`).
    public func status() throws -> stat {
        var st = stat()
        _ = try retryingInterrupts("stat", path) { Glibc.fstat(raw, &st) }
        return st
    }

    /// The file's size (`fstat`).
    public func size() throws -> Int64 {
        Int64(try status().st_size)
    }

    /// Moves the file offset to `offset` (`lseek(2)`, `SEEK_SET`).
    public func seek(to offset: Int64) throws {
        _ = try retryingInterrupts("seek", path) { Glibc.lseek(raw, off_t(offset), SEEK_SET) }
    }

    /// `ftruncate(2)`.
    public func truncate(to length: Int64) throws {
        _ = try retryingInterrupts("truncate", path) { Glibc.ftruncate(raw, off_t(length)) }
    }

    /// Clears `O_NONBLOCK` (set to open a path that might be a FIFO without waiting).
    public func setBlocking() throws {
        let flags = try retryingInterrupts("fcntl", path) { fcntl(raw, F_GETFL) }
        _ = try retryingInterrupts("fcntl", path) { fcntl(raw, F_SETFL, flags & ~O_NONBLOCK) }
    }

    /// Clears `O_NONBLOCK` with one `fcntl` where `setBlocking()` needs two: for a descriptor
    /// this program opened for reading without any other flag `F_SETFL` sets (`O_APPEND`,
    /// `O_ASYNC`, `O_DIRECT`, `O_NOATIME`), whose status flags are then all clear.
    public func setBlockingReader() throws {
        _ = try retryingInterrupts("fcntl", path) { fcntl(raw, F_SETFL, 0) }
    }

    /// Hints sequential access (`posix_fadvise`); failures are ignored.
    public func adviseSequential() {
        _ = posix_fadvise(raw, 0, 0, POSIX_FADV_SEQUENTIAL)
    }

    /// Turns `O_DIRECT` on or off for this open file (`fcntl`): reads and writes then go
    /// between the caller's memory and the disk, past the page cache, and must start, end and
    /// be held at multiples of the disk's block. False where the file system refuses it.
    public func setDirect(_ on: Bool) -> Bool {
        narnia_set_direct(raw, on ? 1 : 0) == 0
    }

    /// What `whileNoOneWrites` found.
    public enum WriterCheck: Equatable, Sendable {
        /// No process had the file open for writing: `body` ran under the lease.
        case noWriter
        /// One had: `body` did not run.
        case writer
        /// No lease could be taken (the error: `EACCES` for a file of another user, `EINVAL`
        /// where the file system has none): `body` ran without one, and nothing was checked.
        /// `EREMOTE`: a lease was taken, but on a file system whose files others open elsewhere
        /// (FUSE), which it does not see: `body` ran under it, and only this machine's openers
        /// through the mount were checked.
        case unchecked(Int32)
    }

    /// False on FUSE (sshfs, rclone mount, bindfs): the kernel grants a lease there, but sees
    /// only the openers through this mount, not a program writing to the file beneath it, on
    /// the server or on another machine (review DF-1). A FUSE file system on a block device
    /// (`fuseblk`: ntfs-3g, exfat-fuse on a disk) has no other way in, and shows that device's
    /// number, where the others show an anonymous one, of major 0 (review DG-1).
    public var leaseSeesEveryOpener: Bool {
        narnia_file_system_type(raw) != Self.fuseType || narnia_file_system_device_major(raw) > 0
    }

    /// The `statfs` magic number of FUSE file systems (`fuse` and `fuseblk` alike).
    private static let fuseType: Int64 = 0x6573_5546

    /// Runs `body` holding a read lease on the file (`F_SETLEASE`), which the kernel grants
    /// only while no process has it open for writing; not when one has. Where leases cannot be
    /// taken (a file system without them, a file of another user) `body` runs without one.
    /// Lease breaks are signalled with SIGIO, which the program ignores: an opener for writing meanwhile waits until `body` returns, and
    /// `body`'s argument says whether one waits (`F_GETLEASE` no longer `F_RDLCK`; always false
    /// without a lease): what it does after asking, that opener meets.
    public func whileNoOneWrites(_ body: (_ writerWaits: () -> Bool) throws -> Void) throws -> WriterCheck {
        guard narnia_take_read_lease(raw) == 0 else {
            let code = errno
            if code == EAGAIN { return .writer }
            try body { false }
            return .unchecked(code)
        }
        defer { _ = narnia_release_lease(raw) }
        try body { narnia_lease_type(self.raw) != F_RDLCK }
        return leaseSeesEveryOpener ? .noWriter : .unchecked(EREMOTE)
    }

    /// Runs `body` holding a write lease on the file (`F_SETLEASE`, `F_WRLCK`; the descriptor
    /// open for writing), which the kernel grants only while no other descriptor of any process
    /// has the file open: no one reads or writes it meanwhile (an opener waits until `body`
    /// returns). Returns false, without running `body`, when the lease is not granted — another
    /// has it open, or the file system or the file's owner allows no lease: unlike
    /// `whileNoOneWrites`, nothing runs without the proof.
    public func whileAloneWithIt(_ body: () throws -> Void) throws -> Bool {
        guard narnia_take_write_lease(raw) == 0 else { return false }
        defer { _ = narnia_release_lease(raw) }
        try body()
        return true
    }

    /// Takes an exclusive, non-blocking `flock`. Returns false when another process holds it.
    public func tryLockExclusive() throws -> Bool {
        if narnia_flock(raw, LOCK_EX | LOCK_NB) == 0 { return true }
        if errno == EWOULDBLOCK { return false }
        throw SystemError.current("flock", path)
    }

    /// Gives an unnamed file (`.unnamedTemporary`) the name `name` in `directory`
    /// (`linkat` with `AT_EMPTY_PATH`, or of its `/proc/self/fd` link for an ordinary user
    /// before Linux 6.10). Fails with `EEXIST` when the name is taken.
    public func link(as name: String, in directory: FileDescriptor, displayPath: String) throws {
        _ = try retryingInterrupts("link", displayPath) { narnia_link_open_file(raw, directory.raw, name) }
    }

    // MARK: Directories

    /// Creates `name` in this directory (`mkdirat`); an existing directory is not an error
    /// when `existingOK`. Returns whether it was made here.
    @discardableResult
    public func makeDirectory(_ name: String, permissions: mode_t = 0o700, existingOK: Bool = false) throws -> Bool {
        let shown = pathOfEntry(name)
        if SystemCallFaults.armed.load(ordering: .relaxed), let code = SystemCallFaults.take("mkdir") {
            throw SystemError(code: code, operation: "mkdir", path: shown)
        }
        if mkdirat(raw, name, permissions) == 0 { return true }
        if errno == EEXIST && existingOK { return false }
        throw SystemError.current("mkdir", shown)
    }

    /// Removes `name` from this directory (`unlinkat`); a missing name is not an error when
    /// `missingOK`.
    public func unlink(_ name: String, missingOK: Bool = false) throws {
        if unlinkat(raw, name, 0) == 0 { return }
        if errno == ENOENT && missingOK { return }
        throw SystemError.current("unlink", pathOfEntry(name))
    }

    /// Removes the empty folder `name` from this directory (`unlinkat` with `AT_REMOVEDIR`).
    public func removeDirectory(_ name: String) throws {
        _ = try retryingInterrupts("rmdir", pathOfEntry(name)) { unlinkat(raw, name, AT_REMOVEDIR) }
    }

    /// Renames `name` to `newName` within this directory (`renameat`), replacing what
    /// `newName` named (a link is replaced, not followed).
    public func rename(_ name: String, to newName: String) throws {
        _ = try retryingInterrupts("rename", pathOfEntry(newName)) { renameat(raw, name, raw, newName) }
    }

    /// Renames `name` to `newName` within this directory only if `newName` names nothing:
    /// `renameat2` with `RENAME_NOREPLACE`, or where the file system cannot promise that (FUSE),
    /// a hard link then the removal of the old name. Fails with `EEXIST` when `newName` exists,
    /// and with the link's error (`EPERM`, `ENOSYS`, …) where neither can be done. The fallback
    /// is two steps, and removes whatever `name` names by the second: only for a name no other
    /// program writes (a temporary of narnia's own), never a user's file (review CI-1).
    public func renameWithoutReplacing(_ name: String, to newName: String) throws {
        do {
            _ = try retryingInterrupts("rename", pathOfEntry(newName)) { narnia_rename_no_replace(raw, name, newName) }
        } catch let e as SystemError where e.code == EINVAL {
            _ = try retryingInterrupts("link", pathOfEntry(newName)) { linkat(raw, name, raw, newName, 0) }
            try unlink(name)
        }
    }

    /// The names in this directory (without `.` and `..`), each with its `d_type` (`DT_REG`,
    /// `DT_DIR`, …, or `DT_UNKNOWN` where the file system does not say: what the directory said
    /// when read, which a later `fstat` of what is opened must confirm), and, apart, the names
    /// that are not valid UTF-8, as bytes (`fdopendir` on a duplicate).
    public func typedEntries() throws -> (entries: [(name: String, type: UInt8)], undecodable: [[UInt8]]) {
        let copy = try retryingInterrupts("dup", path) { dup(raw) }
        guard let dir = fdopendir(copy) else {
            close(copy)
            throw SystemError.current("opendir", path)
        }
        defer { closedir(dir) }
        rewinddir(dir)
        var entries: [(name: String, type: UInt8)] = []
        let undecodable = FileSystem.readEntries(dir) { entries.append(($0, $1)) }
        return (entries, undecodable)
    }

    /// Sets the modification time to now, read from the fine-grained clock (`futimens`,
    /// access time left as it is); failures are ignored. A write stamps the coarse time of
    /// the kernel's last tick, which two writes microseconds apart share.
    public func stampModificationTimeFinely() {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let omit = (1 << 30) - 2   // UTIME_OMIT (a macro Swift does not import)
        var times = [timespec(tv_sec: 0, tv_nsec: omit), now]
        _ = futimens(raw, &times)
    }

    /// Sets the access and modification times (`futimens`); failures are ignored.
    public func setTimes(nanoseconds: Int64) {
        let t = Nanoseconds.timespecOf(nanoseconds)
        var times = [t, t]
        _ = futimens(raw, &times)
    }

    /// The status of `name` in this directory without following a symbolic link (`fstatat`
    /// with `AT_SYMLINK_NOFOLLOW`), or nil when it does not exist.
    public func statusOfEntry(_ name: String) throws -> stat? {
        var st = stat()
        if fstatat(raw, name, &st, AT_SYMLINK_NOFOLLOW) == 0 { return st }
        if errno == ENOENT { return nil }
        throw SystemError.current("stat", pathOfEntry(name))
    }

    /// The status of what the entry `name` leads to, links followed; nil when nothing does
    /// (no such entry, or a dangling link, a loop, a target out of reach).
    public func statusOfTarget(_ name: String) -> stat? {
        var st = stat()
        return fstatat(raw, name, &st, 0) == 0 ? st : nil
    }
}

import Glibc

/// Small, throwing wrappers over path-based system calls.
public enum FileSystem {
    /// `mkdir(2)`; an existing directory is not an error when `existingOK`.
    public static func makeDirectory(_ path: String, mode: mode_t = 0o700, existingOK: Bool = false) throws {
        if SystemCallFaults.armed.load(ordering: .relaxed), let code = SystemCallFaults.take("mkdir") {
            throw SystemError(code: code, operation: "mkdir", path: path)
        }
        if Glibc.mkdir(path, mode) == 0 { return }
        if errno == EEXIST && existingOK { return }
        throw SystemError.current("mkdir", path)
    }

    /// Creates `path` and any missing parents (`mkdir -p`), each with `mode`.
    public static func makeDirectories(_ path: String, mode: mode_t = 0o700) throws {
        var current = path.unicodeScalars.first == "/" ? "" : "."
        for part in path.pathComponents {
            current += "/" + part
            try makeDirectory(current, mode: mode, existingOK: true)
        }
    }

    /// The process's working directory, or nil when it cannot be read (removed, say) or its
    /// path is not valid UTF-8 (`currentDirectoryIsUndecodable`).
    public static func currentDirectory() -> String? {
        workingDirectoryBytes().flatMap { String(validating: $0, as: UTF8.self) }
    }

    /// True when the working directory's path is not valid UTF-8: read as text, it would name
    /// another folder (review BD-4), so narnia refuses to start there.
    public static var currentDirectoryIsUndecodable: Bool {
        workingDirectoryBytes().map { String(validating: $0, as: UTF8.self) == nil } ?? false
    }

    private static func workingDirectoryBytes() -> [UInt8]? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        return buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    }

    /// `path` made absolute against the working directory as it is now (a path kept for
    /// later must not move when the working directory does).
    public static func absolute(_ path: String) -> String {
        guard path.unicodeScalars.first != "/", let cwd = currentDirectory() else { return path }
        return cwd == "/" ? "/" + path : cwd + "/" + path
    }

    /// What the symbolic link at `path` holds (`readlink`), or nil when it is none or unreadable.
    public static func linkTarget(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let n = readlink(path, &buffer, buffer.count - 1)
        guard n >= 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `realpath(3)`: `path` absolute, every link, `.` and `..` resolved; nil when it fails.
    public static func realPath(_ path: String) -> String? {
        guard let real = realpath(path, nil) else { return nil }
        defer { free(real) }
        return String(cString: real)
    }

    /// The folder holding `path`: `.` for a bare name, `/` for a top-level path.
    public static func parentDirectory(of path: String) -> String {
        // By scalar: a name beginning with a combining mark joins its `/` in one Character.
        guard let slash = path.unicodeScalars.lastIndex(of: "/") else { return "." }
        let parent = String(path.unicodeScalars[..<slash])
        return parent.isEmpty ? "/" : parent
    }

    /// `rename(2)`.
    public static func rename(_ from: String, _ to: String) throws {
        _ = try retryingInterrupts("rename", from) { Glibc.rename(from, to) }
    }

    /// `link(2)`: a second name for the file at `existing`.
    public static func link(_ existing: String, _ new: String) throws {
        _ = try retryingInterrupts("link", new) { Glibc.link(existing, new) }
    }

    /// `unlink(2)`; a missing file is not an error when `missingOK`.
    public static func unlink(_ path: String, missingOK: Bool = false) throws {
        if SystemCallFaults.armed.load(ordering: .relaxed), let code = SystemCallFaults.take("unlink") {
            throw SystemError(code: code, operation: "unlink", path: path)
        }
        if Glibc.unlink(path) == 0 { return }
        if errno == ENOENT && missingOK { return }
        throw SystemError.current("unlink", path)
    }

    /// `rmdir(2)`.
    public static func removeDirectory(_ path: String) throws {
        _ = try retryingInterrupts("rmdir", path) { Glibc.rmdir(path) }
    }

    /// Makes a directory's entries durable: `open(O_DIRECTORY)` + `fsync`.
    public static func syncDirectory(_ path: String) throws {
        let fd = try FileDescriptor.open(path, .readOnly, options: .directory)
        try fd.sync()
    }

    /// Makes files written on one file system durable, with the entries of `folders`: one
    /// `syncfs` of that file system where it reaches the disk (`FileDescriptor
    /// .syncFileSystemReachesDisk`: not on FUSE, NFS or SMB), else an `fsync` of each file,
    /// then of each folder. `anchor` is any descriptor on that file system.
    public static func makeDurable(files: [String], folders: [String], on anchor: FileDescriptor) throws {
        if anchor.syncFileSystemReachesDisk { return try anchor.syncFileSystem() }
        for path in files { try FileDescriptor.open(path, .readOnly, options: .noFollow).sync() }
        for folder in folders { try syncDirectory(folder) }
    }

    /// The names in a directory, without `.` and `..`. Names that are not valid UTF-8 cannot be
    /// spelled as a `String` without changing them, so they are left out here; see
    /// `listDirectoryCountingUndecodable` where that matters.
    public static func listDirectory(_ path: String) throws -> [String] {
        try listDirectoryCountingUndecodable(path).names
    }

    /// The names in a directory, and, apart, the names that are not valid UTF-8, as bytes.
    /// The directory's access time stays as it was (`O_NOATIME`, where it is this user's).
    public static func listDirectoryCountingUndecodable(_ path: String) throws -> (names: [String], undecodable: [[UInt8]]) {
        let listing = try FileDescriptor.open(path, .readOnly, options: [.directory, .noAccessTime]).typedEntries()
        return (listing.entries.map(\.name), listing.undecodable)
    }

    /// A name that is not valid UTF-8 (its `bytes`, as a listing gives them) spelled for
    /// messages: each byte from 0x80 up as `\xHH`, or for a terminal as `?`, as a message
    /// there shows every character it cannot print (`\xff` would read as a real name holding
    /// a backslash, review BC-7); the other bytes as they are (a message escapes those it
    /// cannot print).
    public static func spelled(undecodable bytes: [UInt8], forTerminal: Bool = false) -> String {
        bytes.map { $0 < 0x80 ? String(UnicodeScalar($0)) : forTerminal ? "?" : "\\x" + String($0, radix: 16) }.joined()
    }

    /// Reads an open directory stream to its end, giving `body` each name that is valid UTF-8
    /// with its `d_type` (`DT_REG`, `DT_DIR`, …; `DT_UNKNOWN` where the file system does not
    /// say). Returns the names that are not valid UTF-8, as bytes.
    static func readEntries(_ dir: OpaquePointer, _ body: (String, UInt8) -> Void) -> [[UInt8]] {
        var undecodable: [[UInt8]] = []
        while let entry = readdir(dir) {
            // The name is decoded straight from the entry (a store holds 100,000 of them).
            let (name, bytes) = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: UInt8.self, capacity: 256) { p in
                    let bytes = UnsafeBufferPointer(start: p, count: strlen(UnsafeRawPointer(p).assumingMemoryBound(to: CChar.self)))
                    let name = String(validating: bytes, as: UTF8.self)
                    return (name, name == nil ? Array(bytes) : [])
                }
            }
            guard let name else {
                undecodable.append(bytes)
                continue
            }
            if name != "." && name != ".." { body(name, entry.pointee.d_type) }
        }
        return undecodable
    }

    /// The bytes an unprivileged writer may still put on the file system holding `path`
    /// (`statvfs(3)`'s `f_bavail`), or nil when it cannot be asked.
    public static func availableBytes(on path: String) -> UInt64? {
        var st = statvfs()
        guard statvfs(path, &st) == 0 else { return nil }
        return UInt64(st.f_bavail) &* UInt64(st.f_frsize)
    }

    /// `lstat(2)`, or nil when the path does not exist.
    public static func lstatIfExists(_ path: String) throws -> stat? {
        var st = stat()
        if Glibc.lstat(path, &st) == 0 { return st }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw SystemError.current("stat", path)
    }

    /// `stat(2)` (follows links), or nil when the path does not exist.
    public static func statIfExists(_ path: String) throws -> stat? {
        var st = stat()
        if fstatat(AT_FDCWD, path, &st, 0) == 0 { return st }
        if errno == ENOENT || errno == ENOTDIR { return nil }
        throw SystemError.current("stat", path)
    }

    /// Why nothing is found at `path`, as the shell says it: "not a folder" when a part before
    /// its last is a file (ls(1)'s "Not a directory"; review EC-3), else "no such file or folder".
    public static func absenceReason(_ path: String) -> String {
        var st = stat()
        return SystemError.reason(for: fstatat(AT_FDCWD, path, &st, 0) != 0 && errno == ENOTDIR ? ENOTDIR : ENOENT)
    }

    /// Why `path` is no folder to put things in, as the shell says it: "no such folder" when
    /// nothing is there, "not a folder" when a file is, or a part before its last is one
    /// (review EC-3: "no such folder"), else the system's reason; nil for a folder (links followed).
    public static func notAFolderReason(_ path: String) -> String? {
        var st = stat()
        if fstatat(AT_FDCWD, path, &st, 0) == 0 { return (st.st_mode & S_IFMT) == S_IFDIR ? nil : SystemError.reason(for: ENOTDIR) }
        return errno == ENOENT ? "no such folder" : SystemError.reason(for: errno)
    }

    /// True when the path names a directory (following links).
    public static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return fstatat(AT_FDCWD, path, &st, 0) == 0 && (st.st_mode & S_IFMT) == S_IFDIR
    }
}

extension stat {
    /// True for a directory.
    public var isDirectory: Bool { (st_mode & S_IFMT) == S_IFDIR }
    /// True for a regular file.
    public var isRegularFile: Bool { (st_mode & S_IFMT) == S_IFREG }
    /// True for a symbolic link.
    public var isSymbolicLink: Bool { (st_mode & S_IFMT) == S_IFLNK }
    /// The modification time in nanoseconds since the epoch (held to 1677–2262: `Nanoseconds`).
    public var modifiedNanoseconds: Int64 { Nanoseconds.of(st_mtim) }
    /// When the file's content or status last changed (`st_ctim`): a time no program can set,
    /// which a file's modification time, set by a copy, is not.
    public var changedNanoseconds: Int64 { Nanoseconds.of(st_ctim) }
}

extension FileSystem {
    /// Removes `path` and everything under it, never following a symbolic link (a link is
    /// removed, not what it points to). Failures are ignored: what remains stays.
    public static func removeTreeOfFiles(_ path: String) {
        var folders: [String] = []
        var pending = [path]
        while let next = pending.popLast() {
            guard let st = try? lstatIfExists(next) else { continue }
            if st.isDirectory {
                folders.append(next)
                pending += ((try? listDirectory(next)) ?? []).map { next + "/" + $0 }
            } else {
                try? unlink(next, missingOK: true)
            }
        }
        for folder in folders.reversed() { try? removeDirectory(folder) }
    }
}

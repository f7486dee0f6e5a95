import Glibc

/// What changed among the entries of some folders since last asked, as inotify reports it:
/// names made, moved in or out, removed, or closed after writing (not each write: a session's
/// own appends would fill the queue). Never waits; folders made in a watched one are watched
/// once `watch` is asked for them.
public final class DirectoryWatch {
    /// A name in a watched folder that changed.
    public struct Change: Sendable {
        public let folder: String
        public let name: String
        /// True when it names a folder that was made or moved in.
        public let isNewFolder: Bool
    }

    private let fd: Int32
    private var folders: [Int32: String] = [:]
    private static let events = UInt32(IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE)
        | UInt32(IN_ONLYDIR) | UInt32(IN_DONT_FOLLOW)

    /// A watch of `folders`; nil where inotify is not to be had (no watches left, say).
    public init?(folders paths: [String]) {
        fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        for path in paths { watch(path) }
    }

    deinit { close(fd) }

    /// Watches one more folder; false when it cannot be.
    @discardableResult
    public func watch(_ path: String) -> Bool {
        let wd = inotify_add_watch(fd, path, Self.events)
        guard wd >= 0 else { return false }
        folders[wd] = path
        return true
    }

    /// Every change reported since the last call; `overflowed` when the kernel dropped some
    /// (then anything may have changed).
    public func takeChanges() -> (changes: [Change], overflowed: Bool) {
        var changes: [Change] = []
        var overflowed = false
        let size = 64 << 10
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 8)
        defer { buffer.deallocate() }
        let header = MemoryLayout<inotify_event>.size
        while true {
            let n = read(fd, buffer, size)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            var offset = 0
            while offset + header <= n {
                let event = buffer.loadUnaligned(fromByteOffset: offset, as: inotify_event.self)
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 { overflowed = true }
                if event.len > 0, let folder = folders[event.wd] {
                    let bytes = UnsafeRawBufferPointer(start: buffer + offset + header, count: Int(event.len))
                    let name = String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                    let made = event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 && event.mask & UInt32(IN_ISDIR) != 0
                    changes.append(Change(folder: folder, name: name, isNewFolder: made))
                }
                offset += header + Int(event.len)
            }
        }
        return (changes, overflowed)
    }
}

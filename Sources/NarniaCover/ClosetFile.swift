import Foundation
import NarniaLanguage
import Glibc

/// Where the Wardrobe keeps its garments, and how: plain JSON at
/// `${XDG_DATA_HOME:-$HOME/.local/share}/wardrobe/closet.json`, replaced whole on each change
/// (written beside it, synced, renamed). It holds nothing but garments.
public struct ClosetFile: Sendable {
    /// The path of `closet.json`.
    public let path: String

    public init(path: String) { self.path = path }

    /// The closet's place under the user's data folder (`$XDG_DATA_HOME`, or
    /// `$HOME/.local/share`: the launcher decides, and refuses to guess with neither).
    public static func location(inDataHome dataHome: String) -> ClosetFile {
        ClosetFile(path: dataHome + "/wardrobe/closet.json")
    }

    /// Whether the file (or anything at its path) exists.
    public var exists: Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// The closet in the file; an empty closet when there is no file.
    /// - Throws: `CommandFailure` when the file cannot be read or is not a closet.
    public func load() throws -> Closet {
        guard exists else { return Closet() }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure("cannot read \(path)")
        }
        do { return try Closet(decoding: data) } catch {
            throw CommandFailure("\(path) is not a closet file")
        }
    }

    /// Sets an unreadable file aside as `closet.json.unreadable` (`.unreadable-2`, … when one
    /// is there already: review CI-3, a second one replaced the first, which the warning had
    /// said was kept), so that saving does not lose it.
    public func setAside() -> String? {
        for n in 1...1000 {
            let aside = path + (n == 1 ? ".unreadable" : ".unreadable-\(n)")
            // A hard link never replaces a file; where there are none (FAT), a rename to a name
            // seen free.
            if link(path, aside) == 0 {
                unlink(path)
                return aside
            }
            if errno == EEXIST { continue }
            var st = stat()
            if lstat(aside, &st) == 0 { continue }
            return rename(path, aside) == 0 ? aside : nil
        }
        return nil
    }

    /// The folder holding `closet.json`.
    private var directory: String {
        // By scalar, as every path is split (a name may begin with a combining mark).
        String(path.unicodeScalars[..<(path.unicodeScalars.lastIndex(of: "/") ?? path.unicodeScalars.startIndex)])
    }

    /// Runs `body` holding an exclusive `flock` on the closet's folder (made if missing), so
    /// that Wardrobes open at once change the file one after another (review CU-2). While
    /// another holds it, `interrupted` is asked every 50 ms (review CZ-6: Ctrl-C meanwhile was
    /// ignored, and the change made once the lock came free).
    /// - Throws: `CommandFailure` when the folder cannot be made or opened, `Interrupted`, or
    ///   what `body` throws.
    public func whileLocked<T>(interrupted: () -> Bool = { false }, _ body: () throws -> T) throws -> T {
        if !directory.isEmpty { try makeDirectories(directory) }
        let fd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw failure(directory) }
        defer { close(fd) }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else { throw failure(directory) }
            if interrupted() { throw Interrupted() }
            usleep(50_000)
        }
        return try body()
    }

    /// Writes the closet: a temporary file beside `closet.json`, synced, then renamed over it.
    /// - Throws: `CommandFailure` naming the path and the system's reason.
    public func save(_ closet: Closet) throws {
        if !directory.isEmpty { try makeDirectories(directory) }
        let data = try closet.encoded() + Data("\n".utf8)
        // A new file of a name nobody can foresee, never through a link: a link planted at a
        // fixed name (`closet.json.new`) had the save overwrite the file it points to, and two
        // Wardrobes saving at once wrote into one file.
        let temporary = path + ".new-" + String(UInt64.random(in: .min ... .max), radix: 16)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failure(path) }
        var ok = data.withUnsafeBytes { buffer -> Bool in
            var done = 0
            while done < buffer.count {
                let n = write(fd, buffer.baseAddress! + done, buffer.count - done)
                if n < 0 { if errno == EINTR { continue }; return false }
                done += n
            }
            return true
        }
        ok = ok && fsync(fd) == 0
        let saved = errno
        close(fd)
        // Named by the closet's own path: the temporary name means nothing to the user (review CZ-5).
        guard ok else { unlink(temporary); errno = saved; throw failure(path) }
        guard rename(temporary, path) == 0 else { let e = failure(path); unlink(temporary); throw e }
        let dfd = open(directory.isEmpty ? "." : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dfd >= 0 { _ = fsync(dfd); close(dfd) }
    }

    private func makeDirectories(_ directory: String) throws {
        var current = directory.unicodeScalars.first == "/" ? "" : "."
        for part in directory.unicodeScalars.split(separator: "/") {
            current += "/" + String(String.UnicodeScalarView(part))
            if mkdir(current, 0o700) != 0 && errno != EEXIST { throw failure(current) }
        }
    }

    private func failure(_ where_: String) -> CommandFailure {
        CommandFailure("cannot save the closet at \(where_): \(String(cString: strerror(errno)))")
    }
}

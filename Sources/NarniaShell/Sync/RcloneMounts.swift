import NarniaSystem

/// The rclone mounts of this machine (`rclone mount`: FUSE file systems of type `fuse.rclone`),
/// read from `/proc/self/mountinfo`, whose source field is the remote mounted (`name:path`,
/// after rclone resolved any alias). A folder below one is a remote reached by another path,
/// and the mount may cache listings (`--dir-cache-time`), hiding the probe file `sync` puts at
/// the store's top (review AL): the folder is followed to the remote behind it.
enum RcloneMounts {
    struct Mount: Equatable {
        /// Where it is mounted (an absolute path).
        let point: String
        /// The remote it mounts, as rclone spells it.
        let source: String
    }

    /// The rclone mounts listed in `mountinfo` (the text of `/proc/self/mountinfo`).
    static func parse(_ mountinfo: String) -> [Mount] {
        mountinfo.split(separator: "\n").compactMap { line in
            // ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER-OPTIONS
            let fields = line.split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count > 4, let dash = fields.firstIndex(of: "-"), dash + 2 < fields.count,
                  fields[dash + 1] == "fuse.rclone" else { return nil }
            return Mount(point: unescape(fields[4]), source: unescape(fields[dash + 2]))
        }
    }

    /// The mounts of this machine now; none where `/proc` cannot be read.
    static func current() -> [Mount] {
        guard let fd = try? FileDescriptor.open("/proc/self/mountinfo", .readOnly),
              let bytes = try? fd.readToEnd(limit: 1 << 22) else { return [] }
        return parse(String(decoding: bytes, as: UTF8.self))
    }

    /// The remote that reaches the absolute `path` through the innermost rclone mount holding
    /// it, with the path below the mount point joined to its source; nil when no mount holds it.
    static func remote(reaching path: String, mounts: [Mount]) -> String? {
        // Compared byte for byte: a mount point holding a non-ASCII or combining character is
        // cut by bytes below, never by Characters (review BH-8).
        let holding = mounts.filter { path == $0.point || path.utf8.starts(with: ($0.point == "/" ? "/" : $0.point + "/").utf8) }
        guard let mount = holding.max(by: { $0.point.utf8.count < $1.point.utf8.count }),
              let source = RcloneRemote(mount.source) else { return nil }
        return source.joining(String(decoding: path.utf8.dropFirst(mount.point.utf8.count), as: UTF8.self))
    }

    /// A mount table field with `\040`, `\011`, `\012` and `\134` (space, tab, newline,
    /// backslash) as the characters they stand for.
    private static func unescape(_ field: Substring) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(field.utf8)[...]
        while let first = utf8.first {
            if first == UInt8(ascii: "\\"), utf8.count >= 4,
               let code = UInt8(String(decoding: utf8.dropFirst().prefix(3), as: UTF8.self), radix: 8) {
                bytes.append(code)
                utf8 = utf8.dropFirst(4)
            } else {
                bytes.append(first)
                utf8 = utf8.dropFirst()
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

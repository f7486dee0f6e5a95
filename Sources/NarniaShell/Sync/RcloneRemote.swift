import Foundation

/// A remote as rclone reads it (`fs/fspath.Parse`, rclone 1.60): a local path, or a backend —
/// configured (`name:`) or on the fly (`:backend:`) — with options in the connection string
/// (`name,option=value,…:`; a value quoted with `'` or `"` only at its start, a doubled quote
/// standing for one) and the path after the `:`. A `:` after a `/` or `\` is part of a local
/// path (`backups/2024:01`).
struct RcloneRemote: Equatable {
    /// Nil for a local path; `name` for a configured remote, `:backend` for one on the fly.
    let name: String?
    /// What comes before the path's `:`, options included; nil for a local path.
    let configString: String?
    let options: [String: String]
    let path: String

    /// Nil when rclone refuses `text` (an empty one, a name of other characters, an unclosed
    /// quote…): it then reaches nothing.
    init?(_ text: String) {
        let s = Array(text.unicodeScalars)
        guard !s.isEmpty else { return nil }
        guard s.contains(":") else {
            (name, configString, options, path) = (nil, nil, [:], text)
            return
        }
        func string(_ range: Range<Int>) -> String { String(String.UnicodeScalarView(s[range])) }
        enum State { case name, parameter, value, quoted, afterQuote }
        var state = State.name, start = 0, quote: Unicode.Scalar = "'", doubled = false
        var name = "", parameter = "", options: [String: String] = [:]
        var end: Int?
        scan: for (i, c) in s.enumerated() {
            switch state {
            case .name:
                if i == 0 && c == ":" { continue }
                if c == "/" || c == "\\" {
                    // Before any `:` or `,`: a local path, unless it began as a backend's name.
                    guard s[0] != ":" else { return nil }
                    (self.name, configString, self.options, path) = (nil, nil, [:], text)
                    return
                }
                guard c == ":" || c == "," else { continue }
                name = string(0..<i)
                guard Self.isValidName(name) else { return nil }
                start = i + 1
                if c == ":" { end = i; break scan }
                state = .parameter
            case .parameter:
                if c == ":" || c == "," || c == "=" {
                    parameter = string(start..<i)
                    guard !parameter.isEmpty else { return nil }
                    start = i + 1
                    if c == "=" { state = .value; continue }
                    options[parameter] = "true"
                    if c == ":" { end = i; break scan }
                } else if !(("0"..."9").contains(c) || ("a"..."z").contains(c) || ("A"..."Z").contains(c) || c == "_") {
                    return nil
                }
            case .value:
                if (c == "'" || c == "\"") && i == start {
                    (quote, state, start, doubled) = (c, .quoted, i + 1, false)
                } else if c == ":" || c == "," {
                    options[parameter] = string(start..<i)
                    start = i + 1
                    if c == ":" { end = i; break scan }
                    state = .parameter
                }
            case .quoted:
                if c == quote { state = .afterQuote }
            case .afterQuote:
                if c == ":" || c == "," {
                    let q = String(quote)
                    let value = string(start..<(i - 1))
                    options[parameter] = doubled ? value.replacingOccurrences(of: q + q, with: q) : value
                    start = i + 1
                    if c == ":" { end = i; break scan }
                    state = .parameter
                } else if c == quote {
                    (state, doubled) = (.quoted, true)
                } else {
                    return nil
                }
            }
        }
        guard let end else { return nil }
        (self.name, configString, self.options, path) = (name, string(0..<end), options, string((end + 1)..<s.count))
    }

    /// A configured name (`:?[\w_ .-]+` as rclone 1.60 has it), or `:` and one for a backend.
    private static func isValidName(_ name: String) -> Bool {
        let body = name.hasPrefix(":") ? name.dropFirst() : Substring(name)
        return !body.isEmpty && body.unicodeScalars.allSatisfy { c in
            c.isASCII && (("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || " _.-".unicodeScalars.contains(c))
        }
    }

    /// `path` under this remote as rclone's `JoinRootPath` makes it (the alias backend's
    /// target and its own path): joined and cleaned, the connection string kept.
    func joining(_ subpath: String) -> String {
        guard !subpath.isEmpty else { return (configString.map { $0 + ":" } ?? "") + path }
        // The subpath cannot climb out of the remote: `..` stops at its root.
        var inside = Self.clean("/" + subpath)
        if !subpath.hasPrefix("/") { inside.removeFirst() }
        let joined = Self.clean(path.isEmpty ? inside : path + "/" + inside)
        guard let configString else { return joined }
        return configString + ":" + (joined == "." ? "" : joined)
    }

    /// Go's `path.Clean`: `.` and `..` resolved as text, repeated `/` made one.
    static func clean(_ path: String) -> String {
        let absolute = path.hasPrefix("/")
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) where part != "." {
            if part == ".." {
                if let last = parts.last, last != ".." { parts.removeLast() } else if !absolute { parts.append(part) }
            } else {
                parts.append(part)
            }
        }
        let body = parts.joined(separator: "/")
        return absolute ? "/" + body : (body.isEmpty ? "." : body)
    }

    /// A folder on this machine that a remote reaches through rclone's local backend.
    struct Folder: Equatable {
        let path: String
        /// False when the remote's files go somewhere below `path` under names rclone makes
        /// (a crypt remote's path is encrypted): only `path` is known to hold them.
        var exact = true
        /// False when files sent there are stored under other names (`crypt`), or split or
        /// renamed (`chunker`, `compress`).
        var namesKept = true
    }

    /// The folder on this machine that `remote` reaches through rclone's local backend: a
    /// local path; `:local:`; a remote of type local; or one that wraps another, keeping its
    /// folders (an alias, `hasher`, `chunker`, `compress`, `cache`, and `crypt` when it leaves
    /// folder names plain: `directory_name_encryption = false` or `filename_encryption = off`),
    /// or naming them anew (any other `crypt`: then inexact, below the folder it wraps) —
    /// configured or on the fly (`:alias,remote=…:`), followed a few levels deep. A setting is
    /// taken as rclone 1.60 takes it: the connection string's, else the environment's for that
    /// remote (`RCLONE_CONFIG_NAME_REMOTE`, the name as it is), else the environment's for the
    /// backend (`RCLONE_ALIAS_REMOTE`), else `section`'s (the user's config file; review AP).
    /// An empty path is the current folder. Nil for any other remote (`union` and `combine`,
    /// of several folders, among them).
    static func localFolder(of remote: String, section: (String) -> [String: String]?,
                            environment: [String: String] = ProcessInfo.processInfo.environment) -> Folder? {
        var text = remote
        var exact = true, namesKept = true
        for _ in 0..<8 {
            guard let parsed = RcloneRemote(text) else { return nil }
            guard let name = parsed.name else { return Folder(path: parsed.path, exact: exact, namesKept: namesKept) }
            let onTheFly = name.hasPrefix(":")
            let file = onTheFly ? [:] : section(name)
            func named(_ key: String) -> String? { environment["RCLONE_CONFIG_\(name.uppercased())_\(key.uppercased())"] }
            guard let type = onTheFly ? String(name.dropFirst()) : parsed.options["type"] ?? named("type") ?? file?["type"] else { return nil }
            func option(_ key: String) -> String? {
                parsed.options[key] ?? (onTheFly ? nil : named(key)) ?? environment["RCLONE_\(type.uppercased())_\(key.uppercased())"] ?? file?[key]
            }
            switch type {
            case "local":
                return Folder(path: parsed.path.isEmpty ? "." : parsed.path, exact: exact, namesKept: namesKept)
            case "alias", "hasher", "chunker", "compress", "cache", "crypt":
                guard let target = option("remote"), let wrapped = RcloneRemote(target) else { return nil }
                if ["chunker", "compress", "crypt"].contains(type) { namesKept = false }
                let plainFolders = option("directory_name_encryption").map { ["false", "f", "0"].contains($0.lowercased()) } == true
                    || option("filename_encryption")?.lowercased() == "off"
                if type == "crypt" && !plainFolders {
                    exact = exact && parsed.path.isEmpty
                    text = wrapped.joining("")
                } else {
                    text = wrapped.joining(parsed.path)
                }
            default:
                return nil
            }
        }
        return nil
    }
}

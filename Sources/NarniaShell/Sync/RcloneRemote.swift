import Foundation
import NarniaSystem

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
    private(set) var path: String

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
        if subpath.unicodeScalars.first != "/" { inside.removeFirst() }
        let joined = Self.clean(path.isEmpty ? inside : path + "/" + inside)
        guard let configString else { return joined }
        return configString + ":" + (joined == "." ? "" : joined)
    }

    /// Go's `path.Clean`: `.` and `..` resolved as text, repeated `/` made one.
    static func clean(_ path: String) -> String {
        let absolute = path.unicodeScalars.first == "/"
        var parts: [String] = []
        for part in path.pathComponents where part != "." {
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
        var path: String
        /// False when the remote's files go somewhere below `path` under names rclone makes
        /// (a crypt remote's path is encrypted, a combine remote's root holds its upstreams):
        /// only `path` is known to hold them.
        var exact = true
        /// False when files sent there are stored under other names (`crypt`), or split or
        /// renamed (`chunker`, `compress`).
        var namesKept = true
        /// False when each file sent goes to some of several folders (a `union`'s upstreams,
        /// as its create policy chooses): a file sent may be in another.
        var receivesAll = true
    }

    /// The folders on this machine that `remote` reaches through rclone's local backend: a
    /// local path; `:local:`; a remote of type local; one that wraps another, keeping its
    /// folders (an alias, `hasher`, `chunker`, `compress`, `cache`, and `crypt` when it leaves
    /// folder names plain: `directory_name_encryption = false` or `filename_encryption = off`),
    /// or naming them anew (any other `crypt`: then inexact, below the folder it wraps); a
    /// `union`'s upstreams (each joined with the union's path; one read only, `:ro`, inexact:
    /// nothing is put there), or the `combine` upstream its path's first folder names (every
    /// upstream for its root: one named like a shard folder receives a shard's files) —
    /// configured or on the fly (`:alias,remote=…:`). A setting is taken as rclone 1.60 takes
    /// it: the connection string's, else the environment's for that remote
    /// (`RCLONE_CONFIG_NAME_REMOTE`, the name as it is), else the environment's for the backend
    /// (`RCLONE_ALIAS_REMOTE`), else `section`'s (the user's config file; review AP). An empty
    /// path is the current folder. None for any other remote, and for one rclone refuses; nil
    /// for one that leads further than `Self.followed` remotes, deep or in all: where it
    /// reaches is not known (review AT).
    static func localFolders(of remote: String, section: (String) -> [String: String]?,
                             environment: [String: String] = ProcessInfo.processInfo.environment) -> [Folder]? {
        var steps = 0, followedAll = true
        func follow(_ text: String, _ reach: Folder, depth: Int) -> [Folder] {
            steps += 1
            guard depth < followed.deep, steps <= followed.inAll else {
                followedAll = false
                return []
            }
            guard let parsed = RcloneRemote(text) else { return [] }
            var reach = reach
            guard let name = parsed.name else {
                reach.path = parsed.path
                return [reach]
            }
            let onTheFly = name.hasPrefix(":")
            let file = onTheFly ? [:] : section(name)
            func named(_ key: String) -> String? { environment["RCLONE_CONFIG_\(name.uppercased())_\(key.uppercased())"] }
            guard let type = onTheFly ? String(name.dropFirst()) : parsed.options["type"] ?? named("type") ?? file?["type"] else { return [] }
            func option(_ key: String) -> String? {
                parsed.options[key] ?? (onTheFly ? nil : named(key)) ?? environment["RCLONE_\(type.uppercased())_\(key.uppercased())"] ?? file?[key]
            }
            switch type {
            case "local":
                reach.path = parsed.path.isEmpty ? "." : parsed.path
                return [reach]
            case "alias", "hasher", "chunker", "compress", "cache", "crypt":
                guard let target = option("remote"), let wrapped = RcloneRemote(target) else { return [] }
                if ["chunker", "compress", "crypt"].contains(type) { reach.namesKept = false }
                let plainFolders = option("directory_name_encryption").map { ["false", "f", "0"].contains($0.lowercased()) } == true
                    || option("filename_encryption")?.lowercased() == "off"
                if type == "crypt" && !plainFolders {
                    reach.exact = reach.exact && parsed.path.isEmpty
                    return follow(wrapped.joining(""), reach, depth: depth + 1)
                }
                return follow(wrapped.joining(parsed.path), reach, depth: depth + 1)
            case "union":
                // `remotes`, the older setting, when `upstreams` is not set.
                guard let upstreams = (option("upstreams").flatMap { $0.isEmpty ? nil : $0 } ?? option("remotes")).flatMap(spaceSeparatedList),
                      upstreams.count > 1 else { return [] }
                reach.receivesAll = false
                return upstreams.flatMap { upstream -> [Folder] in
                    guard let upstream = RcloneRemote(upstream) else { return [] }
                    return upstream.unionUpstreams.flatMap { untagged, readOnly in
                        var reach = reach
                        if readOnly { reach.exact = false }
                        return follow(untagged.joining(parsed.path), reach, depth: depth + 1)
                    }
                }
            case "combine":
                guard let upstreams = option("upstreams").flatMap(spaceSeparatedList) else { return [] }
                let mounted = upstreams.compactMap { upstream -> (folder: Substring, remote: Substring)? in
                    guard let equal = upstream.firstIndex(of: "=") else { return nil }
                    return (upstream[..<equal], upstream[upstream.index(after: equal)...])
                }
                let inside = clean("/" + parsed.path).split(separator: "/", maxSplits: 1)
                guard let first = inside.first else {
                    reach.receivesAll = false
                    return mounted.flatMap { follow(String($0.remote), reach, depth: depth + 1) }
                }
                guard let upstream = mounted.first(where: { $0.folder == first }), let wrapped = RcloneRemote(String(upstream.remote)) else { return [] }
                return follow(wrapped.joining(inside.count > 1 ? String(inside[1]) : ""), reach, depth: depth + 1)
            default:
                return []
            }
        }
        let folders = follow(remote, Folder(path: ""), depth: 0)
        return followedAll ? folders : nil
    }

    /// How far `localFolders` follows a remote: remotes deep, and in all (a union branches).
    /// rclone itself refuses a remote that reaches itself.
    static let followed = (deep: 16, inAll: 256)

    /// The remote this union upstream names, without the `:ro` or `:nc` its path may end in
    /// (rclone's `union/upstream.New`), and whether it is read only. `:writeback` is a tag
    /// from rclone 1.63 on, part of the folder's name before: both are given.
    private var unionUpstreams: [(RcloneRemote, readOnly: Bool)] {
        func untagged(_ tag: String) -> RcloneRemote {
            var untagged = self
            untagged.path = String(path.dropLast(tag.count))
            return untagged
        }
        if path.hasSuffix(":ro") { return [(untagged(":ro"), true)] }
        if path.hasSuffix(":nc") { return [(untagged(":nc"), false)] }
        if path.hasSuffix(":writeback") { return [(self, false), (untagged(":writeback"), false)] }
        return [(self, false)]
    }

    /// rclone's `SpaceSepList`, the first line of a CSV text with spaces between its words
    /// (Go's `encoding/csv`): a word in `"` may hold spaces and line ends (`""` in it for one
    /// `"`), empty lines before the first are skipped, and the rest is not read (review AT).
    /// Nil where rclone refuses it (a `"` inside a word, or an unclosed one).
    static func spaceSeparatedList(_ text: String) -> [String]? {
        var words: [String] = [], word = "", quoted = false, wasQuoted = false
        var chars = text.replacingOccurrences(of: "\r\n", with: "\n").drop(while: { $0 == "\n" }).makeIterator()
        var next = chars.next()
        while let c = next {
            next = chars.next()
            if quoted {
                if c != "\"" { word.append(c) } else if next == "\"" { word.append(c); next = chars.next() } else { quoted = false }
            } else if c == "\n" {
                break
            } else if c == " " {
                if !word.isEmpty || wasQuoted { words.append(word) }
                (word, wasQuoted) = ("", false)
            } else if c == "\"" {
                guard word.isEmpty && !wasQuoted else { return nil }
                (quoted, wasQuoted) = (true, true)
            } else {
                guard !wasQuoted else { return nil }
                word.append(c)
            }
        }
        guard !quoted else { return nil }
        if !word.isEmpty || wasQuoted { words.append(word) }
        return words
    }
}

import NarniaLanguage
import Foundation
import Glibc
import NarniaStore
import NarniaSystem

/// Runs the rclone binary (Debian package `rclone`) for `sync`: nothing secret is given to it,
/// since every store file is encrypted already. It runs in its own process group, so that
/// Ctrl-C reaches the shell, which then stops it; `panic` kills it like any helper.
struct Rclone {
    let path: String
    /// The settings of `ignoredSettings` set in this process's environment, read once: each
    /// run removes them from rclone's environment, and `sync` names them.
    let withheldSettings = Rclone.ignoredSettings()
    /// Whether rclone runs with an empty config in memory (`findsNoConfigFile`).
    private var inMemoryConfig = false
    /// Called with the bytes transferred so far by the running command.
    var progress: ((UInt64) -> Void)?
    /// Polled while rclone runs; true stops it.
    var isCancelled: () -> Bool = { false }

    /// The rclone binary from `PATH`.
    /// - Throws: `CommandFailure` naming the package when it is missing.
    static func find() throws -> Rclone {
        guard let path = Job.which("rclone") else {
            throw CommandFailure("rclone is not installed", hint: "install the Debian package: sudo apt-get install rclone")
        }
        var rclone = Rclone(path: path)
        rclone.inMemoryConfig = findsNoConfigFile(binary: path)
        return rclone
    }

    /// True when rclone would find no config file of the user's: rclone then makes
    /// `~/.config/rclone` on its first run, a trace left in a home that never used it (review
    /// AQ), so it is run with an empty config in memory (`RCLONE_CONFIG` set empty, as
    /// `--config ""`, leaving its command line as it was; remotes of the environment still work). The places rclone 1.60 looks (`fs/config.makeConfigPath`):
    /// `RCLONE_CONFIG`, `rclone.conf` beside its binary, the XDG config folder's or
    /// `~/.config/rclone/rclone.conf`, and `~/.rclone.conf`.
    private static func findsNoConfigFile(binary: String) -> Bool {
        let environment = ProcessInfo.processInfo.environment
        guard environment["RCLONE_CONFIG"] == nil else { return false }
        let home = environment["HOME"] ?? ""
        let configHome = environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? home + "/.config"
        let places = [FileSystem.parentDirectory(of: binary) + "/rclone.conf", configHome + "/rclone/rclone.conf",
                      home + "/.config/rclone/rclone.conf", home + "/.rclone.conf"]
        return places.allSatisfy { (try? FileSystem.lstatIfExists($0)) == nil }
    }

    /// rclone settings from the environment that would change which store files are listed,
    /// copied, replaced or deleted, or what a run prints or exits with (filters,
    /// `--dirs-only`, `--ignore-existing`, `--dry-run`, `--max-delete`, `--backup-dir`,
    /// following links, name encodings, `--progress`, log levels and formats…): `sync` must see
    /// and send every store file as it is, and read what rclone says. Backend settings (`RCLONE_CONFIG`, `RCLONE_S3_…`), bandwidth and
    /// transfer counts pass.
    static func ignoredSettings(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> [String] {
        environment.keys.filter { name in
            guard name.hasPrefix("RCLONE_") else { return false }
            let setting = name.dropFirst("RCLONE_".count)
            return ignoredSettingPrefixes.contains { setting.hasPrefix($0) } || ignoredSettingNames.contains(String(setting))
        }.sorted()
    }

    private static let ignoredSettingPrefixes = ["INCLUDE", "EXCLUDE", "FILTER", "FILES_FROM", "METADATA_INCLUDE", "METADATA_EXCLUDE", "METADATA_FILTER"]
    private static let ignoredSettingNames: Set<String> = [
        "DRY_RUN", "INTERACTIVE", "I", "IGNORE_EXISTING", "IMMUTABLE", "IGNORE_ERRORS", "IGNORE_SIZE", "UPDATE",
        "MIN_SIZE", "MAX_SIZE", "MIN_AGE", "MAX_AGE", "MAX_DEPTH", "IGNORE_CASE", "DELETE_EXCLUDED",
        "MAX_TRANSFER", "MAX_DURATION", "CUTOFF_MODE", "LINKS", "L", "COPY_LINKS", "SKIP_LINKS", "ONE_FILE_SYSTEM",
        "LOCAL_UNICODE_NORMALIZATION", "LOCAL_ENCODING", "LOCAL_LINKS", "LOCAL_COPY_LINKS", "LOCAL_SKIP_LINKS",
        "DIRS_ONLY", "HASH_FILTER", "MAX_DELETE", "MAX_DELETE_SIZE", "BACKUP_DIR", "SUFFIX", "SUFFIX_KEEP_EXTENSION",
        "COMPARE_DEST", "COPY_DEST", "ERROR_ON_NO_TRANSFER", "PROGRESS", "P", "STAT", "RETRIES", "DISCARD",
        // `rclone check` compares journals by hash (review CX-2: by size only, a journal that
        // rotted there went unseen).
        "SIZE_ONLY",
        // What rclone logs, and how: `sync` reads its notices (a link it did not follow, review
        // CG-6: hidden, a linked shard folder went unseen, and a longer journal there was
        // replaced by an older one) and its errors (the reason a run failed).
        "LOG_LEVEL", "QUIET", "Q", "VERBOSE", "V", "LOG_FILE", "USE_JSON_LOG", "LOG_FORMAT", "LOG_SYSTEMD", "SYSLOG",
        "STATS_LOG_LEVEL", "STATS_ONE_LINE",
    ]

    /// `path` under `remote`: `name:` and `name:folder/` take it as it is. A `/` after a bare
    /// `name:` makes the path absolute for the local and sftp backends (the file system's
    /// root, not the remote's), which sent journals elsewhere than the objects (review AF).
    static func join(_ remote: String, _ path: String) -> String {
        remote.unicodeScalars.last == ":" || remote.endsWithSlash ? remote + path : remote + "/" + path
    }

    /// The settings of each remote in the user's rclone config file (`rclone config dump`),
    /// by name; none when it cannot be read. Read to tell a remote that reaches a folder here
    /// (`RcloneRemote.localFolders`, which reads the environment's settings itself).
    func configSections() -> [String: [String: String]] {
        guard let outcome = try? run(["config", "dump"]), outcome.status == 0,
              let dump = try? JSONSerialization.jsonObject(with: Data(outcome.output)) as? [String: Any] else { return [:] }
        return dump.compactMapValues { ($0 as? [String: Any])?.compactMapValues { $0 as? String } }
    }

    /// What one run gave.
    struct Outcome {
        var status: Int32
        var output: [UInt8]
        var errors: [String]
        var cancelled: Bool
    }

    /// Runs `rclone ARGUMENTS -- PATHS` and collects its standard output; standard error is
    /// read line by line for progress (JSON log lines) and kept for messages. The paths (remotes,
    /// folders, files) follow `--`: a folder named `-backup` is no option (review BC-4).
    func run(_ arguments: [String], paths: [String] = []) throws -> Outcome {
        let out = try Pipe(), err = try Pipe()
        let progressOptions = progress != nil ? ["--use-json-log", "--stats", "250ms", "--stats-log-level", "NOTICE"] : []
        var command = ChildCommand([path] + arguments + progressOptions + (paths.isEmpty ? [] : ["--"] + paths))
        for name in withheldSettings { command.environment[name] = .some(nil) }
        // Store files are named byte for byte: rclone would otherwise take two names that
        // differ only in Unicode normalisation for one file, and fetch or delete one of them.
        command.environment["RCLONE_NO_UNICODE_NORMALIZATION"] = "true"
        if inMemoryConfig { command.environment["RCLONE_CONFIG"] = "" }
        command.privateFiles = true   // a copy of the store (a local remote) is as private as the store
        command.standardInput = Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
        defer { if let fd = command.standardInput { close(fd) } }
        command.standardOutput = out.writeEnd
        command.standardError = err.writeEnd
        let job = Job(takeTerminal: false)
        do {
            try job.start(command)
        } catch let failure as SpawnFailure {
            throw CommandFailure("cannot start rclone: \(SystemError.reason(for: failure.code))")
        }
        out.closeWrite()
        err.closeWrite()
        var outcome = Outcome(status: 0, output: [], errors: [], cancelled: false)
        var pending: [UInt8] = []
        var fds = [pollfd(fd: out.readEnd, events: Int16(POLLIN), revents: 0), pollfd(fd: err.readEnd, events: Int16(POLLIN), revents: 0)]
        var open = 2
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while open > 0 {
            if isCancelled() && !outcome.cancelled {
                outcome.cancelled = true
                job.kill()
            }
            let ready = poll(&fds, nfds_t(fds.count), 200)
            if ready <= 0 { continue }
            for i in fds.indices where fds[i].fd >= 0 && fds[i].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(fds[i].fd, $0.baseAddress!, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    fds[i].fd = -1
                    open -= 1
                    continue
                }
                if i == 0 {
                    outcome.output += buffer[0..<n]
                } else {
                    pending += buffer[0..<n]
                    while let newline = pending.firstIndex(of: 10) {
                        let line = String(decoding: pending[..<newline], as: UTF8.self)
                        pending.removeSubrange(...newline)
                        take(line, into: &outcome)
                    }
                }
            }
        }
        if !pending.isEmpty { take(String(decoding: pending, as: UTF8.self), into: &outcome) }
        outcome.status = job.wait()
        return outcome
    }

    /// A line rclone wrote to standard error: a progress report, or a message worth keeping.
    private func take(_ line: String, into outcome: inout Outcome) {
        if line.hasPrefix("{"), let data = line.data(using: .utf8),
           let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] {
            if let stats = object["stats"] as? [String: Any], let bytes = stats["bytes"] as? NSNumber {
                progress?(bytes.uint64Value)
                return
            }
            if let level = object["level"] as? String, level == "error" || level == "critical", let message = object["msg"] as? String {
                outcome.errors.append(message)
            }
            return
        }
        let text = line.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty { outcome.errors.append(text) }
    }

    /// The store files of a remote (`rclone lsjson -R --files-only`, at its top and in its
    /// shard folders) by path (byte for byte: two
    /// names that differ only in Unicode normalisation are two files), with their sizes; an
    /// empty list for a remote that does not exist yet. rclone lists a name that is not UTF-8
    /// with U+FFFD for each byte it cannot read (the local backend), and others not as they
    /// are (`isMisread`), and cannot fetch them under the name listed: such paths are apart,
    /// in `misspelled`. `links` are the symbolic links it skipped.
    func list(_ remote: String) throws -> (files: [StorePath: Int64], misspelled: [String], links: [String]) {
        // Only where store files can be: the top and its shard folders. Other folders (a USB
        // disk's `lost+found`, another program's) are not read: one that cannot be read made
        // every sync fail (review AF), and a large one slowed each.
        let outcome = try run(["lsjson", "-R", "--files-only", "--no-modtime", "--no-mimetype",
                               "--include", "/*", "--include", "/[0-9a-f][0-9a-f]/*"], paths: [remote])
        if outcome.cancelled { throw Cancelled() }
        if outcome.status == 3 {
            // rclone: directory not found — the remote itself, which is new and empty, or a
            // folder in it that went while it was listed (review AF): then the listing is not
            // the remote's, and files sent on it would replace longer journals there.
            let top = try run(["lsjson", "--max-depth", "1", "--no-modtime", "--no-mimetype"], paths: [remote])
            if top.cancelled { throw Cancelled() }
            if top.status == 3 { return ([:], [], []) }
            throw CommandFailure("rclone could not list \(remote) (exit status 3): a folder in it went while it was listed (another program changing it?); nothing was sent, run sync again")
        }
        guard outcome.status == 0 else {
            // The likeliest slip: a remote's name that rclone's config does not have (review AS).
            if let name = RcloneRemote(remote)?.name, !name.hasPrefix(":"),
               outcome.errors.contains(where: { $0.hasSuffix("didn't find section in config file") }) {
                throw CommandFailure("\(remote): rclone's config has no remote named \(name); nothing was sent",
                                     hint: "'rclone listremotes' names those there are, 'rclone config' makes one; a folder whose name holds ':' is written ./\(remote)")
            }
            throw failure("list \(remote)", outcome)
        }
        let entries = try Self.entries(listed: outcome, of: remote)
        var files: [StorePath: Int64] = [:]
        var misspelled: [String] = []
        for entry in entries {
            guard let path = entry["Path"] as? String, let size = entry["Size"] as? NSNumber else { continue }
            if path.unicodeScalars.contains(where: Self.isMisread) { misspelled.append(path) } else { files[StorePath(path)] = size.int64Value }
        }
        return (files, misspelled, Self.skippedLinks(in: outcome.errors))
    }

    /// The names at the top of `remote`, a folder's with `/` after it; none when it is not there.
    func topNames(_ remote: String) throws -> [String] {
        let outcome = try run(["lsjson", "--max-depth", "1", "--no-modtime", "--no-mimetype"], paths: [remote])
        if outcome.cancelled { throw Cancelled() }
        if outcome.status == 3 { return [] }
        guard outcome.status == 0 else { throw failure("list \(remote)", outcome) }
        let entries = try Self.entries(listed: outcome, of: remote)
        return entries.compactMap { entry in
            (entry["Path"] as? String).map { $0 + (entry["IsDir"] as? Bool == true ? "/" : "") }
        }
    }

    /// The entries of an `lsjson` listing of `remote`.
    private static func entries(listed outcome: Outcome, of remote: String) throws -> [[String: Any]] {
        guard let entries = try? JSONSerialization.jsonObject(with: Data(outcome.output)) as? [[String: Any]] else {
            throw CommandFailure("rclone listed \(remote) in a form narnia does not read")
        }
        return entries
    }

    /// The paths of the symbolic links rclone said it skipped while listing (its notice
    /// `PATH: Can't follow symlink without -L/--copy-links`): a store file there that is a link
    /// is not listed, and would otherwise be missed without a word.
    private static func skippedLinks(in lines: [String]) -> [String] {
        let notice = ": Can't follow symlink without -L/--copy-links"
        return lines.compactMap { line in
            guard line.hasSuffix(notice), let start = line.range(of: "NOTICE: ") else { return nil }
            return String(line[start.upperBound...].dropLast(notice.count))
        }
    }

    /// A character rclone lists in place of another (its encodings): U+FFFD for a byte that is
    /// not UTF-8, a control picture (`␍`, U+2400–U+2421) for a control character, and `‛`,
    /// which quotes a character it would otherwise take for one of those (`a‛␍x` for `a␍x`).
    /// It fetches such a name, but the file arrives under the name on disk, not the one listed.
    private static func isMisread(_ c: Unicode.Scalar) -> Bool {
        c == "\u{FFFD}" || c == "\u{201B}" || (0x2400...0x2421).contains(c.value) || c.value < 0x20 || c.value == 0x7F
    }

    /// `count` bytes of a file on a remote from `offset` (`rclone cat --offset --count`).
    func bytes(of path: String, offset: Int64, count: Int) throws -> [UInt8] {
        let outcome = try run(["cat", "--offset", String(offset), "--count", String(count)], paths: [path])
        if outcome.cancelled { throw Cancelled() }
        guard outcome.status == 0 else { throw failure("read \(path)", outcome) }
        return outcome.output
    }

    /// Copies the files named in `paths` (relative to `source`) to the same places under
    /// `destination`, whatever is there (`rclone copy --files-from … --no-check-dest`).
    func copy(_ paths: [String], from source: String, to destination: String, listIn folder: String) throws -> Outcome {
        let list = folder + "/files-\(UInt32.random(in: 0...UInt32.max))"
        try FileDescriptor.open(list, .writeOnly, options: [.create, .exclusive]).writeAll(Array((paths.joined(separator: "\n") + "\n").utf8))
        defer { try? FileSystem.unlink(list, missingOK: true) }
        return try run(["copy", "--files-from-raw", list, "--no-check-dest", "--no-traverse"], paths: [source, destination])
    }

    /// Which of the files named in `paths` differ between `here` and `there`, told by a hash
    /// both sides have (`rclone check --one-way`, reading the files where a backend keeps no
    /// hash, as the local one); nil when they have none in common, and rclone compared sizes only.
    func differing(_ paths: [String], here: String, there: String, listIn folder: String) throws -> Set<String>? {
        let list = folder + "/check-\(UInt32.random(in: 0...UInt32.max))"
        try FileDescriptor.open(list, .writeOnly, options: [.create, .exclusive]).writeAll(Array((paths.joined(separator: "\n") + "\n").utf8))
        defer { try? FileSystem.unlink(list, missingOK: true) }
        let outcome = try run(["check", "--one-way", "--files-from-raw", list, "--combined", "-"], paths: [here, there])
        if outcome.cancelled { throw Cancelled() }
        let lines = String(decoding: outcome.output, as: UTF8.self).split(separator: "\n")
        let differ = Set(lines.filter { $0.hasPrefix("* ") }.map { String($0.dropFirst(2)) })
        // Status 1 with every file compared: differences found, which is the answer.
        guard outcome.status == 0 || (outcome.status == 1 && lines.allSatisfy { $0.hasPrefix("* ") || $0.hasPrefix("= ") }
                                      && lines.count == paths.count) else {
            throw failure("compare journals with \(there)", outcome)
        }
        if outcome.errors.contains(where: { $0.contains("No common hash found") }) { return nil }
        return differ
    }

    /// Copies one file to a path of another name (`rclone copyto`).
    func copy(file source: String, to destination: String) throws -> Outcome {
        try run(["copyto", "--no-check-dest"], paths: [source, destination])
    }

    /// Renames a file on a remote (`rclone moveto`: a rename where the remote has one).
    func move(_ source: String, to destination: String) throws -> Outcome {
        try run(["moveto"], paths: [source, destination])
    }

    /// Deletes the files named in `paths` under `remote` (`rclone delete --files-from`).
    func delete(_ paths: [String], in remote: String, listIn folder: String) throws -> Outcome {
        let list = folder + "/delete-\(UInt32.random(in: 0...UInt32.max))"
        try FileDescriptor.open(list, .writeOnly, options: [.create, .exclusive]).writeAll(Array((paths.joined(separator: "\n") + "\n").utf8))
        defer { try? FileSystem.unlink(list, missingOK: true) }
        return try run(["delete", "--files-from-raw", list], paths: [remote])
    }

    /// The error for a failed run: what rclone said last, its notices aside (`Config file …
    /// not found`, a link it skipped), which are no reason for the failure.
    func failure(_ what: String, _ outcome: Outcome) -> CommandFailure {
        let reason = outcome.errors.last { !$0.contains(" NOTICE: ") && !$0.contains(" INFO  : ") } ?? outcome.errors.last
        let said = reason.map { ": " + $0 } ?? ""
        return CommandFailure("rclone could not \(what) (exit status \(outcome.status))\(said)")
    }
}

import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaStore

/// `lcd`, `lpwd`, `lls`: the host side, as in sftp.
enum Host {
    static func lcd(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.count <= 1 else { throw CommandTable.tooManyArguments(for: "lcd") }
        let target: String
        if let word = a.operands.first {
            let paths = try s.expandHost(word)
            guard paths.count == 1 else { throw CommandFailure("\(word.text): names more than one folder") }
            target = paths[0]
        } else {
            guard let home = try environmentPath("HOME") else { throw CommandFailure("HOME is not set") }
            target = home
        }
        let before = FileSystem.currentDirectory()
        guard chdir(target) == 0 else { throw CommandFailure("\(target): \(SystemError.reason(for: errno))") }
        // Through a link, a folder whose real path is not UTF-8: read as text, it would name
        // another folder (review BD-4).
        if FileSystem.currentDirectoryIsUndecodable {
            _ = chdir(before ?? "/")
            throw CommandFailure("\(target): its real path is not valid UTF-8 (read as text, it would name another folder)")
        }
    }

    /// `lmkdir [-p] HOSTPATH...`: folders on the host, mode 0700 (they may receive exports).
    static func lmkdir(_ s: Session, _ a: ParsedArguments) throws {
        guard !a.operands.isEmpty else { throw CommandFailure("missing folder name", hint: CommandTable.usage(of: "lmkdir")) }
        for word in a.operands {
            for path in try s.expandHost(word) {
                if a.has("-p") {
                    try FileSystem.makeDirectories(path, mode: 0o700)
                } else if try FileSystem.lstatIfExists(path) != nil {
                    throw CommandFailure("\(path): already exists")
                } else {
                    let parent = FileSystem.parentDirectory(of: path)
                    if let reason = FileSystem.notAFolderReason(parent) {
                        throw CommandFailure("\(parent): \(reason)", hint: reason == "no such folder" ? "use lmkdir -p to create the parents too" : nil)
                    }
                    try FileSystem.makeDirectory(path, mode: 0o700)
                }
            }
        }
    }

    static func lpwd(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.isEmpty else { throw CommandTable.tooManyArguments(for: "lpwd") }
        s.out.line(s.out.name(try s.currentHostDirectory()))
    }

    /// `lls`: as ls(1) lists, the files named first, then each folder under a header when
    /// more than one path was named; a missing path is said and the rest listed (review AS).
    static func lls(_ s: Session, _ a: ParsedArguments) throws {
        let showHidden = a.has("-a"), long = a.has("-l")
        let words = a.operands.isEmpty ? [Word(quoted: ".")] : a.operands
        var files: [(String, stat)] = [], folders: [String] = []
        let failed = try s.forEachOperand(words, of: a.command) { word in
            for path in try s.expandHost(word) {
                guard let st = try FileSystem.statIfExists(path) else { throw CommandFailure("\(path): \(FileSystem.absenceReason(path))") }
                if st.isDirectory { folders.append(path) } else { files.append((path, st)) }
            }
        }
        if !files.isEmpty { printHostEntries(s, files, long: long) }
        let headers = files.count + folders.count + (failed ? 1 : 0) > 1
        for (i, path) in folders.enumerated() {
            if headers {
                if i > 0 || !files.isEmpty { s.out.line("") }
                s.out.line("\(s.out.name(path)):")
            }
            var entries: [(String, stat)] = []
            let listing = try FileSystem.listDirectoryCountingUndecodable(path)
            for name in listing.names.sorted(by: utf8Order) where showHidden || !name.hasPrefix(".") {
                if let cst = try FileSystem.lstatIfExists(path.appendingPathComponent(name)) { entries.append((name, cst)) }
            }
            // Names that are not UTF-8 cannot be shown as they are, nor imported: said, not hidden.
            for name in listing.undecodable.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                s.warning("lls", "\(path.appendingPathComponent(s.err.undecodableName(name))): the name is not valid UTF-8; not listed (rename it to import it)")
            }
            printHostEntries(s, entries, long: long)
        }
        if failed { throw Reported() }
    }

    /// Prints host `entries` (a name or path, and its status) as `lls` shows them.
    private static func printHostEntries(_ s: Session, _ entries: [(String, stat)], long: Bool) {
        if long {
            let sizes = entries.map { $0.1.isDirectory ? "-" : Formatting.size(UInt64($0.1.st_size), human: s.out.isTerminal) }
            let width = sizes.map(\.count).max() ?? 1
            for ((name, est), size) in zip(entries, sizes) {
                // What import does with it: a fifo, socket or device is skipped, as "special" (review EY-2).
                let type = est.isDirectory ? "folder  " : est.isSymbolicLink ? "link    " : est.isRegularFile ? "file    " : "special "
                let ns = est.modifiedNanoseconds
                // The date as `ls -l` gives it in the same place: coreutils' on a terminal.
                let date = s.out.isTerminal ? TerminalListing.coreutilsDate(ns, now: TerminalListing.now()) : Formatting.shortDate(ns)
                s.out.line("\(type) \(String(repeating: " ", count: width - size.count))\(size) \(date) \(s.out.name(name))")
            }
        } else if s.out.isTerminal {
            for line in layoutColumns(entries.map { terminalSafe($0.1.isDirectory ? $0.0 + "/" : $0.0) }, width: terminalWidth()) { s.out.line(line) }
        } else {
            for (name, _) in entries { s.out.line(s.out.name(name)) }
        }
    }
}

import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaStore

/// `lcd`, `lpwd`, `lls`: the host side, as in sftp.
enum Host {
    static func lcd(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.count <= 1 else { throw CommandFailure("takes one folder at most") }
        let target: String
        if let word = a.operands.first {
            let paths = try s.expandHost(word)
            guard paths.count == 1 else { throw CommandFailure("\(word.text): names more than one folder") }
            target = paths[0]
        } else {
            guard let home = getenv("HOME") else { throw CommandFailure("HOME is not set") }
            target = String(cString: home)
        }
        guard chdir(target) == 0 else { throw CommandFailure("\(target): \(SystemError.reason(for: errno))") }
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
                    guard FileSystem.isDirectory(FileSystem.parentDirectory(of: path)) else {
                        throw CommandFailure("\(FileSystem.parentDirectory(of: path)): no such folder", hint: "use lmkdir -p to create the parents too")
                    }
                    try FileSystem.makeDirectory(path, mode: 0o700)
                }
            }
        }
    }

    static func lpwd(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.isEmpty else { throw CommandFailure("takes no arguments") }
        s.out.line(s.out.name(s.currentHostDirectory()))
    }

    static func lls(_ s: Session, _ a: ParsedArguments) throws {
        let showHidden = a.has("-a"), long = a.has("-l")
        let words = a.operands.isEmpty ? [Word(quoted: ".")] : a.operands
        var paths: [String] = []
        for word in words { paths += try s.expandHost(word) }
        for (i, path) in paths.enumerated() {
            guard let st = try FileSystem.statIfExists(path) else { throw CommandFailure("\(path): no such file or folder") }
            var entries: [(String, stat)] = []
            if st.isDirectory {
                if paths.count > 1 { if i > 0 { s.out.line("") }; s.out.line("\(s.out.name(path)):") }
                let listing = try FileSystem.listDirectoryCountingUndecodable(path)
                for name in listing.names.sorted(by: utf8Order) where showHidden || !name.hasPrefix(".") {
                    if let cst = try FileSystem.lstatIfExists(s.hostJoin(path, name)) { entries.append((name, cst)) }
                }
                // Names that are not UTF-8 cannot be shown as they are, nor imported: said, not hidden.
                for name in listing.undecodable.sorted() {
                    // `name` already shows each byte that is not UTF-8 as \xHH (err.line escapes the rest).
                    s.warning("lls", "\(s.hostJoin(path, name)): the name is not valid UTF-8; not listed (rename it to import it)")
                }
            } else {
                entries.append((path, st))
            }
            if long {
                let sizes = entries.map { $0.1.isDirectory ? "-" : Formatting.size(UInt64($0.1.st_size), human: s.out.isTerminal) }
                let width = sizes.map(\.count).max() ?? 1
                for ((name, est), size) in zip(entries, sizes) {
                    let type = est.isDirectory ? "folder  " : est.isSymbolicLink ? "link    " : "file    "
                    let ns = Int64(est.st_mtim.tv_sec) * 1_000_000_000
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
}

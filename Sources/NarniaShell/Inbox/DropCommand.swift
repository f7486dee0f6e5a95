import Glibc
import NarniaLanguage
import NarniaStore
import NarniaSystem

/// `narnia [--vault DIR] drop [-v|-q] FILE...` and `drop - NAME`: adds files to the vault's
/// inbox without the passphrase (docs/FORMAT.md, "The inbox"). Messages and exit statuses are
/// those of `import`: a line per file in scripts (`dropped FILE`), a summary on a terminal,
/// every bad source reported and the others dropped (exit 1), usage errors exit 2, no vault 3.
/// `drop --show-key` prints the key drops are sealed to, to compare with `inbox-key`.
public struct DropCommand {
    let store: String
    let out = Output(fd: 1)
    let err = Output(fd: 2)

    /// The exit status once a signal stopped the drop: 130 for Ctrl-C, 128 + N for SIGTERM or
    /// SIGHUP, which the launcher's signal handling tells apart (review EZ-2: always 130).
    let stoppedStatus: () -> Int32

    public init(store: String, stoppedStatus: @escaping () -> Int32) {
        self.store = store
        self.stoppedStatus = stoppedStatus
    }

    public static let usage = "usage: narnia [--vault DIR] drop [-v|-q] FILE... | drop - NAME | drop --show-key"

    /// Runs the command with its arguments (those after `drop`) and returns the exit status.
    public func run(_ arguments: [String]) -> Int32 {
        var verbose = false, quiet = false, showKey = false
        var operands: [String] = []
        var flagsDone = false
        for arg in arguments {
            if !flagsDone && arg.hasPrefix("-") && arg != "-" {
                switch arg {
                case "--": flagsDone = true
                case "-v", "--verbose": verbose = true
                case "-q", "--quiet": quiet = true
                case "--show-key": showKey = true
                case "-h", "--help":
                    out.line(Self.usage)
                    out.flush()
                    return 0
                default: return usageError("unknown option \(arg)")
                }
            } else {
                operands.append(arg)
            }
        }
        if verbose && quiet { return usageError("-v and -q cannot both be given") }
        if showKey && !operands.isEmpty { return usageError("--show-key takes no files") }
        if !showKey && operands.isEmpty { return usageError("missing file") }
        if operands.first == "-" && operands.count != 2 { return usageError("drop - NAME takes one name") }
        let dropper: InboxDropper
        do {
            dropper = try InboxDropper(store: store)
        } catch VaultError.noVault(let dir) {
            return fail("no vault at \(err.name(dir))", status: 3)
        } catch {
            return fail(describe(error), status: 1)
        }
        if showKey {
            InboxKeyLines.print(dropper.recipientKey, on: out)
            out.flush()
            return 0
        }
        let report = TransferReport(out: out, verb: "dropped", verbose: verbose, quiet: quiet)
        var run = DropRun(dropper: dropper, report: report, err: err)
        if operands[0] == "-" {
            run.dropStandardInput(named: operands[1])
        } else {
            for path in operands {
                if Session.interruptRequested != 0 { break }
                run.drop(path)
            }
        }
        report.finish()
        out.flush()
        if Session.interruptRequested != 0 {
            // Said as the vault shell's commands say it: the status alone was easy to miss.
            err.line("narnia: drop: interrupted")
            err.flush()
            return stoppedStatus()
        }
        return run.failed ? 1 : 0
    }

    private func usageError(_ message: String) -> Int32 {
        err.line("narnia: error: drop: \(message)")
        err.line("narnia: hint: \(Self.usage)")
        err.flush()
        return 2
    }

    private func fail(_ message: String, status: Int32) -> Int32 {
        err.line("narnia: error: drop: \(message)")
        err.flush()
        return status
    }
}

/// One `drop` command's files: each host file is sealed as it is read; a folder is walked as
/// `import` walks it (`HostTreeVisitor`), and its files keep their paths relative to the
/// folder's parent.
struct DropRun: HostTreeVisitor {
    let verb = "drop"
    let dropper: InboxDropper
    let storeFolders: Set<HostFileIdentity>
    /// `drop` knows no key file (it only adds files; nothing of the host is removed).
    let storeMarker: String? = nil
    let report: TransferReport
    let err: Output
    private(set) var failed = false

    init(dropper: InboxDropper, report: TransferReport, err: Output) {
        self.dropper = dropper
        storeFolders = HostFileIdentity.storeFolders(of: dropper.store)
        self.report = report
        self.err = err
    }

    mutating func fail(_ message: String) {
        err.line("narnia: error: drop: \(message)")
        err.flush()
        failed = true
    }

    func warn(_ message: String) {
        err.line("narnia: warning: drop: \(message)")
        err.flush()
    }

    private var observer: TransferObserver { TransferObserver(isCancelled: { Session.interruptRequested != 0 }) }

    /// Drops the file or folder named on the command line (a link to one is followed there).
    mutating func drop(_ path: String) {
        let base = path.lastPathComponent ?? path
        do {
            let name = try ItemName.validated(base)
            guard let st = try FileSystem.statIfExists(path) else { throw CommandFailure("\(err.name(path)): \(FileSystem.absenceReason(path))") }
            if liesInStore(path) { throw CommandFailure("\(err.name(path)): not dropped: it is the vault's own store, or inside it") }
            if st.isDirectory {
                walkFolder(try FileDescriptor.open(path, .readOnly, options: .directory), display: path, name: name, in: "")
            } else {
                // Refused before it is opened: opening some devices acts (a tape rewinds).
                guard st.isRegularFile else { throw CommandFailure("\(err.name(path)): not a regular file") }
                let fd = try FileDescriptor.open(path, .readOnly, options: [.noControllingTerminal, .nonBlocking])
                dropFile(fd, display: path, relative: name)
            }
        } catch let e as NameError {
            fail("\(err.name(path)): \(e.description)")
        } catch {
            fail(describe(error))
        }
    }

    /// `drop - NAME`: standard input, to its end.
    mutating func dropStandardInput(named name: String) {
        do {
            let valid = try ItemName.validated(name)
            let input = try StandardInputSource()
            let size = try dropper.drop(path: valid, modified: SystemClock.nowNanoseconds(),
                                        source: { try input.read(into: $0, count: $1) }, observer: observer)
            report.done(bytes: size, "dropped - as \(report.outName(valid))")
        } catch let e as NameError {
            fail("\(nameInMessage(err.name(name))): \(e.description)")
        } catch is Cancelled {
            return
        } catch let e as SystemError where e.isDiskFull {
            fail("-: not dropped: the disk holding the vault is full")
        } catch let e as SystemError where isInStore(e) {
            fail("-: not dropped: cannot write into the vault's store: \(e)")
        } catch {
            fail("-: \(describe(error))")
        }
    }

    private mutating func dropFile(_ fd: FileDescriptor, display path: String, relative: String) {
        do {
            let st = try readyToRead(fd, shown: err.name(path))
            let modified = st.modifiedNanoseconds
            let size = try dropper.drop(path: relative, modified: modified,
                                        source: readingToEnd(fd, unchangedSince: st, shown: err.name(path), notDone: "not dropped"),
                                        observer: observer)
            report.done(bytes: size, "dropped \(report.outName(path))")
        } catch is Cancelled {
            return
        } catch let e as SystemError where e.isDiskFull {
            fail("\(err.name(path)): not dropped: the disk holding the vault is full")
        } catch let e as SystemError where isInStore(e) {
            // Review EZ-3: said as the source's fault ("SOURCE: permission denied").
            fail("\(err.name(path)): not dropped: cannot write into the vault's store: \(e)")
        } catch let e as SystemError where e.path != path {
            fail("\(err.name(path)): \(SystemError.reason(for: e.code))")
        } catch let e as VaultError {
            fail("\(err.name(path)): not dropped: \(describe(e))")
        } catch {
            fail(describe(error))
        }
    }

    /// True for an error of writing into the store (a folder of it not writable), not of
    /// reading the source.
    private func isInStore(_ e: SystemError) -> Bool {
        guard let p = e.path else { return false }
        let root = dropper.store.hasSuffix("/") ? dropper.store : dropper.store + "/"
        return p == dropper.store || p.hasPrefix(root)
    }

    /// A folder of the walk: its entries' paths are its own followed by their names.
    func enterFolder(_ fd: FileDescriptor, path: String, name: String, in parent: String) throws -> String {
        parent.isEmpty ? name : parent + "/" + name
    }

    mutating func visitFile(_ fd: FileDescriptor, path: String, name: String, folder: FileDescriptor, entry: String, in place: String) {
        dropFile(fd, display: path, relative: place + "/" + name)
    }

    /// Nothing stops a drop but Ctrl-C (a full disk fails each file on its own).
    func mustStop() -> Bool { Session.interruptRequested != 0 }
}

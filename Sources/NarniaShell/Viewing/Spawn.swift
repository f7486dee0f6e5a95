import NarniaSystem
import Glibc
import NarniaStore

/// One helper program to start (a viewer, a pager, a player, a converter).
///
/// Children get only the descriptors named here: standard input, output and error (each
/// inherited unless given), plus `extra` descriptors at fixed numbers from 3 on, such as a
/// memfd holding an item's content. Every other descriptor is closed in the child
/// (`close_range`), so no viewer inherits the store's files or a passphrase descriptor.
struct ChildCommand {
    /// `arguments[0]` is looked up in `PATH`.
    var arguments: [String]
    /// Variables to set (a value) or remove (nil) in the child's copy of the environment.
    var environment: [String: String?] = [:]
    var standardInput: Int32?
    var standardOutput: Int32?
    var standardError: Int32?
    /// Descriptors the child gets at fixed numbers, in order from 3: `extra[0]` becomes 3.
    var extra: [Int32] = []
    /// What the child creates is this user's alone (umask 077), as narnia's own files: for
    /// rclone, which writes copies of the store. Otherwise it gets the user's umask.
    var privateFiles = false
    /// The child gets decrypted content (a memfd, a pipe): it runs below a guard that, when
    /// narnia dies, even by SIGKILL, kills it and everything it started, so that nothing a
    /// viewer forked keeps the content open after narnia is gone (`Processes.forkExecGuarded`;
    /// without one, only the child itself went, by `PR_SET_PDEATHSIG`: review AQ). For
    /// programs that may start others: a configured viewer (any command), mpv, the pager.
    /// Helpers that start none (chafa, ffmpeg, pdftotext) go without: a guard costs an exec of
    /// narnia, about 10 ms, and the grid starts one helper per thumbnail.
    var guarded = false

    init(_ arguments: [String]) { self.arguments = arguments }

    /// The path of `/proc/self/fd/N` for `extra[index]` as the child sees it.
    static func procPath(ofExtra index: Int) -> String { "/proc/self/fd/\(3 + index)" }
}

/// A failure to start a helper program; `missingProgram` when it is not installed.
struct SpawnFailure: Error {
    let program: String
    let code: Int32
    var missingProgram: Bool { code == ENOENT }
}

/// Starting helper programs as one job and waiting for them, the way a shell runs a pipeline.
///
/// A job's processes share a new process group. When the shell owns its terminal, the job
/// becomes the terminal's foreground group for as long as it runs (so Ctrl-C and the keys go
/// to the viewer, and a pager can read `/dev/tty`); the terminal and its modes are taken back
/// afterwards. Every process is recorded in `ChildProcesses`, so `panic` and the end of the
/// session kill it, and each asks the kernel for SIGKILL when the shell dies, so it goes even
/// when the shell itself is killed; what a guarded one starts goes then too, killed by its
/// guard (`ChildCommand.guarded`).
final class Job {
    private(set) var pids: [pid_t] = []
    /// For a guarded process (`ChildCommand.guarded`), by its guard's pid: the pipe on which
    /// the guard reports it (`Processes.GuardReport`).
    private var statusPipes: [pid_t: Int32] = [:]
    private var group: pid_t = 0
    /// True when the job runs in the shell's own process group (at a terminal).
    private let inShellGroup: Bool
    private var savedModes: termios?

    /// A job at the terminal (standard input, when it is one and the shell is in the
    /// foreground) unless `takeTerminal` is false, or in the background of a script.
    ///
    /// At the terminal the job's processes join the shell's own process group, which stays the
    /// terminal's foreground group: the keys reach the viewer, and the signal keys reach both,
    /// so that the panic key (Ctrl-\) ends everything whatever viewer runs, and Ctrl-C stops
    /// the viewer and the command. The terminal's modes are restored afterwards. In the
    /// background the job gets a process group of its own.
    init(takeTerminal: Bool = true) {
        if takeTerminal, isatty(0) == 1, tcgetpgrp(0) == getpgrp() {
            inShellGroup = true
            group = getpgrp()
            var modes = termios()
            if tcgetattr(0, &modes) == 0 { savedModes = modes }
        } else {
            inShellGroup = false
        }
    }

    /// Starts `command` as the next process of the job.
    ///
    /// `narnia_fork_exec` (C, so that the child runs no Swift code): the child joins the job's
    /// process group (signals still blocked), asks for SIGKILL when the shell dies
    /// (`PR_SET_PDEATHSIG`; `posix_spawn` cannot), maps the descriptors, closes the rest,
    /// restores default signal handling and calls `execve`.
    /// - Throws: `SpawnFailure` (with `missingProgram` when the program is not in `PATH`).
    @discardableResult
    func start(_ command: ChildCommand) throws -> pid_t {
        guard let program = command.arguments.first, let path = Job.which(program) else {
            throw SpawnFailure(program: command.arguments.first ?? "", code: ENOENT)
        }
        var argv = command.arguments
        argv[0] = path
        // Descriptor moves: each source first to a staging number, then to its place, so that
        // mapping one onto another's number cannot clobber it.
        var sources: [Int32] = []
        var targets: [Int32] = []
        if let fd = command.standardInput { sources.append(fd); targets.append(0) }
        if let fd = command.standardOutput { sources.append(fd); targets.append(1) }
        if let fd = command.standardError { sources.append(fd); targets.append(2) }
        for (i, fd) in command.extra.enumerated() { sources.append(fd); targets.append(Int32(3 + i)) }
        let firstFree = UInt32(3 + command.extra.count)
        let environment = Job.environment(with: command.environment)

        var all = sigset_t(), old = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &old)
        defer { pthread_sigmask(SIG_SETMASK, &old, nil) }
        let started: (pid: pid_t, status: Int32?)? = withCStrings(argv) { cArgv in
            withCStrings(environment) { cEnv in
                if command.guarded {
                    return (try? Processes.forkExecGuarded(path: path, arguments: cArgv, environment: cEnv, sources: sources, targets: targets,
                                                           firstFree: firstFree, group: group, terminal: nil, privateFiles: command.privateFiles))
                        .map { ($0.guard, $0.status) }
                }
                return (try? Processes.forkExec(path: path, arguments: cArgv, environment: cEnv, sources: sources, targets: targets,
                                                firstFree: firstFree, group: group, terminal: nil, privateFiles: command.privateFiles)).map { ($0, nil) }
            }
        }
        guard let (pid, statusPipe) = started else { throw SpawnFailure(program: program, code: errno) }
        if let statusPipe { statusPipes[pid] = statusPipe }
        ChildProcesses.register(pid)
        if inShellGroup && pids.isEmpty { ChildProcesses.jobsOnTerminal.add(1, ordering: .relaxed) }
        if group == 0 { group = pid }
        // Also from this side, so the next process of the job can join at once.
        if !inShellGroup { _ = setpgid(pid, group) }
        pids.append(pid)
        return pid
    }

    /// Passes a SIGINT sent to narnia on to the job while it runs, when the job has a process
    /// group of its own, which no Ctrl-C reaches (`ChildProcesses.interruptibleGroup`); until
    /// `wait` returns. Called once the job started.
    func passInterruptsOn() {
        guard !inShellGroup, group > 0 else { return }
        ChildProcesses.interruptibleGroup.store(group, ordering: .sequentiallyConsistent)
        // One that came before the group was stored.
        if Session.interruptRequested != 0 { _ = Glibc.kill(-group, SIGINT) }
    }

    /// Waits for every process of the job, then restores the terminal's modes. A job stopped by
    /// Ctrl-Z is continued (the shell has no job control).
    /// Returns the exit status of the last process (128+N for a signal).
    @discardableResult
    func wait() -> Int32 {
        var last: Int32 = 0
        for pid in pids {
            let status = statusSent(by: pid) ?? waitStatus(of: pid)
            ChildProcesses.unregister(pid)
            if pid == pids.last { last = Self.exitStatus(status) }
        }
        if !inShellGroup && group > 0 { _ = ChildProcesses.interruptibleGroup.compareExchange(expected: group, desired: 0, ordering: .sequentiallyConsistent) }
        if inShellGroup && !pids.isEmpty { ChildProcesses.jobsOnTerminal.subtract(1, ordering: .relaxed) }
        pids.removeAll()
        if var modes = savedModes { _ = tcsetattr(0, TCSADRAIN, &modes) }
        return last
    }

    /// The wait status of the program a guard runs, once it ended (nil for an unguarded
    /// process, or when the guard sent no end: it was killed, or the program ran in its
    /// place). One stopped by Ctrl-Z is continued, once narnia runs, as `waitStatus` does. The
    /// guard may stay, for what the program left running: reaped now only if it has ended.
    private func statusSent(by pid: pid_t) -> Int32? {
        guard let pipe = statusPipes.removeValue(forKey: pid) else { return nil }
        defer { close(pipe) }
        var program: pid_t?
        while let report = Processes.guardReport(from: pipe) {
            switch report {
            case .started(let started): program = started
            case .stopped: if let program { _ = Glibc.kill(program, SIGCONT) }
            case .ended(let status):
                _ = waitpid(pid, nil, WNOHANG)
                return status
            }
        }
        return nil
    }

    /// The wait status of `pid`, a child, once it ended; one stopped by Ctrl-Z is continued.
    private func waitStatus(of pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while true {
            let r = waitpid(pid, &status, WUNTRACED)
            if r < 0 { if errno == EINTR { continue }; return 0 }
            guard (status & 0xff) == 0x7f else { return status }
            _ = Glibc.kill(pid, SIGCONT)
        }
    }

    /// A wait status as a shell gives it: the exit status, or 128+N for signal N.
    private static func exitStatus(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// Kills every process of the job (a viewer that stopped reading, an interrupted feed).
    func kill() {
        for pid in pids { _ = Glibc.kill(pid, SIGKILL) }
        if group != 0 && !inShellGroup { _ = Glibc.kill(-group, SIGKILL) }
    }

    // MARK: Programs and environment

    /// The full path of `program` from `PATH` (or the program itself when it has a slash). A
    /// folder of `PATH` whose name is not UTF-8 is passed over, not decoded lossily into another.
    static func which(_ program: String) -> String? {
        if program.utf8.contains(UInt8(ascii: "/")) { return access(program, X_OK) == 0 ? program : nil }
        let path = getenv("PATH").map { UnsafeBufferPointer(start: UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self), count: strlen($0)) }
        let folders = path.map { Array($0).split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false).compactMap { String(validating: $0, as: UTF8.self) } }
            ?? ["/usr/local/bin", "/usr/bin", "/bin"]
        for dir in folders {
            let candidate = (dir.isEmpty ? "." : dir) + "/" + program
            if access(candidate, X_OK) == 0, !FileSystem.isDirectory(candidate) { return candidate }
        }
        return nil
    }

    /// The process's environment with `changes` applied, as `NAME=value` strings, without the
    /// variables no helper gets (`withheld`).
    static func environment(with changes: [String: String?]) -> [String] {
        var result: [String] = []
        var p = environ
        while let entry = p.pointee {
            let text = String(cString: entry)
            let name = String(text.prefix { $0 != "=" })
            if changes[name] == nil && !withheld.contains(name) { result.append(text) }
            p += 1
        }
        for (name, value) in changes.sorted(by: { $0.key < $1.key }) {
            if let value { result.append("\(name)=\(value)") }
        }
        return result
    }
}

extension Job {
    /// Variables no helper gets, whatever the user's environment holds: they make a helper
    /// write what it reads to a file — ffmpeg's report log, in the current folder, holds a
    /// video's title, comment and place in clear (review BM-2) — or print it to the terminal
    /// (mpv's verbose log), or read a configuration narnia's options do not cover.
    static let withheld: Set<String> = ["FFREPORT", "MPV_VERBOSE", "MPV_HOME", "MPV_LEAK_REPORT"]
}

/// Calls `body` with a NULL-terminated C array of `strings`.
func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    pointers.append(nil)
    defer { for p in pointers { free(p) } }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
}

/// A pipe whose ends close themselves; neither end is inherited by children unless mapped.
final class Pipe {
    private(set) var readEnd: Int32
    private(set) var writeEnd: Int32

    init() throws {
        (readEnd, writeEnd) = try Processes.makePipe()
    }

    func closeRead() { if readEnd >= 0 { close(readEnd); readEnd = -1 } }
    func closeWrite() { if writeEnd >= 0 { close(writeEnd); writeEnd = -1 } }

    deinit { closeRead(); closeWrite() }
}

/// The reader of a pipe or viewer went away (EPIPE): not an error for a viewer the user closed.
struct ReaderGone: Error {}

/// Writes all of `count` bytes to `fd` with `FileDescriptor.writeAll`'s loop (EINTR retried).
/// - Throws: `ReaderGone` on EPIPE, else `SystemError` naming the call: the descriptor (a pipe,
///   a memfd, the terminal) has no path worth showing.
func writeAll(_ fd: Int32, _ p: UnsafeRawPointer, _ count: Int) throws {
    do {
        try FileDescriptor.borrowing(fd, name: "").writeAll(p, count: count)
    } catch let e as SystemError {
        throw e.code == EPIPE ? ReaderGone() : SystemError(code: e.code, operation: e.operation)
    }
}

/// Reads `fd` to its end (a helper's output), at most `limit` bytes.
func readAll(_ fd: Int32, limit: Int = 64 << 20) -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 16)
    while result.count < limit {
        let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress!, $0.count) }
        if n < 0 { if errno == EINTR { continue }; break }
        if n == 0 { break }
        result.append(contentsOf: buffer[0..<n])
    }
    return result
}

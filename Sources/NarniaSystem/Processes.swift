import Glibc
internal import CNarniaSystem

/// Process-level calls: hardening, children, pipes and memory files.
public enum Processes {
    /// `prctl(PR_SET_DUMPABLE, 0)`: no core dump, no `ptrace` by other processes of the user.
    public static func setNotDumpable() {
        _ = narnia_set_not_dumpable()
    }

    /// Makes narnia's own files private (file mode creation mask 077) while the programs it
    /// starts — `!` commands, viewers — keep the mask the user had.
    public static func makeOwnFilesPrivate() {
        let user = umask(0o077)
        narnia_set_child_umask(UInt32(user))
    }

    /// Raises the soft limit of open descriptors to the hard one, as far as 1 << 20: an export
    /// keeps a descriptor for each folder on the way, an import one for each folder whose
    /// originals wait for their commit, and the usual soft limit of 1,024 ran out in a tree
    /// of a thousand folders. Children get the limit the process started with.
    public static func raiseDescriptorLimit() {
        _ = narnia_raise_descriptor_limit()
    }

    /// Makes this process the reaper of its orphaned descendants (`PR_SET_CHILD_SUBREAPER`):
    /// what a viewer starts (a wrapper's commands, a viewer that forks) stays below it when
    /// the viewer ends, where `descendants()` finds it.
    public static func keepOrphanedDescendants() {
        _ = narnia_become_subreaper()
    }

    /// Every process below this one (zombies included), by the parent each names in
    /// `/proc/PID/stat`.
    public static func descendants() -> [pid_t] {
        var children: [pid_t: [pid_t]] = [:]
        for process in table() { children[process.parent, default: []].append(process.pid) }
        var found: [pid_t] = [], pending = [getpid()]
        while let next = pending.popLast() {
            let below = children[next] ?? []
            found += below
            pending += below
        }
        return found
    }

    /// This process's children, from `/proc/self/task/*/children` (a few small reads, not a
    /// scan of every process).
    public static func children() -> [pid_t] {
        guard let dir = opendir("/proc/self/task") else { return [] }
        defer { closedir(dir) }
        var found: [pid_t] = []
        while let entry = readdir(dir) {
            let name = entryName(entry)
            guard pid_t(name) != nil, let fd = try? FileDescriptor.open("/proc/self/task/\(name)/children", .readOnly),
                  let bytes = try? fd.readToEnd(limit: 1 << 20) else { continue }
            found += bytes.split { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\n") }.compactMap { pid_t(String(decoding: $0, as: UTF8.self)) }
        }
        return found
    }

    /// Every process `/proc` lists: its pid and its parent's.
    private static func table() -> [(pid: pid_t, parent: pid_t)] {
        guard let dir = opendir("/proc") else { return [] }
        defer { closedir(dir) }
        var processes: [(pid: pid_t, parent: pid_t)] = []
        while let entry = readdir(dir) {
            guard let pid = pid_t(entryName(entry)), let parent = parentOf(pid) else { continue }
            processes.append((pid, parent))
        }
        return processes
    }

    private static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
    }

    /// The parent pid `/proc/PID/stat` gives: the field after the state, which follows the
    /// last `)` (a command name may hold spaces and parentheses).
    private static func parentOf(_ pid: pid_t) -> pid_t? {
        guard let fd = try? FileDescriptor.open("/proc/\(pid)/stat", .readOnly),
              let bytes = try? fd.readToEnd(limit: 4096), let close = bytes.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        let fields = bytes[(close + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 1 else { return nil }
        return pid_t(String(decoding: fields[1], as: UTF8.self))
    }

    /// Fatal signals (a crash, a stack overflow, a failed check) end the process with one line
    /// on standard error and status 70, and never the Swift runtime's backtrace, which prints
    /// registers and the memory they point to (`narnia_install_fatal_signal_handlers`).
    public static func handleFatalSignalsQuietly() {
        _ = narnia_install_fatal_signal_handlers()
    }

    /// Forks and executes `path` with `arguments` and `environment` (see `narnia_fork_exec`:
    /// the child runs no Swift code). `sources[i]` becomes descriptor `targets[i]` in the child;
    /// every descriptor from `firstFree` up is closed. The child joins process group `group`
    /// (0: its own) and, with `terminal`, takes that terminal's foreground. With
    /// `privateFiles` what it creates is this user's alone (umask 077, as narnia's own files);
    /// otherwise it gets the user's umask. The caller blocks signals around the call. Returns
    /// the child's pid.
    /// - Throws: `SystemError` when `fork` fails.
    public static func forkExec(path: String, arguments: UnsafePointer<UnsafeMutablePointer<CChar>?>,
                                environment: UnsafePointer<UnsafeMutablePointer<CChar>?>,
                                sources: [Int32], targets: [Int32], firstFree: UInt32,
                                group: pid_t, terminal: Int32?, privateFiles: Bool = false) throws -> pid_t {
        let pid = narnia_fork_exec(path, arguments, environment, sources, targets, Int32(sources.count), firstFree,
                                   group, terminal ?? -1, terminal != nil && group == 0 ? 1 : 0, privateFiles ? 1 : 0)
        guard pid > 0 else { throw SystemError.current("fork", path) }
        return pid
    }

    /// Forks a guard that runs `path` below it (see `narnia_fork_exec_guarded`; `forkExec`
    /// for the other arguments): the guard outlives the program while anything the program
    /// started runs, and kills all of it when narnia dies, even by SIGKILL. Returns the
    /// guard's pid and the read end of the pipe on which it reports (`guardReport`). Where
    /// narnia cannot run itself again (`Lifeline`), the program is started unguarded, as
    /// `forkExec` starts it, and there is no pipe.
    /// - Throws: `SystemError` when `fork` or `pipe` fails.
    public static func forkExecGuarded(path: String, arguments: UnsafePointer<UnsafeMutablePointer<CChar>?>,
                                       environment: UnsafePointer<UnsafeMutablePointer<CChar>?>,
                                       sources: [Int32], targets: [Int32], firstFree: UInt32,
                                       group: pid_t, terminal: Int32?, privateFiles: Bool = false) throws -> (guard: pid_t, status: Int32?) {
        guard let lifeline = try Lifeline.shared.get() else {
            return (try forkExec(path: path, arguments: arguments, environment: environment, sources: sources, targets: targets,
                                 firstFree: firstFree, group: group, terminal: terminal, privateFiles: privateFiles), nil)
        }
        let (statusRead, statusWrite) = try makePipe()
        defer { close(statusWrite) }
        let pid = narnia_fork_exec_guarded(path, arguments, environment, sources, targets, Int32(sources.count), firstFree,
                                           group, terminal ?? -1, terminal != nil && group == 0 ? 1 : 0, privateFiles ? 1 : 0,
                                           lifeline, statusWrite)
        guard pid > 0 else {
            let error = SystemError.current("fork", path)
            close(statusRead)
            throw error
        }
        return (pid, statusRead)
    }

    /// What a guard says of its program (`forkExecGuarded`).
    public enum GuardReport {
        /// Started, with this pid.
        case started(pid_t)
        /// Stopped (Ctrl-Z), with this wait status: the caller continues it once it runs.
        case stopped(Int32)
        /// Ended, with this wait status; the last report.
        case ended(Int32)
    }

    /// The next report a guard sends on `pipe`; nil at its end (the guard is gone, killed, or
    /// the program ran unguarded in the guard's place: wait for that process then).
    public static func guardReport(from pipe: Int32) -> GuardReport? {
        var record: (Int32, Int32) = (0, 0)
        var got = 0
        let size = MemoryLayout.size(ofValue: record)
        while got < size {
            let n = withUnsafeMutableBytes(of: &record) { read(pipe, $0.baseAddress! + got, size - got) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            got += n
        }
        switch record.0 {
        case NARNIA_GUARD_STARTED: return .started(record.1)
        case NARNIA_GUARD_STOPPED: return .stopped(record.1)
        case NARNIA_GUARD_ENDED: return .ended(record.1)
        default: return nil
        }
    }

    /// False where narnia cannot run itself again as a guard, and guarded programs run
    /// unguarded (`Lifeline.get`).
    public static var guardsAvailable: Bool { Lifeline.isAvailable }

    /// When this process was started as a viewer's guard (`forkExecGuarded`), its whole life:
    /// it never returns then. The first thing narnia does.
    public static func becomeViewerGuardIfAsked() {
        narnia_guard_if_asked(CommandLine.argc, CommandLine.unsafeArgv)
    }

    /// A pipe whose ends are closed on `exec` (`pipe2` with `O_CLOEXEC`): (read end, write end).
    public static func makePipe() throws -> (Int32, Int32) {
        var fds: [Int32] = [-1, -1]
        _ = try retryingInterrupts("pipe") { narnia_pipe_cloexec(&fds) }
        return (fds[0], fds[1])
    }

    /// A new anonymous memory file that can be sealed (`memfd_create`, `MFD_CLOEXEC`).
    public static func makeMemoryFile(name: String) throws -> Int32 {
        try retryingInterrupts("memfd_create") { narnia_memfd_create(name) }
    }

    /// Forbids further writes to and growth of a memory file (`F_ADD_SEALS`).
    public static func sealMemoryFile(_ fd: Int32) {
        _ = narnia_seal_memfd(fd)
    }
}

/// The read end of a pipe whose write end only narnia holds, open for the whole session:
/// every guard (`Processes.forkExecGuarded`) watches it, and its end of file says narnia is
/// gone. Both ends are closed on `exec`, so no program narnia starts holds the write end.
final class Lifeline: Sendable {
    static let shared = Lifeline()
    /// The read end; -1 when guards cannot run (`failure` says why, 0: narnia cannot run
    /// itself again).
    private let readEnd: Int32
    private let failure: Int32

    private init() {
        guard narnia_can_run_itself_again() == 1 else {
            (readEnd, failure) = (-1, 0)
            return
        }
        var fds: [Int32] = [-1, -1]
        guard narnia_pipe_cloexec(&fds) == 0 else {
            (readEnd, failure) = (-1, errno)
            return
        }
        // Above the standard descriptors: narnia started with one of them closed would get the
        // write end there, and a program inheriting it (`ChildCommand`'s standard streams are
        // inherited unless given) would keep the lifeline from ending.
        for i in fds.indices where fds[i] < 3 {
            let moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)
            if moved >= 0 { close(fds[i]); fds[i] = moved }
        }
        (readEnd, failure) = (fds[0], 0)
    }

    /// The read end; nil where narnia cannot run itself again as a guard (started through the
    /// dynamic loader, an emulator or valgrind, or without /proc): programs then run unguarded,
    /// as before guards were made, and `isAvailable` says so.
    /// - Throws: `SystemError` when the pipe could not be made.
    func get() throws -> Int32? {
        if readEnd >= 0 { return readEnd }
        if failure != 0 { throw SystemError(code: failure, operation: "pipe") }
        return nil
    }

    /// False where programs run unguarded (`get`).
    static var isAvailable: Bool { shared.readEnd >= 0 }
}

import Glibc
import NarniaSystem
import Synchronization

/// Every helper process the shell starts (viewers, players, pagers), so that `panic`, SIGHUP,
/// SIGTERM and the end of the session can kill them all.
public enum ChildProcesses {
    /// Shared by the main thread (which starts and waits for them) and the signal watcher
    /// (which kills them on a panic or a termination).
    private static let pids = Mutex(Set<pid_t>())

    /// How many jobs have the terminal now (`Job`, in the shell's process group: a viewer, a
    /// pager, a host command): read by the termination signal's handler, a lock-free word.
    static let jobsOnTerminal = Atomic<Int>(0)

    /// True while a job has the terminal, and may have changed its screen and modes.
    public static var jobOnTerminal: Bool { jobsOnTerminal.load(ordering: .relaxed) > 0 }

    /// The process group of a host command (`!`) that runs in a group of its own (no terminal:
    /// `-c`, `-b`, a script), 0 while none runs: a SIGINT sent to narnia is passed on to it,
    /// as a terminal's Ctrl-C reaches its foreground group (review CZ-11: `kill -INT` of
    /// `narnia -c '!sleep 12'` waited the sleep out).
    static let interruptibleGroup = Atomic<Int32>(0)

    /// Passes SIGINT on to `interruptibleGroup`; called by the SIGINT handler, so
    /// async-signal-safe.
    public static func passOnInterrupt() {
        let group = interruptibleGroup.load(ordering: .sequentiallyConsistent)
        if group > 0 { _ = kill(-group, SIGINT) }
    }

    /// Records a started process, and reaps those of this process's children it did not start
    /// that have ended: orphans it adopted (a `!` command's background job, what a viewer
    /// started), which nobody else waits for and which would stay zombies until the session
    /// ends.
    public static func register(_ pid: pid_t) {
        let known = pids.withLock { set -> Set<pid_t> in set.insert(pid); return set }
        for child in Processes.children() where !known.contains(child) {
            var status: Int32 = 0
            _ = waitpid(child, &status, WNOHANG)   // 0, and nothing done, while it runs
        }
    }

    /// Forgets a process that has been waited for.
    public static func unregister(_ pid: pid_t) { pids.withLock { _ = $0.remove(pid) } }

    /// Sends SIGKILL to every recorded process (and its process group) and reaps them; then to
    /// whatever they started that is still below this process (a wrapper's commands, a viewer
    /// that forked: narnia is their reaper, `Processes.keepOrphanedDescendants`), until none
    /// is left. At a terminal viewers share narnia's process group, so the group alone cannot
    /// reach them.
    public static func killAll() {
        let all = pids.withLock { set -> Set<pid_t> in defer { set.removeAll() }; return set }
        for pid in all {
            _ = kill(-pid, SIGKILL)
            _ = kill(pid, SIGKILL)
        }
        for pid in all { var status: Int32 = 0; _ = waitpid(pid, &status, 0) }
        for _ in 0..<8 {
            let left = Processes.descendants()
            if left.isEmpty { break }
            for pid in left { _ = kill(pid, SIGKILL) }
            // Reaped here, those whose parent died (they are this process's children now).
            for pid in left { var status: Int32 = 0; _ = waitpid(pid, &status, WNOHANG) }
            usleep(10_000)
        }
    }
}


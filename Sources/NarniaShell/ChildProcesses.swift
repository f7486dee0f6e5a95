import Glibc
import NarniaCrypto

/// Every helper process the shell starts (viewers, players, pagers), so that `panic`, SIGHUP,
/// SIGTERM and the end of the session can kill them all.
public enum ChildProcesses {
    nonisolated(unsafe) private static var pids = Set<pid_t>()
    private static let lock = Lock()

    /// Records a started process.
    public static func register(_ pid: pid_t) { lock.withLock { _ = pids.insert(pid) } }

    /// Forgets a process that has been waited for.
    public static func unregister(_ pid: pid_t) { lock.withLock { _ = pids.remove(pid) } }

    /// Sends SIGKILL to every recorded process (and its process group) and reaps them.
    public static func killAll() {
        let all = lock.withLock { () -> Set<pid_t> in defer { pids.removeAll() }; return pids }
        for pid in all {
            _ = kill(-pid, SIGKILL)
            _ = kill(pid, SIGKILL)
        }
        for pid in all { var status: Int32 = 0; _ = waitpid(pid, &status, 0) }
    }
}


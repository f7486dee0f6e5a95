import Glibc
import NarniaSystem

/// Process hardening done before any secret exists: no core dumps (`RLIMIT_CORE` = 0), not
/// dumpable (`PR_SET_DUMPABLE` 0), so neither a crash nor `ptrace` by another user process
/// of the same uid (where Yama allows) can read keys out of memory, and fatal signals that end
/// the process quietly instead of through the Swift runtime's backtracer, which would print
/// registers and the memory they point to. Also: narnia's own files private (umask 077, the
/// user's for the programs it starts), the descendants of viewers kept below narnia, so
/// that ending a session ends them too, and the descriptor limit raised (a tree of a thousand
/// folders ran out of the usual 1,024). And descriptors 0–2 always open (`/dev/null` where
/// one was closed).
enum Hardening {
    static func apply() {
        openClosedStandardDescriptors()
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        Processes.setNotDumpable()
        Processes.handleFatalSignalsQuietly()
        Processes.makeOwnFilesPrivate()
        Processes.keepOrphanedDescendants()
        Processes.raiseDescriptorLimit()
    }

    /// Puts `/dev/null` on each of descriptors 0–2 that is closed (`cmd <&-`, a daemon's job),
    /// before anything else opens: a file opened later would take its number, and what narnia
    /// reads or writes there would go to it (review CB-3: the signal watcher's pipe became
    /// standard input, and `import -` waited on it for ever; as standard error, the first
    /// warning ended the run with status 128).
    private static func openClosedStandardDescriptors() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            let opened = open("/dev/null", O_RDWR)
            if opened != fd && opened >= 0 { close(opened) }
        }
    }
}

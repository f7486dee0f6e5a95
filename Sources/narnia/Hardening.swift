import Glibc
import NarniaSystem

/// Process hardening done before any secret exists: no core dumps (`RLIMIT_CORE` = 0), not
/// dumpable (`PR_SET_DUMPABLE` 0), so neither a crash nor `ptrace` by another user process
/// of the same uid (where Yama allows) can read keys out of memory, and fatal signals that end
/// the process quietly instead of through the Swift runtime's backtracer, which would print
/// registers and the memory they point to. Also: narnia's own files private (umask 077, the
/// user's for the programs it starts), the descendants of viewers kept below narnia, so
/// that ending a session ends them too, and the descriptor limit raised (a tree of a thousand
/// folders ran out of the usual 1,024). And descriptors 0–2 always open (`StandardDescriptors`).
enum Hardening {
    static func apply() {
        StandardDescriptors.openClosed()
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        Processes.setNotDumpable()
        Processes.handleFatalSignalsQuietly()
        Processes.makeOwnFilesPrivate()
        Processes.keepOrphanedDescendants()
        Processes.raiseDescriptorLimit()
    }
}

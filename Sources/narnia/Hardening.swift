import Glibc

/// Process hardening done before any secret exists: no core dumps (`RLIMIT_CORE` = 0) and not
/// dumpable (`PR_SET_DUMPABLE` 0), so neither a crash nor `ptrace` by another user process
/// of the same uid (where Yama allows) can read keys out of memory.
enum Hardening {
    static func apply() {
        var limit = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        _ = narnia_prctl(4 /* PR_SET_DUMPABLE, <linux/prctl.h> */, 0, 0, 0, 0)
        umask(0o077)
    }
}

@_silgen_name("prctl")
func narnia_prctl(_ option: Int32, _ a2: UInt, _ a3: UInt, _ a4: UInt, _ a5: UInt) -> Int32

import Glibc

// System calls whose Swift names clash with C structs of the same name (`stat`, `flock`) or
// that Glibc's module map hides behind _GNU_SOURCE (`syncfs`). Bound by symbol name.

@_silgen_name("flock")
func c_flock(_ fd: Int32, _ operation: Int32) -> Int32

@_silgen_name("syncfs")
func c_syncfs(_ fd: Int32) -> Int32

/// `stat(2)` through `fstatat`, which has no struct of the same name.
func c_stat(_ path: String, _ st: inout stat) -> Int32 {
    fstatat(AT_FDCWD, path, &st, 0)
}

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

@_silgen_name("sync_file_range")
func c_sync_file_range(_ fd: Int32, _ offset: Int64, _ nbytes: Int64, _ flags: UInt32) -> Int32

/// `SYNC_FILE_RANGE_WRITE` from <fcntl.h>: start writeback of dirty pages, do not wait.
let syncFileRangeWrite: UInt32 = 2

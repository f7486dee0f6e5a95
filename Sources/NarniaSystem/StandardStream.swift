internal import CNarniaSystem
import Glibc

/// The C library's standard streams (`stdin`, `stdout`, `stderr`), for `fputs`, `fflush` and
/// C libraries that take a `FILE *`. Swift 6 does not let code share C's mutable globals of
/// those names; these read them through a call (see `narnia_standard_output`).
public enum StandardStream {
    public static var input: UnsafeMutablePointer<FILE> { narnia_standard_input() }
    public static var output: UnsafeMutablePointer<FILE> { narnia_standard_output() }
    public static var error: UnsafeMutablePointer<FILE> { narnia_standard_error() }
}

import Glibc
import Synchronization

/// Runs a system call that returns -1 and sets `errno` on failure, retrying on `EINTR`, and
/// throws a `SystemError` naming `operation` and `path` on any other failure. Every system
/// call of this module goes through here, which is also where tests inject failures
/// (`SystemCallFaults`).
@inline(__always)
public func retryingInterrupts<T: BinaryInteger>(_ operation: String, _ path: String? = nil, _ call: () -> T) throws -> T {
    if SystemCallFaults.armed.load(ordering: .relaxed), let code = SystemCallFaults.take(operation) {
        throw SystemError(code: code, operation: operation, path: path)
    }
    while true {
        let r = call()
        if r >= 0 { return r }
        if errno == EINTR { continue }
        throw SystemError(code: errno, operation: operation, path: path)
    }
}

/// A seam for tests: makes the next calls of a named operation (`fdatasync`, `write`, …)
/// fail with a chosen `errno`, without touching the file system.
package enum SystemCallFaults {
    private struct Fault { var operation: String; var code: Int32; var skip: Int; var remaining: Int }
    private static let faults = Mutex<[Fault]>([])
    static let armed = Atomic<Bool>(false)

    /// After `skip` successful calls of `operation`, the next `times` fail with `code`.
    package static func inject(_ operation: String, errno code: Int32, skip: Int = 0, times: Int = 1) {
        faults.withLock { $0.append(Fault(operation: operation, code: code, skip: skip, remaining: times)) }
        armed.store(true, ordering: .relaxed)
    }

    /// Removes every injected fault.
    package static func reset() {
        faults.withLock { $0.removeAll() }
        armed.store(false, ordering: .relaxed)
    }

    static func take(_ operation: String) -> Int32? {
        faults.withLock { list -> Int32? in
            guard let i = list.firstIndex(where: { $0.operation == operation }) else { return nil }
            if list[i].skip > 0 { list[i].skip -= 1; return nil }
            let code = list[i].code
            list[i].remaining -= 1
            if list[i].remaining == 0 { list.remove(at: i) }
            return code
        }
    }
}

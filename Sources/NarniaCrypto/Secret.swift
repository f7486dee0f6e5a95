internal import CSodium
import Synchronization

/// Bytes that must never leak: keys and passphrases.
///
/// The bytes live in `sodium_malloc` memory (guard pages, `mlock`ed, canary), are made
/// inaccessible with `sodium_mprotect_noaccess` while idle, and are wiped by `sodium_free`
/// when the value is released. There is deliberately no conversion to `Array`, `Data` or
/// `String`: use `withUnsafeBytes` for scoped access.
public final class Secret: @unchecked Sendable {
    // Sendable: `pointer` and `count` never change; `openCount` (and the mprotect state it
    // decides) is only touched under `lock`.
    private let pointer: UnsafeMutableRawPointer
    /// The number of bytes held.
    public let count: Int
    private let lock = Lock()
    private var openCount = 0

    /// Allocates `count` zeroed secret bytes.
    /// - Throws: `CryptoError.outOfSecureMemory` when `sodium_malloc` fails.
    public init(zeroedCount count: Int) throws {
        Sodium.ensureInitialized()
        guard let p = sodium_malloc(max(count, 1)) else { throw CryptoError.outOfSecureMemory }
        sodium_memzero(p, max(count, 1))
        pointer = p
        self.count = count
        sodium_mprotect_noaccess(p)
        Self.allocations.withLock { $0[UInt(bitPattern: p)] = max(count, 1) }
    }

    /// Allocates `count` random secret bytes (a fresh key).
    public static func random(count: Int) throws -> Secret {
        let secret = try Secret(zeroedCount: count)
        secret.withUnsafeMutableBytes { fillRandom($0) }
        return secret
    }

    /// Copies bytes into a new secret. The caller remains responsible for wiping its copy.
    public convenience init(copying bytes: UnsafeRawBufferPointer) throws {
        try self.init(zeroedCount: bytes.count)
        withUnsafeMutableBytes { dest in
            if let src = bytes.baseAddress, bytes.count > 0 { dest.baseAddress!.copyMemory(from: src, byteCount: bytes.count) }
        }
    }

    deinit {
        Self.allocations.withLock { _ = $0.removeValue(forKey: UInt(bitPattern: pointer)) }
        sodium_free(pointer)
    }

    /// Every live secret's memory (address and size), for `wipeAllBeforeExit()`, which runs
    /// on the signal watcher's thread.
    private static let allocations = Mutex([UInt: Int]())

    /// Overwrites every live secret with zeros, whatever is using it. Only for a process that is
    /// about to `_exit` without unwinding (a panic or a termination signal whose main thread did
    /// not stop in time): afterwards no key or passphrase is left in memory, and no secret may
    /// be used again.
    public static func wipeAllBeforeExit() {
        allocations.withLock {
            for (address, n) in $0 {
                guard let p = UnsafeMutableRawPointer(bitPattern: address) else { continue }
                sodium_mprotect_readwrite(p)
                sodium_memzero(p, n)
            }
        }
    }

    /// Read access to the bytes for the duration of `body`.
    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        unprotect(write: false)
        defer { protect() }
        return try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// Write access to the bytes for the duration of `body`.
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        unprotect(write: true)
        defer { protect() }
        return try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    /// Keeps the bytes readable and writable until the matching `endAccess()`, for a run of
    /// accesses that would otherwise change the page protection at each one. Accesses nest: the
    /// memory becomes inaccessible again when the last one ends.
    public func beginAccess() { unprotect(write: true) }

    /// Ends an access begun with `beginAccess()`.
    public func endAccess() { protect() }

    /// Constant-time comparison (`sodium_memcmp`).
    public func isEqual(to other: Secret) -> Bool {
        guard count == other.count else { return false }
        return withUnsafeBytes { a in other.withUnsafeBytes { b in sodium_memcmp(a.baseAddress!, b.baseAddress!, count) == 0 } }
    }

    // Nested and concurrent accesses share one read-write window; the last one out closes it.
    private func unprotect(write: Bool) {
        lock.withLock {
            if openCount == 0 { sodium_mprotect_readwrite(pointer) }
            openCount += 1
        }
    }

    private func protect() {
        lock.withLock {
            openCount -= 1
            if openCount == 0 { sodium_mprotect_noaccess(pointer) }
        }
    }
}

internal import CSodium

/// Process-wide libsodium set-up. Every public entry point of this module calls
/// `Sodium.ensureInitialized()` first; `sodium_init` is idempotent and thread-safe.
public enum Sodium {
    /// Calls `sodium_init()`. Traps if libsodium cannot initialise, since nothing secure can run then.
    public static func ensureInitialized() {
        _ = initialized
    }

    private static let initialized: Bool = {
        precondition(sodium_init() >= 0, "libsodium failed to initialise")
        return true
    }()
}

/// Errors raised by the cryptographic layer.
public enum CryptoError: Error, Equatable, CustomStringConvertible {
    /// An AEAD tag did not verify: wrong key, or the data was modified, truncated or moved.
    case authenticationFailed
    /// Secure memory could not be allocated (`sodium_malloc` returned NULL).
    case outOfSecureMemory
    /// The key derivation could not run with the requested limits (usually: not enough memory).
    case keyDerivationFailed
    /// An input had a length the primitive does not accept.
    case invalidLength(String)

    public var description: String {
        switch self {
        case .authenticationFailed: return "authentication failed"
        case .outOfSecureMemory: return "cannot allocate secure memory"
        case .keyDerivationFailed: return "key derivation failed (not enough memory?)"
        case .invalidLength(let what): return "invalid length: \(what)"
        }
    }
}

/// Fills `buffer` with cryptographically secure random bytes (`randombytes_buf`).
public func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
    Sodium.ensureInitialized()
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    randombytes_buf(base, buffer.count)
}

/// Returns `count` cryptographically secure random bytes. For non-secret values only
/// (nonces, identifiers, salts); secret keys belong in a `Secret`.
public func randomBytes(_ count: Int) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBytes { fillRandom($0) }
    return bytes
}

/// Overwrites memory with zeros in a way the compiler cannot elide (`sodium_memzero`).
public func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    sodium_memzero(base, buffer.count)
}

/// BLAKE2b (`crypto_generichash`) of `input`, `length` bytes long, optionally keyed.
public func genericHash(_ input: [UInt8], length: Int, key: [UInt8] = []) -> [UInt8] {
    Sodium.ensureInitialized()
    var out = [UInt8](repeating: 0, count: length)
    out.withUnsafeMutableBufferPointer { o in
        input.withUnsafeBufferPointer { i in
            key.withUnsafeBufferPointer { k in
                _ = crypto_generichash(o.baseAddress!, length, i.baseAddress, UInt64(i.count), k.baseAddress, k.count)
            }
        }
    }
    return out
}

/// BLAKE2b (`crypto_generichash`) of input given in pieces, `length` bytes long: a file's
/// bytes hashed without holding them all.
public final class StreamingHash {
    private let state: UnsafeMutableRawPointer
    private let length: Int

    public init(length: Int) {
        Sodium.ensureInitialized()
        self.length = length
        // The state wants 64-byte alignment, which a Swift value of the imported type need not get.
        state = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
        _ = crypto_generichash_init(OpaquePointer(state), nil, 0, length)
    }

    deinit { state.deallocate() }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = crypto_generichash_update(OpaquePointer(state),
                                      base.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
    }

    /// The hash of everything given; the hasher is spent.
    public func finish() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        out.withUnsafeMutableBufferPointer { o in
            _ = crypto_generichash_final(OpaquePointer(state), o.baseAddress!, length)
        }
        return out
    }
}

internal import CSodium

/// X25519 key agreement (`crypto_scalarmult`), for sealing files to a public key: the vault's
/// inbox (docs/FORMAT.md, "The inbox"). Secret scalars live in `Secret` memory.
public enum X25519 {
    /// Bytes of a public key, of a secret scalar and of a shared secret.
    public static let keyLength = 32

    /// A fresh key pair: a random secret scalar and its public key.
    public static func generateKeyPair() throws -> (secret: Secret, publicKey: [UInt8]) {
        let secret = try Secret.random(count: keyLength)
        return (secret, publicKey(of: secret))
    }

    /// The public key of the secret scalar `secret`.
    public static func publicKey(of secret: Secret) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: keyLength)
        secret.withUnsafeBytes { s in
            out.withUnsafeMutableBufferPointer { o in
                _ = crypto_scalarmult_base(o.baseAddress!, s.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        return out
    }

    /// A 32-byte symmetric key agreed between `secret` and the peer's `publicKey`: BLAKE2b-256
    /// of `context` (a label), the shared point, and `binding` (both public keys, so that the
    /// key belongs to this exchange only). Nil when the peer's key is a low-order point (the
    /// shared point is all zeros), which no honest sender produces.
    ///
    /// The top bit of the peer's key is ignored, as X25519 itself does (RFC 7748, 5).
    public static func agreedKey(secret: Secret, publicKey: [UInt8], context: String, binding: [UInt8]) throws -> Secret? {
        Sodium.ensureInitialized()
        precondition(publicKey.count == keyLength, "an X25519 public key has 32 bytes")
        let shared = try Secret(zeroedCount: keyLength)
        let rc: Int32 = shared.withUnsafeMutableBytes { out in
            secret.withUnsafeBytes { s in
                publicKey.withUnsafeBufferPointer { p in
                    crypto_scalarmult(out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                      s.baseAddress!.assumingMemoryBound(to: UInt8.self), p.baseAddress!)
                }
            }
        }
        guard rc == 0 else { return nil }
        // The hash input holds the shared point: it is assembled in secret memory too.
        let label = Array(context.utf8)
        let input = try Secret(zeroedCount: label.count + keyLength + binding.count)
        input.withUnsafeMutableBytes { buffer in
            shared.withUnsafeBytes { point in
                buffer.copyBytes(from: label)
                UnsafeMutableRawBufferPointer(rebasing: buffer[label.count...]).copyMemory(from: point)
                UnsafeMutableRawBufferPointer(rebasing: buffer[(label.count + keyLength)...]).copyBytes(from: binding)
            }
        }
        let key = try Secret(zeroedCount: SymmetricKeyLength)
        key.withUnsafeMutableBytes { out in
            input.withUnsafeBytes { i in
                _ = crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
                                       i.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(i.count), nil, 0)
            }
        }
        return key
    }
}

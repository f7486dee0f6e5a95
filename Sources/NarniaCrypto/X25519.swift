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

    /// Writes the X25519 shared point of `secret` and the peer's `publicKey` into `point` (32
    /// bytes of secret memory); false for a low-order peer key (an all-zero point).
    static func sharedPoint(secret: Secret, publicKey: [UInt8], into point: UnsafeMutableRawBufferPointer) -> Bool {
        Sodium.ensureInitialized()
        precondition(publicKey.count == keyLength && point.count == keyLength)
        return secret.withUnsafeBytes { s in
            publicKey.withUnsafeBufferPointer { p in
                crypto_scalarmult(point.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                  s.baseAddress!.assumingMemoryBound(to: UInt8.self), p.baseAddress!)
            }
        } == 0
    }

    /// A 32-byte symmetric key agreed between `secret` and the peer's `publicKey`: BLAKE2b-256
    /// of `context` (a label), the shared point, and `binding` (both public keys, so that the
    /// key belongs to this exchange only). Nil when the peer's key is a low-order point (the
    /// shared point is all zeros), which no honest sender produces.
    ///
    /// The top bit of the peer's key is ignored, as X25519 itself does (RFC 7748, 5).
    public static func agreedKey(secret: Secret, publicKey: [UInt8], context: String, binding: [UInt8]) throws -> Secret? {
        let agreement = try Agreement(context: context, bindingLength: binding.count)
        let key = try Secret(zeroedCount: SymmetricKeyLength)
        return agreement.agree(secret: secret, publicKey: publicKey, binding: binding, into: key) ? key : nil
    }

    /// Key agreements of one shape (one label, bindings of one length) without an allocation
    /// each: the shared point and the hash input live in one piece of secret memory, reused.
    /// Unlocking a vault with a thousand drops waiting agrees a thousand keys.
    public final class Agreement {
        private let label: [UInt8]
        private let bindingLength: Int
        /// label || shared point || binding: the hash input.
        private let input: Secret

        public init(context: String, bindingLength: Int) throws {
            label = Array(context.utf8)
            self.bindingLength = bindingLength
            input = try Secret(zeroedCount: label.count + keyLength + bindingLength)
        }

        /// Writes the key agreed between `secret` and `publicKey` (see `agreedKey`) into `key`
        /// (32 bytes); false for a low-order peer key. Hold `secret`, `key` and this agreement
        /// open (`beginAccess`) around a run of calls to keep their pages' protection still.
        public func agree(secret: Secret, publicKey: [UInt8], binding: [UInt8], into key: Secret) -> Bool {
            Sodium.ensureInitialized()
            precondition(publicKey.count == keyLength && binding.count == bindingLength && key.count == SymmetricKeyLength)
            return input.withUnsafeMutableBytes { buffer in
                buffer.copyBytes(from: label)
                let point = UnsafeMutableRawBufferPointer(rebasing: buffer[label.count..<(label.count + keyLength)])
                guard sharedPoint(secret: secret, publicKey: publicKey, into: point) else { return false }
                UnsafeMutableRawBufferPointer(rebasing: buffer[(label.count + keyLength)...]).copyBytes(from: binding)
                key.withUnsafeMutableBytes { out in
                    _ = crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
                                           buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(buffer.count), nil, 0)
                }
                return true
            }
        }

        /// Keeps the agreement's memory open for a run of `agree` calls.
        public func beginAccess() { input.beginAccess() }
        public func endAccess() { input.endAccess() }
    }
}

internal import CSodium

/// Argon2id cost parameters (`crypto_pwhash` with `crypto_pwhash_ALG_ARGON2ID13`).
public struct KDFParameters: Equatable, Sendable {
    /// Number of passes (`opslimit`).
    public var opsLimit: UInt32
    /// Memory in KiB (`memlimit / 1024`).
    public var memLimitKiB: UInt32

    public init(opsLimit: UInt32, memLimitKiB: UInt32) {
        self.opsLimit = opsLimit
        self.memLimitKiB = memLimitKiB
    }

    /// libsodium's MODERATE limits: the default for every new vault (3 passes, 256 MiB).
    public static var moderate: KDFParameters {
        KDFParameters(opsLimit: UInt32(crypto_pwhash_argon2id_opslimit_moderate()),
                      memLimitKiB: UInt32(crypto_pwhash_argon2id_memlimit_moderate() / 1024))
    }

    /// The cheapest limits libsodium accepts. Only for tests: see `NARNIA_INSECURE_TEST_KDF`
    /// in the README; a vault created with them says so on every open.
    public static var insecureTestOnly: KDFParameters {
        KDFParameters(opsLimit: UInt32(crypto_pwhash_argon2id_opslimit_min()),
                      memLimitKiB: UInt32(crypto_pwhash_argon2id_memlimit_min() / 1024))
    }

    /// libsodium's SENSITIVE limits (4 passes, 1 GiB): the most a key file may ask for.
    public static var sensitive: KDFParameters {
        KDFParameters(opsLimit: UInt32(crypto_pwhash_argon2id_opslimit_sensitive()),
                      memLimitKiB: UInt32(crypto_pwhash_argon2id_memlimit_sensitive() / 1024))
    }

    /// True when these limits are within the range libsodium accepts and no costlier than
    /// SENSITIVE: the limits in a key file need no secret to change, so a larger request is
    /// refused before deriving rather than costing minutes and gigabytes.
    public var isAcceptable: Bool {
        let minOps = UInt32(crypto_pwhash_argon2id_opslimit_min())
        let minMem = UInt32(crypto_pwhash_argon2id_memlimit_min() / 1024)
        let cap = KDFParameters.sensitive
        return opsLimit >= minOps && opsLimit <= cap.opsLimit && memLimitKiB >= minMem && memLimitKiB <= cap.memLimitKiB
    }

    /// True when these limits cost more than MODERATE, this program's default.
    public var isCostlierThanModerate: Bool {
        let m = KDFParameters.moderate
        return opsLimit > m.opsLimit || memLimitKiB > m.memLimitKiB
    }

    /// True for parameters weaker than MODERATE.
    public var isWeakerThanModerate: Bool {
        let m = KDFParameters.moderate
        return opsLimit < m.opsLimit || memLimitKiB < m.memLimitKiB
    }
}

/// Key derivation from a passphrase.
public enum PassphraseKey {
    /// Length of the salt (`crypto_pwhash_SALTBYTES`).
    public static var saltLength: Int { Int(crypto_pwhash_argon2id_saltbytes()) }

    /// Derives a 32-byte key-encryption key from `passphrase` with Argon2id
    /// (`crypto_pwhash`, `crypto_pwhash_ALG_ARGON2ID13`). The working memory is freed on return.
    /// - Throws: `CryptoError.keyDerivationFailed` when libsodium refuses (out of memory).
    public static func derive(passphrase: Secret, salt: [UInt8], parameters: KDFParameters) throws -> Secret {
        Sodium.ensureInitialized()
        guard salt.count == saltLength else { throw CryptoError.invalidLength("salt") }
        let key = try Secret(zeroedCount: SymmetricKeyLength)
        let rc: Int32 = key.withUnsafeMutableBytes { out in
            passphrase.withUnsafeBytes { pw in
                salt.withUnsafeBufferPointer { s in
                    crypto_pwhash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(out.count),
                                  pw.baseAddress!.assumingMemoryBound(to: CChar.self), UInt64(pw.count),
                                  s.baseAddress!, UInt64(parameters.opsLimit), Int(parameters.memLimitKiB) * 1024,
                                  crypto_pwhash_argon2id_alg_argon2id13())
                }
            }
        }
        guard rc == 0 else { throw CryptoError.keyDerivationFailed }
        return key
    }
}

/// Length of every symmetric key Narnia uses (XChaCha20-Poly1305 and `crypto_kdf` keys).
public var SymmetricKeyLength: Int { Int(crypto_aead_xchacha20poly1305_ietf_keybytes()) }

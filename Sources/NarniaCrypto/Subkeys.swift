internal import CSodium

/// The purposes of keys derived from the master key (`crypto_kdf_derive_from_key`).
/// The raw values are the `subkey_id` arguments and are part of the format: never renumber.
public enum SubkeyPurpose: UInt64, Sendable {
    /// Encrypts the bodies of metadata journal records.
    case journalBody = 1
    /// Encrypts the length headers of metadata journal records.
    case journalHeader = 2
    /// Keys the tags that make store file names recognisable to the vault alone, and the
    /// identifier of a device (docs/FORMAT.md, "Names").
    case names = 3
}

extension Secret {
    /// Derives a 32-byte subkey for `purpose` from this master key
    /// (`crypto_kdf_derive_from_key`, context `"NarniaV1"`).
    public func deriveSubkey(_ purpose: SubkeyPurpose) throws -> Secret {
        Sodium.ensureInitialized()
        precondition(count == Int(crypto_kdf_keybytes()), "master key has the wrong length")
        let sub = try Secret(zeroedCount: SymmetricKeyLength)
        let context: [CChar] = Array("NarniaV1".utf8CString.prefix(Int(crypto_kdf_contextbytes())))
        let rc: Int32 = sub.withUnsafeMutableBytes { out in
            withUnsafeBytes { master in
                crypto_kdf_derive_from_key(out.baseAddress!.assumingMemoryBound(to: UInt8.self), out.count,
                                           purpose.rawValue, context,
                                           master.baseAddress!.assumingMemoryBound(to: UInt8.self))
            }
        }
        precondition(rc == 0, "crypto_kdf_derive_from_key failed with valid lengths")
        return sub
    }
}

extension Secret {
    /// BLAKE2b of `input` keyed with this secret (`crypto_generichash`), `length` bytes long.
    public func keyedHash(_ input: [UInt8], length: Int) -> [UInt8] {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: length)
        withUnsafeBytes { key in
            out.withUnsafeMutableBufferPointer { o in
                input.withUnsafeBufferPointer { i in
                    _ = crypto_generichash(o.baseAddress!, length, i.baseAddress, UInt64(i.count),
                                           key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count)
                }
            }
        }
        return out
    }

    /// Keyed BLAKE2b of many inputs under one access to the secret: `body` is given a function
    /// that writes the hash of its first argument, as long as its second (at most 64 bytes),
    /// into the second. That function may be called from several threads at once, and only
    /// while `body` runs.
    public func withKeyedHashing<R>(
        _ body: (_ hash: @Sendable (UnsafeRawBufferPointer, UnsafeMutableRawBufferPointer) -> Void) throws -> R
    ) rethrows -> R {
        Sodium.ensureInitialized()
        return try withUnsafeBytes { bytes in
            // Read only, and only while the secret is open for `body`.
            nonisolated(unsafe) let key = bytes
            return try body { input, output in
                _ = crypto_generichash(output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count,
                                       input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(input.count),
                                       key.baseAddress!.assumingMemoryBound(to: UInt8.self), key.count)
            }
        }
    }
}

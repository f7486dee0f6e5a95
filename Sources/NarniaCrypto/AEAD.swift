internal import CSodium

/// XChaCha20-Poly1305 (IETF) authenticated encryption, in place, with detached-free combined tags.
///
/// Every function works on caller-owned buffers so that the streaming loops allocate nothing
/// per chunk.
public enum AEAD {
    /// Nonce length (`crypto_aead_xchacha20poly1305_ietf_npubbytes`).
    public static let nonceLength = Int(crypto_aead_xchacha20poly1305_ietf_npubbytes())
    /// Tag length (`crypto_aead_xchacha20poly1305_ietf_abytes`).
    public static let tagLength = Int(crypto_aead_xchacha20poly1305_ietf_abytes())

    /// Encrypts `buffer[0..<plaintextLength]` in place and appends the tag, so the buffer must
    /// hold `plaintextLength + tagLength` bytes (`crypto_aead_xchacha20poly1305_ietf_encrypt`).
    /// - Returns: the ciphertext length.
    @discardableResult
    package static func sealInPlace(_ buffer: UnsafeMutableRawPointer, plaintextLength: Int,
                                   additionalData: UnsafeRawBufferPointer,
                                   nonce: UnsafeRawPointer, key: UnsafeRawBufferPointer) -> Int {
        precondition(key.count == SymmetricKeyLength)
        var clen: UInt64 = 0
        let p = buffer.assumingMemoryBound(to: UInt8.self)
        let rc = crypto_aead_xchacha20poly1305_ietf_encrypt(
            p, &clen, p, UInt64(plaintextLength),
            additionalData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(additionalData.count),
            nil, nonce.assumingMemoryBound(to: UInt8.self), key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        precondition(rc == 0, "xchacha20poly1305 encryption cannot fail")
        return Int(clen)
    }

    /// Decrypts `buffer[0..<ciphertextLength]` in place (`crypto_aead_xchacha20poly1305_ietf_decrypt`).
    /// - Returns: the plaintext length.
    /// - Throws: `CryptoError.authenticationFailed` when the tag does not verify; the buffer
    ///   then holds no plaintext.
    package static func openInPlace(_ buffer: UnsafeMutableRawPointer, ciphertextLength: Int,
                                   additionalData: UnsafeRawBufferPointer,
                                   nonce: UnsafeRawPointer, key: UnsafeRawBufferPointer) throws -> Int {
        precondition(key.count == SymmetricKeyLength)
        guard ciphertextLength >= tagLength else { throw CryptoError.authenticationFailed }
        var mlen: UInt64 = 0
        let p = buffer.assumingMemoryBound(to: UInt8.self)
        let rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
            p, &mlen, nil, p, UInt64(ciphertextLength),
            additionalData.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(additionalData.count),
            nonce.assumingMemoryBound(to: UInt8.self), key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard rc == 0 else { throw CryptoError.authenticationFailed }
        return Int(mlen)
    }

    /// Convenience for small messages: returns `ciphertext || tag` of `plaintext`.
    public static func seal(_ plaintext: [UInt8], additionalData: [UInt8], nonce: [UInt8], key: Secret) -> [UInt8] {
        precondition(nonce.count == nonceLength)
        var buffer = plaintext + [UInt8](repeating: 0, count: tagLength)
        buffer.withUnsafeMutableBytes { b in
            additionalData.withUnsafeBytes { ad in
                nonce.withUnsafeBytes { n in
                    key.withUnsafeBytes { k in
                        _ = sealInPlace(b.baseAddress!, plaintextLength: plaintext.count, additionalData: ad, nonce: n.baseAddress!, key: k)
                    }
                }
            }
        }
        return buffer
    }

    /// Convenience for small messages: authenticates and decrypts `ciphertext || tag`.
    /// - Throws: `CryptoError.authenticationFailed`.
    public static func open(_ ciphertext: [UInt8], additionalData: [UInt8], nonce: [UInt8], key: Secret) throws -> [UInt8] {
        precondition(nonce.count == nonceLength)
        var buffer = ciphertext
        let n: Int = try buffer.withUnsafeMutableBytes { b in
            try additionalData.withUnsafeBytes { ad in
                try nonce.withUnsafeBytes { nb in
                    try key.withUnsafeBytes { k in
                        try openInPlace(b.baseAddress ?? UnsafeMutableRawPointer(bitPattern: 1)!, ciphertextLength: ciphertext.count,
                                        additionalData: ad, nonce: nb.baseAddress!, key: k)
                    }
                }
            }
        }
        return Array(buffer.prefix(n))
    }
}

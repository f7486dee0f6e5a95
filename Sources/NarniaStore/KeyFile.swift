import NarniaCrypto

/// The key file: the passphrase-wrapped master key and the pointer to the current journal
/// (docs/FORMAT.md, "The key file").
///
/// ```
/// salt[16] | params[8] XOR BLAKE2b-64(salt) | nonce[24] | XChaCha20-Poly1305(payload) | tag[16]
/// payload: version u8 = 1 | master key[32] | journal id[16] | log2(chunk size) u8
/// AD = salt | masked params
/// ```
struct KeyFile {
    static let version: UInt8 = 1
    static let payloadLength = 1 + 32 + 16 + 1

    /// What the key file holds once unwrapped.
    struct Contents {
        var masterKey: Secret
        var journalID: Identifier
        var chunkSizeLog2: UInt8
    }

    /// Seals `contents` under the key-encryption key: returns the file's bytes.
    static func seal(_ contents: Contents, kek: Secret, salt: [UInt8], parameters: KDFParameters) throws -> [UInt8] {
        let masked = maskedParameters(parameters, salt: salt)
        let nonce = randomBytes(AEAD.nonceLength)
        let ad = salt + masked
        let sealed = try Secret(zeroedCount: payloadLength + AEAD.tagLength)
        let ciphertext: [UInt8] = sealed.withUnsafeMutableBytes { buf in
            buf[0] = version
            contents.masterKey.withUnsafeBytes { (buf.baseAddress! + 1).copyMemory(from: $0.baseAddress!, byteCount: 32) }
            for (i, b) in contents.journalID.bytes.enumerated() { buf[33 + i] = b }
            buf[49] = contents.chunkSizeLog2
            ad.withUnsafeBytes { a in
                nonce.withUnsafeBytes { n in
                    kek.withUnsafeBytes { k in
                        _ = AEAD.sealInPlace(buf.baseAddress!, plaintextLength: payloadLength, additionalData: a, nonce: n.baseAddress!, key: k)
                    }
                }
            }
            return Array(buf)
        }
        return salt + masked + nonce + ciphertext
    }

    /// The salt and cost parameters, readable without the passphrase.
    static func header(of bytes: [UInt8]) -> (salt: [UInt8], parameters: KDFParameters)? {
        let saltLength = PassphraseKey.saltLength
        guard bytes.count == saltLength + 8 + AEAD.nonceLength + payloadLength + AEAD.tagLength else { return nil }
        let salt = Array(bytes[0..<saltLength])
        let mask = genericHash(salt, length: 8)
        var p = [UInt8](repeating: 0, count: 8)
        for i in 0..<8 { p[i] = bytes[saltLength + i] ^ mask[i] }
        let ops = UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | UInt32(p[3]) << 24
        let mem = UInt32(p[4]) | UInt32(p[5]) << 8 | UInt32(p[6]) << 16 | UInt32(p[7]) << 24
        return (salt, KDFParameters(opsLimit: ops, memLimitKiB: mem))
    }

    /// Unwraps the key file with the key-encryption key.
    /// - Throws: `CryptoError.authenticationFailed` for a wrong passphrase or a modified file.
    static func open(_ bytes: [UInt8], kek: Secret) throws -> Contents {
        let saltLength = PassphraseKey.saltLength
        guard header(of: bytes) != nil else { throw CryptoError.authenticationFailed }
        let ad = Array(bytes[0..<(saltLength + 8)])
        let nonce = Array(bytes[(saltLength + 8)..<(saltLength + 8 + AEAD.nonceLength)])
        let ciphertext = bytes[(saltLength + 8 + AEAD.nonceLength)...]
        let buffer = try Secret(zeroedCount: ciphertext.count)
        return try buffer.withUnsafeMutableBytes { buf in
            ciphertext.withUnsafeBytes { buf.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            let n = try ad.withUnsafeBytes { a in
                try nonce.withUnsafeBytes { nb in
                    try kek.withUnsafeBytes { k in
                        try AEAD.openInPlace(buf.baseAddress!, ciphertextLength: buf.count, additionalData: a, nonce: nb.baseAddress!, key: k)
                    }
                }
            }
            guard n == payloadLength, buf[0] == version else { throw CryptoError.authenticationFailed }
            let master = try Secret(copying: UnsafeRawBufferPointer(rebasing: buf[1..<33]))
            return Contents(masterKey: master, journalID: Identifier(buf[33..<49]), chunkSizeLog2: buf[49])
        }
    }

    static func maskedParameters(_ p: KDFParameters, salt: [UInt8]) -> [UInt8] {
        let mask = genericHash(salt, length: 8)
        var raw = [UInt8](repeating: 0, count: 8)
        for i in 0..<4 {
            raw[i] = UInt8(truncatingIfNeeded: p.opsLimit >> (8 * UInt32(i)))
            raw[4 + i] = UInt8(truncatingIfNeeded: p.memLimitKiB >> (8 * UInt32(i)))
        }
        return zip(raw, mask).map { $0 ^ $1 }
    }
}

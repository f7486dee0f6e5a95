import NarniaCrypto

/// A key file: the master key wrapped under the passphrase (docs/FORMAT.md, "Key files").
///
/// ```
/// format 2 (98 bytes):  salt[16] | params[8] XOR BLAKE2b-64(salt) | nonce[24] | sealed(payload[34]) | tag[16]
///                       payload: version u8 = 2 | master key[32] | log2(chunk size) u8
///                       AD = salt | masked params | the key file's identifier (its name)
/// format 1 (114 bytes): the same head; payload: version u8 = 1 | master key[32] |
///                       journal id[16] | log2(chunk size) u8; AD = salt | masked params
/// ```
/// Format 1 is only read, to upgrade the store it belongs to.
enum KeyFile {
    static let saltLength = 16
    static let headLength = saltLength + 8 + 24
    static let length = headLength + 34 + 16
    static let formerLength = headLength + 50 + 16

    /// What a key file holds once unwrapped.
    struct Contents {
        var masterKey: Secret
        var chunkSizeLog2: UInt8
        /// For a format-1 key file: the identifier of its journal.
        var formerJournal: Identifier?
    }

    /// The salt and cost parameters, readable without the passphrase, and whether the file is
    /// a format-1 key file; nil when the length is neither format's.
    static func header(of bytes: [UInt8]) -> (salt: [UInt8], parameters: KDFParameters, former: Bool)? {
        guard bytes.count == length || bytes.count == formerLength, saltLength == PassphraseKey.saltLength else { return nil }
        let salt = Array(bytes[0..<saltLength])
        let mask = genericHash(salt, length: 8)
        var p = [UInt8](repeating: 0, count: 8)
        for i in 0..<8 { p[i] = bytes[saltLength + i] ^ mask[i] }
        let ops = UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | UInt32(p[3]) << 24
        let mem = UInt32(p[4]) | UInt32(p[5]) << 8 | UInt32(p[6]) << 16 | UInt32(p[7]) << 24
        return (salt, KDFParameters(opsLimit: ops, memLimitKiB: mem), bytes.count == formerLength)
    }

    /// Seals `masterKey` under the key-encryption key as the format-2 key file `id`.
    static func seal(masterKey: Secret, kek: Secret, salt: [UInt8], parameters: KDFParameters, id: Identifier) throws -> [UInt8] {
        let masked = maskedParameters(parameters, salt: salt)
        let nonce = randomBytes(AEAD.nonceLength)
        let ad = salt + masked + id.bytes
        let sealed = try Secret(zeroedCount: 34 + AEAD.tagLength)
        let ciphertext: [UInt8] = sealed.withUnsafeMutableBytes { buf in
            buf[0] = 2
            masterKey.withUnsafeBytes { (buf.baseAddress! + 1).copyMemory(from: $0.baseAddress!, byteCount: 32) }
            buf[33] = ContentFormat.chunkSizeLog2
            ad.withUnsafeBytes { a in
                nonce.withUnsafeBytes { n in
                    kek.withUnsafeBytes { k in
                        _ = AEAD.sealInPlace(buf.baseAddress!, plaintextLength: 34, additionalData: a, nonce: n.baseAddress!, key: k)
                    }
                }
            }
            return Array(buf)
        }
        return salt + masked + nonce + ciphertext
    }

    /// Unwraps the key file `id` with the key-encryption key.
    /// - Throws: `CryptoError.authenticationFailed` for a wrong passphrase or an altered file.
    static func open(_ bytes: [UInt8], kek: Secret, id: Identifier) throws -> Contents {
        guard let (_, _, former) = header(of: bytes) else { throw CryptoError.authenticationFailed }
        let ad = Array(bytes[0..<(saltLength + 8)]) + (former ? [] : id.bytes)
        let nonce = Array(bytes[(saltLength + 8)..<headLength])
        let ciphertext = bytes[headLength...]
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
            let master = try Secret(copying: UnsafeRawBufferPointer(rebasing: buf[1..<33]))
            if former {
                guard n == 50, buf[0] == 1 else { throw CryptoError.authenticationFailed }
                return Contents(masterKey: master, chunkSizeLog2: buf[49], formerJournal: Identifier(buf[33..<49]))
            }
            guard n == 34, buf[0] == 2 else { throw CryptoError.authenticationFailed }
            return Contents(masterKey: master, chunkSizeLog2: buf[33], formerJournal: nil)
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

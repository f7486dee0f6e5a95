import NarniaCrypto

/// A key file: the master keys wrapped under the passphrase (docs/FORMAT.md, "Key files").
///
/// ```
/// format 2 (98 bytes):  salt[16] | params[8] XOR BLAKE2b-64(salt) | nonce[24] | sealed(payload) | tag[16]
///                       payload[34]: version u8 = 2 | master key[32] | log2(chunk size) u8
///                       AD = salt | masked params | the key file's identifier (its name)
/// after a rotation (67 + 32·k bytes, 2 ≤ k ≤ 100): the same, with
///                       payload: version u8 = 3 | log2(chunk size) u8 | k u8 | k master keys[32],
///                       the current first, the vault's first last
/// format 1 (114 bytes): the same head; payload: version u8 = 1 | master key[32] |
///                       journal id[16] | log2(chunk size) u8; AD = salt | masked params
/// ```
/// Format 1 is only read, to upgrade the store it belongs to.
enum KeyFile {
    static let saltLength = 16
    static let headLength = saltLength + 8 + 24
    static let length = headLength + 34 + 16
    static let formerLength = headLength + 50 + 16
    /// The length of a key file holding `count` master keys.
    static func length(holding count: Int) -> Int { count == 1 ? length : headLength + 3 + 32 * count + 16 }
    static let maximumLength = length(holding: MasterKeys.maximumCount)

    /// What a key file holds once unwrapped.
    struct Contents {
        var masters: MasterKeys
        var chunkSizeLog2: UInt8
        /// For a format-1 key file: the identifier of its journal.
        var formerJournal: Identifier?
    }

    /// The number of master keys a key file of `length` bytes holds (0 for format 1), or nil
    /// when no key file has that length.
    static func masterCount(ofLength length: Int) -> Int? {
        if length == Self.length { return 1 }
        if length == formerLength { return 0 }
        let rest = length - headLength - 3 - 16
        guard rest > 0, rest % 32 == 0, (2...MasterKeys.maximumCount).contains(rest / 32) else { return nil }
        return rest / 32
    }

    /// The salt and cost parameters, readable without the passphrase, and whether the file is
    /// a format-1 key file; nil when no key file has its length.
    static func header(of bytes: [UInt8]) -> (salt: [UInt8], parameters: KDFParameters, former: Bool)? {
        guard let count = masterCount(ofLength: bytes.count), saltLength == PassphraseKey.saltLength else { return nil }
        let salt = Array(bytes[0..<saltLength])
        let mask = genericHash(salt, length: 8)
        var p = [UInt8](repeating: 0, count: 8)
        for i in 0..<8 { p[i] = bytes[saltLength + i] ^ mask[i] }
        let ops = UInt32(p[0]) | UInt32(p[1]) << 8 | UInt32(p[2]) << 16 | UInt32(p[3]) << 24
        let mem = UInt32(p[4]) | UInt32(p[5]) << 8 | UInt32(p[6]) << 16 | UInt32(p[7]) << 24
        return (salt, KDFParameters(opsLimit: ops, memLimitKiB: mem), count == 0)
    }

    /// Seals `masters` under the key-encryption key as the key file `id`: format 2 when it
    /// holds one key, the rotated form otherwise.
    static func seal(masters: MasterKeys, kek: Secret, salt: [UInt8], parameters: KDFParameters, id: Identifier) throws -> [UInt8] {
        let masked = maskedParameters(parameters, salt: salt)
        let nonce = randomBytes(AEAD.nonceLength)
        let ad = salt + masked + id.bytes
        let keys = masters.all
        let payloadLength = keys.count == 1 ? 34 : 3 + 32 * keys.count
        let sealed = try Secret(zeroedCount: payloadLength + AEAD.tagLength)
        let ciphertext: [UInt8] = sealed.withUnsafeMutableBytes { buf in
            var at = 0
            if keys.count == 1 {
                buf[0] = 2
                at = 1
            } else {
                buf[0] = 3
                buf[1] = ContentFormat.chunkSizeLog2
                buf[2] = UInt8(keys.count)
                at = 3
            }
            for key in keys {
                key.withUnsafeBytes { (buf.baseAddress! + at).copyMemory(from: $0.baseAddress!, byteCount: 32) }
                at += 32
            }
            if keys.count == 1 { buf[33] = ContentFormat.chunkSizeLog2 }
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

    /// Unwraps the key file `id` with the key-encryption key.
    /// - Throws: `CryptoError.authenticationFailed` for a wrong passphrase or an altered file.
    static func open(_ bytes: [UInt8], kek: Secret, id: Identifier) throws -> Contents {
        guard let count = masterCount(ofLength: bytes.count), header(of: bytes) != nil else { throw CryptoError.authenticationFailed }
        let former = count == 0
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
            func key(at offset: Int) throws -> Secret { try Secret(copying: UnsafeRawBufferPointer(rebasing: buf[offset..<(offset + 32)])) }
            switch count {
            case 0:
                guard n == 50, buf[0] == 1 else { throw CryptoError.authenticationFailed }
                return Contents(masters: MasterKeys([try key(at: 1)]), chunkSizeLog2: buf[49], formerJournal: Identifier(buf[33..<49]))
            case 1:
                guard n == 34, buf[0] == 2 else { throw CryptoError.authenticationFailed }
                return Contents(masters: MasterKeys([try key(at: 1)]), chunkSizeLog2: buf[33], formerJournal: nil)
            default:
                guard n == 3 + 32 * count, buf[0] == 3, Int(buf[2]) == count else { throw CryptoError.authenticationFailed }
                let keys = try (0..<count).map { try key(at: 3 + 32 * $0) }
                return Contents(masters: MasterKeys(keys), chunkSizeLog2: buf[1], formerJournal: nil)
            }
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

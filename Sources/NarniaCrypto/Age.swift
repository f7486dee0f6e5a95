internal import CSodium

/// Why an age file could not be read.
public enum AgeError: Error, CustomStringConvertible, Equatable {
    /// The header is not one age v1 writes.
    case malformedHeader(String)
    /// The header's MAC does not match: the header was altered.
    case headerAuthentication
    /// A payload chunk does not authenticate: altered, reordered, or the file was cut.
    case chunkFailed(Int)

    public var description: String {
        switch self {
        case .malformedHeader(let why): return "not a well-formed age file (\(why))"
        case .headerAuthentication: return "its age header does not authenticate (altered)"
        case .chunkFailed(let i): return "its age payload fails authentication at chunk \(i) (altered or cut)"
        }
    }
}

/// The header of a file encrypted with age (age-encryption.org/v1, the binary form): its
/// X25519 recipient stanzas and its MAC. `import` uses it to decrypt files sent to the vault's
/// inbox recipient (`inbox-key` prints it as `age1…`) by any age implementation.
public struct AgeHeader {
    /// The first line of every binary age file.
    public static let magic = Array("age-encryption.org/v1\n".utf8)
    /// The most header bytes read: a header names its recipients, a few hundred bytes each.
    public static let maximumLength = 64 << 10

    /// The X25519 stanzas: the ephemeral share and the wrapped file key.
    private var stanzas: [(share: [UInt8], body: [UInt8])] = []
    /// The header up to and including `---`, which the MAC covers.
    private let covered: [UInt8]
    private let mac: [UInt8]
    /// The header's length: where the payload's nonce starts.
    public let length: Int

    /// Parses the header at the start of `bytes` (at most `maximumLength` of the file).
    /// - Throws: `AgeError.malformedHeader`.
    public init(parsing bytes: [UInt8]) throws {
        guard bytes.starts(with: Self.magic) else { throw AgeError.malformedHeader("no age v1 line") }
        var offset = Self.magic.count
        func line() throws -> ArraySlice<UInt8> {
            guard let end = bytes[offset...].firstIndex(of: 0x0A) else { throw AgeError.malformedHeader("the header does not end") }
            defer { offset = end + 1 }
            return bytes[offset..<end]
        }
        while true {
            let text = try line()
            if text.starts(with: Array("--- ".utf8)) {
                covered = Array(bytes[..<(text.startIndex + 3)])
                mac = try Self.base64(text.dropFirst(4), length: 32)
                break
            }
            guard text.starts(with: Array("-> ".utf8)) else { throw AgeError.malformedHeader("a stanza does not begin with ->") }
            let arguments = text.dropFirst(3).split(separator: 0x20, omittingEmptySubsequences: false)
            var body: [UInt8] = []
            while true {
                let wrapped = try line()
                guard wrapped.count <= 64 else { throw AgeError.malformedHeader("a stanza line is too long") }
                body += wrapped
                if wrapped.count < 64 { break }
            }
            if arguments.count == 2, arguments[0].elementsEqual("X25519".utf8) {
                stanzas.append((try Self.base64(arguments[1], length: 32), try Self.base64(body[...], length: 32)))
            }
        }
        length = offset
    }

    /// The file key, when one of the X25519 stanzas is for the identity `secret` (whose public
    /// key is `recipient`); nil when none is. The header's MAC is checked with it.
    /// - Throws: `AgeError.headerAuthentication` when the key opens but the MAC fails.
    public func fileKey(identity secret: Secret, recipient: [UInt8]) throws -> Secret? {
        for stanza in stanzas {
            let shared = try Secret(zeroedCount: X25519.keyLength)
            guard shared.withUnsafeMutableBytes({ X25519.sharedPoint(secret: secret, publicKey: stanza.share, into: $0) }) else { continue }
            let wrapKey = try shared.withUnsafeBytes {
                try HKDF.sha256(key: $0, salt: stanza.share + recipient, info: Array("age-encryption.org/v1/X25519".utf8))
            }
            let fileKey = try Secret(zeroedCount: 16)
            let opened: Bool = fileKey.withUnsafeMutableBytes { out in
                wrapKey.withUnsafeBytes { k in
                    ChaCha20Poly1305.open(stanza.body[...], nonce: [UInt8](repeating: 0, count: 12), key: k, into: out.baseAddress!) == 16
                }
            }
            guard opened else { continue }
            let macKey = try fileKey.withUnsafeBytes { try HKDF.sha256(key: $0, salt: [], info: Array("header".utf8)) }
            var expected = [UInt8](repeating: 0, count: 32)
            macKey.withUnsafeBytes { k in
                covered.withUnsafeBytes { c in
                    expected.withUnsafeMutableBytes { HKDF.hmac(key: k, parts: [c], into: $0) }
                }
            }
            guard sodium_memcmp(expected, mac, 32) == 0 else { throw AgeError.headerAuthentication }
            return fileKey
        }
        return nil
    }

    /// Canonical unpadded base64 of exactly `length` bytes.
    private static func base64(_ text: ArraySlice<UInt8>, length: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        var written = 0
        let chars = Array(text).map { CChar(bitPattern: $0) }
        let rc = sodium_base642bin(&out, out.count, chars, chars.count, nil, &written, nil,
                                   sodium_base64_VARIANT_ORIGINAL_NO_PADDING)
        guard rc == 0, written == length else { throw AgeError.malformedHeader("bad base64") }
        return out
    }
}

/// An age payload, decrypted as it is read: a 16-byte nonce, then chunks of 64 KiB of
/// ChaCha20-Poly1305 (STREAM: an 11-byte big-endian counter and a last-chunk flag as the
/// nonce), under HKDF-SHA256(file key, nonce, "payload").
public final class AgePayloadReader {
    static let chunkSize = 64 << 10
    static let tagLength = 16
    private let key: Secret
    private let source: (UnsafeMutableRawPointer, Int) throws -> Int
    private var sealed: [UInt8]
    private var sealedCount = 0
    private var plain: [UInt8]
    private var plainStart = 0, plainEnd = 0
    private var counter: UInt64 = 0
    private var finished = false

    /// Reads the payload's nonce from `source` (positioned just after the header) and gets
    /// ready to decrypt what follows it.
    public init(fileKey: Secret, source: @escaping (UnsafeMutableRawPointer, Int) throws -> Int) throws {
        var nonce = [UInt8](repeating: 0, count: 16)
        var got = 0
        while got < 16 {
            let n = try nonce.withUnsafeMutableBytes { try source($0.baseAddress! + got, 16 - got) }
            if n == 0 { throw AgeError.chunkFailed(0) }
            got += n
        }
        key = try fileKey.withUnsafeBytes { try HKDF.sha256(key: $0, salt: nonce, info: Array("payload".utf8)) }
        self.source = source
        sealed = [UInt8](repeating: 0, count: Self.chunkSize + Self.tagLength + 1)
        plain = [UInt8](repeating: 0, count: Self.chunkSize)
    }

    deinit { plain.withUnsafeMutableBytes { wipe($0) } }

    /// The plaintext size of a payload of `length` bytes (nonce included), or nil when no
    /// payload has that length.
    public static func plaintextSize(payloadLength length: Int64) -> Int64? {
        let chunks = length - 16
        guard chunks >= Int64(tagLength) else { return nil }
        let full = Int64(chunkSize + tagLength)
        let n = max(1, (chunks + full - 1) / full)
        let size = chunks - n * Int64(tagLength)
        return size >= 0 && chunks - (n - 1) * full >= Int64(tagLength) ? size : nil
    }

    /// Copies up to `max` decrypted bytes to `dest`; returns the count, 0 at the end.
    /// - Throws: `AgeError.chunkFailed` when a chunk does not authenticate or the file was cut.
    public func read(into dest: UnsafeMutableRawPointer, max: Int) throws -> Int {
        while plainStart == plainEnd {
            if finished { return 0 }
            try openNextChunk()
        }
        let n = min(max, plainEnd - plainStart)
        plain.withUnsafeBytes { dest.copyMemory(from: $0.baseAddress! + plainStart, byteCount: n) }
        plainStart += n
        return n
    }

    private func openNextChunk() throws {
        // One byte more than a whole chunk tells whether this chunk is the last.
        while sealedCount < sealed.count {
            let n = try sealed.withUnsafeMutableBytes { try source($0.baseAddress! + sealedCount, $0.count - sealedCount) }
            if n == 0 { break }
            sealedCount += n
        }
        let last = sealedCount <= Self.chunkSize + Self.tagLength
        let length = last ? sealedCount : Self.chunkSize + Self.tagLength
        guard length >= Self.tagLength, !(last && length == Self.tagLength && counter > 0) else {
            throw AgeError.chunkFailed(Int(counter))
        }
        var nonce = [UInt8](repeating: 0, count: 12)
        for i in 0..<8 { nonce[3 + i] = UInt8(truncatingIfNeeded: counter >> (56 - 8 * UInt64(i))) }
        nonce[11] = last ? 1 : 0
        let opened = key.withUnsafeBytes { k in
            plain.withUnsafeMutableBytes { out in
                ChaCha20Poly1305.open(sealed[..<length], nonce: nonce, key: k, into: out.baseAddress!)
            }
        }
        guard let opened else { throw AgeError.chunkFailed(Int(counter)) }
        sealed.withUnsafeMutableBytes { b in
            b.baseAddress!.copyMemory(from: b.baseAddress! + length, byteCount: sealedCount - length)
        }
        sealedCount -= length
        counter += 1
        finished = last
        (plainStart, plainEnd) = (0, opened)
    }
}

/// HKDF-SHA256 (RFC 5869) and HMAC-SHA256, as age derives its keys.
enum HKDF {
    /// 32 bytes of HKDF-SHA256 of `key` with `salt` and `info`, in secret memory.
    static func sha256(key: UnsafeRawBufferPointer, salt: [UInt8], info: [UInt8]) throws -> Secret {
        let prk = try Secret(zeroedCount: 32)
        let out = try Secret(zeroedCount: 32)
        prk.withUnsafeMutableBytes { p in salt.withUnsafeBytes { s in hmac(key: s, parts: [key], into: p) } }
        let expand = info + [1]
        out.withUnsafeMutableBytes { o in
            prk.withUnsafeBytes { p in expand.withUnsafeBytes { e in hmac(key: p, parts: [e], into: o) } }
        }
        return out
    }

    static func hmac(key: UnsafeRawBufferPointer, parts: [UnsafeRawBufferPointer], into out: UnsafeMutableRawBufferPointer) {
        var state = crypto_auth_hmacsha256_state()
        // An empty key (HKDF without salt) still needs a pointer; its length says 0.
        let none: UInt8 = 0
        withUnsafePointer(to: none) { empty in
            _ = crypto_auth_hmacsha256_init(&state, key.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? empty, key.count)
        }
        for part in parts where part.count > 0 {
            _ = crypto_auth_hmacsha256_update(&state, part.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(part.count))
        }
        _ = crypto_auth_hmacsha256_final(&state, out.baseAddress!.assumingMemoryBound(to: UInt8.self))
        withUnsafeMutableBytes(of: &state) { wipe($0) }
    }
}

/// ChaCha20-Poly1305 (IETF, 12-byte nonce), as age seals with it.
enum ChaCha20Poly1305 {
    /// Opens `sealed` (ciphertext and tag) into `out`; the plaintext length, or nil when it
    /// does not authenticate.
    static func open(_ sealed: ArraySlice<UInt8>, nonce: [UInt8], key: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) -> Int? {
        guard sealed.count >= 16 else { return nil }
        var written: UInt64 = 0
        let rc = sealed.withUnsafeBufferPointer { c in
            crypto_aead_chacha20poly1305_ietf_decrypt(out.assumingMemoryBound(to: UInt8.self), &written, nil,
                                                      c.baseAddress!, UInt64(c.count), nil, 0, nonce,
                                                      key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        }
        return rc == 0 ? Int(written) : nil
    }
}

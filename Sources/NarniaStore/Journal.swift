import NarniaSystem
import Glibc
import NarniaCrypto

/// Errors about the metadata as a whole.
public enum MetadataError: Error, CustomStringConvertible {
    /// A journal record failed authentication and is not a torn tail: the store was modified.
    case damaged(String)

    public var description: String {
        switch self {
        case .damaged(let why): return "the vault's metadata is damaged (\(why))"
        }
    }
}

/// The append-only, authenticated metadata journal (docs/FORMAT.md, "The journal").
///
/// A record is
/// ```
/// nonce[24] | XChaCha20-Poly1305_headerKey(length u32) tag[16] | XChaCha20-Poly1305_bodyKey(payload) tag[16]
/// AD (header) = journal id | record index u64 | "h";  AD (body) = journal id | record index u64 | "b"
/// ```
/// Each record is one transaction, written with one `pwrite` and made durable with
/// `fdatasync` before the change counts as done. Because the index is bound into both tags,
/// records cannot be reordered, dropped from the middle or moved between journals.
final class Journal {
    static let headerLength = AEAD.nonceLength + 4 + AEAD.tagLength
    static let maximumPayload = 64 << 20

    let id: Identifier
    let path: String
    private let fd: FileDescriptor
    private let bodyKey: Secret
    private let headerKey: Secret
    private(set) var recordCount: UInt64 = 0
    private(set) var endOffset: Int64 = 0

    private init(id: Identifier, path: String, fd: FileDescriptor, bodyKey: Secret, headerKey: Secret) {
        self.id = id
        self.path = path
        self.fd = fd
        self.bodyKey = bodyKey
        self.headerKey = headerKey
    }

    /// Creates an empty journal file (it must not exist).
    static func create(id: Identifier, path: String, bodyKey: Secret, headerKey: Secret) throws -> Journal {
        let fd = try FileDescriptor.open(path, .readWrite, options: [.create, .exclusive], permissions: 0o600)
        return Journal(id: id, path: path, fd: fd, bodyKey: bodyKey, headerKey: headerKey)
    }

    /// Opens a journal and replays every record through `apply`, oldest first. A torn tail —
    /// a record cut short by a crash, or trailing zeros — is truncated away; any other record
    /// that fails authentication throws `MetadataError.damaged`.
    static func open(id: Identifier, path: String, bodyKey: Secret, headerKey: Secret,
                     apply: ([UInt8]) throws -> Void) throws -> Journal {
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, .readWrite)
        } catch let e as SystemError where e.code == ENOENT {
            throw MetadataError.damaged("the journal is missing")
        }
        let journal = Journal(id: id, path: path, fd: fd, bodyKey: bodyKey, headerKey: headerKey)
        try journal.replay(apply)
        return journal
    }

    private func replay(_ apply: ([UInt8]) throws -> Void) throws {
        let size = try fd.size()
        var offset: Int64 = 0
        var header = [UInt8](repeating: 0, count: Self.headerLength)
        while offset < size {
            let remaining = size - offset
            if remaining < Int64(Self.headerLength) {
                try dropTail(at: offset, size: size, reason: "short header")
                return
            }
            _ = try header.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: Self.headerLength, offset: offset) }
            guard let length = openHeader(header, index: recordCount) else {
                try dropTail(at: offset, size: size, reason: "header")
                return
            }
            let bodyLength = Int64(length) + Int64(AEAD.tagLength)
            if remaining < Int64(Self.headerLength) + bodyLength {
                // The header is authentic, so the length is right: the body was cut short.
                try truncate(at: offset)
                return
            }
            var body = [UInt8](repeating: 0, count: Int(bodyLength))
            _ = try body.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: Int(bodyLength), offset: offset + Int64(Self.headerLength)) }
            let nonce = Array(header[0..<AEAD.nonceLength])
            let payloadLength: Int
            do {
                payloadLength = try body.withUnsafeMutableBytes { b in
                    try ad(index: recordCount, part: "b").withUnsafeBytes { a in
                        try nonce.withUnsafeBytes { n in
                            try bodyKey.withUnsafeBytes { k in
                                try AEAD.openInPlace(b.baseAddress!, ciphertextLength: b.count, additionalData: a, nonce: n.baseAddress!, key: k)
                            }
                        }
                    }
                }
            } catch {
                throw MetadataError.damaged("record \(recordCount) of the journal does not authenticate")
            }
            body.removeLast(body.count - payloadLength)
            defer { body.withUnsafeMutableBytes { wipe($0) } }
            do {
                try apply(body)
            } catch is MalformedRecord {
                throw MetadataError.damaged("record \(recordCount) of the journal does not parse")
            }
            offset += Int64(Self.headerLength) + bodyLength
            recordCount += 1
        }
        endOffset = offset
    }

    /// A header that does not authenticate at the very end of the file is a torn write only when
    /// nothing could follow it: the rest of the file is shorter than any record with a body, or
    /// all zeros (a crash after the size grew but before the data landed). Anything else is damage.
    private func dropTail(at offset: Int64, size: Int64, reason: String) throws {
        let remaining = Int(size - offset)
        if remaining < Self.headerLength + AEAD.tagLength {
            try truncate(at: offset)
            return
        }
        var rest = [UInt8](repeating: 0, count: remaining)
        _ = try rest.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: remaining, offset: offset) }
        if rest.allSatisfy({ $0 == 0 }) {
            try truncate(at: offset)
            return
        }
        throw MetadataError.damaged("record \(recordCount) of the journal does not authenticate (\(reason))")
    }

    private func truncate(at offset: Int64) throws {
        try fd.truncate(to: offset)
        try fd.sync()
        endOffset = offset
    }

    private func openHeader(_ header: [UInt8], index: UInt64) -> UInt32? {
        var lengthField = Array(header[AEAD.nonceLength...])
        let nonce = Array(header[0..<AEAD.nonceLength])
        do {
            let n = try lengthField.withUnsafeMutableBytes { b in
                try ad(index: index, part: "h").withUnsafeBytes { a in
                    try nonce.withUnsafeBytes { nb in
                        try headerKey.withUnsafeBytes { k in
                            try AEAD.openInPlace(b.baseAddress!, ciphertextLength: b.count, additionalData: a, nonce: nb.baseAddress!, key: k)
                        }
                    }
                }
            }
            guard n == 4 else { return nil }
            let length = UInt32(lengthField[0]) | UInt32(lengthField[1]) << 8 | UInt32(lengthField[2]) << 16 | UInt32(lengthField[3]) << 24
            return Int(length) <= Self.maximumPayload ? length : nil
        } catch {
            return nil
        }
    }

    private func ad(index: UInt64, part: Character) -> [UInt8] {
        var w = ByteWriter(capacity: 25)
        w.raw(id.bytes)
        w.u64(index)
        w.u8(part.asciiValue!)
        return w.bytes
    }

    /// Appends one record holding `payload` and makes it durable (`fdatasync`). On failure
    /// (a full disk, say) the file is cut back so the journal stays as it was.
    func append(_ payload: [UInt8]) throws {
        precondition(payload.count <= Self.maximumPayload, "journal record too large")
        let nonce = randomBytes(AEAD.nonceLength)
        var record = [UInt8](repeating: 0, count: Self.headerLength + payload.count + AEAD.tagLength)
        defer { record.withUnsafeMutableBytes { wipe($0) } }
        record.withUnsafeMutableBytes { r in
            let base = r.baseAddress!
            nonce.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: AEAD.nonceLength) }
            let lengthField = base + AEAD.nonceLength
            withUnsafeBytes(of: UInt32(payload.count).littleEndian) { lengthField.copyMemory(from: $0.baseAddress!, byteCount: 4) }
            let body = base + Self.headerLength
            payload.withUnsafeBytes { if $0.count > 0 { body.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            nonce.withUnsafeBytes { n in
                ad(index: recordCount, part: "h").withUnsafeBytes { a in
                    headerKey.withUnsafeBytes { k in
                        _ = AEAD.sealInPlace(lengthField, plaintextLength: 4, additionalData: a, nonce: n.baseAddress!, key: k)
                    }
                }
                ad(index: recordCount, part: "b").withUnsafeBytes { a in
                    bodyKey.withUnsafeBytes { k in
                        _ = AEAD.sealInPlace(body, plaintextLength: payload.count, additionalData: a, nonce: n.baseAddress!, key: k)
                    }
                }
            }
        }
        do {
            try record.withUnsafeBytes { r throws in
                var done = 0
                while done < r.count {
                    let n = try retryingInterrupts("write", path) { Glibc.pwrite(fd.raw, r.baseAddress! + done, r.count - done, off_t(endOffset) + off_t(done)) }
                    done += n
                }
            }
            try fd.dataSync()
        } catch {
            try? fd.truncate(to: endOffset)
            throw error
        }
        endOffset += Int64(record.count)
        recordCount += 1
    }

    /// Makes the file's directory entry durable (after creating it).
    func syncFile() throws {
        try fd.sync()
    }
}

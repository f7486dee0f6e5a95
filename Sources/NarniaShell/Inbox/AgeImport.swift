import NarniaCrypto
import NarniaStore
import NarniaSystem

/// `import` of a file encrypted with age to the vault's inbox recipient (`inbox-key` prints it
/// as `age1…`): a phone or another machine with any age implementation can send files. A host
/// file named `NAME.age` whose header has an X25519 stanza for an inbox key is decrypted as it
/// is read and imported as `NAME`; any other `.age` file is imported as it is.
struct AgeImport {
    /// The name without `.age`.
    let name: String
    /// The plaintext size.
    let size: UInt64
    let payload: AgePayloadReader

    /// The decrypting reader of the open host file `fd` (of `size` bytes, called `name`), or nil
    /// when it is not an age file sent to this vault.
    /// - Throws: `AgeError` when it is one but its header or length is damaged.
    static func open(_ fd: FileDescriptor, size: Int64, name: String, vault: Vault) throws -> AgeImport? {
        guard name.hasSuffix(".age"), name.count > 4 else { return nil }
        return try decrypting(fd, size: size, vault: vault).map { AgeImport(name: String(name.dropLast(4)), size: $0.size, payload: $0.payload) }
    }

    /// True when the open host file `fd` begins as an age file but its header does not parse
    /// (cut inside it, or altered): imported as it is, it is said (review AH).
    static func hasUnreadableHeader(_ fd: FileDescriptor, size: Int64) throws -> Bool {
        let head = try head(of: fd, size: size)
        return head.starts(with: AgeHeader.magic) && (try? AgeHeader(parsing: head)) == nil
    }

    /// The first bytes of the open host file `fd` of `size` bytes, as many as an age header
    /// may take.
    private static func head(of fd: FileDescriptor, size: Int64) throws -> [UInt8] {
        var head = [UInt8](repeating: 0, count: Int(min(size, Int64(AgeHeader.maximumLength))))
        let n = try head.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: $0.count, offset: 0) }
        head.removeLast(head.count - n)
        return head
    }

    /// The plaintext size and decrypting reader of the open host file `fd` of `size` bytes,
    /// read from its start, or nil when it is not age sent to this vault.
    /// - Throws: `AgeError` when it is but its header or length is damaged.
    static func decrypting(_ fd: FileDescriptor, size: Int64, vault: Vault) throws -> (size: UInt64, payload: AgePayloadReader)? {
        guard size >= Int64(AgeHeader.magic.count) else { return nil }
        let head = try head(of: fd, size: size)
        guard head.starts(with: AgeHeader.magic), let header = try? AgeHeader(parsing: head),
              let fileKey = try vault.ageFileKey(header) else { return nil }
        guard let plain = AgePayloadReader.plaintextSize(payloadLength: size - Int64(header.length)) else {
            throw AgeError.chunkFailed(0)
        }
        try fd.seek(to: Int64(header.length))
        let payload = try AgePayloadReader(fileKey: fileKey, source: { try fd.readFully(into: $0, count: $1) })
        return (UInt64(plain), payload)
    }
}

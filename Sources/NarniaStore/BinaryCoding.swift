/// A little-endian byte writer for the journal's record payloads.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func u64(_ v: UInt64) { withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) } }
    mutating func i64(_ v: Int64) { u64(UInt64(bitPattern: v)) }
    mutating func raw<C: Collection>(_ b: C) where C.Element == UInt8 { bytes.append(contentsOf: b) }
    mutating func raw(_ p: UnsafeRawBufferPointer) { bytes.append(contentsOf: p) }
    /// A string as a 16-bit length and its UTF-8 bytes.
    mutating func string(_ s: String) {
        let utf8 = Array(s.utf8)
        precondition(utf8.count <= Int(UInt16.max))
        u16(UInt16(utf8.count))
        bytes.append(contentsOf: utf8)
    }

    /// Overwrites the buffer with zeros (it may have held keys) and empties it.
    mutating func wipe() {
        bytes.withUnsafeMutableBytes { wipeMemory($0) }
        bytes.removeAll()
    }
}

/// Thrown when a decrypted payload does not parse or breaks a rule of the format: the store
/// was altered (or written by a program with a bug). `why` completes "record N …".
struct MalformedRecord: Error {
    var why = "does not parse"
}

/// A little-endian byte reader over a decrypted payload.
struct ByteReader {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    mutating func take(_ n: Int) throws -> ArraySlice<UInt8> {
        guard n >= 0, offset + n <= bytes.count else { throw MalformedRecord() }
        defer { offset += n }
        return bytes[offset..<(offset + n)]
    }

    mutating func u8() throws -> UInt8 { try take(1).first! }
    mutating func u16() throws -> UInt16 { UInt16(try littleEndian(2)) }
    mutating func u32() throws -> UInt32 { UInt32(try littleEndian(4)) }
    mutating func u64() throws -> UInt64 { try littleEndian(8) }
    mutating func i64() throws -> Int64 { Int64(bitPattern: try u64()) }

    mutating func string() throws -> String {
        let n = Int(try u16())
        let slice = try take(n)
        guard let s = String(validating: slice, as: UTF8.self) else { throw MalformedRecord() }
        return s
    }

    private mutating func littleEndian(_ n: Int) throws -> UInt64 {
        var v: UInt64 = 0
        for (i, b) in try take(n).enumerated() { v |= UInt64(b) << (8 * UInt64(i)) }
        return v
    }
}

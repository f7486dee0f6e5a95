import NarniaCrypto

/// Reads an item's content back, authenticated chunk by chunk, as a source for re-encrypting it
/// (`cp` inside the vault, rewriting a sparse pack). The chunk buffer is wiped when done.
final class PlaintextSource {
    private let reader: ContentReader
    private let keys: KeyTable
    private let keySlot: Int
    private let capacity = ContentFormat.chunkSize + AEAD.tagLength
    private let buffer: UnsafeMutableRawPointer
    private var nextChunk = 0
    private var available = 0
    private var consumed = 0

    /// Reads through `reader` (opened with `Vault.reader(for:)`) with the key in `keys`.
    init(_ reader: ContentReader, keys: KeyTable) {
        self.reader = reader
        self.keys = keys
        keySlot = reader.content.keySlot
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 64)
    }

    deinit {
        wipe(UnsafeMutableRawBufferPointer(start: buffer, count: capacity))
        buffer.deallocate()
    }

    /// Copies up to `max` content bytes to `dest`; returns the count, 0 at the end.
    /// - Throws: `ContentError` when a chunk does not authenticate.
    func read(into dest: UnsafeMutableRawPointer, max: Int) throws -> Int {
        if consumed == available {
            guard nextChunk < reader.chunkCount else { return 0 }
            available = try keys.withKey(keySlot) { try reader.readChunk(nextChunk, into: buffer, key: $0) }
            consumed = 0
            nextChunk += 1
            if available == 0 { return 0 }
        }
        let n = min(max, available - consumed)
        dest.copyMemory(from: buffer + consumed, byteCount: n)
        consumed += n
        return n
    }
}

import NarniaCrypto

/// The per-item content keys of an open vault, in `sodium_malloc` blocks of 1,024 keys.
///
/// One `Secret` per item would cost guard pages per key (about 16 KiB each); one arena for all
/// would make every access unprotect and reprotect memory in proportion to the vault's size.
/// Fixed blocks (32 KiB each) keep both the memory and the cost of an access constant.
/// Slots are reused after removal.
final class KeyTable: @unchecked Sendable {
    static let keyLength = 32
    static let keysPerBlock = 1024
    private var blocks: [Secret] = []
    private var used = 0
    private var free: [Int] = []
    private let lock = Lock()

    init() throws {}

    /// Stores a copy of a 32-byte key and returns its slot.
    func add(_ key: UnsafeRawBufferPointer) throws -> Int {
        precondition(key.count == Self.keyLength)
        let slot: Int = try lock.withLock {
            if let reused = free.popLast() { return reused }
            if used == blocks.count * Self.keysPerBlock {
                blocks.append(try Secret(zeroedCount: Self.keysPerBlock * Self.keyLength))
            }
            used += 1
            return used - 1
        }
        withSlot(slot) { $0.baseAddress!.copyMemory(from: key.baseAddress!, byteCount: Self.keyLength) }
        return slot
    }

    /// Generates a fresh random key and returns its slot.
    func addRandom() throws -> Int {
        var key = [UInt8](repeating: 0, count: Self.keyLength)
        defer { key.withUnsafeMutableBytes { wipe($0) } }
        key.withUnsafeMutableBytes { fillRandom($0) }
        return try key.withUnsafeBytes { try add($0) }
    }

    /// Wipes a slot and makes it available again.
    func remove(_ slot: Int) {
        withSlot(slot) { wipe($0) }
        lock.withLock { free.append(slot) }
    }

    /// Scoped read access to one key.
    func withKey<R>(_ slot: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let block = lock.withLock { blocks[slot / Self.keysPerBlock] }
        return try block.withUnsafeBytes { b in
            try body(UnsafeRawBufferPointer(start: b.baseAddress! + (slot % Self.keysPerBlock) * Self.keyLength, count: Self.keyLength))
        }
    }

    private func withSlot(_ slot: Int, _ body: (UnsafeMutableRawBufferPointer) -> Void) {
        let block = lock.withLock { blocks[slot / Self.keysPerBlock] }
        block.withUnsafeMutableBytes { b in
            body(UnsafeMutableRawBufferPointer(start: b.baseAddress! + (slot % Self.keysPerBlock) * Self.keyLength, count: Self.keyLength))
        }
    }
}

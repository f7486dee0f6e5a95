import NarniaCrypto

/// The per-item content keys of an open vault, in one growable `sodium_malloc` arena.
///
/// One `Secret` per item would cost guard pages per key (about 16 KiB each); an arena keeps
/// 100,000 keys in about 3 MiB of locked, guarded memory. Slots are reused after removal.
final class KeyTable: @unchecked Sendable {
    static let keyLength = 32
    private var arena: Secret
    private var capacity: Int
    private var used = 0
    private var free: [Int] = []
    private let lock = Lock()

    init(capacity: Int = 1024) throws {
        self.capacity = capacity
        arena = try Secret(zeroedCount: capacity * Self.keyLength)
    }

    /// Stores a copy of a 32-byte key and returns its slot.
    func add(_ key: UnsafeRawBufferPointer) throws -> Int {
        precondition(key.count == Self.keyLength)
        return try lock.withLock {
            let slot: Int
            if let reused = free.popLast() {
                slot = reused
            } else {
                if used == capacity { try grow() }
                slot = used
                used += 1
            }
            arena.withUnsafeMutableBytes { a in
                (a.baseAddress! + slot * Self.keyLength).copyMemory(from: key.baseAddress!, byteCount: Self.keyLength)
            }
            return slot
        }
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
        lock.withLock {
            arena.withUnsafeMutableBytes { a in
                wipe(UnsafeMutableRawBufferPointer(start: a.baseAddress! + slot * Self.keyLength, count: Self.keyLength))
            }
            free.append(slot)
        }
    }

    /// Scoped read access to one key.
    func withKey<R>(_ slot: Int, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try arena.withUnsafeBytes { a in
            try body(UnsafeRawBufferPointer(start: a.baseAddress! + slot * Self.keyLength, count: Self.keyLength))
        }
    }

    private func grow() throws {
        let bigger = try Secret(zeroedCount: capacity * 2 * Self.keyLength)
        bigger.withUnsafeMutableBytes { dest in
            arena.withUnsafeBytes { src in dest.baseAddress!.copyMemory(from: src.baseAddress!, byteCount: src.count) }
        }
        arena = bigger
        capacity *= 2
    }
}

import NarniaCrypto

/// The per-item content keys of an open vault, in `sodium_malloc` blocks of 1,024 keys.
///
/// One `Secret` per item would cost guard pages per key (about 16 KiB each); one arena for all
/// would make every access unprotect and reprotect memory in proportion to the vault's size.
/// Fixed blocks (32 KiB each) keep both the memory and the cost of an access constant.
/// Slots are reused after removal.
///
/// Each access opens and closes its block (two `mprotect` calls, each a TLB shootdown on every
/// core the process runs on). An import batch touches one new key per file and then all of
/// them at commit, so it holds the table open instead (`holdOpen()`) for its few seconds.
final class KeyTable: @unchecked Sendable {
    // Sendable: every mutable field is only touched under `lock`.
    static let keyLength = 32
    static let keysPerBlock = 1024
    private var blocks: [Secret] = []
    private var used = 0
    private var free: [Int] = []
    private var holders = 0
    private let lock = Lock()

    init() throws {}

    /// Keeps every block accessible while the returned hold lives (blocks added meanwhile too).
    final class Hold {
        private let table: KeyTable
        fileprivate init(_ table: KeyTable) { self.table = table }
        deinit { table.release() }
    }

    /// Opens every block until the returned hold is released.
    func holdOpen() -> Hold {
        lock.withLock {
            holders += 1
            if holders == 1 { for block in blocks { block.beginAccess() } }
        }
        return Hold(self)
    }

    private func release() {
        lock.withLock {
            holders -= 1
            if holders == 0 { for block in blocks { block.endAccess() } }
        }
    }

    /// Stores a copy of a 32-byte key and returns its slot.
    func add(_ key: UnsafeRawBufferPointer) throws -> Int {
        precondition(key.count == Self.keyLength)
        let slot = try claimSlot()
        withSlot(slot) { $0.baseAddress!.copyMemory(from: key.baseAddress!, byteCount: Self.keyLength) }
        return slot
    }

    /// Stores a copy of the key in `slot` and returns the copy's slot: for a value handed to
    /// an owner that wipes its slot when done with it, while the original stays in use.
    func copy(_ slot: Int) throws -> Int {
        try withKey(slot) { try add($0) }
    }

    /// Generates a fresh random key in place, in guarded memory (it never exists anywhere
    /// else), and returns its slot.
    func addRandom() throws -> Int {
        let slot = try claimSlot()
        withSlot(slot) { fillRandom($0) }
        return slot
    }

    /// A free slot: a wiped one, or the next of the last block (a new block when it is full).
    private func claimSlot() throws -> Int {
        try lock.withLock {
            if let reused = free.popLast() { return reused }
            if used == blocks.count * Self.keysPerBlock {
                let block = try Secret(zeroedCount: Self.keysPerBlock * Self.keyLength)
                if holders > 0 { block.beginAccess() }
                blocks.append(block)
            }
            used += 1
            return used - 1
        }
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

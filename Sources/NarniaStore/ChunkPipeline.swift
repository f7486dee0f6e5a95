import Dispatch
import NarniaCrypto

/// A fixed pool of chunk-sized buffers and a serial writer, so that one thread reads and
/// encrypts (or reads and decrypts) while another writes: the two cores overlap cryptography
/// and I/O, and the loop allocates nothing per chunk.
final class ChunkPipeline: @unchecked Sendable {
    static let depth = 4
    let bufferSize: Int
    private let buffers: [UnsafeMutableRawPointer]
    private var freeList: [Int]
    private let available = DispatchSemaphore(value: ChunkPipeline.depth)
    private let lock = Lock()
    private let queue = DispatchQueue(label: "narnia.writer")
    private var firstError: Error?

    init(bufferSize: Int = ContentFormat.chunkSize + AEAD.tagLength) {
        self.bufferSize = bufferSize
        buffers = (0..<Self.depth).map { _ in UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 64) }
        freeList = Array(0..<Self.depth)
    }

    deinit {
        queue.sync {}
        for b in buffers {
            wipe(UnsafeMutableRawBufferPointer(start: b, count: bufferSize))
            b.deallocate()
        }
    }

    /// Waits for a free buffer and returns its index.
    func acquire() -> Int {
        available.wait()
        return lock.withLock { freeList.removeLast() }
    }

    /// The memory of buffer `index`.
    func buffer(_ index: Int) -> UnsafeMutableRawPointer { buffers[index] }

    /// Returns a buffer without writing it.
    func release(_ index: Int) {
        lock.withLock { freeList.append(index) }
        available.signal()
    }

    /// Queues `count` bytes of buffer `index` for writing by `write`, then frees the buffer.
    /// The first error is kept and reported by `drain`; later writes are skipped.
    func enqueueWrite(_ index: Int, count: Int, _ write: @escaping @Sendable (UnsafeRawPointer, Int) throws -> Void) {
        nonisolated(unsafe) let pointer = UnsafeRawPointer(buffers[index])
        queue.async {
            let failed = self.lock.withLock { self.firstError != nil }
            if !failed {
                do { try write(pointer, count) } catch { self.lock.withLock { self.firstError = error } }
            }
            self.release(index)
        }
    }

    /// The first write error so far, without waiting.
    var pendingError: Error? { lock.withLock { firstError } }

    /// Waits for every queued write and throws the first error, clearing it.
    func drain() throws {
        queue.sync {}
        let error = lock.withLock { () -> Error? in
            defer { firstError = nil }
            return firstError
        }
        if let error { throw error }
    }
}

import Dispatch
import Glibc
import NarniaCrypto
import NarniaSystem

/// A fixed pool of chunk-sized buffers, a pair of sealing workers and an in-order writer, so
/// that reading, encrypting and writing overlap on the two cores and the loop allocates
/// nothing per chunk.
///
/// A buffer goes: `acquire()` → filled by the caller → `submit` (an optional `prepare` step,
/// such as sealing, runs on a worker; then the writer writes it, in submission order) → back to
/// the pool. Every acquired buffer must be submitted or released, also on error paths.
final class ChunkPipeline: @unchecked Sendable {
    // Sendable: `freeList` and `firstError` are only touched under `mutex`; a buffer belongs to
    // one stage at a time (caller, worker, writer), handed on through the queues.
    static let depth = 6
    let bufferSize: Int
    private let buffers: [UnsafeMutableRawPointer]
    private var freeList: [Int]
    private var mutex = pthread_mutex_t()
    private var bufferFreed = pthread_cond_t()
    private let writer = DispatchQueue(label: "narnia.writer")
    private let workers = DispatchQueue(label: "narnia.sealers", attributes: .concurrent)
    private var firstError: Error?

    /// What each buffer holds beyond `bufferSize`, and its alignment: a chunk read past the page
    /// cache comes with the parts of the disk blocks around it (`ContentReader.stream`).
    static let readSlack = 2 * AlignedFileWriter.alignment
    /// The bytes of each buffer: `bufferSize` and the slack.
    private let allocated: Int

    init(bufferSize: Int = ContentFormat.chunkSize + AEAD.tagLength) {
        self.bufferSize = bufferSize
        let allocated = bufferSize + Self.readSlack
        self.allocated = allocated
        buffers = (0..<Self.depth).map { _ in UnsafeMutableRawPointer.allocate(byteCount: allocated, alignment: AlignedFileWriter.alignment) }
        freeList = Array(0..<Self.depth)
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&bufferFreed, nil)
    }

    deinit {
        writer.sync {}
        for b in buffers {
            wipe(UnsafeMutableRawBufferPointer(start: b, count: allocated))
            b.deallocate()
        }
        pthread_cond_destroy(&bufferFreed)
        pthread_mutex_destroy(&mutex)
    }

    private func locked<R>(_ body: () -> R) -> R {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        return body()
    }

    /// Waits for a free buffer and returns its index.
    func acquire() -> Int {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        while freeList.isEmpty { pthread_cond_wait(&bufferFreed, &mutex) }
        return freeList.removeLast()
    }

    /// The memory of buffer `index`.
    func buffer(_ index: Int) -> UnsafeMutableRawPointer { buffers[index] }

    /// Returns a buffer without writing it.
    func release(_ index: Int) {
        locked {
            freeList.append(index)
            pthread_cond_signal(&bufferFreed)
        }
    }

    /// Runs `prepare` (if any) on a worker, then — in submission order — `write` of the first
    /// `count` bytes on the writer, then frees the buffer. The first error is kept for
    /// `drain`, and later writes are skipped.
    func submit(_ index: Int, count: Int, prepare: (@Sendable () -> Void)? = nil,
                write: @escaping @Sendable (UnsafeRawPointer, Int) throws -> Void) {
        let ready = DispatchGroup()
        if let prepare {
            ready.enter()
            workers.async { prepare(); ready.leave() }
        }
        nonisolated(unsafe) let pointer = UnsafeRawPointer(buffers[index])
        writer.async {
            ready.wait()
            if self.pendingError == nil {
                do { try write(pointer, count) } catch { self.locked { if self.firstError == nil { self.firstError = error } } }
            }
            self.release(index)
        }
    }

    /// Runs `body` on a worker (opening a chunk on export; the caller waits for it).
    func work(_ body: @escaping @Sendable () -> Void) {
        workers.async(execute: body)
    }

    /// The first write error so far, without waiting.
    var pendingError: Error? { locked { firstError } }

    /// Waits for every submitted buffer and throws the first error, clearing it.
    func drain() throws {
        writer.sync {}
        let error = locked { () -> Error? in
            defer { firstError = nil }
            return firstError
        }
        if let error { throw error }
    }
}

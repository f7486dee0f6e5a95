import NarniaSystem
import Glibc
import NarniaCrypto
import Synchronization
import Dispatch

/// Why an item's content could not be read back.
public enum ContentError: Error, CustomStringConvertible {
    /// The object file is not in this copy of the store: not yet arrived, or deleted (the
    /// two cannot be told apart for another device's object).
    case missing
    /// The object file, written by this device, is not in its store: deleted, unless the store
    /// is a restored backup that a sync engine is still filling.
    case lost
    /// The object file is shorter than its metadata says: still arriving, or cut.
    case incomplete(expected: Int64, actual: Int64)
    /// The object file does not have the length its metadata implies (truncated or extended).
    case wrongLength(expected: Int64, actual: Int64)
    /// A chunk failed authentication: modified, moved, swapped or from another item.
    case chunkFailed(index: Int)

    public var description: String {
        switch self {
        case .missing: return "not yet on this device"
        case .lost: return "its encrypted object, written on this device, is not in the store: deleted, or a restored store not yet given it back"
        case .incomplete(let e, let a): return "only \(a) of its \(e) encrypted bytes are on this device (still arriving, or cut)"
        case .wrongLength(let e, let a): return "its encrypted object has \(a) bytes instead of \(e) (truncated or altered)"
        case .chunkFailed(let i): return "chunk \(i) does not authenticate (altered, swapped or replaced)"
        }
    }
}

/// Thrown when the user cancelled a long operation (Ctrl-C).
public struct Cancelled: Error, CustomStringConvertible {
    public init() {}
    public var description: String { "interrupted" }
}

/// Hooks for long content operations: progress and cancellation.
public struct TransferObserver: @unchecked Sendable {
    // Sendable: the hooks are called only on the thread that runs the operation (the
    // pipeline's workers never call them), so they need not be thread-safe themselves.
    /// Called after each chunk with the number of content bytes done so far in this item.
    public var progress: (UInt64) -> Void
    /// Polled between chunks; returning true stops the operation with `Cancelled`.
    public var isCancelled: () -> Bool

    public init(progress: @escaping (UInt64) -> Void = { _ in }, isCancelled: @escaping () -> Bool = { false }) {
        self.progress = progress
        self.isCancelled = isCancelled
    }

    /// No progress, no cancellation.
    public static let none = TransferObserver()
}

/// Encrypts a byte stream into a new content object.
struct ContentWriter {
    let layout: StoreLayout
    let pipeline: ChunkPipeline

    /// Reads `source` to its end and writes the encrypted object `objectID` under the key in
    /// `key`, past the page cache where the file system allows (`AlignedFileWriter`, as packs
    /// are). `inspect` sees the first chunk of plaintext (for type detection). The object is
    /// written but not yet durable: the caller syncs before committing. On any error or
    /// cancellation the partial object is removed.
    /// - Returns: the content size.
    func write(objectID: Identifier, key: UnsafeRawBufferPointer,
               source: (UnsafeMutableRawPointer, Int) throws -> Int,
               inspect: (UnsafeRawBufferPointer) -> Void,
               observer: TransferObserver) throws -> UInt64 {
        let path = layout.objectPath(for: objectID)
        let file = AlignedFileWriter(try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusive, .noFollow], permissions: 0o600))
        do {
            let size = try encrypt(into: file, objectID: objectID, key: key, source: source, inspect: inspect, observer: observer)
            try file.finish()
            return size
        } catch {
            try? pipeline.drain()
            try? FileSystem.unlink(path, missingOK: true)
            throw error
        }
    }

    /// As `write`, but appends the sealed content as a segment at `offset`, the current end of
    /// `file` (an open pack, docs/FORMAT.md "Packs", or a drop after its header). On any error
    /// or cancellation the file is cut back to `offset`, so the segments before it stay whole.
    func append(to file: any SealedBytesSink, at offset: Int64, objectID: Identifier, key: UnsafeRawBufferPointer,
                source: (UnsafeMutableRawPointer, Int) throws -> Int,
                inspect: (UnsafeRawBufferPointer) -> Void,
                observer: TransferObserver) throws -> UInt64 {
        do {
            return try encrypt(into: file, at: offset, objectID: objectID, key: key, source: source, inspect: inspect, observer: observer)
        } catch {
            try? pipeline.drain()
            // If even this fails, the batch records the pack's real length at commit, tail and all.
            try? file.cut(to: offset)
            throw error
        }
    }

    private func encrypt(into sink: any SealedBytesSink, at offset: Int64 = 0, objectID: Identifier, key: UnsafeRawBufferPointer,
                         source: (UnsafeMutableRawPointer, Int) throws -> Int,
                         inspect: (UnsafeRawBufferPointer) -> Void, observer: TransferObserver) throws -> UInt64 {
        let chunk = ContentFormat.chunkSize
        let base = randomBytes(AEAD.nonceLength)
        // The base nonce starts the object. It is written before the pipeline's writer gets a
        // chunk, or together with a file's only chunk (one write for most files).
        var baseWritten = false
        func writeBase(followedBy buffer: UnsafeRawPointer? = nil, count: Int = 0) throws {
            defer { baseWritten = true }
            switch (baseWritten, buffer) {
            case (false, let buffer?): try sink.append(prefix: base, buffer, count: count)
            case (false, nil): try base.withUnsafeBytes { try sink.append($0.baseAddress!, count: $0.count) }
            case (true, let buffer?): try sink.append(buffer, count: count)
            case (true, nil): break
            }
        }
        // Sealing runs on the pipeline's workers, two chunks at once; `key` stays valid because
        // every submitted chunk is drained before this function returns.
        nonisolated(unsafe) let keyPointer = key
        func sealer(_ buffer: UnsafeMutableRawPointer, _ length: Int, _ index: Int, _ last: Bool) -> @Sendable () -> Void {
            nonisolated(unsafe) let buffer = buffer
            return {
                var nonce: [UInt8] = []
                var ad: [UInt8] = []
                ContentFormat.nonce(base: base, index: index, into: &nonce)
                ContentFormat.additionalData(object: objectID, index: index, last: last, into: &ad)
                ad.withUnsafeBytes { a in
                    nonce.withUnsafeBytes { n in
                        _ = AEAD.sealInPlace(buffer, plaintextLength: length, additionalData: a, nonce: n.baseAddress!, key: keyPointer)
                    }
                }
            }
        }
        // Writes run on the pipeline's writer thread. Every 8 MiB the written range is handed to
        // the kernel's writeback at once, so the final sync overlaps encryption instead of
        // following it (a sink that writes past the page cache has nothing to hand over).
        // Only the writer thread touches the counts; atomics make that checkable.
        final class WriteState: Sendable {
            let written: Atomic<Int64>
            let flushed: Atomic<Int64>
            init(written: Int64, flushed: Int64) {
                self.written = Atomic(written)
                self.flushed = Atomic(flushed)
            }
        }
        let state = WriteState(written: offset + Int64(AEAD.nonceLength), flushed: offset)
        let write: @Sendable (UnsafeRawPointer, Int) throws -> Void = { p, n in
            try sink.append(p, count: n)
            let written = state.written.add(Int64(n), ordering: .relaxed).newValue
            let flushed = state.flushed.load(ordering: .relaxed)
            if written - flushed >= 8 << 20 {
                sink.startWriteback(offset: flushed, length: written - flushed)
                state.flushed.store(written, ordering: .relaxed)
            }
        }
        func fill(_ buffer: UnsafeMutableRawPointer) throws -> Int {
            var done = 0
            while done < chunk {
                let n = try source(buffer + done, chunk - done)
                if n == 0 { break }
                done += n
            }
            return done
        }

        // `held` is the buffer this thread owns; any error gives it back before leaving.
        var held: Int? = pipeline.acquire()
        defer { if let held { pipeline.release(held) } }
        var index = 0
        var currentLength = try fill(pipeline.buffer(held!))
        var total = UInt64(currentLength)
        inspect(UnsafeRawBufferPointer(start: pipeline.buffer(held!), count: currentLength))
        while currentLength == chunk {
            if observer.isCancelled() { throw Cancelled() }
            if let error = pipeline.pendingError { throw error }
            try writeBase()
            let current = held!
            held = pipeline.acquire()
            let nextLength: Int
            do { nextLength = try fill(pipeline.buffer(held!)) } catch { pipeline.release(current); throw error }
            if nextLength == 0 {
                pipeline.release(held!)
                held = current
                break
            }
            pipeline.submit(current, count: chunk + AEAD.tagLength,
                            prepare: sealer(pipeline.buffer(current), chunk, index, false), write: write)
            observer.progress(total)
            index += 1
            total += UInt64(nextLength)
            currentLength = nextLength
        }
        // The content ends in the held buffer: pad with zeros to the Padmé length, seal the tail.
        var remaining = Int(ContentFormat.paddedLength(total)) - index * chunk
        if index == 0 && remaining <= chunk {
            // A file of one chunk (most files): sealing and writing here costs less than two
            // hand-overs between threads.
            let buffer = pipeline.buffer(held!)
            if remaining > currentLength { (buffer + currentLength).initializeMemory(as: UInt8.self, repeating: 0, count: remaining - currentLength) }
            sealer(buffer, remaining, 0, true)()
            try writeBase(followedBy: buffer, count: remaining + AEAD.tagLength)
            observer.progress(total)
            return total
        }
        while true {
            try writeBase()
            let current = held!
            let length = min(chunk, remaining)
            let buffer = pipeline.buffer(current)
            if length > currentLength { (buffer + currentLength).initializeMemory(as: UInt8.self, repeating: 0, count: length - currentLength) }
            let last = remaining <= chunk
            held = nil
            pipeline.submit(current, count: length + AEAD.tagLength, prepare: sealer(buffer, length, index, last), write: write)
            if last { break }
            remaining -= chunk
            index += 1
            held = pipeline.acquire()
            currentLength = 0
        }
        try pipeline.drain()
        // The rest goes to the kernel's writeback now too: the batch's sync then finds most of
        // its objects on their way to the disk (a camera roll is thousands of files of a few
        // MiB, each below the 8 MiB step above).
        let flushed = state.flushed.load(ordering: .relaxed)
        sink.startWriteback(offset: flushed, length: state.written.load(ordering: .relaxed) - flushed)
        observer.progress(total)
        return total
    }
}

/// Where `ContentWriter` puts sealed bytes, in order: a file written at its position (an
/// object of its own, a drop), or the writer of the pack the content is a segment of.
protocol SealedBytesSink: AnyObject, Sendable {
    func append(_ bytes: UnsafeRawPointer, count: Int) throws
    func append(prefix: [UInt8], _ bytes: UnsafeRawPointer, count: Int) throws
    /// Drops what was appended after the first `length` bytes.
    func cut(to length: Int64) throws
    /// Hands the bytes written in this range to the kernel's writeback (a hint).
    func startWriteback(offset: Int64, length: Int64)
}

extension FileDescriptor: SealedBytesSink {
    func append(_ bytes: UnsafeRawPointer, count: Int) throws { try writeAll(bytes, count: count) }
    func append(prefix: [UInt8], _ bytes: UnsafeRawPointer, count: Int) throws { try writeAll(prefix: prefix, bytes, count: count) }
    func cut(to length: Int64) throws {
        try truncate(to: length)
        try seek(to: length)
    }
}

extension AlignedFileWriter: SealedBytesSink {
    /// Nothing to do: the writer writes whole buffers as it goes, and ordinary writes are handed
    /// to the writeback at once.
    func startWriteback(offset: Int64, length: Int64) {}
}

/// Reads and authenticates a content object, chunk by chunk.
struct ContentReader {
    let fd: FileDescriptor
    let content: ContentInfo
    private let base: [UInt8]
    /// Where `fd` was opened, when by path: `stream` opens it again for reads past the cache.
    private let path: String?

    /// Opens the object of `content` at `path` (nil: not in this copy) and checks its length.
    init(path: String?, content: ContentInfo) throws {
        guard let path else { throw ContentError.missing }
        let fd: FileDescriptor
        do {
            fd = try JournalReader.openStoreFile(path)
        } catch let e as SystemError where e.code == ENOENT {
            throw ContentError.missing
        }
        try self.init(fd: fd, content: content, path: path)
    }

    /// As `init(path:content:)`, for an object already open (a drop being adopted).
    init(fd: FileDescriptor, content: ContentInfo, path: String? = nil) throws {
        self.fd = fd
        self.content = content
        self.path = path
        let expected = content.objectLength
        let actual = try fd.size()
        if actual < expected { throw ContentError.incomplete(expected: expected, actual: actual) }
        guard actual == expected, content.offset <= UInt64(expected),
              ContentFormat.objectLength(size: content.size) <= expected - Int64(content.offset) else {
            throw ContentError.wrongLength(expected: expected, actual: actual)
        }
        var b = [UInt8](repeating: 0, count: AEAD.nonceLength)
        let handle = fd
        _ = try b.withUnsafeMutableBytes {
            try handle.preadFully(into: $0.baseAddress!, count: AEAD.nonceLength, offset: Int64(content.offset))
        }
        base = b
        fd.adviseSequential()
    }

    var chunkCount: Int { ContentFormat.chunkCount(size: content.size) }

    /// Reads, authenticates and decrypts chunk `index` into `buffer` (which must hold a chunk
    /// and its tag). Returns the number of content bytes in it (padding excluded).
    func readChunk(_ index: Int, into buffer: UnsafeMutableRawPointer, key: UnsafeRawBufferPointer) throws -> Int {
        try readSealedChunk(index, into: buffer)
        guard openChunk(index, in: buffer, key: key) else { throw ContentError.chunkFailed(index: index) }
        return contentLength(ofChunk: index)
    }

    /// A second descriptor of the object, opened for reads past the page cache, for `stream`
    /// of content of a chunk or more; nil where the file system refuses them, or the object
    /// was opened without a path or replaced since. The object's ciphertext is read once and
    /// not soon again: copying it through the page cache was a third of an export's CPU.
    func openForDirectReads() -> FileDescriptor? {
        guard content.size >= UInt64(ContentFormat.chunkSize), let path,
              let direct = try? JournalReader.openStoreFile(path),
              let first = try? fd.status(), let again = try? direct.status(),
              first.st_dev == again.st_dev, first.st_ino == again.st_ino,
              direct.setDirect(true) else { return nil }
        return direct
    }

    /// Reads chunk `index` as it is stored through `direct` (`openForDirectReads`): the whole
    /// disk blocks around it, into `buffer`, which is aligned to them and holds
    /// `ChunkPipeline.readSlack` bytes more than a chunk. Returns where in `buffer` the chunk
    /// starts, or nil when the read was refused or came back short: the caller then reads it
    /// with `readSealedChunk`, which names what went wrong.
    func readSealedChunk(_ index: Int, through direct: FileDescriptor, into buffer: UnsafeMutableRawPointer) -> Int? {
        let (start, length) = sealedRange(ofChunk: index)
        let block = Int64(AlignedFileWriter.alignment)
        let first = start / block * block
        let end = (start + Int64(length) + block - 1) / block * block
        let skew = Int(start - first)
        let n = pread(direct.raw, buffer, Int(end - first), off_t(first))
        return n >= skew + length ? skew : nil
    }

    /// Where chunk `index` is stored in the object file, and its length with its tag.
    func sealedRange(ofChunk index: Int) -> (offset: Int64, length: Int) {
        (Int64(content.offset) + ContentFormat.offset(ofChunk: index),
         ContentFormat.plaintextLength(ofChunk: index, size: content.size) + AEAD.tagLength)
    }

    /// Reads chunk `index` as it is stored (ciphertext and tag) into `buffer`.
    func readSealedChunk(_ index: Int, into buffer: UnsafeMutableRawPointer) throws {
        let (offset, length) = sealedRange(ofChunk: index)
        let n = try fd.preadFully(into: buffer, count: length, offset: offset)
        guard n == length else { throw ContentError.wrongLength(expected: content.objectLength, actual: try fd.size()) }
    }

    /// Authenticates and decrypts, in place, chunk `index` read by `readSealedChunk`; false
    /// when it fails authentication. Safe on any thread.
    func openChunk(_ index: Int, in buffer: UnsafeMutableRawPointer, key: UnsafeRawBufferPointer) -> Bool {
        let length = sealedRange(ofChunk: index).length
        var nonce = base
        var ad: [UInt8] = []
        ContentFormat.nonce(base: base, index: index, into: &nonce)
        ContentFormat.additionalData(object: content.objectID, index: index, last: index == chunkCount - 1, into: &ad)
        return (try? ad.withUnsafeBytes { a in
            try nonce.withUnsafeBytes { nb in
                try AEAD.openInPlace(buffer, ciphertextLength: length, additionalData: a, nonce: nb.baseAddress!, key: key)
            }
        }) != nil
    }

    /// The content bytes of chunk `index` (its plaintext without the padding).
    func contentLength(ofChunk index: Int) -> Int {
        let plain = ContentFormat.plaintextLength(ofChunk: index, size: content.size)
        let start = UInt64(index) * UInt64(ContentFormat.chunkSize)
        return Int(min(UInt64(plain), content.size > start ? content.size - start : 0))
    }

    /// What a worker made of one chunk (`readAndOpen`). Sendable: written by the worker before
    /// it signals, read after the wait: the signal orders the two.
    final class OpenedChunk: @unchecked Sendable {
        /// True once the chunk is read, authenticated and decrypted.
        var succeeded = false
        /// Where the chunk starts in its buffer.
        var start = 0
        /// Why the chunk could not be read.
        var failure: Error?

        /// Throws what went wrong with chunk `index`, if anything.
        func check(_ index: Int) throws {
            if let failure { throw failure }
            guard succeeded else { throw ContentError.chunkFailed(index: index) }
        }
    }

    /// On a worker: reads chunk `index` through `direct` when given (else it was read into
    /// `buffer` already), then authenticates and decrypts it in place.
    func readAndOpen(_ index: Int, through direct: FileDescriptor?, into buffer: UnsafeMutableRawPointer,
                     key: UnsafeRawBufferPointer, result: OpenedChunk) {
        if let direct {
            if let start = readSealedChunk(index, through: direct, into: buffer) {
                result.start = start
            } else {
                do { try readSealedChunk(index, into: buffer) } catch { result.failure = error; return }
            }
        }
        result.succeeded = openChunk(index, in: buffer + result.start, key: key)
    }

    /// Decrypts every chunk in order and hands the content bytes to `write`, on the calling
    /// thread, while the next chunks are opened on the pipeline's workers. Content of a chunk
    /// or more is read past the page cache on the workers, two chunks at once; smaller content
    /// (or any, where direct reads are refused) is read here, through the cache. Stops at the
    /// first failing chunk.
    func stream(pipeline: ChunkPipeline, key: UnsafeRawBufferPointer, observer: TransferObserver,
                write: (UnsafeRawPointer, Int) throws -> Void) throws {
        final class Opening: Sendable {
            let index: Int, buffer: Int
            let done = DispatchGroup()
            let result = OpenedChunk()
            init(index: Int, buffer: Int) { (self.index, self.buffer) = (index, buffer) }
        }
        // `key` and the buffers outlive every opening: all are waited for before returning.
        nonisolated(unsafe) let keyPointer = key
        let reader = self
        let direct = openForDirectReads()
        var opening: [Opening] = []
        var done: UInt64 = 0
        func finishOldest() throws {
            let chunk = opening.removeFirst()
            chunk.done.wait()
            defer { pipeline.release(chunk.buffer) }
            try chunk.result.check(chunk.index)
            let n = contentLength(ofChunk: chunk.index)
            if n > 0 { try write(pipeline.buffer(chunk.buffer) + chunk.result.start, n) }
            done += UInt64(n)
            observer.progress(done)
        }
        do {
            for index in 0..<chunkCount {
                if observer.isCancelled() { throw Cancelled() }
                if opening.count >= ChunkPipeline.depth - 1 { try finishOldest() }
                let b = pipeline.acquire()
                if direct == nil {
                    do { try readSealedChunk(index, into: pipeline.buffer(b)) } catch { pipeline.release(b); throw error }
                }
                let chunk = Opening(index: index, buffer: b)
                nonisolated(unsafe) let buffer = pipeline.buffer(b)
                chunk.done.enter()
                pipeline.work {
                    reader.readAndOpen(index, through: direct, into: buffer, key: keyPointer, result: chunk.result)
                    chunk.done.leave()
                }
                opening.append(chunk)
            }
            while !opening.isEmpty { try finishOldest() }
        } catch {
            for chunk in opening {
                chunk.done.wait()
                pipeline.release(chunk.buffer)
            }
            throw error
        }
    }

    /// As `stream`, for a `write` that may run on another thread (an export's file): chunks
    /// are read and opened on the pipeline's workers and handed to `write` in order on its
    /// writer, so that reading, opening and writing all overlap. Returns once every chunk is
    /// written; stops at the first failing chunk or write.
    func streamInBackground(pipeline: ChunkPipeline, key: UnsafeRawBufferPointer, observer: TransferObserver,
                            write: @escaping @Sendable (UnsafeRawPointer, Int) throws -> Void) throws {
        // `key` and the buffers outlive every chunk: `drain` waits for all before returning.
        nonisolated(unsafe) let keyPointer = key
        let reader = self
        let direct = openForDirectReads()
        var done: UInt64 = 0
        for index in 0..<chunkCount where pipeline.pendingError == nil {
            if observer.isCancelled() {
                try? pipeline.drain()
                throw Cancelled()
            }
            let b = pipeline.acquire()
            nonisolated(unsafe) let buffer = pipeline.buffer(b)
            if direct == nil {
                do { try readSealedChunk(index, into: buffer) } catch {
                    pipeline.release(b)
                    try pipeline.drain()
                    throw error
                }
            }
            let result = OpenedChunk()
            let n = contentLength(ofChunk: index)
            pipeline.submit(b, count: n, prepare: {
                reader.readAndOpen(index, through: direct, into: buffer, key: keyPointer, result: result)
            }, write: { pointer, count in
                try result.check(index)
                if count > 0 { try write(pointer + result.start, count) }
            })
            done += UInt64(n)
            observer.progress(done)
        }
        try pipeline.drain()
    }
}

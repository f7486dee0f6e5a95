import Dispatch
import NarniaCrypto
import NarniaKinds
import NarniaStore

/// Classifies new items on a worker thread, so that libmagic (about half a millisecond a file,
/// whatever its size) runs on the second core while the next file is read and written.
///
/// Each worker uses its own libmagic handle (a `magic_t` is not thread-safe). At most eight
/// classifications wait at once, so the copies of first chunks they hold stay bounded.
final class ClassifierPool: @unchecked Sendable {
    // Sendable: `idle` is only touched under `lock`; the rest is immutable or thread-safe.
    static let maximumWaiting = 8
    /// libmagic sees 64 KiB, the zip hints up to 1 MiB: copy what they can use.
    static let bytesKept = 1 << 20
    private var idle: [Classifier] = []
    private let lock = Lock()
    private let slots = DispatchSemaphore(value: ClassifierPool.maximumWaiting)
    private let workers = DispatchQueue(label: "narnia.classify", attributes: .concurrent)

    private final class Answer: @unchecked Sendable {
        // Written by the worker before `done.leave()`, read after `done.wait()`: the group
        // orders the two.
        var type: ImportBatch.ContentType = ("application/octet-stream", .other)
    }

    /// Starts classifying `bytes` (copied) and returns a function that waits for the answer.
    func classifyLater(_ bytes: UnsafeRawBufferPointer) -> () -> ImportBatch.ContentType {
        let copy = Array(bytes.prefix(Self.bytesKept))
        let answer = Answer()
        let done = DispatchGroup()
        slots.wait()
        done.enter()
        workers.async {
            defer { self.slots.signal(); done.leave() }
            guard let classifier = self.take() else { return }
            answer.type = copy.withUnsafeBytes { classifier.classify($0) }
            self.giveBack(classifier)
        }
        return {
            done.wait()
            return answer.type
        }
    }

    private func take() -> Classifier? {
        if let c = lock.withLock({ idle.popLast() }) { return c }
        return try? Classifier()
    }

    private func giveBack(_ c: Classifier) {
        lock.withLock { idle.append(c) }
    }
}

import Dispatch
import Synchronization

/// Classifies new items on a worker thread, so that libmagic (about half a millisecond a file,
/// whatever its size) runs on the second core while the next file is read and written.
///
/// Each worker uses its own libmagic handle (a `magic_t` is not thread-safe). At most eight
/// classifications wait at once, so the copies of first chunks they hold stay bounded.
public final class ClassifierPool: Sendable {
    static let maximumWaiting = 8
    /// libmagic sees 64 KiB, the zip hints up to 1 MiB: copy what they can use.
    static let bytesKept = 1 << 20
    private let idle = Mutex<[Idle]>([])

    /// A handle no worker holds. Sendable: a handle is used by one worker at a time, taken
    /// from and given back to `idle` under its lock.
    private struct Idle: @unchecked Sendable {
        let classifier: Classifier
    }
    private let slots = DispatchSemaphore(value: ClassifierPool.maximumWaiting)
    private let workers = DispatchQueue(label: "narnia.classify", attributes: .concurrent)

    public init() {}

    private final class Answer: @unchecked Sendable {
        // Written by the worker before `done.leave()`, read after `done.wait()`: the group
        // orders the two.
        var type: ContentType = ("application/octet-stream", .other)
    }

    /// Starts classifying `bytes` (copied) and returns a function that waits for the answer.
    public func classifyLater(_ bytes: UnsafeRawBufferPointer) -> () -> ContentType {
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
        if let c = idle.withLock({ $0.popLast() }) { return c.classifier }
        return try? Classifier()
    }

    private func giveBack(_ c: Classifier) {
        idle.withLock { $0.append(Idle(classifier: c)) }
    }
}

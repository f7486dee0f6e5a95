import Dispatch
import Synchronization

/// Classifies new items on worker threads, so that libmagic (about half a millisecond a file,
/// whatever its size) keeps both cores busy while the importing thread reads, seals and writes.
///
/// Each worker uses its own libmagic handle (a `magic_t` is not thread-safe). Up to 128
/// classifications may wait, each holding a copy of the bytes it needs (64 KiB at most, so
/// 8 MiB in all): the queue is deep enough that the importing thread's pauses (a commit's
/// `syncfs`, a file slow to open) do not leave the workers idle. Files that start like a zip
/// keep 1 MiB for the container hints; at most eight of those wait at once.
public final class ClassifierPool: Sendable {
    static let maximumWaiting = 128
    static let maximumLargeWaiting = 8
    private let idle = Mutex<[Idle]>([])

    /// A handle no worker holds. Sendable: a handle is used by one worker at a time, taken
    /// from and given back to `idle` under its lock.
    private struct Idle: @unchecked Sendable {
        let classifier: Classifier
    }
    private let slots = DispatchSemaphore(value: ClassifierPool.maximumWaiting)
    private let largeSlots = DispatchSemaphore(value: ClassifierPool.maximumLargeWaiting)
    private let workers = DispatchQueue(label: "narnia.classify", attributes: .concurrent)

    public init() {}

    private final class Answer: @unchecked Sendable {
        // Written by the worker before `done.leave()`, read after `done.wait()`: the group
        // orders the two.
        var type: ContentType = ("application/octet-stream", .other)
    }

    /// Starts classifying `bytes` (copied) and returns a function that waits for the answer.
    public func classifyLater(_ bytes: UnsafeRawBufferPointer) -> () -> ContentType {
        let copy = Array(bytes.prefix(Classifier.bytesUsed(of: bytes)))
        let large = copy.count > Classifier.magicWindow
        let answer = Answer()
        let done = DispatchGroup()
        slots.wait()
        if large { largeSlots.wait() }
        done.enter()
        workers.async {
            defer {
                if large { self.largeSlots.signal() }
                self.slots.signal()
                done.leave()
            }
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

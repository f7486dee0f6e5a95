import Dispatch
import Glibc
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
    /// A caller held back by a full queue goes on once it has drained to this: it wakes once
    /// per 32 files classified, not once per file.
    static let resumeWaiting = 96
    static let maximumLargeWaiting = 8
    private let idle = Mutex<[Idle]>([])

    /// A handle no worker holds. Sendable: a handle is used by one worker at a time, taken
    /// from and given back to `idle` under its lock.
    private struct Idle: @unchecked Sendable {
        let classifier: Classifier
    }
    private let backlog = Backlog()
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
        backlog.enter(large: large)
        done.enter()
        workers.async {
            defer {
                self.backlog.leave(large: large)
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

/// The classifications waiting in a `ClassifierPool`, and the caller held back while there
/// are too many.
private final class Backlog: @unchecked Sendable {
    // Sendable: `waiting`, `large` and `held` are only touched under `mutex`.
    private var mutex = pthread_mutex_t()
    private var drained = pthread_cond_t()
    private var waiting = 0, large = 0, held = 0

    init() {
        pthread_mutex_init(&mutex, nil)
        pthread_cond_init(&drained, nil)
    }

    deinit {
        pthread_cond_destroy(&drained)
        pthread_mutex_destroy(&mutex)
    }

    /// Counts one more waiting classification; first, when the queue is full, sleeps until it
    /// has drained to `resumeWaiting` (and, for a large copy, until fewer than the maximum wait).
    func enter(large isLarge: Bool) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        held += 1
        if waiting >= ClassifierPool.maximumWaiting {
            while waiting > ClassifierPool.resumeWaiting { pthread_cond_wait(&drained, &mutex) }
        }
        while isLarge && large >= ClassifierPool.maximumLargeWaiting { pthread_cond_wait(&drained, &mutex) }
        held -= 1
        waiting += 1
        if isLarge { large += 1 }
    }

    /// Counts one classification done, waking a held caller when its condition may now hold.
    func leave(large isLarge: Bool) {
        pthread_mutex_lock(&mutex)
        defer { pthread_mutex_unlock(&mutex) }
        waiting -= 1
        if isLarge { large -= 1 }
        if held > 0 && (waiting == ClassifierPool.resumeWaiting || isLarge) { pthread_cond_broadcast(&drained) }
    }
}

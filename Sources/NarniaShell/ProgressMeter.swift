import Glibc

/// A one-line progress bar on stderr: bytes, rate, ETA and the current name. Drawn only when
/// the session is interactive and stderr is a terminal; redrawn at most ten times a second.
final class ProgressMeter {
    private let err: Output
    private let total: UInt64
    private var doneBefore: UInt64 = 0
    private var itemDone: UInt64 = 0
    private var name = ""
    private let start = ProgressMeter.now()
    private var lastDraw = 0.0
    private let label: String

    /// Returns nil when no bar should be drawn.
    init?(session: Session, label: String, totalBytes: UInt64) {
        guard session.interactive, session.err.isTerminal else { return nil }
        err = session.err
        total = max(totalBytes, 1)
        self.label = label
    }

    static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Starts a new item.
    func begin(item: String) {
        doneBefore += itemDone
        itemDone = 0
        name = item
        draw(force: true)
    }

    /// Records progress inside the current item.
    func update(itemBytes: UInt64) {
        itemDone = itemBytes
        draw(force: false)
    }

    private func draw(force: Bool) {
        let t = Self.now()
        guard force || t - lastDraw >= 0.1 else { return }
        lastDraw = t
        let done = doneBefore + itemDone
        let elapsed = max(t - start, 0.001)
        let rate = Double(done) / elapsed
        let fraction = min(1, Double(done) / Double(total))
        let width = 20
        let filled = Int(fraction * Double(width))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let eta = rate > 0 ? Int(Double(total - min(done, total)) / rate) : 0
        let shown = name.count > 30 ? "…" + name.suffix(29) : name
        err.write("\r\u{1B}[K\(label) [\(bar)] \(humanSize(done))/\(humanSize(total)) \(humanSize(UInt64(rate)))/s ETA \(eta / 60):\(String(format2: eta % 60)) \(shown)")
        err.flush()
    }

    /// Clears the bar's line.
    func finish() {
        err.write("\r\u{1B}[K")
        err.flush()
    }
}

extension String {
    /// Two-digit zero-padded number.
    init(format2 n: Int) { self = n < 10 ? "0\(n)" : "\(n)" }
}

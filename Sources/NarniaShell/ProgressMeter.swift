import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaStore

/// A one-line progress bar on stderr for `import`, `export` and `verify`: a bar, bytes done
/// and in all, rate, time left and the current name, fitted to the terminal's width (re-read at
/// every redraw, so a resized window is followed) so that it never wraps.
///
/// Drawn only when the session is interactive and stderr is a terminal (never in batch mode or
/// into a pipe); redrawn at most ten times a second. It writes straight to descriptor 2, not
/// through `Output`, so that `clearActive()` can be called from `Output` before other text
/// reaches the terminal.
final class ProgressMeter {
    private let fd: Int32 = 2
    private let total: UInt64
    private var doneBefore: UInt64 = 0
    private var itemDone: UInt64 = 0
    private var name = ""
    private let start = ProgressMeter.now()
    private var lastDraw = -1.0
    private let label: String
    private var drawn = false

    /// The meter whose bar is on the screen, if any (one command runs at a time). Main
    /// thread only: meters are made, drawn and cleared by the running command.
    nonisolated(unsafe) private static weak var active: ProgressMeter?

    /// Returns nil when no bar should be drawn; `totalBytes` is worked out only when one is.
    init?(session: Session, label: String, totalBytes: @autoclosure () -> UInt64) {
        guard session.interactive, session.err.isTerminal else { return nil }
        session.out.flush()
        session.err.flush()
        total = totalBytes()
        self.label = label
    }

    deinit { clear() }

    static func now() -> Double { SystemClock.monotonicSeconds() }

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

    /// Erases the bar, if drawn, so that other text can be printed on its line; the next
    /// update draws it again.
    func clear() {
        guard drawn else { return }
        drawn = false
        lastDraw = -1
        emit("\r\u{1B}[K")
        if Self.active === self { Self.active = nil }
    }

    /// Erases the bar of the active meter, if any: for `Output` to call before it writes text
    /// to a terminal, so that a line of output never lands on the bar.
    static func clearActive() {
        active?.clear()
    }

    /// Clears the bar's line at the end of the command.
    func finish() {
        clear()
    }

    /// The bar's text for `width` columns, at `t` seconds. Pure, for tests.
    func line(width: Int, at t: Double) -> String {
        let done = doneBefore + itemDone
        let elapsed = max(t - start, 0.001)
        let rate = Double(done) / elapsed
        var figures = humanSize(done)
        if total > 0 { figures += "/" + humanSize(total) }
        figures += " " + humanSize(UInt64(rate)) + "/s"
        if total > 0 && rate > 0 && elapsed > 0.5 {
            let eta = Int(Double(total - min(done, total)) / rate)
            figures += " ETA " + (eta >= 3600 ? "\(eta / 3600):" + String(format2: eta / 60 % 60) : "\(eta / 60)")
                + ":" + String(format2: eta % 60)
        }
        // Keep one column free: a terminal that wraps at its last column never wraps the bar.
        let room = width - 1
        var bar = ""
        if total > 0 {
            let barWidth = max(0, min(30, room - displayWidth(label) - displayWidth(figures) - 4 - 12))
            if barWidth >= 5 {
                let fraction = min(1, Double(done) / Double(total))
                let filled = Int(fraction * Double(barWidth))
                bar = " [" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "]"
            }
        }
        var text = label + bar + " " + figures
        let left = room - displayWidth(text) - 1
        if left >= 4 && !name.isEmpty {
            text += " " + fitted(terminalSafe(name), left)
        }
        return displayWidth(text) <= room ? text : fitted(text, room)
    }

    private func draw(force: Bool) {
        let t = Self.now()
        guard force || lastDraw < 0 || t - lastDraw >= 0.1 else { return }
        lastDraw = t
        if let other = Self.active, other !== self { other.clear() }
        Self.active = self
        drawn = true
        emit("\r\u{1B}[K" + line(width: terminalWidth(), at: t))
    }

    private func emit(_ text: String) {
        var bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + done, $0.count - done) }
            if n < 0 { if errno == EINTR { continue }; return }
            done += n
        }
    }
}

/// `text` cut to at most `width` columns, keeping its end (where a name's distinguishing part
/// and extension usually are) behind a `…`.
func fitted(_ text: String, _ width: Int) -> String {
    guard displayWidth(text) > width else { return text }
    guard width > 1 else { return "" }
    var kept = ""
    var used = 1
    for character in text.reversed() {
        let w = displayWidth(String(character))
        if used + w > width { break }
        kept.insert(character, at: kept.startIndex)
        used += w
    }
    return "…" + kept
}

extension String {
    /// Two-digit zero-padded number.
    init(format2 n: Int) { self = n < 10 ? "0\(n)" : "\(n)" }
}

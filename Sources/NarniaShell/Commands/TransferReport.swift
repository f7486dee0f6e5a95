import NarniaSystem

/// What `import` and `export` print as they go. A line per file (`imported HOST -> PATH`) in
/// scripts and with `-v`; on a terminal, instead, the progress bar and one summary line at the
/// end (`imported 5,123 files (1.2 GiB) in 4.1 s`). `-q` silences both; errors are always
/// printed.
final class TransferReport {
    private let out: Output
    private let verb: String
    private let perFile: Bool
    private let summary: Bool
    private let start = SystemClock.monotonicSeconds()
    private(set) var files = 0
    private(set) var bytes: UInt64 = 0
    private(set) var skipped = 0

    init(out: Output, verb: String, verbose: Bool, quiet: Bool) {
        self.out = out
        self.verb = verb
        let terminal = out.isTerminal
        perFile = verbose || (!terminal && !quiet)
        summary = terminal && !quiet
    }

    /// `name` escaped for the output the report lines go to.
    func outName(_ name: String) -> String { out.name(name) }

    /// A file done: `line` is its report line, printed when lines are.
    func done(bytes: UInt64, _ line: @autoclosure () -> String) {
        files += 1
        self.bytes += bytes
        if perFile { out.line(line()) }
    }

    /// A file left alone because it was there already (`--skip-existing`).
    func skip(_ line: @autoclosure () -> String) {
        skipped += 1
        if perFile { out.line(line()) }
    }

    /// The summary line, on a terminal, once anything was done or skipped.
    func finish() {
        guard summary, files + skipped > 0 else { return }
        let seconds = SystemClock.monotonicSeconds() - start
        var text = "\(verb) \(Self.grouped(files)) file\(files == 1 ? "" : "s") (\(Self.bytesForPeople(bytes))) in \(Self.oneDecimal(seconds)) s"
        if skipped > 0 { text += "; \(Self.grouped(skipped)) already there, skipped" }
        out.line(text)
    }

    /// 5123 → "5,123".
    static func grouped(_ n: Int) -> String {
        var digits = String(n)
        var groups: [Substring] = []
        while digits.count > 3 {
            groups.insert(digits.suffix(3), at: 0)
            digits.removeLast(3)
        }
        return ([Substring(digits)] + groups).joined(separator: ",")
    }

    /// 1288490188 → "1.2 GiB"; under a KiB, "512 bytes". Tenths are rounded up, as `ls -lh`
    /// (`humanSize`) rounds, so that a summary never says less than a listing of the same
    /// bytes (review EF-7: a 1,980-byte file was `2.0K` in `ls -l` and `1.9 KiB` exported).
    static func bytesForPeople(_ bytes: UInt64) -> String {
        guard bytes >= 1024 else { return "\(bytes) byte\(bytes == 1 ? "" : "s")" }
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
        var unit = binaryExponent(of: bytes)
        var shown = tenthsRoundedUp(bytes, exponent: unit)
        if shown >= 10240 && unit < units.count - 1 {   // 1023.95 KiB is 1.0 MiB, not 1024.0 KiB
            unit += 1
            shown = tenthsRoundedUp(bytes, exponent: unit)
        }
        return "\(shown / 10).\(shown % 10) \(units[unit])"
    }

    static func oneDecimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}

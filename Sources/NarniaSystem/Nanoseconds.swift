import Glibc

/// Times as nanoseconds since the epoch in an `Int64`, which holds 1677-09-21 to 2262-04-11.
/// File systems hold times beyond (ext4 to 2446, tmpfs any `time_t`; a camera with a bad clock,
/// `touch -d`, an archive): such a time is held to the nearest end, never trapping (review BK-1:
/// `import`, `drop` and `lls -l` of a file dated 2300 stopped the program). The arithmetic here
/// saturates too, since a drop's time is any `Int64` its dropper chose.
public enum Nanoseconds {
    /// `ts` in nanoseconds, held to what an `Int64` holds.
    public static func of(_ ts: timespec) -> Int64 {
        let (whole, overflow) = Int64(ts.tv_sec).multipliedReportingOverflow(by: perSecond)
        if overflow { return ts.tv_sec < 0 ? .min : .max }
        let (sum, past) = whole.addingReportingOverflow(Int64(ts.tv_nsec))
        return past ? .max : sum
    }

    /// `ns` as a `timespec`: whole seconds rounded down, and the nanoseconds after them
    /// (0 to 999,999,999, as `futimens` requires, before 1970 too).
    public static func timespecOf(_ ns: Int64) -> timespec {
        let (seconds, rest) = secondsAndRest(ns)
        return timespec(tv_sec: Int(seconds), tv_nsec: Int(rest))
    }

    /// The whole seconds of `ns`, rounded down (1969-12-31T23:59:59.5 is second -1, not 0).
    public static func seconds(_ ns: Int64) -> Int64 { secondsAndRest(ns).seconds }

    /// `a - b`, held to what an `Int64` holds.
    public static func difference(_ a: Int64, _ b: Int64) -> Int64 {
        let (d, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (a < b ? .min : .max) : d
    }

    /// How far apart `a` and `b` are, held to what an `Int64` holds.
    public static func distance(_ a: Int64, _ b: Int64) -> Int64 {
        let d = difference(a, b)
        return d == .min ? .max : abs(d)
    }

    public static let perSecond: Int64 = 1_000_000_000

    private static func secondsAndRest(_ ns: Int64) -> (seconds: Int64, rest: Int64) {
        let (q, r) = ns.quotientAndRemainder(dividingBy: perSecond)
        return r < 0 ? (q - 1, r + perSecond) : (q, r)
    }
}

import Glibc

/// The two clocks the program reads.
public enum SystemClock {
    /// Seconds on the monotonic clock (`CLOCK_MONOTONIC`), for durations.
    public static func monotonicSeconds() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Nanoseconds since the Unix epoch (`CLOCK_REALTIME`), for item dates: held to
    /// 1677–2262 as file times are (`Nanoseconds`; review BL-3: a clock set past 2262 stopped
    /// every command).
    public static func nowNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Nanoseconds.of(ts)
    }
}

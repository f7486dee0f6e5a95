/// A byte count as `ls -lh` prints it: bytes below 1024 as they are (`0`, `999`, `1023`), then
/// powers of 1024 with a suffix `K M G T P E`, one decimal below 10 (`1.0K`, `1.5M`, `3.2G`) and
/// none from 10 on (`12K`). Like coreutils, values are rounded up, never down, so a size is
/// never understated; a value that rounds up to 1024 moves to the next unit (`1.0M`).
public func humanSize(_ bytes: UInt64) -> String {
    guard bytes >= 1024 else { return String(bytes) }
    let suffixes: [Character] = ["K", "M", "G", "T", "P", "E"]
    var exponent = binaryExponent(of: bytes)
    while true {
        let unit = UInt64(1) << (10 * exponent)
        let whole = bytes / unit, remainder = bytes % unit
        let tenths = tenthsRoundedUp(bytes, exponent: exponent)
        let suffix = suffixes[exponent - 1]
        if tenths < 100 {
            return "\(tenths / 10).\(tenths % 10)\(suffix)"
        }
        let rounded = whole + (remainder > 0 ? 1 : 0)
        if rounded < 1024 || exponent == suffixes.count {
            return "\(rounded)\(suffix)"
        }
        exponent += 1
    }
}

/// The power of 1024 whose unit a size of `bytes` (1024 or more) is shown in: 1 for K, up to
/// 6 for E, the largest not above `bytes`.
func binaryExponent(of bytes: UInt64) -> Int {
    var exponent = 1
    while exponent < 6, bytes >> (10 * (exponent + 1)) > 0 { exponent += 1 }
    return exponent
}

/// `bytes` in tenths of the unit 1024^`exponent`, rounded up, as `ls -lh` rounds: a size is
/// never understated.
func tenthsRoundedUp(_ bytes: UInt64, exponent: Int) -> UInt64 {
    let unit = UInt64(1) << (10 * exponent)
    // remainder < 2⁶⁰, so remainder × 10 fits in 64 bits.
    return bytes / unit * 10 + (bytes % unit * 10 + unit - 1) / unit
}

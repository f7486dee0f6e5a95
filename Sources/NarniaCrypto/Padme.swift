/// Padmé padding (Nikitin et al., "Reducing Metadata Leakage from Encrypted Files and
/// Communication with PURBs", PETS 2019, §4).
///
/// A length L is rounded up so that only the top ⌊log₂ E⌋+1 bits of its mantissa remain,
/// where E = ⌊log₂ L⌋. Overhead is at most about 12%, and falls as files grow; the number of
/// distinct padded sizes, and so the information leaked, is O(log log L).
public enum Padme {
    /// The padded length for a plaintext of `length` bytes. Lengths 0, 1 and 2 are unchanged.
    public static func paddedLength(_ length: UInt64) -> UInt64 {
        guard length > 2 else { return length }
        let e = UInt64(63 - length.leadingZeroBitCount)           // ⌊log₂ L⌋
        let s = UInt64(63 - e.leadingZeroBitCount) + 1            // ⌊log₂ E⌋ + 1
        let lastBits = e - s
        let mask: UInt64 = (1 << lastBits) - 1
        return (length + mask) & ~mask
    }
}

import NarniaSystem

/// A hybrid logical clock reading (docs/FORMAT.md, "The clock"): wall-clock nanoseconds, a
/// counter that orders changes made within one wall-clock tick or while the wall clock lags
/// behind a time already seen, and the device that made the change. Every last-writer-wins
/// value of the vault is ordered by it: (wall, counter, device), device bytes compared last.
public struct Stamp: Hashable, Comparable, Sendable {
    /// Nanoseconds since the Unix epoch.
    public var wall: Int64
    /// Orders stamps of one wall time.
    public var counter: UInt32
    /// The device that made the change.
    public var device: Identifier

    public init(wall: Int64, counter: UInt32, device: Identifier) {
        self.wall = wall
        self.counter = counter
        self.device = device
    }

    /// Older than every real stamp: what format-1 records are given when a store is upgraded.
    static func legacy(_ index: UInt32, device: Identifier) -> Stamp { Stamp(wall: 0, counter: index, device: device) }

    /// Later than every real stamp: what a removal that saw every place is given.
    static let latest = Stamp(wall: .max, counter: .max, device: Identifier(high: .max, low: .max))

    public static func < (a: Stamp, b: Stamp) -> Bool {
        if a.wall != b.wall { return a.wall < b.wall }
        if a.counter != b.counter { return a.counter < b.counter }
        return a.device < b.device
    }
}

/// The hybrid logical clock of this device: never behind any stamp it has seen, so that a
/// change made after seeing another is ordered after it even when the wall clocks disagree.
struct HybridClock {
    let device: Identifier
    private(set) var latest: Stamp

    init(device: Identifier) {
        self.device = device
        latest = Stamp(wall: 0, counter: 0, device: device)
    }

    /// Moves the clock past a stamp seen in a record.
    mutating func observe(_ stamp: Stamp) {
        if (stamp.wall, stamp.counter) > (latest.wall, latest.counter) {
            latest = Stamp(wall: stamp.wall, counter: stamp.counter, device: device)
        }
    }

    /// The stamp of a new change: the wall clock, or just after the latest stamp seen.
    mutating func next() -> Stamp {
        let now = SystemClock.nowNanoseconds()
        if now > latest.wall {
            latest = Stamp(wall: now, counter: 0, device: device)
        } else {
            latest = Stamp(wall: latest.wall, counter: latest.counter &+ 1, device: device)
        }
        return latest
    }
}

/// What a device had read when it wrote a record: for each device, the highest record number
/// (`seq`) up to which it had read every record (docs/FORMAT.md, "Acknowledgement").
public struct Knowledge: Equatable, Sendable {
    var seen: [Identifier: UInt64] = [:]

    subscript(device: Identifier) -> UInt64 {
        get { seen[device] ?? 0 }
        set { seen[device] = newValue }
    }

    /// True when this covers everything `other` covers.
    func covers(_ other: Knowledge) -> Bool {
        other.seen.allSatisfy { self[$0.key] >= $0.value }
    }

    /// The larger of the two, device by device.
    mutating func merge(_ other: Knowledge) {
        for (device, seq) in other.seen where seq > self[device] { seen[device] = seq }
    }
}

import NarniaCrypto

/// Record numbers of one device that name two different records: two copies of a store wrote
/// as one device — a backup restored and used while the original went on, or a block-level
/// clone of its disk (docs/FORMAT.md, "Reading journals"). Both versions are read: the merge
/// is a union, so nothing either copy wrote is lost. But what those numbers acknowledge no
/// longer names one record each, so it is reported, and the device goes on after them.
struct RecordFork: Equatable {
    let device: Identifier
    var seqs: ClosedRange<UInt64>

    /// "records 6–7 … exist", or "record 6 … exists", of `whose` ("this device").
    func twoVersions(of whose: String) -> String {
        seqs.lowerBound == seqs.upperBound
            ? "record \(seqs.lowerBound) of \(whose) exists in two versions"
            : "records \(seqs.lowerBound)–\(seqs.upperBound) of \(whose) exist in two versions"
    }

    /// Forks found in two ways: copies of one journal that disagree (`JournalVersions`), and
    /// journals of one device whose record numbers overlap (each copy of the store began a
    /// new journal after the split).
    static func find(copies: [RecordFork], journals: some Sequence<JournalFile>) -> [RecordFork] {
        var found = copies
        for (device, files) in Dictionary(grouping: journals.filter { $0.records > 0 }, by: \.device) {
            var reach: UInt64 = 0
            for file in files.sorted(by: { $0.firstSeq < $1.firstSeq }) {
                if reach > 0 && file.firstSeq <= reach {
                    found.append(RecordFork(device: device, seqs: file.firstSeq...min(reach, file.lastSeq)))
                }
                reach = max(reach, file.lastSeq)
            }
        }
        return merged(found)
    }

    /// One fork per run of overlapping numbers of a device.
    private static func merged(_ forks: [RecordFork]) -> [RecordFork] {
        var out: [RecordFork] = []
        for fork in forks.sorted(by: { ($0.device, $0.seqs.lowerBound) < ($1.device, $1.seqs.lowerBound) }) {
            if let last = out.last, last.device == fork.device, fork.seqs.lowerBound <= last.seqs.upperBound + 1 {
                out[out.count - 1].seqs = last.seqs.lowerBound...max(last.seqs.upperBound, fork.seqs.upperBound)
            } else {
                out.append(fork)
            }
        }
        return out
    }
}

/// The records of one journal's files, told apart by a hash of each payload, to find copies
/// that disagree where they overlap. Kept only for journals that have copies.
struct JournalVersions {
    private var digests: [[UInt8]] = []
    /// The first record index at which a file disagreed with one read before it.
    private(set) var firstDifference: UInt64?

    /// Called for each record of each file, in order.
    mutating func note(index: UInt64, payload: [UInt8]) {
        let digest = genericHash(payload, length: 16)
        if index < UInt64(digests.count) {
            if digests[Int(index)] != digest { firstDifference = min(firstDifference ?? index, index) }
        } else {
            digests.append(digest)
        }
    }
}

import XCTest
@testable import NarniaStore

/// Record numbers of one device that name two records (docs/FORMAT.md, "Devices"): found from
/// journals whose numbers overlap and from copies of one journal that disagree.
final class RecordForksTests: XCTestCase {
    let a = Identifier.random(), b = Identifier.random()

    func journal(_ device: Identifier, after previous: UInt64, records: UInt64) -> JournalFile {
        JournalFile(id: .random(), device: device, previousSeq: previous, snapshot: false, end: nil,
                    records: records, lastSeq: previous + records)
    }

    func testJournalsThatFollowOnAreNoFork() {
        let files = [journal(a, after: 0, records: 5), journal(a, after: 5, records: 3), journal(b, after: 0, records: 9)]
        XCTAssertEqual(RecordFork.find(copies: [], journals: files), [])
    }

    func testAnEmptyJournalIsNoFork() {
        let files = [journal(a, after: 0, records: 5), journal(a, after: 3, records: 0)]
        XCTAssertEqual(RecordFork.find(copies: [], journals: files), [])
    }

    func testOverlappingNumbersOfOneDeviceAreAFork() {
        // Two copies each began a journal after record 5; one wrote 3 records, the other 2.
        let files = [journal(a, after: 0, records: 5), journal(a, after: 5, records: 3), journal(a, after: 5, records: 2),
                     journal(b, after: 0, records: 4)]
        XCTAssertEqual(RecordFork.find(copies: [], journals: files), [RecordFork(device: a, seqs: 6...7)])
    }

    func testForksOfOneDeviceThatTouchAreOne() {
        let files = [journal(a, after: 0, records: 8), journal(a, after: 5, records: 5)]
        let copies = [RecordFork(device: a, seqs: 3...5)]
        XCTAssertEqual(RecordFork.find(copies: copies, journals: files), [RecordFork(device: a, seqs: 3...8)])
    }

    func testCopiesThatDisagreeFromARecordOn() {
        var versions = JournalVersions()
        func read(_ payloads: [[UInt8]]) {
            for (index, payload) in payloads.enumerated() { versions.note(index: UInt64(index), payload: payload) }
        }
        read([[1], [2], [3]])
        XCTAssertNil(versions.firstDifference)
        // A shorter copy that holds the same records, then one that differs at its second.
        read([[1], [2]])
        XCTAssertNil(versions.firstDifference)
        read([[1], [9], [3], [4]])
        XCTAssertEqual(versions.firstDifference, 1)
    }

    func testMessagesSayOneRecordOrSeveral() {
        XCTAssertEqual(RecordFork(device: a, seqs: 4...4).twoVersions(of: "this device"), "record 4 of this device exists in two versions")
        XCTAssertEqual(RecordFork(device: a, seqs: 4...6).twoVersions(of: "this device"), "records 4–6 of this device exist in two versions")
    }

    /// Review AA saw "records 5–7 of this device are missing" when only 5 was: the gaps are named.
    func testMissingOwnRecordsAreTheGapsNotTheRangeToTheLast() {
        XCTAssertEqual(Vault.gaps(in: [(1, 4), (6, 7)], upTo: 7), [5...5])
        XCTAssertEqual(Vault.gaps(in: [(6, 7), (1, 2)], upTo: 9), [3...5, 8...9])
        XCTAssertEqual(Vault.gaps(in: [(1, 3), (2, 9)], upTo: 9), [])
        XCTAssertEqual(Vault.gaps(in: [], upTo: 2), [1...2])
        XCTAssertEqual(Vault.gaps(in: [(4, 20)], upTo: 2), [1...2])
    }
}

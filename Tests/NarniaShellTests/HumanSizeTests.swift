import XCTest
@testable import NarniaShell

final class HumanSizeTests: XCTestCase {
    /// Every expected value was printed by GNU coreutils `ls -lh` for a file of that size.
    func testMatchesLs() {
        let cases: [(UInt64, String)] = [
            (0, "0"), (1, "1"), (999, "999"), (1000, "1000"), (1023, "1023"),
            (1024, "1.0K"), (1025, "1.1K"), (1536, "1.5K"), (1537, "1.6K"), (2047, "2.0K"), (2048, "2.0K"),
            (10188, "10K"), (10239, "10K"), (10240, "10K"), (10241, "11K"), (10752, "11K"), (10753, "11K"),
            (102_400, "100K"), (1_048_575, "1.0M"), (1_048_576, "1.0M"), (1_048_577, "1.1M"),
            (1_572_864, "1.5M"), (10_485_760, "10M"), (10_485_761, "11M"),
            (1_073_741_824, "1.0G"), (3_435_973_837, "3.3G"), (1_099_511_627_776, "1.0T"),
        ]
        for (bytes, expected) in cases {
            XCTAssertEqual(humanSize(bytes), expected, "\(bytes) bytes")
        }
    }

    /// A summary's size never says less than `ls -lh` of the same bytes (review EF-7).
    func testSummariesRoundUpAsListingsDo() {
        let cases: [(UInt64, String)] = [
            (1, "1 byte"), (1023, "1023 bytes"), (1024, "1.0 KiB"), (1980, "2.0 KiB"), (5970, "5.9 KiB"),
            (10_240, "10.0 KiB"), (10_241, "10.1 KiB"), (1_048_575, "1.0 MiB"), (1_288_490_188, "1.2 GiB"),
            (1_288_490_189, "1.3 GiB"), (UInt64.max, "16.0 EiB"),
        ]
        for (bytes, expected) in cases {
            XCTAssertEqual(TransferReport.bytesForPeople(bytes), expected, "\(bytes) bytes")
        }
    }

    func testRoundsUpAcrossUnitBoundaries() {
        XCTAssertEqual(humanSize(1024 * 1024 - 1), "1.0M")
        XCTAssertEqual(humanSize(1024 * 1023), "1023K")
        XCTAssertEqual(humanSize(1024 * 1023 + 1), "1.0M", "1023.001K rounds up to 1024K, which is 1.0M")
        XCTAssertEqual(humanSize(12 * 1024), "12K")
        XCTAssertEqual(humanSize(1024 * 1024 * 1024 * 3 + 200 * 1024 * 1024), "3.2G")
    }

    func testLargestSizes() {
        XCTAssertEqual(humanSize(1 << 50), "1.0P")
        XCTAssertEqual(humanSize(1 << 60), "1.0E")
        XCTAssertEqual(humanSize(UInt64.max), "16E")
    }
}

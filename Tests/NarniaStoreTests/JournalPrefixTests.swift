import Foundation
import XCTest
@testable import NarniaStore

/// `Vault.isPrefix` as `sync` compares two copies of one journal: a copy taken while its
/// device appended differs from the finished journal only in the new records' first bytes,
/// zero in the copy (reviews AZ-3, BD-1); any other difference is a fork.
final class JournalPrefixTests: XCTestCase {
    var folder = ""

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("journal-prefix-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Whether a copy of 200,000 random bytes (so that a difference can lie in a later read
    /// than the first) cut to 150,000, with `edit` made to it, passes for a prefix of them.
    func isPrefix(unfinishedAppend: Bool = true, _ edit: (inout [UInt8]) -> Void) throws -> Bool {
        let longer = (0..<200_000).map { _ in UInt8.random(in: 1...255) }
        var copy = Array(longer.prefix(150_000))
        edit(&copy)
        try Data(longer).write(to: URL(fileURLWithPath: folder + "/longer"))
        try Data(copy).write(to: URL(fileURLWithPath: folder + "/copy"))
        return try Vault.isPrefix(folder + "/copy", of: folder + "/longer", length: Int64(copy.count), unfinishedAppend: unfinishedAppend)
    }

    func testAnUnfinishedFirstByteIsAPrefix() throws {
        XCTAssertTrue(try isPrefix { _ in })
        XCTAssertTrue(try isPrefix { $0[100_000] = 0 })
        XCTAssertFalse(try isPrefix(unfinishedAppend: false) { $0[100_000] = 0 }, "only where sync allows it")
        XCTAssertTrue(try isPrefix { $0[10] = 0; $0[100_000] = 0 }, "two records' first bytes, in two reads")
        XCTAssertTrue(try isPrefix { $0[65_535] = 0; $0[65_537] = 0 }, "two, either side of one read's end")
    }

    func testAnyOtherDifferenceIsAFork() throws {
        XCTAssertFalse(try isPrefix { $0[100_000] = $0[100_000] == 1 ? 2 : 1 }, "a byte that is not zero")
        XCTAssertFalse(try isPrefix { $0[100_000] = 0; $0[100_001] = 0 }, "two zero bytes together")
        XCTAssertFalse(try isPrefix { $0[65_535] = 0; $0[65_536] = 0 }, "two together, across two reads")
    }
}

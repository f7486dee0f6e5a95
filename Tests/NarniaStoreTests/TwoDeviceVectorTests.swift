import Foundation
import XCTest
import NarniaCrypto
@testable import NarniaStore

/// Opens the committed format-2 vector store (Vectors/two-devices, made by
/// Vectors/make-vectors.sh: one store changed on two devices and merged) and tampered copies of
/// it. Every build must read this format byte for byte, and every alteration must be caught.
final class TwoDeviceVectorTests: XCTestCase {
    static let notes: [String: [UInt8]] = [
        "a.txt": Array("first note\n".utf8),
        "b.txt": Array("second note, a little longer\n".utf8),
        "c.txt": [],
    ]

    var work: String!

    override func setUpWithError() throws {
        work = try StoreVectorTests.copyOfVectorStore("two-devices")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: work)
    }

    func open() throws -> Vault {
        try Vault.open(at: work, passphrase: StoreVectorTests.secret(StoreVectorTests.passphrase))
    }

    func content(_ vault: Vault, _ path: String) throws -> [UInt8] {
        var id = Identifier.root
        for name in path.split(separator: "/") { id = try XCTUnwrap(vault.child(named: String(name), in: id), path).id }
        final class Sink: @unchecked Sendable { var bytes: [UInt8] = [] }
        let sink = Sink()
        try vault.readContent(of: try XCTUnwrap(vault.item(id))) { p, n in sink.bytes.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n)) }
        return sink.bytes
    }

    /// The journal files of the copy, by the name of the device that wrote each.
    func journals() throws -> [String: String] {
        let other = try StoreVectorTests.copyOfVectorStore("two-devices")
        defer { try? FileManager.default.removeItem(atPath: other) }
        let vault = try Vault.open(at: other, passphrase: StoreVectorTests.secret(StoreVectorTests.passphrase))
        var out: [String: String] = [:]
        for file in vault.journals.values {
            out[vault.deviceName(file.device)] = work + String(vault.layout.objectPath(for: file.id).dropFirst(other.count))
        }
        return out
    }

    func modify(_ path: String, _ change: (inout [UInt8]) -> Void) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        change(&bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// The record boundaries of a journal: the offsets where records end.
    func recordEnds(_ path: String) throws -> [Int] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let vault = try open()
        let id = try XCTUnwrap(Identifier(hex: Substring((path as NSString).lastPathComponent)))
        var ends: [Int] = []
        var offset = 0
        var index: UInt64 = 0
        while offset < bytes.count {
            let header = Array(bytes[offset..<(offset + JournalKeys.headerLength)])
            let length = try XCTUnwrap(vault.journalKeys.openHeader(header, journal: id, index: index))
            offset += JournalKeys.headerLength + length + AEAD.tagLength
            ends.append(offset)
            index += 1
        }
        return ends
    }

    func testReadsTheTwoDeviceStore() throws {
        let vault = try open()
        XCTAssertEqual(try content(vault, "docs/hello.txt"), StoreVectorTests.hello)
        XCTAssertEqual(try content(vault, "empty"), [])
        XCTAssertEqual(try content(vault, "two-chunks.bin"), StoreVectorTests.twoChunks)
        for (name, bytes) in Self.notes { XCTAssertEqual(try content(vault, "notes/" + name), bytes, name) }
        XCTAssertEqual(vault.children(of: .root).map(\.name).sorted(), ["docs", "empty", "notes", "shared", "two-chunks.bin"])
        let shared = try XCTUnwrap(vault.child(named: "shared", in: .root))
        XCTAssertEqual(vault.children(of: shared.id).map(\.name), ["x"], "mkdir -p on both devices: one folder")
        XCTAssertEqual(Set(vault.devices.map(\.name)).intersection(["device-a", "device-b"]), ["device-a", "device-b"])
        XCTAssertTrue(try vault.verify().isWhole)
    }

    func testWrongPassphraseChangesNothing() throws {
        let before = try FileManager.default.subpathsOfDirectory(atPath: work).sorted()
        XCTAssertThrowsError(try Vault.open(at: work, passphrase: StoreVectorTests.secret("not it"))) {
            XCTAssertEqual($0 as? VaultError, .wrongPassphrase)
        }
        XCTAssertEqual(try FileManager.default.subpathsOfDirectory(atPath: work).sorted(), before)
    }

    /// Device B's journal cut in the middle of its last record: what it held before is read,
    /// its last change is missing, nothing is deleted, and verify says so.
    func testAJournalCutMidRecordIsReadUpToItsLastRecord() throws {
        let journal = try XCTUnwrap(journals()["device-b"])
        let ends = try recordEnds(journal)
        let cut = ends[ends.count - 2] + 30
        try modify(journal) { $0 = Array($0.prefix(cut)) }
        let files = try FileManager.default.subpathsOfDirectory(atPath: work).sorted()
        let vault = try open()
        XCTAssertEqual(try content(vault, "notes/a.txt"), Self.notes["a.txt"], "b's earlier records are read")
        let report = try vault.verify()
        XCTAssertTrue(report.problems.contains { $0.contains("the journal of device") && $0.contains("not a whole record") }, "\(report.problems)")
        XCTAssertFalse(vault.devices.contains { $0.name == "device-b" }, "b's last record, which named it, is the one cut")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: journal)).count, cut, "another device's journal is only read")
        XCTAssertTrue(Set(files).isSubset(of: try FileManager.default.subpathsOfDirectory(atPath: work)), "nothing deleted")
    }

    /// The two devices' journals swapped: each record is bound to its journal's name.
    func testJournalsSwappedBetweenDevicesAreRefused() throws {
        let j = try journals()
        let a = try XCTUnwrap(j["device-a"]), b = try XCTUnwrap(j["device-b"])
        let da = try Data(contentsOf: URL(fileURLWithPath: a)), db = try Data(contentsOf: URL(fileURLWithPath: b))
        try db.write(to: URL(fileURLWithPath: a))
        try da.write(to: URL(fileURLWithPath: b))
        XCTAssertThrowsError(try open()) { XCTAssertTrue($0 is MetadataError, "\($0)") }
    }

    /// A record of device B's journal appended to device A's: it does not authenticate there.
    func testARecordReplayedIntoAnotherDevicesJournalIsRefused() throws {
        let j = try journals()
        let a = try XCTUnwrap(j["device-a"]), b = try XCTUnwrap(j["device-b"])
        let ends = try recordEnds(b)
        let record = [UInt8](try Data(contentsOf: URL(fileURLWithPath: b)))[ends[ends.count - 2]..<ends.last!]
        try modify(a) { $0 += record }
        XCTAssertThrowsError(try open()) { XCTAssertTrue($0 is MetadataError, "\($0)") }
    }

    /// A flipped byte in a journal's body: refused, naming the journal and record.
    func testAFlippedByteInAJournalIsRefused() throws {
        let a = try XCTUnwrap(journals()["device-a"])
        let ends = try recordEnds(a)
        try modify(a) { $0[ends[0] + JournalKeys.headerLength + 3] ^= 0x20 }
        XCTAssertThrowsError(try open()) { error in
            XCTAssertTrue("\(error)".contains("record 1 does not authenticate"), "\(error)")
        }
    }

    func testAFlippedByteInAPackFailsOnlyItsItem() throws {
        let (b, path) = try { () throws -> (ContentInfo, String) in
            let vault = try open()
            let b = try XCTUnwrap(vault.child(named: "b.txt", in: try XCTUnwrap(vault.child(named: "notes", in: .root)).id)?.content)
            return (b, try XCTUnwrap(vault.objectPath(of: b)))
        }()
        try modify(path) { $0[Int(b.offset) + AEAD.nonceLength + 3] ^= 0x40 }
        let vault = try open()
        XCTAssertEqual(try vault.verify().damaged.map(\.path), ["/notes/b.txt"])
        XCTAssertEqual(try content(vault, "notes/a.txt"), Self.notes["a.txt"])
    }
}

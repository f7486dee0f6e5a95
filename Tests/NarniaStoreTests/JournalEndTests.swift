import Foundation
import XCTest
import NarniaCrypto
import NarniaSystem
@testable import NarniaStore

/// What `JournalReader` makes of the bytes after a journal's last whole record: the writer's
/// own append stopped before it finished (`unfinished`, cut off by its device's next open), a
/// cut (reported), or damage (refused). An append writes a record's first byte after all but
/// its last, and its last byte last (`JournalWriter.append`), so only a stopped append leaves
/// the first byte zero or the record exactly one byte short.
final class JournalEndTests: XCTestCase {
    var folder: String!
    let id = Identifier([UInt8](repeating: 7, count: 16))
    var keys: JournalKeys!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("journal-end-\(UUID())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        keys = try JournalKeys(masterKey: Secret.random(count: 32))
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// A journal of `count` records (payloads of `size` bytes), and where each record begins.
    func journal(records count: Int, size: Int = 9000) throws -> (path: String, starts: [Int]) {
        let path = folder + "/" + id.hex
        let writer = try JournalWriter.create(id: id, path: path, directory: folder, keys: keys) { self.folder + "/stage" }
        var starts: [Int] = []
        for i in 0..<count {
            starts.append(Int(writer.endOffset))
            try writer.append([UInt8](repeating: UInt8(i % 256), count: size))
        }
        return (path, starts)
    }

    func end(of path: String) throws -> JournalEnd {
        let fd = try FileDescriptor.open(path, .readOnly)
        return try JournalReader.read(fd, id: id, keys: keys, name: "journal", apply: { _, _, _ in })
    }

    func change(_ path: String, _ edit: (inout [UInt8]) -> Void) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        edit(&bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// The journal at `path` reads as `records` whole records and a cut of `bytes` (reported),
    /// not an unfinished append.
    func assertCut(_ path: String, records: UInt64, bytes: Int64, line: UInt = #line) throws {
        let end = try end(of: path)
        XCTAssertEqual(end.records, records, line: line)
        XCTAssertEqual(end.cutBytes, bytes, line: line)
        XCTAssertFalse(end.unfinished, line: line)
    }

    /// One record in 256 would begin with a zero byte, were the first byte not chosen: 5,000
    /// sealed records all miss it by chance with a probability of 3e-9.
    func testNoRecordBeginsWithAZeroByte() throws {
        XCTAssertFalse((0..<5000).contains { keys.seal([1], journal: id, index: UInt64($0))[0] == 0 })
        let (path, starts) = try journal(records: 300, size: 1)
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        XCTAssertFalse(starts.contains { bytes[$0] == 0 })
        XCTAssertEqual(try end(of: path), JournalEnd(records: 300, offset: Int64(bytes.count), lastRecordStart: Int64(starts.last!), cutBytes: 0))
    }

    /// A kill after the append's first write, or during it (between pages, or before the header
    /// was whole), leaves the first byte zero and up to one record after it.
    func testAnAppendStoppedBeforeItsFirstByteIsUnfinished() throws {
        let (path, starts) = try journal(records: 3)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        for cut in [size, size - 1, starts[2] + 4096, starts[2] + 50, starts[2] + 20, starts[2] + 1] {
            let copy = folder + "/copy"
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            try change(copy) { bytes in
                bytes[starts[2]] = 0
                bytes.removeLast(size - cut)
            }
            let end = try end(of: copy)
            XCTAssertEqual(end.records, 2, "cut at \(cut)")
            XCTAssertEqual(end.cutBytes, Int64(cut - starts[2]))
            XCTAssertTrue(end.unfinished, "cut at \(cut)")
        }
    }

    /// A kill before the append's last write leaves the record whole but for its last byte:
    /// the file never reached the size the append gives it.
    func testAnAppendStoppedBeforeItsLastByteIsUnfinished() throws {
        let (path, starts) = try journal(records: 3)
        try change(path) { $0.removeLast() }
        let end = try end(of: path)
        XCTAssertEqual(end.records, 2)
        XCTAssertEqual(end.offset, Int64(starts[2]))
        XCTAssertTrue(end.unfinished)
    }

    /// A journal cut inside a whole record (a copy still arriving, a restore cut short, a cut):
    /// its first byte is there, so it is a cut, reported, and never taken for an unfinished
    /// append, down to two bytes short.
    func testAWholeRecordCutShortIsACut() throws {
        let (path, starts) = try journal(records: 3)
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        try change(path) { $0.removeLast(2) }
        try assertCut(path, records: 2, bytes: Int64(size - 2 - starts[2]))
        try change(path) { $0.removeLast($0.count - (starts[2] + 4096)) }
        try assertCut(path, records: 2, bytes: 4096)
    }

    /// A record's first byte zero with the next record whole after it is one a copier read
    /// before its first byte was written, finished in the file it copied (the writer begins
    /// a record only after the last one is durable): it is read whole, its first byte found
    /// again, and so is every record after it, the last one unfinished or not (review BD-2).
    func testAZeroFirstByteFollowedByTheNextRecordIsACopiersReadOfAFinishedRecord() throws {
        let (path, starts) = try journal(records: 4, size: 300)
        var payloads: [[UInt8]] = []
        let whole = try FileDescriptor.open(path, .readOnly)
        _ = try JournalReader.read(whole, id: id, keys: keys, name: "journal") { _, payload, _ in payloads.append(payload) }
        try change(path) { $0[starts[1]] = 0; $0[starts[2]] = 0 }
        var read: [[UInt8]] = []
        let fd = try FileDescriptor.open(path, .readOnly)
        let ending = try JournalReader.read(fd, id: id, keys: keys, name: "journal") { _, payload, _ in read.append(payload) }
        XCTAssertEqual(read, payloads)
        XCTAssertEqual(ending.records, 4)
        XCTAssertEqual(ending.cutBytes, 0)
        try change(path) { $0[starts[3]] = 0 }
        let torn = try end(of: path)
        XCTAssertEqual(torn.records, 3)
        XCTAssertTrue(torn.unfinished, "the last record is judged as before")
    }

    /// Zeros over more than a record's first byte, or over its first byte with no record of
    /// the next index after it, are no copier's read: the journal is damaged, not silently
    /// shorter.
    func testZerosOverMoreThanAFirstByteFollowedByMoreThanOneRecordAreDamage() throws {
        let (path, starts) = try journal(records: 3)
        for edit: (inout [UInt8]) -> Void in [{ $0[starts[1]] = 0; $0[starts[1] + 1] = 0 },
                                              { $0[starts[1]] = 0; $0[starts[2] + 30] ^= 1 }] {
            let copy = folder + "/copy"
            try? FileManager.default.removeItem(atPath: copy)
            try FileManager.default.copyItem(atPath: path, toPath: copy)
            try change(copy, edit)
            XCTAssertThrowsError(try end(of: copy)) { error in
                guard case MetadataError.damaged = error else { return XCTFail("\(error)") }
            }
        }
    }

    /// A tail of zeros alone (a file system that grew the file but never wrote it, at a power
    /// cut) authenticates as no record: a cut, reported as before.
    func testATailOfZerosIsACut() throws {
        let (path, _) = try journal(records: 2)
        try change(path) { $0 += [UInt8](repeating: 0, count: 5000) }
        try assertCut(path, records: 2, bytes: 5000)
    }

    /// The zeroed first byte of a record that is not the next one (its header authenticates
    /// under another index) is not taken for an unfinished append either.
    func testAnotherRecordsHeaderAfterAZeroByteIsDamage() throws {
        let (path, starts) = try journal(records: 3)
        try change(path) { bytes in
            let third = Array(bytes[starts[2]...])
            bytes.removeLast(bytes.count - starts[1])
            bytes += third
            bytes[starts[1]] = 0
        }
        XCTAssertThrowsError(try end(of: path))
    }
}

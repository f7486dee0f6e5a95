import Foundation
import XCTest
import NarniaCrypto
@testable import NarniaStore
@testable import NarniaSystem

/// Opens the committed format-1 vector store (Vectors/store, made by an earlier build's
/// Vectors/make-vectors.sh) and tampered copies of it: every build must upgrade and read this
/// format, and every alteration must be caught.
final class StoreVectorTests: XCTestCase {
    static let passphrase = "vector passphrase"
    static let hello = Array("hello, narnia\n".utf8)
    static let twoChunks: [UInt8] = (0..<1_048_581).map { UInt8(($0 * 7 + 3) % 251) }

    var work: String!

    override func setUpWithError() throws {
        work = try Self.copyOfVectorStore("store")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: work)
    }

    /// A fresh copy of the committed vector store `name` (under Vectors/), to open and tamper with.
    static func copyOfVectorStore(_ name: String) throws -> String {
        let vectors = try XCTUnwrap(Bundle.module.url(forResource: "Vectors", withExtension: nil)).path
        let copy = NSTemporaryDirectory() + "narnia-vectors-" + UUID().uuidString
        try FileManager.default.copyItem(atPath: vectors + "/" + name, toPath: copy)
        return copy
    }

    static func secret(_ text: String) throws -> Secret {
        try Array(text.utf8).withUnsafeBytes { try Secret(copying: $0) }
    }

    func open(_ passphrase: String = passphrase) throws -> Vault {
        try Vault.open(at: work, passphrase: Self.secret(passphrase))
    }

    func content(_ vault: Vault, _ path: [String]) throws -> [UInt8] {
        var id = Identifier.root
        for name in path { id = try XCTUnwrap(vault.child(named: name, in: id), "missing \(path)").id }
        let item = try XCTUnwrap(vault.item(id))
        final class Sink: @unchecked Sendable { var bytes: [UInt8] = [] }
        let sink = Sink()
        try vault.readContent(of: item) { p, n in sink.bytes.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n)) }
        return sink.bytes
    }

    /// The object file of an item, found through the metadata.
    func objectPath(_ vault: Vault, _ name: String) throws -> String {
        let item = try XCTUnwrap(vault.child(named: name, in: .root))
        return vault.objectPath(of: try XCTUnwrap(item.content))!
    }

    func testReadsTheVectorStore() throws {
        let vault = try open()
        XCTAssertEqual(try content(vault, ["docs", "hello.txt"]), Self.hello)
        XCTAssertEqual(try content(vault, ["empty"]), [])
        XCTAssertEqual(try content(vault, ["two-chunks.bin"]), Self.twoChunks)
        XCTAssertEqual(vault.itemCount, 4)
        XCTAssertTrue(try vault.verify().damaged.isEmpty)
    }

    func testWrongPassphraseIsRefusedAndChangesNothing() throws {
        let before = try snapshot()
        XCTAssertThrowsError(try open("not it")) { XCTAssertEqual($0 as? VaultError, .wrongPassphrase) }
        XCTAssertEqual(try snapshot(), before)
    }

    func testFlippedByteInAnObjectIsCaught() throws {
        let path = try { let v = try open(); return try objectPath(v, "two-chunks.bin") }()
        try modify(path) { $0[600_000] ^= 0x40 }
        let vault = try open()
        XCTAssertThrowsError(try content(vault, ["two-chunks.bin"])) { XCTAssertTrue($0 is ContentError, "\($0)") }
        XCTAssertEqual(try content(vault, ["docs", "hello.txt"]), Self.hello, "other items still read")
        XCTAssertEqual(try vault.verify().damaged.map(\.path), ["/two-chunks.bin"])
    }

    func testTruncatedObjectAndMissingFinalChunkAreCaught() throws {
        let path = try { let v = try open(); return try objectPath(v, "two-chunks.bin") }()
        // Drop the last chunk whole: without the length check the first chunk alone would pass.
        let chunk = ContentFormat.chunkSize + AEAD.tagLength
        try modify(path) { $0 = Array($0.prefix(AEAD.nonceLength + chunk)) }
        let vault = try open()
        XCTAssertThrowsError(try content(vault, ["two-chunks.bin"])) { error in
            guard case ContentError.incomplete = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(try vault.verify().missing.map(\.path), ["/two-chunks.bin"], "a short object may still be arriving")
    }

    func testSwappedChunksAreCaught() throws {
        // Chunk 0 is full and chunk 1 is short, so swap the first 32 KiB of each (same offsets
        // relative to each chunk's start): the tags no longer match their positions.
        let path = try { let v = try open(); return try objectPath(v, "two-chunks.bin") }()
        let start0 = AEAD.nonceLength, start1 = AEAD.nonceLength + ContentFormat.chunkSize + AEAD.tagLength
        try modify(path) { bytes in
            let a = Array(bytes[start0..<(start0 + 16)]), b = Array(bytes[start1..<(start1 + 16)])
            bytes.replaceSubrange(start0..<(start0 + 16), with: b)
            bytes.replaceSubrange(start1..<(start1 + 16), with: a)
        }
        let vault = try open()
        XCTAssertThrowsError(try content(vault, ["two-chunks.bin"]))
    }

    func testObjectsSwappedBetweenItemsAreCaught() throws {
        let (hello, empty) = try { () throws -> (String, String) in
            let v = try open()
            let docs = try XCTUnwrap(v.child(named: "docs", in: .root))
            let item = try XCTUnwrap(v.child(named: "hello.txt", in: docs.id)?.content)
            return (v.objectPath(of: item)!, try objectPath(v, "empty"))
        }()
        try swapFiles(hello, empty)
        let vault = try Vault.open(at: work, passphrase: Self.secret(Self.passphrase))
        XCTAssertThrowsError(try content(vault, ["empty"]))
        XCTAssertThrowsError(try content(vault, ["docs", "hello.txt"]))
        XCTAssertEqual(try content(vault, ["two-chunks.bin"]), Self.twoChunks)
    }

    func testDeletedObjectIsReportedByVerifyAsNotHere() throws {
        let path = try { let v = try open(); return try objectPath(v, "empty") }()
        try FileManager.default.removeItem(atPath: path)
        let vault = try open()
        let report = try vault.verify()
        XCTAssertEqual(report.missing.map(\.path), ["/empty"], "a missing object cannot be told from one not yet arrived")
        XCTAssertTrue(report.damaged.isEmpty)
        XCTAssertFalse(report.isWhole)
    }

    func testDamagedFormerJournalRefusesToOpenRatherThanGuess() throws {
        let journal = try formerJournalPath()
        try modify(journal) { $0[$0.count / 2] ^= 0x01 }
        XCTAssertThrowsError(try open()) { XCTAssertTrue($0 is MetadataError, "\($0)") }
        XCTAssertTrue(FileManager.default.fileExists(atPath: journal), "nothing was changed")
    }

    func testUpgradeWritesAFormat2KeyFileAndRetiresTheFormerFiles() throws {
        let journal = try formerJournalPath()
        do {
            let vault = try open()
            XCTAssertEqual(try content(vault, ["docs", "hello.txt"]), Self.hello)
        }
        let top = try FileManager.default.contentsOfDirectory(atPath: work).filter { $0.count == 32 }
            .filter { (try? FileManager.default.attributesOfItem(atPath: work + "/" + $0)[.size] as? Int) != InboxPublicKeyFile.length }
        XCTAssertEqual(top.count, 1, "one key file (besides the inbox public key file the upgrade makes)")
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: work + "/" + top[0])[.size] as? Int, KeyFile.length)
        XCTAssertFalse(FileManager.default.fileExists(atPath: journal), "the format-1 journal was retired and deleted")
        let vault = try open()
        XCTAssertEqual(try content(vault, ["two-chunks.bin"]), Self.twoChunks)
        XCTAssertTrue(try vault.verify().isWhole)
    }

    func testUpgradeInterruptedBeforeTheNewKeyFileFinishesAtTheNextOpen() throws {
        SystemCallFaults.inject("link", errno: EIO)
        defer { SystemCallFaults.reset() }
        XCTAssertThrowsError(try open())
        SystemCallFaults.reset()
        let vault = try open()
        XCTAssertEqual(try content(vault, ["docs", "hello.txt"]), Self.hello)
        XCTAssertEqual(vault.itemCount, 4)
        XCTAssertEqual(vault.journals.count, 1, "the first attempt's snapshot is used, not written twice")
    }

    func testTornFormerJournalTailIsReadUpToItsLastRecord() throws {
        let journal = try formerJournalPath()
        try modify(journal) { $0 += [0x42, 0x17, 0x99] }  // a write cut short by a crash
        let vault = try open()
        XCTAssertEqual(try content(vault, ["docs", "hello.txt"]), Self.hello)
        XCTAssertEqual(vault.itemCount, 4)
    }

    func testObjectsNoJournalNamesAreKept() throws {
        // It may be another device's import whose journal has not arrived yet.
        let orphan = work + "/ab/" + String(repeating: "c", count: 30)
        let orphan2 = work + "/ab/ab" + String(repeating: "d", count: 30)
        try FileManager.default.createDirectory(atPath: work + "/ab", withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: orphan, contents: Data([1, 2, 3]))
        _ = FileManager.default.createFile(atPath: orphan2, contents: Data([4, 5, 6]))
        _ = try open()
        XCTAssertTrue(FileManager.default.fileExists(atPath: orphan))
        XCTAssertTrue(FileManager.default.fileExists(atPath: orphan2))
    }

    // MARK: Helpers

    func snapshot() throws -> [String: Data] {
        var out: [String: Data] = [:]
        for case let rel as String in FileManager.default.enumerator(atPath: work)! {
            var isDir: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: work + "/" + rel, isDirectory: &isDir)
            if !isDir.boolValue { out[rel] = FileManager.default.contents(atPath: work + "/" + rel) }
        }
        return out
    }

    func modify(_ path: String, _ change: (inout [UInt8]) -> Void) throws {
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        change(&bytes)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    func swapFiles(_ a: String, _ b: String) throws {
        let da = try Data(contentsOf: URL(fileURLWithPath: a)), db = try Data(contentsOf: URL(fileURLWithPath: b))
        try db.write(to: URL(fileURLWithPath: a))
        try da.write(to: URL(fileURLWithPath: b))
    }

    /// The format-1 journal of the copy in `work`: the one object of the store that no item
    /// names (found through an upgraded second copy).
    func formerJournalPath() throws -> String {
        let other = try Self.copyOfVectorStore("store")
        defer { try? FileManager.default.removeItem(atPath: other) }
        let vault = try Vault.open(at: other, passphrase: Self.secret(Self.passphrase))
        let named = Set(vault.items.values.compactMap { $0.content.flatMap { vault.objectPath(of: $0) } }
            .map { String($0.dropFirst(other.count)) })
        let all = try StoreInventory.scan(work).files.values.filter(\.legacy).compactMap(\.main).map { "/" + $0 }
        let unnamed = all.filter { !named.contains($0) }
        XCTAssertEqual(unnamed.count, 1)
        return work + unnamed[0]
    }
}

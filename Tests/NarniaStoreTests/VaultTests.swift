import Foundation
import XCTest
import NarniaCrypto
import NarniaSystem
@testable import NarniaStore

final class VaultTests: XCTestCase {
    var dir: String!

    override func setUp() {
        dir = NSTemporaryDirectory() + "narnia-vault-" + UUID().uuidString
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: dir)
    }

    func secret(_ s: String) throws -> Secret { try Array(s.utf8).withUnsafeBytes { try Secret(copying: $0) } }

    func create() throws -> Vault {
        try Vault.create(at: dir, passphrase: secret("pw"), parameters: .insecureTestOnly)
    }

    func reopen(_ pass: String = "pw") throws -> Vault { try Vault.open(at: dir, passphrase: secret(pass)) }

    @discardableResult
    func addFile(_ vault: Vault, _ name: String, _ bytes: [UInt8], in parent: Identifier = .root) throws -> Item {
        let batch = ImportBatch.begin(in: vault)
        var offset = 0
        let item = try batch.addFile(named: name, in: parent, source: { p, max in
            let n = min(max, bytes.count - offset)
            bytes.withUnsafeBytes { p.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
            offset += n
            return n
        }, classify: { _ in ("application/octet-stream", .other) })
        try batch.commit()
        return try XCTUnwrap(vault.item(item.id))
    }

    func read(_ vault: Vault, _ item: Item) throws -> [UInt8] {
        final class Sink: @unchecked Sendable { var bytes: [UInt8] = [] }
        let sink = Sink()
        try vault.readContent(of: item) { p, n in sink.bytes.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n)) }
        return sink.bytes
    }

    func testNameRules() throws {
        XCTAssertThrowsError(try ItemName.validated(""))
        XCTAssertThrowsError(try ItemName.validated("."))
        XCTAssertThrowsError(try ItemName.validated(".."))
        XCTAssertThrowsError(try ItemName.validated("a/b"))
        XCTAssertThrowsError(try ItemName.validated("a\u{0}b"))
        XCTAssertThrowsError(try ItemName.validated(String(repeating: "é", count: 128)), "256 bytes")
        XCTAssertEqual(try ItemName.validated(String(repeating: "a", count: 255)).utf8.count, 255)
        XCTAssertEqual(try ItemName.validated("cafe\u{301}").unicodeScalars.count, 4, "NFC")
        XCTAssertEqual(ItemName.numbered("a.jpg", 2), "a (2).jpg")
        XCTAssertEqual(ItemName.numbered("notes", 3), "notes (3)")
        XCTAssertEqual(ItemName.numbered(".profile", 2), ".profile (2)")
        XCTAssertEqual(ItemName.numbered("x.tar.gz", 2), "x (2).tar.gz")
        XCTAssertLessThanOrEqual(ItemName.numbered(String(repeating: "a", count: 255), 12).utf8.count, 255)
    }

    func testKeepBothNumberingAcrossAndWithinBatches() throws {
        let vault = try create()
        try addFile(vault, "a.txt", [1])
        let batch = ImportBatch.begin(in: vault)
        let src: (UnsafeMutableRawPointer, Int) throws -> Int = { _, _ in 0 }
        let b = try batch.addFile(named: "a.txt", in: .root, source: src, classify: { _ in ("", .other) })
        let c = try batch.addFile(named: "a.txt", in: .root, source: src, classify: { _ in ("", .other) })
        try batch.commit()
        XCTAssertEqual([b.name, c.name], ["a (2).txt", "a (3).txt"])
    }

    func testContentAtChunkBoundariesRoundTrips() throws {
        let vault = try create()
        let chunk = ContentFormat.chunkSize
        for size in [0, 1, 2, 3, chunk - 1, chunk, chunk + 1, 2 * chunk, 2 * chunk + 17] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) }
            let item = try addFile(vault, "f\(size)", bytes)
            XCTAssertEqual(try read(vault, item), bytes, "size \(size)")
            let object = vault.objectPath(of: item.content!)!
            XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: object)[.size] as? Int64,
                           ContentFormat.objectLength(size: UInt64(size)))
        }
    }

    /// `export` writes the content whole at every chunk boundary, and a damaged chunk in the
    /// middle fails it by its index.
    func testExportWritesEveryChunkInItsPlace() throws {
        let vault = try create()
        let chunk = ContentFormat.chunkSize
        for size in [0, 1, chunk - 1, chunk, chunk + 1, 7 * chunk + 5] {
            let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ size) }
            let item = try addFile(vault, "e\(size)", bytes)
            let out = dir + "/export-\(size)"
            let fd = try FileDescriptor.open(out, .writeOnly, options: [.create, .exclusive])
            try vault.export(item, to: fd)
            XCTAssertEqual(try [UInt8](Data(contentsOf: URL(fileURLWithPath: out))), bytes, "size \(size)")
        }
        let item = try addFile(vault, "damaged", [UInt8](repeating: 9, count: 3 * chunk))
        let object = vault.objectPath(of: item.content!)!
        var sealed = try [UInt8](Data(contentsOf: URL(fileURLWithPath: object)))
        sealed[Int(ContentFormat.offset(ofChunk: 1)) + 10] ^= 1
        try Data(sealed).write(to: URL(fileURLWithPath: object))
        let fd = try FileDescriptor.open(dir + "/export-damaged", .writeOnly, options: [.create, .exclusive])
        XCTAssertThrowsError(try vault.export(item, to: fd)) { error in
            guard case ContentError.chunkFailed(index: 1) = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try read(vault, item)) { error in
            guard case ContentError.chunkFailed(index: 1) = error else { return XCTFail("\(error)") }
        }
    }

    /// Content of a chunk or more is read past the page cache where the disk takes it: each
    /// chunk from the whole blocks around it. A read that comes back short (the object cut
    /// while it is read) is made again through the cache, which names the damage.
    func testDirectReadsFindEveryChunkAndFallBackWhenShort() throws {
        let vault = try create()
        let chunk = ContentFormat.chunkSize
        let small = try addFile(vault, "small", [UInt8](repeating: 1, count: chunk - 1))
        XCTAssertNil(try vault.reader(for: small.content!).openForDirectReads(), "smaller content is read through the cache")
        let bytes = (0..<(3 * chunk + 100)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 5) }
        let item = try addFile(vault, "big", bytes)
        let content = item.content!
        let reader = try vault.reader(for: content)
        guard let direct = reader.openForDirectReads() else { throw XCTSkip("this file system takes no direct reads") }
        let size = chunk + AEAD.tagLength + ChunkPipeline.readSlack
        let aligned = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: AlignedFileWriter.alignment)
        let cached = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer {
            aligned.deallocate()
            cached.deallocate()
        }
        for index in 0..<reader.chunkCount {
            let start = try XCTUnwrap(reader.readSealedChunk(index, through: direct, into: aligned), "chunk \(index)")
            try reader.readSealedChunk(index, into: cached)
            XCTAssertEqual(memcmp(aligned + start, cached, reader.sealedRange(ofChunk: index).length), 0, "chunk \(index)")
        }
        let object = vault.objectPath(of: content)!
        XCTAssertEqual(truncate(object, off_t(content.objectLength - 10)), 0)
        XCTAssertNil(reader.readSealedChunk(reader.chunkCount - 1, through: direct, into: aligned))
        XCTAssertThrowsError(try vault.keys.withKey(content.keySlot) { key in
            try reader.stream(pipeline: vault.pipeline, key: key, observer: .none) { _, _ in }
        }) { error in
            guard case ContentError.wrongLength = error else { return XCTFail("\(error)") }
        }
    }

    func testTreeChangesSurviveReopenAndCompaction() throws {
        do {
            let vault = try create()
            let docs = try vault.makeFolder(named: "docs", in: .root)
            let old = try vault.makeFolder(named: "old", in: .root)
            let f = try addFile(vault, "x.bin", [9, 8, 7], in: docs.id)
            try vault.move(f.id, to: old.id, name: "y.bin")
            try vault.setSetting("remove-originals", "on")
            XCTAssertThrowsError(try vault.move(docs.id, to: docs.id, name: "docs"), "a folder into itself")
            XCTAssertThrowsError(try vault.makeFolder(named: "docs", in: .root), "name taken")
            try vault.compact()
            try vault.remove(docs.id)
        }
        let vault = try reopen()
        XCTAssertNil(vault.child(named: "docs", in: .root))
        let old = try XCTUnwrap(vault.child(named: "old", in: .root))
        let y = try XCTUnwrap(vault.child(named: "y.bin", in: old.id))
        XCTAssertEqual(try read(vault, y), [9, 8, 7])
        XCTAssertEqual(vault.settings["remove-originals"], "on")
        XCTAssertEqual(vault.itemCount, 2)
    }

    func testPassphraseChangeRewrapsOnly() throws {
        do {
            let vault = try create()
            try addFile(vault, "a", [1, 2, 3])
            try vault.changePassphrase(to: secret("new"), parameters: .insecureTestOnly)
        }
        XCTAssertThrowsError(try reopen("pw")) { XCTAssertEqual($0 as? VaultError, .wrongPassphrase) }
        let vault = try reopen("new")
        XCTAssertEqual(try read(vault, try XCTUnwrap(vault.child(named: "a", in: .root))), [1, 2, 3])
    }

    func testSecondOpenIsLockedOut() throws {
        let vault = try create()
        XCTAssertThrowsError(try reopen()) {
            guard case VaultError.locked = $0 else { return XCTFail("\($0)") }
        }
        withExtendedLifetime(vault) {}
    }

    func testNoVault() throws {
        XCTAssertThrowsError(try reopen()) {
            guard case VaultError.noVault = $0 else { return XCTFail("\($0)") }
        }
    }

    func testAbandonedBatchLeavesNothing() throws {
        let vault = try create()
        let before = try FileManager.default.subpathsOfDirectory(atPath: dir).sorted()
        let batch = ImportBatch.begin(in: vault)
        var given = false
        _ = try batch.addFile(named: "n", in: .root, source: { p, _ in
            if given { return 0 }
            given = true
            p.storeBytes(of: 1, as: UInt8.self)
            return 1
        }, classify: { _ in ("", .other) })
        batch.abandon()
        XCTAssertNil(vault.child(named: "n", in: .root))
        let after = try FileManager.default.subpathsOfDirectory(atPath: dir).filter { !$0.hasSuffix("/") }.sorted()
        XCTAssertEqual(Set(after).subtracting(before).filter { $0.count > 3 }, [], "no object left")
    }
}

extension VaultTests {
    func testAttachmentsPersistAndFollowTheirItem() throws {
        let fileID: Identifier, removedID: Identifier
        do {
            let vault = try create()
            let f = try addFile(vault, "p.png", [1, 2, 3])
            let g = try addFile(vault, "q.png", [4])
            (fileID, removedID) = (f.id, g.id)
            try vault.setAttachments([(f.id, "thumb", [9, 9]), (g.id, "thumb", [8])])
            XCTAssertThrowsError(try vault.setAttachments([(f.id, "big", [UInt8](repeating: 0, count: Vault.maximumAttachment + 1))]))
            try vault.compact()
            try vault.remove(g.id)
        }
        do {
            let vault = try reopen()
            XCTAssertEqual(vault.attachment("thumb", of: fileID), [9, 9])
            XCTAssertNil(vault.attachment("thumb", of: removedID), "the removed item's attachment is not its any more")
            // Kept while a move made elsewhere could show the item again; its object is gone
            // (the only device read the removal), and the next compaction drops it.
            try vault.compact()
        }
        XCTAssertEqual(try reopen().state.attachments.count, 1, "the removed item's attachment is gone")
    }
}

extension VaultTests {
    func testCopyReplacingIsOneTransaction() throws {
        let vault = try create()
        let a = try addFile(vault, "a", [1, 2, 3])
        let b = try addFile(vault, "b", [9])
        let oldObject = vault.objectPath(of: b.content!)!
        let record = try XCTUnwrap(vault.journal).recordCount
        let copy = try vault.copy(a.id, to: .root, name: "b", replacing: b.id)
        XCTAssertEqual(vault.journal?.recordCount, record + 1, "one journal record for the new content and the old one's retirement")
        XCTAssertEqual(copy.name, "b")
        XCTAssertEqual(copy.id, b.id, "the replaced file keeps its identity, so a rename elsewhere survives")
        XCTAssertEqual(try read(vault, try XCTUnwrap(vault.child(named: "b", in: .root))), [1, 2, 3])
        XCTAssertFalse(FileManager.default.fileExists(atPath: oldObject))
        XCTAssertEqual(vault.children(of: .root).map(\.name).sorted(), ["a", "b"])
    }
}

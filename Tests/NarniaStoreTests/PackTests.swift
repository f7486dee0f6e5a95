import NarniaSystem
import Foundation
import XCTest
import NarniaCrypto
@testable import NarniaStore

/// Small files of one batch share a pack object (docs/FORMAT.md, "Packs").
final class PackTests: XCTestCase {
    var dir: String!

    override func setUp() { dir = NSTemporaryDirectory() + "narnia-pack-" + UUID().uuidString }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func secret(_ s: String) throws -> Secret { try Array(s.utf8).withUnsafeBytes { try Secret(copying: $0) } }
    func create() throws -> Vault { try Vault.create(at: dir, passphrase: secret("pw"), parameters: .insecureTestOnly) }
    func reopen() throws -> Vault { try Vault.open(at: dir, passphrase: secret("pw")) }

    /// A source yielding `bytes`, failing with `failure` after `failAfter` bytes when given.
    func source(_ bytes: [UInt8], failAfter: Int? = nil) -> (UnsafeMutableRawPointer, Int) throws -> Int {
        var offset = 0
        return { p, max in
            if let failAfter, offset >= failAfter { throw SystemError(code: EIO, operation: "read", path: "source") }
            let n = min(max, bytes.count - offset, (failAfter ?? Int.max) - offset)
            bytes.withUnsafeBytes { p.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
            offset += n
            return n
        }
    }

    func stage(_ batch: ImportBatch, _ name: String, _ bytes: [UInt8], hinted: Bool = true) throws -> Item {
        try batch.addFile(named: name, in: .root, sizeHint: hinted ? UInt64(bytes.count) : nil, source: source(bytes),
                          classify: { _ in ("application/octet-stream", .other) })
    }

    func read(_ vault: Vault, _ item: Item) throws -> [UInt8] {
        final class Sink: @unchecked Sendable { var bytes: [UInt8] = [] }
        let sink = Sink()
        try vault.readContent(of: item) { p, n in sink.bytes.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n)) }
        return sink.bytes
    }

    func content(_ i: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) } }

    /// Every file in the shard folders: journals, objects and packs.
    func objectFiles() throws -> [String] { try StoreInventory.scan(dir).files.values.compactMap(\.main).sorted() }

    /// Four small files share one pack, read back after compaction and reopening; the big file
    /// and the unhinted one (a stream) get objects of their own.
    func testSmallFilesShareOnePackAndReadBack() throws {
        let sizes = [0, 1, 5000, 70_000]
        var items: [Item] = []
        do {
            let vault = try create()
            let batch = ImportBatch.begin(in: vault)
            items = try sizes.enumerated().map { try stage(batch, "s\($0.offset)", content($0.offset, $0.element)) }
            items.append(try stage(batch, "big", content(9, ContentFormat.chunkSize + 10)))
            items.append(try stage(batch, "stream", content(8, 10), hinted: false))
            try batch.commit()
            let packed = items.prefix(4).map { vault.item($0.id)!.content! }
            XCTAssertEqual(Set(packed.map(\.objectID)).count, 1, "the small files share one object")
            XCTAssertEqual(packed.map(\.offset), [0] + packed.dropLast().map { $0.offset + UInt64(ContentFormat.objectLength(size: $0.size)) })
            XCTAssertTrue(packed.allSatisfy(\.isPacked))
            XCTAssertFalse(vault.item(items[4].id)!.content!.isPacked)
            XCTAssertEqual(try objectFiles().count, 4, "journal, pack, big file, stream")
            try vault.compact()
        }
        let reopened = try reopen()
        for (i, item) in items.enumerated() {
            let expected = i < 4 ? content(i, sizes[i]) : i == 4 ? content(9, ContentFormat.chunkSize + 10) : content(8, 10)
            XCTAssertEqual(try read(reopened, reopened.item(item.id)!), expected, item.name)
        }
        XCTAssertTrue(try reopened.verify().damaged.isEmpty)
    }

    /// A pack of one is an ordinary object: the journal records it as a plain file.
    func testLonePackIsAnOrdinaryObject() throws {
        let vault = try create()
        let batch = ImportBatch.begin(in: vault)
        let item = try stage(batch, "one", content(1, 300))
        try batch.commit()
        XCTAssertFalse(vault.item(item.id)!.content!.isPacked)
    }

    /// The pack stays while any of its items does and goes with the last one, through rm, a
    /// replacing move and reopening.
    func testPackGoesWithItsLastItem() throws {
        var items: [Item] = []
        var pack = ""
        do {
            let vault = try create()
            let batch = ImportBatch.begin(in: vault)
            items = try (0..<3).map { try stage(batch, "f\($0)", content($0, 100 + $0)) }
            try batch.commit()
            pack = vault.objectPath(of: vault.item(items[0].id)!.content!)!
            try vault.remove(items[0].id)
            XCTAssertTrue(FileManager.default.fileExists(atPath: pack))
            try vault.move(items[1].id, to: .root, name: "f2", replacing: items[2].id)
            XCTAssertTrue(FileManager.default.fileExists(atPath: pack), "f1 (now f2) still uses it")
        }
        let reopened = try reopen()
        XCTAssertTrue(FileManager.default.fileExists(atPath: pack), "not an orphan")
        XCTAssertEqual(try read(reopened, reopened.item(items[1].id)!), content(1, 101))
        try reopened.remove(items[1].id)
        XCTAssertFalse(FileManager.default.fileExists(atPath: pack))
    }

    /// A failing source cuts the pack back: the files before it commit whole, and later files
    /// go to a new pack.
    func testFailedAppendKeepsEarlierSegments() throws {
        let vault = try create()
        let batch = ImportBatch.begin(in: vault)
        let first = try stage(batch, "first", content(1, 4000))
        XCTAssertThrowsError(try batch.addFile(named: "broken", in: .root, sizeHint: 9000, source: source(content(2, 9000), failAfter: 3000),
                                               classify: { _ in ("application/octet-stream", .other) }))
        let after = try stage(batch, "after", content(3, 2000))
        try batch.commit()
        let a = vault.item(first.id)!.content!, b = vault.item(after.id)!.content!
        XCTAssertNotEqual(a.objectID, b.objectID)
        XCTAssertEqual(a.objectLength, ContentFormat.objectLength(size: 4000), "cut back to the first segment")
        XCTAssertEqual(try read(vault, vault.item(first.id)!), content(1, 4000))
        XCTAssertEqual(try read(vault, vault.item(after.id)!), content(3, 2000))
        XCTAssertNil(vault.child(named: "broken", in: .root))
    }

    /// Tampering with a pack fails the items it touches, and only them; a longer or shorter
    /// pack fails them all.
    func testTamperedPackFailsTheRightItems() throws {
        let vault = try create()
        let batch = ImportBatch.begin(in: vault)
        let items = try (0..<3).map { try stage(batch, "f\($0)", content($0, 3000)) }
        try batch.commit()
        let c = items.map { vault.item($0.id)!.content! }
        let path = vault.objectPath(of: c[0])!
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[Int(c[1].offset) + 100] ^= 1
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try vault.verify().damaged.map(\.path), ["/f1"])

        // Swapping two segments: each now has the other's key.
        bytes[Int(c[1].offset) + 100] ^= 1
        let length = Int(ContentFormat.objectLength(size: 3000))
        let s0 = Array(bytes[0..<length]), s2 = Array(bytes[Int(c[2].offset)..<Int(c[2].offset) + length])
        bytes.replaceSubrange(0..<length, with: s2)
        bytes.replaceSubrange(Int(c[2].offset)..<Int(c[2].offset) + length, with: s0)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try vault.verify().damaged.map(\.path), ["/f0", "/f2"])

        try Data(bytes + [0]).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try vault.verify().damaged.count, 3, "an extended pack fails every item")
    }

    /// An abandoned batch leaves no pack behind.
    func testAbandonRemovesThePack() throws {
        let vault = try create()
        let before = try objectFiles()
        let batch = ImportBatch.begin(in: vault)
        _ = try stage(batch, "a", content(1, 10))
        _ = try stage(batch, "b", content(2, 10))
        XCTAssertEqual(try objectFiles().count, before.count + 1)
        batch.abandon()
        XCTAssertEqual(try objectFiles(), before)
    }

    /// Removing most of a pack's items rewrites the rest into a new pack (same items, new keys)
    /// and deletes the old one; removing a little leaves it alone.
    func testSparsePackIsRewritten() throws {
        var items: [Item] = []
        var oldPack = ""
        do {
            let vault = try create()
            let batch = ImportBatch.begin(in: vault)
            items = try (0..<10).map { try stage(batch, "f\($0)", content($0, 200_000)) }
            try batch.commit()
            let first = vault.item(items[0].id)!
            oldPack = vault.objectPath(of: first.content!)!

            for item in items[0..<4] { try vault.remove(item.id) }
            XCTAssertEqual(vault.item(items[4].id)!.content!.objectID, first.content!.objectID, "4 of 10 dead: kept")
            XCTAssertTrue(FileManager.default.fileExists(atPath: oldPack))
        }
        do {
            let vault = try reopen()
            try vault.remove(items[4].id)
            XCTAssertTrue(FileManager.default.fileExists(atPath: oldPack), "half dead: kept")
            let oldID = vault.item(items[6].id)!.content!.objectID
            let stampsBefore = items[6...].map { vault.state.items[$0.id]!.contentStamp }
            try vault.remove(items[5].id)   // 6 of 10 dead, over 1 MiB, after a reopen: rewritten
            XCTAssertFalse(FileManager.default.fileExists(atPath: oldPack))
            let survivors = items[6...].map { vault.item($0.id)! }
            XCTAssertEqual(Set(survivors.map { $0.content!.objectID }).count, 1)
            // Housekeeping never wins over a change made elsewhere: the stamps stay, and the new
            // pack wins the tie with the old by ordering after it.
            XCTAssertEqual(items[6...].map { vault.state.items[$0.id]!.contentStamp }, stampsBefore)
            XCTAssertGreaterThan(survivors[0].content!.objectID.hex, oldID.hex)
            XCTAssertEqual(survivors.map(\.name), ["f6", "f7", "f8", "f9"])
            XCTAssertEqual(survivors.map(\.modified), items[6...].map(\.modified))
            XCTAssertTrue(survivors.allSatisfy { $0.content!.mime == "application/octet-stream" })
            XCTAssertEqual(try objectFiles().count, 2, "journal and the new pack")
        }
        let vault = try reopen()
        for (k, item) in items[6...].enumerated() {
            XCTAssertEqual(try read(vault, vault.item(item.id)!), content(6 + k, 200_000))
        }
        XCTAssertTrue(try vault.verify().damaged.isEmpty)
    }
}

/// New shard directories of an import are made durable by its commit's `syncfs`, not one
/// `fsync` of the store each (docs/FORMAT.md, "Durability and ordering").
final class ShardDurabilityTests: XCTestCase {
    var dir: String!

    override func setUp() { dir = NSTemporaryDirectory() + "narnia-shards-" + UUID().uuidString }
    override func tearDown() { try? FileManager.default.removeItem(atPath: dir) }

    func create() throws -> Vault {
        let pw = try Array("pw".utf8).withUnsafeBytes { try Secret(copying: $0) }
        return try Vault.create(at: dir, passphrase: pw, parameters: .insecureTestOnly)
    }

    /// Stages 20 files with objects of their own (20 random shards, most of them new).
    func stageObjects(_ batch: ImportBatch) throws -> [Item] {
        let bytes = [UInt8](repeating: 7, count: ContentFormat.chunkSize + 1)
        return try (0..<20).map { i in
            var offset = 0
            return try batch.addFile(named: "f\(i)", in: .root, sizeHint: UInt64(bytes.count), source: { p, max in
                let n = min(max, bytes.count - offset)
                bytes.withUnsafeBytes { p.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
                offset += n
                return n
            }, classify: { _ in ("application/octet-stream", .other) })
        }
    }

    func testTheCommitsSyncMakesTheNewShardsDurable() throws {
        let vault = try create()
        let batch = ImportBatch.begin(in: vault)
        let items = try stageObjects(batch)
        XCTAssertFalse(vault.layout.shardsAwaitingSync.isEmpty, "new shards wait for the commit")
        try batch.commit()
        XCTAssertEqual(vault.layout.shardsAwaitingSync, [])
        for item in items { XCTAssertTrue(FileSystem.isDirectory(vault.layout.shardDirectory(for: item.content!.objectID))) }
    }

    func testAbandonMakesTheNewShardsDurable() throws {
        let vault = try create()
        let batch = ImportBatch.begin(in: vault)
        _ = try stageObjects(batch)
        batch.abandon()
        XCTAssertEqual(vault.layout.shardsAwaitingSync, [], "a journal may go into them later")
    }

    func testADurableUseOfAnUnsyncedShardSyncsIt() throws {
        let vault = try create()
        var id = Identifier.random()
        while FileSystem.isDirectory(vault.layout.shardDirectory(for: id)) { id = .random() }
        try vault.layout.ensureShard(for: id, durable: false)
        let shard = vault.layout.shardDirectory(for: id)
        XCTAssertTrue(FileSystem.isDirectory(shard))
        XCTAssertEqual(vault.layout.shardsAwaitingSync, [shard])
        try vault.layout.ensureShard(for: id)
        XCTAssertEqual(vault.layout.shardsAwaitingSync, [])
    }
}

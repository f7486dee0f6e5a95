import Foundation
import XCTest
import NarniaCrypto
@testable import NarniaStore

/// Opens the committed packed vector store (Vectors/packed-store, made by
/// Vectors/make-vectors.sh): three small files imported together share one pack, recorded with
/// journal operation 8. Every build must read it; damage to one segment fails only its item.
final class PackedVectorTests: XCTestCase {
    static let notes: [String: [UInt8]] = [
        "a.txt": Array("first note\n".utf8),
        "b.txt": Array("second note, a little longer\n".utf8),
        "c.txt": [],
    ]

    var work: String!

    override func setUpWithError() throws {
        work = try StoreVectorTests.copyOfVectorStore("packed-store")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: work)
    }

    func open() throws -> Vault {
        try Vault.open(at: work, passphrase: StoreVectorTests.secret(StoreVectorTests.passphrase))
    }

    func notes(_ vault: Vault) throws -> [String: Item] {
        let folder = try XCTUnwrap(vault.child(named: "notes", in: .root))
        return Dictionary(uniqueKeysWithValues: vault.children(of: folder.id).map { ($0.name, $0) })
    }

    func testReadsThePackedVectorStore() throws {
        let vault = try open()
        let items = try notes(vault)
        XCTAssertEqual(Set(items.keys), Set(Self.notes.keys))
        let contents = items.values.map { $0.content! }
        XCTAssertEqual(Set(contents.map(\.objectID)).count, 1, "one pack")
        XCTAssertTrue(contents.allSatisfy(\.isPacked))
        XCTAssertEqual(contents.map(\.offset).sorted().first, 0)
        for (name, item) in items {
            final class Sink: @unchecked Sendable { var bytes: [UInt8] = [] }
            let sink = Sink()
            try vault.readContent(of: item) { p, n in sink.bytes.append(contentsOf: UnsafeRawBufferPointer(start: p, count: n)) }
            XCTAssertEqual(sink.bytes, Self.notes[name], name)
        }
        XCTAssertTrue(try vault.verify().damaged.isEmpty)
    }

    func testDamageToOneSegmentFailsOnlyItsItem() throws {
        let b: ContentInfo
        let path: String
        do {
            let vault = try open()
            b = try XCTUnwrap(notes(vault)["b.txt"]?.content)
            path = vault.objectPath(of: b)!
        }
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[Int(b.offset) + AEAD.nonceLength + 3] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        XCTAssertEqual(try open().verify().damaged.map(\.path), ["/notes/b.txt"])
    }
}

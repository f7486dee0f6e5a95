import Foundation
import XCTest
import NarniaCrypto
@testable import NarniaStore

/// The pieces that keep an open of a large store short: the dense tables of the merged state
/// and the view, the journal check on every core, and the shard listing beside the key
/// derivation.
final class OpenScaleTests: XCTestCase {
    /// Random inserts, in-place changes and removals give the same contents as a dictionary.
    func testDenseTableKeepsWhatADictionaryKeeps() {
        var table = DenseTable<Int>()
        var model: [Identifier: Int] = [:]
        var generator = SystemRandomNumberGenerator()
        let ids = (0..<300).map { _ in Identifier.random() }
        for step in 0..<20_000 {
            let id = ids.randomElement(using: &generator)!
            switch Int.random(in: 0..<4, using: &generator) {
            case 0:
                table[id] = step
                model[id] = step
            case 1:
                table[id, default: 0] += 1
                model[id, default: 0] += 1
            case 2:
                XCTAssertEqual(table.removeValue(forKey: id), model.removeValue(forKey: id))
            default:
                table[id] = nil
                model[id] = nil
            }
            XCTAssertEqual(table[id], model[id])
            XCTAssertEqual(table.contains(id), model[id] != nil)
        }
        XCTAssertEqual(table.count, model.count)
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: table.map { ($0.key, $0.value) }), model)
        XCTAssertEqual(Set(table.keys), Set(model.keys))
        XCTAssertEqual(table.values.sorted(), model.values.sorted())
    }

    /// The check on every core finds exactly the journals, in a long list (split between
    /// threads) and a short one.
    func testJournalsAmongManyFilesAreTheJournals() throws {
        let tags = NameTags(key: try Secret.random(count: 32), device: .random())
        for (journals, objects) in [(3, 50), (700, 9_300)] {
            let journalIDs = (0..<journals).map { _ in tags.newJournal() }
            let others = (0..<objects).map { k in k % 2 == 0 ? tags.newObject() : Identifier.random() }
            let all = (journalIDs + others).shuffled()
            let found = tags.journals(among: all)
            XCTAssertEqual(found, all.filter { tags.isJournal($0) }, "in order, as the single check says")
            XCTAssertEqual(Set(found), Set(journalIDs))
        }
        XCTAssertEqual(tags.journals(among: []), [])
    }

    /// With no key file at the top level, opening waits for the shard listing before it says
    /// what is wrong: a store of journals and objects without its key file is damaged, not absent.
    /// A repack's pack identifiers: this device's objects, each after the floor, down to the
    /// highest floor there is.
    func testObjectIdentifiersAfterAFloorOrderAfterIt() throws {
        let tags = NameTags(key: try Secret.random(count: 32), device: .random())
        var floor = tags.newObject()
        for _ in 0..<25 {
            let next = try XCTUnwrap(tags.newObject(after: floor))
            XCTAssertGreaterThan(next.hex, floor.hex)
            XCTAssertTrue(tags.isOwnObject(next))
            floor = next
        }
        let top = Identifier([UInt8](repeating: 0xff, count: 10) + [UInt8](repeating: 0, count: 6))
        XCTAssertNil(tags.newObject(after: top))
    }

    func testAStoreWithoutItsKeyFileIsDamagedNotAbsent() throws {
        let dir = NSTemporaryDirectory() + "narnia-open-scale-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let pass = try Array("pw".utf8).withUnsafeBytes { try Secret(copying: $0) }
        do {
            let vault = try Vault.create(at: dir, passphrase: pass, parameters: .insecureTestOnly)
            _ = try vault.makeFolder(named: "kept", in: .root)
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) where name.count == 32 {
            try FileManager.default.removeItem(atPath: dir + "/" + name)
        }
        XCTAssertThrowsError(try Vault.open(at: dir, passphrase: pass)) {
            guard case VaultError.damagedKeyFile(let why) = $0 else { return XCTFail("\($0)") }
            XCTAssertTrue(why.hasPrefix("there is none: it has not arrived yet"), why)
        }
    }
}

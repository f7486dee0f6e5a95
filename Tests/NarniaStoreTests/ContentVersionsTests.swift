import XCTest
@testable import NarniaStore

/// Concurrent contents (docs/FORMAT.md, "Merging", rule 7) on the merged state alone: the
/// copies depend on the records present, not on the order they are applied in.
final class ContentVersionsTests: XCTestCase {
    let a = Identifier.random(), b = Identifier.random(), me = Identifier.random()
    let file = Identifier.random()
    let original = Identifier.random(), fromA = Identifier.random(), fromB = Identifier.random()

    func stamp(_ wall: Int64, _ device: Identifier) -> Stamp { Stamp(wall: wall, counter: 0, device: device) }

    func content(_ object: Identifier, size: UInt64) -> ContentInfo {
        ContentInfo(objectID: object, keySlot: -1, size: size, mime: "text/plain", kind: .document)
    }

    /// One operation as a journal of `author` gives it, under `stamp`.
    typealias Step = (op: NarniaStore.Operation, stamp: Stamp, author: Identifier)

    func create() -> Step {
        (.createFile(id: file, place: Place(parent: .root, name: "f.txt"), created: 1, modified: 1,
                     content: content(original, size: 1)), stamp(1, a), a)
    }

    func change(_ object: Identifier, by device: Identifier, at wall: Int64, legacy: Bool = false) -> Step {
        let lineage = legacy ? ContentLineage(version: object, replaces: nil, isLegacy: true)
                             : ContentLineage(version: object, replaces: original)
        return (.setContent(id: file, modified: wall, content: content(object, size: UInt64(wall)), lineage: lineage),
                stamp(wall, device), device)
    }

    /// The files shown (name, size), in every order of `steps`.
    func shown(_ steps: [Step]) throws -> Set<[String]> {
        var results = Set<[String]>()
        for order in permutations(steps) {
            var state = MergeState(keys: try KeyTable(), device: me)
            for step in order {
                try state.apply(step.op, stamp: step.stamp, key: [UInt8](repeating: 7, count: 32)[...], author: step.author)
            }
            try state.addConflictCopies()
            let view = TreeView.build(state) { state.recordedName(of: $0) }
            results.insert(view.items.values.map { "\($0.name) \($0.content!.size)" }.sorted())
        }
        return results
    }

    func permutations(_ steps: [Step]) -> [[Step]] {
        guard steps.count > 1 else { return [steps] }
        return steps.indices.flatMap { i in
            permutations(Array(steps[..<i] + steps[(i + 1)...])).map { [steps[i]] + $0 }
        }
    }

    func testTwoChangesOfOneVersionAreBothShownInEveryOrder() throws {
        let results = try shown([create(), change(fromA, by: a, at: 10), change(fromB, by: b, at: 20)])
        let copy = ItemName.conflictCopy("f.txt", date: 10, device: String(a.hex.prefix(8)))
        XCTAssertEqual(results, [[copy + " 10", "f.txt 20"]])
    }

    func testAChangeMadeKnowingAnotherReplacesIt() throws {
        var later = change(fromB, by: b, at: 20)
        if case .setContent(let id, let modified, let content, _) = later.op {
            later.op = .setContent(id: id, modified: modified, content: content, lineage: ContentLineage(version: fromB, replaces: fromA))
        }
        XCTAssertEqual(try shown([create(), change(fromA, by: a, at: 10), later]), [["f.txt 20"]])
    }

    func testARemovalKeepsTheChangeItsDeviceDidNotSee() throws {
        let removal: Step = (.remove([file, MergeState.conflictCopyIdentifier(of: file, version: original)]), stamp(30, b), b)
        let copy = ItemName.conflictCopy("f.txt", date: 10, device: String(a.hex.prefix(8)))
        XCTAssertEqual(try shown([create(), change(fromA, by: a, at: 10), removal]), [[copy + " 10"]])
        let seen: Step = (.remove([file, MergeState.conflictCopyIdentifier(of: file, version: fromA)]), stamp(30, b), b)
        XCTAssertEqual(try shown([create(), change(fromA, by: a, at: 10), seen]), [[]])
    }

    func testLegacyChangesKeepTheLatestOnly() throws {
        let results = try shown([create(), change(fromA, by: a, at: 10, legacy: true), change(fromB, by: b, at: 20, legacy: true)])
        XCTAssertEqual(results, [["f.txt 20"]])
    }
}

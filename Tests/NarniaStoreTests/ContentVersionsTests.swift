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

    /// A compacted repack: the snapshot creates the file with the repack's pack as its content
    /// and gives the same value again as a `set content` naming the version it keeps. A change
    /// made after reading it replaces that version (no copy), in every order.
    func testAChangeAfterACompactedRepackReplacesTheVersionTheRepackKept() throws {
        let pack = Identifier.random(), edit = Identifier.random()
        let created: Step = (.createFile(id: file, place: Place(parent: .root, name: "f.txt"), created: 1, modified: 1,
                                         content: content(pack, size: 1)), stamp(1, a), a)
        let repacked: Step = (.setContent(id: file, modified: 1, content: content(pack, size: 1),
                                          lineage: ContentLineage(version: original, replaces: nil)), stamp(1, a), a)
        var state = MergeState(keys: try KeyTable(), device: me)
        for step in [created, repacked] {
            try state.apply(step.op, stamp: step.stamp, key: [UInt8](repeating: 7, count: 32)[...], author: step.author)
        }
        XCTAssertEqual(state.items[file]?.contentLineage.version, original)
        let later: Step = (.setContent(id: file, modified: 20, content: content(edit, size: 20),
                                       lineage: ContentLineage(version: edit, replaces: original)), stamp(20, a), a)
        XCTAssertEqual(try shown([created, repacked, later]), [["f.txt 20"]])
    }

    func testAChangeMadeKnowingAnotherReplacesIt() throws {
        var later = change(fromB, by: b, at: 20)
        if case .setContent(let id, let modified, let content, _) = later.op {
            later.op = .setContent(id: id, modified: modified, content: content, lineage: ContentLineage(version: fromB, replaces: fromA))
        }
        XCTAssertEqual(try shown([create(), change(fromA, by: a, at: 10), later]), [["f.txt 20"]])
    }

    func testARemovalKeepsTheChangeItsDeviceDidNotSee() throws {
        let removal: Step = (.remove([file, MergeState.conflictCopyIdentifier(of: file, version: original)].map(RemovedItem.everyPlace)), stamp(30, b), b)
        let copy = ItemName.conflictCopy("f.txt", date: 10, device: String(a.hex.prefix(8)))
        XCTAssertEqual(try shown([create(), change(fromA, by: a, at: 10), removal]), [[copy + " 10"]])
        let seen: Step = (.remove([file, MergeState.conflictCopyIdentifier(of: file, version: fromA)].map(RemovedItem.everyPlace)), stamp(30, b), b)
        XCTAssertEqual(try shown([create(), change(fromA, by: a, at: 10), seen]), [[]])
    }

    /// `cp -f` onto a conflict copy on two devices at once: the copy gets a copy of its own,
    /// however the dictionary of versions happens to be ordered.
    func testACopyChangedOnTwoDevicesAtOnceGetsACopyOfItsOwn() throws {
        let copy = MergeState.conflictCopyIdentifier(of: file, version: fromA)
        let editA = Identifier.random(), editB = Identifier.random()
        func edit(_ object: Identifier, by device: Identifier, at wall: Int64) -> Step {
            (.setContent(id: copy, modified: wall, content: content(object, size: UInt64(wall)),
                         lineage: ContentLineage(version: object, replaces: fromA)), stamp(wall, device), device)
        }
        for _ in 0..<20 {
            // Other files' versions around, so that the table's order varies.
            var steps = [create(), change(fromA, by: a, at: 10), change(fromB, by: b, at: 20),
                         edit(editA, by: a, at: 30), edit(editB, by: b, at: 40)]
            for _ in 0..<3 {
                let other = Identifier.random()
                steps.append((.createFile(id: other, place: Place(parent: .root, name: other.hex), created: 1, modified: 1,
                                          content: content(Identifier.random(), size: 1)), stamp(1, a), a))
                steps.append((.setContent(id: other, modified: 2, content: content(Identifier.random(), size: 2),
                                          lineage: ContentLineage(version: Identifier.random(), replaces: nil)), stamp(2, a), a))
            }
            var state = MergeState(keys: try KeyTable(), device: me)
            for step in steps.shuffled() {
                try state.apply(step.op, stamp: step.stamp, key: [UInt8](repeating: 7, count: 32)[...], author: step.author)
            }
            try state.addConflictCopies()
            let sizes = TreeView.build(state) { state.recordedName(of: $0) }.items.values.map { $0.content!.size }
            XCTAssertEqual(Set(sizes).intersection([20, 30, 40]), [20, 30, 40])
        }
    }

    func testAMarkedNameKeepsWithin255Bytes() {
        let long = "v2." + String(repeating: "b", count: 248)
        let marked = ItemName.conflictCopy(long, date: 0, device: "laptop")
        XCTAssertLessThanOrEqual(marked.utf8.count, 255)
        XCTAssertTrue(marked.hasPrefix("v2 (conflict 1970-01-01 laptop).bbb"), marked)
        XCTAssertLessThanOrEqual(ItemName.numbered(long, 2).utf8.count, 255)
        XCTAssertEqual(ItemName.numbered("photo.jpg", 2), "photo (2).jpg")
        let longStem = String(repeating: "s", count: 250) + ".jpg"
        XCTAssertEqual(ItemName.conflictCopy(longStem, date: 0, device: "d").utf8.count, 255)
        XCTAssertTrue(ItemName.conflictCopy(longStem, date: 0, device: "d").hasSuffix(" (conflict 1970-01-01 d).jpg"))
    }

    func testADeviceNameNeverPutsASlashInAName() throws {
        let marked = ItemName.conflictCopy("n.txt", date: 0, device: "../x/y\0z")
        XCTAssertEqual(marked, "n (conflict 1970-01-01 .._x_y_z).txt")
        XCTAssertEqual(try ItemName.validated(marked), marked)
    }

    func testLegacyChangesKeepTheLatestOnly() throws {
        let results = try shown([create(), change(fromA, by: a, at: 10, legacy: true), change(fromB, by: b, at: 20, legacy: true)])
        XCTAssertEqual(results, [["f.txt 20"]])
    }
}

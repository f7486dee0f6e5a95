import Foundation
import XCTest
import NarniaCrypto
@testable import NarniaStore

/// `passwd --rotate` (docs/FORMAT.md, "Rotating the master key"), on the devices of
/// `MergeTests`: what an old key file opens afterwards, and what other devices do when they
/// find a rotation made elsewhere.
extension MergeTests {
    func open(_ dir: String, _ passphrase: String, another: String? = nil) throws -> Vault {
        try Vault.open(at: dir, passphrase: Self.secret(passphrase),
                       anotherPassphrase: another.map { p in { try? Self.secret(p) } })
    }

    /// The key files of a store, by name (not the inbox public key file, of 72 bytes).
    func keyFiles(_ dir: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) where name.count == 32 {
            let data = FileManager.default.contents(atPath: dir + "/" + name)
            if data?.count != InboxPublicKeyFile.length { files[name] = data }
        }
        return files
    }

    func assertOpensNothing(_ dir: String, _ passphrase: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try open(dir, passphrase), file: file, line: line) { error in
            guard case MetadataError.unknownMasterKey = error else {
                return XCTFail("expected unknownMasterKey, got \(error)", file: file, line: line)
            }
        }
    }

    func testKeyFileHoldingSeveralMasterKeysRoundTrips() throws {
        var masters = MasterKeys([try Secret.random(count: 32)])
        let first = masters.current
        try masters.rotate(to: try Secret.random(count: 32))
        try masters.rotate(to: try Secret.random(count: 32))
        let kek = try Secret.random(count: 32)
        let id = Identifier.random()
        let bytes = try KeyFile.seal(masters: masters, kek: kek, salt: randomBytes(16), parameters: .insecureTestOnly, id: id)
        XCTAssertEqual(bytes.count, 67 + 32 * 3)
        let contents = try KeyFile.open(bytes, kek: kek, id: id)
        XCTAssertTrue(contents.masters.holds(all: masters))
        XCTAssertTrue(contents.masters.namesKey.isEqual(to: first))
        XCTAssertThrowsError(try KeyFile.open(bytes, kek: kek, id: .random()))
    }

    /// A key file holds at most `MasterKeys.maximumCount` master keys: the rotation after the
    /// last is refused, saying what gives a new master key then (review FM-7: it said nothing).
    func testTheRotationPastTheLastAKeyFileHoldsSaysWhatToDo() throws {
        var masters = MasterKeys([try Secret.random(count: 32)])
        for _ in 1..<MasterKeys.maximumCount { try masters.rotate(to: try Secret.random(count: 32)) }
        XCTAssertEqual(masters.all.count, MasterKeys.maximumCount)
        XCTAssertThrowsError(try masters.rotate(to: try Secret.random(count: 32))) { error in
            XCTAssertTrue("\(error)".contains("make a new vault and move the items into it"), "\(error)")
        }
    }

    /// After a rotation, the old key file with the old passphrase (kept in a backup) opens
    /// nothing: every journal the store holds is sealed under the new key, and a backup of
    /// the old journals shows only what existed before.
    func testOldKeyFileOpensNothingWrittenAfterARotation() throws {
        let a = try devices(["a"])[0]
        do { _ = try importFile(try open(a), "before.txt", [1]) }
        let backup = root + "/backup"
        try FileManager.default.copyItem(atPath: a, toPath: backup)
        let oldKeyFiles = try keyFiles(a)
        do {
            let v = try open(a)
            try v.rotateMasterKey(passphrase: Self.secret("new"), parameters: .insecureTestOnly)
            _ = try importFile(v, "after.txt", [2])
            XCTAssertTrue(v.journals.values.filter { v.state.retired[RetiredFile(kind: .journal, id: $0.id)] == nil }
                .allSatisfy(\.underCurrentMaster))
        }
        XCTAssertEqual(try keyFiles(a).count, 1, "the old key file is deleted: no other device waits for it")
        XCTAssertEqual(try keyFiles(a).values.first?.count, 67 + 32 * 2)
        XCTAssertThrowsError(try open(a, "pw")) { XCTAssertEqual("\($0)", "\(VaultError.wrongPassphrase)") }
        do {
            let v = try open(a, "new")
            XCTAssertEqual(tree(v), ["/after.txt other 1", "/before.txt other 1"])
            XCTAssertEqual(try read(v, "before.txt"), [1])
            XCTAssertTrue(try v.verify().isWhole)
        }
        // The old key file brought back next to the new one: the old passphrase opens nothing.
        for (name, bytes) in oldKeyFiles { try bytes.write(to: URL(fileURLWithPath: a + "/" + name)) }
        assertOpensNothing(a, "pw")
        // Everything the store holds now, added to a backup of the old store: the old key
        // reads none of the new journals.
        try deliver(a, backup)
        assertOpensNothing(backup, "pw")
        XCTAssertEqual(tree(try open(a, "new")), ["/after.txt other 1", "/before.txt other 1"])
    }

    /// Another device finds the rotation: the old passphrase opens nothing there either; the
    /// new one reads everything, its own records written before it knew included, and it
    /// writes them anew under the new key. Once every device has heard, no journal under the
    /// old key remains.
    func testAnotherDeviceFollowsARotation() throws {
        let d = try devices(["a", "b"]) { v in _ = try self.importFile(v, "shared.txt", [0]) }
        let (a, b) = (d[0], d[1])
        do {
            let va = try open(a)
            try va.rotateMasterKey(passphrase: Self.secret("new"), parameters: .insecureTestOnly)
            _ = try importFile(va, "from-a.txt", [1])
        }
        do { _ = try importFile(try open(b), "from-b.txt", [2, 2]) }   // before it knows
        try syncAll([a, b])
        assertOpensNothing(b, "pw")
        for _ in 0..<3 {
            for dir in [a, b] {
                let v = try open(dir, "new")
                XCTAssertEqual(tree(v), ["/from-a.txt other 1", "/from-b.txt other 2", "/shared.txt other 1"])
                XCTAssertTrue(v.journals.values.filter { $0.device == v.device && !$0.underCurrentMaster }
                    .allSatisfy { v.state.retired[RetiredFile(kind: .journal, id: $0.id)] != nil })
            }
            try syncAll([a, b])
        }
        for dir in [a, b] {
            let v = try open(dir, "new")
            XCTAssertTrue(v.journals.values.allSatisfy(\.underCurrentMaster), "journals under the old key are deleted once both devices heard")
            XCTAssertEqual(try keyFiles(dir).count, 1)
            XCTAssertTrue(try v.verify().isWhole)
        }
    }

    /// Review CP-4: a device that ran `inbox-key --rotate` before it heard of a rotation left
    /// droppers a pair whose secret half is in records an old key file reads, for good; CQ-6:
    /// every other device kept it in force too. The first device to open with the new key makes
    /// a new pair.
    func testAnInboxKeyMadeUnderAReplacedMasterKeyIsReplacedByTheFirstDeviceWithTheNewKey() throws {
        for first in [0, 1] {
            let d = try devices(["a\(first)", "b\(first)"]) { v in _ = try self.importFile(v, "shared.txt", [0]) }
            let (a, b) = (d[0], d[1])
            _ = try importFile(try open(b), "from-b.txt", [1])
            try syncAll([a, b])
            do { try open(a).rotateMasterKey(passphrase: Self.secret("new"), parameters: .insecureTestOnly) }
            let madeBefore = try open(b).rotateInboxKey().publicKey   // b has not heard
            try syncAll([a, b])
            let opener = try open(d[first], "new")
            XCTAssertNotEqual(try opener.inboxKey().publicKey, madeBefore)
            XCTAssertTrue(opener.warnings.contains { $0.contains("the inbox key in force was recorded under the master key 'passwd --rotate' replaced (a device made it before it heard of the rotation)") }, "\(opener.warnings)")
            try syncAll([a, b])
            let other = try open(d[1 - first], "new")
            XCTAssertEqual(try other.inboxKey().publicKey, try opener.inboxKey().publicKey)
            XCTAssertFalse(other.warnings.contains { $0.contains("inbox key in force") }, "\(other.warnings)")
        }
    }

    /// Review CM-1: an inbox public key file made with an old key file (its authenticator is
    /// keyed by the names subkey, which every key file holds) and named by no key pair of the
    /// vault was taken as the vault's, and drops were sealed to whoever planted it.
    func testAnInboxPublicFileAnOldKeyFileMadeIsDeletedAfterARotation() throws {
        let d = try devices(["a"])
        let a = d[0]
        let kept = root + "/kept"
        try FileManager.default.copyItem(atPath: a, toPath: kept)
        do { try open(a).rotateMasterKey(passphrase: Self.secret("new"), parameters: .insecureTestOnly) }
        let before = Set(try FileManager.default.contentsOfDirectory(atPath: kept))
        do { _ = try open(kept).rotateInboxKey() }
        let planted = try FileManager.default.contentsOfDirectory(atPath: kept).filter {
            !before.contains($0) && FileManager.default.contents(atPath: kept + "/" + $0)?.count == InboxPublicKeyFile.length
        }
        XCTAssertEqual(planted.count, 1)
        try FileManager.default.copyItem(atPath: kept + "/" + planted[0], toPath: a + "/" + planted[0])
        let va = try open(a, "new")
        XCTAssertTrue(va.warnings.contains { $0.contains("is named by no inbox key pair of this vault") }, "\(va.warnings)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: a + "/" + planted[0]))
    }

    /// Rotations on two devices at once with one new passphrase: opening reads both (each key
    /// file holds its own new key) and writes one key file holding every key.
    func testConcurrentRotationsWithOnePassphraseMerge() throws {
        let d = try devices(["a", "b"])
        let (a, b) = (d[0], d[1])
        for (dir, name) in [(a, "a.txt"), (b, "b.txt")] {
            let v = try open(dir)
            try v.rotateMasterKey(passphrase: Self.secret("new"), parameters: .insecureTestOnly)
            _ = try importFile(v, name, [3])
        }
        try syncAll([a, b])
        do {
            let va = try open(a, "new")
            XCTAssertEqual(tree(va), ["/a.txt other 1", "/b.txt other 1"])
            XCTAssertTrue(va.warnings.contains { $0.contains("one key file now holds both keys") }, "\(va.warnings)")
        }
        try syncAll([a, b])
        for dir in [b, a, b] {
            let v = try open(dir, "new")
            XCTAssertEqual(tree(v), ["/a.txt other 1", "/b.txt other 1"])
            XCTAssertFalse(v.warnings.contains { $0.contains("rotated") }, "\(v.warnings)")
        }
    }

    /// Rotations on two devices at once with different passphrases: either alone opens
    /// nothing; given both, the vault opens, and a `passwd` then sets one passphrase for all.
    func testConcurrentRotationsWithTwoPassphrasesNeedBoth() throws {
        let d = try devices(["a", "b"])
        let (a, b) = (d[0], d[1])
        for (dir, passphrase) in [(a, "pa"), (b, "pb")] {
            let v = try open(dir)
            try v.rotateMasterKey(passphrase: Self.secret(passphrase), parameters: .insecureTestOnly)
            _ = try importFile(v, passphrase + ".txt", [4])
        }
        try syncAll([a, b])
        // Without a way to ask for the other passphrase (a script), the refusal says which
        // situation this is, not "open with the passphrase chosen then" (review AH).
        for (dir, passphrase) in [(a, "pa"), (b, "pb")] {
            XCTAssertThrowsError(try open(dir, passphrase)) { error in
                guard case MetadataError.needsAnotherPassphrase = error else { return XCTFail("got \(error)") }
            }
        }
        do {
            let va = try open(a, "pa", another: "pb")
            XCTAssertEqual(tree(va), ["/pa.txt other 1", "/pb.txt other 1"])
            XCTAssertTrue(va.warnings.contains { $0.contains("different passphrases") }, "\(va.warnings)")
            try va.changePassphrase(to: Self.secret("one"), parameters: .insecureTestOnly)
        }
        try syncAll([a, b])
        for dir in [b, a] { XCTAssertEqual(tree(try open(dir, "one")), ["/pa.txt other 1", "/pb.txt other 1"]) }
    }

    /// Review EJ-1: two rotations at once from one key, one of them followed by another on its
    /// device: the longer key file holds more keys, but not the other rotation's. Neither
    /// passphrase opened the vault, even on a terminal: the longer key file was taken for a
    /// later rotation of the same key, which would hold them all. Each passphrase now needs the
    /// other, as for two rotations at once, and both open everything.
    func testConcurrentRotationsOneRotatedAgainNeedBoth() throws {
        let d = try devices(["a", "b"])
        let (a, b) = (d[0], d[1])
        do {
            let v = try open(a)
            try v.rotateMasterKey(passphrase: Self.secret("pa"), parameters: .insecureTestOnly)
            _ = try importFile(v, "pa.txt", [4])
        }
        try open(b).rotateMasterKey(passphrase: Self.secret("pb1"), parameters: .insecureTestOnly)
        do {
            let v = try open(b, "pb1")
            try v.rotateMasterKey(passphrase: Self.secret("pb2"), parameters: .insecureTestOnly)
            _ = try importFile(v, "pb.txt", [5])
        }
        try syncAll([a, b])
        for (dir, passphrase) in [(a, "pa"), (a, "pb2"), (b, "pa"), (b, "pb2")] {
            var asked = false
            XCTAssertThrowsError(try Vault.open(at: dir, passphrase: Self.secret(passphrase), anotherPassphrase: { asked = true; return nil })) { error in
                guard case MetadataError.unknownMasterKey = error else { return XCTFail("got \(error)") }
            }
            XCTAssertTrue(asked, "\(passphrase) was not asked for the other passphrase")
            XCTAssertThrowsError(try open(dir, passphrase)) { error in
                guard case MetadataError.needsAnotherPassphrase = error else { return XCTFail("got \(error)") }
            }
        }
        for (dir, passphrase, other) in [(a, "pa", "pb2"), (b, "pb2", "pa")] {
            XCTAssertEqual(tree(try open(dir, passphrase, another: other)), ["/pa.txt other 1", "/pb.txt other 1"])
        }
    }

    /// Review AS F1: two rotations one after the other on one device of a store another
    /// device knows (so the first's key file stays until that device hears): the passphrase
    /// between them opens the first's key file, whose keys the second's holds too. It was
    /// refused as two rotations at once, and a terminal asked for "the other passphrase"; the
    /// longer key file tells a later rotation, whose passphrase opens the vault.
    func testAPassphraseBetweenTwoRotationsIsToldOfTheLaterOne() throws {
        let d = try devices(["a", "b"])
        let a = d[0]
        _ = try importFile(try open(d[1]), "b.txt", [1])
        try syncAll(d)
        do { try open(a).rotateMasterKey(passphrase: Self.secret("second"), parameters: .insecureTestOnly) }
        do { try open(a, "second").rotateMasterKey(passphrase: Self.secret("third"), parameters: .insecureTestOnly) }
        var asked = false
        XCTAssertThrowsError(try Vault.open(at: a, passphrase: Self.secret("second"), anotherPassphrase: { asked = true; return nil })) { error in
            guard case MetadataError.unknownMasterKey = error else { return XCTFail("got \(error)") }
        }
        XCTAssertFalse(asked, "there is no other passphrase to ask for")
        assertOpensNothing(a, "second")
        XCTAssertNoThrow(try open(a, "third"))
    }

    /// Review EM-1: the rotation's retirement of the replaced key files, sealed under the old
    /// key, is the one record of a journal of its own, which the sync sends though the
    /// snapshot retires it; the journal of the records written before the rotation is not.
    func testARotationRetiresTheReplacedKeyFilesInAJournalOfItsOwn() throws {
        let d = try devices(["a", "b"])
        _ = try importFile(try open(d[1]), "b.txt", [1])
        try syncAll(d)   // a waits for b before it deletes anything
        let v = try open(d[0])
        _ = try importFile(v, "unsent.txt", [2])
        let before = Set(v.journals.keys)
        try v.rotateMasterKey(passphrase: Self.secret("new"), parameters: .insecureTestOnly)
        let retirement = v.journals.values.filter { !before.contains($0.id) && !$0.underCurrentMaster }
        XCTAssertEqual(retirement.map(\.records), [1])
        XCTAssertEqual(v.journals.keys.filter(v.isRotationsRetirementOfKeyFiles), retirement.map(\.id))
        let ownBefore = before.filter { v.journals[$0]?.device == v.device }
        XCTAssertFalse(ownBefore.isEmpty)
        XCTAssertTrue(ownBefore.allSatisfy { v.state.retired[RetiredFile(kind: .journal, id: $0)] != nil })
    }

    /// A rotation cut short after its key file was written and before this device's records
    /// were written anew: the new passphrase reads everything, and the next open finishes.
    func testRotationCutShortIsFinishedAtTheNextOpen() throws {
        let a = try devices(["a"]) { v in _ = try self.importFile(v, "kept.txt", [5]) }[0]
        do {
            let v = try open(a)
            var rotated = v.masters
            try rotated.rotate(to: try Secret.random(count: 32))
            v.masters = rotated
            let salt = randomBytes(16)
            let kek = try PassphraseKey.derive(passphrase: Self.secret("new"), salt: salt, parameters: .insecureTestOnly)
            try v.writeKeyFile(id: .random(), kek: kek, salt: salt, parameters: .insecureTestOnly)
        }
        do {
            let v = try open(a, "new")
            XCTAssertEqual(tree(v), ["/kept.txt other 1"])
            let own = v.journals.values.filter { $0.device == v.device }
            XCTAssertTrue(own.contains { $0.underCurrentMaster && $0.snapshot })
        }
        XCTAssertEqual(tree(try open(a, "new")), ["/kept.txt other 1"])
    }
}

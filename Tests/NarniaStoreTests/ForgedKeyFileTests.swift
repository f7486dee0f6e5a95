import Foundation
import XCTest
import NarniaCrypto
import NarniaSystem
@testable import NarniaStore

/// Key files that anyone who can write to the store may put at its top (review AN): what they
/// cost after the `passwd` that retires them, and what a try at the door costs.
extension MergeTests {
    /// Puts `count` forged key files beside the key file `model` (same length, its limits or
    /// `limits`, salts of their own), dated an hour after it: each would cost a key derivation.
    func forgeNewerKeyFiles(_ dir: String, like model: String, count: Int, limits: KDFParameters? = nil) throws {
        let bytes = [UInt8](try XCTUnwrap(FileManager.default.contents(atPath: dir + "/" + model)))
        let modified = try XCTUnwrap(try FileSystem.lstatIfExists(dir + "/" + model)).modifiedNanoseconds
        for _ in 0..<count {
            let salt = randomBytes(16)
            let parameters = try limits ?? XCTUnwrap(KeyFile.header(of: bytes)).parameters
            let forged = salt + KeyFile.maskedParameters(parameters, salt: salt) + randomBytes(bytes.count - 24)
            let path = dir + "/" + Identifier.random().hex
            try Data(forged).write(to: URL(fileURLWithPath: path))
            try FileDescriptor.open(path, .readOnly).setTimes(nanoseconds: modified + 3_600_000_000_000)
        }
    }

    /// Forged key files dated in the future kept costing a derivation at every unlock after
    /// the `passwd` that retired them, while a device that has not heard keeps them: retired
    /// key files are dated back, and tried after the live one.
    func testRetiredKeyFilesAreTriedAfterTheLiveOne() throws {
        let d = try devices(["a", "b"])
        let (a, b) = (d[0], d[1])
        do { _ = try importFile(try open(b), "b.txt", [1]) }
        try syncAll([a, b])
        let original = try XCTUnwrap(try keyFiles(a).keys.first)
        try forgeNewerKeyFiles(a, like: original, count: 10)
        do { try open(a).changePassphrase(to: Self.secret("new"), parameters: .insecureTestOnly) }
        let present = try keyFiles(a)
        XCTAssertEqual(present.count, 12, "b has not heard of the passwd: the retired key files wait for it")
        let retired = try open(a, "new").state.retired
        for name in present.keys where retired[RetiredFile(kind: .keyFile, id: try XCTUnwrap(Identifier(hex: Substring(name))))] != nil {
            XCTAssertEqual(try XCTUnwrap(try FileSystem.lstatIfExists(a + "/" + name)).modifiedNanoseconds, Vault.retiredKeyFileTime, name)
        }
        var notices: [String] = []
        _ = try Vault.open(at: a, passphrase: Self.secret("new"), notice: { notices.append($0) })
        XCTAssertEqual(notices, [], "the live key file is tried first")
        let budget = DerivationBudget(count: 2, fallback: .insecureTestOnly)
        XCTAssertNoThrow(try Vault.open(at: a, passphrase: Self.secret("new"), budget: budget), "the door opens")
        XCTAssertEqual(budget.spent, 1)
    }

    /// A passphrase from before a rotation opens its retired key file, and the journals then
    /// need the new master key: opening tried every other key file, a derivation each, which at
    /// the door told by time that the passphrase had once been right (review AN). At the door
    /// it tries only what it derived already, and the budget pads the rest.
    func testAPassphraseFromBeforeARotationCostsTheDoorItsUsualDerivations() throws {
        let a = try devices(["a"]) { v in _ = try self.importFile(v, "kept.txt", [5]) }[0]
        let old = try keyFiles(a)
        do { try open(a).rotateMasterKey(passphrase: Self.secret("new"), parameters: .insecureTestOnly) }
        let live = try XCTUnwrap(try keyFiles(a).keys.first)
        try forgeNewerKeyFiles(a, like: live, count: 4)
        for (name, bytes) in old {   // the old key file brought back, newest of all
            try bytes.write(to: URL(fileURLWithPath: a + "/" + name))
            try FileDescriptor.open(a + "/" + name, .readOnly).setTimes(nanoseconds: Int64(Date().timeIntervalSince1970 + 86_400) * 1_000_000_000)
        }
        let budget = DerivationBudget(count: 2, fallback: .insecureTestOnly)
        XCTAssertThrowsError(try Vault.open(at: a, passphrase: Self.secret("pw"), budget: budget))
        XCTAssertEqual(budget.spent, 1, "only the old key file's salt was derived")
        budget.padToCount(key: try Self.secret("pw"))
        XCTAssertEqual(budget.spent, 2)
        XCTAssertNil(Vault.openBehindDoor(at: a, key: try Self.secret("pw"), mayOpen: true, parametersWithoutStore: .insecureTestOnly))
    }

    /// Review AO: the door padded with the newest salt's limits whatever salt a padding stood
    /// in for, so a passphrase that opened the newest key file and then failed (a rotation
    /// since) cost other work than a wrong one when the two newest salts' limits differ; and a
    /// store in use padded with the limits of no store. The plan is read before opening.
    func testTheDoorPadsWithTheLimitsOfTheSaltsItStandsInFor() throws {
        let a = try devices(["a"])[0]
        let live = try XCTUnwrap(try keyFiles(a).keys.first)
        let other = KDFParameters(opsLimit: KDFParameters.insecureTestOnly.opsLimit + 1, memLimitKiB: KDFParameters.insecureTestOnly.memLimitKiB)
        try forgeNewerKeyFiles(a, like: live, count: 1, limits: other)
        let budget = DerivationBudget(count: 2, fallback: .moderate)
        budget.plan(storeAt: a)
        XCTAssertEqual(budget.planned, [other, .insecureTestOnly])
        // The store in use: found once the key opened a key file (review CU-1: the lock was
        // taken, for anyone to see, before deriving), so after both derivations.
        let held = try open(a)
        let locked = DerivationBudget(count: 2, fallback: .moderate)
        locked.plan(storeAt: a)
        XCTAssertThrowsError(try Vault.open(at: a, passphrase: Self.secret("pw"), budget: locked))
        XCTAssertEqual(locked.spent, 2)
        XCTAssertEqual(locked.planned, [other, .insecureTestOnly], "the padding derives what a wrong passphrase would")
        withExtendedLifetime(held) {}
    }
}

import Foundation
import XCTest
import NarniaCrypto
import NarniaSystem
@testable import NarniaStore

/// The inbox (docs/FORMAT.md, "The inbox"), on the devices of `MergeTests`: drops sealed
/// without the passphrase and adopted at unlock, once, on any device.
extension MergeTests {
    func dropBytes(_ dir: String, _ path: String, _ bytes: [UInt8]) throws {
        var offset = 0
        try InboxDropper(store: dir).drop(path: path, modified: 1_000_000_000, source: { p, max in
            let n = min(max, bytes.count - offset)
            bytes.withUnsafeBytes { if n > 0 { p.copyMemory(from: $0.baseAddress! + offset, byteCount: n) } }
            offset += n
            return n
        })
    }

    func adopt(_ vault: Vault) throws -> Adoption {
        try vault.adoptDrops(classifyLater: { _ in { ("application/octet-stream", .other) } })
    }

    func testAgreedKeysMatchOnBothSides() throws {
        let (a, publicA) = try X25519.generateKeyPair()
        let (b, publicB) = try X25519.generateKeyPair()
        let ka = try XCTUnwrap(try X25519.agreedKey(secret: a, publicKey: publicB, context: "t", binding: [1, 2]))
        let kb = try XCTUnwrap(try X25519.agreedKey(secret: b, publicKey: publicA, context: "t", binding: [1, 2]))
        XCTAssertTrue(ka.isEqual(to: kb))
        let other = try XCTUnwrap(try X25519.agreedKey(secret: b, publicKey: publicA, context: "t", binding: [1, 3]))
        XCTAssertFalse(ka.isEqual(to: other), "the binding is part of the key")
        var flipped = publicB
        flipped[31] |= 0x80
        let kf = try XCTUnwrap(try X25519.agreedKey(secret: a, publicKey: flipped, context: "t", binding: [1, 2]))
        XCTAssertTrue(ka.isEqual(to: kf), "X25519 ignores the top bit, which drops randomise")
        XCTAssertNil(try X25519.agreedKey(secret: a, publicKey: [UInt8](repeating: 0, count: 32), context: "t", binding: []),
                     "a low-order point agrees on nothing")
    }

    /// An age identity made by age-keygen 1.1.1 (a throwaway key): its X25519 public key is the
    /// recipient age printed, so `inbox-key`'s `age1…` line names a key age can encrypt to.
    func testThePublicKeyOfAnAgeIdentityIsItsRecipient() throws {
        let identity = try XCTUnwrap(Bech32.decode("AGE-SECRET-KEY-1FKHJ56K79D04966C04Z4XHJDN8UUWW9S6LXQG5NT6MWDH9AGD0DQEEJWJT"))
        let secret = try identity.data.withUnsafeBytes { try Secret(copying: $0) }
        XCTAssertEqual(AgeRecipient.string(forX25519PublicKey: X25519.publicKey(of: secret)),
                       "age1q6k5z5jvv88hw7y8edtqtkz5dwyrwuvpe2tgg36hr5yrqpz5ky6q5pna58")
    }

    func testDropsAreAdoptedOnceWithTheirBytes() throws {
        let dirs = try devices(["A"])
        var contents: [String: [UInt8]] = [:]
        for i in 0..<12 { contents["f\(i).bin"] = randomBytes(i * 97_000 + 1) }
        contents["empty"] = []
        for (name, bytes) in contents { try dropBytes(dirs[0], "trip/\(name)", bytes) }
        let vault = try open(dirs[0])
        let adoption = try adopt(vault)
        XCTAssertEqual(adoption.items.count, contents.count)
        XCTAssertTrue(adoption.problems.isEmpty, "\(adoption.problems)")
        for (name, bytes) in contents {
            XCTAssertEqual(try read(vault, "Inbox/trip/\(name)"), bytes, name)
            XCTAssertNotNil(vault.droppedTime(of: try XCTUnwrap(vault.child(named: name, in: folder(vault, "Inbox/trip")))))
        }
        XCTAssertEqual(try adopt(vault).items.count, 0, "adoption is idempotent")
        let report = try vault.verify()
        XCTAssertTrue(report.damaged.isEmpty)
    }

    /// Anyone with the public key can write a drop's header: one saying it holds 2^63 bytes
    /// overflowed the length check, which stopped every unlock on every device the store went
    /// to (review AH). It is a drop that is not whole, left alone and said.
    func testADropSayingItHoldsMoreThanAnyCanIsLeftAlone() throws {
        let dirs = try devices(["A"])
        let dropper = try InboxDropper(store: dirs[0])
        for size: UInt64 in [1 << 63, .max, DropFormat.largestSize + 1] {
            let id = Identifier.random()
            let header = DropHeader(size: size, modified: 0, dropped: 0, batch: .random(), path: "huge.bin")
            let sealed = try dropper.sealHeader(header, contentKey: try Secret.random(count: SymmetricKeyLength), drop: id)
            try dropper.layout.ensureShard(for: id)
            try FileDescriptor.open(dropper.layout.objectPath(for: id), .writeOnly, options: [.create, .exclusive]).writeAll(sealed + randomBytes(100))
        }
        let vault = try open(dirs[0])
        let adoption = try adopt(vault)
        XCTAssertEqual(adoption.items.count, 0)
        XCTAssertEqual(adoption.problems.filter { $0.contains("more than any drop can (altered)") }.count, 3, "\(adoption.problems)")
    }

    /// A dropper other than this program may send names that are not NFC; the vault holds
    /// every name NFC (as `import` gives them), so they are adopted normalised.
    func testNamesFromADropAreAdoptedNFC() throws {
        let dirs = try devices(["A"])
        try dropBytes(dirs[0], "cafe\u{301}/e\u{301}te\u{301}.txt", randomBytes(10))
        let vault = try open(dirs[0])
        XCTAssertEqual(try adopt(vault).items.count, 1)
        let names = vault.descendants(of: .root).map { Array(vault.path(of: $0.id).utf8) }
        XCTAssertTrue(names.contains(Array("/Inbox/caf\u{E9}/\u{E9}t\u{E9}.txt".utf8)), "\(names.map { String(decoding: $0, as: UTF8.self).unicodeScalars.map(\.value) })")
    }

    func testTwoDevicesAdoptingOneDropMakeOneItem() throws {
        let dirs = try devices(["A", "B"])
        try dropBytes(dirs[0], "folder/x.bin", randomBytes(5000))
        try deliver(dirs[0], dirs[1])
        for dir in dirs {
            let vault = try open(dir)
            XCTAssertEqual(try adopt(vault).items.count, 1)
        }
        try syncAll(dirs)
        let trees = try dirs.map { tree(try open($0)) }
        XCTAssertEqual(trees[0], trees[1])
        XCTAssertEqual(trees[0].filter { $0.hasPrefix("/Inbox") }, ["/Inbox folder 0", "/Inbox/folder folder 0", "/Inbox/folder/x.bin other 5000"])
    }

    /// A pair made while a clock ran ahead sorted as the newest after its rotation: `inbox-key`
    /// showed the retired key. The pair in force is the one not retired, whatever the clocks.
    func testTheInboxKeyInForceIsTheOneNotRetiredWhateverTheClocks() throws {
        let dirs = try devices(["A"])
        let rotated: InboxKey
        do {
            let vault = try open(dirs[0])
            let first = try XCTUnwrap(vault.inboxKeyPairs.first)
            let key = Vault.inboxKeySettingPrefix + first.file.hex
            let value = try XCTUnwrap(vault.state.settingValues[key]).split(separator: " ")
            let ahead = Vault.now() + 3_600_000_000_000 * 24 * 365   // made a year in the future
            try vault.commit([.setSetting(key: key, value: "\(value[0]) \(value[1]) \(ahead)")], view: .none)
            rotated = try vault.rotateInboxKey()
            XCTAssertEqual(try vault.inboxKey().publicKey, rotated.publicKey)
        }
        XCTAssertEqual(try open(dirs[0]).inboxKey().publicKey, rotated.publicKey)
    }

    func testTheDropperNeedsAnInboxKeyAndTheVaultWritesItBack() throws {
        let dirs = try devices(["A"])
        let keyFile = try XCTUnwrap(try FileManager.default.contentsOfDirectory(atPath: dirs[0]).first { name in
            (try? FileManager.default.attributesOfItem(atPath: dirs[0] + "/" + name)[.size] as? Int) == 72
        })
        try FileManager.default.removeItem(atPath: dirs[0] + "/" + keyFile)
        XCTAssertThrowsError(try InboxDropper(store: dirs[0])) { error in
            XCTAssertTrue("\(error)".contains("no inbox key"), "\(error)")
        }
        _ = try open(dirs[0])
        XCTAssertNoThrow(try InboxDropper(store: dirs[0]), "opening writes the missing public key file back")
    }
}

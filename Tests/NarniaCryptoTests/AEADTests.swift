import XCTest
@testable import NarniaCrypto

final class AEADTests: XCTestCase {
    private func hex(_ s: String) -> [UInt8] {
        var out: [UInt8] = []
        var it = s.makeIterator()
        while let a = it.next(), let b = it.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
        return out
    }

    /// draft-irtf-cfrg-xchacha-03, appendix A.3.1: the primitive under every chunk and record.
    func testXChaCha20Poly1305KnownAnswer() throws {
        let plaintext = Array("Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.".utf8)
        let ad = hex("50515253c0c1c2c3c4c5c6c7")
        let key = try hex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f").withUnsafeBytes { try Secret(copying: $0) }
        let nonce = hex("404142434445464748494a4b4c4d4e4f5051525354555657")
        let expected = hex("bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b4522f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff921f9664c97637da9768812f615c68b13b52e")
            + hex("c0875924c1c7987947deafd8780acf49")
        let sealed = AEAD.seal(plaintext, additionalData: ad, nonce: nonce, key: key)
        XCTAssertEqual(sealed, expected)
        XCTAssertEqual(try AEAD.open(sealed, additionalData: ad, nonce: nonce, key: key), plaintext)
    }

    func testEveryAlterationFailsAuthentication() throws {
        let key = try Secret.random(count: 32)
        let nonce = randomBytes(AEAD.nonceLength)
        let sealed = AEAD.seal(Array("secret".utf8), additionalData: [1, 2, 3], nonce: nonce, key: key)
        for i in sealed.indices {
            var flipped = sealed
            flipped[i] ^= 0x01
            XCTAssertThrowsError(try AEAD.open(flipped, additionalData: [1, 2, 3], nonce: nonce, key: key), "flipped byte \(i)")
        }
        XCTAssertThrowsError(try AEAD.open(sealed, additionalData: [1, 2, 4], nonce: nonce, key: key), "other AD")
        XCTAssertThrowsError(try AEAD.open(Array(sealed.dropLast()), additionalData: [1, 2, 3], nonce: nonce, key: key), "truncated")
        let other = try Secret.random(count: 32)
        XCTAssertThrowsError(try AEAD.open(sealed, additionalData: [1, 2, 3], nonce: nonce, key: other), "other key")
    }

    func testPassphraseKeyDependsOnEveryInput() throws {
        let p1 = try Array("one".utf8).withUnsafeBytes { try Secret(copying: $0) }
        let p2 = try Array("two".utf8).withUnsafeBytes { try Secret(copying: $0) }
        let salt = [UInt8](repeating: 7, count: PassphraseKey.saltLength)
        let fast = KDFParameters.insecureTestOnly
        let a = try PassphraseKey.derive(passphrase: p1, salt: salt, parameters: fast)
        let b = try PassphraseKey.derive(passphrase: p1, salt: salt, parameters: fast)
        let c = try PassphraseKey.derive(passphrase: p2, salt: salt, parameters: fast)
        let d = try PassphraseKey.derive(passphrase: p1, salt: [UInt8](repeating: 8, count: PassphraseKey.saltLength), parameters: fast)
        XCTAssertTrue(a.isEqual(to: b))
        XCTAssertFalse(a.isEqual(to: c))
        XCTAssertFalse(a.isEqual(to: d))
        XCTAssertTrue(KDFParameters.moderate.memLimitKiB >= 256 * 1024, "MODERATE is at least 256 MiB")
        XCTAssertTrue(KDFParameters.insecureTestOnly.isWeakerThanModerate)
        XCTAssertFalse(KDFParameters.moderate.isWeakerThanModerate)
    }

    func testSubkeysDifferByPurpose() throws {
        let master = try Secret.random(count: 32)
        let a = try master.deriveSubkey(.journalBody)
        let b = try master.deriveSubkey(.journalHeader)
        XCTAssertFalse(a.isEqual(to: b))
        XCTAssertTrue(a.isEqual(to: try master.deriveSubkey(.journalBody)))
    }
}

final class SecretTests: XCTestCase {
    func testWipeAllBeforeExitZeroesLiveSecrets() throws {
        let a = try Secret.random(count: 32)
        let b = try Array("passphrase".utf8).withUnsafeBytes { try Secret(copying: $0) }
        XCTAssertTrue(a.withUnsafeBytes { $0.contains { $0 != 0 } })
        Secret.wipeAllBeforeExit()
        XCTAssertTrue(a.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
        XCTAssertTrue(b.withUnsafeBytes { $0.allSatisfy { $0 == 0 } })
    }

    func testComparisonIsByContent() throws {
        let a = try Array("same".utf8).withUnsafeBytes { try Secret(copying: $0) }
        let b = try Array("same".utf8).withUnsafeBytes { try Secret(copying: $0) }
        let c = try Array("diff".utf8).withUnsafeBytes { try Secret(copying: $0) }
        XCTAssertTrue(a.isEqual(to: b))
        XCTAssertFalse(a.isEqual(to: c))
    }
}

final class StreamingHashTests: XCTestCase {
    /// Given in pieces of any size, the hash is BLAKE2b of the whole.
    func testPiecesHashAsTheWhole() {
        let bytes = randomBytes(100_000)
        for piece in [1, 7, 4096, 100_000] {
            let hash = StreamingHash(length: 16)
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + piece, bytes.count)
                bytes[offset..<end].withUnsafeBytes { hash.update($0) }
                offset = end
            }
            XCTAssertEqual(hash.finish(), genericHash(bytes, length: 16), "pieces of \(piece)")
        }
    }
}

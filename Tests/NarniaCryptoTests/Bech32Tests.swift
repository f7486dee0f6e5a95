import XCTest
@testable import NarniaCrypto

final class Bech32Tests: XCTestCase {
    private func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }

    func testRoundTripsEveryLength() {
        var data: [UInt8] = []
        for length in 0...70 {
            let encoded = Bech32.encode(humanReadablePart: "test", data: data)
            XCTAssertEqual(encoded, encoded.lowercased())
            XCTAssertTrue(encoded.hasPrefix("test1"))
            let decoded = Bech32.decode(encoded)
            XCTAssertEqual(decoded?.humanReadablePart, "test", "length \(length)")
            XCTAssertEqual(decoded?.data, data, "length \(length)")
            XCTAssertEqual(Bech32.decode(encoded.uppercased())?.data, data, "uppercase, length \(length)")
            data.append(UInt8(truncatingIfNeeded: length &* 37 &+ 11))
        }
    }

    func testEncodeLowercasesTheHumanReadablePart() {
        let upper = Bech32.encode(humanReadablePart: "AGE-SECRET-KEY-", data: [1, 2, 3])
        XCTAssertEqual(upper, Bech32.encode(humanReadablePart: "age-secret-key-", data: [1, 2, 3]))
        XCTAssertEqual(Bech32.decode(upper)?.humanReadablePart, "age-secret-key-")
    }

    /// BIP-173's valid strings (those whose data is whole bytes), with the bytes they hold.
    func testBIP173ValidVectors() {
        let cases: [(string: String, hrp: String, hex: String)] = [
            ("A12UEL5L", "a", ""),
            ("a12uel5l", "a", ""),
            ("an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
             "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio", ""),
            ("abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw", "abcdef", "00443214c74254b635cf84653a56d7c675be77df"),
            ("11" + String(repeating: "q", count: 82) + "c8247j", "1", String(repeating: "00", count: 51)),   // 90 characters
            ("split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w", "split",
             "c5f38b70305f519bf66d85fb6cf03058f3dde463ecd7918f2dc743918f2d"),
            ("?1ezyfcl", "?", ""),
        ]
        for c in cases {
            guard let decoded = Bech32.decode(c.string) else {
                XCTFail("rejected valid \(c.string)")
                continue
            }
            XCTAssertEqual(decoded.humanReadablePart, c.hrp, c.string)
            XCTAssertEqual(hex(decoded.data), c.hex, c.string)
            XCTAssertEqual(Bech32.encode(humanReadablePart: decoded.humanReadablePart, data: decoded.data),
                           c.string.lowercased(), c.string)
        }
    }

    /// BIP-173's invalid strings (all but the over-length one, a limit age does not keep),
    /// plus mixed case, a changed character and a Bech32m string.
    func testInvalidStrings() {
        let cases: [(String, String)] = [
            ("\u{20}1nwldj5", "HRP character out of range"),
            ("\u{7F}1axkwrx", "HRP character out of range"),
            ("\u{80}1eym55h", "HRP character out of range"),
            ("pzry9x0s0muk", "no separator"),
            ("1pzry9x0s0muk", "empty HRP"),
            ("x1b4n0q5v", "invalid data character"),
            ("li1dgmt3", "checksum too short"),
            ("de1lg7wt\u{FF}", "invalid character in checksum"),
            ("A1G7SGD8", "checksum computed over the uppercase HRP"),
            ("10a06t8", "empty HRP"),
            ("1qzzfhee", "empty HRP"),
            ("A12uEL5L", "mixed case"),
            ("abcdef1Qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw", "mixed case"),
            ("a12uel5m", "bad checksum"),
            ("abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxv", "bad checksum"),
            ("abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqwx", "swapped characters"),
            ("a1lqfn3a", "valid Bech32m, not Bech32"),
            ("", "empty"),
        ]
        for (string, why) in cases {
            XCTAssertNil(Bech32.decode(string), "\(why): \(string.debugDescription)")
        }
    }

    /// Strings with valid checksums whose 5-bit groups do not make whole bytes.
    func testBadPaddingIsRejected() {
        // 5 leftover bits: a whole group of padding.
        XCTAssertNil(Bech32.decode(Bech32.encode(humanReadablePart: "a", groups: [0])))
        XCTAssertNil(Bech32.decode(Bech32.encode(humanReadablePart: "a", groups: [0, 0, 0, 0, 0, 0, 0, 0, 0])))
        // 2 leftover bits, not zero.
        XCTAssertNil(Bech32.decode(Bech32.encode(humanReadablePart: "a", groups: [0, 1])))
        // 4 leftover bits, not zero.
        XCTAssertNil(Bech32.decode(Bech32.encode(humanReadablePart: "a", groups: [0, 0, 0, 0, 1])))
        // The same lengths with zero padding are fine.
        XCTAssertEqual(Bech32.decode(Bech32.encode(humanReadablePart: "a", groups: [31, 28]))?.data, [0xff])
        XCTAssertEqual(Bech32.decode(Bech32.encode(humanReadablePart: "a", groups: [0, 0, 0, 0, 0, 0, 0, 0]))?.data,
                       [0, 0, 0, 0, 0])
    }

    func testNoLengthLimit() {
        let data = [UInt8](repeating: 0xa5, count: 200)
        let encoded = Bech32.encode(humanReadablePart: "long", data: data)
        XCTAssertGreaterThan(encoded.count, 90)
        XCTAssertEqual(Bech32.decode(encoded)?.data, data)
    }

    // MARK: age

    /// A pair printed by `age-keygen` (age 1.1.1), and the key bytes inside each string.
    /// Checked outside Swift: X25519 base-point multiplication of `secretKeyHex` gives
    /// `publicKeyHex`.
    private let ageRecipient = "age1q6k5z5jvv88hw7y8edtqtkz5dwyrwuvpe2tgg36hr5yrqpz5ky6q5pna58"
    private let ageIdentity = "AGE-SECRET-KEY-1FKHJ56K79D04966C04Z4XHJDN8UUWW9S6LXQG5NT6MWDH9AGD0DQEEJWJT"
    private let publicKeyHex = "06ad41524c61cf777887cb5605d8546b88377181ca968447571d08300454b134"
    private let secretKeyHex = "4daf2a6ade2b5f52eb587d45535e4d99f9c738b0d7cc04526bd6dcdb97a86bda"

    func testAgeRecipientFromAgeKeygen() throws {
        let key = try XCTUnwrap(AgeRecipient.x25519PublicKey(from: ageRecipient))
        XCTAssertEqual(hex(key), publicKeyHex)
        XCTAssertEqual(AgeRecipient.string(forX25519PublicKey: key), ageRecipient)
        XCTAssertEqual(AgeRecipient.x25519PublicKey(from: ageRecipient.uppercased()), key)
    }

    func testAgeIdentityFromAgeKeygen() throws {
        let decoded = try XCTUnwrap(Bech32.decode(ageIdentity))
        XCTAssertEqual(decoded.humanReadablePart, "age-secret-key-")
        XCTAssertEqual(decoded.data.count, 32)
        XCTAssertEqual(hex(decoded.data), secretKeyHex)
        XCTAssertEqual(Bech32.encode(humanReadablePart: "AGE-SECRET-KEY-", data: decoded.data).uppercased(), ageIdentity)
    }

    func testAgeRecipientRejectsOtherStrings() {
        // An identity is valid Bech32 but not a recipient.
        XCTAssertNil(AgeRecipient.x25519PublicKey(from: ageIdentity))
        // Right HRP, wrong length.
        XCTAssertNil(AgeRecipient.x25519PublicKey(from: Bech32.encode(humanReadablePart: "age", data: [UInt8](repeating: 7, count: 31))))
        XCTAssertNil(AgeRecipient.x25519PublicKey(from: Bech32.encode(humanReadablePart: "age", data: [UInt8](repeating: 7, count: 33))))
        // Right length, wrong HRP.
        XCTAssertNil(AgeRecipient.x25519PublicKey(from: Bech32.encode(humanReadablePart: "agf", data: [UInt8](repeating: 7, count: 32))))
        // One character changed.
        XCTAssertNil(AgeRecipient.x25519PublicKey(from: String(ageRecipient.dropLast()) + "9"))
    }
}

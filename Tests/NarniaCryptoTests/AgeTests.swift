import XCTest
@testable import NarniaCrypto

/// The pieces of age decryption that a round trip through the age binary (integration
/// `test_import_decrypts_age_files_sent_to_the_inbox_recipient`) does not pin alone.
final class AgeTests: XCTestCase {
    /// RFC 5869, test case 1 (SHA-256), the first 32 bytes of its OKM.
    func testHKDFMatchesRFC5869() throws {
        let ikm = [UInt8](repeating: 0x0b, count: 22)
        let salt = Array(UInt8(0x00)...UInt8(0x0c))
        let info = Array(UInt8(0xf0)...UInt8(0xf9))
        let okm = try ikm.withUnsafeBytes { try HKDF.sha256(key: $0, salt: salt, info: info) }
        let hex = okm.withUnsafeBytes { $0.map { String(format2hex: $0) }.joined() }
        XCTAssertEqual(hex, "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf")
    }

    func testPlaintextSizeOfPayloads() {
        let full = Int64(64 * 1024 + 16)
        XCTAssertEqual(AgePayloadReader.plaintextSize(payloadLength: 16 + 16), 0, "an empty file: one empty chunk")
        XCTAssertEqual(AgePayloadReader.plaintextSize(payloadLength: 16 + 16 + 10), 10)
        XCTAssertEqual(AgePayloadReader.plaintextSize(payloadLength: 16 + full), 65536, "one full chunk")
        XCTAssertEqual(AgePayloadReader.plaintextSize(payloadLength: 16 + 2 * full + 26), 2 * 65536 + 10)
        XCTAssertNil(AgePayloadReader.plaintextSize(payloadLength: 16 + 15), "shorter than a tag")
        XCTAssertNil(AgePayloadReader.plaintextSize(payloadLength: 16 + full + 5), "a last chunk shorter than its tag")
    }

    func testHeadersThatAreNotAgeV1AreRefused() {
        XCTAssertThrowsError(try AgeHeader(parsing: Array("age-encryption.org/v2\n".utf8)))
        XCTAssertThrowsError(try AgeHeader(parsing: Array("age-encryption.org/v1\n-> X25519 abc\n".utf8)), "no end of header")
        XCTAssertThrowsError(try AgeHeader(parsing: Array("age-encryption.org/v1\nfoo\n--- x\n".utf8)))
    }
}

private extension String {
    init(format2hex byte: UInt8) {
        let digits = Array("0123456789abcdef")
        self = String([digits[Int(byte >> 4)], digits[Int(byte & 15)]])
    }
}

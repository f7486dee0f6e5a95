import XCTest
@testable import NarniaShell

/// Text content shown on a terminal (`cat`, `open` without a pager) cannot drive it.
final class TerminalTextFilterTests: XCTestCase {
    private func filtered(_ chunks: [[UInt8]]) -> [UInt8] {
        var filter = TerminalTextFilter()
        var out: [UInt8] = []
        for chunk in chunks { out += chunk.withUnsafeBytes { filter.filter($0) } }
        return out + filter.finish()
    }

    func testControlsBecomeDotsAndTextStays() {
        let text = Array("a\u{1B}]0;T\u{07}b\tc\nd\r\u{7F}é😀".utf8)
        XCTAssertEqual(String(decoding: filtered([text]), as: UTF8.self), "a.]0;T.b\tc\nd..é😀")
    }

    func testC1AndBidirectionalMarksBecomeDots() {
        let text = Array("x\u{9B}31m\u{202E}gnp.exe\u{2066}y\u{200F}\u{061C}".utf8)
        XCTAssertEqual(String(decoding: filtered([text]), as: UTF8.self), "x.31m.gnp.exe.y..")
    }

    func testACharacterSplitBetweenChunksIsJudgedWhole() {
        let override = Array("\u{202E}".utf8), smile = Array("😀".utf8)
        XCTAssertEqual(filtered([[0x61] + override.prefix(1), Array(override.dropFirst()) + [0x62]]), Array("a.b".utf8))
        XCTAssertEqual(filtered([Array(smile.prefix(2)), Array(smile.dropFirst(2))]), smile)
    }

    func testBytesThatAreNotUTF8PassAsTheyAre() {
        XCTAssertEqual(filtered([[0x63, 0x61, 0x66, 0xE9, 0x0A]]), [0x63, 0x61, 0x66, 0xE9, 0x0A], "Latin-1 é")
        XCTAssertEqual(filtered([[0xE2, 0xA0]]), [0xE2, 0xA0], "a character cut short at the end")
        XCTAssertEqual(filtered([[0xE2], [0x41]]), [0xE2, 0x41], "a lead byte followed by ASCII")
    }

    /// A terminal in an 8-bit mode takes 0x9B for CSI, 0x9D for OSC, 0x9C for ST (review BC-5).
    func testEightBitC1ControlsOutsideUTF8BecomeDots() {
        let dot = UInt8(ascii: ".")
        XCTAssertEqual(filtered([[0x68, 0x9B, 0x31, 0x6D, 0x9D, 0x38, 0x9C, 0x80, 0x9F, 0xA0]]), [0x68, dot, 0x31, 0x6D, dot, 0x38, dot, dot, dot, 0xA0])
        XCTAssertEqual(filtered([[0xE2, 0x9B, 0x41]]), [0xE2, dot, 0x41], "after a lead byte that begins no character")
        XCTAssertEqual(filtered([[0xE2, 0x80]]), [0xE2, dot], "in a character cut short at the end")
        XCTAssertEqual(filtered([[0xC3, 0x9B]]), [0xC3, 0x9B], "inside a UTF-8 character (Û) it is no control")
    }
}

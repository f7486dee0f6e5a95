import XCTest
@testable import NarniaLanguage

final class DisplayWidthTests: XCTestCase {
    func testASCII() {
        XCTAssertEqual(displayWidth(""), 0)
        XCTAssertEqual(displayWidth("abc"), 3)
        XCTAssertEqual(displayWidth("a b-c.txt"), 9)
    }

    func testEastAsianWide() {
        XCTAssertEqual(displayWidth("日本語"), 6)
        XCTAssertEqual(displayWidth("한국어"), 6)
        XCTAssertEqual(displayWidth("ｶﾀｶﾅ"), 4, "halfwidth katakana is narrow")
        XCTAssertEqual(displayWidth("ＡＢ"), 4, "fullwidth Latin is wide")
        XCTAssertEqual(displayWidth("\u{3000}"), 2, "ideographic space")
    }

    func testCombiningMarksAndNFD() {
        XCTAssertEqual(displayWidth("e\u{301}"), 1)
        XCTAssertEqual(displayWidth("\u{e9}"), 1)
        XCTAssertEqual(displayWidth("e\u{301}\u{323}x"), 2)
        XCTAssertEqual(displayWidth("\u{301}"), 0, "a lone combining mark")
        XCTAssertEqual(displayWidth("\u{1100}\u{1161}\u{11A8}"), 2, "conjoining Hangul jamo")
    }

    func testEmoji() {
        XCTAssertEqual(displayWidth("🙂"), 2)
        XCTAssertEqual(displayWidth("🇫🇷"), 2, "a flag is one wide cluster")
        XCTAssertEqual(displayWidth("👩‍👩‍👧"), 2, "a ZWJ family is one wide cluster")
        XCTAssertEqual(displayWidth("❤️"), 2, "VS16 asks for emoji presentation")
        XCTAssertEqual(displayWidth("a🙂b"), 4)
    }

    func testFormatAndControlCharacters() {
        XCTAssertEqual(displayWidth("a\u{200B}b"), 2, "zero width space")
        XCTAssertEqual(displayWidth("a\tb\u{7}"), 2, "controls take no column")
    }

    func testANSIEscapesAreSkipped() {
        XCTAssertEqual(displayWidth("\u{1B}[1;34mphotos\u{1B}[0m/"), 7)
        XCTAssertEqual(displayWidth("\u{1B}[38;5;208m日本\u{1B}[m"), 4)
    }
}

import XCTest
@testable import NarniaLanguage

final class GlobTests: XCTestCase {
    /// The pattern a user gets by typing `typed` as one word.
    private func pattern(_ typed: String) -> GlobPattern {
        guard let word = try? tokenize("x " + typed).first?[1] else {
            XCTFail("cannot tokenize \(typed)")
            return GlobPattern(literal: "")
        }
        return GlobPattern(word)
    }

    private func assertMatches(_ typed: String, _ names: [String], file: StaticString = #filePath, line: UInt = #line) {
        let p = pattern(typed)
        for name in names { XCTAssertTrue(p.matches(name), "\(typed) should match \(name)", file: file, line: line) }
    }

    private func assertNoMatch(_ typed: String, _ names: [String], file: StaticString = #filePath, line: UInt = #line) {
        let p = pattern(typed)
        for name in names { XCTAssertFalse(p.matches(name), "\(typed) should not match \(name)", file: file, line: line) }
    }

    func testStar() {
        assertMatches("*", ["a", "abc", "a b", "*", "日本"])
        assertMatches("*.jpg", ["a.jpg", "jpg.jpg", "x.y.jpg"])
        assertNoMatch("*.jpg", ["a.jpeg", "a.jpg.txt", "jpg"])
        assertMatches("a*b*c", ["abc", "aXbYc", "abbbc", "acbc"])
        assertNoMatch("a*b*c", ["acb", "ab"])
        assertMatches("**", ["", "x"])
    }

    func testStarMatchesEmptyName() {
        XCTAssertTrue(pattern("*").matches(""))
    }

    func testQuestionMark() {
        assertMatches("a?c", ["abc", "a c", "a?c", "aéc"])
        assertNoMatch("a?c", ["ac", "abbc"])
        assertMatches("???", ["abc", "日本語"])
    }

    func testQuestionMarkMatchesOneGraphemeCluster() {
        let p = pattern("a?b")
        XCTAssertTrue(p.matches("a👩‍👩‍👧b"), "a ZWJ family is one character")
        XCTAssertTrue(p.matches("a🇫🇷b"), "a flag is one character")
        XCTAssertTrue(p.matches("ae\u{301}b"), "an NFD é is one character")
    }

    func testBracketsWithRangesAndLists() {
        assertMatches("[abc]x", ["ax", "bx", "cx"])
        assertNoMatch("[abc]x", ["dx", "x", "abx"])
        assertMatches("img[0-9].jpg", ["img0.jpg", "img7.jpg"])
        assertNoMatch("img[0-9].jpg", ["imga.jpg", "img10.jpg"])
        assertMatches("[a-cx-z]", ["a", "b", "y", "z"])
        assertNoMatch("[a-cx-z]", ["d", "w"])
    }

    func testBracketNegation() {
        assertMatches("[!a]", ["b", "!"])
        assertNoMatch("[!a]", ["a"])
        assertMatches("[^0-9]x", ["ax"])
        assertNoMatch("[^0-9]x", ["5x"])
    }

    func testBracketCloseFirstIsLiteral() {
        assertMatches("[]a]", ["]", "a"])
        assertNoMatch("[]a]", ["b"])
        assertMatches("[!]a]", ["b"])
        assertNoMatch("[!]a]", ["]", "a"])
    }

    func testDashFirstOrLastIsLiteral() {
        assertMatches("[-a]", ["-", "a"])
        assertMatches("[a-]", ["-", "a"])
        assertNoMatch("[a-]", ["b"])
    }

    func testUnclosedBracketIsLiteral() {
        let p = pattern("a[b")
        XCTAssertFalse(p.hasWildcards)
        XCTAssertEqual(p.literalText, "a[b")
        XCTAssertTrue(p.matches("a[b"))
        XCTAssertFalse(p.matches("ab"))
    }

    func testPosixClasses() {
        assertMatches("[[:digit:]]*", ["1a", "9"])
        assertNoMatch("[[:digit:]]*", ["a1"])
        assertMatches("[[:upper:]][[:lower:]]", ["Ab", "Éé"])
        assertMatches("[![:alpha:]]", ["1", "-"])
        assertNoMatch("[![:alpha:]]", ["x", "日"])
    }

    func testQuotedWildcardsAreLiteral() {
        assertMatches("'*'.jpg", ["*.jpg"])
        assertNoMatch("'*'.jpg", ["a.jpg"])
        assertMatches(#"\?"#, ["?"])
        assertNoMatch(#"\?"#, ["a"])
        assertMatches(#""[ab]""#, ["[ab]"])
        assertNoMatch(#""[ab]""#, ["a"])
        assertMatches(#"a\[b]"#, ["a[b]"])
    }

    func testQuotedCharactersInsideBrackets() {
        assertMatches(#"[\]x]"#, ["]", "x"])
        assertMatches(#"[a\-c]"#, ["a", "-", "c"])
        assertNoMatch(#"[a\-c]"#, ["b"])
    }

    func testMixedQuotingInOneWord() {
        assertMatches(#"'my '*' file'"#, ["my big file", "my  file"])
        assertNoMatch(#"'my '*' file'"#, ["my big filer"])
    }

    func testLeadingDotNeedsLiteralDot() {
        assertNoMatch("*", [".hidden", ".", ".."])
        assertNoMatch("?hidden", [".hidden"])
        assertNoMatch("[.]hidden", [".hidden"])
        assertMatches(".*", [".hidden", ".x"])
        assertMatches(#"\.h*"#, [".hidden"])
        assertMatches("'.'h*", [".hidden"])
        assertMatches("a*", ["a.b"])
        assertMatches("*.*", ["a.b"])
    }

    func testHasWildcardsAndLiteralText() {
        XCTAssertTrue(pattern("*.jpg").hasWildcards)
        XCTAssertTrue(pattern("a?").hasWildcards)
        XCTAssertTrue(pattern("[ab]").hasWildcards)
        XCTAssertNil(pattern("*.jpg").literalText)
        XCTAssertFalse(pattern("'*.jpg'").hasWildcards)
        XCTAssertEqual(pattern("'*.jpg'").literalText, "*.jpg")
        XCTAssertEqual(pattern(#"my\ file"#).literalText, "my file")
        XCTAssertEqual(GlobPattern(literal: "a*b").literalText, "a*b")
        XCTAssertTrue(GlobPattern(unquoted: "a*b").hasWildcards)
    }

    func testLiteralPatternMatchesOnlyItself() {
        let p = GlobPattern(literal: "-rf [x] *?")
        XCTAssertTrue(p.matches("-rf [x] *?"))
        XCTAssertFalse(p.matches("-rf x *?"))
    }

    func testNFDPatternMatchesNFCName() {
        let p = GlobPattern(unquoted: "e\u{301}*")
        XCTAssertTrue(p.matches("\u{e9}cole"))
        XCTAssertFalse(p.matches("ecole"))
        XCTAssertTrue(GlobPattern(unquoted: "[\u{e9}]").matches("e\u{301}"))
    }

    func testRangeOfNonASCII() {
        XCTAssertTrue(GlobPattern(unquoted: "[あ-ん]*").matches("ひらがな"))
        XCTAssertFalse(GlobPattern(unquoted: "[あ-ん]*").matches("カタカナ"))
    }

    func testEmojiNames() {
        XCTAssertTrue(GlobPattern(unquoted: "*🙂*").matches("happy 🙂 day"))
        XCTAssertTrue(GlobPattern(unquoted: "🇫🇷?").matches("🇫🇷🇩🇪"))
    }

    func testCaseSensitive() {
        XCTAssertFalse(GlobPattern(unquoted: "*.JPG").matches("a.jpg"))
    }

    func testLongNames() {
        let name = String(repeating: "é", count: 127) + "x"
        XCTAssertTrue(GlobPattern(unquoted: "*x").matches(name))
        XCTAssertTrue(GlobPattern(unquoted: "é*é?").matches(name))
    }

    func testPathologicalStarsStayFast() {
        let name = String(repeating: "a", count: 255)
        let p = GlobPattern(unquoted: String(repeating: "a*", count: 40) + "b")
        XCTAssertFalse(p.matches(name))
    }

    func testMatchesPrefix() {
        let p = GlobPattern(unquoted: "*.jp")
        XCTAssertTrue(p.matchesPrefix(of: "a.jpg"))
        XCTAssertTrue(p.matchesPrefix(of: "a.jp"))
        XCTAssertFalse(p.matchesPrefix(of: "a.png"))
        XCTAssertFalse(p.matchesPrefix(of: ".a.jpg"))
    }
}

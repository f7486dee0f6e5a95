import XCTest
@testable import NarniaLanguage

final class WordTests: XCTestCase {
    private func word(_ typed: String) throws -> Word {
        try XCTUnwrap(try tokenize("x " + typed).first?[1])
    }

    func testConvenienceInitialisers() {
        XCTAssertEqual(Word(unquoted: "a*").quotedScalars, [false, false])
        XCTAssertEqual(Word(quoted: "a*").quotedScalars, [true, true])
        XCTAssertEqual(Word(unquoted: "é🙂").quotedScalars.count, 2)
        XCTAssertEqual(Word(unquoted: "x").description, "x")
    }

    func testMapSegmentsKeepsQuoteStatePerRun() throws {
        // An NFD é typed bare, then a quoted '*', then a bare *.
        let w = try word("e\u{301}'*'*")
        let upper = w.mapSegments { $0.uppercased() }
        XCTAssertEqual(upper.text, "E\u{301}**")
        XCTAssertEqual(upper.quotedScalars, [false, false, true, false])
        // A transform that changes the scalar count (NFD → NFC) keeps the masks aligned.
        let composed = w.mapSegments { $0 == "e\u{301}" ? "\u{e9}" : $0 }
        XCTAssertEqual(Array(composed.text.unicodeScalars), ["\u{e9}", "*", "*"])
        XCTAssertEqual(composed.quotedScalars, [false, true, false])
        XCTAssertTrue(GlobPattern(composed).matches("\u{e9}*x"))
        XCTAssertFalse(GlobPattern(composed).matches("\u{e9}ax"))
    }

    func testMapSegmentsOfEmptyWord() {
        XCTAssertEqual(Word(unquoted: "").mapSegments { $0 + "!" }.text, "")
    }

    func testExpandingTilde() throws {
        XCTAssertEqual(try word("~").expandingTilde(home: "/home/u").text, "/home/u")
        XCTAssertEqual(try word("~/a*").expandingTilde(home: "/home/u").text, "/home/u/a*")
        XCTAssertEqual(try word("~/x").expandingTilde(home: "/").text, "/x")
        let expanded = try word("~/a*").expandingTilde(home: "/h*")
        XCTAssertEqual(expanded.quotedScalars, [true, true, true, false, false, false])
        XCTAssertTrue(PathPattern(expanded).components.first == .name("h*"))
    }

    func testTildeNotExpanded() throws {
        for typed in ["'~'/a", #"\~"#, "~user/a", "a~", "~~"] {
            let w = try word(typed)
            XCTAssertEqual(w.expandingTilde(home: "/home/u"), w, typed)
        }
    }
}

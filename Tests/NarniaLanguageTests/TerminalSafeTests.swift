import XCTest
@testable import NarniaLanguage

final class TerminalSafeTests: XCTestCase {
    func testOrdinaryNamesUnchanged() {
        for name in ["a.jpg", "my file", "日本語", "e\u{301}", "👩‍👩‍👧", "it's [x] *?"] {
            XCTAssertEqual(terminalSafe(name), name)
        }
    }

    func testControlCharactersReplaced() {
        XCTAssertEqual(terminalSafe("new\nline"), "new?line")
        XCTAssertEqual(terminalSafe("\u{1B}[2Jclear"), "?[2Jclear")
        XCTAssertEqual(terminalSafe("tab\tbell\u{7}del\u{7F}c1\u{9B}"), "tab?bell?del?c1?")
    }

    func testBidiOverridesReplaced() {
        XCTAssertEqual(terminalSafe("invoice\u{202E}fdp.exe"), "invoice?fdp.exe")
        XCTAssertEqual(terminalSafe("a\u{2066}b\u{2069}"), "a?b?")
    }
}

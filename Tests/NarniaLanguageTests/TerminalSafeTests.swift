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

    /// Review AQ: names differing only by characters that show as nothing looked alike.
    func testInvisibleCharactersOfNamesAreShown() {
        let names = ["same\u{200B}.txt", "same\u{2060}.txt", "same\u{FEFF}.txt", "same\u{AD}.txt", "same\u{E0041}.txt", "same\u{3164}.txt"]
        XCTAssertEqual(Set(names.map(terminalSafe)), ["same?.txt"])
        XCTAssertEqual(names.map(scriptSafe), ["same\\u{200b}.txt", "same\\u{2060}.txt", "same\\u{feff}.txt", "same\\xad.txt", "same\\u{e0041}.txt", "same\\u{3164}.txt"])
        XCTAssertEqual(terminalSafe("فارسی\u{200C}ها"), "فارسی\u{200C}ها", "a Persian word keeps its non-joiner")
    }

    /// A joiner that joins nothing on the screen (beside ASCII, at an end, beside another
    /// joiner) made `ab\u{200C}c` look like `abc`; between two other characters it is kept.
    func testJoinersAreShownWhereTheyJoinNothing() {
        for name in ["ab\u{200C}c", "ab\u{200D}c", "\u{200D}abc", "abc\u{200C}", "é\u{200D}\u{200D}é", "é\u{200D}\u{200B}é"] {
            XCTAssertTrue(terminalSafe(name).contains("?"), "\(scriptSafe(name)) shows its joiner")
        }
        XCTAssertEqual(scriptSafe("ab\u{200C}c"), "ab\\u{200c}c")
        for name in ["👩‍👩‍👧", "👩🏽‍💻", "👁️‍🗨️", "क्\u{200D}ष", "فارسی\u{200C}ها"] {
            XCTAssertEqual(terminalSafe(name), name)
            XCTAssertEqual(scriptSafe(name), name)
        }
    }

    /// Review CC-7: default-ignorable characters beyond the first list (deprecated format
    /// characters, shorthand format controls, a variation selector after ASCII) showed as
    /// nothing, so `report.pdf\u{206A}` listed as `report.pdf`. CC-8: a flag's tag sequence,
    /// an emoji's or ideograph's variation selector and a keycap stay as they are.
    func testEveryCharacterThatShowsAsNothingIsShownWhereItStands() {
        for name in ["report.pdf\u{206A}", "a\u{17B4}b", "a\u{180B}", "x\u{FE0F}y", "\u{FE0F}", "a\u{1BCA0}",
                     "a\u{1D173}", "\u{E0100}a", "a\u{E0067}\u{E007F}", "\u{1F3F4}\u{E0067}", "a\u{FFF0}",
                     // Review CD-1: after any character not ASCII a selector passed.
                     "résumé\u{FE0F}.pdf", "é\u{180B}", "é\u{E0100}", "ab\u{FE00}.jpg",
                     "\u{1F3F4}\u{E0078}\u{E0079}\u{E007F} x",
                     // Review CE-1: after an emoji shown as one already, a selector changes nothing.
                     "😀\u{FE0F}.txt", "😀\u{FE0E}.txt", "👍🏽\u{FE0F}", "🇫🇷\u{FE0F}",
                     // Review CI-4: format characters Unicode does not call ignorable.
                     "report\u{FFF9}.pdf", "report\u{FFFB}.pdf", "report\u{13430}.pdf", "report\u{13439}.pdf"] {
            XCTAssertTrue(terminalSafe(name).contains("?"), "\(scriptSafe(name)) shows what it holds")
        }
        XCTAssertEqual(scriptSafe("report.pdf\u{206A}"), "report.pdf\\u{206a}")
        let scotland = "\u{1F3F4}\u{E0067}\u{E0062}\u{E0073}\u{E0063}\u{E0074}\u{E007F}"
        for name in [scotland + " Scotland", "❤\u{FE0F}.jpg", "1\u{FE0F}\u{20E3} one", "#\u{FE0F}\u{20E3}", "葛\u{E0100}城", "ᠠ\u{180B}",
                     "☺\u{FE0E}", "🏳\u{FE0F}\u{200D}🌈", "辻\u{FE00}.txt", "≩\u{FE00}", "က\u{FE00}",   // CE-2
                     "\u{0600}١٢", "\u{06DD}١"] {   // prepended concatenation marks show where they stand
            XCTAssertEqual(terminalSafe(name), name)
            XCTAssertEqual(scriptSafe(name), name)
        }
    }

    /// A host path or typed word put into a message raw shows as a name does (review BC-1):
    /// an invisible character or a joiner that joins nothing, though nothing else in the line
    /// could drive the terminal; a joiner in an emoji stays.
    func testAMessageShowsWhatANameShowsEscaped() {
        let line = "lcd: /nonexist/zw\u{200B}x and ab\u{200C}c: no such file or folder"
        XCTAssertEqual(shownText(line, onTerminal: true, allowingLineBreaks: false), "lcd: /nonexist/zw?x and ab?c: no such file or folder")
        XCTAssertEqual(shownText(line, onTerminal: false, allowingLineBreaks: false), "lcd: /nonexist/zw\\u{200b}x and ab\\u{200c}c: no such file or folder")
        XCTAssertEqual(shownText("a\tb\u{00AD}\n👩‍👩‍👧", onTerminal: true, allowingLineBreaks: true), "a\tb?\n👩‍👩‍👧")
        XCTAssertEqual(shownText("ok 👩‍👩‍👧 é", onTerminal: false, allowingLineBreaks: false), "ok 👩‍👩‍👧 é")
    }

    func testBidiOverridesReplaced() {
        XCTAssertEqual(terminalSafe("invoice\u{202E}fdp.exe"), "invoice?fdp.exe")
        XCTAssertEqual(terminalSafe("a\u{2066}b\u{2069}"), "a?b?")
    }
}

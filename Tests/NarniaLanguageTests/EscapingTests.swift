import XCTest
@testable import NarniaLanguage

final class EscapingTests: XCTestCase {
    func testPlainTextUnchanged() {
        XCTAssertEqual(shellEscape("photo-1.jpg"), "photo-1.jpg")
        XCTAssertEqual(shellEscape("日本🙂"), "日本🙂")
    }

    func testBackslashesOutsideQuotes() {
        XCTAssertEqual(shellEscape("a b"), #"a\ b"#)
        XCTAssertEqual(shellEscape(#"'"\"#), #"\'\"\\"#)
        XCTAssertEqual(shellEscape("*?[]"), #"\*\?\[\]"#)
        XCTAssertEqual(shellEscape("a;b"), #"a\;b"#)
        XCTAssertEqual(shellEscape("$x`y`&|<>(){}!"), #"\$x\`y\`\&\|\<\>\(\)\{\}\!"#)
    }

    func testWordStartCharacters() {
        XCTAssertEqual(shellEscape("#a#", atWordStart: true), "\\#a#")
        XCTAssertEqual(shellEscape("#a#"), "#a#")
        XCTAssertEqual(shellEscape("~a~", atWordStart: true), #"\~a~"#)
        XCTAssertEqual(shellEscape("-rf", atWordStart: true), #"\-rf"#)
        XCTAssertEqual(shellEscape("-rf"), "-rf")
    }

    func testSingleQuotes() {
        XCTAssertEqual(shellEscape("it's a \"b\" $c \\", in: .single), #"it'\''s a "b" $c \"#)
    }

    func testDoubleQuotes() {
        XCTAssertEqual(shellEscape(#"a "b" $c `d` \e 'f' *"#, in: .double), #"a \"b\" \$c \`d\` \\e 'f' *"#)
    }

    func testShellQuote() {
        XCTAssertEqual(shellQuote("plain.txt"), "plain.txt")
        XCTAssertEqual(shellQuote("my file"), "'my file'")
        XCTAssertEqual(shellQuote("it's"), #"'it'\''s'"#)
        XCTAssertEqual(shellQuote(""), "''")
        XCTAssertEqual(shellQuote("-x"), "'-x'")
    }

    func testCharactersShownEscapedAreWrittenVisibly() {
        XCTAssertEqual(shellEscape("new\nline"), #"new$'\x0a'line"#)
        XCTAssertEqual(shellEscape("a\u{1B}[2J\u{7}b", in: .single), #"a'$'\x1b''[2J'$'\x07''b"#)
        XCTAssertEqual(shellEscape("zw\u{200B}", in: .double), #"zw"$'\u{200b}'""#)
        XCTAssertEqual(shellEscape("it's\t\\", in: .ansiC), #"it\'s\x09\\"#)
        XCTAssertEqual(shellQuote("new\nline"), #"'new'$'\x0a''line'"#)
        XCTAssertEqual(shellEscape("👩\u{200D}💻"), "👩\u{200D}💻", "a joiner between two emoji is kept")
    }

    func testEverythingRoundTrips() throws {
        let names = ["a b", "it's", #"say "hi""#, #"back\slash"#, "*?[]", "#x", "~x", "-x", "a;b", "$HOME",
                     "new\nline", "tab\tx", "é\u{301}", "🇫🇷", "", "\u{1B}[2J'\\", "zw\u{200B}'", "csi\u{9B}\n\"x", "a\u{200D}", "👩\u{200D}💻",
                     "it's $'x'"]
        for name in names {
            for quote in [QuoteState.none, .single, .double, .ansiC] {
                let open = quote == .single ? "'" : quote == .double ? "\"" : quote == .ansiC ? "$'" : ""
                let close = quote == .ansiC ? "'" : open
                let typed = "cmd " + open + shellEscape(name, in: quote, atWordStart: quote == .none) + close
                if name.isEmpty && quote == .none { continue }   // an empty bare word is no word
                let word = try XCTUnwrap(try tokenize(typed).first?[1], typed)
                XCTAssertEqual(Array(word.text.unicodeScalars), Array(name.unicodeScalars), typed)
                XCTAssertFalse(GlobPattern(word).hasWildcards, typed)
                XCTAssertFalse(word.looksLikeFlag, typed)
                XCTAssertFalse(word.startsWithBareTilde, typed)
            }
            let quoted = try XCTUnwrap(try tokenize("cmd " + shellQuote(name)).first?[1])
            XCTAssertEqual(quoted.text, name)
        }
    }
}

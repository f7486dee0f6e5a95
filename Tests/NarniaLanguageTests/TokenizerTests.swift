import XCTest
@testable import NarniaLanguage

final class TokenizerTests: XCTestCase {
    /// The texts of the words of each command.
    private func texts(_ line: String, file: StaticString = #filePath, line number: UInt = #line) -> [[String]] {
        do {
            return try tokenize(line).map { $0.map(\.text) }
        } catch {
            XCTFail("tokenize(\(line)) threw \(error)", file: file, line: number)
            return []
        }
    }

    private func words(_ line: String) throws -> [Word] {
        let commands = try tokenize(line)
        XCTAssertEqual(commands.count, 1)
        return commands.first ?? []
    }

    func testBlanksSeparateWords() {
        XCTAssertEqual(texts("ls -l  /photos"), [["ls", "-l", "/photos"]])
        XCTAssertEqual(texts("  \tls\t-a  "), [["ls", "-a"]])
        XCTAssertEqual(texts("ls\r"), [["ls"]])
    }

    func testEmptyAndBlankLinesGiveNoCommands() {
        XCTAssertEqual(texts(""), [])
        XCTAssertEqual(texts("   \t "), [])
        XCTAssertEqual(texts(";;  ;"), [])
    }

    func testSemicolonSeparatesCommands() {
        XCTAssertEqual(texts("cd /a; ls;pwd"), [["cd", "/a"], ["ls"], ["pwd"]])
        XCTAssertEqual(texts("ls a;"), [["ls", "a"]])
    }

    func testEachCommandKeepsItsTextAsTyped() throws {
        // What a host command (`!COMMAND`) gives /bin/sh: quotes and escapes as typed, up to
        // the `;` that ends it, without the blanks around it or a comment after it.
        let commands = try tokenizeCommands("  !echo 'a;b' \"c d\" x\\;y > o ;ls  /\nmv $'\\t' é # c; d")
        XCTAssertEqual(commands.map(\.source), ["!echo 'a;b' \"c d\" x\\;y > o", "ls  /", "mv $'\\t' é"])
        XCTAssertEqual(commands.map(\.words.count), [6, 2, 3])
    }

    func testNewlineSeparatesCommands() {
        XCTAssertEqual(texts("ls\npwd\n\n"), [["ls"], ["pwd"]])
    }

    func testQuotedOrEscapedSemicolonIsLiteral() {
        XCTAssertEqual(texts("ls 'a;b' \"c;d\" e\\;f"), [["ls", "a;b", "c;d", "e;f"]])
    }

    func testSingleQuotesAreLiteral() {
        XCTAssertEqual(texts(#"cat 'my file' 'a\b' 'x"y' '$HOME'"#), [["cat", "my file", #"a\b"#, #"x"y"#, "$HOME"]])
    }

    func testDoubleQuotesEscapeOnlyFourCharacters() {
        XCTAssertEqual(texts(#"cat "a\"b" "c\\d" "e\$f" "g\`h" "i\nj" "k\'l""#),
                       [["cat", #"a"b"#, #"c\d"#, "e$f", "g`h", #"i\nj"#, #"k\'l"#]])
    }

    func testBackslashOutsideQuotesMakesAnyCharacterLiteral() {
        XCTAssertEqual(texts(#"cat my\ file \'q \"d \\b \a"#), [["cat", "my file", "'q", "\"d", #"\b"#, "a"]])
    }

    func testEscapedNewlineIsLiteral() {
        XCTAssertEqual(texts("cat a\\\nb"), [["cat", "a\nb"]])
    }

    func testAdjacentQuotedPartsJoinIntoOneWord() {
        XCTAssertEqual(texts(#"cat ab'c d'"e f"g\ h"#), [["cat", "abc de fg h"]])
    }

    func testEmptyQuotesMakeAnEmptyWord() {
        XCTAssertEqual(texts("mkdir '' \"\""), [["mkdir", "", ""]])
    }

    func testCommentAtWordStartRunsToEndOfLine() {
        XCTAssertEqual(texts("ls # a comment; pwd"), [["ls"]])
        XCTAssertEqual(texts("# all comment"), [])
        XCTAssertEqual(texts("ls #c\npwd"), [["ls"], ["pwd"]])
    }

    func testACommentBeginningWithADigitIsAComment() throws {
        // Review BG-7: `#2024 photos are kept` made `photos` an operand of `rm -rf`.
        XCTAssertEqual(texts("rm -rf scratch   #2024 photos are kept"), [["rm", "-rf", "scratch"]])
        XCTAssertEqual(texts("mkdir a #1 b\nls"), [["mkdir", "a"], ["ls"]])
        // Where listings show `#N` for names, `#N` is a word naming an item.
        XCTAssertEqual(try tokenize("rm #2 # note", numberedItems: true).map { $0.map(\.text) }, [["rm", "#2"]])
    }

    func testHashInsideWordOrQuotedIsLiteral() {
        XCTAssertEqual(texts("ls a#b '#c' \\#d \"#e\""), [["ls", "a#b", "#c", "#d", "#e"]])
    }

    func testANSIQuotesReadBashEscapesAndScriptsSpellings() {
        XCTAssertEqual(texts(#"cat $'new\nline' a$'\t'b"#), [["cat", "new\nline", "a\tb"]])
        XCTAssertEqual(texts(#"cat $'\e[2J\a\b\f\v\r'"#), [["cat", "\u{1B}[2J\u{07}\u{08}\u{0C}\u{0B}\r"]])
        XCTAssertEqual(texts(#"cat $'it\'s \"q\" \\'"#), [["cat", #"it's "q" \"#]])
        XCTAssertEqual(texts(#"cat $'csi\x9b31m' $'rlo\u{202e}x' $'\u00e9\U0001F600'"#), [["cat", "csi\u{9B}31m", "rlo\u{202E}x", "é😀"]])
        XCTAssertEqual(texts(#"cat $'\x41\x4g'"#), [["cat", "A\u{04}g"]], "a hex digit fewer, then something else")
        XCTAssertEqual(texts(#"cat $'; # *'"#), [["cat", "; # *"]], "quoted: no separator, comment or glob")
    }

    func testANSIQuotesKeepABackslashThatEscapesNothing() {
        XCTAssertEqual(texts(#"cat $'\q' $'\xZ' $'\x' $'\u{12345678}' $'\uD800x'"#),
                       [["cat", #"\q"#, #"\xZ"#, #"\x"#, #"\u{12345678}"#, #"\uD800x"#]])
    }

    func testANULCharacterInAWordIsRefused() {
        for line in [#"lcd $'/tmp\x00zz'"#, #"cat $'a\u{0}'"#, "lcd /tmp\0zz", "cat '\0'"] {
            XCTAssertThrowsError(try tokenize(line), line) { error in
                XCTAssertEqual(error as? TokenizeError, .nulCharacter, line)
            }
        }
        XCTAssertEqual(texts(#"cat $'\x01'"#), [["cat", "\u{01}"]])
    }

    func testDollarIsLiteralElsewhere() {
        XCTAssertEqual(texts(#"cat $x "$'x'" '$'"#), [["cat", "$x", "$'x'", "$"]])
    }

    func testUnterminatedANSIQuoteThrows() {
        XCTAssertThrowsError(try tokenize(#"cat $'a\'"#)) { error in
            XCTAssertEqual(error as? TokenizeError, .unterminatedQuote(.ansiC, offset: 4))
            XCTAssertEqual("\(error)", "unterminated quote: a $' is never closed")
        }
    }

    func testCompletionInsideANSIQuote() {
        for (line, partial, escapeBytes) in [(#"cat $'new\nl"#, "new\nl", 0), (#"cat $'new\"#, "new", 1), (#"cat $'new\u{1"#, "new", 4)] {
            let p = tokenizeForCompletion(line: line, cursor: line.utf8.count)
            XCTAssertEqual(p.partial.text, partial, line)
            XCTAssertEqual(p.partialStart, 4, line)
            XCTAssertEqual(p.quote, .ansiC, line)
            XCTAssertEqual(p.pendingEscapeBytes, escapeBytes, line)
        }
    }

    func testUnterminatedSingleQuoteThrows() {
        XCTAssertThrowsError(try tokenize("cat 'my file")) { error in
            XCTAssertEqual(error as? TokenizeError, .unterminatedQuote(.single, offset: 4))
            XCTAssertEqual("\(error)", "unterminated quote: a ' is never closed")
        }
    }

    func testUnterminatedDoubleQuoteThrows() {
        XCTAssertThrowsError(try tokenize("ls; cat \"a\\\" b")) { error in
            XCTAssertEqual(error as? TokenizeError, .unterminatedQuote(.double, offset: 8))
            XCTAssertEqual("\(error)", "unterminated quote: a \" is never closed")
        }
    }

    func testTrailingBackslashThrows() {
        XCTAssertThrowsError(try tokenize("cat a\\")) { error in
            XCTAssertEqual(error as? TokenizeError, .trailingBackslash)
        }
    }

    func testQuoteMaskRecordsQuotedAndEscapedScalars() throws {
        let word = try words(#"a'b'\c"d"e"#)[0]
        XCTAssertEqual(word.text, "abcde")
        XCTAssertEqual(word.quotedScalars, [false, true, true, true, false])
    }

    func testQuoteMaskIsPerScalarForMultiByteText() throws {
        let word = try words("é'日本'🙂")[0]
        XCTAssertEqual(word.text, "é日本🙂")
        XCTAssertEqual(word.quotedScalars, [false, true, true, false])
    }

    func testUnicodeIsKeptByteForByte() throws {
        let nfd = "e\u{301}cole"
        let word = try words("cat \(nfd)")[1]
        XCTAssertEqual(Array(word.text.utf8), Array(nfd.utf8), "no normalisation in the tokenizer")
    }

    func testLongNameSurvives() throws {
        let name = String(repeating: "é", count: 127) + "x"   // 255 bytes
        XCTAssertEqual(name.utf8.count, 255)
        XCTAssertEqual(try words("cat '\(name)'")[1].text, name)
    }

    func testLooksLikeFlagOnlyForBareDash() throws {
        let ws = try words(#"rm -rf '-x' \-y "-z" --"#)
        XCTAssertEqual(ws.map(\.looksLikeFlag), [false, true, false, false, false, true])
    }

    func testBareTilde() throws {
        let ws = try words(#"lcd ~/a '~'/b \~c"#)
        XCTAssertEqual(ws.map(\.startsWithBareTilde), [false, true, false, false])
    }

    func testBareGlobCharacters() throws {
        let ws = try words(#"ls *.jpg '*.jpg' \?a "[x]" a[1]"#)
        XCTAssertEqual(ws.map(\.hasBareGlobCharacters), [false, true, false, false, false, true])
    }

    func testWordSplitKeepsMasks() throws {
        let word = try words(#"/a\*/'b c'//d/"#)[0]
        let pieces = word.split()
        XCTAssertEqual(pieces.map(\.text), ["", "a*", "b c", "", "d", ""])
        XCTAssertEqual(pieces[1].quotedScalars, [false, true])
        XCTAssertEqual(pieces[2].quotedScalars, [true, true, true])
    }

    // MARK: - Completion tokenizing

    func testCompletionAfterBlankHasEmptyPartial() {
        let p = tokenizeForCompletion(line: "ls -l ", cursor: 6)
        XCTAssertEqual(p.previousWords.map(\.text), ["ls", "-l"])
        XCTAssertEqual(p.partial.text, "")
        XCTAssertEqual(p.partialStart, 6)
        XCTAssertEqual(p.quote, .none)
        XCTAssertFalse(p.inComment)
    }

    func testCompletionOfFirstWord() {
        let p = tokenizeForCompletion(line: "ex", cursor: 2)
        XCTAssertEqual(p.previousWords, [])
        XCTAssertEqual(p.partial.text, "ex")
        XCTAssertEqual(p.partialStart, 0)
    }

    func testCompletionInsideSingleQuote() {
        let p = tokenizeForCompletion(line: "cat 'my fi", cursor: 10)
        XCTAssertEqual(p.previousWords.map(\.text), ["cat"])
        XCTAssertEqual(p.partial.text, "my fi")
        XCTAssertEqual(p.partialStart, 4)
        XCTAssertEqual(p.quote, .single)
    }

    func testCompletionInsideDoubleQuoteWithEscape() {
        let line = #"cat "a\"b"#
        let p = tokenizeForCompletion(line: line, cursor: line.utf8.count)
        XCTAssertEqual(p.partial.text, #"a"b"#)
        XCTAssertEqual(p.quote, .double)
    }

    func testCompletionWithEscapedBlank() {
        let line = #"cat my\ fi"#
        let p = tokenizeForCompletion(line: line, cursor: line.utf8.count)
        XCTAssertEqual(p.partial.text, "my fi")
        XCTAssertEqual(p.partialStart, 4)
        XCTAssertEqual(p.quote, .none)
        XCTAssertFalse(p.pendingEscape)
    }

    func testCompletionWithPendingBackslash() {
        let p = tokenizeForCompletion(line: #"cat my\"#, cursor: 7)
        XCTAssertEqual(p.partial.text, "my")
        XCTAssertTrue(p.pendingEscape)
    }

    func testCompletionIgnoresTextAfterCursor() {
        let p = tokenizeForCompletion(line: "cat abc def", cursor: 6)
        XCTAssertEqual(p.partial.text, "ab")
        XCTAssertEqual(p.partialStart, 4)
    }

    func testCompletionStartsAfterSemicolon() {
        let p = tokenizeForCompletion(line: "cd /a; ls -l ph", cursor: 15)
        XCTAssertEqual(p.previousWords.map(\.text), ["ls", "-l"])
        XCTAssertEqual(p.partial.text, "ph")
        XCTAssertEqual(p.partialStart, 13)
    }

    func testCompletionInComment() {
        XCTAssertTrue(tokenizeForCompletion(line: "ls # co", cursor: 7).inComment)
        XCTAssertFalse(tokenizeForCompletion(line: "ls a#co", cursor: 7).inComment)
    }

    func testCompletionCursorIsClampedAndAlignedToCharacter() {
        let line = "cat é"          // é is two bytes, at offsets 4 and 5
        let inside = tokenizeForCompletion(line: line, cursor: 5)
        XCTAssertEqual(inside.cursor, 4)
        XCTAssertEqual(inside.partial.text, "")
        let beyond = tokenizeForCompletion(line: line, cursor: 99)
        XCTAssertEqual(beyond.cursor, 6)
        XCTAssertEqual(beyond.partial.text, "é")
        XCTAssertEqual(tokenizeForCompletion(line: line, cursor: -3).cursor, 0)
    }

    func testCompletionOffsetsAreBytes() {
        let line = "cat 日本/ph"
        let p = tokenizeForCompletion(line: line, cursor: line.utf8.count)
        XCTAssertEqual(p.partialStart, 4)
        XCTAssertEqual(p.cursor, 4 + 6 + 3)
        XCTAssertEqual(p.partial.text, "日本/ph")
    }
}

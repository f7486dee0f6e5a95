import XCTest
@testable import NarniaLanguage

/// A completion source over fixed trees, recording the folders it is asked about.
private final class FakeSource: CompletionSource {
    var cwd = TreePath.root
    var hostCwd = "/home/u/work"
    var vault: [TreePath: [CompletionEntry]] = [:]
    var host: [String: [CompletionEntry]] = [:]
    var askedVault: [String] = []
    var askedHost: [String] = []

    let commandNames = ["cat", "cd", "export", "exit", "find", "help", "import", "lcd", "lls", "lpwd",
                        "ls", "mkdir", "quit", "rm", "set", "ls"]
    let settingKeys = ["hide-names", "remove-originals", "viewer.photo"]
    let homeDirectory: String? = "/home/u"
    var numbersTypedBare = false

    func flags(for command: String) -> [String] {
        switch command {
        case "ls": ["-l", "-a", "--json"]
        case "rm": ["-r", "-f"]
        case "import": ["--move"]
        default: []
        }
    }

    func argumentKind(for command: String, argumentIndex: Int, previousWords: [String]) -> ArgumentKind {
        switch command {
        case "cd": return .vaultFolder
        case "lcd": return .hostFolder
        case "lls", "import": return .hostPath
        case "export": return argumentIndex == 0 ? .vaultPath : .vaultOrHostPath
        case "set": return argumentIndex == 0 ? .settingKey : .settingValue(key: previousWords.last ?? "")
        case "help": return .choice(commandNames)
        case "mkdir": return .none
        case "find":
            switch previousWords.last {
            case "-type": return .choice(["photo", "video", "document", "other", "folder"])
            case "-name": return .none
            default: return .vaultPath
            }
        default: return .vaultPath
        }
    }

    func settingValues(for key: String) -> [String] {
        key == "hide-names" || key == "remove-originals" ? ["on", "off"] : []
    }

    func vaultEntries(in folder: String) -> [CompletionEntry] {
        askedVault.append(folder)
        return vault[TreePath.resolve(folder, relativeTo: cwd)] ?? []
    }

    func hostEntries(in folder: String) -> [CompletionEntry] {
        askedHost.append(folder)
        var path = folder.hasPrefix("/") ? folder : hostCwd + "/" + folder
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return host[path] ?? []
    }

    /// Adds a vault folder: names ending in `/` are folders.
    func add(_ folder: String, _ names: [String]) {
        vault[TreePath.resolve(folder, relativeTo: .root)] = names.map(entry)
    }

    func addHost(_ folder: String, _ names: [String]) {
        host[folder] = names.map(entry)
    }

    private func entry(_ name: String) -> CompletionEntry {
        name.hasSuffix("/") ? CompletionEntry(name: String(name.dropLast()), isFolder: true)
                            : CompletionEntry(name: name, isFolder: false)
    }
}

final class CompletionTests: XCTestCase {
    private var source = FakeSource()

    override func setUp() {
        source = FakeSource()
        source.add("/", ["photos/", "docs/", "notes.txt", "my file.txt", ".secret/", "-rf", "a/"])
        source.add("/photos", ["2023/", "2024/", "readme.txt"])
        source.add("/photos/2023", ["beach.jpg", "birthday.jpg", "city.png"])
        source.add("/photos/2024", ["a.jpg"])
        source.add("/a", ["b/"])
        source.add("/a/b", ["c/"])
        source.add("/a/b/c", ["d/"])
        source.add("/a/b/c/d", ["deep file.txt"])
        source.addHost("/home/u", ["Documents/", "Downloads/", ".bashrc", "pic.jpg"])
        source.addHost("/home/u/work", ["report.pdf", "src/", "run me.sh"])
        source.addHost("/tmp", ["x.txt"])
    }

    /// Completes at `cursor` (default: the end) and returns the edited line and the completion.
    private func run(_ line: String, cursor: Int? = nil,
                     file: StaticString = #filePath, line number: UInt = #line) -> (String, Completion) {
        let bytes = Array(line.utf8)
        let at = cursor ?? bytes.count
        let completion = complete(line: line, cursor: at, source: source)
        XCTAssertLessThanOrEqual(completion.deleteBytes, at, file: file, line: number)
        let kept = bytes[..<(at - completion.deleteBytes)]
        let deleted = String(decoding: bytes[(at - completion.deleteBytes)..<at], as: UTF8.self)
        XCTAssertEqual(deleted.unicodeScalars.count, completion.deleteScalars, "scalar count", file: file, line: number)
        let edited = String(decoding: kept + Array(completion.insertText.utf8) + bytes[at...], as: UTF8.self)
        return (edited, completion)
    }

    /// Asserts that Tab on `line` gives `expected` and lists `candidates`.
    private func assertTab(_ line: String, _ expected: String, candidates: [String] = [], cursor: Int? = nil,
                           file: StaticString = #filePath, line number: UInt = #line) {
        let (edited, completion) = run(line, cursor: cursor, file: file, line: number)
        XCTAssertEqual(edited, expected, file: file, line: number)
        XCTAssertEqual(completion.candidates, candidates, file: file, line: number)
    }

    /// Asserts that the edited line tokenizes back to `words` for its last command.
    private func assertReadsBack(_ line: String, _ words: [String], file: StaticString = #filePath, line number: UInt = #line) {
        XCTAssertEqual(try tokenize(line).last?.map(\.text), words, file: file, line: number)
    }

    // MARK: - Items' numbers (hide-names)

    /// Review BQ-6: where `#` before a digit begins a word, Tab right after a bare `#` rang the
    /// bell (read as a comment), and numbers were listed as text (`#10` before `#2`).
    func testNumbersCompleteAfterABareHashAndListByValue() {
        source.add("/n", (1...11).map { "#\($0)" })
        assertTab("cd n; ls #", "cd n; ls #", candidates: [])   // a comment where # is not bare
        source.numbersTypedBare = true
        assertTab("cd n; ls #", "cd n; ls #", candidates: [])   // the current folder is /
        source.cwd = TreePath.resolve("/n", relativeTo: .root)
        assertTab("ls #", "ls #", candidates: (1...11).map { "#\($0)" })
        assertTab("ls #1", "ls #1", candidates: ["#1", "#10", "#11"])
        assertTab("ls #4", "ls #4 ")
        assertTab("ls # #", "ls # #")   // a `#` before a space still begins a comment
    }

    // MARK: - Commands and flags

    func testUniqueCommandGetsASpace() {
        assertTab("mk", "mkdir ")
        assertTab("ca", "cat ")
    }

    func testSeveralCommandsListedAndExtended() {
        assertTab("l", "l", candidates: ["lcd", "lls", "lpwd", "ls"])
        assertTab("e", "ex", candidates: ["exit", "export"])
    }

    func testDuplicateCommandNamesListedOnce() {
        assertTab("ls", "ls ")
    }

    func testEmptyLineListsAllCommands() {
        let (edited, completion) = run("")
        XCTAssertEqual(edited, "")
        XCTAssertEqual(completion.candidates.count, 15)
        XCTAssertFalse(completion.changesLine)
    }

    func testUnknownCommandGivesNothing() {
        let (edited, completion) = run("zz")
        XCTAssertEqual(edited, "zz")
        XCTAssertEqual(completion, .nothing)
    }

    func testBatchDashPrefixCompletesCommand() {
        assertTab("-mk", "-mkdir ")
        assertTab("-rm -", "-rm -", candidates: ["-f", "-r"])
    }

    func testFlags() {
        assertTab("ls -", "ls -", candidates: ["--json", "-a", "-l"])
        assertTab("ls --j", "ls --json ")
        assertTab("ls -l --", "ls -l --json ")
        assertTab("import --", "import --move ")
    }

    func testNoFlagsAfterDoubleDash() {
        assertTab("rm -- -", "rm -- -rf ")
    }

    func testLeadingDashNameEscapedAtWordStart() {
        source.add("/dash", ["-rf"])
        source.cwd = TreePath(components: ["dash"])
        assertTab("rm ", #"rm \-rf "#)
        let (edited, _) = run("rm ")
        XCTAssertEqual(try tokenize(edited).first?.last?.looksLikeFlag, false)
    }

    func testQuotedDashIsNotAFlag() {
        assertTab("rm '-", "rm '-rf' ")
    }

    // MARK: - Vault paths

    func testFolderGetsSlashAndNoSpace() {
        assertTab("cd /pho", "cd /photos/")
        assertTab("ls pho", "ls photos/")
    }

    func testFileGetsSpace() {
        assertTab("cat /no", "cat /notes.txt ")
    }

    func testCompletionAtDepthFour() {
        assertTab("cat /a/b/c/d/de", #"cat /a/b/c/d/deep\ file.txt "#)
        assertTab("cat a/b/c/", #"cat a/b/c/d/"#)
        XCTAssertEqual(source.askedVault.last, "a/b/c/")
        assertTab("cat a/b/c/d/", #"cat a/b/c/d/deep\ file.txt "#)
    }

    func testSuccessiveTabsWalkDown() {
        var line = "cat /a"
        for _ in 0..<5 { line = run(line).0 }
        XCTAssertEqual(line, #"cat /a/b/c/d/deep\ file.txt "#)
        assertReadsBack(line, ["cat", "/a/b/c/d/deep file.txt"])
    }

    func testRelativePathsWithDotDot() {
        source.cwd = TreePath(components: ["photos", "2024"])
        assertTab("cat ../20", "cat ../202", candidates: ["2023/", "2024/"])
        XCTAssertEqual(source.askedVault.last, "../")
        assertTab("cat ../2023/bi", "cat ../2023/birthday.jpg ")
        assertTab("cat ../../a/b/../b/", "cat ../../a/b/../b/c/")
        assertTab("cat ./", "cat ./a.jpg ")
    }

    func testDotDotCompletesToFolder() {
        assertTab("cd ..", "cd ../")
    }

    func testSeveralCandidatesExtendToCommonPrefix() {
        assertTab("cat /photos/2023/b", "cat /photos/2023/b", candidates: ["beach.jpg", "birthday.jpg"])
        assertTab("cat /photos/2023/", "cat /photos/2023/", candidates: ["beach.jpg", "birthday.jpg", "city.png"])
        assertTab("cat /photos/", "cat /photos/", candidates: ["2023/", "2024/", "readme.txt"])
    }

    func testEmptyPartialListsVisibleEntries() {
        assertTab("cat ", "cat ", candidates: ["-rf", "a/", "docs/", "my file.txt", "notes.txt", "photos/"])
        XCTAssertEqual(source.askedVault.last, "")
    }

    func testHiddenOnlyWithDot() {
        assertTab("cd .", "cd .secret/")
        assertTab("cd .s", "cd .secret/")
        source.add("/h", [".a", ".b", "c"])
        assertTab("cat /h/", "cat /h/c ")
        assertTab("cat /h/.", "cat /h/.", candidates: [".a", ".b"])
    }

    func testFoldersOnlyForCd() {
        source.add("/mix", ["alpha/", "alps.txt"])
        assertTab("cd /mix/al", "cd /mix/alpha/")
        assertTab("cat /mix/al", "cat /mix/alp", candidates: ["alpha/", "alps.txt"])
    }

    func testFileAndFolderSharingAPrefix() {
        source.add("/p", ["a/", "ab.txt"])
        assertTab("cat /p/a", "cat /p/a", candidates: ["a/", "ab.txt"])
    }

    func testNameThatIsAPrefixOfAnother() {
        source.add("/p", ["a", "ab"])
        assertTab("cat /p/a", "cat /p/a", candidates: ["a", "ab"])
    }

    func testNoMatch() {
        assertTab("cat /zzz", "cat /zzz")
        assertTab("cat /nowhere/x", "cat /nowhere/x")
    }

    func testCursorInTheMiddle() {
        let line = "cat pho rest"
        assertTab(line, "cat photos/ rest", cursor: 7)
    }

    func testAfterSemicolon() {
        assertTab("cd /; cat no", "cd /; cat notes.txt ")
        assertTab("ls; mk", "ls; mkdir ")
    }

    func testNothingInComments() {
        assertTab("ls # no", "ls # no")
    }

    func testArgumentKindNone() {
        assertTab("mkdir no", "mkdir no")
    }

    // MARK: - Escaping

    func testSpacesEscapedOutsideQuotes() {
        assertTab("cat my", #"cat my\ file.txt "#)
        assertReadsBack(run("cat my").0, ["cat", "my file.txt"])
    }

    func testEscapedSpaceAlreadyTyped() {
        assertTab(#"cat my\ f"#, #"cat my\ file.txt "#)
    }

    func testInsideSingleQuotesTheQuoteIsClosedAfterAFile() {
        assertTab("cat 'my", "cat 'my file.txt' ")
        assertTab("cat 'my f", "cat 'my file.txt' ")
        assertReadsBack(run("cat 'my").0, ["cat", "my file.txt"])
    }

    func testInsideDoubleQuotes() {
        assertTab("cat \"my", "cat \"my file.txt\" ")
    }

    func testInsideQuotesAFolderKeepsTheQuoteOpen() {
        source.add("/q", ["my dir/"])
        source.add("/q/my dir", ["in.txt"])
        assertTab("cat '/q/my", "cat '/q/my dir/")
        assertTab("cat '/q/my dir/", "cat '/q/my dir/in.txt' ")
        assertTab("cat \"/q/my", "cat \"/q/my dir/")
    }

    func testHostileNamesRoundTrip() {
        let names = ["it's.txt", #"say "hi".txt"#, #"back\slash"#, "[draft] *final?.txt", "a;b", "$HOME",
                     "tab\there", "a&b|c<d>(e){f}!g", "`cmd`", "new\nline"]
        source.add("/h", names)
        for name in names {
            let first = String(name.prefix(2))
            for (opening, typed) in [("", shellEscape(first)), ("'", shellEscape(first, in: .single)),
                                     ("\"", shellEscape(first, in: .double))] {
                let line = "cat /h/" + opening + typed
                let (edited, completion) = run(line)
                XCTAssertTrue(completion.candidates.isEmpty, "\(line): \(completion.candidates)")
                XCTAssertTrue(edited.hasSuffix(" "), edited)
                assertReadsBack(edited, ["cat", "/h/" + name])
            }
        }
    }

    func testExactEscapes() {
        source.add("/h", ["it's.txt", #"a"b$c.txt"#, "[draft] *x?.txt"])
        assertTab("cat /h/i", #"cat /h/it\'s.txt "#)
        assertTab("cat '/h/i", #"cat '/h/it'\''s.txt' "#)
        assertTab("cat \"/h/i", #"cat "/h/it's.txt" "#)
        assertTab("cat \"/h/a", #"cat "/h/a\"b\$c.txt" "#)
        assertTab("cat /h/\\[", #"cat /h/\[draft\]\ \*x\?.txt "#)
    }

    /// Review AX7-13: a line feed was inserted raw, and the line shown split in two.
    func testACharacterShownEscapedIsInsertedVisibly() {
        source.add("/h", ["new\nline", "esc\u{1B}[2J"])
        assertTab("cat /h/n", #"cat /h/new$'\x0a'line "#)
        assertTab("cat '/h/e", #"cat '/h/esc'$'\x1b''[2J' "#)
        assertTab(#"cat $'/h/n"#, #"cat $'/h/new\x0aline' "#)
        assertTab(#"cat $'/h/new\x0"#, #"cat $'/h/new\x0aline' "#)   // an escape begun is written afresh
    }

    /// Review BD-7: a name whose second character joins its first (`r` + a zero-width joiner,
    /// `s` + a tag character) is one character to Swift's `hasPrefix`, so `r` matched nothing
    /// of it, and `rx` was completed alone.
    func testAPrefixEndingInsideACharacterMatches() {
        source.add("/h", ["rx", "r\u{200D}z", "s\u{E0041}"])
        let (_, completion) = run("cat /h/r")
        XCTAssertEqual(completion.candidates.count, 2, "\(completion.candidates)")
        assertTab("cat /h/s", #"cat /h/s$'\u{e0041}' "#)
    }

    func testHashEscapedOnlyAtWordStart() {
        source.add("/tags", ["#tag"])
        assertTab("cat /tags/", "cat /tags/#tag ")
        source.cwd = TreePath(components: ["tags"])
        assertTab("cat ", "cat \\#tag ")
        assertReadsBack(run("cat ").0, ["cat", "#tag"])
    }

    func testPendingBackslashIsReplaced() {
        assertTab(#"cat my\"#, #"cat my\ file.txt "#)
        assertTab(#"cat \"#, #"cat \"#, candidates: ["-rf", "a/", "docs/", "my file.txt", "notes.txt", "photos/"])
    }

    // MARK: - Unicode

    func testNFDTypedMatchesNFCName() {
        source.add("/u", ["\u{e9}cole.txt"])
        let (edited, _) = run("cat /u/e\u{301}c")
        XCTAssertEqual(Array(edited.utf8), Array("cat /u/e\u{301}cole.txt ".utf8))
    }

    /// On the host, the spelling typed names no file: the name replaces it as the host spells
    /// it (review EQ-1).
    func testNFCTypedCompletesAnNFDHostName() {
        source.addHost("/tmp/u", ["e\u{301}cole.txt"])
        let (edited, _) = run("import /tmp/u/\u{e9}c")
        XCTAssertEqual(Array(edited.utf8), Array("import /tmp/u/e\u{301}cole.txt ".utf8))
    }

    /// Review ER-2: several host names spelled NFD, NFC typed: what they share goes in place of
    /// the spelling typed, as the host spells it (it went after it, naming no file).
    func testNFCTypedExtendsToTheSharedPartOfNFDHostNames() {
        source.addHost("/tmp/n", ["e\u{301}cole/", "e\u{301}cole2/"])
        let (edited, completion) = run("import /tmp/n/\u{e9}")
        XCTAssertEqual(Array(edited.utf8), Array("import /tmp/n/e\u{301}cole".utf8))
        XCTAssertEqual(completion.candidates, ["e\u{301}cole/", "e\u{301}cole2/"])
    }

    /// Reviews ER-1, ES-1: a `/` written as an escape in `$'…'` is no `/` in the line: the last
    /// one there was taken for the component's, and the folders after it were dropped (another
    /// file imported, another folder entered).
    func testAnEscapedSlashKeepsTheFolderWhenTheNameIsReplaced() {
        source.addHost("/home/u/work/sub", ["e\u{301}te\u{301}.txt"])
        source.addHost("/home/u/work/sub/in", ["e\u{301}te\u{301}.txt", "e\u{301}cole/", "e\u{301}cole2/"])
        let (edited, _) = run("import $'sub\\x2f\u{e9}t")
        XCTAssertEqual(Array(edited.utf8), Array("import $'sub\\x2fe\u{301}te\u{301}.txt' ".utf8))
        let (deeper, _) = run("import $'sub/in\\x2f\u{e9}t")
        XCTAssertEqual(Array(deeper.utf8), Array("import $'sub/in\\x2fe\u{301}te\u{301}.txt' ".utf8))
        let (several, completion) = run("lcd sub/$'in\\x2f\u{e9}c")
        XCTAssertEqual(Array(several.utf8), Array("lcd sub/$'in\\x2fe\u{301}cole".utf8))
        XCTAssertEqual(completion.candidates.count, 2)
    }

    /// Review ES-3: with the cursor inside a word, a unique match ended with a closing quote and
    /// a space, and a name written afresh dropped the quote opened before it: the rest of the
    /// word then opened a quote that nothing closed. The rest stays one word with the match.
    func testInsideAWordTheRestStaysOneWordWithItsQuotesBalanced() {
        source.addHost("/home/u/work/sub", ["e\u{301}te\u{301}.txt"])
        source.add("/", ["notes.txt", "photos/"])
        let escaped = "lls $'sub\\x2f\u{e9}tXX'"
        let (edited, _) = run(escaped, cursor: escaped.utf8.count - 3)
        XCTAssertEqual(Array(edited.utf8), Array("lls $'sub\\x2fe\u{301}te\u{301}.txtXX'".utf8))
        assertReadsBack(edited, ["lls", "sub/e\u{301}te\u{301}.txtXX"])
        source.addHost("/home/u/work", ["se\u{301}ance.txt"])
        let (rewritten, _) = run("lls 's\u{e9}XX'", cursor: "lls 's\u{e9}".utf8.count)
        XCTAssertEqual(Array(rewritten.utf8), Array("lls se\u{301}ance.txt'XX'".utf8))
        assertReadsBack(rewritten, ["lls", "se\u{301}ance.txtXX"])
        assertTab("cat 'no'", "cat 'notes.txt'", cursor: 7)
        assertTab("cat noXX", "cat notes.txtXX", cursor: 6)
        assertTab("cat 'phXX'", "cat 'photos/XX'", cursor: 7)
    }

    /// Review EV-1: Tab right after a backslash that escapes a blank (`alpha\|␣beta`) wrote the
    /// text afresh without it, and the blank then split the word; EV-3: a folder before a `/`
    /// got a second one.
    func testInsideAWordAnEscapeBegunAndASlashAfterAreKept() {
        source.add("/", ["alpha beta.txt", "alphabet/"])
        source.add("/e", ["alpha beta.txt"])
        source.add("/alphabet", ["inner.txt"])
        let line = "cat /e/alpha\\ beta.txt"
        let (edited, _) = run(line, cursor: "cat /e/alpha\\".utf8.count)
        assertReadsBack(edited, ["cat", "/e/alpha beta.txt beta.txt"])
        assertTab("cat alphab/inner.txt", "cat alphabet/inner.txt", cursor: "cat alphab".utf8.count)
        // Review EW-3: a `/` after a quote, as the word goes on, is the `/` it needs too.
        assertTab("cat alphab'/inner.txt'", "cat alphabet'/inner.txt'", cursor: "cat alphab".utf8.count)
        assertTab("cat \"alphab\"/inner.txt", "cat \"alphabet\"/inner.txt", cursor: "cat \"alphab".utf8.count)
        assertTab("cat alphab''\\/inner.txt", "cat alphabet''\\/inner.txt", cursor: "cat alphab".utf8.count)
        assertTab("cat alphab'x'", "cat alphabet/'x'", cursor: "cat alphab".utf8.count)
        // Review EW-2: inside quotes the word goes on whatever follows; an escape begun there
        // is dropped, not written again before the closing quote.
        assertTab("cat \"/e/alph\\\"", "cat \"/e/alpha beta.txt\"", cursor: "cat \"/e/alph\\".utf8.count)
        // Review EX-1: where the quote after it goes on inside the word (`"quo\"te"`), the
        // escape is written again, or that quote would close the word.
        source.add("/q", ["quo.txt"])
        let quoted = "cat \"/q/qu\\\"te.txt\""
        let (kept, _) = run(quoted, cursor: "cat \"/q/qu\\".utf8.count)
        XCTAssertEqual(kept, "cat \"/q/quo.txt\\\"te.txt\"")
        // An escape begun in `$'…'` that the closing quote ends is dropped, not made a control
        // character of the name.
        let ansi = "cat $'/q/qu\\x3'"
        let (dropped, _) = run(ansi, cursor: ansi.utf8.count - 1)
        XCTAssertEqual(dropped, "cat $'/q/quo.txt'")
    }

    /// Review EW-4: at the end of the line, several NFD host names for an NFC name typed after a
    /// quoted folder part: the shared part was written inside that folder's quote, left open.
    func testAtTheEndOfTheLineAQuoteTheRewriteOpensIsClosed() {
        source.addHost("/home/u/work/dir one", ["e\u{301}cole/", "e\u{301}cole2/"])
        let (edited, _) = run("lls 'dir one/'\u{e9}")
        XCTAssertEqual(Array(edited.utf8), Array("lls 'dir one/e\u{301}cole'".utf8))
        assertReadsBack(edited, ["lls", "dir one/e\u{301}cole"])
    }

    /// Review EV-4: inside a word, an NFC-typed folder the host spells NFD, before `/…`.
    func testInsideAWordAFolderTheHostSpellsOtherwiseCompletes() {
        source.addHost("/home/u/work", ["e\u{301}cole/"])
        let (edited, _) = run("lls \u{e9}co/x.txt", cursor: "lls \u{e9}co".utf8.count)
        XCTAssertEqual(Array(edited.utf8), Array("lls e\u{301}cole/x.txt".utf8))
    }

    func testCommonPrefixWithMultiByteCharacters() {
        source.add("/j", ["日本語.txt", "日本人.txt"])
        assertTab("cat /j/日", "cat /j/日本", candidates: ["日本人.txt", "日本語.txt"])
    }

    func testCommonPrefixNeverSplitsAGrapheme() {
        // 🇫🇷 and 🇫🇮 share their first regional indicator, half a flag.
        source.add("/f", ["🇫🇷 paris", "🇫🇮 helsinki"])
        let (edited, completion) = run("cat /f/")
        XCTAssertEqual(edited, "cat /f/")
        XCTAssertEqual(completion.candidates.count, 2)
        // The same with ZWJ sequences that share all but their last person.
        source.add("/z", ["👩‍👩‍👧 a", "👩‍👩‍👦 b"])
        XCTAssertEqual(run("cat /z/").0, "cat /z/")
        // And with a combining mark after a shared base letter.
        source.add("/c", ["e\u{301}x", "ey"])
        XCTAssertEqual(run("cat /c/").0, "cat /c/")
    }

    func testEmojiNames() {
        source.add("/e", ["🙂 happy.jpg", "🙂 sad.jpg"])
        assertTab("cat /e/", #"cat /e/🙂\ "#, candidates: ["🙂 happy.jpg", "🙂 sad.jpg"])
        assertTab(#"cat /e/🙂\ h"#, #"cat /e/🙂\ happy.jpg "#)
    }

    func testLongName() {
        let long = String(repeating: "é", count: 120) + "-long-name.txt"
        XCTAssertLessThanOrEqual(long.utf8.count, 255)
        source.add("/l", [long])
        assertTab("cat /l/éé", "cat /l/" + long + " ")
    }

    func testDeleteCountsForMultiByteGlobReplacement() {
        source.add("/g", ["日本.txt"])
        let (edited, completion) = run("cat /g/日*")
        XCTAssertEqual(edited, "cat /g/日本.txt ")
        XCTAssertEqual(completion.deleteBytes, 4)
        XCTAssertEqual(completion.deleteScalars, 2)
    }

    // MARK: - Globs in the partial word

    func testUniqueGlobMatchReplacesComponent() {
        assertTab("cat /photos/2023/*.pn", "cat /photos/2023/city.png ")
        assertTab("cat /photos/*3", "cat /photos/2023/")
    }

    func testSeveralGlobMatchesAreListedOnly() {
        assertTab("cat /photos/2023/*.jp", "cat /photos/2023/*.jp", candidates: ["beach.jpg", "birthday.jpg"])
    }

    func testGlobAfterQuotedFolder() {
        source.add("/my dir", ["notes.txt", "other.md"])
        assertTab("cat \"/my dir\"/*.tx", "cat \"/my dir\"/notes.txt ")
        // The component starts inside the quote, so the completion does too, and closes it.
        assertTab("cat \"/my dir/\"*.tx", "cat \"/my dir/notes.txt\" ")
        assertReadsBack(run("cat \"/my dir/\"*.tx").0, ["cat", "/my dir/notes.txt"])
    }

    func testQuotedStarIsNotAGlob() {
        source.add("/s", ["*star", "*sun", "plain"])
        assertTab(#"cat /s/\*st"#, #"cat /s/\*star "#)
        assertTab("cat '/s/*", "cat '/s/*s", candidates: ["*star", "*sun"])
    }

    // MARK: - Host paths

    func testHostTilde() {
        assertTab("lcd ~", "lcd ~/")
        assertTab("lcd ~/Do", "lcd ~/Do", candidates: ["Documents/", "Downloads/"])
        XCTAssertEqual(source.askedHost.last, "/home/u/")
        assertTab("lcd ~/Doc", "lcd ~/Documents/")
        assertTab("import ~/p", "import ~/pic.jpg ")
    }

    func testExportCompletesMoreSourcesThenTheHostDestination() {
        source.addHost("/", ["tmp/", "usr/"])
        assertTab("export notes.txt pho", "export notes.txt photos/")
        assertTab("export notes.txt /tm", "export notes.txt /tmp/")
        XCTAssertEqual(source.askedHost.last, "/")
        assertTab("export notes.txt ~/p", "export notes.txt ~/pic.jpg ")
        assertTab("export notes.txt rep", "export notes.txt report.pdf ")
    }

    func testHostQuotedTildeIsLiteral() {
        assertTab("lls '~/p", "lls '~/p")
        XCTAssertEqual(source.askedHost.last, "~/")
    }

    func testHostRelativeAndAbsolute() {
        assertTab("import r", "import r", candidates: ["report.pdf", "run me.sh"])
        XCTAssertEqual(source.askedHost.last, "")
        assertTab("import ru", #"import run\ me.sh "#)
        assertTab("lls /tmp/", "lls /tmp/x.txt ")
        assertTab("lcd s", "lcd src/")
    }

    /// Review EP-1: NFC and NFD twins on the host are two names, both listed (Swift's ==
    /// took them for one).
    /// Review EQ-1: Tab then inserted one of them whole; it inserts what both spell alike, and
    /// the whole of one typed, scalar by scalar, is that one.
    func testHostTwinsSpelledNFCAndNFDAreBothListed() {
        source.addHost("/tmp/twins", ["caf\u{E9}.txt", "cafe\u{301}.txt", "other.txt", "d\u{E9}/", "de\u{301}/"])
        let (edited, completion) = run("import /tmp/twins/c")
        XCTAssertEqual(completion.candidates.count, 2, "\(completion.candidates)")
        XCTAssertEqual(Array(edited.utf8), Array("import /tmp/twins/caf".utf8))
        for typed in ["d\u{E9}", "de\u{301}"] {
            let (edited, completion) = run("lcd /tmp/twins/" + typed)
            XCTAssertEqual(Array(edited.utf8), Array("lcd /tmp/twins/\(typed)/".utf8))
            XCTAssertEqual(completion.candidates, [])
        }
    }

    func testHostHiddenOnlyWithDot() {
        assertTab("import ~/", "import ~/", candidates: ["Documents/", "Downloads/", "pic.jpg"])
        assertTab("import ~/.b", "import ~/.bashrc ")
    }

    func testExportLastArgumentIsHost() {
        assertTab("export /no", "export /notes.txt ")
        assertTab("export /notes.txt ~/Doc", "export /notes.txt ~/Documents/")
    }

    // MARK: - Settings and choices

    func testSettingKeysAndValues() {
        assertTab("set ", "set ", candidates: ["hide-names", "remove-originals", "viewer.photo"])
        assertTab("set hi", "set hide-names ")
        assertTab("set hide-names o", "set hide-names o", candidates: ["off", "on"])
        assertTab("set hide-names of", "set hide-names off ")
        assertTab("set viewer.photo x", "set viewer.photo x")
    }

    func testFindTypeChoices() {
        assertTab("find / -type ", "find / -type ", candidates: ["document", "folder", "other", "photo", "video"])
        assertTab("find / -type ph", "find / -type photo ")
        assertTab("find -type v", "find -type video ")
        assertTab("find / -name no", "find / -name no")
        assertTab("find /pho", "find /photos/")
    }

    func testHelpTopics() {
        assertTab("help mk", "help mkdir ")
    }

    // MARK: - Helpers

    func testLongestCommonPrefix() {
        XCTAssertEqual(longestCommonPrefix([]), "")
        XCTAssertEqual(longestCommonPrefix(["abc"]), "abc")
        XCTAssertEqual(longestCommonPrefix(["abc", "abd", "ab"]), "ab")
        XCTAssertEqual(longestCommonPrefix(["é1", "é2"]), "é")
        // Spelled otherwise (NFC and NFD), they share nothing: the host tells them apart.
        XCTAssertEqual(Array(longestCommonPrefix(["\u{e9}1", "e\u{301}2"]).utf8), [])
        XCTAssertEqual(longestCommonPrefix(["🇫🇷", "🇫🇮"]), "")
    }
}

import NarniaLanguage
import Foundation
import XCTest
@testable import NarniaCover

/// A console that records what the Wardrobe prints and answers its questions from a list.
private final class RecordingConsole: WardrobeConsole {
    var out = ""
    var err = ""
    var answers: [String]
    var questions: [String] = []
    let isTerminal: Bool
    let width = 80

    init(answers: [String] = [], isTerminal: Bool = false) {
        self.answers = answers
        self.isTerminal = isTerminal
    }

    func write(_ text: String) { out += text }
    func writeError(_ text: String) { err += text }
    /// An answer of `interrupt` is Ctrl-C at that question.
    static let interrupt = "\u{3}"

    func ask(_ question: String) throws -> String? {
        questions.append(question)
        let answer = answers.isEmpty ? nil : answers.removeFirst()
        if answer == Self.interrupt { throw Interrupted() }
        return answer
    }
}

final class WardrobeTests: XCTestCase {
    private func wardrobe(_ closet: Closet = Closet(), answers: [String] = [], terminal: Bool = false,
                          file: ClosetFile? = nil) -> (Wardrobe, RecordingConsole) {
        let console = RecordingConsole(answers: answers, isTerminal: terminal)
        return (Wardrobe(closet: closet, file: file, console: console), console)
    }

    /// A closet file in a fresh folder, removed when the test ends.
    private func temporaryClosetFile() -> ClosetFile {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("closet-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        addTeardownBlock { try? FileManager.default.removeItem(at: dir) }
        return ClosetFile(path: dir.path + "/wardrobe/closet.json")
    }

    /// Runs a line that must succeed and returns what it printed.
    private func ok(_ w: Wardrobe, _ c: RecordingConsole, _ line: String, file: StaticString = #filePath, lineNo: UInt = #line) -> String {
        c.out = ""
        c.err = ""
        XCTAssertTrue(w.run(line: line), "'\(line)' failed: \(c.err)", file: file, line: lineNo)
        return c.out
    }

    private func fails(_ w: Wardrobe, _ c: RecordingConsole, _ line: String, file: StaticString = #filePath, lineNo: UInt = #line) -> String {
        c.out = ""
        c.err = ""
        XCTAssertFalse(w.run(line: line), "'\(line)' should fail", file: file, line: lineNo)
        XCTAssertEqual(c.out, "", file: file, line: lineNo)
        XCTAssertTrue(c.err.hasPrefix("wardrobe: error: "), c.err, file: file, line: lineNo)
        return c.err
    }

    static let vaultWords = ["vault", "passphrase", "password", "encrypt", "decrypt", "cipher", "secret", "narnia", "lining"]

    private func assertNoVaultWords(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        for word in Self.vaultWords {
            XCTAssertFalse(text.lowercased().contains(word), "mentions '\(word)': \(text)", file: file, line: line)
        }
    }

    func testHelpAndBannerMentionNothingBehindThePanel() {
        let (w, c) = wardrobe()
        var all = Wardrobe.banner + Wardrobe.keyholeText + Wardrobe.keyPrompt + Wardrobe.doorStaysShut + w.promptText
        all += ok(w, c, "help")
        for command in WardrobeCommand.all {
            all += ok(w, c, "help \(command.name)")
            all += command.details + command.abstract + command.usage + command.flags.map(\.help).joined()
        }
        all += fails(w, c, "unlock")
        assertNoVaultWords(all)
        XCTAssertTrue(all.contains("hold"))
    }

    func testBackPanelStandsLastInOuterwearOnly() throws {
        var closet = Closet()
        for name in ["zip-up fleece", "Anorak", "wool coat"] { try closet.add(Garment(name: name), to: .outerwear) }
        try closet.add(Garment(name: "shirt"), to: .tops)
        XCTAssertEqual(closet.listing(of: .outerwear), ["Anorak", "wool coat", "zip-up fleece", "back-panel"])
        XCTAssertEqual(Closet().listing(of: .outerwear), ["back-panel"])
        XCTAssertEqual(closet.listing(of: .tops), ["shirt"])
        let (w, c) = wardrobe(closet)
        XCTAssertEqual(ok(w, c, "ls Outerwear"), "Anorak\nwool coat\nzip-up fleece\nback-panel\n")
        XCTAssertEqual(ok(w, c, "ls -l /outerwear").split(separator: "\n").last, "back-panel     wood  -")
        XCTAssertFalse(ok(w, c, "ls Tops").contains("back-panel"))
    }

    func testTheBackPanelIsNotAGarment() throws {
        let (w, c) = wardrobe()
        XCTAssertTrue(fails(w, c, "add Outerwear/back-panel").contains("part of the wardrobe"))
        XCTAssertTrue(fails(w, c, "add Tops/Back-Panel -c oak").contains("part of the wardrobe"))
        XCTAssertTrue(fails(w, c, "rm Outerwear/back-panel").contains("fixed"))
        XCTAssertTrue(fails(w, c, "mv back-panel Tops").contains("fixed"))
        XCTAssertTrue(ok(w, c, "open back-panel").contains("wood"))
        XCTAssertFalse(String(decoding: try w.closet.encoded(), as: UTF8.self).contains("back-panel"))
    }

    func testHoldingTheBackPanelCallsTheDoorFromTheTopOrOuterwear() {
        let (w, c) = wardrobe()
        var knocks: [Bool] = []
        w.backPanel = { knocks.append($0) }
        _ = ok(w, c, "hold back-panel")
        _ = ok(w, c, "hold Outerwear/back-panel")
        _ = ok(w, c, "cd Outerwear; hold back-panel")
        XCTAssertEqual(knocks, [true, true, true])
        // From another tab the key is asked for all the same (never echoed), and never opens.
        _ = ok(w, c, "cd /Tops; hold back-panel")
        _ = ok(w, c, "hold ../Shoes/Back-Panel")
        _ = ok(w, c, "hold /Outerwear/back-panel")
        XCTAssertEqual(knocks, [true, true, true, false, false, true])
        _ = fails(w, c, "hold no-such-garment")
        XCTAssertEqual(knocks.count, 6)
        w.backPanel = nil
        XCTAssertEqual(ok(w, c, "hold /Outerwear/back-panel"), Wardrobe.doorStaysShut + "\n")
    }

    func testAddAsksForWhatIsMissing() throws {
        let (w, c) = wardrobe(answers: ["Tops", "linen shirt", "white", "Summer", "too thin for May"])
        XCTAssertEqual(ok(w, c, "add"), "added linen shirt to Tops\n")
        XCTAssertEqual(c.questions.count, 5)
        let g = try XCTUnwrap(w.closet.garment(named: "linen shirt", in: .tops))
        XCTAssertEqual(g.colour, "white")
        XCTAssertEqual(g.season, "summer")
        XCTAssertEqual(g.notes, "too thin for May")
        XCTAssertEqual(g.added.count, 10)
    }

    /// Review CU-3: Ctrl-C at a question left the answers blank, and the garment was added.
    /// DA-3: the rest of the line ran.
    func testCtrlCAtAQuestionAddsNothingAndEndsTheLine() throws {
        let (w, c) = wardrobe(answers: ["white", RecordingConsole.interrupt])
        _ = ok(w, c, "add -c red Tops/tee")
        XCTAssertEqual(fails(w, c, "add Tops/hat; rm Tops/tee"), "wardrobe: error: add: interrupted; nothing was changed\n")
        XCTAssertEqual(c.questions.count, 2)
        XCTAssertNil(w.closet.garment(named: "hat", in: .tops))
        XCTAssertNotNil(w.closet.garment(named: "tee", in: .tops))
    }

    /// Review DA-5: a closet file damaged while the Wardrobe is open is said, once.
    func testAClosetFileDamagedMidSessionIsSaidOnce() throws {
        let file = temporaryClosetFile()
        let (w, c) = wardrobe(file: file)
        _ = ok(w, c, "add -c red Tops/tee")
        try Data("not json".utf8).write(to: URL(fileURLWithPath: file.path))
        XCTAssertTrue(w.run(line: "ls Tops"))
        XCTAssertTrue(c.err.contains("is not a closet file; showing the closet as it was last read"), c.err)
        XCTAssertTrue(c.out.contains("tee"))
        c.err = ""
        XCTAssertTrue(w.run(line: "ls Tops"))
        XCTAssertEqual(c.err, "")
    }

    /// Review DA-1: a garment named twice in one rm was found gone the second time, and
    /// nothing was removed.
    func testRmOfAGarmentNamedTwiceRemovesIt() throws {
        let (w, c) = wardrobe(file: temporaryClosetFile())
        _ = ok(w, c, "add -c red Tops/shirt; rm Tops/shirt /Tops/shirt")
        XCTAssertNil(w.closet.garment(named: "shirt", in: .tops))
    }

    /// Review CU-4: blanks around a name typed on the line stayed, making look-alike twins and
    /// a second back panel.
    func testBlanksAroundANameOnTheLineGo() throws {
        let (w, c) = wardrobe()
        _ = ok(w, c, "add -c red Tops/shirt")
        XCTAssertTrue(fails(w, c, "add -c red 'Tops/shirt '").contains("already holds 'shirt'"))
        XCTAssertTrue(fails(w, c, "add -c red 'Tops/ back-panel '").contains("is part of the wardrobe"))
        _ = ok(w, c, "mv Tops/shirt ' tee '")
        XCTAssertNotNil(w.closet.garment(named: "tee", in: .tops))
    }

    /// Review CU-2: two Wardrobes open on one closet each saved the closet they had loaded, the
    /// last one's over the other's change.
    func testTwoWardrobesOnOneClosetKeepEachOthersChanges() throws {
        let file = temporaryClosetFile()
        let (a, ca) = wardrobe(file: file)
        let (b, cb) = wardrobe(file: file)
        _ = ok(a, ca, "add -c navy Outerwear/raincoat")
        _ = ok(b, cb, "add -c brown Shoes/boots")
        _ = ok(a, ca, "rm Shoes/boots")
        let saved = try file.load()
        XCTAssertNotNil(saved.garment(named: "raincoat", in: .outerwear))
        XCTAssertNil(saved.garment(named: "boots", in: .shoes))
        XCTAssertEqual(b.closet.garment(named: "raincoat", in: .outerwear)?.colour, "navy", "b saw a's raincoat as it saved")
    }

    /// Review CZ-10: a second wrong season asked for the notes, then failed, losing them.
    func testASecondWrongSeasonStopsBeforeTheNotes() {
        let (w, c) = wardrobe(answers: ["red", "wintr", "wintr", "lined"])
        XCTAssertTrue(fails(w, c, "add Tops/coat").contains("'wintr' is not a season"))
        XCTAssertEqual(c.questions.count, 3)
        XCTAssertNil(w.closet.garment(named: "coat", in: .tops))
    }

    func testAddWithFlagsAsksNothing() throws {
        let (w, c) = wardrobe()
        _ = ok(w, c, "cd shoes; add -c brown --season=fall 'walking boots'")
        XCTAssertTrue(c.questions.isEmpty)
        XCTAssertEqual(w.closet.garment(named: "walking boots", in: .shoes)?.season, "autumn")
        XCTAssertTrue(fails(w, c, "add 'walking boots' -c red").contains("already holds"))
        XCTAssertTrue(fails(w, c, "add -s monsoon sandals").contains("not a season"))
        XCTAssertTrue(fails(w, c, "cd /; add -c red cap").contains("which tab"))
        // In a tab, `cd` looks for a tab of that name, and says so (review EF-6).
        XCTAssertEqual(fails(w, c, "cd Shoes; cd Sho"), "wardrobe: error: cd: no tab called 'Sho'\n")
    }

    func testMoveRenameOpenAndRemove() throws {
        var closet = Closet()
        try closet.add(Garment(name: "blue shirt", colour: "blue"), to: .tops)
        try closet.add(Garment(name: "scarf"), to: .outerwear)
        let (w, c) = wardrobe(closet)
        XCTAssertEqual(ok(w, c, "cd Outerwear; mv scarf Accessories"), "moved scarf from Outerwear to Accessories\n")
        XCTAssertEqual(ok(w, c, "mv /Tops/blue\\ shirt 'navy shirt'"), "moved blue shirt from Tops to Outerwear/navy shirt\n")
        XCTAssertEqual(ok(w, c, "cd ..; mv 'navy shirt' 'denim shirt'"), "renamed navy shirt to denim shirt\n")
        XCTAssertTrue(ok(w, c, "open 'denim shirt'").contains("colour:  blue"))
        XCTAssertEqual(ok(w, c, "mv scarf Tops"), "moved scarf from Accessories to Tops\n")
        XCTAssertTrue(fails(w, c, "add Tops/Scarf -c grey").contains("already holds"))
        XCTAssertTrue(fails(w, c, "mv 'denim shirt' Tops/SCARF").contains("already holds"))
        XCTAssertNotNil(w.closet.garment(named: "denim shirt", in: .outerwear))
        XCTAssertEqual(ok(w, c, "rm Tops/scarf 'denim shirt'"), "removed scarf from Tops\nremoved denim shirt from Outerwear\n")
        XCTAssertTrue(Tab.allCases.allSatisfy { w.closet.garments(in: $0).isEmpty })
        XCTAssertTrue(fails(w, c, "rm nothing").contains("no tab or garment"))
    }

    /// `exit 3` closed the wardrobe with status 0, where the vault shell refuses it (review AX).
    func testExitTakesNoStatus() {
        let (w, c) = wardrobe()
        XCTAssertTrue(fails(w, c, "exit 3").contains("too many arguments"))
        XCTAssertFalse(w.exitRequested)
        _ = ok(w, c, "quit")
        XCTAssertTrue(w.exitRequested)
    }

    func testTopListingCountsGarmentsOnATerminal() throws {
        var closet = Closet()
        try closet.add(Garment(name: "a"), to: .tops)
        try closet.add(Garment(name: "b"), to: .tops)
        let (w, c) = wardrobe(closet, terminal: true)
        let listing = ok(w, c, "ls").split(separator: "\n")
        XCTAssertEqual(listing.first, "Tops         2 garments")
        XCTAssertEqual(listing.count, 5)
        let (w2, c2) = wardrobe(closet)
        XCTAssertEqual(ok(w2, c2, "ls"), "Tops\nBottoms\nOuterwear\nShoes\nAccessories\n")
    }

    func testCompletion() throws {
        var closet = Closet()
        try closet.add(Garment(name: "rain coat"), to: .outerwear)
        let (w, _) = wardrobe(closet)
        XCTAssertEqual(w.complete(line: "ho", cursor: 2).insertText, "ld ")
        XCTAssertEqual(w.complete(line: "cd Out", cursor: 6).insertText, "erwear/")
        XCTAssertEqual(w.complete(line: "hold Outerwear/b", cursor: 16).insertText, "ack-panel ")
        XCTAssertEqual(w.complete(line: "open Outerwear/r", cursor: 16).insertText, "ain\\ coat ")
        XCTAssertEqual(w.complete(line: "add -s su", cursor: 9).insertText, "mmer ")
        XCTAssertEqual(w.complete(line: "add --", cursor: 6).candidates, ["--color", "--colour", "--notes", "--season"])
        XCTAssertEqual(w.complete(line: "", cursor: 0).candidates, ["add", "cd", "exit", "help", "hold", "list", "ls", "mv", "open", "quit", "rm"])
        XCTAssertEqual(w.complete(line: "cd ", cursor: 3).candidates, ["Accessories/", "Bottoms/", "Outerwear/", "Shoes/", "Tops/"])
        // At the top a garment only one tab holds is offered by its name alone, as `open` finds it.
        XCTAssertEqual(w.complete(line: "open ra", cursor: 7).insertText, "in\\ coat ")
        XCTAssertTrue(w.complete(line: "open ", cursor: 5).candidates.contains("rain coat"))
        var twice = closet
        try twice.add(Garment(name: "scarf"), to: .tops)
        try twice.add(Garment(name: "scarf"), to: .accessories)
        let (w3, _) = wardrobe(twice)
        XCTAssertFalse(w3.complete(line: "open ", cursor: 5).candidates.contains("scarf"), "in two tabs: the name alone finds neither")
        _ = w.run(line: "cd Outerwear")
        XCTAssertEqual(w.complete(line: "hold ", cursor: 5).candidates.filter { !$0.hasSuffix("/") }, ["back-panel", "rain coat"])
        // In a tab, a bare tab name is that tab (review EF-6).
        XCTAssertEqual(w.complete(line: "cd Sho", cursor: 6).insertText, "es/")
        XCTAssertEqual(w.complete(line: "cd ", cursor: 3).candidates, ["Accessories/", "Bottoms/", "Outerwear/", "Shoes/", "Tops/"])
        XCTAssertEqual(w.complete(line: "mv rain\\ coat ../Sh", cursor: 19).insertText, "oes/")
        for line in ["", "help ", "add -s ", "cd ", "open "] {
            for candidate in w.complete(line: line, cursor: line.utf8.count).candidates {
                XCTAssertFalse(Self.vaultWords.contains { candidate.lowercased().contains($0) }, candidate)
            }
        }
    }

    func testTheClosetFileRoundTripsAndIsReplacedWhole() throws {
        let file = temporaryClosetFile()
        XCTAssertFalse(file.exists)
        XCTAssertEqual(try file.load(), Closet())
        let (w, c) = wardrobe(file: file)
        _ = ok(w, c, "add -c green Tops/jumper; add -n 'for hiking' Shoes/boots")
        XCTAssertTrue(file.exists)
        XCTAssertEqual(try file.load(), w.closet)
        XCTAssertFalse(FileManager.default.fileExists(atPath: file.path + ".new"))
        let text = try String(contentsOfFile: file.path, encoding: .utf8)
        XCTAssertTrue(text.contains("\"jumper\""))
        assertNoVaultWords(text)
        try Data("not json".utf8).write(to: URL(fileURLWithPath: file.path))
        XCTAssertThrowsError(try file.load())
        XCTAssertNotNil(file.setAside())
        XCTAssertFalse(file.exists)
    }

    func testSeasonsAndNames() {
        XCTAssertEqual(Season.normalised(" Fall "), "autumn")
        XCTAssertEqual(Season.normalised("all"), "all-year")
        XCTAssertEqual(Season.normalised(""), "")
        XCTAssertNil(Season.normalised("monsoon"))
        XCTAssertThrowsError(try Closet.check(name: "a/b"))
        XCTAssertThrowsError(try Closet.check(name: " "))
        XCTAssertThrowsError(try Closet.check(name: "bad\u{1B}[2J"))
        XCTAssertNoThrow(try Closet.check(name: "café shirt"))
        XCTAssertEqual(Tab(typed: "outerWEAR"), .outerwear)
    }
}

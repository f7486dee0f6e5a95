import XCTest
@testable import NarniaLanguage

/// The flag parsing and help text both shells share.
final class CommandDescriptionTests: XCTestCase {
    struct Example: CommandDescription {
        var name = "add"
        var aliases = ["put"]
        var usage = "[-rf] [-c COLOUR] NAME..."
        var abstract = "add things"
        var details = "Adds every NAME. " + String(repeating: "More words to wrap. ", count: 8)
        var flags = [FlagSpec(["-r"], "recursive"), FlagSpec(["-f"], "force"),
                     FlagSpec(["-c", "--colour"], value: "COLOUR", "its colour")]
        var exclusive: [[String]] = []
    }

    private func parse(_ line: String) throws -> ParsedArguments {
        try Example().parse(Array(try tokenize(line)[0].dropFirst()))
    }

    func testShortFlagsCombineAndLongValuesFollowEquals() throws {
        let a = try parse("add -rf --colour=blue 'x y' -")
        XCTAssertTrue(a.has("-r") && a.has("-f"))
        XCTAssertEqual(a.flags["-c"], "blue")
        XCTAssertEqual(a.operandTexts, ["x y", "-"])
        XCTAssertEqual(try parse("add --colour red x").flags["-c"], "red")
        let attached = try parse("add -cblue x")
        XCTAssertEqual(attached.flags["-c"], "blue", "a one-letter flag's value may follow it at once, as getopt reads it")
        XCTAssertEqual(attached.operandTexts, ["x"])
        // Review AJ: `tree -dL 1` was refused; getopt gives the last flag of a cluster the next word.
        let ending = try parse("add -rc red x")
        XCTAssertTrue(ending.has("-r"))
        XCTAssertEqual(ending.flags["-c"], "red")
        XCTAssertEqual(ending.operandTexts, ["x"])
        XCTAssertEqual(try parse("add -fcred x").flags["-c"], "red")
    }

    func testDoubleDashAndQuotesMakeOperands() throws {
        XCTAssertEqual(try parse("add -- -r").operandTexts, ["-r"])
        XCTAssertEqual(try parse("add '-r'").operandTexts, ["-r"])
    }

    func testUnknownAndValuelessFlagsAreErrors() {
        XCTAssertThrowsError(try parse("add -x")) { XCTAssertEqual(($0 as? CommandFailure)?.message, "unknown option -x") }
        XCTAssertThrowsError(try Example(exclusive: [["-r", "-f"]]).parse([Word(unquoted: "-rf")])) {
            XCTAssertEqual(($0 as? CommandFailure)?.message, "-r and -f cannot both be given")
        }
        XCTAssertThrowsError(try parse("add -rx")) { XCTAssertEqual(($0 as? CommandFailure)?.message, "unknown option -rx") }
        XCTAssertThrowsError(try parse("add -rc")) { XCTAssertEqual(($0 as? CommandFailure)?.message, "-rc needs a value") }
        XCTAssertThrowsError(try parse("add -c")) { XCTAssertEqual(($0 as? CommandFailure)?.message, "-c needs a value") }
        XCTAssertThrowsError(try parse("add --verbose=1"))
    }

    func testHelpIsAskedWithDashDashHelpOrAFreeDashH() throws {
        XCTAssertTrue(Example().asksForHelp(try tokenize("add x --help")[0]))
        XCTAssertTrue(Example().asksForHelp(try tokenize("add -h")[0]))
        XCTAssertFalse(Example().asksForHelp(try tokenize("add -- --help")[0]))
    }

    func testHelpPageWrapsAtWordsAndAlignsFlags() {
        let lines = HelpText.page(Example(), width: 40)
        XCTAssertEqual(Array(lines.prefix(4)), ["usage: add [-rf] [-c COLOUR] NAME...", "also: put", "", "add things"])
        XCTAssertTrue(lines.allSatisfy { $0.count <= 40 }, "\(lines)")
        XCTAssertTrue(lines.contains("  -c, --colour COLOUR  its colour"))
        XCTAssertTrue(lines.contains("  -r                   recursive"))
        XCTAssertEqual(HelpText.overview([Example()], width: 80), ["add  add things"])
    }
}

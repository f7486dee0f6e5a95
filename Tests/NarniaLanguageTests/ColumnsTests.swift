import XCTest
@testable import NarniaLanguage

final class ColumnsTests: XCTestCase {
    private let fruit = ["apple", "banana", "cherry", "date", "elderberry", "fig", "grape", "honeydew",
                         "kiwi", "lemon", "mango", "nectarine", "orange", "papaya", "quince"]

    /// Expected outputs are those of `LC_ALL=C ls -C -w WIDTH -T 0` on files with these names.
    func testMatchesLsAtWidth80() {
        XCTAssertEqual(layoutColumns(fruit, width: 80), [
            "apple   cherry  elderberry  grape     kiwi   mango      orange  quince",
            "banana  date    fig         honeydew  lemon  nectarine  papaya",
        ])
    }

    func testMatchesLsAtWidth40() {
        XCTAssertEqual(layoutColumns(fruit, width: 40), [
            "apple   elderberry  kiwi       orange",
            "banana  fig         lemon      papaya",
            "cherry  grape       mango      quince",
            "date    honeydew    nectarine",
        ])
    }

    func testLinesStayShorterThanTheWidthAsInLs() {
        // The two-row layout is exactly 70 columns: ls needs 71 for it.
        XCTAssertEqual(layoutColumns(fruit, width: 71).count, 2)
        XCTAssertEqual(layoutColumns(fruit, width: 70), [
            "apple   date        grape     lemon      orange",
            "banana  elderberry  honeydew  mango      papaya",
            "cherry  fig         kiwi      nectarine  quince",
        ])
    }

    func testNarrowTerminalGivesOnePerLine() {
        XCTAssertEqual(layoutColumns(fruit, width: 20), fruit)
        XCTAssertEqual(layoutColumns(fruit, width: 1), fruit)
        XCTAssertEqual(layoutColumns(fruit, width: 0), fruit)
    }

    func testEmptyAndSingle() {
        XCTAssertEqual(layoutColumns([], width: 80), [])
        XCTAssertEqual(layoutColumns(["only"], width: 80), ["only"])
    }

    func testAllOnOneLine() {
        XCTAssertEqual(layoutColumns(["a", "bb", "c"], width: 80), ["a  bb  c"])
    }

    func testNoTrailingBlanks() {
        for width in [10, 30, 50, 80, 200] {
            for line in layoutColumns(fruit, width: width) {
                XCTAssertFalse(line.hasSuffix(" "), "width \(width): '\(line)'")
                XCTAssertLessThan(displayWidth(line), max(width, 11))
            }
        }
    }

    func testUnbalancedLayoutsAreNotTried() {
        // Two columns need eight rows here (21 columns); ls never tries twelve rows and three.
        XCTAssertEqual(layoutColumns(fruit, width: 20), fruit)
    }

    func testColumnMajorOrder() {
        let lines = layoutColumns(["1", "2", "3", "4", "5"], width: 8)
        XCTAssertEqual(lines, ["1  3  5", "2  4"])
    }

    func testWideCharactersAlign() {
        XCTAssertEqual(layoutColumns(["日本語", "ab", "🙂", "cdef"], width: 12).count, 4, "12 columns would fill the line")
        let lines = layoutColumns(["日本語", "ab", "🙂", "cdef"], width: 13)
        XCTAssertEqual(lines, ["日本語  🙂", "ab      cdef"])
    }

    func testCombiningMarksTakeNoColumn() {
        let nfd = "e\u{301}te\u{301}"   // été, two combining accents
        let lines = layoutColumns([nfd, "abc", "x", "y"], width: 10)
        XCTAssertEqual(lines, [nfd + "  x", "abc  y"])
    }

    func testColourEscapesTakeNoColumn() {
        let blue = "\u{1B}[34mdir\u{1B}[0m"
        XCTAssertEqual(layoutColumns([blue, "abcd", "e", "f"], width: 10), [blue + "   e", "abcd  f"])
    }

    func testCustomMeasureAndSpacing() {
        // Padding trusts the measure: here every item claims three columns.
        XCTAssertEqual(layoutColumns(["a", "b", "c"], width: 80, spacing: 1, measure: { _ in 3 }), ["a b c"])
        XCTAssertEqual(layoutColumns(["a", "bb", "c"], width: 80, spacing: 4), ["a    bb    c"])
        XCTAssertEqual(layoutColumns(["a", "b", "c"], width: 12, spacing: 1, measure: { _ in 5 }), ["a c", "b"])
    }
}

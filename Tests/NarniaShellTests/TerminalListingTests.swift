import Glibc
import XCTest
import NarniaStore
@testable import NarniaShell

final class TerminalListingTests: XCTestCase {
    private let second: Int64 = 1_000_000_000
    /// 2026-11-29 17:25:00 UTC.
    private let now: Int64 = 1_795_973_100 * 1_000_000_000

    override func setUp() {
        setenv("TZ", "UTC", 1)
        tzset()
    }

    func testCoreutilsDates() {
        XCTAssertEqual(TerminalListing.coreutilsDate(now, now: now), "Nov 29 17:25")
        XCTAssertEqual(TerminalListing.coreutilsDate(now - 86_400 * 27 * second, now: now), "Nov  2 17:25", "a one-digit day is padded")
        XCTAssertEqual(TerminalListing.coreutilsDate(now - 86_400 * 400 * second, now: now), "Oct 25  2025", "older than six months: the year")
        XCTAssertEqual(TerminalListing.coreutilsDate(now + 3_600 * second, now: now), "Nov 29  2026", "the future shows the year")
        for t in [now, now - 86_400 * 400 * second] {
            XCTAssertEqual(TerminalListing.coreutilsDate(t, now: now).count, 12, "both forms are 12 columns")
        }
    }

    /// A drop's time is any Int64 its dropper chose, and a file's is held to the ends (review
    /// BK-1): no trap, and the year.
    func testCoreutilsDatesAtTheEndsOfWhatATimeHolds() {
        XCTAssertEqual(TerminalListing.coreutilsDate(.min, now: now), "Sep 21  1677")
        XCTAssertEqual(TerminalListing.coreutilsDate(.max, now: now), "Apr 11  2262")
    }

    func testLongListingAlignsHumanSizes() {
        let items = [
            ListedItem(name: "photos", kind: .folder, size: nil, modified: now),
            ListedItem(name: "big.mov", kind: .video, size: 1_572_864, modified: now),
            ListedItem(name: "a.txt", kind: .document, size: 12, modified: now),
        ]
        let lines = TerminalListing.long(items, now: now, style: .plain)
        XCTAssertEqual(lines, [
            "folder      - Nov 29 17:25 photos",
            "video    1.5M Nov 29 17:25 big.mov",
            "document   12 Nov 29 17:25 a.txt",
        ])
    }

    func testGridColoursAndGlyphsOnlyWhenAsked() {
        let items = [ListedItem(name: "p.jpg", kind: .photo, size: 1, modified: now),
                     ListedItem(name: "docs", kind: .folder, size: nil, modified: now)]
        XCTAssertEqual(TerminalListing.grid(items, width: 80, style: .plain), ["p.jpg  docs/"])
        let fancy = TerminalListing.grid(items, width: 80, style: TerminalStyle(colour: true, glyphs: true)).joined()
        XCTAssertTrue(fancy.contains(TerminalStyle.glyph(.photo) + " "), fancy)
        XCTAssertTrue(fancy.contains("\u{1B}["), "coloured: \(fancy)")
    }

    func testANameCannotPassForTheMarks() {
        let items = [
            ListedItem(name: "fake.txt (dropped)", kind: .other, size: 1, modified: now),
            ListedItem(name: "real.txt", kind: .other, size: 1, modified: now, dropped: true),
            ListedItem(name: "x (not on this device)", kind: .other, size: 1, modified: now, here: false),
            ListedItem(name: "(dropped)", kind: .other, size: 1, modified: now),
        ]
        XCTAssertEqual(TerminalListing.long(items, now: now, style: .plain).map { String($0.dropFirst(24)) }, [
            "fake.txt?(dropped)", "real.txt (dropped)", "x?(not on this device) (not on this device)", "(dropped)",
        ])
        XCTAssertEqual(ListedItem.nameBeforeMarks("a (dropped)", onTerminal: false), "a\\x20(dropped)")
        XCTAssertEqual(ListedItem.nameBeforeMarks("a (dropped) b", onTerminal: false), "a (dropped) b")
        // Any blank before the mark's words, and blanks after them (review EE-2).
        XCTAssertEqual(ListedItem.nameBeforeMarks("a\u{A0}(dropped)", onTerminal: false), "a\\xa0(dropped)")
        XCTAssertEqual(ListedItem.nameBeforeMarks("a\u{2007}(not on this device)", onTerminal: false), "a\\u{2007}(not on this device)")
        XCTAssertEqual(ListedItem.nameBeforeMarks("a\u{3000}(dropped)", onTerminal: true), "a?(dropped)")
        XCTAssertEqual(ListedItem.nameBeforeMarks("a (dropped)  ", onTerminal: false), "a\\x20(dropped)\\x20\\x20")
        XCTAssertEqual(ListedItem.nameBeforeMarks("report ", onTerminal: true), "report?")
        XCTAssertEqual(ListedItem.nameBeforeMarks("x\u{2800}(dropped)\u{2800}", onTerminal: false), "x\\u{2800}(dropped)\\u{2800}")
        XCTAssertEqual(ListedItem.nameBeforeMarks("a(dropped)", onTerminal: false), "a(dropped)")
        XCTAssertEqual(ListedItem.nameBeforeMarks("caf\u{E9} au lait", onTerminal: false), "caf\u{E9} au lait")
    }

    func testNamesAreMadeTerminalSafe() {
        let items = [ListedItem(name: "evil\u{1B}[2Jname", kind: .other, size: 1, modified: now)]
        for line in TerminalListing.long(items, now: now, style: .plain) + TerminalListing.grid(items, width: 80, style: .plain) {
            XCTAssertFalse(line.contains("\u{1B}"), "an escape in a name reaches the terminal: \(line)")
        }
    }
}

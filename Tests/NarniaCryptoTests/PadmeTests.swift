import XCTest
@testable import NarniaCrypto

final class PadmeTests: XCTestCase {
    /// Known answers computed from the PURBs paper's definition.
    func testKnownAnswers() {
        let cases: [(UInt64, UInt64)] = [
            (0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (7, 7), (8, 8), (9, 10), (10, 10), (11, 12),
            (16, 16), (17, 18), (100, 104), (1000, 1024), (1025, 1088), (1_000_000, 1_015_808),
            (1_048_576, 1_048_576), (1_048_577, 1_081_344), (1 << 30, 1 << 30), ((1 << 30) + 1, (1 << 30) + (1 << 25)),
        ]
        for (input, expected) in cases {
            XCTAssertEqual(Padme.paddedLength(input), expected, "Padmé(\(input))")
        }
    }

    func testNeverShrinksAndOverheadBounded() {
        var x: UInt64 = 3
        while x < 1 << 40 {
            let p = Padme.paddedLength(x)
            XCTAssertGreaterThanOrEqual(p, x)
            XCTAssertLessThanOrEqual(Double(p - x) / Double(x), 0.12, "overhead at \(x)")
            x = x * 3 / 2 + 7
        }
    }
}

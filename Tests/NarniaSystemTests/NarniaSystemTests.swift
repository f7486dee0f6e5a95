import Glibc
import XCTest
@testable import NarniaSystem

final class NarniaSystemTests: XCTestCase {
    var directory = ""

    override func setUpWithError() throws {
        directory = "/tmp/narnia-system-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileSystem.makeDirectory(directory)
    }

    override func tearDown() {
        _ = Glibc.system("rm -rf '\(directory)'")
        SystemCallFaults.reset()
    }

    func testInjectedFaultNamesTheCallAndPath() throws {
        let fd = try FileDescriptor.open(directory + "/f", .writeOnly, options: [.create, .exclusive])
        SystemCallFaults.inject("fdatasync", errno: ENOSPC, skip: 1)
        try fd.dataSync()
        XCTAssertThrowsError(try fd.dataSync()) { error in
            let e = error as? SystemError
            XCTAssertEqual(e?.code, ENOSPC)
            XCTAssertEqual(e?.operation, "fdatasync")
            XCTAssertEqual(e?.path, directory + "/f")
            XCTAssertEqual(e?.isDiskFull, true)
        }
        try fd.dataSync()  // one failure only
    }

    func testNoFollowRefusesASymbolicLink() throws {
        XCTAssertEqual(symlink("/etc/hostname", directory + "/link"), 0)
        XCTAssertThrowsError(try FileDescriptor.open(directory + "/link", .readOnly, options: .noFollow)) { error in
            XCTAssertEqual((error as? SystemError)?.code, ELOOP)
        }
        let dir = try FileDescriptor.open(directory, .readOnly, options: .directory)
        XCTAssertThrowsError(try dir.open("link", .readOnly, options: .noFollow))
        XCTAssertEqual(try dir.statusOfEntry("link")?.isSymbolicLink, true)
    }

    func testExclusiveCreateRefusesAnExistingName() throws {
        XCTAssertEqual(symlink(directory + "/victim", directory + "/planted"), 0)
        XCTAssertThrowsError(try FileDescriptor.open(directory + "/planted", .writeOnly, options: [.create, .exclusive]))
        XCTAssertNil(try FileSystem.lstatIfExists(directory + "/victim"))
    }

    func testUnnamedTemporaryFileGetsItsNameOnlyWhenLinked() throws {
        let dir = try FileDescriptor.open(directory, .readOnly, options: .directory)
        let file = try dir.open(".", .writeOnly, options: .unnamedTemporary)
        try file.writeAll(Array("hello".utf8))
        XCTAssertEqual(try FileSystem.listDirectory(directory), [])
        try file.link(as: "named", in: dir, displayPath: directory + "/named")
        XCTAssertEqual(try FileSystem.listDirectory(directory), ["named"])
        XCTAssertEqual(try FileDescriptor.open(directory + "/named", .readOnly).readToEnd(), Array("hello".utf8))
    }

    func testNonBlockingOpenOfAFIFODoesNotWait() throws {
        XCTAssertEqual(mkfifo(directory + "/fifo", 0o600), 0)
        let fd = try FileDescriptor.open(directory + "/fifo", .readOnly, options: [.noFollow, .nonBlocking])
        XCTAssertFalse(try fd.status().isRegularFile)
    }

    /// Review BK-1: a file dated 2300 (ext4 holds it) trapped the seconds-to-nanoseconds product.
    func testNanosecondsHoldToTheEndsAndRoundDown() {
        XCTAssertEqual(Nanoseconds.of(timespec(tv_sec: 10_413_792_000, tv_nsec: 0)), .max, "2300-01-01")
        XCTAssertEqual(Nanoseconds.of(timespec(tv_sec: -11_676_096_000, tv_nsec: 0)), .min, "1600-01-01")
        XCTAssertEqual(Nanoseconds.of(timespec(tv_sec: 9_223_372_036, tv_nsec: 999_999_999)), .max, "the sum overflows")
        XCTAssertEqual(Nanoseconds.of(timespec(tv_sec: -2, tv_nsec: 500_000_000)), -1_500_000_000)
        let t = Nanoseconds.timespecOf(-1_500_000_000)
        XCTAssertEqual([t.tv_sec, t.tv_nsec], [-2, 500_000_000], "futimens takes 0 ... 999,999,999 nanoseconds")
        XCTAssertEqual([Nanoseconds.seconds(-1), Nanoseconds.seconds(-1_000_000_000), Nanoseconds.seconds(999_999_999)], [-1, -1, 0])
        XCTAssertEqual(Nanoseconds.distance(.min, .max), .max)
        XCTAssertEqual(Nanoseconds.distance(5, -5), 10)
        XCTAssertEqual(Nanoseconds.difference(.min, 1), .min)
        XCTAssertEqual(Nanoseconds.difference(.max, -1), .max)
    }
}

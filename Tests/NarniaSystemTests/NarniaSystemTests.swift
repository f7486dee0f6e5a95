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
}

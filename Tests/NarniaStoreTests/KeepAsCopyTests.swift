import Glibc
import XCTest
@testable import NarniaStore
import NarniaSystem

/// `Vault.keepAsCopy`: the version of a forked journal here gets the copy's name before the
/// other version takes the journal's, whatever the file system does with hard links.
final class KeepAsCopyTests: XCTestCase {
    var folder = ""

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("keep-as-copy-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    override func tearDown() {
        SystemCallFaults.reset()
        try? FileManager.default.removeItem(atPath: folder)
    }

    func write(_ name: String, _ text: String) throws -> String {
        let path = folder + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    func contents(_ path: String) -> String? {
        FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
    }

    func testTheVersionKeepsItsNameUntilTheOtherTakesIt() throws {
        let journal = try write("j", "here")
        try Vault.keepAsCopy(journal, journal + ".copy")
        XCTAssertEqual(contents(journal + ".copy"), "here")
        XCTAssertEqual(contents(journal), "here", "linked, not renamed")
    }

    /// Review AB: a FUSE file system that answered `link` with EACCES or EIO made every sync
    /// that met a fork fail, for good.
    func testALinkThatFailsFallsBackToARename() throws {
        for code in [EACCES, EIO, EPERM, EXDEV] {
            let journal = try write("j", "here")
            SystemCallFaults.inject("link", errno: code)
            try Vault.keepAsCopy(journal, journal + ".copy")
            XCTAssertEqual(contents(journal + ".copy"), "here", "errno \(code)")
            XCTAssertNil(contents(journal), "errno \(code)")
            try FileManager.default.removeItem(atPath: journal + ".copy")
        }
    }

    func testALinkAKilledSyncMadeIsKept() throws {
        let journal = try write("j", "here")
        try FileSystem.link(journal, journal + ".copy")
        try Vault.keepAsCopy(journal, journal + ".copy")
        XCTAssertEqual(contents(journal + ".copy"), "here")
        XCTAssertEqual(contents(journal), "here")
    }
}

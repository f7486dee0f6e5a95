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

    /// Review AB's F4: a version whose copy name another copy had already (two made by one
    /// device in the same second) was renamed over it, which lost that one.
    func testAnotherCopyOfTheSameNameIsNotReplaced() throws {
        for code in [nil, EPERM] {
            let journal = try write("j", "here")
            _ = try write("j.copy", "earlier")
            _ = try write("j.copy-2", "earlier still")
            if let code { SystemCallFaults.inject("link", errno: code) }
            try Vault.keepAsCopy(journal, journal + ".copy")
            XCTAssertEqual(contents(journal + ".copy"), "earlier", "errno \(code ?? 0)")
            XCTAssertEqual(contents(journal + ".copy-2"), "earlier still", "errno \(code ?? 0)")
            XCTAssertEqual(contents(journal + ".copy-3"), "here", "errno \(code ?? 0)")
            for name in ["j", "j.copy", "j.copy-2", "j.copy-3"] { try? FileManager.default.removeItem(atPath: folder + "/" + name) }
        }
    }
}

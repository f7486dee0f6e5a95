import Glibc
import XCTest
@testable import NarniaSystem

/// `Processes.forkExec`: the descriptors a child gets.
final class ForkExecTests: XCTestCase {
    /// Review AU: each source went to a fixed staging number (200 + i) in turn, so a later
    /// source sitting on an earlier one's staging number was overwritten before it was moved:
    /// the child got /dev/null at descriptor 3 instead of the pipe.
    func testASourceOnAStagingNumberReachesItsTarget() throws {
        let (readEnd, writeEnd) = try Processes.makePipe()
        defer { close(readEnd) }
        XCTAssertEqual(dup2(writeEnd, 200), 200)
        close(writeEnd)
        let null = open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { close(null) }
        let arguments = ["/bin/sh", "-c", "echo reached >&3"]
        var cArguments = arguments.map { strdup($0) } + [nil]
        var environment: [UnsafeMutablePointer<CChar>?] = [nil]
        defer { cArguments.forEach { free($0) } }
        let pid = try Processes.forkExec(path: "/bin/sh", arguments: &cArguments, environment: &environment,
                                         sources: [null, 200], targets: [0, 3], firstFree: 4, group: 0, terminal: nil)
        close(200)
        var status: Int32 = 0
        XCTAssertEqual(waitpid(pid, &status, 0), pid)
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = read(readEnd, &buffer, buffer.count)
        XCTAssertEqual(String(decoding: buffer[0..<max(n, 0)], as: UTF8.self), "reached\n")
    }
}

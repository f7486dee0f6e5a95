import Glibc
import XCTest
@testable import NarniaSystem

/// `AlignedFileWriter`: whatever the appends, cuts and write mode, the finished file holds
/// exactly the bytes appended and not cut off.
final class AlignedFileWriterTests: XCTestCase {
    var folders: [String] = []
    /// Random bytes to append slices of.
    static let noise: [UInt8] = {
        var rng = SeededGenerator(seed: 42)
        return (0..<(AlignedFileWriter.capacity * 2)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
    }()

    override func tearDown() {
        for folder in folders { _ = Glibc.system("rm -rf '\(folder)'") }
        SystemCallFaults.reset()
    }

    /// A new folder under `parent` (the test's disk, or tmpfs, which takes no direct writes).
    func makeFolder(under parent: String) throws -> String {
        let folder = "\(parent)/narnia-aligned-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileSystem.makeDirectory(folder)
        folders.append(folder)
        return folder
    }

    func newWriter(in folder: String, direct: Bool = true) throws -> (AlignedFileWriter, String) {
        let path = folder + "/pack"
        let fd = try FileDescriptor.open(path, .writeOnly, options: [.create, .exclusive, .noFollow])
        return (AlignedFileWriter(fd, direct: direct), path)
    }

    func contents(_ path: String) throws -> [UInt8] {
        try FileDescriptor.open(path, .readOnly).readToEnd()
    }

    /// Random appends (some far larger than the buffer, some empty) and cuts, against a model.
    func checkRandomWrites(in folder: String, direct: Bool, seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let (writer, path) = try newWriter(in: folder, direct: direct)
        var model: [UInt8] = []
        for _ in 0..<40 {
            if Int.random(in: 0..<6, using: &rng) == 0 && !model.isEmpty {
                let end = Int.random(in: 0...model.count, using: &rng)
                try writer.cut(to: Int64(end))
                model.removeLast(model.count - end)
            } else {
                let count = [0, 1, 4095, 4096, 5000, 70_000, AlignedFileWriter.capacity + 3][Int.random(in: 0..<7, using: &rng)]
                let start = Int.random(in: 0..<(Self.noise.count - count), using: &rng)
                let bytes = Array(Self.noise[start..<(start + count)])
                if Bool.random(using: &rng) {
                    try bytes.withUnsafeBytes { try writer.append($0.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, count: count) }
                } else {
                    let split = count / 3
                    try bytes.withUnsafeBytes { b in
                        try writer.append(prefix: Array(b.prefix(split)), b.baseAddress.map { $0 + split } ?? UnsafeRawPointer(bitPattern: 1)!, count: count - split)
                    }
                }
                model += bytes
            }
            XCTAssertEqual(writer.length, Int64(model.count))
        }
        XCTAssertEqual(try writer.finish(), Int64(model.count))
        XCTAssertEqual(try contents(path), model, "seed \(seed), direct \(direct), in \(folder)")
    }

    func testTheFinishedFileHoldsWhatWasAppendedAndNotCut() throws {
        let disk = try makeFolder(under: "/tmp")
        for seed in 1...4 as ClosedRange<UInt64> {
            try checkRandomWrites(in: disk, direct: true, seed: seed)
            _ = unlink(disk + "/pack")
            try checkRandomWrites(in: disk, direct: false, seed: seed)
            _ = unlink(disk + "/pack")
        }
    }

    /// tmpfs took no direct writes before Linux 6.6; since, it takes them and copies anyway.
    func testOnTmpfsTooTheFinishedFileHoldsWhatWasAppended() throws {
        guard let shm = try? makeFolder(under: "/dev/shm") else { throw XCTSkip("no /dev/shm") }
        try checkRandomWrites(in: shm, direct: true, seed: 9)
    }

    /// A disk whose blocks are larger than the alignment refuses the direct write (`EINVAL`):
    /// it is made again as an ordinary one, and so is every later write.
    func testARefusedDirectWriteIsMadeAgainAsAnOrdinaryOne() throws {
        let disk = try makeFolder(under: "/tmp")
        let (writer, path) = try newWriter(in: disk)
        guard writer.isDirect else { throw XCTSkip("the test folder's file system takes no direct writes") }
        let bytes = (0..<(AlignedFileWriter.capacity + 100)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        SystemCallFaults.inject("write", errno: EINVAL)
        try bytes.withUnsafeBytes { try writer.append($0.baseAddress!, count: $0.count) }
        XCTAssertFalse(writer.isDirect)
        try writer.finish()
        XCTAssertEqual(try contents(path), bytes)
    }

    /// A cut below what reached the file takes it from the file; the writes after it, no
    /// longer aligned, are ordinary.
    func testACutIntoWrittenBytesTruncatesTheFile() throws {
        let disk = try makeFolder(under: "/tmp")
        let (writer, path) = try newWriter(in: disk)
        let bytes = (0..<(AlignedFileWriter.capacity * 2)).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try bytes.withUnsafeBytes { try writer.append($0.baseAddress!, count: $0.count) }
        try writer.cut(to: 1000)
        XCTAssertFalse(writer.isDirect)
        try bytes.withUnsafeBytes { try writer.append($0.baseAddress!, count: 5000) }
        XCTAssertEqual(try writer.finish(), 6000)
        XCTAssertEqual(try contents(path), Array(bytes.prefix(1000) + bytes.prefix(5000)))
    }
}

/// A small deterministic generator (SplitMix64), so that a failing case can be run again.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

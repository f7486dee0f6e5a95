import XCTest
@testable import NarniaKinds

/// The kind mapping, the zip-container hints, and libmagic on the first bytes of common formats.
/// (Whole real files of every type are checked end to end in integration/test_kinds.py.)
final class ClassifierTests: XCTestCase {
    func testKindOfMIME() {
        let expected: [(String, ItemKind)] = [
            ("image/jpeg", .photo), ("image/png", .photo), ("image/gif", .photo), ("image/webp", .photo),
            ("image/heic", .photo), ("image/heif", .photo), ("image/avif", .photo), ("image/tiff", .photo),
            ("image/bmp", .photo), ("image/x-ms-bmp", .photo),
            ("image/svg+xml", .document), ("image/svg", .document),
            ("video/mp4", .video), ("video/webm", .video), ("video/x-matroska", .video), ("video/quicktime", .video),
            ("text/plain", .document), ("text/csv", .document), ("text/markdown", .document), ("text/rtf", .document),
            ("text/x-c", .document), ("application/pdf", .document), ("application/rtf", .document),
            ("application/epub+zip", .document), ("application/msword", .document),
            ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", .document),
            ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", .document),
            ("application/vnd.openxmlformats-officedocument.presentationml.presentation", .document),
            ("application/vnd.oasis.opendocument.text", .document), ("application/vnd.oasis.opendocument.spreadsheet", .document),
            ("Application/PDF", .document),
            ("audio/mpeg", .other), ("audio/x-wav", .other), ("audio/flac", .other), ("audio/ogg", .other),
            ("application/zip", .other), ("application/gzip", .other), ("application/x-tar", .other),
            ("application/x-xz", .other), ("application/x-7z-compressed", .other), ("application/octet-stream", .other),
            ("application/x-executable", .other), ("application/x-empty", .other),
        ]
        for (mime, kind) in expected {
            XCTAssertEqual(Classifier.kind(ofMIME: mime), kind, mime)
        }
    }

    /// A zip local file header (stored, CRC left zero: neither libmagic nor the hints check it).
    private func entry(_ name: String, _ data: [UInt8] = [], descriptor: Bool = false) -> [UInt8] {
        func u16(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8 & 0xff)] }
        func u32(_ v: Int) -> [UInt8] { u16(v & 0xffff) + u16(v >> 16) }
        let nameBytes = Array(name.utf8)
        return [0x50, 0x4B, 0x03, 0x04] + u16(20) + u16(descriptor ? 8 : 0) + u16(0) + u16(0) + u16(0) + u32(0)
            + u32(data.count) + u32(data.count) + u16(nameBytes.count) + u16(0) + nameBytes + data
    }

    func testContainerHintsFromMimetypeEntry() {
        let odt = entry("mimetype", Array("application/vnd.oasis.opendocument.text".utf8)) + entry("content.xml", Array("<x/>".utf8))
        XCTAssertEqual(odt.withUnsafeBytes { ContainerHints.mimeType(ofZip: $0) }, "application/vnd.oasis.opendocument.text")
        let epub = entry("mimetype", Array("application/epub+zip\n".utf8)) + entry("META-INF/container.xml")
        XCTAssertEqual(epub.withUnsafeBytes { ContainerHints.mimeType(ofZip: $0) }, "application/epub+zip")
        let junk = entry("mimetype", Array("not a type".utf8))
        XCTAssertNil(junk.withUnsafeBytes { ContainerHints.mimeType(ofZip: $0) })
    }

    func testContainerHintsFromOOXMLParts() {
        let docx = entry("_rels/.rels", Array("<r/>".utf8)) + entry("docProps/app.xml") + entry("word/document.xml") + entry("[Content_Types].xml")
        XCTAssertEqual(docx.withUnsafeBytes { ContainerHints.mimeType(ofZip: $0) },
                       "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
        let xlsx = entry("docProps/core.xml") + entry("xl/workbook.xml")
        XCTAssertEqual(xlsx.withUnsafeBytes { ContainerHints.mimeType(ofZip: $0) },
                       "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet")
        let pptx = entry("ppt/presentation.xml")
        XCTAssertEqual(pptx.withUnsafeBytes { ContainerHints.mimeType(ofZip: $0) },
                       "application/vnd.openxmlformats-officedocument.presentationml.presentation")
        let plain = entry("notes.txt", Array("hello".utf8)) + entry("photos/a.jpg")
        XCTAssertNil(plain.withUnsafeBytes { ContainerHints.mimeType(ofZip: $0) })
        // Entries after one with a data descriptor cannot be reached from the headers.
        let streamed = entry("a.txt", descriptor: true) + entry("word/document.xml")
        XCTAssertNil(streamed.withUnsafeBytes { ContainerHints.mimeType(ofZip: $0) })
        // Truncated headers are not read past the end.
        XCTAssertNil(Array(docx.prefix(40)).withUnsafeBytes { ContainerHints.mimeType(ofZip: $0) })
    }

    func testClassifyCommonHeaders() throws {
        let classifier = try Classifier()
        func kind(_ bytes: [UInt8]) -> (String, ItemKind) {
            let r = bytes.withUnsafeBytes { classifier.classify($0) }
            return (r.mime, r.kind)
        }
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52,
                            0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0, 0x90, 0x77, 0x53, 0xDE]
        XCTAssertEqual(kind(png).1, .photo)
        XCTAssertEqual(kind(Array("GIF89a\u{1}\0\u{1}\0\0\0\0".utf8)).1, .photo)
        XCTAssertEqual(kind(Array("%PDF-1.4\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n".utf8)).0, "application/pdf")
        XCTAssertEqual(kind(Array("Dear diary,\nit rained all day.\n".utf8)).1, .document)
        XCTAssertEqual(kind(Array("{\\rtf1\\ansi Hello}".utf8)).1, .document)
        XCTAssertEqual(kind([]).1, .other)
        // A docx whose parts come in an order libmagic does not expect is still a document.
        let docx = entry("docProps/app.xml", Array("<a/>".utf8)) + entry("word/document.xml", Array("<w/>".utf8))
            + entry("[Content_Types].xml", Array("<t/>".utf8))
        XCTAssertEqual(kind(docx).0, "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
        // An ordinary zip stays an archive.
        XCTAssertEqual(kind(entry("notes.txt", Array("hello".utf8))).1, .other)
    }

    func testThePoolKeepsWhatTheHintsRead() {
        // A docx whose parts lie past the 64 KiB libmagic sees: the pool keeps 1 MiB of a
        // file that starts like a zip, so the hints still find the parts.
        let docx = entry("docProps/app.xml", [UInt8](repeating: 0x20, count: 100_000)) + entry("word/document.xml", Array("<w/>".utf8))
            + entry("[Content_Types].xml", Array("<t/>".utf8))
        XCTAssertEqual(docx.withUnsafeBytes { Classifier.bytesUsed(of: $0) }, docx.count)
        let pool = ClassifierPool()
        let answer = docx.withUnsafeBytes { pool.classifyLater($0) }
        XCTAssertEqual(answer().mime, "application/vnd.openxmlformats-officedocument.wordprocessingml.document")
        // Anything else keeps 64 KiB, all libmagic is shown.
        let text = [UInt8](repeating: 0x41, count: 200_000)
        XCTAssertEqual(text.withUnsafeBytes { Classifier.bytesUsed(of: $0) }, 64 << 10)
        XCTAssertEqual(text.withUnsafeBytes { pool.classifyLater($0) }().kind, .document)
    }

    func testAFullQueueHoldsTheCallerAndLosesNothing() {
        // More files than may wait, and more zip-like ones than may wait with 1 MiB each: the
        // caller is held back and let go, and every answer comes back.
        let pool = ClassifierPool()
        let docx = entry("docProps/app.xml", [UInt8](repeating: 0x20, count: 100_000)) + entry("word/document.xml")
        let text = Array("plain words\n".utf8)
        var answers: [() -> ContentType] = []
        for i in 0..<(ClassifierPool.maximumWaiting * 3) {
            let bytes = i % 10 == 0 ? docx : text
            answers.append(bytes.withUnsafeBytes { pool.classifyLater($0) })
        }
        for (i, answer) in answers.enumerated() {
            XCTAssertEqual(answer().kind, .document, "file \(i)")
        }
    }
}

/// What a zip container holds, read from the local file headers in its first bytes.
///
/// libmagic names most zip-based formats itself, but only when the archive's entries come in
/// the order it expects (`mimetype` first for OpenDocument and EPUB, `[Content_Types].xml`
/// then the `word/`, `xl/` or `ppt/` part for OOXML). Files written by other tools order their
/// entries differently and come out as `application/zip`; this scan names them from the
/// entries instead. Only the headers in the given bytes are read, never the central directory
/// at the end of the file, since classification sees the first chunk only.
enum ContainerHints {
    /// The MIME type a zip container's entries point to, or nil when they name no known format.
    static func mimeType(ofZip bytes: UnsafeRawBufferPointer) -> String? {
        var names: [String] = []
        var offset = 0
        while offset + 30 <= bytes.count, names.count < 64,
              bytes[offset] == 0x50, bytes[offset + 1] == 0x4B, bytes[offset + 2] == 0x03, bytes[offset + 3] == 0x04 {
            let flags = u16(bytes, offset + 6)
            let method = u16(bytes, offset + 8)
            let compressed = Int(u32(bytes, offset + 18))
            let nameLength = Int(u16(bytes, offset + 26))
            let extraLength = Int(u16(bytes, offset + 28))
            let nameStart = offset + 30
            guard nameStart + nameLength <= bytes.count else { break }
            let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[nameStart..<nameStart + nameLength]), as: UTF8.self)
            let dataStart = nameStart + nameLength + extraLength
            // OpenDocument and EPUB: an uncompressed `mimetype` entry holds the type itself.
            if name == "mimetype", method == 0, compressed > 0, compressed < 128, dataStart + compressed <= bytes.count {
                let declared = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[dataStart..<dataStart + compressed]), as: UTF8.self)
                    .trimmingASCIISpace()
                if isPlausibleMIME(declared) { return declared }
            }
            names.append(name)
            // A data descriptor (flag bit 3) leaves the size unknown here: stop at this entry.
            if flags & 0x08 != 0 { break }
            offset = dataStart + compressed
        }
        return mimeType(ofEntries: names)
    }

    /// The format named by a list of entry names (OOXML parts, an EPUB container).
    static func mimeType(ofEntries names: [String]) -> String? {
        let ooxml = "application/vnd.openxmlformats-officedocument."
        for name in names {
            if name.hasPrefix("word/") { return ooxml + "wordprocessingml.document" }
            if name.hasPrefix("xl/") { return ooxml + "spreadsheetml.sheet" }
            if name.hasPrefix("ppt/") { return ooxml + "presentationml.presentation" }
        }
        if names.contains("META-INF/container.xml") && names.contains(where: { $0.hasSuffix(".opf") || $0.hasPrefix("OEBPS/") }) {
            return "application/epub+zip"
        }
        return nil
    }

    private static func isPlausibleMIME(_ s: String) -> Bool {
        let parts = s.split(separator: "/", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty
            && s.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value < 0x7F }
    }

    private static func u16(_ b: UnsafeRawBufferPointer, _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    private static func u32(_ b: UnsafeRawBufferPointer, _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
}

private extension String {
    /// The string without ASCII spaces, tabs and line ends at either end.
    func trimmingASCIISpace() -> String {
        let space: Set<Unicode.Scalar> = [" ", "\t", "\r", "\n"]
        var scalars = Substring(self).unicodeScalars
        while let f = scalars.first, space.contains(f) { scalars.removeFirst() }
        while let l = scalars.last, space.contains(l) { scalars.removeLast() }
        return String(scalars)
    }
}

internal import CMagic

/// Errors of the libmagic wrapper; the text is copied from `magic_error()` at once.
public struct MagicError: Error, CustomStringConvertible {
    public let description: String
}

/// Names an item's MIME type and kind from its first bytes, with libmagic.
///
/// One owner of a `magic_t` handle (`magic_open` … `magic_close`); not thread-safe.
public final class Classifier {
    private let cookie: OpaquePointer

    /// Opens libmagic with MIME-type output and loads the system database (`magic_load`).
    /// - Throws: `MagicError` when the database cannot be loaded.
    public init() throws {
        guard let c = magic_open(MAGIC_MIME_TYPE | MAGIC_ERROR) else { throw MagicError(description: "magic_open failed") }
        if magic_load(c, nil) != 0 {
            let message = magic_error(c).map { String(cString: $0) } ?? "magic_load failed"
            magic_close(c)
            throw MagicError(description: message)
        }
        cookie = c
    }

    deinit { magic_close(cookie) }

    /// The MIME type of `bytes` (`magic_buffer`), `application/octet-stream` when unknown.
    public func mimeType(of bytes: UnsafeRawBufferPointer) -> String {
        _ = magic_setflags(cookie, MAGIC_MIME_TYPE | MAGIC_ERROR)
        guard let base = bytes.baseAddress, bytes.count > 0 else { return "application/x-empty" }
        guard let result = magic_buffer(cookie, base, bytes.count) else { return "application/octet-stream" }
        return String(cString: result)
    }

    /// libmagic's human description of `bytes` (`magic_buffer` without MIME flags).
    public func describe(_ bytes: UnsafeRawBufferPointer) -> String {
        _ = magic_setflags(cookie, MAGIC_NONE)
        defer { _ = magic_setflags(cookie, MAGIC_MIME_TYPE | MAGIC_ERROR) }
        guard let base = bytes.baseAddress, bytes.count > 0 else { return "empty" }
        guard let result = magic_buffer(cookie, base, bytes.count) else { return "data" }
        return String(cString: result)
    }

    /// The MIME type and kind of content starting with `bytes`. libmagic sees the first 64 KiB
    /// (its text tests scan whatever they are given, and more changes no answer we use); the
    /// zip hints read up to the first MiB.
    ///
    /// libmagic's answer is refined where it is known to fall short: a zip container whose
    /// entries are not in the order libmagic expects (OOXML or OpenDocument written by other
    /// tools) is named from its entries (`ContainerHints`).
    public func classify(_ bytes: UnsafeRawBufferPointer) -> (mime: String, kind: ItemKind) {
        let head = UnsafeRawBufferPointer(rebasing: bytes.prefix(Self.zipHintWindow))
        var mime = mimeType(of: UnsafeRawBufferPointer(rebasing: head.prefix(Self.magicWindow)))
        if Self.mayBeMislabelledZip(mime), Self.startsLikeZip(head), let inner = ContainerHints.mimeType(ofZip: head) {
            mime = inner
        }
        return (mime, Self.kind(ofMIME: mime))
    }

    /// What libmagic is shown of a file.
    static let magicWindow = 64 << 10
    /// What the zip hints read of a file that starts like a zip.
    static let zipHintWindow = 1 << 20

    /// How many of the first bytes `bytes` of a file `classify` reads: 64 KiB, or 1 MiB when
    /// they start like a zip (the hints may look for entries further in).
    public static func bytesUsed(of bytes: UnsafeRawBufferPointer) -> Int {
        min(bytes.count, startsLikeZip(bytes) ? zipHintWindow : magicWindow)
    }

    static func startsLikeZip(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.starts(with: [0x50, 0x4B, 0x03, 0x04])
    }

    /// MIME types libmagic gives zip-based documents whose entries it could not place.
    static func mayBeMislabelledZip(_ mime: String) -> Bool {
        mime == "application/zip" || mime == "application/octet-stream" || mime == "application/x-zip-compressed"
            || mime == "application/java-archive"
    }

    /// True for the MIME types that are text to a person: `open` pages them, and `cat` writes
    /// them to a terminal without `--force`. An empty file counts as text.
    public static func isText(mime: String) -> Bool {
        mime.hasPrefix("text/") || ["application/x-empty", "application/json", "application/xml", "application/javascript",
                                    "application/x-ndjson", "application/csv", "image/svg+xml"].contains(mime)
    }

    /// The kind for a MIME type (INTERFACE.md, ls -l): raster images are photos; `video/*` are videos;
    /// texts, PDF, PostScript, office and OpenDocument files, ebooks and SVG are documents;
    /// everything else, audio and archives included, is other.
    public static func kind(ofMIME rawMIME: String) -> ItemKind {
        let mime = rawMIME.lowercased()
        if vectorImages.contains(mime) { return .document }
        if mime.hasPrefix("image/") { return .photo }
        if mime.hasPrefix("video/") { return .video }
        if mime.hasPrefix("text/") { return .document }
        if documents.contains(mime) { return .document }
        if documentPrefixes.contains(where: { mime.hasPrefix($0) }) { return .document }
        return .other
    }

    /// `image/*` types that are drawings or pages rather than pictures.
    static let vectorImages: Set<String> = ["image/svg+xml", "image/svg", "image/x-eps", "image/vnd.djvu", "image/vnd.djvu+multipage"]

    /// Document types outside `text/*`, by exact name.
    static let documents: Set<String> = [
        "application/pdf", "application/postscript", "application/rtf", "application/x-rtf",
        "application/epub+zip", "application/x-mobipocket-ebook", "application/vnd.amazon.ebook",
        "application/x-fictionbook+xml", "application/msword", "application/vnd.ms-excel",
        "application/vnd.ms-powerpoint", "application/vnd.ms-word", "application/vnd.ms-office",
        "application/json", "application/xml", "application/javascript", "application/x-ndjson",
        "application/csv", "application/x-tex", "application/x-latex", "application/x-ipynb+json",
    ]

    /// Families of document types: OpenDocument, OOXML and the older office formats.
    static let documentPrefixes = [
        "application/vnd.oasis.opendocument.", "application/vnd.openxmlformats-officedocument.",
        "application/vnd.ms-word.", "application/vnd.ms-excel.", "application/vnd.ms-powerpoint.",
        "application/vnd.sun.xml.", "application/x-abiword",
    ]
}

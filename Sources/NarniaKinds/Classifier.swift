internal import CMagic
import NarniaStore

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

    /// The MIME type and kind of content starting with `bytes`.
    public func classify(_ bytes: UnsafeRawBufferPointer) -> (mime: String, kind: ItemKind) {
        let mime = mimeType(of: UnsafeRawBufferPointer(rebasing: bytes.prefix(1 << 20)))
        return (mime, Self.kind(ofMIME: mime))
    }

    /// The kind for a MIME type (BRIEF §5): raster images are photos, `video/*` videos, texts,
    /// PDFs, office and OpenDocument files, EPUB and SVG documents; everything else is other.
    public static func kind(ofMIME mime: String) -> ItemKind {
        if mime == "image/svg+xml" { return .document }
        if mime.hasPrefix("image/") { return .photo }
        if mime.hasPrefix("video/") { return .video }
        if mime.hasPrefix("text/") { return .document }
        let documents: Set<String> = [
            "application/pdf", "application/rtf", "application/epub+zip", "application/msword",
            "application/vnd.ms-excel", "application/vnd.ms-powerpoint", "application/json",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            "application/vnd.openxmlformats-officedocument.presentationml.presentation",
            "application/vnd.oasis.opendocument.text", "application/vnd.oasis.opendocument.spreadsheet",
            "application/vnd.oasis.opendocument.presentation", "application/vnd.oasis.opendocument.graphics",
            "application/postscript", "application/x-mobipocket-ebook",
        ]
        return documents.contains(mime) ? .document : .other
    }
}

import NarniaKinds

/// The encrypted content of a file item: where it is, how long it is, and what it is.
public struct ContentInfo: Sendable, Equatable {
    /// The content object's identifier; it names the object file and is bound into every
    /// chunk's associated data.
    package var objectID: Identifier
    /// The slot of the item's random key in the vault's `KeyTable`.
    var keySlot: Int
    /// The plaintext size in bytes.
    public var size: UInt64
    /// The MIME type libmagic gave at import.
    public var mime: String
    /// The kind derived from the MIME type.
    public var kind: ItemKind
    /// Where the content's sealed segment starts in the object file: 0 unless the object is a
    /// pack holding the small files of one import batch (docs/FORMAT.md, "Packs").
    package var offset: UInt64
    /// The object file's exact length: the segment's own length unless the object is a pack.
    package var objectLength: Int64

    init(objectID: Identifier, keySlot: Int, size: UInt64, mime: String, kind: ItemKind,
         offset: UInt64 = 0, objectLength: Int64? = nil) {
        self.objectID = objectID
        self.keySlot = keySlot
        self.size = size
        self.mime = mime
        self.kind = kind
        self.offset = offset
        self.objectLength = objectLength ?? ContentFormat.objectLength(size: size)
    }

    /// True when the object holds other contents besides this one (a pack).
    var isPacked: Bool { offset != 0 || objectLength != ContentFormat.objectLength(size: size) }
}

/// One entry of the folder tree: a folder or a file.
public struct Item: Sendable, Equatable {
    /// A random identifier that never changes, even when the item is renamed or moved.
    public let id: Identifier
    /// The folder holding the item (`Identifier.root` for top-level items).
    public var parent: Identifier
    /// The NFC name, unique within the parent.
    public var name: String
    /// Creation time, nanoseconds since the Unix epoch.
    public var created: Int64
    /// Last modification time, nanoseconds since the Unix epoch.
    public var modified: Int64
    /// The content, for files; nil for folders.
    public var content: ContentInfo?

    /// True for a folder.
    public var isFolder: Bool { content == nil }
    /// The item's kind (`.folder` for folders).
    public var kind: ItemKind { content?.kind ?? .folder }
    /// The content size (0 for folders).
    public var size: UInt64 { content?.size ?? 0 }
}

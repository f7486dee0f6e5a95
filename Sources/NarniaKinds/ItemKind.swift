/// What kind of thing an item is, for listing, `find -type` and viewing (INTERFACE.md, ls -l).
/// The raw values are stored in the journal: never renumber.
public enum ItemKind: UInt8, Sendable, CaseIterable {
    case folder = 0
    case photo = 1
    case video = 2
    case document = 3
    case other = 4

    /// The lower-case name used in listings, JSON and `find -type`.
    public var name: String {
        switch self {
        case .folder: return "folder"
        case .photo: return "photo"
        case .video: return "video"
        case .document: return "document"
        case .other: return "other"
        }
    }

    /// Parses a name as `name` prints it.
    public init?(name: String) {
        guard let k = ItemKind.allCases.first(where: { $0.name == name }) else { return nil }
        self = k
    }
}

/// What classification says of a file: its MIME type and the kind derived from it.
public typealias ContentType = (mime: String, kind: ItemKind)

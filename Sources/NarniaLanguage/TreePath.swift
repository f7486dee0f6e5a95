/// An absolute path in a tree of named folders without links (the vault's folders, the
/// Wardrobe's tabs), as its list of names from the root.
///
/// With no links, `..` can be resolved by text alone: `resolve(_:relativeTo:)` gives the one
/// folder or item a path names. Components are kept as given; the vault's store normalises names
/// to NFC, and Swift's `String` equality already treats NFC and NFD spellings as equal.
public struct TreePath: Hashable, Sendable, CustomStringConvertible {
    /// The names from the root down; empty for the root.
    public var components: [String]

    /// The root folder, `/`.
    public static let root = TreePath(components: [])

    /// The path with these names from the root. Each should be a valid name (no `/`, not `.`
    /// or `..`); `resolve(_:relativeTo:)` is the way to read user input.
    public init(components: [String]) {
        self.components = components
    }

    /// Resolves `text` as typed by a user: absolute if it starts with `/`, otherwise relative
    /// to `cwd`. Empty components (repeated or trailing slashes) and `.` are dropped, `..` goes
    /// up one level and stays at the root when already there. An empty text gives `cwd`.
    public static func resolve(_ text: String, relativeTo cwd: TreePath) -> TreePath {
        var result = text.unicodeScalars.first == "/" ? TreePath.root : cwd
        // Split by scalar: a name beginning with a combining mark joins its `/` in one
        // Character, and `u/\u{301}dir/..` climbed two folders (review BG-12).
        for scalars in text.unicodeScalars.split(separator: "/") {
            switch String(String.UnicodeScalarView(scalars)) {
            case ".": continue
            case "..": result = result.parent
            case let name: result.components.append(name)
            }
        }
        return result
    }

    /// `/` for the root, else `/a/b`.
    public var description: String {
        "/" + components.joined(separator: "/")
    }

    /// Whether this is the root folder.
    public var isRoot: Bool { components.isEmpty }

    /// The folder holding this path; the root's parent is the root.
    public var parent: TreePath {
        TreePath(components: Array(components.dropLast()))
    }

    /// The last name of the path; `nil` for the root.
    public var lastComponent: String? { components.last }

    /// This path with `name` added below it.
    public func appending(_ name: String) -> TreePath {
        TreePath(components: components + [name])
    }

    /// This path with several names added below it.
    public func appending(contentsOf names: [String]) -> TreePath {
        TreePath(components: components + names)
    }

    /// Whether `other` lies strictly below this path (a path is not its own ancestor). The
    /// root is an ancestor of every other path.
    public func isAncestor(of other: TreePath) -> Bool {
        other.components.count > components.count
            && zip(components, other.components).allSatisfy { $0 == $1 }
    }

    /// Whether `other` is this path or lies below it.
    public func isSelfOrAncestor(of other: TreePath) -> Bool {
        self == other || isAncestor(of: other)
    }
}

/// A path word split at its slashes, each piece a literal name, a glob, or `..`, so that a
/// command can expand `/photos/*/a?.jpg` one component at a time. Works for vault and host paths.
public struct PathPattern: Hashable, Sendable, CustomStringConvertible {
    /// One step of a path pattern.
    public enum Component: Hashable, Sendable {
        /// `..`: up one level.
        case parent
        /// A name without wildcards (escapes removed).
        case name(String)
        /// A name with wildcards.
        case glob(GlobPattern)
    }

    /// Whether the word started with `/`.
    public var isAbsolute: Bool
    /// The steps in order; `.` and empty pieces (`a//b`) are left out.
    public var components: [Component]
    /// Whether the word ended with `/`, so that it must name a folder.
    public var hasTrailingSlash: Bool
    /// The word's text, quotes removed.
    public var text: String

    /// Splits `word` at its slashes. A bare or quoted `.`/`..` means the same: neither can be a
    /// name, so there is nothing else for a quoted one to mean.
    public init(_ word: Word) {
        text = word.text
        isAbsolute = word.text.unicodeScalars.first == "/"   // not by Character: `/\u{301}x` (BG-12)
        // By scalar: a Prepend character joins the `/` after it in one Character (BI-1).
        hasTrailingSlash = word.text.unicodeScalars.count > 1 && word.text.unicodeScalars.last == "/"
        components = word.split().compactMap { piece in
            switch piece.text {
            case "", ".": return nil
            case "..": return .parent
            default:
                let pattern = GlobPattern(piece)
                return pattern.literalText.map(Component.name) ?? .glob(pattern)
            }
        }
    }

    public var description: String { text }

    /// Whether any component is a glob.
    public var hasWildcards: Bool {
        components.contains { if case .glob = $0 { true } else { false } }
    }

    /// Expands the pattern in the vault, relative to `cwd`.
    ///
    /// With no wildcard, the one resolved path is returned without asking `children`, whether
    /// or not it exists, so that the command reports what is missing. With wildcards, every
    /// result exists: `children(folder)` must return the names in `folder`, or `nil` when it is
    /// not a folder or does not exist. Glob matches at each level are sorted by the byte order
    /// of their UTF-8; an empty result means "no match".
    ///
    /// - Throws: whatever `children` throws.
    public func expand(relativeTo cwd: TreePath,
                       children: (TreePath) throws -> [String]?) rethrows -> [TreePath] {
        let start = isAbsolute ? TreePath.root : cwd
        guard hasWildcards else {
            return [components.reduce(start) { path, component in
                switch component {
                case .parent: path.parent
                case .name(let name): path.appending(name)
                case .glob: path   // unreachable: no wildcards
                }
            }]
        }
        var current = [start]
        for component in components {
            var next: [TreePath] = []
            for path in current {
                switch component {
                case .parent:
                    if try children(path) != nil { next.append(path.parent) }
                case .name(let name):
                    // The name as spelled, byte for byte, before one Swift's == takes for it (NFC
                    // and NFD): host folders may hold both (review EP-1).
                    if let names = try children(path),
                       let stored = names.first(where: { $0.utf8.elementsEqual(name.utf8) }) ?? names.first(where: { $0 == name }) {
                        next.append(path.appending(stored))
                    }
                case .glob(let pattern):
                    guard let names = try children(path) else { continue }
                    let matches = names.filter(pattern.matches).sorted(by: utf8Order)
                    next.append(contentsOf: matches.map(path.appending))
                }
            }
            // Paths met twice (`*/..`) are one, byte for byte: NFC and NFD twins on the host,
            // equal to Swift's ==, are two files (review EP-1: one of them was left out, without a
            // word, and `import --move` kept it on the host).
            var seen = Set<[[UInt8]]>()
            current = next.filter { seen.insert($0.components.map { Array($0.utf8) }).inserted }
        }
        if hasTrailingSlash {
            current = try current.filter { try children($0) != nil }
        }
        return current
    }
}

/// Whether `a` sorts before `b` in the byte order of their UTF-8: the order of `ls` in the C
/// locale, and of the vault's listings.
///
/// Compared as two byte buffers: listings sort thousands of names, and stepping through two
/// `UTF8View`s one byte at a time was a quarter of an `ls` of 10,000 items.
@inlinable
public func utf8Order(_ a: String, _ b: String) -> Bool {
    let bytewise = a.utf8.withContiguousStorageIfAvailable { x in
        b.utf8.withContiguousStorageIfAvailable { y in
            for i in 0..<min(x.count, y.count) where x[i] != y[i] { return x[i] < y[i] }
            return x.count < y.count
        }
    }
    return (bytewise ?? nil) ?? a.utf8.lexicographicallyPrecedes(b.utf8)
}

import NarniaKinds
import NarniaLanguage
import Glibc
import NarniaStore

/// How listings look on a terminal: colour (unless `NO_COLOR` is set and not empty, as
/// no-color.org asks, or `TERM` is `dumb`) and type glyphs (when the locale's character set is
/// UTF-8). Output that is not a terminal never uses either: scripts read plain names.
public struct TerminalStyle: Sendable, Equatable {
    /// Whether SGR colour escapes may be written.
    public var colour: Bool
    /// Whether a glyph (an emoji two columns wide) precedes each name in the `ls` grid.
    public var glyphs: Bool

    /// A style with these two choices.
    public init(colour: Bool, glyphs: Bool) {
        self.colour = colour
        self.glyphs = glyphs
    }

    /// The encoding of the user's locale, as the program found it at its start (set once,
    /// before it may change its own `LC_CTYPE` to read keys as UTF-8): glyphs need a UTF-8
    /// locale (review BP-6). Nil: the current locale's.
    nonisolated(unsafe) public static var localeCodeset: String?

    /// The style the environment asks for, read afresh each time (cheap).
    public static func current() -> TerminalStyle {
        let noColour = getenv("NO_COLOR").map { $0.pointee != 0 } ?? false
        let dumb = getenv("TERM").map { String(cString: $0) == "dumb" } ?? false
        let codeset = localeCodeset ?? nl_langinfo(nl_item(CODESET)).map { String(cString: $0) } ?? ""
        return TerminalStyle(colour: !noColour && !dumb, glyphs: codeset == "UTF-8")
    }

    /// Plain text: no colour, no glyphs.
    public static let plain = TerminalStyle(colour: false, glyphs: false)

    /// The glyph of a kind: folder 📁, photo 📷, video 🎬, document 📄, other 📦. Each has
    /// emoji presentation by default, so terminals draw it two columns wide, as
    /// `displayWidth(_:)` counts it.
    public static func glyph(_ kind: ItemKind) -> String {
        switch kind {
        case .folder: return "\u{1F4C1}"
        case .photo: return "\u{1F4F7}"
        case .video: return "\u{1F3AC}"
        case .document: return "\u{1F4C4}"
        case .other: return "\u{1F4E6}"
        }
    }

    /// The SGR parameters of a kind, after GNU `ls`'s defaults where it has one: folders bold
    /// blue, photos magenta, videos cyan, documents yellow, other items uncoloured.
    public static func colourCode(_ kind: ItemKind) -> String? {
        switch kind {
        case .folder: return "1;34"
        case .photo: return "35"
        case .video: return "36"
        case .document: return "33"
        case .other: return nil
        }
    }

    /// `text` in the colour of `kind`, when colour is on.
    public func paint(_ text: String, _ kind: ItemKind) -> String {
        guard colour, let code = Self.colourCode(kind) else { return text }
        return "\u{1B}[\(code)m\(text)\u{1B}[0m"
    }

    /// A name as the `ls` grid and `tree` show it on a terminal: made terminal-safe, coloured by
    /// kind, a folder followed by `/`, and (in the grid) preceded by its kind's glyph.
    public func decorate(_ name: String, kind: ItemKind, glyph: Bool) -> String {
        let safe = terminalSafe(name) + (kind == .folder ? "/" : "")
        let painted = paint(safe, kind)
        return glyph && glyphs ? Self.glyph(kind) + " " + painted : painted
    }
}

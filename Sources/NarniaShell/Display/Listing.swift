import NarniaKinds
import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaStore

/// What the terminal forms of `ls` and `tree` need to know of one item.
public struct ListedItem: Sendable, Equatable {
    /// The name to show (not yet made terminal-safe).
    public var name: String
    public var kind: ItemKind
    /// Content size in bytes; nil for a folder.
    public var size: UInt64?
    /// Modification time, nanoseconds since the epoch.
    public var modified: Int64
    /// False for a file whose content has not arrived on this device.
    public var here: Bool
    /// True for a file that came through the inbox (`narnia drop`).
    public var dropped: Bool

    public init(name: String, kind: ItemKind, size: UInt64?, modified: Int64, here: Bool = true, dropped: Bool = false) {
        self.name = name
        self.kind = kind
        self.size = size
        self.modified = modified
        self.here = here
        self.dropped = dropped
    }

    /// `item` as listed, shown under `shownAs` (the `#N` of `hide-names`) when given.
    init(_ item: Item, shownAs: String? = nil, here: Bool = true, dropped: Bool = false) {
        self.init(name: shownAs ?? item.name, kind: item.kind, size: item.isFolder ? nil : item.size, modified: item.modified,
                  here: here, dropped: dropped)
    }

    /// What `ls -l` adds after the name of a file not on this device.
    public static let notHereMark = " (not on this device)"
    /// What `ls -l` adds after the name of a file that came through the inbox.
    public static let droppedMark = " (dropped)"

    /// The marks `ls -l` adds after the name.
    static func marks(here: Bool, dropped: Bool) -> String {
        (dropped ? droppedMark : "") + (here ? "" : notHereMark)
    }

    /// `shown`, a name already escaped for where it goes, as `ls -l` writes it before the
    /// marks: blanks at its end, and a blank before a mark's words it ends in, are escaped
    /// (`\x20`, `\xa0`, `\u{2007}` in scripts, `?` on a terminal), so that a line ends in
    /// a mark only when the listing put it there (review EC-1: a file named
    /// `fake.txt (dropped)` listed as a drop; EE-2: so did `fake.txt\u{A0}(dropped)` and
    /// `fake.txt (dropped) `).
    static func nameBeforeMarks(_ shown: String, onTerminal: Bool) -> String {
        func escaped(_ blank: Unicode.Scalar) -> String { onTerminal ? "?" : escapedForScripts(blank) }
        // Spaces, and the Braille blank, drawn as an empty cell though no space (review EG-3;
        // the Hangul fillers, also drawn so, are escaped in names already: `isInvisibleInName`).
        func isBlank(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.isWhitespace || scalar.value == 0x2800 }
        var scalars = Array(shown.unicodeScalars)
        var tail = ""
        while let last = scalars.last, isBlank(last) {
            tail = escaped(scalars.removeLast()) + tail
        }
        for mark in [droppedMark, notHereMark] {
            let words = Array(mark.unicodeScalars.dropFirst())
            if scalars.count > words.count, scalars.suffix(words.count).elementsEqual(words),
               isBlank(scalars[scalars.count - words.count - 1]) {
                scalars.removeLast(words.count)
                tail = escaped(scalars.removeLast()) + String(String.UnicodeScalarView(words)) + tail
                break
            }
        }
        return tail.isEmpty ? shown : String(String.UnicodeScalarView(scalars)) + tail
    }
}

/// The terminal forms of listings. Output that is not a terminal keeps the stable forms of
/// docs/INTERFACE.md, written by the commands themselves.
public enum TerminalListing {
    /// `ls` on a terminal: names in columns sized to `width` (as `ls -C`), each with its kind's
    /// glyph and colour, folders ending in `/`.
    public static func grid(_ items: [ListedItem], width: Int, style: TerminalStyle) -> [String] {
        layoutColumns(items.map { style.decorate($0.name, kind: $0.kind, glyph: true) }, width: width)
    }

    /// `ls -l` on a terminal: `KIND SIZE DATE NAME` with human sizes (`1.5M`), dates as
    /// coreutils prints them (`Nov 29 17:25` within six months, else `Nov 29  2024`), and the
    /// name coloured by kind. `now` is in nanoseconds since the epoch.
    public static func long(_ items: [ListedItem], now: Int64, style: TerminalStyle) -> [String] {
        let sizes = items.map { $0.size.map(humanSize) ?? "-" }
        let width = sizes.map(\.count).max() ?? 1
        return zip(items, sizes).map { item, size in
            let kind = item.kind.name.padding(toLength: 8, withPad: " ", startingAt: 0)
            let pad = String(repeating: " ", count: width - size.count)
            let name = ListedItem.nameBeforeMarks(terminalSafe(item.name), onTerminal: true)
            return "\(kind) \(pad)\(size) \(coreutilsDate(item.modified, now: now)) \(style.paint(name, item.kind))"
                + ListedItem.marks(here: item.here, dropped: item.dropped)
        }
    }

    /// A date as `ls -l` prints it in the C locale: `%b %e %H:%M` for times within the last six
    /// months (and not in the future), else `%b %e  %Y`. Both are 12 columns wide.
    public static func coreutilsDate(_ nanoseconds: Int64, now: Int64) -> String {
        let sixMonths: Int64 = 31_556_952 / 2 * 1_000_000_000    // half a Gregorian year, as coreutils
        let recent = nanoseconds <= now && Nanoseconds.difference(now, nanoseconds) < sixMonths
        var t = time_t(Nanoseconds.seconds(nanoseconds))
        var parts = tm()
        localtime_r(&t, &parts)
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        let month = months[Int(max(0, min(11, parts.tm_mon)))]
        let day = parts.tm_mday < 10 ? " \(parts.tm_mday)" : "\(parts.tm_mday)"
        if recent {
            return "\(month) \(day) \(String(format2: Int(parts.tm_hour))):\(String(format2: Int(parts.tm_min)))"
        }
        let year = "\(parts.tm_year + 1900)"
        return "\(month) \(day) " + String(repeating: " ", count: max(0, 5 - year.count)) + year
    }

    /// One line of `tree` on a terminal: the box-drawing `prefix`, then the name made
    /// terminal-safe and coloured by kind, folders ending in `/`.
    public static func treeLine(prefix: String, _ item: ListedItem, style: TerminalStyle) -> String {
        prefix + style.decorate(item.name, kind: item.kind, glyph: false)
    }

    /// The current time in nanoseconds since the epoch.
    public static func now() -> Int64 { SystemClock.nowNanoseconds() }
}

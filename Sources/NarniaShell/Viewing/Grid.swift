import NarniaKinds
import NarniaLanguage
import Glibc
import NarniaSystem
import NarniaCrypto
import NarniaStore

/// The thumbnail grid of `ls -g` (and of plain `ls` on a terminal with `set grid on`).
///
/// Photos are drawn as small chafa thumbnails; videos as a poster frame from about one second
/// in (ffmpeg reading a memfd), badged with a play glyph; documents, other items and folders
/// as generic icons with their names, so their content cannot be read at a glance. Thumbnails
/// are kept in a `ThumbnailStore` so that a folder is decrypted and decoded once.
enum Grid {
    /// Thumbnail size in terminal cells, and the gap between cells.
    static let thumbnailWidth = 16
    static let thumbnailHeight = 8
    static let gap = 2

    /// Whether an `ls` with these flags draws the grid: `-g`, or `set grid on` for a plain
    /// `ls` on a terminal.
    static func wanted(_ s: Session, _ a: ParsedArguments) -> Bool {
        if a.has("-g") { return true }
        return s.out.isTerminal && !["-l", "--json", "-R", "-1"].contains(where: a.has) && ViewingPreferences(s).grid
    }

    /// `ls -g [-a] [PATH...]` and `grid [-a] [PATH...]`: files named on the command line in
    /// one grid, then each folder's items, with `PATH:` headers when there are several.
    static func ls(_ s: Session, _ a: ParsedArguments) throws {
        let showHidden = a.has("-a")
        let (files, folders, failed) = try Browse.listingTargets(s, a)
        // Files of several folders (`ls -g /*/*.jpg`) are drawn under their folder's header: a
        // caption has no room for a path, and bare names would not say which is which.
        let fileFolders = Dictionary(grouping: files, by: \.0.parent)
        if fileFolders.count > 1 {
            for (i, folder) in fileFolders.keys.sorted(by: { utf8Order($0.description, $1.description) }).enumerated() {
                if i > 0 { s.out.line("") }
                s.out.line("\(s.shown(folder, on: s.out)):")
                render(s, Browse.ordered(fileFolders[folder]!.map(\.1), a))
            }
        } else if !files.isEmpty {
            render(s, Browse.ordered(files.map(\.1), a))
        }
        for (i, (path, id)) in folders.enumerated() {
            if folders.count + files.count > 1 {
                if i > 0 || !files.isEmpty { s.out.line("") }
                s.out.line("\(s.shown(path, on: s.out)):")
            }
            let children = Browse.ordered(s.vault.children(of: id), a)
                .filter { showHidden || !$0.name.hasPrefix(".") }
            render(s, children)
        }
        if failed { throw Reported() }
    }

    /// Draws `items` as a grid as wide as the terminal (80 columns off a terminal).
    static func render(_ s: Session, _ items: [Item]) {
        guard !items.isEmpty else { return }
        let width = s.out.isTerminal ? TerminalSize.current().columns : 80
        let cell = thumbnailWidth + gap
        let perRow = max(1, (width + gap) / cell)
        let colours = s.out.isTerminal ? ColourMode.current : .none   // never colour codes into a pipe
        let store = VaultThumbnailStore(vault: s.vault)
        defer { store.flush() }
        let maker = ThumbnailMaker(session: s, colours: colours, store: store)
        for (r, start) in stride(from: 0, to: items.count, by: perRow).enumerated() {
            let row = Array(items[start..<min(start + perRow, items.count)])
            if r > 0 { s.out.line("") }
            let pictures = row.map { maker.thumbnail(for: $0) }
            for line in 0..<thumbnailHeight {
                var text = ""
                for (i, picture) in pictures.enumerated() {
                    if i > 0 { text += String(repeating: " ", count: gap) }
                    text += picture[line]
                }
                s.out.styledLine(trimRight(text))
            }
            var labels = ""
            for (i, item) in row.enumerated() {
                if i > 0 { labels += String(repeating: " ", count: gap) }
                labels += fit(label(for: item, in: s), width: thumbnailWidth)
            }
            s.out.styledLine(trimRight(labels))
        }
        s.out.flush()
    }

    /// The caption under a thumbnail: the name (a play glyph before a video's, `/` after a
    /// folder's), or the masked `#N` label.
    static func label(for item: Item, in s: Session) -> String {
        if HiddenNames.active(s) { return HiddenNames.label(of: item, in: s.vault) }
        let name = terminalSafe(item.name)
        switch item.kind {
        case .video: return "▶ " + name
        case .folder: return name + "/"
        default: return name
        }
    }

    /// `text` cut (with `…`) or padded with spaces to exactly `width` columns.
    static func fit(_ text: String, width: Int) -> String {
        var result = ""
        var used = 0
        for character in text {
            let w = displayWidth(String(character))
            if used + w > width - 1 && displayWidth(text) > width {
                result += "…"
                used += 1
                break
            }
            result.append(character)
            used += w
        }
        return result + String(repeating: " ", count: max(0, width - used))
    }

    static func trimRight(_ s: String) -> String {
        var t = Substring(s)
        while t.last == " " { t = t.dropLast() }
        return String(t)
    }
}

/// How thumbnails are coloured: `NO_COLOR` turns colour off; `COLORTERM` says whether the
/// terminal takes 24-bit colour.
enum ColourMode: String {
    case none, palette = "256", full

    static var current: ColourMode {
        if let v = getenv("NO_COLOR"), v.pointee != 0 { return .none }
        let colorterm = getenv("COLORTERM").map { String(cString: $0) } ?? ""
        return colorterm == "truecolor" || colorterm == "24bit" ? .full : .palette
    }
}

/// Makes (or finds in the store) the thumbnail of one item: `Grid.thumbnailHeight` lines,
/// each exactly `Grid.thumbnailWidth` columns wide, colour reset at the end of each line.
struct ThumbnailMaker {
    let session: Session
    let colours: ColourMode
    let store: VaultThumbnailStore

    func thumbnail(for item: Item) -> [String] {
        switch item.kind {
        case .photo, .video:
            guard item.content != nil else { return Icons.icon(for: item.kind) }
            let variant = "\(Grid.thumbnailWidth)x\(Grid.thumbnailHeight) \(colours.rawValue)"
            let lines: [String]
            if let cached = store.thumbnail(for: item.id, variant: variant) {
                lines = cached
            } else {
                lines = (try? draw(item)) ?? []
                store.keep(lines, for: item.id, variant: variant)
            }
            guard !lines.isEmpty else { return Icons.icon(for: item.kind) }
            return item.kind == .video ? Thumbnail.badged(lines, colours: colours) : lines
        default:
            return Icons.icon(for: item.kind)
        }
    }

    /// Decrypts the item into a memfd and draws it; a video's poster frame comes first from
    /// ffmpeg (about 1 s in, or the first frame of a shorter clip), as does a photo chafa
    /// cannot read (`Converter.pngFrame`).
    private func draw(_ item: Item) throws -> [String] {
        guard Job.which("chafa") != nil else { return [] }
        let content = try MemoryFile()
        try content.fill(from: session.vault, item: item, observer: session.observer(progress: nil))
        var arguments = ["chafa", "--format=symbols", "--size=\(Grid.thumbnailWidth)x\(Grid.thumbnailHeight)",
                         "--animate=off", "--polite=on", "--colors=\(colours.rawValue)"]
        arguments.append(ChildCommand.procPath(ofExtra: 0))
        var output: [UInt8] = []
        if item.kind == .video {
            guard let poster = try Converter.pngFrame(of: content, at: "1", width: 320) ?? Converter.pngFrame(of: content, at: "0", width: 320) else { return [] }
            output = try Converter.output(arguments, input: poster)
        } else {
            output = try Converter.output(arguments, input: content)
            if output.isEmpty, let png = try Converter.pngFrame(of: content) { output = try Converter.output(arguments, input: png) }
        }
        return output.isEmpty ? [] : Thumbnail.normalised(String(decoding: output, as: UTF8.self), colours: colours)
    }
}

/// Turning chafa's output into fixed-size cells.
enum Thumbnail {
    /// One terminal cell: the SGR sequences before it and its character.
    struct Cell { var escapes: String; var character: Character }

    /// Parses a line into cells; escape sequences other than SGR (`ESC [ … m`) are dropped.
    static func cells(_ line: Substring) -> (cells: [Cell], trailing: String) {
        var cells: [Cell] = []
        var pending = ""
        var scalars = line.unicodeScalars[...]
        while let scalar = scalars.first {
            scalars = scalars.dropFirst()
            if scalar == "\u{1B}" {
                var sequence = "\u{1B}"
                if scalars.first == "[" {
                    sequence.unicodeScalars.append("[")
                    scalars = scalars.dropFirst()
                    while let c = scalars.first {
                        scalars = scalars.dropFirst()
                        sequence.unicodeScalars.append(c)
                        if c.value >= 0x40 && c.value <= 0x7E { break }
                    }
                    if sequence.hasSuffix("m") { pending += sequence }
                }
                continue
            }
            if scalar.value < 0x20 || scalar.value == 0x7F { continue }
            cells.append(Cell(escapes: pending, character: Character(scalar)))
            pending = ""
        }
        return (cells, pending)
    }

    /// chafa's output as exactly `Grid.thumbnailHeight` lines of `Grid.thumbnailWidth` cells,
    /// centred, each line ending with the colour reset.
    static func normalised(_ text: String, colours: ColourMode) -> [String] {
        let reset = colours == .none ? "" : "\u{1B}[0m"
        var rows = text.split(separator: "\n", omittingEmptySubsequences: false).map { cells($0).cells }
        while let last = rows.last, last.isEmpty { rows.removeLast() }
        rows = Array(rows.prefix(Grid.thumbnailHeight))
        guard !rows.isEmpty else { return [] }
        let top = (Grid.thumbnailHeight - rows.count) / 2
        let blank = String(repeating: " ", count: Grid.thumbnailWidth)
        var lines = Array(repeating: blank, count: top)
        for row in rows {
            let used = min(row.count, Grid.thumbnailWidth)
            let left = (Grid.thumbnailWidth - used) / 2
            var line = String(repeating: " ", count: left)
            for cell in row.prefix(used) { line += cell.escapes; line.append(cell.character) }
            line += reset + String(repeating: " ", count: Grid.thumbnailWidth - used - left)
            lines.append(line)
        }
        while lines.count < Grid.thumbnailHeight { lines.append(blank) }
        return lines
    }

    /// A video thumbnail with the play glyph drawn over its middle (in reverse video).
    static func badged(_ lines: [String], colours: ColourMode) -> [String] {
        var result = lines
        let middle = Grid.thumbnailHeight / 2
        let (cells, trailing) = cells(Substring(lines[middle]))
        guard cells.count == Grid.thumbnailWidth else { return lines }
        let column = Grid.thumbnailWidth / 2 - 1
        var line = ""
        for (i, cell) in cells.enumerated() {
            line += cell.escapes
            if i == column {
                line += colours == .none ? "▶" : "\u{1B}[7m▶\u{1B}[27m"
            } else {
                line.append(cell.character)
            }
        }
        result[middle] = line + trailing
        return result
    }
}

/// Generic icons for the items the grid does not picture (and for thumbnails that could not be
/// made): a page, a folder, a box of hex, a framed glyph for a photo or video.
enum Icons {
    static func icon(for kind: ItemKind) -> [String] {
        let art: [String]
        switch kind {
        case .folder:
            art = ["┌────┐", "│    └─────┐", "│          │", "│          │", "│          │", "└──────────┘"]
        case .document:
            art = ["┌────────┐", "│ ────── │", "│ ────── │", "│ ────   │", "│ ────── │", "│ ───    │", "└────────┘"]
        case .other:
            art = ["┌──────────┐", "│ 01 f3 9a │", "│ 7c 00 42 │", "│ e1 5d 08 │", "└──────────┘"]
        case .photo:
            art = ["┌──────────┐", "│          │", "│    ▣     │", "│          │", "└──────────┘"]
        case .video:
            art = ["┌──────────┐", "│          │", "│    ▶     │", "│          │", "└──────────┘"]
        }
        let top = (Grid.thumbnailHeight - art.count) / 2
        let blank = String(repeating: " ", count: Grid.thumbnailWidth)
        var lines = Array(repeating: blank, count: top)
        for row in art {
            let w = row.unicodeScalars.count
            let left = (Grid.thumbnailWidth - w) / 2
            lines.append(String(repeating: " ", count: left) + row + String(repeating: " ", count: Grid.thumbnailWidth - w - left))
        }
        while lines.count < Grid.thumbnailHeight { lines.append(blank) }
        return lines
    }
}

/// Rendered thumbnails, kept encrypted inside the vault as item attachments (never in
/// plaintext anywhere). New ones are saved together, in one journal record, by `flush()`; an
/// attachment goes with its item, and a replaced content gets a new thumbnail.
final class VaultThumbnailStore {
    private let vault: Vault
    private var pending: [(id: Identifier, purpose: String, bytes: [UInt8]?)] = []

    init(vault: Vault) { self.vault = vault }

    private func purpose(_ variant: String) -> String { "thumbnail " + variant }

    func thumbnail(for item: Identifier, variant: String) -> [String]? {
        guard let bytes = vault.attachment(purpose(variant), of: item) else { return nil }
        let text = String(decoding: bytes, as: UTF8.self)
        return text.isEmpty ? [] : text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// Keeps `lines` (empty: no thumbnail can be made, do not try again).
    func keep(_ lines: [String], for item: Identifier, variant: String) {
        let bytes = Array(lines.joined(separator: "\n").utf8)
        guard bytes.count <= Vault.maximumAttachment else { return }
        pending.append((item, purpose(variant), bytes))
    }

    /// Saves the new thumbnails. A failure (a full disk) only means they are drawn again next time.
    func flush() {
        guard !pending.isEmpty else { return }
        try? vault.setAttachments(pending)
        pending.removeAll()
    }
}

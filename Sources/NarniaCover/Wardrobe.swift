import Foundation
import Glibc
import NarniaLanguage

/// Where the Wardrobe's text goes and where its questions are answered: the terminal in the
/// program, a recorder in tests.
public protocol WardrobeConsole: AnyObject {
    /// Writes text to standard output.
    func write(_ text: String)
    /// Writes text to standard error.
    func writeError(_ text: String)
    /// True when output goes to a terminal (listings in columns).
    var isTerminal: Bool { get }
    /// The terminal's width in columns.
    var width: Int { get }
    /// Asks `question` and reads one line of answer; nil when nobody can answer (no terminal,
    /// or the end of input).
    /// - Throws: `Interrupted` when the user stops the question (Ctrl-C).
    func ask(_ question: String) throws -> String?
    /// True once the user pressed Ctrl-C (a change waiting for another Wardrobe gives up).
    var interrupted: Bool { get }
}

extension WardrobeConsole {
    public var interrupted: Bool { false }
}

/// A question stopped by the user: the command it belongs to does nothing.
public struct Interrupted: Error {
    public init() {}
}

/// The Wardrobe: an ordinary closet organiser shell. Tabs (Tops, Bottoms, Outerwear, Shoes,
/// Accessories) hold garments that can be listed, added, opened, moved and taken out. The
/// closet is saved after every change.
///
/// At the end of the Outerwear listing stands the wooden `back-panel`; `hold back-panel` calls
/// `backPanel`, which the program sets. Nothing here knows what is behind it. Held from any
/// other tab, the panel behaves the same to the eye (it asks for the key) but never opens.
public final class Wardrobe {
    /// The garments.
    public private(set) var closet: Closet
    /// The tab the shell is in; nil at the top of the wardrobe.
    public private(set) var cwd: Tab?
    /// Set by `exit`, `quit`.
    public private(set) var exitRequested = false
    /// What `hold back-panel` does: with `true` from the top or Outerwear, where the door
    /// is; with `false` from another tab, where the key is asked for the same way (never
    /// echoed, so a passphrase typed there is never shown or kept) and the door stays shut.
    public var backPanel: ((_ atTheDoor: Bool) -> Void)?
    let file: ClosetFile?
    let console: WardrobeConsole

    /// The first screen.
    public static let banner = """
    Wardrobe: your clothes, tab by tab.
    Tabs: Tops, Bottoms, Outerwear, Shoes, Accessories. Type 'help' for the commands.
    """

    /// What `hold back-panel` says before it asks for the key.
    public static let keyholeText = "There is a small keyhole in the back panel."
    /// The question for the key (asked without echo).
    public static let keyPrompt = "key: "
    /// What the door says to any key that does not open it, whatever the reason.
    public static let doorStaysShut = "The back panel does not move."

    /// A wardrobe over `closet`, saved to `file` after each change (never, when nil).
    public init(closet: Closet, file: ClosetFile?, console: WardrobeConsole) {
        self.closet = closet
        self.file = file
        self.console = console
    }

    /// The prompt text: `wardrobe> ` at the top, `wardrobe:Outerwear> ` in a tab.
    public var promptText: String {
        cwd.map { "wardrobe:\($0.name)> " } ?? "wardrobe> "
    }

    // MARK: Running commands

    /// Runs one line (`;` separates commands). Returns false when a command failed.
    @discardableResult
    public func run(line: String) -> Bool {
        let commands: [[Word]]
        do { commands = try tokenize(line) } catch {
            fail("wardrobe", CommandFailure(error.description))
            return false
        }
        var ok = true
        for words in commands where !exitRequested {
            guard let first = words.first else { continue }
            refresh()
            guard let command = WardrobeCommand.find(first.text) else {
                fail(first.text, CommandFailure("unknown command", hint: "type 'help' for the list of commands"))
                ok = false
                continue
            }
            do {
                try command.run(self, try command.parse(Array(words.dropFirst())))
            } catch let e as CommandFailure {
                fail(command.name, e)
                ok = false
            } catch is Interrupted {
                // Review CU-3: the answers left blank, the garment was added anyway. The rest
                // of the line does not run either (review DA-3), as at the vault's prompt.
                fail(command.name, CommandFailure("interrupted; nothing was changed"))
                return false
            } catch {
                fail(command.name, CommandFailure("\(error)"))
                ok = false
            }
        }
        return ok
    }

    /// Every line the Wardrobe writes goes through `shownText`: a garment's fields, what was
    /// typed and the closet file's path cannot drive the terminal.
    private func fail(_ command: String, _ e: CommandFailure) {
        console.writeError(shownText("wardrobe: error: \(command): \(e.message)", onTerminal: console.isTerminal, allowingLineBreaks: false) + "\n")
        if let hint = e.hint { console.writeError(shownText("wardrobe: hint: \(hint)", onTerminal: console.isTerminal, allowingLineBreaks: false) + "\n") }
    }

    func line(_ text: String) { console.write(shownText(text, onTerminal: console.isTerminal, allowingLineBreaks: true) + "\n") }

    /// Reads the closet again, for what another Wardrobe open at once saved since (review
    /// CU-2); as it was, when the file cannot be read now (the next change says why).
    private func refresh() {
        guard let file else { return }
        do {
            closet = try file.load()
            unreadableSaid = false
        } catch let e as CommandFailure {
            // Said once, not at every line (review DA-5: listings went on from memory without
            // a word).
            guard !unreadableSaid else { return }
            unreadableSaid = true
            console.writeError(shownText("wardrobe: warning: \(e.message); showing the closet as it was last read", onTerminal: console.isTerminal,
                                         allowingLineBreaks: false) + "\n")
        } catch {}
    }
    /// Whether the closet file's being unreadable was said since it last read.
    private var unreadableSaid = false

    /// Changes the closet and saves it; nothing changes when saving fails. The change applies to
    /// the closet as the file holds it now, read again under the folder's lock: what another
    /// Wardrobe open at once saved stays (review CU-2: the last to save wrote its whole closet
    /// over the other's change, which it had reported done).
    private func change(_ body: (inout Closet) throws -> Void) throws {
        guard let file else {
            var copy = closet
            try body(&copy)
            closet = copy
            return
        }
        closet = try file.whileLocked(interrupted: { console.interrupted }) {
            var current: Closet
            do { current = try file.load() } catch let e as CommandFailure {
                // Review CZ-4: every change failed, and nothing said what to do.
                throw CommandFailure(e.message, hint: "leave the Wardrobe and start it again: it sets the file aside and starts an empty closet")
            }
            try body(&current)
            try file.save(current)
            return current
        }
    }

    // MARK: Places

    /// What a typed path names.
    enum Place: Equatable {
        case top
        case tab(Tab)
        case garment(Tab, Garment)
        case backPanel
    }

    var cwdPath: TreePath { TreePath(components: cwd.map { [$0.name] } ?? []) }

    /// The components of a typed path, from the top: relative to the current tab, except that
    /// `TAB/NAME` names NAME in TAB from anywhere, as the man page says (a garment holds nothing,
    /// so nothing else could be meant; review CA-3: in Tops, `open Shoes/boots` failed).
    func components(of text: String) -> [String] {
        let first = text.prefix { $0 != "/" }
        let fromTop = cwd != nil && first.count < text.count && Tab(typed: String(first)) != nil
        return TreePath.resolve(text, relativeTo: fromTop ? .root : cwdPath).components
    }

    /// Resolves a typed `TAB`, `GARMENT`, `TAB/GARMENT`, `..` or `/`. At the top, a bare
    /// garment name is found in whichever tab holds it, if only one does; in a tab, a bare tab
    /// name is that tab.
    func place(_ text: String) throws -> Place {
        // A bare tab name means that tab from anywhere, unless the current tab holds a garment
        // of exactly that name.
        if !text.utf8.contains(UInt8(ascii: "/")), let tab = Tab(typed: text), let here = cwd,
           closet.garment(named: text, in: here)?.name != text {
            return .tab(tab)
        }
        let parts = components(of: text)
        switch parts.count {
        case 0:
            return .top
        case 1:
            if let tab = Tab(typed: parts[0]) { return .tab(tab) }
            if parts[0].lowercased() == Closet.backPanel { return .backPanel }
            let tabs = closet.tabs(holding: parts[0])
            guard !tabs.isEmpty else { throw CommandFailure("no tab or garment called '\(parts[0])'") }
            guard tabs.count == 1 else {
                throw CommandFailure("'\(parts[0])' is in more than one tab", hint: "say which: " + tabs.map { "\($0.name)/\(parts[0])" }.joined(separator: ", "))
            }
            return .garment(tabs[0], closet.garment(named: parts[0], in: tabs[0])!)
        case 2:
            guard let tab = Tab(typed: parts[0]) else { throw CommandFailure("no tab called '\(parts[0])'") }
            if tab == .outerwear && parts[1].lowercased() == Closet.backPanel { return .backPanel }
            guard let g = closet.garment(named: parts[1], in: tab) else { throw CommandFailure("no '\(parts[1])' in \(tab.name)") }
            return .garment(tab, g)
        default:
            throw CommandFailure("'\(text)': there is nothing inside a garment")
        }
    }

    /// A place that must be a garment (or the back panel, when `panel` says what to do with it).
    func garment(_ text: String, panel: String) throws -> (Tab, Garment) {
        switch try place(text) {
        case .garment(let tab, let g): return (tab, g)
        case .backPanel: throw CommandFailure(panel)
        case .tab(let tab): throw CommandFailure("\(tab.name) is a tab, not a garment")
        case .top: throw CommandFailure("'\(text)' is the whole wardrobe, not a garment")
        }
    }

    // MARK: Commands

    static func ls(_ w: Wardrobe, _ a: ParsedArguments) throws {
        let long = a.has("-l")
        let places = try (a.operandTexts.isEmpty ? [""] : a.operandTexts).map { ($0, try w.place($0)) }
        for (index, (text, place)) in places.enumerated() {
            if places.count > 1 {
                if case .tab(let tab) = place {
                    if index > 0 { w.line("") }
                    w.line("\(tab.name):")
                } else if case .top = place, !text.isEmpty {
                    if index > 0 { w.line("") }
                    w.line("/:")
                }
            }
            switch place {
            case .top:
                w.listTabs()
            case .tab(let tab):
                w.listTab(tab, long: long)
            case .garment(_, let g):
                w.listGarments([(g.name, g.colour, g.season)], long: long)
            case .backPanel:
                w.listGarments([Wardrobe.panelRow], long: long)
            }
        }
    }

    static let panelRow = (name: Closet.backPanel, colour: "wood", season: "")

    private func listTabs() {
        for tab in Tab.allCases {
            let n = closet.garments(in: tab).count
            if console.isTerminal {
                let count = n == 0 ? "empty" : n == 1 ? "1 garment" : "\(n) garments"
                line(tab.name.padding(toLength: 13, withPad: " ", startingAt: 0) + count)
            } else {
                line(tab.name)
            }
        }
    }

    private func listTab(_ tab: Tab, long: Bool) {
        let rows = closet.garments(in: tab).map { ($0.name, $0.colour, $0.season) } + (tab == .outerwear ? [Wardrobe.panelRow] : [])
        if rows.isEmpty && console.isTerminal {
            line("nothing in \(tab.name) yet: 'add' puts a garment here")
            return
        }
        listGarments(rows, long: long)
    }

    private func listGarments(_ rows: [(name: String, colour: String, season: String)], long: Bool) {
        let names = rows.map { terminalSafe($0.name) }
        if long {
            let nameWidth = names.map(displayWidth).max() ?? 0
            let colourWidth = rows.map { displayWidth(terminalSafe($0.colour.isEmpty ? "-" : $0.colour)) }.max() ?? 0
            for (name, row) in zip(names, rows) {
                let colour = terminalSafe(row.colour.isEmpty ? "-" : row.colour)
                line(name + String(repeating: " ", count: nameWidth - displayWidth(name) + 2)
                     + colour + String(repeating: " ", count: colourWidth - displayWidth(colour) + 2)
                     + (row.season.isEmpty ? "-" : row.season))
            }
        } else if console.isTerminal {
            for row in layoutColumns(names, width: console.width) { line(row) }
        } else {
            for name in names { line(name) }
        }
    }

    static func cd(_ w: Wardrobe, _ a: ParsedArguments) throws {
        guard a.operandTexts.count <= 1 else { throw CommandFailure("one tab at a time", hint: "usage: cd [TAB|..]") }
        guard let text = a.operandTexts.first else { w.cwd = nil; return }
        let place: Place
        do {
            place = try w.place(text)
        } catch let failure as CommandFailure where w.cwd != nil && !text.utf8.contains(UInt8(ascii: "/")) {
            // A bare name in a tab is looked for as a tab, from anywhere (review EF-6: "no 'Sho'
            // in Outerwear" said it was looked for among the garments there).
            throw CommandFailure(failure.message.hasPrefix("no ") ? "no tab called '\(text)'" : failure.message, hint: failure.hint)
        }
        switch place {
        case .top: w.cwd = nil
        case .tab(let tab): w.cwd = tab
        case .garment(_, let g): throw CommandFailure("'\(g.name)' is a garment, not a tab")
        case .backPanel: throw CommandFailure("the back panel is not a tab")
        }
    }

    static func add(_ w: Wardrobe, _ a: ParsedArguments) throws {
        guard a.operandTexts.count <= 1 else {
            throw CommandFailure("one garment at a time", hint: "quote a name with spaces: add 'blue shirt'")
        }
        var tab = w.cwd
        // Blanks around a name typed on the line go, as around an answer (review CU-4: `shirt `
        // beside `shirt` listed as a twin, `back-panel ` stood in Tops).
        var name = a.operandTexts.first?.trimmingSpaces
        if let text = name, text.utf8.contains(UInt8(ascii: "/")) {
            let parts = w.components(of: text)
            guard parts.count == 2, let t = Tab(typed: parts[0]) else {
                throw CommandFailure("'\(text)': give a tab and a name, as in Tops/'blue shirt'")
            }
            tab = t
            name = parts[1].trimmingSpaces
        }
        let asking = a.flags.isEmpty
        if tab == nil {
            guard let answer = try w.console.ask("Tab (\(Tab.allCases.map(\.name).joined(separator: ", "))): ") else {
                throw CommandFailure("which tab?", hint: "cd into a tab first, or add TAB/NAME")
            }
            guard let t = Tab(typed: answer.trimmingSpaces) else { throw CommandFailure("no tab called '\(answer)'") }
            tab = t
        }
        if name == nil {
            guard let answer = try w.console.ask("Name: ") else { throw CommandFailure("a garment needs a name", hint: "usage: add [TAB/]NAME") }
            name = answer.trimmingSpaces
        }
        guard let tab, let name else { return }
        try Closet.check(name: name)
        if let clash = w.closet.garment(named: name, in: tab), clash.name.lowercased() == name.lowercased() {
            throw CommandFailure("\(tab.name) already holds '\(clash.name)'")
        }
        var garment = Garment(name: name, colour: a.flags["-c"] ?? "", season: a.flags["-s"] ?? "",
                              notes: a.flags["-n"] ?? "", added: today())
        if asking {
            garment.colour = try w.console.ask("Colour: ")?.trimmingSpaces ?? ""
            garment.season = try w.console.ask("Season (\(Season.all.joined(separator: ", "))): ")?.trimmingSpaces ?? ""
            if Season.normalised(garment.season) == nil {
                garment.season = try w.console.ask("Season: one of \(Season.all.joined(separator: ", ")), or nothing: ")?.trimmingSpaces ?? ""
                // Said before the notes are asked for (review CZ-10: typed, then lost).
                guard Season.normalised(garment.season) != nil else {
                    throw CommandFailure("'\(garment.season)' is not a season; nothing was added", hint: "seasons: \(Season.all.joined(separator: ", "))")
                }
            }
            garment.notes = try w.console.ask("Notes: ")?.trimmingSpaces ?? ""
        }
        guard let season = Season.normalised(garment.season) else {
            throw CommandFailure("'\(garment.season)' is not a season", hint: "seasons: \(Season.all.joined(separator: ", "))")
        }
        garment.season = season
        try w.change { try $0.add(garment, to: tab) }
        w.line("added \(terminalSafe(name)) to \(tab.name)")
    }

    static func open(_ w: Wardrobe, _ a: ParsedArguments) throws {
        guard !a.operandTexts.isEmpty else { throw CommandFailure("which garment?", hint: "usage: open GARMENT...") }
        let places = try a.operandTexts.map { try w.place($0) }
        for (index, place) in places.enumerated() {
            if index > 0 { w.line("") }
            switch place {
            case .garment(let tab, let g):
                w.line(terminalSafe(g.name))
                w.line("  tab:     \(tab.name)")
                w.line("  colour:  \(g.colour.isEmpty ? "-" : terminalSafe(g.colour))")
                w.line("  season:  \(g.season.isEmpty ? "-" : g.season)")
                w.line("  notes:   \(g.notes.isEmpty ? "-" : terminalSafe(g.notes))")
                if !g.added.isEmpty { w.line("  added:   \(g.added)") }
            case .backPanel:
                w.line(Closet.backPanel)
                w.line("  tab:     Outerwear")
                w.line("  colour:  wood")
                w.line("  notes:   the back of the wardrobe")
            case .tab(let tab):
                throw CommandFailure("\(tab.name) is a tab", hint: "list it with: ls \(tab.name)")
            case .top:
                throw CommandFailure("which garment?")
            }
        }
    }

    static func hold(_ w: Wardrobe, _ a: ParsedArguments) throws {
        guard a.operandTexts.count == 1 else { throw CommandFailure("one garment at a time", hint: "usage: hold GARMENT") }
        let text = a.operandTexts[0]
        let place: Place
        do {
            place = try w.place(text)
        } catch {
            // `back-panel` typed where there is none (in Tops, say): someone about to type a key.
            let last = w.components(of: text).last
            guard last?.lowercased() == Closet.backPanel else { throw error }
            if let door = w.backPanel { door(false) } else { w.line(Wardrobe.doorStaysShut) }
            return
        }
        switch place {
        case .backPanel:
            if let door = w.backPanel { door(true) } else { w.line(Wardrobe.doorStaysShut) }
        case .garment(_, let g):
            var about: [String] = []
            if !g.colour.isEmpty { about.append(terminalSafe(g.colour)) }
            if !g.season.isEmpty { about.append(g.season == "all-year" ? "for any season" : "for \(g.season)") }
            w.line("You hold up the \(terminalSafe(g.name))" + (about.isEmpty ? "" : " (\(about.joined(separator: ", ")))") + ". It still looks good.")
        case .tab(let tab):
            throw CommandFailure("\(tab.name) is a tab, not a garment")
        case .top:
            throw CommandFailure("which garment?")
        }
    }

    static func rm(_ w: Wardrobe, _ a: ParsedArguments) throws {
        guard !a.operandTexts.isEmpty else { throw CommandFailure("which garment?", hint: "usage: rm GARMENT...") }
        var targets: [(Tab, Garment)] = []
        // A garment named twice is one target (review DA-1: the second found it gone).
        for text in a.operandTexts {
            let (tab, g) = try w.garment(text, panel: "the back panel is fixed to the wardrobe")
            if !targets.contains(where: { $0.0 == tab && $0.1 == g }) { targets.append((tab, g)) }
        }
        // As the closet is now: a garment another Wardrobe moved or changed meanwhile is not
        // taken, and nothing is (review CZ-1: "removed", and it stayed where it had gone).
        try w.change { closet in
            for (tab, g) in targets {
                guard closet.garment(named: g.name, in: tab) == g else { throw CommandFailure("no '\(g.name)' in \(tab.name) (changed meanwhile); nothing was removed") }
                try closet.remove(g.name, from: tab)
            }
        }
        for (tab, g) in targets { w.line("removed \(terminalSafe(g.name)) from \(tab.name)") }
    }

    static func mv(_ w: Wardrobe, _ a: ParsedArguments) throws {
        guard a.operandTexts.count >= 2 else { throw CommandFailure("move what where?", hint: "usage: mv GARMENT... TAB | mv GARMENT NEWNAME") }
        let sources = try a.operandTexts.dropLast().map { try w.garment($0, panel: "the back panel is fixed to the wardrobe") }
        let destText = a.operandTexts.last!
        let destPlace = try? w.place(destText)
        if case .tab(let dest)? = destPlace {
            try w.change { closet in
                for (tab, g) in sources where tab != dest {
                    try closet.remove(g.name, from: tab)
                    try closet.add(g, to: dest)
                }
            }
            for (tab, g) in sources where tab != dest { w.line("moved \(terminalSafe(g.name)) from \(tab.name) to \(dest.name)") }
            return
        }
        if case .top? = destPlace { throw CommandFailure("garments go in a tab", hint: "tabs: \(Tab.allCases.map(\.name).joined(separator: ", "))") }
        guard sources.count == 1 else { throw CommandFailure("\(destText): not a tab", hint: "tabs: \(Tab.allCases.map(\.name).joined(separator: ", "))") }
        let (fromTab, g) = sources[0]
        let parts = w.components(of: destText)
        let toTab: Tab, newName: String
        switch parts.count {
        case 1 where w.cwd == nil:
            toTab = fromTab
            newName = parts[0].trimmingSpaces
        case 2:
            guard let t = Tab(typed: parts[0]) else { throw CommandFailure("no tab called '\(parts[0])'") }
            toTab = t
            newName = parts[1].trimmingSpaces
        default:
            throw CommandFailure("'\(destText)': give a new name, or a tab")
        }
        var moved = g
        moved.name = newName
        try w.change { closet in
            try closet.remove(g.name, from: fromTab)
            try closet.add(moved, to: toTab)
        }
        w.line(toTab == fromTab ? "renamed \(terminalSafe(g.name)) to \(terminalSafe(newName))"
               : "moved \(terminalSafe(g.name)) from \(fromTab.name) to \(toTab.name)/\(terminalSafe(newName))")
    }

    static func help(_ w: Wardrobe, _ a: ParsedArguments) throws {
        let width = HelpText.width(terminalColumns: w.console.isTerminal ? w.console.width : nil)
        if let name = a.operandTexts.first {
            guard let c = WardrobeCommand.find(name) else { throw CommandFailure("no command '\(name)'", hint: "type 'help' for the list") }
            for line in HelpText.page(c, width: width) { w.line(line) }
        } else {
            for line in HelpText.overview(WardrobeCommand.all, width: width) { w.line(line) }
        }
    }

    static func exit(_ w: Wardrobe, _ a: ParsedArguments) throws {
        // As the vault shell's `exit`: a status given is refused, not quietly dropped.
        guard a.operandTexts.isEmpty else { throw CommandFailure("too many arguments", hint: "usage: exit") }
        w.exitRequested = true
    }

    private static func today() -> String {
        var t = time(nil)
        var parts = tm()
        localtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday))
    }
}

extension String {
    /// Without leading and trailing blanks.
    var trimmingSpaces: String {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" || c == "\r" { s = s.dropLast() }
        return String(s)
    }
}

extension Wardrobe {
    /// Closes the wardrobe after the running command (the program's door uses it).
    public func leave() { exitRequested = true }
}

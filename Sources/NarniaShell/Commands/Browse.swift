import NarniaKinds
import NarniaLanguage
import NarniaStore

/// `ls`, `cd`, `pwd`, `tree`, `find`, `stat`, `du`: reading the tree.
enum Browse {
    static func sorted(_ items: [Item]) -> [Item] {
        items.sorted { utf8Order($0.name, $1.name) }
    }

    /// Items in the order `ls` is asked for: by name (or what `name` gives); newest first with
    /// `-t`; largest first with `-S` (ties by name); `-r` reverses.
    static func ordered(_ items: [Item], _ a: ParsedArguments, name: (Item) -> String = \.name) -> [Item] {
        let out: [Item]
        if a.has("-t") {
            out = items.sorted { $0.modified != $1.modified ? $0.modified > $1.modified : utf8Order(name($0), name($1)) }
        } else if a.has("-S") {
            out = items.sorted { $0.size != $1.size ? $0.size > $1.size : utf8Order(name($0), name($1)) }
        } else {
            out = items.sorted { utf8Order(name($0), name($1)) }
        }
        return a.has("-r") ? out.reversed() : out
    }

    /// What a listing command names: files, then folders to list, from its operands (the
    /// current folder by default). A word that names nothing is reported at once (and `failed`
    /// is true), so the rest are still listed, as `ls` does.
    static func listingTargets(_ s: Session, _ a: ParsedArguments) throws
        -> (files: [(VaultPath, Item)], folders: [(VaultPath, Identifier)], failed: Bool) {
        var files: [(VaultPath, Item)] = []
        var folders: [(VaultPath, Identifier)] = []
        let failed = try forEachExisting(s, a, a.operands.isEmpty ? [Word(quoted: ".")] : a.operands) { path, id in
            if a.has("-d") {
                files.append((path, s.vault.item(id) ?? s.vault.rootItem))
            } else if s.vault.isFolder(id) {
                folders.append((path, id))
            } else {
                files.append((path, s.vault.item(id)!))
            }
        }
        return (files, folders, failed)
    }

    /// Hands every item the operands name to `body`, in operand order. An operand that names
    /// nothing is reported and the others go on, as coreutils' `ls`, `stat` and `du` do; returns
    /// whether one did (the command then fails once it has printed the rest).
    static func forEachExisting(_ s: Session, _ a: ParsedArguments, _ words: [Word],
                                _ body: (VaultPath, Identifier) -> Void) throws -> Bool {
        try s.forEachOperand(words, of: a.command) { word in
            for (path, id) in try s.existing(word) { body(path, id) }
        }
    }

    static func ls(_ s: Session, _ a: ParsedArguments) throws {
        if !a.has("-d") && Grid.wanted(s, a) { return try Grid.ls(s, a) }
        let showHidden = a.has("-a")
        var (files, folders, failed) = try listingTargets(s, a)
        if a.has("-R") && !a.has("-d") { folders = withSubfolders(s, folders, showHidden: showHidden) }
        if !files.isEmpty {
            let byID = Dictionary(files.map { ($0.1.id, $0) }, uniquingKeysWith: { first, _ in first })
            // Files of several folders (`ls /*/*.jpg`) are shown and sorted by path: bare, their
            // names would not say which is which (review AJ).
            let byPath = Set(files.map(\.0.parent)).count > 1
            let pathText = byPath ? byID.mapValues(\.0.description) : [:]
            let order = ordered(files.map(\.1), a, name: byPath ? { pathText[$0.id]! } : \.name).map(\.id)
            printListing(s, a, order.compactMap { byID[$0] }, byPath: byPath)
        }
        // Headers whenever more than one operand was named, a missing one included (as coreutils).
        let headers = folders.count + files.count + (failed ? 1 : 0) > 1 && !a.has("--json")
        for (i, (path, id)) in folders.enumerated() {
            if headers {
                if i > 0 || !files.isEmpty { s.out.line("") }
                s.out.line("\(s.shown(path, on: s.out)):")
            }
            let children = ordered(s.vault.children(of: id), a).filter { showHidden || !$0.name.hasPrefix(".") }
            printListing(s, a, children.map { (path.appending($0.name), $0) })
        }
        if failed { throw Reported() }
    }

    /// Prints `entries` as `a`'s flags ask: by name, or with `byPath` by vault path.
    private static func printListing(_ s: Session, _ a: ParsedArguments, _ entries: [(VaultPath, Item)], byPath: Bool = false) {
        // What a terminal listing shows in place of the item's name: its `#N` under
        // `hide-names`, its path with `byPath`; nil for the name itself.
        func shownAs(_ entry: (VaultPath, Item)) -> String? {
            guard HiddenNames.active(s) else { return byPath ? entry.0.description : nil }
            return byPath ? HiddenNames.masked(entry.0, in: s) : HiddenNames.maskedName(of: entry.1, in: s)
        }
        // The name or path, escaped, as a line of output shows it.
        func plain(_ entry: (VaultPath, Item)) -> String { s.out.name(byPath ? entry.0.description : entry.1.name) }
        if a.has("--json") {
            for (path, item) in entries {
                s.out.line(Formatting.jsonObject(item, path: path.description, here: s.vault.isHere(item), dropped: s.vault.droppedTime(of: item)))
            }
        } else if a.has("-l") && s.out.isTerminal {
            let lines = TerminalListing.long(entries.map {
                ListedItem($0.1, shownAs: shownAs($0), here: $0.1.isFolder || s.vault.isHere($0.1),
                           dropped: s.vault.droppedTime(of: $0.1) != nil)
            }, now: TerminalListing.now(), style: .current())
            for line in lines { s.out.styledLine(line) }
        } else if a.has("-l") {
            let sizes = entries.map { $0.1.isFolder ? "-" : Formatting.size($0.1.size, human: a.has("-h")) }
            let width = sizes.map(\.count).max() ?? 1
            for (entry, size) in zip(entries, sizes) {
                let item = entry.1
                let kind = item.kind.name.padding(toLength: 8, withPad: " ", startingAt: 0)
                let pad = String(repeating: " ", count: width - size.count)
                let mark = ListedItem.marks(here: item.isFolder || s.vault.isHere(item), dropped: s.vault.droppedTime(of: item) != nil)
                s.out.line("\(kind) \(pad)\(size) \(Formatting.shortDate(item.modified)) \(ListedItem.nameBeforeMarks(plain(entry), onTerminal: false))\(mark)")
            }
        } else if s.out.isTerminal && a.has("-1") {
            for entry in entries { s.out.line(HiddenNames.active(s) ? shownAs(entry)! : plain(entry)) }
        } else if s.out.isTerminal {
            let lines = TerminalListing.grid(entries.map { ListedItem($0.1, shownAs: shownAs($0)) }, width: terminalWidth(), style: .current())
            for line in lines { s.out.styledLine(line) }
        } else {
            for entry in entries { s.out.line(plain(entry)) }
        }
    }

    /// `ls -R`: each folder followed by every folder under it, depth first, in name order.
    private static func withSubfolders(_ s: Session, _ folders: [(VaultPath, Identifier)], showHidden: Bool) -> [(VaultPath, Identifier)] {
        var out: [(VaultPath, Identifier)] = []
        var pending = Array(folders.reversed())
        while let (path, id) = pending.popLast() {
            out.append((path, id))
            let subfolders = sorted(s.vault.children(of: id)).filter { $0.isFolder && (showHidden || !$0.name.hasPrefix(".")) }
            pending += subfolders.reversed().map { (path.appending($0.name), $0.id) }
        }
        return out
    }

    static func cd(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.count <= 1 else { throw CommandTable.tooManyArguments(for: "cd") }
        let target: VaultPath
        if let word = a.operands.first {
            if word.text == "-" && word.quotedScalars.first != true {
                guard let previous = s.previousCwd else { throw CommandFailure("no previous folder") }
                target = previous
            } else if word.text == "~" && word.quotedScalars.first != true {
                target = .root   // the vault's home is its root, as `cd` alone
            } else {
                target = try s.folder(word).0
            }
        } else {
            target = .root
        }
        // `cd -` to a folder removed since (review CN-4: "not a folder").
        guard let id = s.resolve(target) else { throw CommandFailure("\(s.inMessage(target)): no such folder") }
        guard s.vault.isFolder(id) else { throw CommandFailure("\(s.inMessage(target)): not a folder") }
        s.previousCwd = s.cwd
        s.cwd = target
    }

    /// True when `cd` goes where it would from any folder: alone, with `~`, or to an absolute
    /// path (review CY-3: typed in a folder another device removed, `cd /` was not run).
    @Sendable static func cdIgnoresTheCurrentFolder(_ a: ParsedArguments) -> Bool {
        guard let word = a.operands.first else { return true }
        return a.operands.count == 1 && (word.text.hasPrefix("/") || (word.text == "~" && word.quotedScalars.first != true))
    }

    static func pwd(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.isEmpty else { throw CommandTable.tooManyArguments(for: "pwd") }
        s.out.line(s.shown(s.cwd, on: s.out))
    }

    static func tree(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.count <= 1 else { throw CommandTable.tooManyArguments(for: "tree") }
        var maxDepth = Int.max
        if let text = a.flags["-L"] {
            guard let n = Int(text), n >= 1 else { throw CommandFailure("-L needs a depth of 1 or more, not '\(text)'") }
            maxDepth = n
        }
        let foldersOnly = a.has("-d")
        func children(_ id: Identifier) -> [Item] {
            let all = sorted(s.vault.children(of: id))
            return foldersOnly ? all.filter(\.isFolder) : all
        }
        let (path, id) = try a.operands.first.map { try s.folder($0) } ?? (s.cwd, s.resolve(s.cwd)!)
        let terminal = s.out.isTerminal
        let style = TerminalStyle.current()
        if terminal {
            s.out.styledLine(path.isRoot ? style.paint("/", .folder) : style.decorate(String(s.shown(path, on: s.out).split(separator: "/").last!), kind: .folder, glyph: false))
        } else {
            s.out.line(path.isRoot ? "/" : (s.out.name(path.lastComponent!) + "/"))
        }
        var folders = 0, files = 0
        // Depth first without recursion: a tree of any depth cannot overflow the stack.
        var frames: [(children: [Item], next: Int, prefix: String)] = [(children(id), 0, "")]
        while !frames.isEmpty {
            let top = frames.count - 1
            guard frames[top].next < frames[top].children.count else { frames.removeLast(); continue }
            let child = frames[top].children[frames[top].next]
            frames[top].next += 1
            let last = frames[top].next == frames[top].children.count
            let prefix = frames[top].prefix
            if terminal {
                s.out.styledLine(TerminalListing.treeLine(prefix: prefix + (last ? "└── " : "├── "), ListedItem(child, shownAs: HiddenNames.maskedName(of: child, in: s)), style: style))
            } else {
                s.out.line(prefix + (last ? "└── " : "├── ") + s.out.name(child.name) + (child.isFolder ? "/" : ""))
            }
            if child.isFolder {
                folders += 1
                if frames.count < maxDepth { frames.append((children(child.id), 0, prefix + (last ? "    " : "│   "))) }
            } else {
                files += 1
            }
        }
        if s.out.isTerminal {
            s.out.line("\n\(folders) folder\(folders == 1 ? "" : "s")" + (foldersOnly ? "" : ", \(files) file\(files == 1 ? "" : "s")"))
        }
    }

    static func find(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.count <= 1 else { throw CommandTable.tooManyArguments(for: "find") }
        let (start, id) = try a.operands.first.map { try s.folder($0) } ?? (s.cwd, s.resolve(s.cwd)!)
        guard !(a.has("-name") && a.has("-iname")) else { throw CommandFailure("give -name or -iname, not both") }
        // An item matches every predicate given, as with find(1): one of them twice kept only
        // the last (review DM-2: `-name 'a*' -name '*.dat'` listed beta.dat).
        if let twice = ["-name", "-iname", "-type"].first(where: a.givenTwice.contains) {
            throw CommandFailure("\(twice) given twice: an item has one name and one kind", hint: "give it once, and run find again for another")
        }
        let ignoringCase = a.has("-iname")
        let name = (a.flags["-name"] ?? a.flags["-iname"]).map { GlobPattern(unquoted: ItemName.nfc(ignoringCase ? $0.lowercased() : $0)) }
        var kind: ItemKind?
        if let t = a.flags["-type"] {
            guard let k = ItemKind(name: t) else {
                throw CommandFailure("unknown type '\(t)'", hint: "use one of: photo video document other folder")
            }
            kind = k
        }
        // Depth first in name order, without recursion.
        var pending: [(Item, VaultPath)] = sorted(s.vault.children(of: id)).reversed().map { ($0, start.appending($0.name)) }
        while let (child, childPath) = pending.popLast() {
            if (name?.matches(ignoringCase ? child.name.lowercased() : child.name) ?? true) && (kind.map { $0 == child.kind } ?? true) {
                s.out.line(s.shown(childPath, on: s.out))
            }
            if child.isFolder {
                pending += sorted(s.vault.children(of: child.id)).reversed().map { ($0, childPath.appending($0.name)) }
            }
        }
    }

    static func stat(_ s: Session, _ a: ParsedArguments) throws {
        guard !a.operands.isEmpty else { throw CommandFailure("missing path", hint: CommandTable.usage(of: "stat")) }
        var first = true
        let failed = try forEachExisting(s, a, a.operands) { path, id in
            if !first && !a.has("--json") { s.out.line("") }
            first = false
            if a.has("--json") {
                s.out.line(statJSON(s, path: path, id: id))
                return
            }
            guard let item = s.vault.item(id) else {
                s.out.line("path: /\ntype: folder\nkind: folder\nitems: \(s.vault.children(of: .root).count)")
                return
            }
            s.out.line("path: \(s.shown(path, on: s.out))")
            s.out.line("type: \(item.isFolder ? "folder" : "file")")
            s.out.line("kind: \(item.kind.name)")
            if let c = item.content {
                s.out.line("mime: \(c.mime)")
                s.out.line("size: \(c.size)")
                s.out.line("stored: \(s.vault.storedSize(of: item))")
                // As `ls -l` and `stat --json` say it (review CF-5).
                if !s.vault.isHere(item) { s.out.line("here: no (not on this device yet)") }
            } else {
                s.out.line("items: \(s.vault.children(of: id).count)")
            }
            s.out.line("created: \(Formatting.isoDate(item.created))")
            s.out.line("modified: \(Formatting.isoDate(item.modified))")
            if let dropped = s.vault.droppedTime(of: item) { s.out.line("dropped: \(Formatting.isoDate(dropped))") }
        }
        if failed { throw Reported() }
    }

    /// `stat --json`: the fields of `ls --json`, with `stored` (bytes in the store) for a file
    /// and `items` for a folder.
    private static func statJSON(_ s: Session, path: VaultPath, id: Identifier) -> String {
        guard let item = s.vault.item(id) else {
            // The root has no name and no times (review AJ: `type` was missing too).
            return "{\"path\":\"/\",\"type\":\"folder\",\"kind\":\"folder\",\"items\":\(s.vault.children(of: .root).count)}"
        }
        var object = Formatting.jsonObject(item, path: path.description, here: s.vault.isHere(item), dropped: s.vault.droppedTime(of: item))
        object.removeLast()
        object += item.isFolder ? ",\"items\":\(s.vault.children(of: id).count)}" : ",\"stored\":\(s.vault.storedSize(of: item))}"
        return object
    }

    static func du(_ s: Session, _ a: ParsedArguments) throws {
        let failed = try forEachExisting(s, a, a.operands.isEmpty ? [Word(quoted: ".")] : a.operands) { path, id in
            let total: UInt64
            if s.vault.isFolder(id) {
                total = s.vault.descendants(of: id).reduce(0) { $0 + $1.size }
            } else {
                total = s.vault.item(id)!.size
            }
            s.out.line("\(Formatting.size(total, human: s.out.isTerminal || a.has("-h")))\t\(s.shown(path, on: s.out))")
        }
        if failed { throw Reported() }
    }
}

/// The command failed and has already printed why (one line per failing operand): the runner
/// counts the failure and prints nothing more.
struct Reported: Error {}

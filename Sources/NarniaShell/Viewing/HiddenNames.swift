import NarniaKinds
import NarniaLanguage
import NarniaStore

/// `set hide-names on`: on a terminal, listings show `#N` and a kind glyph instead of names,
/// and `#N` names the N-th item of its folder (in name order, counting every item, those
/// starting with a dot included, so the numbers do not change with `-a`).
///
/// A number in range names the N-th item even beside an item really called `#N` (shown under
/// its own number: review BP-2); past the last item, `#N` is a name. Numbers are resolved only where listings show
/// them (the setting on, output on a terminal) and in commands typed for this run
/// (`namesByNumber`): in scripts `#2` is a name (review BG-4, BH-1: `cp -f a.txt '#2'` in a
/// script replaced the second item). A line of several commands, and a `-c` text, reads its
/// numbers against the folders as they stood when it was typed (`NumbersAsTyped`, review BQ-1).
enum HiddenNames {
    /// True when listings on this session's output should hide names.
    static func active(_ s: Session) -> Bool {
        s.out.isTerminal && ViewingPreferences(s).hideNames
    }

    /// True when `#N` in a command names the N-th item: where listings show the numbers, in
    /// commands typed for this run (the shell, `-c`); a batch file (`-b`, piped) was written
    /// without them in view (review BH-1: `cp -f a.txt '#2'` in one run on a terminal replaced
    /// the second item).
    static func namesByNumber(_ s: Session) -> Bool {
        s.commandsTyped && active(s)
    }

    /// True when an unquoted `#` before a digit begins a word (`#3`) rather than a comment:
    /// only at the interactive shell's prompt (review BH-1: `rm -rf scratch  #2024 photos`
    /// in a batch file run on a terminal removed `photos`).
    static func numbersTypedBare(_ s: Session) -> Bool {
        s.interactive && namesByNumber(s)
    }

    /// The glyph of a kind in masked listings and the grid.
    static func glyph(_ kind: ItemKind) -> String {
        switch kind {
        case .folder: return "▸"
        case .photo: return "▣"
        case .video: return "▶"
        case .document: return "≡"
        case .other: return "◇"
        }
    }

    /// The number of `item` in its folder (1-based), as `#N` shows it: as the folder is now,
    /// in listings and messages alike, even while a line typed earlier still reads its own
    /// numbers as typed — what is shown is what the next line reads (review CD-2: listings with
    /// the typed numbers showed stale and doubled ones). A listing asks this for every item of
    /// a folder, so each folder's numbering is computed once per vault change.
    static func number(of item: Item, in vault: Vault) -> Int {
        if let cached = numbering[item.parent], cached.generation == vault.generation, cached.vault === vault {
            return cached.numbers[item.name] ?? 1
        }
        let names = vault.children(of: item.parent).map(\.name).sorted(by: utf8Order)
        var numbers: [String: Int] = [:]
        for (i, name) in names.enumerated() { numbers[name] = i + 1 }
        numbering[item.parent] = (vault, vault.generation, numbers)
        if numbering.count > 64 { numbering = [item.parent: numbering[item.parent]!] }
        return numbers[item.name] ?? 1
    }

    // A cache of the main thread's listings (commands and completion run there, one at a
    // time); no other thread reads or writes it.
    nonisolated(unsafe) private static var numbering: [Identifier: (vault: Vault, generation: Int, numbers: [String: Int])] = [:]

    /// How many times other devices' changes to the tree were read (`StoreRefresh`), and, by
    /// folder, how many had been when its numbers were last shown (a listing, a completion):
    /// numbers shown before changes arrived may name other items now (review CR-2: `rm #1`
    /// typed after a listing, with another device's move read in between, removed an item
    /// never shown). Main thread only, as `numbering`.
    nonisolated(unsafe) static var arrivals = 0
    nonisolated(unsafe) private static var shownAfterArrivals: [Identifier: Int] = [:]

    /// `number(of:in:)` as a listing of `item`'s folder (or Tab completion) shows it: its
    /// folder's numbers count as seen from now on (`shownAfterArrivals`). Not the numbers on a
    /// path, as the prompt and messages show them (review CS-1: the prompt made every folder
    /// above the current one count as listed).
    static func listedNumber(of item: Item, in vault: Vault) -> Int {
        shownAfterArrivals[item.parent] = arrivals
        return number(of: item, in: vault)
    }

    /// `#N` with the kind glyph in front (`▣ #3`), and `/` after a folder, in a listing.
    static func label(of item: Item, in vault: Vault) -> String {
        "\(glyph(item.kind)) #\(listedNumber(of: item, in: vault))\(item.isFolder ? "/" : "")"
    }

    /// How a listing on this session shows `item`: its terminal-safe name, or the masked label
    /// when names are hidden. Folders get a `/` either way.
    static func displayName(of item: Item, in s: Session) -> String {
        if active(s) { return label(of: item, in: s.vault) }
        return terminalSafe(item.isFolder ? item.name + "/" : item.name)
    }

    /// Where the prompt reads an unquoted `#` and a digit as the start of a word
    /// (`numbersTypedBare`): the first such word of a typed command whose first component names
    /// no item in the current folder — a number past its last item, or no number at all
    /// (`#2nd`), and no item's real name — so that the line stops before that command runs
    /// (review BI-4; BP-4: `rm -rf scratch #2024/old photos` removed photos); nil otherwise.
    static func numberNamingNothing(in command: [Word], s: Session) -> String? {
        guard numbersTypedBare(s), let here = s.resolve(s.cwd) else { return nil }
        // As `numbered` counts them, without sorting them (no numbers: a folder the line made).
        let children = s.numbersAsTyped.map { $0.children[here] } ?? s.vault.childrenByFolder[here]
        let count = children?.count ?? 0
        for word in command where word.quotedScalars.first == false {
            let scalars = word.text.unicodeScalars
            guard scalars.first == "#", let digit = scalars.dropFirst().first, ("0"..."9").contains(digit) else { continue }
            let first = String(String.UnicodeScalarView(scalars.prefix { $0 != "/" }))
            if let n = number(inComponent: Substring(first)), n <= count { continue }
            if s.vault.child(named: first, in: here) == nil { return first }
        }
        return nil
    }

    /// The N of a path component `#N`, or nil.
    static func number(inComponent component: Substring) -> Int? {
        guard component.first == "#", component.count > 1, component.count < 12 else { return nil }
        let digits = component.dropFirst()
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(digits), n > 0 else { return nil }
        return n
    }

    /// The items of `folder` in the order its numbers count them: as it stood when the running
    /// line was typed (`Session.numbersAsTyped`), or as it is. A folder the line's commands
    /// made, or merged with another device's (review CC-1), had no numbers then: that fails.
    static func numbered(_ folder: Identifier, in s: Session) throws -> [(name: String, id: Identifier)] {
        if let typed = s.numbersAsTyped {
            guard let items = typed.items(in: folder) else {
                throw CommandFailure("this folder's items had no numbers when the line was typed (a command before on the line made it, or merged it with another)")
            }
            return items
        }
        return inNumberOrder(s.vault.childrenByFolder[folder] ?? [:])
    }

    /// A folder's children (by name) in the order numbers count them: by name.
    static func inNumberOrder(_ children: [String: Identifier]) -> [(name: String, id: Identifier)] {
        children.map { (name: $0.key, id: $0.value) }.sorted { utf8Order($0.name, $1.name) }
    }

    /// The name now of the item `#n` numbered in `folder` when the line was typed, or nil when
    /// the folder held fewer; fails when a command before on the line removed or moved it.
    private static func name(numbered n: Int, in folder: Identifier, s: Session) throws -> String? {
        // Once changes arrived, a folder not listed since (or never: one another device
        // removed and made anew, review CS-2) has no numbers in view.
        if arrivals > 0, shownAfterArrivals[folder] ?? -1 < arrivals {
            throw CommandFailure("#\(n): other devices' changes arrived since this folder's numbers were last shown, and may have changed them; nothing was done", hint: "list the folder again")
        }
        let items = try numbered(folder, in: s)
        guard n <= items.count else { return nil }
        let numberedItem = items[n - 1]
        guard let item = s.vault.item(numberedItem.id), item.parent == folder,
              s.vault.child(named: item.name, in: folder)?.id == numberedItem.id else {
            throw CommandFailure("#\(n): the item it numbered when the line was typed is no longer in its folder (a command before it on the line removed or moved it)")
        }
        return item.name
    }

    /// `word` with each `#N` component replaced by the name it stands for (quoted, so a `*` in
    /// a real name is no wildcard). Unchanged when hide-names is off, when no component is a
    /// number, or where the folder before a number cannot be known (after a wildcard).
    static func resolving(_ word: Word, in s: Session) throws -> Word {
        // A line typed with numbers keeps them though a command on it turns hide-names off
        // (review CC-3).
        guard word.text.contains("#"), s.numbersAsTyped != nil || namesByNumber(s) else { return word }
        // Split the word into components, each keeping its quote mask.
        var components: [(text: String, mask: [Bool])] = [("", [])]
        for (scalar, quoted) in zip(word.text.unicodeScalars, word.quotedScalars) {
            if scalar == "/" { components.append(("", [])); continue }
            components[components.count - 1].text.unicodeScalars.append(scalar)
            components[components.count - 1].mask.append(quoted)
        }
        let absolute = word.text.unicodeScalars.first == "/"
        var folder: VaultPath? = absolute ? .root : s.cwd
        var changed = false
        for i in components.indices {
            let c = components[i].text
            if c.isEmpty || c == "." { continue }
            if c == ".." { folder = folder.map { VaultPath(components: Array($0.components.dropLast())) }; continue }
            guard let current = folder else { continue }
            // A number names the N-th item, even where an item is really named `#N` (which the
            // listing shows under its own number: review BP-2); past the last, a real name.
            if let n = number(inComponent: Substring(c)), let id = s.resolve(current), s.vault.isFolder(id) {
                if let name = try name(numbered: n, in: id, s: s) {
                    components[i] = (name, Array(repeating: true, count: name.unicodeScalars.count))
                    folder = current.appending(name)
                    changed = true
                    continue
                }
            }
            let bare = zip(c.unicodeScalars, components[i].mask).contains { !$1 && ($0 == "*" || $0 == "?" || $0 == "[") }
            folder = bare ? nil : current.appending(c)
        }
        guard changed else { return word }
        var text = ""
        var mask: [Bool] = []
        for (i, c) in components.enumerated() {
            if i > 0 { text += "/"; mask.append(false) }
            text += c.text
            mask += c.mask
        }
        return Word(text: text, quotedScalars: mask)
    }
}

extension HiddenNames {
    /// The `#N` that replaces `item`'s name in a listing on this session, or nil when names
    /// are shown (the listing adds its own kind glyph and folder `/`).
    static func maskedName(of item: Item, in s: Session) -> String? {
        active(s) ? "#\(listedNumber(of: item, in: s.vault))" : nil
    }

    /// A vault path with every item on it shown as its `#N` (`/#2/#5`); the parts that name
    /// nothing (what was typed) stay as they are.
    static func masked(_ path: VaultPath, in s: Session) -> String {
        masked(path, in: s) { item, _ in number(of: item, in: s.vault) }!
    }

    /// `masked` with the numbers items had when the running line was typed
    /// (`Session.numbersAsTyped`); nil when an item on the path had none there then: the line
    /// made or moved it, and its number now names another item in the listing the user reads
    /// (review CW-3).
    static func maskedAsTyped(_ path: VaultPath, in s: Session) -> String? {
        guard let typed = s.numbersAsTyped else { return masked(path, in: s) }
        return masked(path, in: s) { item, folder in
            typed.items(in: folder)?.firstIndex { $0.id == item.id }.map { $0 + 1 }
        }
    }

    /// The path with each item on it shown as `#` and what `number` gives (nil: no path).
    private static func masked(_ path: VaultPath, in s: Session, number: (Item, Identifier) -> Int?) -> String? {
        var shown: [String] = []
        var folder = Identifier.root
        var known = true
        for name in path.components {
            if known, let item = s.vault.child(named: name, in: folder) {
                guard let n = number(item, folder) else { return nil }
                shown.append("#\(n)")
                folder = item.id
            } else {
                known = false
                shown.append(name)
            }
        }
        return "/" + shown.joined(separator: "/")
    }
}

extension Session {
    /// A vault path as `output` may show it: under `hide-names` on a terminal every item on it
    /// is its `#N`, so that no name appears on the screen; otherwise the path as it is (the
    /// output escapes what a terminal must not get).
    public func shown(_ path: VaultPath, on output: Output) -> String {
        output.isTerminal && ViewingPreferences(self).hideNames ? HiddenNames.masked(path, in: self) : output.name(path.description)
    }

    /// `shown(_:on:)` with the numbers the running line was typed against: in a question
    /// about an item typed as `#N` (`rm -i`), whose answer the user reads off the listing they
    /// typed from (review CE-3: after `rm #1;` on the line, `rm -i #3` asked about `#2`); nil
    /// for an item the line made or moved, which had no number there then.
    func shownAsTyped(_ path: VaultPath, on output: Output) -> String? {
        output.isTerminal && ViewingPreferences(self).hideNames ? HiddenNames.maskedAsTyped(path, in: self) : output.name(path.description)
    }

    /// The path of `id` as `output` may show it (see `shown(_:on:)`).
    public func shown(_ id: Identifier, on output: Output) -> String {
        shown(vaultPath(of: id), on: output)
    }

    /// A path in a message (standard error).
    func inMessage(_ path: VaultPath) -> String { shown(path, on: err) }
}

/// The numbers items had when a typed line (several commands, or a `-c` text) began: every
/// folder's children as they stood then, numbered per folder as listings number them.
final class NumbersAsTyped {
    /// Every folder's children by name, when the line was typed.
    let children: [Identifier: [String: Identifier]]
    private var numbered: [Identifier: [(name: String, id: Identifier)]] = [:]

    init(_ vault: Vault) { children = vault.childrenByFolder }

    /// The items of `folder` in number order, or nil when it was no folder then.
    func items(in folder: Identifier) -> [(name: String, id: Identifier)]? {
        if let items = numbered[folder] { return items }
        guard let names = children[folder] else { return nil }
        let items = HiddenNames.inNumberOrder(names)
        numbered[folder] = items
        return items
    }
}

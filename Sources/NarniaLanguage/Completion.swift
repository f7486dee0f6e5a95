/// The edit Tab makes to the line, and the candidates to list when the choice is not unique.
///
/// To apply it: delete `deleteBytes` bytes (`deleteScalars` characters) just before the cursor,
/// then insert `insertText` at the cursor. If `candidates` is not empty, list them (for example
/// with `layoutColumns(_:width:)`) and redraw the prompt.
public struct Completion: Hashable, Sendable {
    /// How many bytes of UTF-8 to delete just before the cursor, before inserting.
    public var deleteBytes: Int
    /// The same span counted in Unicode scalars: what libedit's `el_deletestr` counts in a
    /// UTF-8 locale, where its `wchar_t` characters are Unicode scalars.
    public var deleteScalars: Int
    /// The text to insert at the cursor after the deletion, escaped for the line.
    public var insertText: String
    /// The choices, to be listed when there are several: display names sorted in the byte order
    /// of their UTF-8 (items' numbers `#N` by value), folders ending in `/`. Empty when the
    /// completion was unique or nothing matched.
    public var candidates: [String]

    /// An edit and its candidates, field by field.
    public init(deleteBytes: Int = 0, deleteScalars: Int = 0, insertText: String = "", candidates: [String] = []) {
        self.deleteBytes = deleteBytes
        self.deleteScalars = deleteScalars
        self.insertText = insertText
        self.candidates = candidates
    }

    /// Nothing to do: no match, or nothing to complete here.
    public static let nothing = Completion()

    /// Whether applying the completion changes the line.
    public var changesLine: Bool { deleteBytes > 0 || !insertText.isEmpty }
}

/// Completes the word at `cursor` (a byte offset into the UTF-8 of `line`), like OpenSSH sftp.
///
/// The first word of a command completes to command names; a word starting with a bare `-` (and
/// no `--` before it) to the command's flags; any other word by the `ArgumentKind` the source
/// gives for it: vault or host paths at any depth (the last component within the folder typed so
/// far, `~` standing for the home folder on the host), setting keys and values, or choices.
/// Names starting with `.` are offered only when the typed name starts with `.`; a typed `..`
/// also offers `../`. A last component with bare wildcards is matched as a glob followed by `*`,
/// and a unique match then replaces that component.
///
/// One match is inserted whole: a folder with `/` and no space (so Tab can go on), anything else
/// with the closing quote, if a quote is open, and a space. Several matches extend the word to
/// their longest common prefix, in whole characters (grapheme clusters), and are returned as
/// `candidates`. Inserted text is escaped for the quote open at the cursor (see `shellEscape`).
public func complete(line: String, cursor: Int, source: any CompletionSource) -> Completion {
    let context = tokenizeForCompletion(line: line, cursor: cursor, numberedItems: source.numbersTypedBare)
    guard !context.inComment else { return .nothing }
    let request = CompletionRequest(context: context, source: source)
    let offers = request.offers()
    guard !offers.isEmpty else { return .nothing }
    let utf8 = Array(line.utf8)

    func edit(deleting count: Int, inserting text: String, candidates: [String] = []) -> Completion {
        let deleted = utf8[(context.cursor - count)..<context.cursor]
        let scalars = deleted.reduce(0) { $0 + ($1 & 0xC0 == 0x80 ? 0 : 1) }
        return Completion(deleteBytes: count, deleteScalars: scalars, insertText: text, candidates: candidates)
    }

    // With the cursor inside a word (before the rest of it, a quote closed later, or a
    // character a backslash escapes), a unique match ends with nothing: the rest stays one word
    // with it, and its quotes balanced (review ES-3: a closing quote and a space went before
    // the rest, which then opened a quote). A folder gets its `/` unless one follows (EV-3).
    let next = context.cursor < utf8.count ? utf8[context.cursor] : nil
    let wordGoesOn = next.map { context.quote != .none || context.pendingEscape || !endsWord($0) } ?? false
    func ending(_ offer: Offer, _ quote: QuoteState) -> String {
        guard wordGoesOn else { return terminator(offer, quote) }
        return offer.isFolder && firstCharacterAfter(context, in: line, numberedItems: source.numbersTypedBare) != "/" ? "/" : ""
    }
    // An escape begun just before the cursor, deleted to write the text afresh, is written
    // again after it when the word goes on, so that it still escapes what follows (review EV-1:
    // `alpha\|␣beta.txt` lost its backslash, and the escaped blank split the word in two; EX-1:
    // `"quo\|"te.txt"`, the quote it escaped then closed the word) — but not inside quotes where
    // the line reads without it and not with it (review EW-2: `"un\|"` left unterminated), nor
    // an escape begun further than its backslash (`\x3` in `$'…'`) that what follows does not
    // go on with, a hex digit (EW-2: `$'x\x3|'` put a control character in the name).
    let escapeBegun = String(decoding: utf8[(context.cursor - context.pendingEscapeBytes)..<context.cursor], as: UTF8.self)
    func reads(deleting count: Int, inserting text: String) -> Bool {
        let edited = String(decoding: utf8[..<(context.cursor - count)] + Array(text.utf8) + utf8[context.cursor...], as: UTF8.self)
        return (try? tokenize(edited, numberedItems: source.numbersTypedBare)) != nil
    }
    func keepingEscape(_ text: String, deleting count: Int) -> String {
        guard wordGoesOn, let next, !escapeBegun.isEmpty else { return text }
        let kept = text + escapeBegun
        if context.quote == .none { return kept }
        if context.pendingEscapeBytes > 1 { return Unicode.Scalar(next).properties.isASCIIHexDigit ? kept : text }
        return reads(deleting: count, inserting: kept) || !reads(deleting: count, inserting: text) ? kept : text
    }

    // The typed component is a pattern, not a prefix; or the host spells its matches otherwise
    // (`é` typed for names spelled `e` and a combining accent, NFD), and what they share is put
    // in its place as the host spells it (review ER-2: the rest went after the spelling typed,
    // which names no file there). A unique match replaces it whole.
    let common = longestCommonPrefix(offers.map(\.name))
    let spelledOtherwise = offers.allSatisfy(\.onHost) && !common.isEmpty && common.hasPrefix(request.prefix)
        && !common.unicodeScalars.starts(with: request.prefix.unicodeScalars)
    if request.isGlob || spelledOtherwise {
        if request.isGlob && offers.count > 1 { return Completion(candidates: offers.map(\.display)) }
        let unique = offers.count == 1 ? offers.first : nil
        let replacement = unique?.name ?? common
        let start = componentStart(in: line, context, folder: request.folder, numberedItems: source.numbersTypedBare)
        let quote = start == context.partialStart ? .none : tokenizeForCompletion(line: line, cursor: start, numberedItems: source.numbersTypedBare).quote
        let text = shellEscape(replacement, in: quote, atWordStart: start == context.partialStart)
        // Written afresh from the component's start, the text leaves the quote open there: the
        // quote open at the cursor is opened again for the rest of the word (review ES-3). At
        // the end of the line, a quote it was written in becomes the one open at the cursor
        // again, unless a file's ending closes it (review EW-4: `'dir one/'é` became
        // `'dir one/e`, unterminated).
        let end = if wordGoesOn {
            (unique.map { ending($0, quote) } ?? "") + requote(from: quote, to: context.quote)
        } else if let unique, !unique.isFolder {
            terminator(unique, quote)
        } else {
            (unique.map { terminator($0, quote) } ?? "") + (quote == .none ? "" : requote(from: quote, to: context.quote))
        }
        return edit(deleting: context.cursor - start, inserting: keepingEscape(text + end, deleting: context.cursor - start),
                    candidates: unique == nil ? offers.map(\.display) : [])
    }

    // A backslash waiting to escape something (and in `$'…'` an escape begun) is dropped and
    // the text escaped afresh.
    let deleting = context.pendingEscapeBytes
    let atWordStart = context.quote == .none && context.cursor - deleting == context.partialStart
    if offers.count == 1, let offer = offers.first {
        let rest = remainder(of: offer.name, after: request.prefix)
        let text = shellEscape(rest, in: context.quote, atWordStart: atWordStart)
        return edit(deleting: deleting, inserting: keepingEscape(text + ending(offer, context.quote), deleting: deleting))
    }
    let rest = remainder(of: common, after: request.prefix)
    let text = rest.isEmpty ? "" : shellEscape(rest, in: context.quote, atWordStart: atWordStart)
    return edit(deleting: text.isEmpty ? 0 : deleting, inserting: text.isEmpty ? "" : keepingEscape(text, deleting: deleting), candidates: offers.map(\.display))
}

/// Where, in `line`, the last component of the path being typed begins: just after the bytes
/// that spell its folder part (`folder`, as typed: quotes and escapes and all), the word's start
/// when it has none. A `/` written as an escape in `$'…'` is found too (reviews ER-1, ES-1: the
/// last `/` in the line as typed was taken for it, and a folder of the path was dropped).
func componentStart(in line: String, _ context: PartialCommandLine, folder: String, numberedItems: Bool) -> Int {
    guard !folder.isEmpty else { return context.partialStart }
    let utf8 = Array(line.utf8)
    for position in context.partialStart...context.cursor where position == utf8.count || utf8[position] & 0xC0 != 0x80 {
        let typed = tokenizeForCompletion(line: line, cursor: position, numberedItems: numberedItems).partial.text
        if typed.unicodeScalars.elementsEqual(folder.unicodeScalars) { return position }
    }
    return context.partialStart
}

/// True when `name` begins with `prefix`: character by character (so `é` typed as `e` and a
/// combining accent matches), or scalar by scalar, so that a prefix ending inside a character
/// matches too: `r` for `r` + a zero-width joiner + `z`, which the screen shows as `rz`
/// (review BD-7).
func startsWith(_ name: String, _ prefix: String) -> Bool {
    name.unicodeScalars.starts(with: prefix.unicodeScalars) || name.hasPrefix(prefix)
}

/// What follows `prefix` in `text` (see `startsWith`); empty when it does not begin with it.
func remainder(of text: String, after prefix: String) -> String {
    if text.unicodeScalars.starts(with: prefix.unicodeScalars) {
        return String(String.UnicodeScalarView(text.unicodeScalars.dropFirst(prefix.unicodeScalars.count)))
    }
    return text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : ""
}

/// The longest run of whole characters (extended grapheme clusters) that starts every string,
/// so a common prefix never ends inside a multi-byte character or a grapheme. Characters are
/// compared scalar by scalar: names spelled NFC and NFD on the host, equal to Swift's ==, share
/// only what they spell alike (review EQ-1: Tab inserted one twin whole while listing both).
public func longestCommonPrefix(_ strings: [String]) -> String {
    guard let first = strings.first else { return "" }
    var prefix = first[...]
    for string in strings.dropFirst() {
        var a = prefix.startIndex, b = string.startIndex
        while a < prefix.endIndex, b < string.endIndex, prefix[a].unicodeScalars.elementsEqual(string[b].unicodeScalars) {
            a = prefix.index(after: a)
            b = string.index(after: b)
        }
        prefix = prefix[..<a]
    }
    return String(prefix)
}

/// True for a byte that ends an unquoted word: a blank, or the end of a command.
/// The first character the word under the cursor goes on with after it, quotes and escapes
/// removed — `/` for `di|'/x'` and `"di|"/x` alike (review EW-3: only the byte after the cursor
/// was looked at, and a folder completed there got a second `/`); nil when the word ends there.
/// Read by moving the cursor on a byte at a time until the word's text grows.
private func firstCharacterAfter(_ context: PartialCommandLine, in line: String, numberedItems: Bool) -> Character? {
    let typed = context.partial.text.unicodeScalars.count
    var cursor = context.cursor
    while cursor < line.utf8.count {
        cursor += 1
        let further = tokenizeForCompletion(line: line, cursor: cursor, numberedItems: numberedItems)
        guard further.partialStart == context.partialStart, !further.inComment else { return nil }
        let scalars = further.partial.text.unicodeScalars
        if scalars.count > typed { return Character(scalars[scalars.index(scalars.startIndex, offsetBy: typed)]) }
    }
    return nil
}

private func endsWord(_ byte: UInt8) -> Bool {
    [" ", "\t", "\r", "\u{0B}", "\u{0C}", "\n", ";"].contains(Unicode.Scalar(byte))
}

/// What turns the quote open after text written in `from` into the quote `to`: nothing when
/// they are the same; else the closing of the one and the opening of the other.
private func requote(from: QuoteState, to: QuoteState) -> String {
    guard from != to else { return "" }
    let close = switch from {
    case .none: ""
    case .single, .ansiC: "'"
    case .double: "\""
    }
    let open = switch to {
    case .none: ""
    case .single: "'"
    case .ansiC: "$'"
    case .double: "\""
    }
    return close + open
}

/// What follows a unique match: `/` after a folder (more to come), else the closing quote and
/// a space.
private func terminator(_ offer: Offer, _ quote: QuoteState) -> String {
    if offer.isFolder { return "/" }
    switch quote {
    case .none: return " "
    case .single, .ansiC: return "' "
    case .double: return "\" "
    }
}

/// One possible completion of the typed name.
private struct Offer {
    var name: String
    var isFolder: Bool
    /// A host file's name, spelled as the host spells it (the vault reads NFD as NFC).
    var onHost = false
    var display: String { isFolder ? name + "/" : name }

    /// The order candidates are listed in: the byte order of their UTF-8, but items' numbers
    /// (`#N`, under `hide-names`) by their value, as listings count them (review BQ-6: `#10`
    /// came before `#2`).
    static func listingOrder(_ a: Offer, _ b: Offer) -> Bool {
        if let x = a.itemNumber, let y = b.itemNumber, x != y { return x < y }
        return utf8Order(a.name, b.name)
    }

    /// The N of a name `#N`, or nil.
    private var itemNumber: Int? {
        guard name.utf8.first == UInt8(ascii: "#"), name.utf8.count > 1, name.utf8.count < 12,
              name.utf8.dropFirst().allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Int(name.dropFirst())
    }
}

/// What is being completed, worked out from the line and the source.
private struct CompletionRequest {
    private enum Target {
        case words([String])
        case vault(foldersOnly: Bool)
        case host(foldersOnly: Bool)
        case vaultOrHost
        case nothing
    }

    private let target: Target
    private let source: any CompletionSource
    private let partial: Word
    /// The typed text the candidates must start with (the last path component for paths).
    let prefix: String
    /// The folder part of a typed path, up to and including its last `/`.
    let folder: String
    /// The typed last component, when it holds bare wildcards.
    private let glob: GlobPattern?

    var isGlob: Bool { glob != nil }

    init(context: PartialCommandLine, source: any CompletionSource) {
        self.source = source
        partial = context.partial
        target = CompletionRequest.target(for: context, source: source)
        switch target {
        case .vault, .host, .vaultOrHost:
            let text = partial.text
            let slash = text.unicodeScalars.lastIndex(of: "/")   // by scalar, as TreePath splits
            folder = slash.map { String(text.unicodeScalars[...$0]) } ?? ""
            prefix = slash.map { String(text.unicodeScalars[text.unicodeScalars.index(after: $0)...]) } ?? text
            let pattern = GlobPattern(partial.split().last ?? partial)
            glob = pattern.hasWildcards ? pattern : nil
        case .words, .nothing:
            folder = ""
            prefix = partial.text
            glob = nil
        }
    }

    private static func target(for context: PartialCommandLine, source: any CompletionSource) -> Target {
        guard let first = context.previousWords.first else {
            // A batch line may start with `-` to let the command fail: complete after it.
            let names = source.commandNames
            return .words(context.partial.looksLikeFlag ? names.map { "-" + $0 } : names)
        }
        let command = first.looksLikeFlag ? String(first.text.dropFirst()) : first.text
        let arguments = context.previousWords.dropFirst()
        var flagsEnded = false
        var index = 0
        for word in arguments {
            if flagsEnded {
                index += 1
            } else if word.looksLikeFlag {
                if word.text == "--" { flagsEnded = true }
            } else {
                index += 1
            }
        }
        if !flagsEnded && context.partial.looksLikeFlag {
            return .words(source.flags(for: command))
        }
        let kind = source.argumentKind(for: command, argumentIndex: index,
                                       previousWords: arguments.map(\.text))
        switch kind {
        case .none: return .nothing
        case .vaultPath: return .vault(foldersOnly: false)
        case .vaultFolder: return .vault(foldersOnly: true)
        case .hostPath: return .host(foldersOnly: false)
        case .hostFolder: return .host(foldersOnly: true)
        case .vaultOrHostPath: return .vaultOrHost
        case .settingKey: return .words(source.settingKeys)
        case .settingValue(let key): return .words(source.settingValues(for: key))
        case .choice(let choices): return .words(choices)
        }
    }

    /// The matching offers, sorted and without duplicates.
    func offers() -> [Offer] {
        var offers: [Offer]
        switch target {
        case .nothing:
            return []
        case .words(let words):
            offers = words.filter { startsWith($0, prefix) }.map { Offer(name: $0, isFolder: false) }
        case .vault(let foldersOnly):
            offers = matching(source.vaultEntries(in: folder), foldersOnly: foldersOnly)
        case .host(let foldersOnly):
            if partial.startsWithBareTilde && partial.text == "~" {
                return [Offer(name: "~", isFolder: true)]
            }
            offers = hostOffers(foldersOnly: foldersOnly)
        case .vaultOrHost:
            if partial.startsWithBareTilde {
                offers = partial.text == "~" ? [Offer(name: "~", isFolder: true)] : hostOffers(foldersOnly: false)
            } else if ["/", "./", "../"].contains(where: { partial.text.utf8.starts(with: $0.utf8) }) {
                // A path written out (`/d`, `./`): the host's first, as sftp's `get` completes
                // its destination; the vault's when the host has none.
                offers = hostOffers(foldersOnly: false)
                if offers.isEmpty { offers = matching(source.vaultEntries(in: folder), foldersOnly: false) }
            } else {
                offers = matching(source.vaultEntries(in: folder), foldersOnly: false)
                if offers.isEmpty { offers = hostOffers(foldersOnly: false) }
            }
        }
        // Byte for byte: NFC and NFD twins on the host are two names (review EP-1).
        var seen = Set<[UInt8]>()
        return offers.filter { seen.insert(Array($0.display.utf8)).inserted }.sorted(by: Offer.listingOrder)
    }

    /// Host entries for the folder typed so far, `~/` standing for the home folder.
    private func hostOffers(foldersOnly: Bool) -> [Offer] {
        var hostFolder = folder
        if partial.startsWithBareTilde, folder.utf8.starts(with: "~/".utf8), let home = source.homeDirectory {
            hostFolder = home + (home.unicodeScalars.last == "/" ? "" : "/") + String(folder.unicodeScalars.dropFirst(2))
        }
        return matching(source.hostEntries(in: hostFolder), foldersOnly: foldersOnly).map { offer in
            var offer = offer
            offer.onHost = true
            return offer
        }
    }

    private func matching(_ entries: [CompletionEntry], foldersOnly: Bool) -> [Offer] {
        let showHidden = prefix.hasPrefix(".")
        var offers = entries.compactMap { entry -> Offer? in
            let name = entry.name
            guard name != ".", name != "..", !name.isEmpty,
                  !foldersOnly || entry.isFolder,
                  showHidden || !name.hasPrefix(".") else { return nil }
            let matches = glob.map { $0.matchesPrefix(of: name) } ?? startsWith(name, prefix)
            return matches ? Offer(name: name, isFolder: entry.isFolder) : nil
        }
        // Of NFC and NFD twins on the host (one name to Swift's ==), the one spelled as typed,
        // scalar by scalar, is the one meant: the other is not offered beside it (review EQ-1:
        // the whole of `dé` typed, the twin kept Tab from adding the `/`).
        let spelledAsTyped = offers.filter { $0.name.unicodeScalars.starts(with: prefix.unicodeScalars) }.map(\.name)
        offers.removeAll { offer in
            !offer.name.unicodeScalars.starts(with: prefix.unicodeScalars) && spelledAsTyped.contains { $0 == offer.name }
        }
        if prefix == ".." && glob == nil {
            offers.append(Offer(name: "..", isFolder: true))
        }
        return offers
    }
}

import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaCrypto
import NarniaKinds
import NarniaStore
import Synchronization

/// The state of one vault shell: the open vault, the current folders on both sides, the
/// output streams, and the flags that long commands poll.
public final class Session: @unchecked Sendable {
    // Sendable only so that the signal watcher may hold it and call `requestExit()`, which
    // touches nothing but the atomic `exitFlag`; all other state is the main thread's.
    /// The open vault.
    public let vault: Vault
    /// The current vault folder.
    public internal(set) var cwd = VaultPath.root {
        didSet { cwdID = resolve(cwd) ?? .root }
    }
    /// The current folder's item, to follow it when it is moved.
    private(set) var cwdID = Identifier.root
    var previousCwd: VaultPath?
    /// Standard output and standard error.
    public let out: Output
    public let err: Output
    /// True when commands come from a person at a terminal (progress bars may be drawn).
    public let interactive: Bool
    /// libmagic on this thread, loaded on first use (most sessions never classify).
    lazy var classifier: Classifier? = try? Classifier()
    lazy var classifierPool = ClassifierPool()
    /// The questions `passwd` asks on a terminal (nil when there is none), and the KDF limits
    /// for new wrappings.
    public var passphraseQuestions: PassphraseQuestions?
    public var kdfParametersForNewPassphrase: KDFParameters = .moderate
    /// Set by the SIGINT handler; long commands poll it and stop cleanly. An atomic word:
    /// lock-free, so a signal handler may store it.
    public static var interruptRequested: Int32 {
        get { interruptFlag.load(ordering: .relaxed) }
        set { interruptFlag.store(newValue, ordering: .relaxed) }
    }
    private static let interruptFlag = Atomic<Int32>(0)
    /// Set by the SIGTERM and SIGHUP handlers (with `interruptRequested`): the process ends
    /// after a grace, wherever it is, so what cannot be finished in it is not begun (review
    /// DF-2: the removal of originals after an import's commit).
    public static var terminationRequested: Bool {
        get { terminationFlag.load(ordering: .relaxed) }
        set { terminationFlag.store(newValue, ordering: .relaxed) }
    }
    private static let terminationFlag = Atomic<Bool>(false)
    /// True when the commands themselves arrive on standard input (so `import -` cannot use it).
    public var commandsFromStandardInput = false
    /// True when the commands are typed for this run (the interactive shell, `-c`), not read
    /// from a batch file written beforehand (`-b`, piped): only typed commands name items by
    /// the numbers `hide-names` shows (`HiddenNames.namesByNumber`).
    public var commandsTyped = false
    /// Under hide-names, while a typed line of several commands (or a `-c` text) runs: the
    /// numbers items had when it was typed, which its `#N` are read against (review BQ-1:
    /// `rm -r #1; rm -r #2` removed the items listed as #1 and #3).
    var numbersAsTyped: NumbersAsTyped?
    /// The store's folders, watched while a session reads lines (`watchStore`), so that other
    /// devices' changes a sync engine brings are read between lines (`readChangesArrived`).
    var storeWatch: DirectoryWatch?

    /// Runs `body` with `#N` read against the vault as it is now, for every command it runs
    /// (a `-c` text of several lines: review CC-2), where names are read by number.
    public func readingNumbersAsTyped<T>(_ body: () -> T) -> T {
        guard numbersAsTyped == nil, HiddenNames.namesByNumber(self) else { return body() }
        numbersAsTyped = NumbersAsTyped(vault)
        defer { numbersAsTyped = nil }
        return body()
    }
    /// The host files this run was opened with (`--passphrase-file`, `-b FILE`), by identity,
    /// each with what it is: `import --move` takes them in but keeps them (review BG-8: the
    /// passphrase file, perhaps the only place the passphrase was written, went into the vault
    /// it unlocks).
    var filesOpenedWith: [HostFileIdentity: String] = [:]

    /// Notes that this run was opened with the host file `path`, `what` it is ("the passphrase
    /// file this run was opened with"): `import --move` never removes it.
    public func keepOriginal(of path: String, because what: String) {
        if let identity = HostFileIdentity(of: path) { filesOpenedWith[identity] = what }
    }

    /// The same for the file open on descriptor `fd` (`--passphrase-fd N` reading a file).
    public func keepOriginal(ofDescriptor fd: Int32, because what: String) {
        var st = stat()
        if fstat(fd, &st) == 0 && st.isRegularFile { filesOpenedWith[HostFileIdentity(st)] = what }
    }
    /// Set by `exit`/`quit`, and by the signal watcher's thread on a panic (`requestExit`)
    /// while the main loop reads it: atomic.
    public internal(set) var exitRequested: Bool {
        get { exitFlag.load(ordering: .acquiring) }
        set { exitFlag.store(newValue, ordering: .releasing) }
    }
    private let exitFlag = Atomic<Bool>(false)
    /// Set when a host command was refused for what may follow it (`Runner`, `HostShell`): a
    /// run of lines (`-c`, `-b`) stops there, `--keep-going` and a `-` mark notwithstanding,
    /// for the lines after it may be the host's (review CQ-5, CQ-7).
    public internal(set) var runMustStop = false
    /// Set when an `import` or `export` marked `-` failed (`Runner`): the run goes on, and
    /// still ends with status 1, for a partial import or export is never 0 (BRIEF; review
    /// DC-4: a nightly `-export` that wrote half its files exited 0).
    public internal(set) var excusedTransferFailed = false

    public init(vault: Vault, out: Output, err: Output, interactive: Bool) {
        self.vault = vault
        self.out = out
        self.err = err
        self.interactive = interactive
    }

    // MARK: Messages

    /// Runs `body` for each operand of `command`; one that fails with `CommandFailure` is
    /// reported (with its hint) and the others go on, as coreutils and `cp` do. Returns
    /// whether one failed (the command then fails once it has done the rest). Any other error
    /// (the store's own) stops and is thrown.
    func forEachOperand<T>(_ operands: [T], of command: String, _ body: (T) throws -> Void) throws -> Bool {
        var failed = false
        for operand in operands {
            do {
                try body(operand)
            } catch let failure as CommandFailure {
                error(command, failure.message, hint: failure.hint)
                failed = true
            }
        }
        return failed
    }

    /// The running command's name, and the word that was typed for it (an alias: `get` for
    /// `export`, `quit` for `exit`), which messages then name (review AX7).
    var runningCommand: (name: String, typed: String)?

    /// `command` as the user typed it, when it is the running command.
    func asTyped(_ command: String) -> String {
        guard let running = runningCommand, running.name == command else { return command }
        return running.typed
    }

    /// Prints `narnia: error: CMD: MESSAGE` (and a hint) on stderr.
    public func error(_ command: String, _ message: String, hint: String? = nil) {
        out.flush()
        err.messageLine("narnia: error: \(located)\(asTyped(command)): \(message)")
        if let hint { err.messageLine("narnia: hint: \(hint)") }
        err.flush()
    }

    /// Where the running command came from, in `-b FILE` mode: `FILE:LINE`, which every
    /// error, warning and note then names first.
    public var location: String?
    var located: String { location.map { "\($0): " } ?? "" }

    /// Prints `narnia: warning: CMD: MESSAGE` on stderr.
    public func warning(_ command: String, _ message: String) {
        out.flush()
        err.messageLine("narnia: warning: \(located)\(asTyped(command)): \(message)")
        err.flush()
    }

    /// Prints `narnia: note: CMD: MESSAGE` on stderr: worth knowing, not a fault.
    public func note(_ command: String, _ message: String) {
        out.flush()
        err.messageLine("narnia: note: \(located)\(asTyped(command)): \(message)")
        err.flush()
    }

    /// Observer for long transfers: polls the interrupt flag, and draws progress on a terminal.
    func observer(progress: ProgressMeter?) -> TransferObserver {
        TransferObserver(progress: { done in progress?.update(itemBytes: done) },
                         isCancelled: { Session.interruptRequested != 0 })
    }

    /// After `command`: when the current folder was moved, follows it; when it was removed,
    /// moves to the nearest folder above it that still exists. Says so either way, in the
    /// command's name (a note said `cd:` after an `rm`: review AJ).
    func settleCurrentFolder(after command: String?) {
        guard resolve(cwd) != cwdID || !vault.isFolder(cwdID) else { return }
        // After other devices' changes arrived, between lines, no command is to blame.
        let note: (String) -> Void = { message in
            if let command { self.note(command, message) } else { self.err.messageLine("narnia: note: \(message)"); self.err.flush() }
        }
        // Merged with another device's folder of its name (a sync): still the folder there
        // (review CD: the note said it no longer existed).
        if !vault.isFolder(cwdID), let here = resolve(cwd), vault.folder(here, standsFor: cwdID) {
            cwdID = here
            return
        }
        // Under hide-names the path it had names nothing now, so it has no number to show
        // (review CC-6: the note printed both paths' real names).
        let before = err.isTerminal && ViewingPreferences(self).hideNames ? "" : " " + inMessage(cwd)
        if cwdID != .root, vault.isFolder(cwdID) {
            cwd = vaultPath(of: cwdID)
            note("the current folder\(before) moved to \(inMessage(cwd))")
            return
        }
        var path = cwd
        while !path.isRoot, resolve(path).map({ !vault.isFolder($0) }) ?? true { path = path.parent }
        let madeAnew = path == cwd
        cwd = path
        // Removed, and another folder made under its name (review CR-2: "no longer exists; now
        // in" the same path read as nonsense).
        note(madeAnew ? "the current folder\(before) was removed, and another made in its place; now in that one, whose items were not shown yet"
                      : "the current folder\(before) no longer exists; now in \(inMessage(path))")
    }

    // MARK: Vault paths

    /// The item at an absolute vault path, or nil. The root has no item: use `folderID(of:)`.
    func resolve(_ path: VaultPath) -> Identifier? {
        var current = Identifier.root
        for name in path.components {
            guard let child = vault.child(named: name, in: current) else { return nil }
            current = child.id
        }
        return current
    }

    /// Names in a vault folder, or nil when the path is not a folder.
    func childNames(_ path: VaultPath) -> [String]? {
        guard let id = resolve(path), vault.isFolder(id) else { return nil }
        return vault.childNames(of: id).map(Array.init) ?? []
    }

    /// Expands a vault path word (globs included) to absolute paths. A pattern that matches
    /// nothing throws "no match"; a plain path is returned whether it exists or not.
    func expand(_ word: Word) throws -> [VaultPath] {
        guard !word.text.isEmpty else { throw CommandFailure("'': no such file or folder") }
        let word = try HiddenNames.resolving(word, in: self)
        let pattern = PathPattern(word.mapSegments { $0.precomposedNFC })
        if !pattern.hasWildcards { try checkClimbs(pattern) }
        let paths = pattern.expand(relativeTo: cwd) { childNames($0) }
        if pattern.hasWildcards && paths.isEmpty { throw CommandFailure("\(word.text): no match") }
        return paths
    }

    /// The failure for a folder `path` that is not there: "not a folder" of the file on its
    /// way or at its end, where one is (as `mkdir -p` says it), else "no such folder" of `path`
    /// (review EQ-2: `mv a /f.txt/b/c` said `/f.txt/b: no such folder`).
    func noSuchFolder(_ path: VaultPath) -> CommandFailure {
        for depth in path.components.indices {
            let above = VaultPath(components: Array(path.components[...depth]))
            guard let id = resolve(above) else { break }
            if !vault.isFolder(id) { return CommandFailure("\(inMessage(above)): not a folder") }
        }
        return CommandFailure("\(inMessage(path)): no such folder")
    }

    /// Checks that each `..` of a plain path climbs out of a folder that is there, as a file
    /// system resolves it: `rm -r typo/../keep` with no folder `typo` fails, rather than acting
    /// on `keep` (review AE). (A pattern's `..` already climbs only out of folders it finds.)
    func checkClimbs(_ pattern: PathPattern) throws {
        var path = pattern.isAbsolute ? VaultPath.root : cwd
        for component in pattern.components {
            switch component {
            case .parent:
                guard childNames(path) != nil else {
                    throw noSuchFolder(path)
                }
                path = path.parent
            case .name(let name): path = path.appending(name)
            case .glob: return
            }
        }
    }

    /// Expands and requires existence: returns (path, item id) pairs.
    func existing(_ word: Word) throws -> [(VaultPath, Identifier)] {
        let mustBeFolder = PathPattern(word).hasTrailingSlash
        return try expand(word).map { path in
            guard let id = resolve(path) else { throw CommandFailure("\(inMessage(path)): no such file or folder") }
            if mustBeFolder && !vault.isFolder(id) { throw CommandFailure("\(inMessage(path)): not a folder") }
            return (path, id)
        }
    }

    /// The one folder a word names.
    func folder(_ word: Word) throws -> (VaultPath, Identifier) {
        let matches = try existing(word)
        guard matches.count == 1 else { throw CommandFailure("\(word.text): names more than one item") }
        guard vault.isFolder(matches[0].1) else { throw CommandFailure("\(inMessage(matches[0].0)): not a folder") }
        return matches[0]
    }

    // MARK: Host paths

    /// Expands a host path word: `~`, globs; a plain path is returned whether it exists or not.
    /// Relative patterns stay relative (as a shell prints them) unless they climb with `..`.
    func expandHost(_ word: Word) throws -> [String] {
        // As for a vault path; `import: : no such…` read as a broken line (review AX7).
        guard !word.text.isEmpty else { throw CommandFailure("'': no such file or folder") }
        let w = try word.expandingTildeFromEnvironment()
        let pattern = PathPattern(w)
        guard pattern.hasWildcards else { return [w.text] }
        let climbs = pattern.components.contains { if case .parent = $0 { true } else { false } }
        let relative = !pattern.isAbsolute && !climbs
        let start = pattern.isAbsolute || relative ? VaultPath.root
            : VaultPath(components: try currentHostDirectory().pathComponents)
        // Names that are not UTF-8 are matched as scripts spell them (`\xHH`), so that a
        // pattern matching one fails whole rather than leave it out in silence (review AQ).
        // Each such path, with its name as this message's stream spells it (`?` on a terminal).
        var undecodable: [TreePath: String] = [:]
        let paths = pattern.expand(relativeTo: start) { path in
            let dir = relative ? (path.isRoot ? "." : "." + path.description) : path.description
            guard FileSystem.isDirectory(dir), let listing = try? FileSystem.listDirectoryCountingUndecodable(dir) else { return nil }
            return listing.names + listing.undecodable.map { bytes in
                let name = FileSystem.spelled(undecodable: bytes)
                undecodable[path.appending(name)] = err.undecodableName(bytes)
                return name
            }
        }
        func text(_ path: TreePath) -> String { relative ? String(path.description.dropFirst()) : path.description }
        let unnamed = paths.filter { path in undecodable.keys.contains { $0 == path || $0.isAncestor(of: path) } }
        if !unnamed.isEmpty {
            func shown(_ path: TreePath) -> String {
                var components = path.components
                for (name, spelled) in undecodable where name == path || name.isAncestor(of: path) {
                    components[name.components.count - 1] = spelled
                }
                return text(TreePath(components: components))
            }
            let shown = unnamed.prefix(3).map(shown).joined(separator: ", ") + (unnamed.count > 3 ? ", …" : "")
            throw CommandFailure("\(word.text): matches \(unnamed.count == 1 ? "a name" : "\(unnamed.count) names") that \(unnamed.count == 1 ? "is" : "are") not valid UTF-8 (\(shown)), which cannot be named here; none of its matches was used",
                                 hint: "rename \(unnamed.count == 1 ? "it" : "them") in UTF-8 and run the command again")
        }
        if paths.isEmpty { throw CommandFailure("\(word.text): no match") }
        // In the order an import takes a folder's entries: of NFC and NFD twins, the NFC one
        // first, to keep the vault name (review EP-1; AR2 for a folder's entries).
        return paths.map { (path: $0, order: $0.components.map(HostNameOrder.init)) }
            .sorted { $0.order.lexicographicallyPrecedes($1.order) }
            .map { text($0.path) }
    }

    /// The process's working directory (the host side's current folder).
    /// - Throws: `CommandFailure` when it is gone or its path is not valid UTF-8 (renamed or
    ///   removed since narnia started): `/` stood for it, and `export` wrote there (review BE-7).
    func currentHostDirectory() throws -> String {
        guard let here = FileSystem.currentDirectory() else {
            throw CommandFailure("the current host folder was removed, or its path is no longer valid UTF-8", hint: "lcd to another folder")
        }
        return here
    }

    /// The vault path of an item.
    func vaultPath(of id: Identifier) -> VaultPath {
        VaultPath(components: vault.pathComponents(of: id))
    }

    /// The item type check for libmagic at import.
    func classify(_ bytes: UnsafeRawBufferPointer) -> (mime: String, kind: ItemKind) {
        classifier?.classify(bytes) ?? ("application/octet-stream", .other)
    }

    /// The same, on a worker thread: the answer is waited for when the import commits.
    func classifyLater(_ bytes: UnsafeRawBufferPointer) -> () -> ImportBatch.ContentType {
        classifierPool.classifyLater(bytes)
    }
}

extension String {
    /// The NFC form (names in the vault are NFC).
    var precomposedNFC: String { ItemName.nfc(self) }
}

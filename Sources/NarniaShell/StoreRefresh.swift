import NarniaLanguage
import NarniaStore
import NarniaSystem

/// A session that reads lines (the interactive shell, `-b`, commands piped) reads other
/// devices' changes as a sync engine brings them, between lines: before, it showed the vault
/// as it was when opened for its whole life — items removed elsewhere still listed (their
/// content "not yet on this device"), new ones never (review CF-4).
extension Session {
    /// Starts watching the store's folders (inotify; where none is to be had, the session
    /// shows what it opened, as before).
    public func watchStore() {
        storeWatch = DirectoryWatch(folders: vault.foldersToWatch)
    }

    /// Reads the journals again when another device's journal (or any journal's copy) changed
    /// in the store since last asked, and says what changed; nothing when none did. Not while
    /// a line's numbers are read as typed.
    ///
    /// With `line`, about to run: returns false, having said why, when what arrived changed
    /// what the line means. A line typed at the prompt (`typedAtPrompt`) that removes, moves or
    /// overwrites items was typed against the vault as the prompt showed it: after any change
    /// to the tree it is not run (review CO-5, CQ-1, CQ-2: `#1`, read off a listing, named an
    /// item that had just arrived or moved). A line typed or read in a folder that another
    /// device moved or removed meanwhile is not run either when it names items (review CO-6,
    /// CQ-3, CQ-4: `rm -r *` typed in a removed folder ran in the folder above, the vault's
    /// root; in one removed and made anew, it removed what had never been shown). Other lines
    /// run on what arrived: `ls` shows it, `exit` and `panic` leave, whatever a sync engine
    /// brings while they are typed.
    @discardableResult
    public func readChangesArrived(beforeRunning line: String? = nil, typedAtPrompt: Bool = false) -> Bool {
        let (typedIn, folder) = (cwd, cwdID)
        // What the line needs of the tree is asked only once something arrived.
        guard let change = readChangesArrived(), let line else { return true }
        let use = treeUse(ofLine: line)
        if typedAtPrompt && change.changedTree && use == .reshapes {
            err.messageLine("narnia: error: the line was not run: other devices' changes arrived while it was typed, after the prompt showed the vault")
            err.messageLine("narnia: hint: look again; Up brings the line back")
        } else if use > .none && (cwd != typedIn || (cwdID != folder && !(vault.folder(cwdID, standsFor: folder) && !vault.wasRemoved(folder)))) {
            // (A folder merged with another device's of its name — `mkdir -p` on both — is
            // still the folder the line was typed in: review DO-1; not one removed there and
            // shown again for what this device put in it meanwhile, DQ-1: `rm *` removed what
            // a third device's folder of its name held, never shown here.)
            err.messageLine("narnia: error: \(located)the line typed in \(inMessage(typedIn)) was not run: that folder was moved or removed on another device")
        } else {
            return true
        }
        err.flush()
        return false
    }

    /// The most any command of `line` needs of the vault's folders (`CommandSpec.TreeUse`),
    /// the line split as it runs (review CW-1: split otherwise, a `#1` at the prompt under
    /// hide-names began a comment, and the `rm -r *` after it went unseen); `.none` for a
    /// blank line, a comment, or a command asked for its help; `.namesItems` for a line that
    /// does not split into words or names no known command (it fails as it runs).
    private func treeUse(ofLine line: String) -> CommandSpec.TreeUse {
        guard let commands = try? tokenize(line, numberedItems: HiddenNames.numbersTypedBare(self)) else { return .namesItems }
        return commands.map { words -> CommandSpec.TreeUse in
            let (words, _) = Self.withoutMayFailMark(words)
            guard let first = words.first else { return .none }
            if Self.isHostCommand(words) { return .none }
            guard let spec = CommandTable.find(first.text) else { return .namesItems }
            let operands = Array(words.dropFirst())
            if spec.asksForHelp(operands) { return .none }
            return spec.treeUse(of: try? spec.parse(operands))
        }.max() ?? .none
    }

    /// Reads what arrived (see above); returns how the tree changed, nil when nothing was read.
    private func readChangesArrived() -> TreeChange? {
        guard let watch = storeWatch, numbersAsTyped == nil else { return nil }
        var (names, overflowed) = changedNames(watch)
        // This device's journal replaced (renamed over, or removed) since the last line: saved
        // before anything else, and the copy saved is among the changes.
        if overflowed || vault.isOpenJournal(amongNames: names) {
            sayWarningsSinceOpen(after: vault.saveJournalIfReplaced)
            let more = changedNames(watch)
            names.formUnion(more.names)
            overflowed = overflowed || more.overflowed
        }
        guard overflowed || vault.changesMatter(names) else { return nil }
        let change: TreeChange
        do {
            change = try vault.reload()
        } catch MetadataError.unknownMasterKey {
            err.messageLine("narnia: note: journals sealed under a new master key arrived (another device ran 'passwd --rotate'): this session goes on with the vault as it was; open the vault again, with the new passphrase, to see them")
            err.flush()
            storeWatch = nil
            return nil
        } catch {
            err.messageLine("narnia: warning: other devices' changes arrived but could not be read (\(describe(error))); this session goes on with the vault as it was")
            err.flush()
            return nil
        }
        // What the reload itself did to the store (its deletions, its own records) is no news.
        _ = watch.takeChanges()
        for warning in vault.warnings { err.messageLine("narnia: warning: \(warning)") }
        var said: [String] = []
        if !change.added.isEmpty { said.append(change.added.count == 1 ? "1 new item" : "\(change.added.count) new items") }
        if change.removed > 0 { said.append(change.removed == 1 ? "1 item removed" : "\(change.removed) items removed") }
        let copies = change.becameConflictCopies.count
        if copies > 0 { said.append(copies == 1 ? "1 file here renamed as a conflict copy" : "\(copies) files here renamed as conflict copies") }
        // Only what changed the tree is news (CJ-5: the copy this session saved of its own
        // replaced journal was said as other devices' changes).
        if !said.isEmpty { err.messageLine("narnia: note: other devices' changes arrived: " + said.joined(separator: ", ")) }
        err.flush()
        // The current folder removed or moved there (review CL-3: the prompt went on showing it).
        settleCurrentFolder(after: nil)
        if change.changedTree { HiddenNames.arrivals += 1 }
        return change
    }

    /// The names changed in the store's folders since last asked; a shard folder made since is
    /// watched from now on, and what arrived in it before is among the names.
    private func changedNames(_ watch: DirectoryWatch) -> (names: Set<String>, overflowed: Bool) {
        let (changes, overflowed) = watch.takeChanges()
        var names = Set<String>()
        for change in changes {
            if change.isNewFolder && vault.isShardFolder(change.name, in: change.folder) {
                let folder = change.folder + "/" + change.name
                watch.watch(folder)
                names.formUnion((try? FileSystem.listDirectory(folder)) ?? [])
            } else {
                names.insert(change.name)
            }
        }
        return (names, overflowed)
    }

    /// Runs `body` (which may note warnings on the vault), then says the warnings it noted.
    public func sayWarningsSinceOpen(after body: () -> Void = {}) {
        body()
        let warnings = vault.takeWarningsSinceOpen()
        guard !warnings.isEmpty else { return }
        out.flush()
        for warning in warnings { err.messageLine("narnia: warning: \(warning)") }
        err.flush()
    }
}

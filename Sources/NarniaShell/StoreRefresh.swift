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
    /// With `line`, the line just typed (or read), about to run: returns false, having said
    /// why, when what arrived changed what the line means — the current folder it was typed in
    /// moved or went (review CO-6: `rm -r *` typed in a folder another device removed ran in the
    /// folder above, the vault's root), or its item numbers (`#3`, under hide-names) were read
    /// off a listing that no longer holds (review CO-5: `rm #1` removed an item just arrived).
    @discardableResult
    public func readChangesArrived(beforeRunning line: String? = nil) -> Bool {
        let typedIn = cwd
        let numbered = line.map { HiddenNames.holdsNumbers($0, s: self) } ?? false
        let runs = line.map { (try? tokenize($0))?.isEmpty == false } ?? false
        guard readChangesArrived(), runs else { return true }
        if cwd != typedIn {
            err.messageLine("narnia: error: \(located)the line typed in \(inMessage(typedIn)) was not run: that folder was moved or removed on another device")
        } else if numbered {
            err.messageLine("narnia: error: \(located)the line was not run: other devices' changes arrived after the listing its item numbers were read from, which may name other items now")
            err.messageLine("narnia: hint: list the folder again")
        } else {
            return true
        }
        err.flush()
        return false
    }

    /// Reads what arrived (see above); returns whether the tree changed.
    private func readChangesArrived() -> Bool {
        guard let watch = storeWatch, numbersAsTyped == nil else { return false }
        var (names, overflowed) = changedNames(watch)
        // This device's journal replaced (renamed over, or removed) since the last line: saved
        // before anything else, and the copy saved is among the changes.
        if overflowed || vault.isOpenJournal(amongNames: names) {
            sayWarningsSinceOpen(after: vault.saveJournalIfReplaced)
            let more = changedNames(watch)
            names.formUnion(more.names)
            overflowed = overflowed || more.overflowed
        }
        guard overflowed || vault.changesMatter(names) else { return false }
        let change: TreeChange
        do {
            change = try vault.reload()
        } catch MetadataError.unknownMasterKey {
            err.messageLine("narnia: note: journals sealed under a new master key arrived (another device ran 'passwd --rotate'): this session goes on with the vault as it was; open the vault again, with the new passphrase, to see them")
            err.flush()
            storeWatch = nil
            return false
        } catch {
            err.messageLine("narnia: warning: other devices' changes arrived but could not be read (\(describe(error))); this session goes on with the vault as it was")
            err.flush()
            return false
        }
        // What the reload itself did to the store (its deletions, its own records) is no news.
        _ = watch.takeChanges()
        for warning in vault.warnings { err.messageLine("narnia: warning: \(warning)") }
        var said: [String] = []
        if !change.added.isEmpty { said.append(change.added.count == 1 ? "1 new item" : "\(change.added.count) new items") }
        if change.removed > 0 { said.append(change.removed == 1 ? "1 item removed" : "\(change.removed) items removed") }
        // Only what changed the tree is news (CJ-5: the copy this session saved of its own
        // replaced journal was said as other devices' changes).
        if !said.isEmpty { err.messageLine("narnia: note: other devices' changes arrived: " + said.joined(separator: ", ")) }
        err.flush()
        // The current folder removed or moved there (review CL-3: the prompt went on showing it).
        settleCurrentFolder(after: nil)
        return !change.added.isEmpty || change.removed > 0
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

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
    public func readChangesArrived() {
        guard let watch = storeWatch, numbersAsTyped == nil else { return }
        let (changes, overflowed) = watch.takeChanges()
        var matters = overflowed
        for change in changes where vault.changeMatters(name: change.name, in: change.folder, isNewFolder: change.isNewFolder) {
            if change.isNewFolder { watch.watch(change.folder + "/" + change.name) }
            matters = true
        }
        guard matters else { return }
        let change: TreeChange
        do {
            change = try vault.reload()
        } catch MetadataError.unknownMasterKey {
            err.messageLine("narnia: note: journals sealed under a new master key arrived (another device ran 'passwd --rotate'): this session goes on with the vault as it was; open the vault again, with the new passphrase, to see them")
            err.flush()
            storeWatch = nil
            return
        } catch {
            err.messageLine("narnia: warning: other devices' changes arrived but could not be read (\(describe(error))); this session goes on with the vault as it was")
            err.flush()
            return
        }
        // What the reload itself did to the store (its deletions, its own records) is no news.
        _ = watch.takeChanges()
        for warning in vault.warnings { err.messageLine("narnia: warning: \(warning)") }
        var said: [String] = []
        if !change.added.isEmpty { said.append(change.added.count == 1 ? "1 new item" : "\(change.added.count) new items") }
        if change.removed > 0 { said.append(change.removed == 1 ? "1 item removed" : "\(change.removed) items removed") }
        if !said.isEmpty || !vault.warnings.isEmpty {
            err.messageLine("narnia: note: other devices' changes arrived" + (said.isEmpty ? "" : ": " + said.joined(separator: ", ")))
        }
        err.flush()
    }
}

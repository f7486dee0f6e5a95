import NarniaStore

/// What `sync` does, worked out from the two listings (docs/FORMAT.md, "What sync engines may
/// do to the store"): files are written once, so a side that lacks one gets it; an object or
/// key file of the wrong length is incomplete and the right one replaces it; journals only
/// grow, so one present on both sides at different lengths is fetched to compare (and one of
/// this device's of one length whose ends differ: `SyncCommand.compareSameLengthJournals`); retired
/// files are never copied, and are deleted on both sides once every device has heard.
struct SyncPlan {
    /// Files to fetch from the remote: objects and key files, then journals (taken in only if
    /// they extend the copy here).
    var fetch: [SyncFile] = []
    /// Files to send: objects and key files first, journals after them.
    var sendFirst: [SyncFile] = []
    var sendJournals: [SyncFile] = []
    /// Retired files to delete here and there.
    var deleteHere: [SyncFile] = []
    var deleteThere: [SyncFile] = []
    /// Journals of the same length on both sides, taken to be the same (see
    /// `SyncCommand.compareSameLengthJournals`).
    var sameLengthJournals: [(SyncFile, Int64)] = []
    /// Key files and inbox public key files of one length on both sides, compared whole before
    /// the transfers (`SyncCommand.differingSameLengthKeyFiles`).
    var sameLengthKeyFiles: [(SyncFile, Int64)] = []
    /// Those of them fetched because their ends differ: the remote holds another version of
    /// this device's journal, and the version here must never be sent over it.
    var forkedThere: Set<StorePath> = []
    /// Retired journals due for deletion there whose copy there is no longer than the one
    /// here, with their length there: deleted there only once its last bytes match those here
    /// at the same place (`SyncCommand.confirmRetiredThere`). A version of one length, or
    /// shorter, that forks from this one (another copy of this store writing as this device)
    /// was deleted unread: a retirement's reading is judged by length alone there.
    var retiredToConfirm: [(file: SyncFile, size: Int64, here: String)] = []
    /// Retired journals there due for deletion of which no version is here, of a length a
    /// retirement read: fetched, and deleted there only when what arrived is the version read
    /// (its hash: `Vault.isAsRetirementRead`); any other is taken in and read first.
    var retiredToCheck = Set<StorePath>()
    /// Key files there of another length than the whole one here, which replaces them: key
    /// files are written once, whole, and never change, so such a copy is damage or forgery
    /// (review CG-1: a longer one was taken over the one here, and the vault no longer opened).
    var keyFilesAlteredThere: [SyncFile] = []
    /// This store's files with their sizes when the plan was made.
    var here: [(SyncFile, Int64)] = []
    /// Bytes to move each way.
    var fetchBytes: Int64 = 0
    var sendBytes: Int64 = 0

    /// Which side's copy of a file that exists on both is right.
    enum Verdict { case same, fetch, send, compare }

    /// The plan. `here` holds this store's files with their sizes; `there` the remote's, by path.
    static func make(here: [(SyncFile, Int64)], there: [StorePath: Int64], vault: Vault) -> SyncPlan {
        var plan = SyncPlan()
        plan.here = here
        var hereByPath: [StorePath: (SyncFile, Int64)] = [:]
        for (file, size) in here { hereByPath[file.key] = (file, size) }
        for (file, size) in here {
            // A copy there of a retired journal longer than any retirement of it read, and
            // than the one here, may hold what none read: it is fetched and read here first.
            if let remote = there[file.key], remote != size, vault.isUnreadThere(file, size: remote) {
                plan.fetch(file, remote)
                continue
            }
            if vault.mayDelete(file) {
                plan.deleteHere.append(file)
                if let remote = there[file.key] {
                    if file.kind == .journal && remote <= size { plan.retiredToConfirm.append((file, remote, file.path)) } else { plan.deleteThere.append(file) }
                }
                continue
            }
            guard let remote = there[file.key] else {
                if !vault.isRetired(file) { plan.send(file, size) }
                continue
            }
            switch verdict(file, here: size, there: remote, vault: vault) {
            case .same:
                if file.kind == .journal { plan.sameLengthJournals.append((file, size)) }
                if file.kind == .keyFile { plan.sameLengthKeyFiles.append((file, size)) }
            case .fetch: plan.fetch(file, remote)
            case .send:
                if file.kind == .keyFile && vault.isWholeKeyFile(length: size) { plan.keyFilesAlteredThere.append(file) }
                plan.send(file, size)
            case .compare: plan.fetch(file, remote)
            }
        }
        // Versions here of each journal, under its name or a copy's, for `retiredToConfirm`.
        var versionsHere: [Identifier: [(path: String, size: Int64)]] = [:]
        for (file, size) in here where file.kind == .journal { versionsHere[file.id, default: []].append((file.path, size)) }
        for (path, size) in there where hereByPath[path] == nil {
            guard let file = vault.syncFile(path.text) else { continue }
            if vault.isUnreadThere(file, size: size) { plan.fetch(file, size); continue }
            if vault.mayDelete(file) {
                // Checked against a version here of that journal as long at least (a fork of it
                // here under a copy's name: review AA's test); with none here, as it was read.
                if file.kind == .journal, let version = versionsHere[file.id]?.first(where: { $0.size >= size }) {
                    plan.retiredToConfirm.append((file, size, version.path))
                } else if file.kind == .journal && versionsHere[file.id] == nil && vault.wasRead(file, atLength: size) {
                    // Of a length a retirement read: that version, or a fork of one length.
                    // (A shorter one is taken for an older copy, as before: review CK-1, read
                    // in, it was taken for another copy of the store writing as this device.)
                    plan.fetch(file, size)
                    plan.retiredToCheck.insert(file.key)
                } else {
                    plan.deleteThere.append(file)
                }
                continue
            }
            if !vault.isRetired(file) { plan.fetch(file, size) }
        }
        // The last key file is never deleted (docs/FORMAT.md, "Key files"): on the remote, a
        // retired one goes only once a live one is there whole, or is being sent before it.
        if !vault.remoteKeepsAKeyFile(there, sending: plan.sendFirst) {
            plan.deleteThere.removeAll { $0.kind == .keyFile }
        }
        // Objects and key files before the journals that name them, both ways.
        plan.fetch.sort { ($0.kind == .journal ? 1 : 0, $0.path) < ($1.kind == .journal ? 1 : 0, $1.path) }
        return plan
    }

    static func verdict(_ file: SyncFile, here: Int64, there: Int64, vault: Vault) -> Verdict {
        if here == there { return .same }
        switch file.kind {
        case .object:
            if let expected = vault.expectedLength(of: file) {
                if here == expected { return .send }
                if there == expected { return .fetch }
            }
            return here > there ? .send : .fetch
        case .keyFile:
            // Whole here, it is the file: only one cut short here is completed from there.
            return vault.isWholeKeyFile(length: here) || here > there ? .send : .fetch
        case .journal:
            return .compare
        }
    }

    /// Sends the key file `file` over a copy there that is not it (`keyFilesAlteredThere`).
    mutating func replaceThere(_ file: SyncFile, _ size: Int64) {
        guard !sendFirst.contains(file) else { return }
        keyFilesAlteredThere.append(file)
        send(file, size)
    }

    private mutating func send(_ file: SyncFile, _ size: Int64) {
        if file.kind == .journal { sendJournals.append(file) } else { sendFirst.append(file) }
        sendBytes += size
    }

    mutating func fetch(_ file: SyncFile, _ size: Int64) {
        fetch.append(file)
        fetchBytes += size
    }
}

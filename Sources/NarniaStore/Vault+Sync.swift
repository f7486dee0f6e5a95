import Glibc
import NarniaSystem

/// What a store file is, for `sync`.
public enum SyncFileKind: Sendable, Equatable {
    /// A key file or an inbox public key file: written once, copied where missing.
    case keyFile
    /// A journal: grows on its device only; copied only over a shorter copy it extends.
    case journal
    /// A content object or pack: written once; a copy of the wrong length is incomplete.
    case object
}

/// One store file as `sync` sees it on either side.
public struct SyncFile: Sendable, Equatable {
    /// The path relative to the store.
    public let path: String
    public let id: Identifier
    public let kind: SyncFileKind
    /// True for a copy a sync engine made (`….sync-conflict-…`).
    package let isCopy: Bool

    /// The path, as a key of tables of store files (told apart byte for byte).
    public var key: StorePath { StorePath(path) }

    /// The path of the file this one is a sync engine's copy of (or its own): the name
    /// without the engine's suffix, which begins after the identifier's hex digits.
    package var originalKey: StorePath {
        guard isCopy else { return key }
        let folder = path.split(separator: "/", omittingEmptySubsequences: false).dropLast().map { $0 + "/" }.joined()
        let name = path.split(separator: "/", omittingEmptySubsequences: false).last!
        return StorePath(folder + name.prefix { $0.isHexDigit })
    }

    public static func == (a: SyncFile, b: SyncFile) -> Bool {
        a.key == b.key && a.id == b.id && a.kind == b.kind && a.isCopy == b.isCopy
    }
}

/// The store's side of `sync` (docs/FORMAT.md, "What sync engines may do to the store"): which
/// files are which, what they should hold, what is retired, and taking in what arrived. The
/// transfers themselves are the shell's (it runs rclone).
extension Vault {
    /// Makes an empty file at the store's top under a fresh name, for the length of one
    /// listing of a remote: a remote whose listing shows it is this very store, however it was
    /// reached — another mount of it (bindfs), a remote of type local or alias in rclone's
    /// config, a server on this machine — which comparing folder identities misses (review
    /// AK). Nil where the file cannot be made (the sync then fails on its own).
    /// `removeStoreProbe` removes it; one a kill left goes at this device's next open (its name
    /// carries a tag only this device makes, as its receiving folders do: review AW), or, carried
    /// elsewhere by a sync engine, with the other temporary files.
    public func makeStoreProbe() -> String? {
        let tag = tags.withKeyOpen { tags.newSyncTemporary() }
        return makeTemporaryFile(prefix: Self.storeProbePrefix, permissions: 0o600, suffix: tag.hex)?.name
    }

    /// A tag for the temporary name of a journal `sync` sends (`NAME.narnia-sending-TAG`):
    /// fresh at each call, and recognised by this device only (`isOwnSendingTag`), so that a
    /// remote learns neither which device sends it nor that two transfers are one device's
    /// (review CM-5: the suffix was the device identifier's first digits, which the default
    /// device name ends with).
    public func newSendingTag() -> String {
        tags.withKeyOpen { tags.newSyncTemporary() }.hex
    }

    /// True for a tag `newSendingTag` gave this device.
    public func isOwnSendingTag(_ tag: Substring) -> Bool {
        guard let id = Identifier(hex: tag) else { return false }
        return tags.withKeyOpen { tags.isOwnSyncTemporary(id) }
    }

    /// True for the name of a probe this device made (`makeStoreProbe`).
    func isOwnStoreProbe(_ name: String) -> Bool {
        guard name.hasPrefix(Self.storeProbePrefix),
              let id = Identifier(hex: name.dropFirst(Self.storeProbePrefix.count)) else { return false }
        return tags.withKeyOpen { tags.isOwnSyncTemporary(id) }
    }

    /// Removes the file `makeStoreProbe` made.
    public func removeStoreProbe(_ name: String) {
        try? lockHandle.unlink(name, missingOK: true)
    }

    /// How the name of the file `makeStoreProbe` makes begins.
    static let storeProbePrefix = ".narnia-store-probe-"

    /// True for the name of a shard folder at a store's top (two hex digits).
    public static func isShardFolder(_ path: String) -> Bool { StoreName.isShardName(path) }

    /// Reads a path relative to a store (`<32 hex>` at the top, `<2 hex>/<32 or 30 hex>` in a
    /// shard, each possibly with a conflict suffix); nil for anything else.
    public func syncFile(_ path: String) -> SyncFile? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        if parts.count == 1, let (id, copy) = StoreName.identifier(in: path, digits: 32) {
            return SyncFile(path: path, id: id, kind: .keyFile, isCopy: copy)
        }
        guard parts.count == 2, StoreName.isShardName(String(parts[0])) else { return nil }
        let shard = String(parts[0]), name = String(parts[1])
        if let (id, copy) = StoreName.identifier(in: name, digits: 32), id.hex.hasPrefix(shard) {
            return SyncFile(path: path, id: id, kind: tags.withKeyOpen { tags.isJournal(id) } ? .journal : .object, isCopy: copy)
        }
        if let (id, copy) = StoreName.identifier(in: name, digits: 30, prefix: shard) {
            return SyncFile(path: path, id: id, kind: .object, isCopy: copy)
        }
        return nil
    }

    /// True when `files` (a remote's store files) hold some but none of this vault's: no
    /// journal named with its key, no key file, inbox key file or object it knows (present
    /// here, retired, or named by a record), no object of this device. They are another
    /// vault's store; syncing with it would mix the two in one folder, each unlock taking the
    /// other's inbox key for a forgery and deleting it, and with one passphrase for both, one
    /// vault's tree taking the other's place (review AJ).
    ///
    /// Read one by one, stopping at the first of this vault's: for a remote that holds it,
    /// at once, whatever its size.
    public func holdsOnlyAnotherVault(_ paths: some Sequence<String>) -> Bool {
        lazy var retired = Set(state.retired.keys.map(\.id))
        var any = false
        for path in paths {
            guard let file = syncFile(path) else { continue }
            any = true
            let ours = switch file.kind {
            case .journal: true
            case .keyFile: inventory.keyFiles[file.id] != nil || inventory.inboxKeys[file.id] != nil || retired.contains(file.id)
            case .object: state.objectUses[file.id] != nil || retired.contains(file.id) || tags.withKeyOpen { tags.isOwnObject(file.id) }
            }
            if ours { return false }
        }
        return any
    }

    /// The exact length a file must have, when the metadata says (objects items use); nil
    /// for journals, key files (whose length grows with rotations) and objects no record here
    /// names.
    public func expectedLength(of file: SyncFile) -> Int64? {
        file.kind == .object ? state.objectUses[file.id]?.length : nil
    }

    /// True for a key file here whose bytes this session has checked: the key file it opened,
    /// and the inbox public key files, judged at open (`checkInboxPublicFiles`).
    public func isCheckedKeyFile(_ file: SyncFile) -> Bool {
        file.kind == .keyFile && !file.isCopy && (file.id == keyFileID || inventory.inboxKeys[file.id]?.main == file.path)
    }

    /// True for an inbox public key file here (not a key file).
    public func isInboxPublicKeyFile(_ file: SyncFile) -> Bool {
        file.kind == .keyFile && inventory.inboxKeys[file.id] != nil
    }

    /// True when a key file of `length` bytes is whole as far as its length tells (as
    /// `liveKeyFile` judges), or is an inbox public key file's length: both are written once,
    /// whole, under fresh names, so another version of one is damage or forgery, never newer.
    public func isWholeKeyFile(length: Int64) -> Bool {
        if length == Int64(InboxPublicKeyFile.length) { return true }
        guard let count = KeyFile.masterCount(ofLength: Int(length)) else { return false }
        return count >= max(1, masters.all.count)
    }

    /// True when the file is retired: it must not be copied to a side that lacks it. A retired
    /// journal that holds records no retirement of it read is not: those records go where
    /// this store goes; nor is a rotation's retirement of the key files it replaced, which
    /// their passphrases read nowhere else (`isRotationsRetirementOfKeyFiles`).
    public func isRetired(_ file: SyncFile) -> Bool {
        state.isRetired(retiredFile(file)) && !isKeptBackKeyFile(file)
            && !(file.kind == .journal && (holdsRecordsItsRetirementsDidNotRead(file.id) || isRotationsRetirementOfKeyFiles(file.id)))
    }

    /// True when the file is retired and every device has heard: it is deleted here (and on
    /// the remote, where a key file also needs `remoteKeepsAKeyFile`, and a journal
    /// `mayDeleteThere`).
    public func mayDelete(_ file: SyncFile) -> Bool {
        mayDeleteRetired(retiredFile(file)) && !isKeptBackKeyFile(file) && !(file.kind == .journal && holdsRecordsItsRetirementsDidNotRead(file.id))
    }

    /// True when the remote's copy of a retired journal, of `size` bytes, may hold records no
    /// retirement of it read (`copyElsewhereMayHoldRecordsNoRetirementRead`): it is fetched
    /// and read here, never deleted there unread.
    public func isUnreadThere(_ file: SyncFile, size: Int64) -> Bool {
        file.kind == .journal && state.isRetired(retiredFile(file)) && copyElsewhereMayHoldRecordsNoRetirementRead(file.id, size: size)
    }

    /// True for a key file while the one this session opened with is not live
    /// (`mayDeleteKeyFiles`): retired or not, it is kept, and copied where it lacks, since it
    /// may be the only way in.
    private func isKeptBackKeyFile(_ file: SyncFile) -> Bool {
        file.kind == .keyFile && !mayDeleteKeyFiles
    }

    /// True when the remote, whose files and sizes are `there`, holds the key file this session
    /// opened with, whole (or will, once `sending` is sent): only then may a retired key file
    /// go there.
    public func remoteKeepsAKeyFile(_ there: [StorePath: Int64], sending: [SyncFile]) -> Bool {
        guard let whole = liveKeyFile(keyFileID), let entry = inventory.keyFiles[keyFileID] else { return false }
        return entry.all.map(StorePath.init).contains { name in there[name] == whole.length || sending.contains { $0.key == name } }
    }

    private func retiredFile(_ file: SyncFile) -> RetiredFile {
        let kind: RetiredFile.Kind = file.kind == .keyFile ? .keyFile : (file.kind == .journal ? .journal : .object)
        return RetiredFile(kind: kind, id: file.id)
    }

    /// True when journal `file` (or a sync engine's copy of it), read here, is one its device
    /// appends to no more: that device was forgotten (`devices forget`), or went on in a later
    /// journal. Its writer never replaces a damaged longer copy of it elsewhere, nor grows it
    /// as long as one.
    public func isWrittenNoMore(_ file: SyncFile) -> Bool {
        guard file.kind == .journal, let read = journals[file.id] else { return false }
        if state.devices[read.device]?.forgotten == true { return true }
        return journals.values.contains { $0.device == read.device && $0.firstSeq > read.firstSeq }
    }

    /// True for the journal this device appends to (never replaced from elsewhere).
    public func isOwnOpenJournal(_ file: SyncFile) -> Bool {
        file.kind == .journal && journal?.id == file.id && !file.isCopy
    }

    /// True for this device's newest journal (by what opening read), not a copy of it: the
    /// one it appends to, and so the one another copy writing as this device would too.
    public func isNewestOwnJournal(_ file: SyncFile) -> Bool {
        file.kind == .journal && !file.isCopy && newestOwnJournal?.id == file.id
    }

    /// Where the last record of this device's newest journal `file` begins, when the file here
    /// is `size` bytes long and ends with that record (nil otherwise).
    public func lastRecordStart(of file: SyncFile, size: Int64) -> Int64? {
        guard isNewestOwnJournal(file), let end = journals[file.id]?.end, end.records > 0, end.offset == size else { return nil }
        return end.lastRecordStart
    }

    /// Where the bytes after the last whole record of journal `file` begin, when the file here
    /// is `size` bytes long and ends in such bytes (an unfinished append, a cut; nil otherwise).
    public func tailStart(of file: SyncFile, size: Int64) -> Int64? {
        guard file.kind == .journal, !file.isCopy, let end = journals[file.id]?.end, end.cutBytes > 0, end.offset + end.cutBytes == size else { return nil }
        return end.offset
    }

    /// `count` bytes of a store file here from `offset` (fewer where it ends).
    public func bytes(of file: SyncFile, offset: Int64, count: Int) throws -> [UInt8] {
        try bytes(atStorePath: file.path, offset: offset, count: count)
    }

    /// As `bytes(of:offset:count:)`, of the store file at `path` (relative to the store).
    public func bytes(atStorePath path: String, offset: Int64, count: Int) throws -> [UInt8] {
        let fd = try FileDescriptor.open(layout.root + "/" + path, .readOnly, options: .noFollow)
        var bytes = [UInt8](repeating: 0, count: count)
        let read = try bytes.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: count, offset: offset) }
        return Array(bytes.prefix(read))
    }

    /// Every store file present here, with its size.
    public func localSyncFiles() throws -> [(SyncFile, Int64)] {
        let fresh = try StoreInventory.scan(directory)
        var out: [(SyncFile, Int64)] = []
        var paths: [String] = []
        for entry in fresh.keyFiles.values { paths += entry.all }
        for entry in fresh.inboxKeys.values { paths += entry.all }
        for entry in fresh.files.values { paths += entry.all }
        for path in paths {
            guard let file = syncFile(path), let st = try FileSystem.lstatIfExists(layout.root + "/" + path), st.isRegularFile else { continue }
            out.append((file, Int64(st.st_size)))
        }
        return out
    }

    /// True when `files` (store files present here, `localSyncFiles`) hold one this session
    /// neither read nor wrote: a drop made while it was open, or a file a sync engine brought.
    public func holdsFilesNotRead(_ files: [SyncFile]) -> Bool {
        files.contains { $0.kind != .keyFile && inventory.files[$0.id] == nil }
    }

    /// A new folder inside the store for files to arrive into (a sync), or a new journal to
    /// wait in for its first record where there are no unnamed files, named with this
    /// device's tag (one an interrupted process left is removed at the next open).
    public func makeReceivingFolder() throws -> String {
        let id = tags.withKeyOpen { tags.newSyncTemporary() }
        let path = layout.root + "/" + id.hex
        try FileSystem.makeDirectory(path)
        inventory.folders.append(id)
        return path
    }

    /// Removes a receiving folder and what is left in it.
    public func removeReceivingFolder(_ path: String) {
        FileSystem.removeTreeOfFiles(path)
    }

    /// What became of a received file.
    public enum Received: Sendable, Equatable {
        /// Put in place: none was here, or it replaces a copy it completes or extends.
        case taken
        /// Shorter than it must be (the transfer was cut): dropped, to be fetched again.
        case incomplete
        /// The copy here is whole already, or is a longer journal that extends the received
        /// one (which the other side then needs).
        case hereIsLonger
        /// A journal that extends the one this device appends to, or a conflict copy that
        /// forks from the one here: kept beside it as a conflict copy (under
        /// `conflictSuffix`), so that both are read.
        case keptAsCopy
        /// A journal that forks from the one here (neither begins with the other): the
        /// received version takes the journal's name, and the version that was here is kept
        /// beside it as a conflict copy (under `conflictSuffix`), which the other side needs
        /// under that name too. Both are read, and both sides name each version alike.
        case forked
        /// A journal version that does not read (`why`: a record in it that does not
        /// authenticate): not taken, nor kept. The version here, when it holds as much, is
        /// what the other side needs.
        case damaged(String)
        /// A journal this device has read no version of, sealed under a master key this vault
        /// does not hold (another device's `passwd --rotate`, or damage), while the key file
        /// that holds that key may not be here (`mayTakeJournalUnderUnknownKey`): not taken,
        /// nor kept, until it is. Taken without it, it left a vault that neither passphrase
        /// opened: the old one opens no record of it, and the new one no key file here
        /// (reviews EE-5, EG-1, EI-1: the key file did not come, or came cut short).
        case awaitsKeyFile
    }

    /// Puts a received file (at `received`) in place as `file`: an object or key file where
    /// none is, or over a copy shorter than it; a journal where none is, or over a copy that it
    /// extends. `conflictSuffix` names the copy kept when neither extends the other;
    /// `aKeyFileDidNotArrive` (a key file this sync fetched is not here whole) may hold a
    /// journal back (`Received.awaitsKeyFile`).
    public func acceptReceived(_ received: String, as file: SyncFile, conflictSuffix: String, aKeyFileDidNotArrive: Bool) throws -> Received {
        guard let st = try FileSystem.lstatIfExists(received), st.isRegularFile else { return .incomplete }
        let size = Int64(st.st_size)
        if let expected = expectedLength(of: file), size != expected { return .incomplete }
        // A top-level file is a key file or an inbox public key file (72 bytes, which opening
        // checks against the authenticator only the vault can make).
        if file.kind == .keyFile && KeyFile.masterCount(ofLength: Int(size)) == nil && size != Int64(InboxPublicKeyFile.length) {
            return .incomplete
        }
        let target = layout.root + "/" + file.path
        if file.kind != .keyFile {
            let shard = String(file.path.split(separator: "/").first ?? "")
            try FileSystem.makeDirectory(layout.root + "/" + shard, existingOK: true)
        }
        let here = try FileSystem.lstatIfExists(target)
        if file.kind == .journal {
            // One of the same length or shorter that the one here holds, unfinished appends
            // and all, is not read: it can only be older.
            if let here, Int64(here.st_size) >= size, try Self.isPrefix(received, of: target, length: size, unfinishedAppend: true) {
                return .hereIsLonger
            }
            // Any other version is put among the store's journals only if it reads: one that
            // does not (a byte changed in transit or on the remote's disk) would make every
            // open refuse the vault as damaged (review BD-1).
            switch reading(journalAt: received, id: file.id) {
            case .damaged(let why): return .damaged(why)
            case .sealedUnderUnknownKey where try !mayTakeJournalUnderUnknownKey(aKeyFileDidNotArrive: aKeyFileDidNotArrive): return .awaitsKeyFile
            default: break
            }
        }
        if let here {
            let local = Int64(here.st_size)
            switch file.kind {
            case .object:
                if local >= size { return .hereIsLonger }
            case .keyFile:
                // The plan fetches none over a whole one (`SyncPlan.verdict`); should one come
                // all the same, the one here stays (review CG-1).
                if local >= size || isWholeKeyFile(length: local) { return .hereIsLonger }
            case .journal:
                // Here one of the same length or shorter, its unfinished appends finished there;
                // or the received one, longer, torn at a record held here whole (review BE-6).
                let tornThere = try local < size && Self.isPrefix(received, of: target, length: local, unfinishedAppend: true)
                let forks = try !Self.isPrefix(target, of: received, length: local, unfinishedAppend: true) && !tornThere
                if forks && !file.isCopy {
                    try Self.keepAsCopy(target, target + conflictSuffix)
                    try FileSystem.rename(received, target)
                    return .forked
                }
                if forks || isOwnOpenJournal(file) {
                    try FileSystem.rename(received, Self.unusedName(target + conflictSuffix))
                    return .keptAsCopy
                }
            }
        } else if isOwnObject(file) {
            // An object of this device's tag that it does not hold: written by another copy
            // of this store writing as this device, or by this device before a restore. A
            // record named it somewhere: marked so, it is never taken for a leftover.
            _ = Glibc.chmod(received, Self.committedMode)
        }
        try FileSystem.rename(received, target)
        return .taken
    }

    /// The objects among `received` (files a sync just put in place), and those of the items
    /// `appeared` (new here by its merge, their objects maybe taken by an earlier sync, cut
    /// before it sent their journals, or brought by a sync engine: review CJ-1), that do not
    /// authenticate for an item that uses them (`authenticateContent`): each as its path in
    /// the store, with the paths of every item it holds (a pack holds several: CJ-4). They
    /// are taken out of the store again: whole in length but altered (bit rot, a faulty
    /// remote). Before, such a file was taken, `sync` said "new: …" and passed, and the item
    /// was unreadable here for good (review CG-3). This device's own objects are not checked.
    public func dropDamagedAmongArrived(_ received: [SyncFile], appeared: [Identifier]) throws -> [(path: String, items: [String])] {
        var objects = Set(received.filter { $0.kind == .object }.map(\.id))
        for id in appeared { if let object = view.items[id]?.content?.objectID, inventory.files[object]?.main != nil { objects.insert(object) } }
        objects = tags.withKeyOpen { objects.filter { !tags.isOwnObject($0) } }
        guard !objects.isEmpty else { return [] }
        let users = view.items.values.filter { !$0.isFolder && $0.content.map { objects.contains($0.objectID) } == true }
        guard !users.isEmpty else { return [] }
        let damaged = Set(try authenticateContent(only: Set(users.map(\.id))).damaged.compactMap { $0.item.content?.objectID })
        return damaged.sorted().compactMap { object in
            guard let path = inventory.files[object]?.main else { return nil }
            try? FileSystem.unlink(layout.root + "/" + path, missingOK: true)
            inventory.files[object] = nil
            let items = users.filter { $0.content?.objectID == object }.compactMap { self.path(of: $0.id) }
            return (path, items.sorted())
        }
    }

    /// True when a retirement of journal `file` read a version of it `length` bytes long.
    public func wasRead(_ file: SyncFile, atLength length: Int64) -> Bool {
        state.journalReads[file.id]?.contains { $0.length == length } ?? false
    }

    /// True when the version at `received` (fetched into the store's receiving folder) of the
    /// retired journal `file` is one a retirement read: of a length one read, with its hash.
    /// Such a copy there holds nothing unread and may go; any other may be a version of that
    /// journal no device has read (a fork of one length), and is read first.
    public func isAsRetirementRead(_ received: String, as file: SyncFile) -> Bool {
        let root = layout.root + "/"
        guard received.hasPrefix(root), let reads = state.journalReads[file.id],
              let st = try? FileSystem.lstatIfExists(received), st.isRegularFile else { return false }
        let size = Int64(st.st_size)
        let digest = try? self.digest(ofCopy: String(received.dropFirst(root.count)), length: size)
        return reads.contains { $0.length == size && $0.digest == digest }
    }

    /// True when the version at `received` of this device's newest journal is the journal here,
    /// byte for byte, followed by bytes that hold no record that reads (garbage appended
    /// there): all it holds that reads is here, so the copy here replaces it at once (review
    /// CG-5: the sync failed until this device happened to write more than the garbage).
    public func isOwnJournalFollowedByGarbage(_ received: String, as file: SyncFile) -> Bool {
        guard isNewestOwnJournal(file), let end = journals[file.id]?.end, end.cutBytes == 0,
              let fd = try? JournalReader.openStoreFile(received) else { return false }
        var records: UInt64 = 0
        _ = try? JournalReader.read(fd, id: file.id, keyChain: journalKeyChain, name: "journal \(file.id.hex.prefix(8))") { _, _, _ in records += 1 }
        guard records == end.records else { return false }
        return (try? Self.isPrefix(layout.root + "/" + file.path, of: received, length: end.offset)) == true
    }

    /// How a received version of a journal reads with the keys this device holds.
    enum JournalReading {
        /// It reads (a cut at its end included), or cannot be opened to tell.
        case reads
        /// It must not be put among the store's journals: a record in it that does not
        /// authenticate, other than a cut at its end (`MetadataError.damaged`'s words), or a
        /// first record that opens under none of the keys this device holds when it read a
        /// version of that journal (a journal's keys never change: review BE-1).
        case damaged(String)
        /// Its first record opens under none of the keys this device holds, and this device
        /// has read no version of it: sealed under a master key from another device's
        /// `passwd --rotate`, whose key file opens it, or its first record damaged.
        case sealedUnderUnknownKey
    }

    /// How the journal version at `path` (of journal `id`) reads here.
    func reading(journalAt path: String, id: Identifier) -> JournalReading {
        guard let fd = try? JournalReader.openStoreFile(path) else { return .reads }
        do {
            _ = try JournalReader.read(fd, id: id, keyChain: journalKeyChain, name: "journal \(id.hex.prefix(8))") { _, _, _ in }
            return .reads
        } catch MetadataError.damaged(let why) {
            return .damaged(why)
        } catch MetadataError.unknownMasterKey {
            guard (journals[id]?.records ?? 0) == 0 else { return .damaged("journal \(id.hex.prefix(8)), record 0 does not authenticate") }
            return .sealedUnderUnknownKey
        } catch {
            return .reads
        }
    }

    /// True when a journal sealed under a master key this vault does not hold may be taken:
    /// no key file this sync fetched failed to arrive whole (`aKeyFileDidNotArrive`), and a
    /// key file here may hold that key (`mayHoldARotatedKey`) besides the one this session
    /// opened.
    ///
    /// A key file's length does not say which keys it holds: one that did not arrive (unreadable
    /// there, or cut short) may be the rotation's that sealed the journal, whatever key file is
    /// here — even one holding more keys, as two rotations made at once from one key hold
    /// different keys (reviews EE-5, EG-1, EI-1, EJ-1: taken, the journals left a vault no
    /// passphrase opened). A key file damaged there at its own length cannot be told from a
    /// whole one without its passphrase.
    func mayTakeJournalUnderUnknownKey(aKeyFileDidNotArrive: Bool) throws -> Bool {
        guard !aKeyFileDidNotArrive else { return false }
        let scanned = try StoreInventory.scanTopLevel(directory)
        return scanned.keyFiles.keys.contains { $0 != keyFileID && mayHoldARotatedKey($0, in: scanned) }
    }

    /// True when the journal version at `path` (of journal `id`), one this device has read no
    /// version of, reads under the keys it holds and retires a key file present here: a
    /// `passwd` elsewhere, or a rotation's first step (`retireReplacedKeyFiles`), whose
    /// journals under the new key may wait for its key file (`Received.awaitsKeyFile`). Taken
    /// without them, the retirement refused the old passphrase while no other opened the vault.
    public func retiresKeyFileHere(journalAt path: String, id: Identifier) -> Bool {
        (journals[id]?.records ?? 0) == 0 && retiresKeyFile(journalAt: path, id: id) { inventory.keyFiles[$0] != nil }
    }

    /// True when the journal version at `path` (of journal `id`) reads under the keys this
    /// device holds and a record in it retires a key file that `counts` accepts.
    func retiresKeyFile(journalAt path: String, id: Identifier, _ counts: (Identifier) -> Bool = { _ in true }) -> Bool {
        guard let fd = try? JournalReader.openStoreFile(path) else { return false }
        var retires = false
        _ = try? JournalReader.read(fd, id: id, keyChain: journalKeyChain, name: "journal \(id.hex.prefix(8))") { _, payload, _ in
            try RecordCoding.decode(payload, begin: { _ in }) { op, _ in
                if case .retire(let file, _) = op, file.kind == .keyFile, counts(file.id) { retires = true }
            }
        }
        return retires
    }

    /// Gives the journal version at `path` the name `copy` before another takes its name: a
    /// second name (a hard link), so that it keeps one at every moment. Two renames left it
    /// under the copy's name alone when killed between them, and the next open began a new
    /// journal before the fork was seen (review AA). Where there are no hard links (FAT, some
    /// FUSE file systems) it is renamed.
    /// A copy of that name that is another file already (two made by this device in one
    /// second) is kept too: the version takes the next free name (`unusedName`).
    static func keepAsCopy(_ path: String, _ copy: String) throws {
        var copy = copy
        while true {
            do {
                return try FileSystem.link(path, copy)
            } catch let e as SystemError where e.code == EEXIST {
                // Linked by a sync killed before the rename: the same file under both names.
                if let a = try FileSystem.lstatIfExists(path), let b = try FileSystem.lstatIfExists(copy),
                   a.st_dev == b.st_dev, a.st_ino == b.st_ino { return }
                copy = try unusedName(copy)
            } catch {
                // Not possible here (EPERM, EOPNOTSUPP, EXDEV…), or failing (EIO, EACCES on a
                // FUSE file system): the rename still keeps the version, as before hard links.
                return try FileSystem.rename(path, unusedName(copy))
            }
        }
    }

    /// `name`, or when a file has it, the first of `name-2`, `name-3`, … none has: a conflict
    /// copy is never renamed over another.
    static func unusedName(_ name: String) throws -> String {
        var candidate = name
        var n = 1
        while try FileSystem.lstatIfExists(candidate) != nil {
            n += 1
            candidate = "\(name)-\(n)"
        }
        return candidate
    }

    /// True for an object this device's tag names (written by it, or by another copy of this
    /// store writing as it).
    public func isOwnObject(_ file: SyncFile) -> Bool {
        file.kind == .object && tags.withKeyOpen { tags.isOwnObject(file.id) }
    }

    /// Makes files a sync fetched into `folder` (the receiving folder, in the store) durable
    /// before they are put in place, and again their new names after: this device's next
    /// record acknowledges the records they hold, which a power cut must not leave it without
    /// (a review found received journals empty after one, the acknowledgement durable). One
    /// `syncfs` each time where that reaches the disk; else an `fsync` of each file, then of
    /// the store's folders. A file the fetch did not bring is passed over, and so is a shard
    /// folder none was put in (this device's objects held back).
    public func syncReceived(in folder: String, _ files: [SyncFile], placed: Bool) throws {
        if !placed {
            let fetched = files.map { folder + "/" + $0.path }.filter { (try? FileSystem.lstatIfExists($0))??.isRegularFile == true }
            return try FileSystem.makeDurable(files: fetched, folders: [], on: lockHandle)
        }
        let shards = Set(files.compactMap { $0.kind == .keyFile ? nil : $0.path.split(separator: "/").first.map(String.init) })
            .map { layout.root + "/" + $0 }.filter { (try? FileSystem.lstatIfExists($0)) != nil }
        try FileSystem.makeDurable(files: [], folders: shards.sorted() + [layout.root], on: lockHandle)
    }

    /// True when the first `length` bytes of `path` and of `longer` are the same; with
    /// `unfinishedAppend`, also when they differ only in single bytes, each zero in `path`: a
    /// copy of a journal taken while its device appended holds the new record's first byte as
    /// zero (`JournalWriter.append` writes it after the rest), which `longer` holds finished
    /// (two versions of a record differ in their whole random nonce; review AZ-3), and a
    /// copier that read on while the device appended again holds several (review BD-1).
    static func isPrefix(_ path: String, of longer: String, length: Int64, unfinishedAppend: Bool = false) throws -> Bool {
        let a = try FileDescriptor.open(path, .readOnly, options: .noFollow), b = try FileDescriptor.open(longer, .readOnly, options: .noFollow)
        var done: Int64 = 0
        var lastDiffering: Int64 = -2
        var x = [UInt8](repeating: 0, count: 1 << 16), y = x
        while done < length {
            let n = Int(min(Int64(x.count), length - done))
            let ra = try x.withUnsafeMutableBytes { try a.preadFully(into: $0.baseAddress!, count: n, offset: done) }
            let rb = try y.withUnsafeMutableBytes { try b.preadFully(into: $0.baseAddress!, count: n, offset: done) }
            guard ra == n, rb == n else { return false }
            if x[0..<n] != y[0..<n] {
                guard unfinishedAppend else { return false }
                for i in 0..<n where x[i] != y[i] {
                    // A record's first byte: zero here, and no byte beside it differing too.
                    guard x[i] == 0, done + Int64(i) != lastDiffering + 1 else { return false }
                    lastDiffering = done + Int64(i)
                }
            }
            done += Int64(n)
        }
        return true
    }

    /// True when a key-named file there of `length` bytes, fetched to `received`, may hold a
    /// master key from a rotation and is not here whole: unreadable there (not fetched, or
    /// fetched short), or cut short there (a length of no key file). An inbox public key file,
    /// and a key file holding the vault's first master key alone (which every key file holds),
    /// hold none.
    public func rotationKeyFileDidNotArrive(_ received: String, lengthThere length: Int64) throws -> Bool {
        guard length != Int64(InboxPublicKeyFile.length) else { return false }
        guard let count = KeyFile.masterCount(ofLength: Int(length)) else { return true }
        return try count > 1 && FileSystem.lstatIfExists(received).map { Int64($0.st_size) } != length
    }

    /// True when key file `id` of `inventory` may hold a master key from a rotation: it is not
    /// retired by a record read here, and its length says it holds more than the vault's first
    /// master key. A rotation's, or a plain `passwd`'s made after one, which its length cannot
    /// tell apart; and it may hold fewer keys than this vault, yet one it lacks (two rotations
    /// at once from one key, one of them followed by another: review EJ-1).
    func mayHoldARotatedKey(_ id: Identifier, in inventory: StoreInventory) -> Bool {
        unretiredKeyFile(id, in: inventory, holdingAtLeast: 2) != nil
    }

    /// Deletes a retired file here (its copies included) once every device has heard.
    public func deleteRetired(_ file: SyncFile) {
        guard mayDelete(file), !isOwnOpenJournal(file) else { return }
        try? FileSystem.unlink(layout.root + "/" + file.path, missingOK: true)
    }

    /// Reads every journal present again and merges them, as opening does (after a sync
    /// brought files): returns how the tree changed. When they cannot be read (a journal
    /// sealed under a master key from another device's `passwd --rotate`, damage), the vault
    /// stays as it was before, in every respect, and the error is thrown: the session goes
    /// on with what it had, never with half a merge.
    public func reload() throws -> TreeChange {
        let before = view.items
        let membersBefore = view.members
        let savedWarnings = warnings
        let ownKeyFile = RetiredFile(kind: .keyFile, id: keyFileID)
        let ownKeyFileWasRetired = state.retired[ownKeyFile] != nil
        let saved = (keys, state, view, inventory, journals, journal, knowledge, lastSeq, wholeObjectSizes,
                     ownRecordsMayBeLost, keepOwnObjectsAtNextWrite, newlyFoundCuts, othersRecordsMissing,
                     bytesAtLastCompaction, unreadableCopies, recordForks, newOwnForks, journalsWithUnreadRecordsFound)
        do {
            keys = try KeyTable()
            state = MergeState(keys: keys, device: device)
            journals = [:]
            journal = nil
            wholeObjectSizes = [:]
            copyDigests = [:]
            ownRecordsMayBeLost = false
            keepOwnObjectsAtNextWrite = false
            newlyFoundCuts = []
            inventory = try StoreInventory.scan(directory)
            try load()
        } catch {
            (keys, state, view, inventory, journals, journal, knowledge, lastSeq, wholeObjectSizes,
             ownRecordsMayBeLost, keepOwnObjectsAtNextWrite, newlyFoundCuts, othersRecordsMissing,
             bytesAtLastCompaction, unreadableCopies, recordForks, newOwnForks, journalsWithUnreadRecordsFound) = saved
            warnings = savedWarnings
            if case MetadataError.unknownMasterKey = error { rotationElsewhereArrived = true }
            throw error
        }
        try tidy(atOpen: false)
        generation += 1
        warnings = Array(warnings.dropFirst(savedWarnings.count).filter { !savedWarnings.contains($0) })
        // Review DH-4: the next open with this passphrase was refused, "wrong passphrase", and
        // nothing had said why.
        if !ownKeyFileWasRetired && state.retired[ownKeyFile] != nil {
            // Review EI-4: said so while the new key file had not arrived, and the old
            // passphrase opened the vault until it did.
            let newKeyFileHere = inventory.keyFiles.keys.contains { $0 != keyFileID && liveKeyFile($0) != nil }
            warnings.append(newKeyFileHere ? "the passphrase was changed on another device ('passwd', or 'passwd --rotate'): this session goes on, and from the next open only the new passphrase opens the vault"
                                           : "the passphrase was changed on another device ('passwd', or 'passwd --rotate'): this session goes on; the new key file is not here yet, and until it is, the old passphrase still opens the vault (then only the new one)")
        }
        let after = view.items
        // Folders of one name that several devices made are shown as one, under one of their
        // identifiers (FORMAT.md rule 4), which may change as such folders arrive or go: a
        // folder is new, or gone, only when none of the folders it stands for was shown, or
        // is (review DD-2: `mkdir -p /photos/2024` on two devices, synced, said "removed:
        // /photos" of the folder holding both photos; DE-1: so did a removal of one half).
        let membersAfter = view.members
        let shownBefore = Set(before.keys).union(membersBefore.values.joined())
        let shownAfter = Set(after.keys).union(membersAfter.values.joined())
        let appeared = after.keys.filter { id in !(membersAfter[id] ?? [id]).contains(where: shownBefore.contains) }
        func stillShown(_ id: Identifier) -> Bool { id == .root || (membersBefore[id] ?? [id]).contains(where: shownAfter.contains) }
        let moved = after.count { id, item in before[id].map { $0.parent != item.parent || $0.name != item.name } ?? false }
        let gone = before.keys.filter { !stillShown($0) }
        // Where each removed item was, but for those whose folder went too (review DB-2: a
        // count said nothing of which files another device's changes took away).
        let goneTops = gone.filter { id in before[id].map { stillShown($0.parent) } ?? false }
        // Files shown under their own name before and under a conflict copy's name now: a file
        // placed first elsewhere took the name (review EC-2: only "new:" of the name was said).
        // The folder shown may stand for several of one name, under another's identifier
        // after the merge than before (rule 4; review EE-1: the line was missing there).
        let becameCopies = after.compactMap { id, item -> (was: String, now: String)? in
            guard !item.isFolder, let old = before[id], old.name != item.name, let place = state.items[id]?.place, place.name == old.name,
                  (membersBefore[old.parent] ?? [old.parent]).contains(place.parent), view.members(of: item.parent).contains(place.parent)
            else { return nil }
            return ("/" + Self.pathComponents(of: id, in: before).joined(separator: "/"), path(of: id))
        }
        return TreeChange(added: appeared.compactMap { path(of: $0) }, removed: gone.count,
                          removedPaths: goneTops.map { "/" + Self.pathComponents(of: $0, in: before).joined(separator: "/") },
                          addedItems: appeared, moved: moved, becameConflictCopies: becameCopies)
    }
}

/// How a reload changed the tree.
public struct TreeChange: Sendable {
    /// Paths of items that appeared.
    public let added: [String]
    /// How many items went.
    public let removed: Int
    /// Where the items that went were, but for those whose folder went too.
    public let removedPaths: [String]
    /// The items that appeared.
    public let addedItems: [Identifier]
    /// How many items stayed but moved or were renamed.
    public let moved: Int
    /// Files that kept their place but are shown as conflict copies now (docs/FORMAT.md,
    /// "Merging", rule 5): where each was, and its name now.
    public let becameConflictCopies: [(was: String, now: String)]

    public init(added: [String], removed: Int, removedPaths: [String] = [], addedItems: [Identifier] = [], moved: Int = 0,
                becameConflictCopies: [(was: String, now: String)] = []) {
        self.added = added
        self.removed = removed
        self.removedPaths = removedPaths
        self.addedItems = addedItems
        self.moved = moved
        self.becameConflictCopies = becameConflictCopies
    }

    /// True when the tree is not as it was: items appeared, went, moved or were renamed.
    public var changedTree: Bool { !added.isEmpty || removed > 0 || moved > 0 }
}

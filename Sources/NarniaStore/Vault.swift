import Glibc
import NarniaCrypto
import NarniaSystem

/// An open, unlocked vault: the store directory, its keys, the merged metadata of every
/// device's journal, and the folder tree derived from it.
///
/// Holds an exclusive `flock` on the store directory for its whole life: one writer per
/// device. Every metadata change is one authenticated record appended to this device's own
/// journal and made durable before the call returns; the tree changes only after that.
/// Other devices' journals are only ever read. Not thread-safe: one shell drives it.
public final class Vault {
    /// The store directory.
    public let directory: String
    /// The Argon2id limits of the key file this session was unlocked with.
    public internal(set) var kdfParameters: KDFParameters
    /// This device: this store directory on this machine (docs/FORMAT.md, "Devices").
    public let device: Identifier
    /// What opening found that the user should know (a journal cut short, records of this
    /// device missing, …), one sentence each.
    public internal(set) var warnings: [String] = []
    /// What went wrong after open, in a command that succeeded, for the shell to say after it
    /// (`takeWarningsSinceOpen`).
    var warningsSinceOpen: [String] = []

    let layout: StoreLayout
    let lockHandle: FileDescriptor
    /// The master keys of the key file this session opened (more after `passwd --rotate`).
    var masters: MasterKeys
    /// The journal keys of each master key, the current one's first.
    var journalKeyChain: [JournalKeys]
    /// The keys this device seals its records with.
    var journalKeys: JournalKeys { journalKeyChain[0] }
    let tags: NameTags
    /// The item keys of `state` (a reload replaces both).
    var keys: KeyTable
    let pipeline = ChunkPipeline()

    var clock: HybridClock
    var state: MergeState
    var view = TreeView()
    var inventory = StoreInventory()
    /// Every journal read, by identifier.
    var journals: [Identifier: JournalFile] = [:]
    /// What this device has read, device by device (its own records included).
    var knowledge = Knowledge()
    /// This device's latest record number (seen in its journals or acknowledged by others).
    var lastSeq: UInt64 = 0
    /// This device's journal, once it has one.
    var journal: JournalWriter?
    /// The key file this session was unlocked with.
    var keyFileID: Identifier
    /// The name of that key file at the store's top level: a folder holding it is this store,
    /// however it is reached (another mount's view of it, say), or a copy of it.
    public var keyFileName: String { keyFileID.hex }
    /// Set when records of this device may have been lost: its objects that no record names
    /// are then kept (`keep`) at its next write instead of being deleted.
    var ownRecordsMayBeLost = false
    /// Record numbers that name two records (two copies of a store wrote as one device), and
    /// of those, this device's that reach its newest journal: reported at open, and `verify`
    /// fails on them.
    var recordForks: [RecordFork] = []
    var newOwnForks: [RecordFork] = []
    /// True when another copy of this store has written as this device: its unnamed objects
    /// are then all kept (the other copy's may arrive before the records that name them).
    var ownRecordsForked: Bool { recordForks.contains { $0.device == device } || !journalsWithUnreadRecordsFound.isEmpty }
    /// This device's journals found (in this session) retired by another copy of this store
    /// without records this copy holds: reported once, and `verify` fails on them.
    var journalsWithUnreadRecordsFound = Set<Identifier>()
    /// What is known lost of other devices' records this device has read (`verify` fails on it).
    var othersRecordsMissing: [String] = []
    /// Set when this device cannot write at open (it has no journal yet): the next record
    /// keeps the objects that `ownRecordsMayBeLost` protects.
    var keepOwnObjectsAtNextWrite = false
    /// The objects this device's newest record names as content, and that record's number:
    /// the greatest of them that is this device's own (not a drop it adopted, which stays
    /// 0600) was marked committed last (`markCommitted`), so is still `uncommittedMode` only
    /// when the marking was cut short (`finishKilledMarking`).
    var newestOwnRecordContents: (seq: UInt64, objects: [Identifier]) = (0, [])
    /// This device's journals found cut short by this open (not reported before).
    var newlyFoundCuts = Set<Identifier>()
    /// Set when this session found objects of this device that records it no longer holds
    /// once named (`verify` fails on it in this session; afterwards the objects are `kept`).
    var lostOwnRecordsFound: String?
    /// Files named as a journal or its copy, of a journal another file of which opens, that do
    /// not open themselves: set aside (`verify` fails on them) rather than refusing the vault.
    var unreadableCopies: [StorePath] = []
    /// The settings of inbox key pairs (`inbox-key.ID`) that records under the current master
    /// key set, and those records under a key a rotation replaced set, as the last read of the
    /// journals found them (`replaceInboxKeyAnOldKeyFileReads`).
    var inboxPairsUnderCurrentKey = Set<String>()
    var inboxPairsUnderReplacedKeys = Set<String>()
    /// True when the last read of the journals found a record under the current master key:
    /// false after a rotation whose records have not arrived, or that was cut short before it
    /// wrote any (`replaceInboxKeyAnOldKeyFileReads` says which causes are possible).
    var recordsReadUnderCurrentKey = false
    /// The drops the last adoption left, as it said them, and whether each may still be
    /// arriving (not whole yet): `verify` repeats them (review AH).
    var dropsLeft: [(said: String, mayBeArriving: Bool)] = []
    /// How many times content failed authentication (or had grown) in this session: a batch run
    /// that met any exits 1, even where a `-` line let the command fail.
    public internal(set) var damageFound = 0
    /// Counts committed changes, so that views derived from the tree know when to recompute.
    public internal(set) var generation = 0
    /// Set when a reload met journals sealed under a master key this session does not hold
    /// (another device's `passwd --rotate`): the session goes on with the vault as it was, and
    /// changes no key (`refuseKeyChangeAfterRotationElsewhere`).
    var rotationElsewhereArrived = false
    var bytesAtLastCompaction: Int64 = 0
    var isCompacting = false
    /// Set once a compaction failed in this session, and said (`compactIfWorthIt`).
    var compactionFailureSaid = false
    /// Object file sizes seen (see `objectFileSize`).
    var wholeObjectSizes: [String: Int64] = [:]
    /// Hashes of journal files' prefixes, by path and length (see `digest(ofCopy:length:)`).
    var copyDigests: [String: CopyDigest] = [:]

    init(directory: String, lock: FileDescriptor, keyFileID: Identifier, parameters: KDFParameters,
         masters: MasterKeys, device: Identifier) throws {
        self.directory = directory
        self.layout = StoreLayout(root: directory)
        self.lockHandle = lock
        self.keyFileID = keyFileID
        self.kdfParameters = parameters
        self.masters = masters
        self.device = device
        journalKeyChain = try masters.all.map { try JournalKeys(masterKey: $0) }
        tags = NameTags(key: try masters.namesKey.deriveSubkey(.names), device: device)
        keys = try KeyTable()
        state = MergeState(keys: keys, device: device)
        clock = HybridClock(device: device)
    }

    // MARK: Creating

    /// Creates a new vault in `directory` (which must be missing or an empty folder; it is
    /// made, or made private, mode 0700) and opens it.
    /// - Throws: `VaultError.alreadyExists`, `.notEmpty`, `.unsafeDirectory`, `SystemError`,
    ///   `CryptoError`.
    public static func create(at directory: String, passphrase: Secret, parameters: KDFParameters) throws -> Vault {
        Sodium.ensureInitialized()
        if try checkCanCreate(at: directory) {
            try FileSystem.makeDirectories(directory, mode: 0o700)
            try? FileSystem.syncDirectory(FileSystem.parentDirectory(of: directory))
        }
        let lock = try openStoreDirectory(directory, makingPrivate: true)
        guard try lock.tryLockExclusive() else { throw VaultError.locked(directory) }
        // Again under the lock: another `init` may have made a whole vault here and exited
        // between the first check and the lock (two key files, under two master keys, were
        // the result, and both runs said they had made the vault).
        try checkCanCreate(at: directory)
        let masters = MasterKeys([try Secret.random(count: 32)])
        let device = try deviceIdentifier(of: lock, namesKey: masters.namesKey)
        let keyFileID = Identifier.random()
        let vault = try Vault(directory: directory, lock: lock, keyFileID: keyFileID, parameters: parameters,
                              masters: masters, device: device)
        do {
            try vault.commit([], view: .none)   // the journal, its first record: whose it is
            let salt = randomBytes(PassphraseKey.saltLength)
            let kek = try PassphraseKey.derive(passphrase: passphrase, salt: salt, parameters: parameters)
            try vault.writeKeyFile(id: keyFileID, kek: kek, salt: salt, parameters: parameters)
            try vault.ensureInboxKey()
        } catch {
            // Leave the folder empty again (a full disk, say), so that `init` can simply be rerun.
            vault.removeEverythingWritten()
            throw error
        }
        return vault
    }

    /// Checks that a vault can be created in `directory`: it must be missing or an empty folder
    /// (but for what Syncthing keeps in a folder it shares, `syncEngineMarkers`).
    /// Returns true when the folder must be created.
    /// - Throws: `VaultError.alreadyExists` when it holds a store, `.notAFolder` for a file,
    ///   `.notEmpty` for a folder holding anything else.
    @discardableResult
    public static func checkCanCreate(at directory: String) throws -> Bool {
        guard let st = try FileSystem.statIfExists(directory) else { return true }
        guard st.isDirectory else { throw VaultError.notAFolder(directory) }
        let names = try FileSystem.listDirectoryCountingUndecodable(directory)
        guard names.names.allSatisfy(syncEngineMarkers.contains) && names.undecodable.isEmpty else {
            let hasKeyFile = names.names.contains { StoreName.identifier(in: $0, digits: 32) != nil }
            throw hasKeyFile ? VaultError.alreadyExists(directory) : VaultError.notEmpty(directory)
        }
        return false
    }

    /// What Syncthing keeps in a folder it shares, the store's among them (the man page says to
    /// share the store's folder itself): its marker, its ignore patterns and its versions,
    /// which the store leaves alone (review DO-2: `init` in a folder shared empty was refused,
    /// "not an empty folder").
    public static let syncEngineMarkers: Set<String> = [".stfolder", ".stignore", ".stversions"]

    /// True when `directory` holds nothing but empty folders named like a store's shard folders:
    /// what an `init` killed before its first file leaves, or what a sync engine that makes
    /// folders before files shows for a moment of a store arriving — so it is said, and not
    /// taken for an empty folder (review AK: `init` there would make a second vault).
    public static func holdsOnlyEmptyShardFolders(_ directory: String) -> Bool {
        guard let names = try? FileSystem.listDirectory(directory), !names.isEmpty else { return false }
        return names.allSatisfy { name in
            StoreName.isShardName(name) && (try? FileSystem.lstatIfExists(directory + "/" + name))??.isDirectory == true
                && (try? FileSystem.listDirectory(directory + "/" + name))?.isEmpty == true
        }
    }

    /// True when `directory` holds a sync engine's files and nothing else a store or a user
    /// would put there: its markers (`syncEngineMarkers`), and Syncthing's temporary files of
    /// transfers under way, at the top or in folders named like shard folders — a folder
    /// shared before the first store file arrived (review FM-3: the hint said it held other
    /// files, and pointed at `init`, which on a second copy of one vault makes another).
    public static func holdsOnlySyncEngineFiles(_ directory: String) -> Bool {
        func isTemporary(_ name: String) -> Bool { name.hasPrefix(".syncthing.") || name.hasPrefix("~syncthing~") }
        guard let names = try? FileSystem.listDirectory(directory), names.contains(where: syncEngineMarkers.contains) else { return false }
        return names.allSatisfy { name in
            if syncEngineMarkers.contains(name) || isTemporary(name) { return true }
            guard StoreName.isShardName(name), (try? FileSystem.lstatIfExists(directory + "/" + name))??.isDirectory == true,
                  let inside = try? FileSystem.listDirectory(directory + "/" + name) else { return false }
            return inside.allSatisfy(isTemporary)
        }
    }

    /// Whether `directory` certainly holds no store, which `open` would report as
    /// `VaultError.noVault` whatever the passphrase: it is missing, not a folder, or its top level
    /// has no key file, inbox key or shard folder. Read without the lock and without a key, so a
    /// shell can say so before asking for a passphrase; `open` decides everything else.
    public static func isAbsent(at directory: String) -> Bool {
        guard let st = try? FileSystem.statIfExists(directory), st.isDirectory else { return true }
        guard let names = try? FileSystem.listDirectory(directory) else { return false }
        return !names.contains { StoreName.isShardName($0) || StoreName.identifier(in: $0, digits: 32) != nil }
    }

    /// Opens the store directory itself, refusing one that another user owns or may write to.
    /// `makingPrivate` (for `init`, which may be given an existing empty folder) first sets
    /// its mode to 0700.
    static func openStoreDirectory(_ directory: String, makingPrivate: Bool = false) throws -> FileDescriptor {
        let fd = try FileDescriptor.open(directory, .readOnly, options: .directory)
        var st = try fd.status()
        guard st.st_uid == geteuid() else { throw VaultError.unsafeDirectory(directory, "the folder belongs to another user") }
        if makingPrivate {
            _ = try retryingInterrupts("chmod", directory) { fchmod(fd.raw, 0o700) }
            st = try fd.status()
        }
        guard st.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            // Quoted for sh, a `'` in the path as `'\''`: the hint can be pasted as it is.
            let quoted = "'" + directory.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
            // FAT, exFAT and NTFS drivers show the modes their mount options give: chmod does
            // nothing (here, or `init`'s own chmod just now did nothing).
            let remedy = fd.fileSystemKeepsModes && !makingPrivate
                ? "make it private with: chmod 700 \(quoted)"
                : "this file system keeps no modes (FAT, exFAT, NTFS): mount it private, with the option umask=077"
            throw VaultError.unsafeDirectory(directory, "other users may write to the folder; \(remedy)")
        }
        return fd
    }

    /// This device's identifier: the store directory's device and inode numbers on this
    /// machine (its `/etc/machine-id`), under a key from the vault's first master key.
    static func deviceIdentifier(of directory: FileDescriptor, namesKey: Secret) throws -> Identifier {
        let st = try directory.status()
        var machine: [UInt8] = []
        for path in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
            if let fd = try? FileDescriptor.open(path, .readOnly), let bytes = try? fd.readToEnd(limit: 4096), !bytes.isEmpty {
                machine = bytes.filter { $0 != UInt8(ascii: "\n") }
                break
            }
        }
        let key = try namesKey.deriveSubkey(.names)
        return NameTags.deviceIdentifier(key: key, machineID: machine, fileSystemDevice: UInt64(st.st_dev), inode: UInt64(st.st_ino))
    }

    /// After a failed `create`: removes the journal, key file, inbox public key file and shard
    /// folders it made.
    private func removeEverythingWritten() {
        if let journal {
            try? FileSystem.unlink(journal.path, missingOK: true)
            try? FileSystem.removeDirectory(layout.shardDirectory(for: journal.id))
        }
        try? FileSystem.unlink(layout.keyFilePath(named: keyFileID), missingOK: true)
        for id in inventory.inboxKeys.keys { try? FileSystem.unlink(layout.keyFilePath(named: id), missingOK: true) }
    }

    // MARK: Opening

    /// Opens the vault in `directory` with `passphrase`: takes the lock, unwraps the master
    /// keys from a key file, merges every journal present, upgrades a format-1 store, and tidies
    /// up what is provably unneeded. `notice` hears, before the key derivation, when a key file
    /// asks for costlier limits than this program's default.
    ///
    /// When a journal is sealed under a master key the key file lacks (`passwd --rotate` made
    /// on two devices at once), the other key files that `passphrase` opens are tried, then
    /// those that `anotherPassphrase` opens, if given (it is asked once, and may return nil).
    /// With a `budget` (the door), only key files of the newest `budget.count` salts are tried,
    /// adopting derives nothing more, and `budget.spent` counts the derivations made.
    /// - Throws: `VaultError.noVault`, `.wrongPassphrase`, `.refusedLimits`, `.locked`,
    ///   `.unsafeDirectory`, `.damagedKeyFile`, `MetadataError.damaged`, `.incomplete`, `.unknownMasterKey`,
    ///   `StoreFileError`, `SystemError`.
    public static func open(at directory: String, passphrase: Secret, notice: ((String) -> Void)? = nil,
                            anotherPassphrase: (() -> Secret?)? = nil, budget: DerivationBudget? = nil) throws -> Vault {
        Sodium.ensureInitialized()
        guard let st = try FileSystem.statIfExists(directory), st.isDirectory else { throw VaultError.noVault(directory) }
        let lock = try openStoreDirectory(directory)
        // The store is read under its lock, which another process writing it holds. At the
        // door, though, a wrong key must leave the footprint no store leaves: the lock is taken
        // only once the key opened a key file (review CU-1: in the world-readable `/proc/locks`
        // for the whole derivation, it told any local user that a vault was behind the
        // Wardrobe), and the store read again then (review CX-1: read before, by a process that
        // then found the lock free once the other had exited, it wrote from a stale listing as
        // a second copy of this device would); nor does a thread list the shard folders beside
        // the derivation there (`/proc/PID/status` counts threads for anyone).
        let atTheDoor = budget != nil
        if !atTheDoor { guard try lock.tryLockExclusive() else { throw VaultError.locked(directory) } }
        var inventory = try StoreInventory.scanTopLevel(directory)
        var shardListing = atTheDoor ? nil : ShardListing(root: directory, names: inventory.shardNames)
        defer { shardListing?.waitUntilDone() }
        func listing() -> ShardListing {
            if let shardListing { return shardListing }
            let started = ShardListing(root: directory, names: inventory.shardNames)
            shardListing = started
            return started
        }
        if inventory.keyFiles.isEmpty { try listing().wait(addingTo: &inventory) }
        var derivations = KeyFileCandidates.Derivations(passphrase: passphrase, notice: notice, budget: budget)
        let unlocked = try KeyFileCandidates.unlock(inventory: inventory, root: directory, derivations: &derivations)
        if atTheDoor {
            guard try lock.tryLockExclusive() else { throw VaultError.locked(directory) }
            shardListing?.waitUntilDone()
            shardListing = nil
            inventory = try StoreInventory.scanTopLevel(directory)
        }
        try listing().wait(addingTo: &inventory)
        var masters = unlocked.contents.masters
        let device = try deviceIdentifier(of: lock, namesKey: masters.namesKey)
        // Key files opened besides `unlocked` because a journal needed their keys.
        var adopted: [(unlocked: KeyFileCandidates.Unlocked, samePassphrase: Bool)] = []
        var askedAnother = false
        var vault: Vault
        while true {
            vault = try Vault(directory: directory, lock: lock, keyFileID: unlocked.id, parameters: unlocked.parameters,
                              masters: masters, device: device)
            vault.inventory = inventory
            do {
                try vault.load(upgrading: unlocked.contents.formerJournal != nil)
                break
            } catch MetadataError.unknownMasterKey(let journals) {
                // Rotations on two devices at once: each key file holds its own new key.
                let known = masters.all.count
                func adopt(_ derivations: inout KeyFileCandidates.Derivations, same: Bool) throws {
                    let tried = Set([unlocked.id] + adopted.map(\.unlocked.id))
                    for other in try KeyFileCandidates.unlockAll(inventory: inventory, root: directory, derivations: &derivations, except: tried)
                    where masters.adopt(other.contents.masters) {
                        adopted.append((other, same))
                    }
                }
                try adopt(&derivations, same: true)
                // A live key file holding more keys than the one opened, which a record read
                // here retired, is a later rotation's, which holds that one's keys too (its
                // length tells how many): the passphrase was replaced, not joined by another
                // one (review AS). The one opened not retired, a longer key file may be a
                // rotation made at once from an older key and followed by another, which holds
                // more keys but not this one's (review EJ-1: no passphrase opened the vault).
                let opened = unlocked.contents.masters.all.count
                let superseded = vault.state.retired[RetiredFile(kind: .keyFile, id: unlocked.id)] != nil && vault.inventory.keyFiles.keys.contains { id in
                    id != unlocked.id && vault.liveKeyFile(id, holdsMoreThan: opened)
                }
                // The one opened a rotation's, and another rotation's key file here that this
                // passphrase does not open (one holding fewer keys too, review EJ-1): a
                // rotation elsewhere under another passphrase, whose passphrase is asked for
                // (review EL-1: after one rotation elsewhere, the old passphrase was asked for
                // "the other" where its rotating device's retiring record had not arrived).
                let anotherRotation = !superseded && opened > 1 && vault.inventory.keyFiles.keys.contains {
                    $0 != unlocked.id && vault.mayHoldARotatedKey($0, in: vault.inventory)
                }
                if masters.all.count == known, anotherRotation, !askedAnother, let anotherPassphrase {
                    askedAnother = true
                    if let another = anotherPassphrase() {
                        var others = KeyFileCandidates.Derivations(passphrase: another, notice: notice)
                        try adopt(&others, same: false)
                    }
                }
                guard masters.all.count > known else {
                    if anotherPassphrase == nil, anotherRotation { throw MetadataError.needsAnotherPassphrase(journals) }
                    throw MetadataError.unknownMasterKey(journals)
                }
            }
        }
        let opened = [unlocked] + adopted.map(\.unlocked)
        if let whole = opened.first(where: { $0.contents.masters.holds(all: masters) }) {
            vault.keyFileID = whole.id
        }
        if let former = unlocked.contents.formerJournal {
            try vault.upgrade(formerJournal: former, formerKeyFile: unlocked.id, kek: unlocked.kek,
                              salt: unlocked.salt, parameters: unlocked.parameters)
        } else if vault.state.retired[RetiredFile(kind: .keyFile, id: vault.keyFileID)] != nil,
                  !adopted.contains(where: { vault.state.retired[RetiredFile(kind: .keyFile, id: $0.unlocked.id)] == nil }) {
            // (Two rotations at once, the other of which retired the key file opened, which had
            // reached its device before its journals: the passphrases given open that other
            // rotation's key file too, live, and nothing is refused or missing. Review EO-4: it
            // was said to be "not here", by a length that counts every key of the merge.)
            // A key file that passwd retired, carried back by a sync engine or a backup: its
            // old passphrase must not let anyone in while the key file that replaced it is here.
            // Until that one arrives (a sync in progress) the old passphrase still opens this
            // copy, with a warning.
            // It is refused, not deleted: only a session opened with a live key file, which is
            // then known to open, deletes retired ones.
            let live = vault.liveKeyFiles
            guard live.isEmpty else {
                let byRotation = live.contains { vault.liveKeyFile($0, holdsMoreThan: unlocked.contents.masters.all.count) }
                throw VaultError.retiredPassphrase(live: live.map(\.hex).sorted(), byRotation: byRotation)
            }
            // Only this device retired the key files here: the one missing is the one its passwd
            // never wrote. (Inbox key files, which `inbox-key --rotate` retires, are not counted.)
            let retiredHere = vault.inventory.keyFiles.keys.map { RetiredFile(kind: .keyFile, id: $0) }
            if retiredHere.allSatisfy({ vault.state.ownRetired[$0] != nil }) {
                vault.warnings.append("a change of passphrase on this device did not finish (interrupted, or the disk was full): its new key file was never written, and the old passphrase still opens the vault; run it again ('passwd --rotate' if it was a rotation: plain 'passwd' keeps the master key an old key file opens)")
            } else {
                vault.warnings.append("this passphrase was changed, but the new key file is not here (still arriving from the device that changed it, or never written there); once it is, only the new passphrase opens the vault")
            }
        }
        if !opened.contains(where: { $0.contents.masters.holds(all: masters) }) {
            if adopted.allSatisfy(\.samePassphrase) {
                // One passphrase opened each rotation's key file: one key file now holds them all.
                try vault.mergeKeyFiles(opened.map(\.id), kek: unlocked.kek, salt: unlocked.salt, parameters: unlocked.parameters)
            } else {
                vault.warnings.append("this vault's master key was rotated on two devices at once, with different passphrases; it opened with both, and 'passwd' sets one passphrase that opens everything")
            }
        }
        vault.warnings += vault.inventory.misshapenProblems
        vault.warnings += vault.misplacedFileReports().problems
        if vault.state.devices[vault.device]?.forgotten == true {
            // Review BN-4: a device forgotten but still in use was never told.
            // It stays forgotten (review CC-9): the warning says how to be waited for again.
            vault.warnings.append("another device forgot this one ('devices forget'): what is removed or replaced elsewhere is deleted from the store without waiting for this device to read of it, so such items may show here as damaged until a sync brings their removal; what this device writes still counts. To be waited for again, give this copy a device of its own: copy the store to a new folder with cp -a and use the copy")
        }
        vault.resealOwnRecordsIfNeeded()
        try vault.tidy()
        vault.warnOfManyKeyFiles()
        vault.dateRetiredKeyFilesBack()
        vault.checkInboxPublicFiles()
        vault.replaceInboxKeyAnOldKeyFileReads()
        if vault.isKnownDevice {
            // A vault made before inboxes existed gets its key pair from the first device that
            // writes anyway (opening a copy to look at it writes nothing).
            do { try vault.ensureInboxKey() } catch {
                vault.warnings.append("could not make the inbox key (\(error)); 'narnia drop' cannot add files to this vault yet")
            }
        }
        return vault
    }
}

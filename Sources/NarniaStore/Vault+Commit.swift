import Glibc
import NarniaCrypto
import NarniaSystem

/// How a commit changes the derived tree.
enum ViewUpdate {
    /// Not at all (settings, acknowledgements, retirements).
    case none
    /// In place: the change involves no merged folders, names in conflict or removed folders.
    case change((inout TreeView) -> Void)
    /// Derived anew from the merged state.
    case rebuild
}

extension Vault {
    // MARK: Records

    /// Appends one record holding `operations` to this device's journal, durably, then
    /// applies it to the merged state and the tree. Starts the journal first when this
    /// device has none yet. Deletes what the record retires once every device has heard.
    func commit(_ operations: [Operation], view update: ViewUpdate, startsSnapshot: Bool = false) throws {
        var ops = operations
        if journal == nil {
            // One value per register in a record: a name given now replaces the default.
            let naming = ops.contains { if case .deviceName = $0 { true } else { false } }
            ops = try startJournal(previousSeq: lastSeq, snapshot: startsSnapshot).filter { op in
                if case .deviceName = op { !naming } else { true }
            } + ops
        }
        if keepOwnObjectsAtNextWrite {
            let unnamed = ownUnnamedObjects
            if !unnamed.isEmpty { ops.append(.keep(unnamed)) }
        }
        let writer = journal!
        let seq = lastSeq + 1
        let stamp = clock.next()
        var known = knowledge
        known[device] = seq
        let header = RecordHeader(seq: seq, wall: stamp.wall, counter: stamp.counter, knowledge: known)
        var w = ByteWriter(capacity: 256 + 200 * ops.count)
        RecordCoding.encode(header, ops, keys: keys, into: &w)
        defer { w.wipe() }
        var savedCopy: String?
        do {
            try writer.append(w.bytes)
        } catch let replaced as JournalWriter.Replaced {
            savedCopy = replaced.copy
        } catch let lost as JournalWriter.ReplacedAndNotSaved {
            journal = nil
            throw VaultError.refused("this device's journal \(writer.id.hex.prefix(8)) was replaced by another copy of it while this session was open, and what this session wrote to it could not be saved (\(lost.cause)): this change was not made, and changes made since the journal was replaced may be lost; open the vault again")
        } catch {
            if writer.recordCount == 0 { abandonNewJournal(writer) }
            throw error
        }
        knowledge = known
        lastSeq = seq
        keepOwnObjectsAtNextWrite = false
        state.noteRecord(device: device, header: header)
        var current = stamp
        var retiring: [RetiredFile] = []
        for op in ops {
            switch op {
            case .stamp(let s): current = s
            case .journal: break
            case .retire(let file, _):
                retiring.append(file)
                try state.apply(op, stamp: current, key: nil, author: device)
            default: try state.apply(op, stamp: current, key: nil, author: device)
            }
        }
        var file = journals[writer.id]!
        file.records = writer.recordCount
        file.lastSeq = seq
        file.end = JournalEnd(records: writer.recordCount, offset: writer.endOffset, lastRecordStart: writer.lastRecordStart, cutBytes: 0)
        journals[writer.id] = file
        generation += 1
        switch update {
        case .none: break
        case .change(let change): change(&view)
        case .rebuild: rebuildView()
        }
        markCommitted(Self.objectsGivenAsContent(by: ops))
        if let savedCopy { goOnAfterReplacedJournal(writer, savedAs: savedCopy) }
        if !retiring.isEmpty { deleteRetiredFiles(retiring) }
        if !startsSnapshot && journal?.recordCount ?? 0 > 1 { compactIfWorthIt() }
    }

    /// This device's journal was replaced under the session (`JournalWriter.Replaced`): what
    /// it held is saved as a copy, read with the journal at every open, which goes on in a
    /// snapshot then (`tidy`); this session goes on in a new journal, and says so.
    func goOnAfterReplacedJournal(_ writer: JournalWriter, savedAs copy: String) {
        journal = nil
        let root = layout.root.hasSuffix("/") ? layout.root : layout.root + "/"
        if copy.hasPrefix(root) { inventory.files[writer.id]?.add(String(copy.dropFirst(root.count)), isCopy: true) }
        warningsSinceOpen.append("this device's journal \(writer.id.hex.prefix(8)) was replaced by another copy of it while this session was open (a sync engine carried one from another device, or a backup was put back): everything this session wrote to it is kept, as \(copy), and it goes on in a new journal; do not delete that file")
    }

    /// Looks whether this device's journal was replaced under the session since its last
    /// append, and if so saves it and goes on as `commit` does (`goOnAfterReplacedJournal`):
    /// asked between lines and when a session ends, since a journal replaced after the last
    /// write was found by no append, and what the session had written was lost when it ended
    /// (review CJ-2).
    public func saveJournalIfReplaced() {
        guard let writer = journal else { return }
        do {
            if let copy = try writer.savedIfReplaced() { goOnAfterReplacedJournal(writer, savedAs: copy) }
        } catch {
            journal = nil
            warningsSinceOpen.append("this device's journal \(writer.id.hex.prefix(8)) was replaced by another copy of it while this session was open, and what this session wrote to it could not be saved (\(error)): changes this session made may be lost")
        }
    }

    /// The warnings since open not yet taken, oldest first; each is taken once.
    public func takeWarningsSinceOpen() -> [String] {
        defer { warningsSinceOpen = [] }
        return warningsSinceOpen
    }

    /// The content objects a record's operations name.
    static func objectsGivenAsContent(by ops: [Operation]) -> Set<Identifier> {
        Set(ops.compactMap { $0.contentGiven?.objectID })
    }

    /// The mode of an object no record has named yet, and of one a durable record of this
    /// device named (docs/FORMAT.md, "Leftovers"): only an object still `uncommittedMode` is
    /// ever deleted as a leftover, so one whose records were lost later is kept.
    static let uncommittedMode: mode_t = 0o600
    static let committedMode: mode_t = 0o400

    /// Marks this device's objects that a durable record now names as committed, the greatest
    /// last (so that one still unmarked tells a marking cut short: `finishKilledMarking`).
    /// Failures are ignored: an unmarked object is only deleted if no record names it, as before.
    func markCommitted(_ ids: Set<Identifier>) {
        guard !ids.isEmpty else { return }
        let own = tags.withKeyOpen { ids.filter { tags.isOwnObject($0) } }
        for id in own.sorted() { _ = Glibc.chmod(layout.objectPath(for: id), Self.committedMode) }
    }

    /// What this device's next record will say it has read (its own record included), for a
    /// `retire` operation in it.
    var knowledgeOfNextRecord: Knowledge {
        var k = knowledge
        k[device] = lastSeq + 1
        return k
    }

    /// Creates a new journal for this device and returns the operations that must open its
    /// first record.
    func startJournal(previousSeq: UInt64, snapshot: Bool) throws -> [Operation] {
        let id = tags.newJournal()
        try layout.ensureShard(for: id)
        let path = layout.objectPath(for: id)
        let writer = try JournalWriter.create(id: id, path: path, directory: layout.shardDirectory(for: id), keys: journalKeys,
                                              staging: makeReceivingFolder)
        journal = writer
        inventory.files[id] = StoreInventory.Entry(main: layout.shardName(for: id) + "/" + id.hex)
        journals[id] = JournalFile(id: id, device: device, previousSeq: previousSeq, snapshot: snapshot,
                                   end: JournalEnd(records: 0, offset: 0, cutBytes: 0), records: 0,
                                   lastSeq: previousSeq)
        var ops: [Operation] = [.journal(device: device, previousSeq: previousSeq, snapshot: snapshot)]
        if state.devices[device]?.name == nil { ops.append(.deviceName(defaultDeviceName)) }
        return ops
    }

    /// A journal whose first record could not be written is this device's own and holds
    /// nothing: it goes.
    private func abandonNewJournal(_ writer: JournalWriter) {
        writer.abandon()
        inventory.files[writer.id] = nil
        journals[writer.id] = nil
        journal = nil
    }

    /// The host name with the first four hex digits of the device's identifier, so that two
    /// copies of one store on one machine differ.
    var defaultDeviceName: String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count) == 0 ? String(nulTerminated: buffer) : "device"
        let clean = String(host.unicodeScalars.filter { $0.isASCII && $0.properties.generalCategory != .control }.prefix(40))
        return (clean.isEmpty ? "device" : clean) + "-" + String(device.hex.prefix(4))
    }

    // MARK: Retiring and deleting

    /// `retire` operations for the objects that no item will use once `contents` are
    /// released (removed items, replaced content).
    func retirements(freeing contents: [ContentInfo]) -> [Operation] {
        var released: [Identifier: Int] = [:]
        for c in contents { released[c.objectID, default: 0] += 1 }
        let known = knowledgeOfNextRecord
        return released.sorted { $0.key < $1.key }.compactMap { object, count in
            (state.objectUses[object]?.items ?? 0) <= count ? .retire(RetiredFile(kind: .object, id: object), known) : nil
        }
    }

    /// True when a device's latest record here follows records of it that this copy does not
    /// hold (an older journal of it not arrived yet): what that record acknowledged is no
    /// proof that every record of it was read here, and one of those may be a move that shows
    /// a removed file again (docs/FORMAT.md, "Merging", rule 3). No object goes meanwhile.
    var recordsAcknowledgedAreMissing: Bool { state.waitingDevices.contains(where: recordsAreMissing) }

    /// The devices whose latest record here follows records of them this copy does not hold.
    var devicesWithRecordsMissing: [Identifier] {
        state.waitingDevices.filter(recordsAreMissing).map(\.key).sorted()
    }

    /// True when `device`'s latest record here follows records of it this copy does not hold.
    private func recordsAreMissing(_ device: (key: Identifier, value: MergeState.DeviceRecord)) -> Bool {
        knowledge[device.key] < device.value.lastSeq
    }

    /// True when the retired `file` may be deleted here: every device has read what retired
    /// it, and, for an object, no device's records are missing here.
    func mayDeleteRetired(_ file: RetiredFile) -> Bool {
        state.mayDelete(file) && !(file.kind == .object && recordsAcknowledgedAreMissing)
    }

    /// Deletes the retired files present that every device has heard of (all of them, or
    /// those in `files`), with every copy a sync engine made of them; never a journal holding
    /// records its retirements had not read (`holdsRecordsItsRetirementsDidNotRead`).
    func deleteRetiredFiles(_ files: [RetiredFile]? = nil) {
        for file in files ?? Array(state.retired.keys) where mayDeleteRetired(file) {
            switch file.kind {
            case .object, .journal:
                guard journal?.id != file.id, !holdsRecordsItsRetirementsDidNotRead(file.id),
                      let entry = inventory.files.removeValue(forKey: file.id) else { continue }
                for path in entry.all { try? FileSystem.unlink(layout.root + "/" + path, missingOK: true) }
                if file.kind == .journal { journals[file.id] = nil }
            case .keyFile:
                // An inbox public key file replaced by `inbox-key --rotate`.
                if let entry = inventory.inboxKeys.removeValue(forKey: file.id) {
                    for path in entry.all { try? FileSystem.unlink(layout.root + "/" + path, missingOK: true) }
                    continue
                }
                guard mayDeleteKeyFiles, let entry = inventory.keyFiles.removeValue(forKey: file.id) else { continue }
                for path in entry.all { try? FileSystem.unlink(layout.root + "/" + path, missingOK: true) }
            }
        }
    }

    // MARK: Key files

    /// The key files present that are live (`liveKeyFile`).
    var liveKeyFiles: [Identifier] {
        inventory.keyFiles.keys.filter { liveKeyFile($0) != nil }
    }

    /// The key file `id` when it is live — present, not retired, and whole as far as its
    /// length tells, under its name or a sync engine's copy of it: of a key file's length,
    /// holding at least as many master keys as this device knows (a key file written after a
    /// rotation is longer, and a prefix of it may have a shorter key file's length) — with the
    /// path and length of that whole copy. One still arriving in place, or cut short, is not
    /// live, since it may never open anything.
    func liveKeyFile(_ id: Identifier) -> (path: String, length: Int64)? {
        unretiredKeyFile(id, in: inventory, holdingAtLeast: max(1, masters.all.count))
    }

    /// True when the key file `id` is live (`liveKeyFile`) and its length says it holds more
    /// than `count` master keys: a rotation's made after the key file that holds `count`.
    func liveKeyFile(_ id: Identifier, holdsMoreThan count: Int) -> Bool {
        liveKeyFile(id).flatMap { KeyFile.masterCount(ofLength: Int($0.length)) }.map { $0 > count } == true
    }

    /// The key file `id` of `inventory` when no record read here retired it and a file of it,
    /// under its name or a sync engine's copy, has the length of a key file holding at least
    /// `minimum` master keys: that file's path and length.
    func unretiredKeyFile(_ id: Identifier, in inventory: StoreInventory, holdingAtLeast minimum: Int) -> (path: String, length: Int64)? {
        guard state.retired[RetiredFile(kind: .keyFile, id: id)] == nil, let entry = inventory.keyFiles[id] else { return nil }
        for name in entry.all {
            guard let st = try? FileSystem.lstatIfExists(layout.root + "/" + name), st.isRegularFile,
                  let count = KeyFile.masterCount(ofLength: Int(st.st_size)), count >= minimum else { continue }
            return (name, Int64(st.st_size))
        }
        return nil
    }

    /// Warns when more key files than `passwd` on several devices at once leaves are not
    /// retired: they may have been put at the store's top by someone who can write to it, and
    /// each newer than this device's costs a key derivation at every unlock (review AL).
    /// Nothing tells them from real ones, which are not recorded: they are left.
    func warnOfManyKeyFiles() {
        let unretired = inventory.keyFiles.keys.filter { state.retired[RetiredFile(kind: .keyFile, id: $0)] == nil }.count
        guard unretired > KeyFileCandidates.quietDerivations else { return }
        warnings.append("the store holds \(unretired) key files that no passwd retired, more than passwd on several devices at once leaves: most may have been put at its top by someone who can write to it; each newer than yours costs a key derivation at every unlock ('passwd --rotate' retires them all)")
    }

    /// The modification time given to retired key files still present: 1980-01-02, which
    /// FAT can hold too.
    static let retiredKeyFileTime: Int64 = 315_619_200 * 1_000_000_000

    /// Dates the retired key files still present (waiting for a device that has not heard)
    /// back to `retiredKeyFileTime`, so that an unlock, which tries key files newest first,
    /// reaches them after the live one: forged key files dated in the future kept costing a
    /// derivation at every unlock after the `passwd` that retired them, and kept the door shut
    /// (review AN). Every device gives them the same time, so sync engines see no conflict.
    /// Only a session opened with a live key file does it, as for deleting them.
    func dateRetiredKeyFilesBack() {
        guard isKnownDevice, mayDeleteKeyFiles else { return }
        for (id, entry) in inventory.keyFiles where state.retired[RetiredFile(kind: .keyFile, id: id)] != nil {
            for path in entry.all {
                guard let fd = try? JournalReader.openStoreFile(layout.root + "/" + path),
                      let st = try? fd.status(), st.modifiedNanoseconds != Self.retiredKeyFileTime else { continue }
                fd.setTimes(nanoseconds: Self.retiredKeyFileTime)
            }
        }
    }

    /// True when a retired key file may go from this copy: never the last one that opens the
    /// vault, so only while the key file this session opened with (or wrote) is live — one
    /// known to open, not merely of the right length (docs/FORMAT.md, "Key files"). A `passwd`
    /// cut short after its retirement, or a retirement that arrived before the key file
    /// replacing it, leaves the retired one as the only way in.
    var mayDeleteKeyFiles: Bool { liveKeyFile(keyFileID) != nil }

    /// Writes the key file `id` wrapping the master keys under `kek`. It appears whole or not
    /// at all (`WholeFile`).
    func writeKeyFile(id: Identifier, kek: Secret, salt: [UInt8], parameters: KDFParameters) throws {
        let bytes = try KeyFile.seal(masters: masters, kek: kek, salt: salt, parameters: parameters, id: id)
        try WholeFile.write(bytes, named: id.hex, in: lockHandle, path: layout.keyFilePath(named: id))
        inventory.keyFiles[id] = StoreInventory.Entry(main: id.hex)
    }
}

import Glibc
import NarniaSystem

/// Housekeeping at open: deleting only what is provably unneeded, and keeping what might be
/// (docs/FORMAT.md, "Retirement" and "Leftovers").
extension Vault {
    /// True once this device has written a record that the store holds (or that another
    /// device acknowledged): it then holds back deletions until it has read what retires them.
    var isKnownDevice: Bool { lastSeq > 0 }

    /// Objects this device wrote that no record names, not retired and not kept: either
    /// leftovers of a batch that never committed, or objects of records that were lost.
    var ownUnnamedObjects: [Identifier] {
        // The identifiers alone (no copy of the inventory), and the commonest answer first: a
        // store of 100,000 objects asks this of each at every open.
        var candidates: [Identifier] = []
        for (id, entry) in inventory.files where !state.referencedObjects.contains(id) && !entry.legacy && journals[id] == nil
            && !state.kept.contains(id) && state.retired[RetiredFile(kind: .object, id: id)] == nil {
            candidates.append(id)
        }
        return tags.withKeyOpen { candidates.filter { tags.isOwnObject($0) && !tags.isJournal($0) }.sorted() }
    }

    /// Records what opening found (a cut journal: its note and the objects to keep; objects
    /// no item needs any more: their retirement), acknowledges what others retired, and
    /// deletes what is provably unneeded: retired files every device has heard of, and this
    /// device's own leftovers (no process of this device is writing: the lock is held) when
    /// its records are whole. At open (not while a sync runs), also the receiving folders of
    /// this device's interrupted syncs and the staging folders of new journals left behind.
    func tidy(atOpen: Bool = true) throws {
        // Asked before this device's own records below hide it (each says it has read them all).
        let ownNumbersHaveGap = isKnownDevice && knowledge[device] < lastSeq
        let unnamed = ownUnnamedObjects
        // Asked once, and only if an unnamed object needs it: it makes a probe file.
        lazy var marksHold = fileSystemKeepsCommitMark()
        // A device that has not written yet: objects a record named once (by their mode) mean
        // its records were lost. Those that look never named (0600) are kept without a word:
        // a first import killed, or a restore whose umask made them 0600 before its journal
        // came back; once the device writes, its records are whole and they go if still unnamed.
        let namedOnce = isKnownDevice ? [] : splitByCommitMark(unnamed, marksHold: marksHold).named
        if !namedOnce.isEmpty {
            ownRecordsMayBeLost = true
            warnings.append("\(namedOnce.count) objects this device wrote are present but none of its records are; they are kept")
        }
        // Another copy of this store writing as this device (a fork) makes objects of its
        // tag arrive that its records name only later: none is deleted as a leftover.
        let keepOwnUnnamed = ownRecordsMayBeLost || ownRecordsForked
        var ops: [Operation] = []
        var leftovers: [Identifier] = []
        // Tails of this device's journals, said once: cuts (when objects are kept), and
        // unfinished writes that could not be cut off (see `chooseAppendTarget`).
        for file in journals.values where file.device == device {
            if let end = file.end, end.cutBytes > 0, keepOwnUnnamed || end.unfinished, state.notedTails[file.id] == nil {
                ops.append(.tailNoted(journal: file.id, offset: end.offset, bytes: end.cutBytes))
            }
        }
        if keepOwnUnnamed {
            if !unnamed.isEmpty { ops.append(.keep(unnamed)) }
        } else if isKnownDevice {
            // An object a record named once (its mode says so) has lost its records: this
            // device's journal cut at a record boundary, or restored older. It is kept.
            let split = splitByCommitMark(unnamed, marksHold: marksHold)
            if !split.named.isEmpty {
                let text = "\(split.named.count) objects this device wrote were named by records that this copy no longer holds (its journal was cut at a record boundary, restored older, or replaced by an older copy): changes this device committed are missing here; the objects are kept"
                warnings.append(text)
                lostOwnRecordsFound = text
                ops.append(.keep(split.named))
                // The journal that lost them is left as it is, and this device goes on in a new
                // one: writing on after the cut would give the lost records' numbers to other
                // records, and a copy elsewhere that still holds them would then be taken for an
                // older copy of what this one holds.
                journal = nil
            }
            if !split.unsure.isEmpty && split.modesSayNothing {
                warnings.append("\(split.unsure.count) objects this device wrote are named by no record: left by a write cut short, or named by records this copy no longer holds; this file system keeps no file modes, which would tell which, so they are kept")
                ops.append(.keep(split.unsure))
            }
            // Leftovers of a write cut short, deleted below: retired too, so that a copy another
            // device took meanwhile (a sync straight from this store) goes there as well and is
            // never sent back (review CL-2: they went back and forth at every sync, for ever).
            leftovers = split.neverNamed
        }
        let known = knowledgeOfNextRecord
        ops += leftovers.filter { state.retired[RetiredFile(kind: .object, id: $0)] == nil }
            .map { .retire(RetiredFile(kind: .object, id: $0), known) }
        ops += state.unneededObjects.sorted().map { .retire(RetiredFile(kind: .object, id: $0), known) }
        ops += upgradeRetirements
        let recorded = state.devices[device]?.lastKnowledge ?? Knowledge()
        let acknowledgementDue = state.retired.values.contains { list in
            list.contains { !recorded.covers($0) && knowledge.covers($0) }
        }
        if isKnownDevice && (!ops.isEmpty || acknowledgementDue) {
            try commit(ops, view: .none)
        } else if keepOwnUnnamed {
            keepOwnObjectsAtNextWrite = true
        }
        // A fork of this device's records: it goes on after them at once, in a snapshot of
        // every value both versions hold (under numbers no copy has used), which every device
        // reads whatever becomes of the forked journals; they are retired by it. (Should it
        // fail, a read-only store or a full disk, it says so, and the next open tries again.)
        // So does a journal of this device retired without records this copy holds: by
        // another copy writing as this device (a fork their numbers did not show), or by this
        // one when it had lost them (a cut journal whose whole copy came back).
        let unread = isKnownDevice ? ownJournalsWithRecordsNoRetirementRead : []
        for id in unread where !journalsWithUnreadRecordsFound.contains(id) {
            journalsWithUnreadRecordsFound.insert(id)
            warnings.append("this device's journal \(id.hex.prefix(8)) holds records that its retirement did not read: written by another copy of this store writing as this device (a backup restored and used while the original went on, or a copy of its disk), or missing from this copy when it retired the journal; they are kept, and this device goes on after them. If another copy of this store is in use, stop using one of them, or give this one a device of its own (copy the store to a new folder with cp -a and use the copy)")
        }
        // A journal of this device that only a sync engine's copy holds whole (review CF-3),
        // and a gap in this device's record numbers — records that every copy lost, which
        // another device had read (review CF-1, CF-2: every open warned and every `verify`
        // failed, for good, and no device could acknowledge this device's later retirements,
        // so nothing it retired was deleted again): a snapshot stands for every number up to
        // its own, and carries the records on.
        let heldByCopies = isKnownDevice && newOwnForks.isEmpty ? ownJournalsHeldWholeOnlyByCopies : []   // a fork is said as one
        for id in heldByCopies {
            warnings.append("a sync engine's copy of this device's journal \(id.hex.prefix(8)) holds records the journal lacks (it was replaced by an older copy of it): they are read, and this device carries them on in a new journal; the copy goes with the journal once every device has read that")
        }
        if isKnownDevice && (!newOwnForks.isEmpty || !unread.isEmpty || !heldByCopies.isEmpty || ownNumbersHaveGap) {
            do { try compact() } catch {
                warnings.append("this device could not carry its records on in a new journal (\(error)); every version stays and is read, and the next open that can write tries again")
            }
        }
        deleteRetiredFiles()
        if isKnownDevice && !keepOwnUnnamed {
            // Only what no record ever named: leftovers of a batch that never committed.
            for id in leftovers {
                for path in inventory.files.removeValue(forKey: id)?.all ?? [] {
                    try? FileSystem.unlink(layout.root + "/" + path, missingOK: true)
                }
            }
        }
        if atOpen { removeTemporaryFolders() }
        finishKilledMarking { marksHold }
    }

    /// This device's journals, not retired, of which a sync engine's copy (or one a session
    /// saved: `JournalWriter.Replaced`) holds records that the file under the journal's name
    /// lacks: deleting that copy, as users of sync engines do with conflict copies, would
    /// lose them. Not a journal with no file under its name that reads: the version under its
    /// name may be elsewhere, and a snapshot now would retire it unread (a fork of one length,
    /// which a remote's copy is judged by: review AA's test); nor one whose file under the
    /// name does not open (`verify` names it, for the user).
    var ownJournalsHeldWholeOnlyByCopies: [Identifier] {
        journals.values.filter { file in
            guard file.device == device, let held = file.end?.records, held < file.records else { return false }
            return !state.isRetired(RetiredFile(kind: .journal, id: file.id))
        }.map(\.id).sorted()
    }

    /// Marks committed this device's objects that its records name but that are still
    /// `uncommittedMode`: a process killed between a record and the marking of its objects
    /// (`markCommitted`) left them so, and, should that record be lost later, they would be
    /// deleted as never named (review AG). Asked of one file at each open, the greatest object
    /// its newest record names, which is marked last; only when that one is unmarked (and the
    /// file system keeps modes) are the others looked at.
    private func finishKilledMarking(marksHold: () -> Bool?) {
        guard let last = greatestOwnObject(of: newestOwnRecordContents.objects), state.referencedObjects.contains(last),
              isUnmarked(last), marksHold() == true else { return }
        let own = tags.withKeyOpen { state.referencedObjects.filter { tags.isOwnObject($0) && !tags.isJournal($0) } }
        let unmarked = own.filter { id in inventory.files[id].map { !$0.legacy && $0.main != nil } == true && isUnmarked(id) }
        markCommitted(Set(unmarked))
    }

    /// The greatest of `objects` that this device wrote. The greatest of all is, but for a
    /// record of adopted drops: only then are the others' tags checked, in order.
    private func greatestOwnObject(of objects: [Identifier]) -> Identifier? {
        tags.withKeyOpen {
            guard let greatest = objects.max() else { return nil }
            if tags.isOwnObject(greatest) { return greatest }
            return objects.sorted(by: >).first(where: tags.isOwnObject)
        }
    }

    /// True when the format-2 object `id` is a regular file of `uncommittedMode`.
    private func isUnmarked(_ id: Identifier) -> Bool {
        guard let st = try? FileSystem.lstatIfExists(layout.objectPath(for: id)) else { return false }
        return st.isRegularFile && st.st_mode & 0o7777 == Self.uncommittedMode
    }

    /// This device's unnamed objects split by their mode: those still `uncommittedMode`,
    /// which no record ever named (a batch that never committed), and the rest, which a
    /// record named once (marked `committedMode`) or whose mode says nothing sure (a copy
    /// made by a tool that set its own): those are kept. On a file system that keeps no
    /// modes (FAT, exFAT and NTFS show every file alike, whatever `chmod` did) all are
    /// `unsure`: kept too, since none can be proved never named.
    /// Where the store cannot be written (read-only, immutable), nothing can be asked and
    /// nothing deleted or recorded: all are `unsure` and `modesSayNothing` is false, and they
    /// are left as they are, to be judged at an open that can write.
    /// `marksHold` is `fileSystemKeepsCommitMark()`, asked only when there are objects.
    private func splitByCommitMark(_ ids: [Identifier], marksHold: @autoclosure () -> Bool?)
        -> (neverNamed: [Identifier], named: [Identifier], unsure: [Identifier], modesSayNothing: Bool) {
        guard !ids.isEmpty else { return ([], [], [], false) }
        switch marksHold() {
        case nil: return ([], [], ids, false)
        case false?: return ([], [], ids, true)
        case true?: break
        }
        var neverNamed: [Identifier] = [], named: [Identifier] = []
        for id in ids {
            let paths = inventory.files[id]?.all ?? []
            let unmarked = !paths.isEmpty && paths.allSatisfy { path in
                guard let st = try? FileSystem.lstatIfExists(layout.root + "/" + path) else { return false }
                return st.st_mode & 0o7777 == Self.uncommittedMode
            }
            if unmarked { neverNamed.append(id) } else { named.append(id) }
        }
        return (neverNamed, named, [], false)
    }

    /// Whether the store's file system keeps the mode that marks committed objects: a file
    /// made `uncommittedMode` reads back so, and again once made `committedMode`. Asked of a
    /// file made for the purpose and removed (unnamed where the file system allows); nil when
    /// none can be made (a read-only or immutable store).
    func fileSystemKeepsCommitMark() -> Bool? {
        let dir = lockHandle
        var probe: FileDescriptor? = try? dir.open(".", .writeOnly, options: .unnamedTemporary, permissions: Self.uncommittedMode)
        var name: String?
        if probe == nil, let made = makeTemporaryFile(prefix: Self.modeProbePrefix, permissions: Self.uncommittedMode) {
            (name, probe) = (made.name, made.file)
        }
        defer { if let name { try? dir.unlink(name, missingOK: true) } }
        guard let probe else { return nil }
        guard let made = try? probe.status(), made.st_mode & 0o7777 == Self.uncommittedMode,
              fchmod(probe.raw, Self.committedMode) == 0, let marked = try? probe.status() else { return false }
        return marked.st_mode & 0o7777 == Self.committedMode
    }

    /// Makes an empty file at the store's top named `prefix` and `suffix` (12 random hex digits
    /// unless given), exclusively and never through a link (a temporary file:
    /// `StoreInventory.temporaryPrefixes`).
    func makeTemporaryFile(prefix: String, permissions: mode_t, suffix: String? = nil) -> (name: String, file: FileDescriptor)? {
        let name = prefix + (suffix ?? String(Identifier.random().hex.prefix(12)))
        guard let file = try? lockHandle.open(name, .writeOnly, options: [.create, .exclusive, .noFollow], permissions: permissions) else { return nil }
        return (name, file)
    }

    /// How the name of the file `fileSystemKeepsCommitMark` makes begins, where it cannot be
    /// unnamed.
    static let modeProbePrefix = ".narnia-mode-probe-"

    /// Removes the receiving folders of this device's interrupted syncs and the staging
    /// folders of its new journals, the staging folders any device left (`isLeftStaging`),
    /// and the temporary files left (`removeLeftTemporaryFiles`).
    func removeTemporaryFolders() {
        let left = inventory.folders.filter { tags.isOwnSyncTemporary($0) || isLeftStaging($0) }
        for id in left { FileSystem.removeTreeOfFiles(layout.root + "/" + id.hex) }
        inventory.folders.removeAll { left.contains($0) }
        removeLeftTemporaryFiles()
    }

    /// Removes the temporary files (`StoreInventory.temporaryFiles`) left untouched for
    /// `leftStagingAge` that no process of this machine holds locked (`WholeFile` locks its
    /// file while it writes it: a drop from a pipe may wait for input that long). One left so
    /// belongs to a process killed meanwhile — on this device or another, since a sync engine
    /// may carry it — and was never named: nothing reads it; or is a transfer cut short, whose
    /// source holds the whole file. A younger one may be a drop being written on another
    /// machine, or a transfer under way, and is left.
    func removeLeftTemporaryFiles() {
        let limit = Nanoseconds.difference(SystemClock.nowNanoseconds(), Self.leftStagingAge)
        inventory.temporaryFiles.removeAll { path in
            let full = layout.root + "/" + path
            // This device's own store probe, left by a sync killed while it listed: the lock is
            // held, so no process of this device is using it.
            if isOwnStoreProbe(path) { return (try? FileSystem.unlink(full, missingOK: true)) != nil }
            guard let st = try? FileSystem.lstatIfExists(full) else { return true }
            // Untouched by either time: rclone gives a copy its source's modification time
            // (`NAME.narnia-sending-…` the journal's, older than a day before it is renamed).
            guard st.isRegularFile, max(st.modifiedNanoseconds, st.changedNanoseconds) < limit,
                  let file = try? FileDescriptor.open(full, .readOnly, options: [.noFollow, .nonBlocking]),
                  (try? file.tryLockExclusive()) == true else { return false }
            return (try? FileSystem.unlink(full, missingOK: true)) != nil
        }
    }

    /// How long a folder must have been left untouched before it is taken for another
    /// device's staging folder that nothing will come back to.
    static let leftStagingAge: Int64 = 24 * 3600 * 1_000_000_000

    /// True for a folder at the store's top holding nothing but files named as journals, none
    /// changed for `leftStagingAge`: the staging folder of a new journal killed before its
    /// first record was renamed into place (FAT, FUSE; `JournalWriter.create`), so never
    /// committed. Its device cannot be told from its name (the tag needs that device's
    /// identifier, and a device killed at its first record is known to no one): it may be
    /// this very copy under the identity it had before a remount gave its directory other
    /// numbers, or another machine's, which a sync engine copied here.
    private func isLeftStaging(_ id: Identifier) -> Bool {
        let path = layout.root + "/" + id.hex
        guard let names = try? FileSystem.listDirectory(path),
              names.allSatisfy({ name in Identifier(hex: Substring(name)).map(tags.isJournal) ?? false }),
              let folder = try? FileSystem.lstatIfExists(path) else { return false }
        var newest = folder.modifiedNanoseconds
        for name in names {
            guard let st = try? FileSystem.lstatIfExists(path + "/" + name), st.isRegularFile else { return false }
            newest = max(newest, st.modifiedNanoseconds)
        }
        return newest < Nanoseconds.difference(SystemClock.nowNanoseconds(), Self.leftStagingAge)
    }
}

import NarniaSystem

/// Compaction: this device's journals rewritten as one snapshot of what they still hold
/// (docs/FORMAT.md, "Compaction").
extension Vault {
    /// Rewrites this device's journals when those not retired have grown past 8 MiB, and since
    /// the last snapshot by more than twice an estimate of the live metadata and by more than
    /// that snapshot, so replay at open stays proportional to the vault, not to its history,
    /// and no more than half of what is written is snapshots. Housekeeping: the change is
    /// committed already, and a failed compaction (a full disk) leaves the journals as they
    /// were.
    ///
    /// A snapshot holds more than the live items: the places of the files ever removed and the
    /// folders ever made ("Compaction" in docs/FORMAT.md). Weighed against the live items
    /// alone, a snapshot near 8 MiB was written again after every few hundred kilobytes of
    /// changes (review DL-1, with the retired journals a device away had not read counted).
    func compactIfWorthIt() {
        let size = liveOwnJournalBytes
        let growth = size - bytesAtLastCompaction
        let estimate = Int64(view.items.count) * 160 + 4096
        guard !isCompacting, size > 8 << 20, growth > max(2 * estimate, bytesAtLastCompaction) else { return }
        do {
            try compact()
        } catch {
            // Said once, and tried again only once the journals have grown as much again (review
            // DR-3: on a nearly full disk every change wrote megabytes of snapshot in vain,
            // without a word).
            bytesAtLastCompaction = size
            guard !compactionFailureSaid else { return }
            compactionFailureSaid = true
            let why = (error as? SystemError)?.isDiskFull == true ? "the disk holding the vault is full" : "\(error)"
            warningsSinceOpen.append("this device's journals could not be compacted (\(why)); nothing is lost, they grow on, and a later change tries again")
        }
    }

    /// Starts a new journal for this device holding, as a snapshot, every value its journals
    /// hold that still counts (each under its original stamp), and retires the old journals:
    /// they are deleted once every device has read the snapshot, saying what it read of each
    /// of their files (`journal read`). Merging the snapshot with anything gives what merging
    /// the old journals did.
    func compact() throws {
        let oldFiles = journals.values.filter { $0.device == device }
        let old = oldFiles.map(\.id)
        let reads = try oldFiles.flatMap { try journalReads(of: $0) }
        let records = try state.ownSnapshot(chunkBytes: 16 << 20) {
            self.inventory.files[$0]?.main != nil || !self.mayDeleteRetired(RetiredFile(kind: .object, id: $0))
        }
        isCompacting = true
        defer { isCompacting = false }
        let appendingTo = journal
        journal = nil
        for (index, ops) in records.enumerated() {
            var ops = ops
            if index == records.count - 1 {
                let known = knowledgeOfNextRecord
                ops += reads.map { .journalRead($0) } + old.sorted().map { .retire(RetiredFile(kind: .journal, id: $0), known) }
            }
            do {
                try commit(ops, view: .none, startsSnapshot: index == 0)
            } catch {
                // No snapshot begun (its new journal is abandoned): the device goes on in the
                // journal it appended to (review DR-3: a new journal for every attempt).
                if index == 0 && journal == nil { journal = appendingTo }
                throw error
            }
        }
        bytesAtLastCompaction = liveOwnJournalBytes
        // The snapshot read back should change nothing; should it, the session shows what the
        // next open will, never a tree of its own (review FA-2: FA-1's file, shown again by
        // the snapshot, was missing from this session's `ls` and `verify` only).
        rebuildView()
    }
}

extension MergeState {
    /// The values this device's journals hold that still count, as records of operations
    /// (each preceded by its original stamp), of about `chunkBytes` each: items it created,
    /// places and contents it gave that still win, its removals, settings, attachments,
    /// retirements, kept objects, notes and upgrades.
    ///
    /// A removed file's place is kept (as a `move`) in every snapshot, as a removed folder's
    /// creation is: a device not known yet — a copy of the store made before the removal —
    /// may still give the file new content, which is shown as a conflict copy where the file
    /// stood (docs/FORMAT.md, "Merging", rule 7; review DB-1: kept only while a known device
    /// had not read the removal, such content was shown nowhere and its object deleted).
    /// While its content's object lives (`objectLives`: here, or not yet due for deletion —
    /// not arrived yet), a removed file's values are all kept: its object is deleted only once
    /// every device has read the removal, and until then a move made meanwhile elsewhere may
    /// show it again (rule 3). Review FE-1: an object not arrived yet counted as deleted; the
    /// creation went, and once the old journals were deleted a move made meanwhile elsewhere
    /// showed nothing, on every device, with `verify` passing.
    /// Throws when the key table cannot take a copy of a head's key: the compaction then
    /// fails, and the journals stay as they were.
    func ownSnapshot(chunkBytes: Int, objectLives: (Identifier) -> Bool) throws -> [[Operation]] {
        var records: [[Operation]] = []
        var current: [Operation] = []
        var currentStamp: Stamp?
        var bytes = 0
        func add(_ op: Operation, _ stamp: Stamp, size: Int) {
            if bytes > chunkBytes { records.append(current); current = []; currentStamp = nil; bytes = 0 }
            if stamp != currentStamp { current.append(.stamp(stamp)); currentStamp = stamp }
            current.append(op)
            bytes += size + 32
        }
        // Removed files whose values are all kept.
        var keptWhole = Set<Identifier>()
        for (id, record) in items.sorted(by: { $0.key < $1.key }) {
            guard let place = record.place else { continue }
            if tombstones.contains(id), record.creation?.isFolder == false, let content = record.content, objectLives(content.objectID) {
                keptWhole.insert(id)
            }
            // A removed file's creation is gone once one compaction kept only its place: the
            // next keeps the place all the same.
            if tombstones.contains(id) && record.creation?.isFolder != true && !keptWhole.contains(id) {
                if record.placeIsOwn && record.placeIsInitial, let creation = record.creation, let content = record.content,
                   content.keySlot >= 0, removals[id]?.all.contains(where: { $0.sawAnotherPlace(than: record.placeStamp) }) == true {
                    // The place this device's own creation gave, which a removal did not see: that
                    // removal saw another creation of the item (one drop adopted on two devices).
                    // Kept as this creation, read back as a creation's place: as a `move` it was
                    // not the place the removal saw, and rule 3 showed the file again, without its
                    // object (review FA-1; FB-1: the test was that the other creation was in
                    // force, which it no longer is once the remover's snapshot dropped it).
                    var content = content
                    content.keySlot = try keys.copy(content.keySlot)
                    add(.createFile(id: id, place: place, created: creation.created, modified: record.contentModified, content: content),
                        record.placeStamp, size: 160 + place.name.utf8.count + content.mime.utf8.count)
                } else if record.placeIsOwn {
                    add(.move(id: id, place: place, from: nil), record.placeStamp, size: 64 + place.name.utf8.count)
                }
                continue
            }
            guard let creation = record.creation else { continue }
            // The stamp of this device's creation of the item: the one in force, or one that lost
            // to another device's creation of it (two adoptions of one drop) but gave the place
            // or the content — that stays a creation, which any change or move beats. (A value
            // it did not give loses to the one in force.)
            var ownCreation: Stamp?
            if record.creationIsOwn {
                ownCreation = creation.stamp
            } else if record.placeIsOwn && record.placeIsInitial {
                ownCreation = record.placeStamp
            } else if record.contentIsOwn && record.contentIsInitial {
                ownCreation = record.contentStamp
            }
            if let stamp = ownCreation {
                if creation.isFolder {
                    add(.createFolder(id: id, place: place, created: creation.created, modified: creation.modified), stamp,
                        size: 64 + place.name.utf8.count)
                } else if let content = record.content {
                    add(.createFile(id: id, place: place, created: creation.created, modified: record.contentModified, content: content),
                        stamp, size: 160 + place.name.utf8.count + content.mime.utf8.count)
                }
            }
            // This device's move in force — or another device's, beside this device's creation,
            // which goes under the place in force (its own is not kept): so that a device reading
            // the snapshot before that move sees the place under the stamp the move brings.
            // Review FJ-3: it saw the creation's; it removed the item there, and when the move
            // arrived rule 3 took it for one the removal had not seen, and showed the item again
            // everywhere.
            if !record.placeIsInitial && (record.placeIsOwn || ownCreation != nil) {
                add(.move(id: id, place: place, from: record.from), record.placeStamp, size: 64 + place.name.utf8.count)
            }
            // This device's change of content in force — or another device's, of a file this
            // device created, whose creation goes with that content (its own is not kept): so
            // that a device reading the snapshot before that change, and holding the old
            // journals' creation too, takes the change, under its stamp and version. Review FL:
            // it found two creations of one stamp, and showed either content, as their object
            // identifiers fell.
            if !record.contentIsInitial && (record.contentIsOwn || ownCreation != nil), let content = record.content {
                add(.setContent(id: id, modified: record.contentModified, content: content, lineage: record.contentLineage), record.contentStamp,
                    size: 120 + content.mime.utf8.count)
            }
        }
        // This device's versions of files changed at once on several devices, the content in
        // force or not, the file removed or not: the conflict copies are derived from them.
        for (id, versions) in contentVersions.sorted(by: { $0.key < $1.key }) {
            let record = items[id]
            for head in versions.heads.values.sorted(by: { $0.stamp < $1.stamp }) where head.isOwn && head.content.keySlot >= 0 {
                let written = record.map { $0.contentIsOwn && !$0.contentIsInitial && (!tombstones.contains(id) || keptWhole.contains(id))
                    && $0.content?.objectID == head.content.objectID && $0.contentStamp == head.stamp } ?? false
                if written { continue }
                // The record hands its content's key slot to the state, which wipes it when the
                // value does not win (a head that is not the content): a copy, never the
                // versions table's own slot.
                var content = head.content
                content.keySlot = try keys.copy(head.content.keySlot)
                add(.setContent(id: id, modified: head.modified, content: content, lineage: head.lineage), head.stamp,
                    size: 120 + head.content.mime.utf8.count)
            }
        }
        let anyStamp = currentStamp ?? Stamp(wall: 0, counter: 0, device: device)
        // What the dropped `set content`s replaced (a replaced version must stay replaced).
        for (id, versions) in ownReplaced.sorted(by: { $0.key < $1.key }) {
            add(.replaced(id: id, versions: versions.sorted()), anyStamp, size: 24 + 16 * versions.count)
        }
        for removal in ownRemovals { add(.remove(removal.items), removal.by, size: 44 * removal.items.count) }
        for (key, setting) in settings.sorted(by: { $0.key < $1.key }) where setting.isOwn {
            add(.setSetting(key: key, value: setting.value), setting.stamp, size: 16 + key.utf8.count)
        }
        for (item, list) in attachments.sorted(by: { $0.key < $1.key }) where !tombstones.contains(item) || keptWhole.contains(item) {
            for (purpose, attachment) in list.sorted(by: { $0.key < $1.key }) where attachment.isOwn {
                add(.setAttachment(item: item, object: attachment.object, purpose: purpose, bytes: attachment.bytes), attachment.stamp,
                    size: 48 + (attachment.bytes?.count ?? 0))
            }
        }
        if let me = devices[device], let name = me.name, me.nameStamp.device == device {
            add(.deviceName(name), me.nameStamp, size: 8 + name.utf8.count)
        }
        let last = currentStamp ?? anyStamp
        for (file, list) in ownRetired.sorted(by: { ($0.key.kind.rawValue, $0.key.id) < ($1.key.kind.rawValue, $1.key.id) }) {
            for knowledge in list { add(.retire(file, knowledge), last, size: 24 + 24 * knowledge.seen.count) }
        }
        for read in ownJournalReads.sorted() {
            add(.journalRead(read), last, size: 48)
        }
        if !ownKept.isEmpty { add(.keep(ownKept.sorted()), last, size: 16 * ownKept.count) }
        for (journal, tail) in ownNotedTails.sorted(by: { $0.key < $1.key }) {
            add(.tailNoted(journal: journal, offset: tail.offset, bytes: tail.bytes), last, size: 32)
        }
        for id in ownForgotten.sorted() { add(.forgetDevice(id), last, size: 16) }
        for upgrade in ownUpgrades.sorted(by: { $0.journal < $1.journal }) {
            add(.upgraded(formerJournal: upgrade.journal, formerKeyFile: upgrade.keyFile), last, size: 32)
        }
        if !current.isEmpty || records.isEmpty { records.append(current) }
        return records
    }
}

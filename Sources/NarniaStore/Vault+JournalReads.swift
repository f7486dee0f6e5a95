import Glibc
import NarniaCrypto
import NarniaSystem

/// Which copies of a retired journal hold records no retirement of it read (docs/FORMAT.md,
/// "Retirement and acknowledgement"). A compaction says what it read of each copy of the
/// journals it retires (`JournalRead`: the bytes of the copy's whole records). Record numbers
/// alone cannot say it: two copies of a store writing as one device (a fork) give one number
/// to different records, and a retirement that had read record 9 of one copy had not read
/// record 9 of the other.
extension Vault {
    /// The files of `file` read here — the journal and the copies sync engines made of it —
    /// with what each held when read (the journal's own file as this device last wrote it).
    func readCopies(of file: JournalFile) -> [(path: String, end: JournalEnd)] {
        var copies = file.copyEnds.map { (path: $0.key.text, end: $0.value) }
        if let end = file.end, let main = inventory.files[file.id]?.main { copies.append((main, end)) }
        return copies.sorted { $0.path < $1.path }
    }

    /// What this device reads of each file of `file` that holds a whole record: what a
    /// compaction that retires it says (`journal read`).
    func journalReads(of file: JournalFile) throws -> [JournalRead] {
        var reads = Set<JournalRead>()
        for copy in readCopies(of: file) where copy.end.offset > 0 {
            // A copy gone since it was read was deleted elsewhere, retired and read everywhere,
            // and a sync engine carried the deletion here meanwhile: no read of it is recorded
            // (review FM-6: the compaction failed, naming it).
            do {
                reads.insert(JournalRead(journal: file.id, length: copy.end.offset,
                                         digest: try digest(ofCopy: copy.path, length: copy.end.offset)))
            } catch let e as SystemError where e.code == ENOENT {
                continue
            }
        }
        return reads.sorted()
    }

    /// True for a retired journal that must stay: a file of it holds records that no
    /// retirement of it read (`holdsRecordsNoRetirementRead`), or was not read here as it is
    /// now (one that arrived or changed since it was read). A file named as a copy of it that
    /// does not open is no copy of it (every file of a journal begins with the same record),
    /// and goes with it.
    func holdsRecordsItsRetirementsDidNotRead(_ id: Identifier) -> Bool {
        guard let file = journals[id], state.retired[RetiredFile(kind: .journal, id: id)] != nil else { return false }
        let copies = readCopies(of: file)
        let read = Set(copies.map { StorePath($0.path) })
        if inventory.files[id]?.all.map(StorePath.init).contains(where: { !read.contains($0) && !unreadableCopies.contains($0) }) ?? false { return true }
        for copy in copies {
            guard let st = try? FileSystem.lstatIfExists(layout.root + "/" + copy.path) else { continue }
            if Int64(st.st_size) != copy.end.offset + copy.end.cutBytes { return true }
        }
        return holdsRecordsNoRetirementRead(file)
    }

    /// True when a file of the retired journal `file` holds records that no retirement of it
    /// read. Where retirements say what they read of each copy, a file of this device's own
    /// journal must match one of those reads exactly, or be an older copy (a prefix) of a file
    /// here that does; another device's may also be shorter than the longest read (an older
    /// copy of what was read: only the copy of the store that wrote a fork can tell the two
    /// versions apart, and it keeps its own). Retirements written before reads were said are
    /// taken by their record numbers.
    func holdsRecordsNoRetirementRead(_ file: JournalFile) -> Bool {
        guard let retirements = state.retired[RetiredFile(kind: .journal, id: file.id)] else { return false }
        guard let reads = state.journalReads[file.id], let longest = reads.map(\.length).max() else {
            return !retirements.contains { $0[file.device] >= file.lastSeq }
        }
        // A copy gone since it was read holds nothing: deleted elsewhere once retired and read
        // everywhere, its deletion carried here by a sync engine meanwhile (review FM-6: taken
        // for one holding records no retirement read, with an alarm of another copy writing as
        // this device).
        var copies: [(path: String, end: JournalEnd)] = []
        var matching: [(path: String, end: JournalEnd)] = []
        for copy in readCopies(of: file) where copy.end.offset > 0 {
            do {
                if reads.contains(where: { $0.length == copy.end.offset }),
                   reads.contains(JournalRead(journal: file.id, length: copy.end.offset, digest: try digest(ofCopy: copy.path, length: copy.end.offset))) {
                    matching.append(copy)
                } else if try FileSystem.lstatIfExists(layout.root + "/" + copy.path) == nil {
                    continue
                }
            } catch let e as SystemError where e.code == ENOENT {
                continue
            } catch {}
            copies.append(copy)
        }
        return copies.contains { copy in
            let length = copy.end.offset
            if matching.contains(where: { $0.path == copy.path }) { return false }
            if file.device != device { return length >= longest }
            // An older copy of one that matches (a sync engine's, say) holds nothing more.
            return !matching.contains { longer in
                longer.end.offset > length
                    && (try? Self.isPrefix(layout.root + "/" + copy.path, of: layout.root + "/" + longer.path, length: length)) == true
            }
        }
    }

    /// True when a copy of the retired journal `id` elsewhere (on a `sync` remote), of `size`
    /// bytes, may hold records no retirement of it read: it is longer than the longest read.
    /// It is then fetched and read here rather than deleted there. (A copy no longer than that
    /// is taken for an older copy of what was read: the device that wrote other records under
    /// those numbers, a fork, keeps its own copy and carries them.)
    func copyElsewhereMayHoldRecordsNoRetirementRead(_ id: Identifier, size: Int64) -> Bool {
        guard let longest = state.journalReads[id]?.map(\.length).max() else { return false }
        return size > longest
    }

    /// This device's retired journals, due for deletion, a file of which holds records no
    /// retirement of them read: another copy of this store, writing as this device, retired
    /// them without those records (a fork), or this copy did when it had lost them (a cut
    /// journal whose whole copy came back). Compacting carries the records and retires the
    /// journals again, with what this copy read.
    var ownJournalsWithRecordsNoRetirementRead: [Identifier] {
        journals.values.filter { file in
            file.device == device && state.mayDelete(RetiredFile(kind: .journal, id: file.id)) && holdsRecordsNoRetirementRead(file)
        }.map(\.id).sorted()
    }

    /// BLAKE2b-128 of the first `length` bytes of the store file at `path`, remembered while
    /// the file stays the same (same inode, size and modification time).
    func digest(ofCopy path: String, length: Int64) throws -> [UInt8] {
        let fd = try FileDescriptor.open(layout.root + "/" + path, .readOnly, options: .noFollow)
        let st = try fd.status()
        let key = "\(path) \(length)"
        let seen = CopyDigest.Seen(inode: UInt64(st.st_ino), size: Int64(st.st_size), modified: st.modifiedNanoseconds)
        if let known = copyDigests[key], known.seen == seen { return known.digest }
        guard Int64(st.st_size) >= length else { throw SystemError(code: EIO, operation: "read", path: path) }
        let hash = StreamingHash(length: JournalRead.digestLength)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var done: Int64 = 0
        while done < length {
            let n = Int(min(Int64(buffer.count), length - done))
            let got = try buffer.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: n, offset: done) }
            guard got == n else { throw SystemError(code: EIO, operation: "read", path: path) }
            buffer.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0.prefix(n))) }
            done += Int64(n)
        }
        let digest = hash.finish()
        copyDigests[key] = CopyDigest(seen: seen, digest: digest)
        return digest
    }
}

/// A remembered hash of a store file's prefix (`Vault.digest(ofCopy:length:)`).
struct CopyDigest {
    struct Seen: Equatable {
        var inode: UInt64
        var size: Int64
        var modified: Int64
    }
    var seen: Seen
    var digest: [UInt8]
}

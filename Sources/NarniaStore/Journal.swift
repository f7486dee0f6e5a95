import Glibc
import NarniaCrypto
import NarniaSystem

/// Errors about the metadata as a whole.
public enum MetadataError: Error, CustomStringConvertible {
    /// A journal record failed authentication or did not parse, and is not a tail cut short:
    /// the store was modified. The vault refuses to open.
    case damaged(String)
    /// A journal whose first record opens under none of the master keys this session holds:
    /// sealed under a key from a rotation (`passwd --rotate`) whose key file this passphrase
    /// did not open, or altered.
    case unknownMasterKey([Identifier])
    /// As `unknownMasterKey`, where this passphrase opened a key file of the current rotation
    /// and another key file, which it does not open, holds the rest: rotations on two devices
    /// at once with different passphrases, and no terminal to ask for the other one.
    case needsAnotherPassphrase([Identifier])
    /// A key file and no whole journal: a store still arriving through a sync engine, a first
    /// `sync` to it cut short, or one whose journals were removed. The vault refuses to open.
    case incomplete(String)

    /// True when the passphrase given is the wrong one for this vault as it now is.
    public var isAboutThePassphrase: Bool {
        switch self {
        case .damaged, .incomplete: false
        case .unknownMasterKey, .needsAnotherPassphrase: true
        }
    }

    public var description: String {
        switch self {
        case .damaged(let why): return "the vault's metadata is damaged (\(why))"
        case .incomplete(let what): return "the vault's store is incomplete: it holds a key file but \(what)"
        case .unknownMasterKey(let journals):
            return "this passphrase does not open the vault's current master key: the master key was changed with 'passwd --rotate' (on another device, or since this key file was written), so open the vault with the passphrase chosen then; or the store was altered (\(Self.named(journals)) cannot be read)"
        case .needsAnotherPassphrase(let journals):
            return "the master key was rotated on two devices at once, with different passphrases, or rotated again since this passphrase was chosen: this one opens one rotation's key file, and another passphrase the other's (\(Self.named(journals))); if it was rotated again, open the vault with the passphrase chosen then; else open it once on a terminal with 'narnia enter', which asks for the other passphrase, and run 'passwd' there to set one that opens everything"
        }
    }

    /// "journal 1a2b3c4d" or "journals 1a2b3c4d, 5e6f7a8b".
    private static func named(_ journals: [Identifier]) -> String {
        "journal\(journals.count == 1 ? "" : "s") " + journals.map { String($0.hex.prefix(8)) }.sorted().joined(separator: ", ")
    }
}

/// The framing of journal records (docs/FORMAT.md, "Journals"):
/// ```
/// nonce[24] | XChaCha20-Poly1305_headerKey(length u32) tag[16] | XChaCha20-Poly1305_bodyKey(payload) tag[16]
/// AD (header) = journal id | record index u64 | "h";  AD (body) = journal id | record index u64 | "b"
/// ```
/// Binding the journal's identifier and the record's index into both tags means records
/// cannot be reordered, dropped from the middle, duplicated, or moved between journals.
struct JournalKeys {
    let body: Secret
    let header: Secret

    static let headerLength = AEAD.nonceLength + 4 + AEAD.tagLength
    static let maximumPayload = 64 << 20

    init(masterKey: Secret) throws {
        body = try masterKey.deriveSubkey(.journalBody)
        header = try masterKey.deriveSubkey(.journalHeader)
    }

    private static func ad(journal: Identifier, index: UInt64, part: Character) -> [UInt8] {
        var w = ByteWriter(capacity: 25)
        w.raw(journal.bytes)
        w.u64(index)
        w.u8(part.asciiValue!)
        return w.bytes
    }

    /// The payload length sealed in a record header, or nil when it does not authenticate.
    func openHeader(_ header: [UInt8], journal: Identifier, index: UInt64) -> Int? {
        var lengthField = Array(header[AEAD.nonceLength...])
        let nonce = Array(header[0..<AEAD.nonceLength])
        do {
            let n = try lengthField.withUnsafeMutableBytes { b in
                try Self.ad(journal: journal, index: index, part: "h").withUnsafeBytes { a in
                    try nonce.withUnsafeBytes { nb in
                        try self.header.withUnsafeBytes { k in
                            try AEAD.openInPlace(b.baseAddress!, ciphertextLength: b.count, additionalData: a, nonce: nb.baseAddress!, key: k)
                        }
                    }
                }
            }
            guard n == 4 else { return nil }
            let length = Int(lengthField[0]) | Int(lengthField[1]) << 8 | Int(lengthField[2]) << 16 | Int(lengthField[3]) << 24
            return length <= Self.maximumPayload ? length : nil
        } catch {
            return nil
        }
    }

    /// Decrypts a record body in place; returns the payload length.
    func openBody(_ body: inout [UInt8], nonce: ArraySlice<UInt8>, journal: Identifier, index: UInt64) throws -> Int {
        try body.withUnsafeMutableBytes { b in
            try Self.ad(journal: journal, index: index, part: "b").withUnsafeBytes { a in
                try Array(nonce).withUnsafeBytes { n in
                    try self.body.withUnsafeBytes { k in
                        try AEAD.openInPlace(b.baseAddress!, ciphertextLength: b.count, additionalData: a, nonce: n.baseAddress!, key: k)
                    }
                }
            }
        }
    }

    /// One sealed record holding `payload`, as record `index` of `journal`. Its first byte (the
    /// nonce's) is never zero: `JournalWriter.append` writes it last, so a record whose first
    /// byte reads as zero was never finished (see `JournalReader.isUnfinishedAppend`).
    func seal(_ payload: [UInt8], journal: Identifier, index: UInt64) -> [UInt8] {
        precondition(payload.count <= Self.maximumPayload, "journal record too large")
        var nonce = randomBytes(AEAD.nonceLength)
        while nonce[0] == 0 { nonce[0] = randomBytes(1)[0] }
        var record = [UInt8](repeating: 0, count: Self.headerLength + payload.count + AEAD.tagLength)
        record.withUnsafeMutableBytes { r in
            let base = r.baseAddress!
            nonce.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: AEAD.nonceLength) }
            let lengthField = base + AEAD.nonceLength
            withUnsafeBytes(of: UInt32(payload.count).littleEndian) { lengthField.copyMemory(from: $0.baseAddress!, byteCount: 4) }
            let body = base + Self.headerLength
            payload.withUnsafeBytes { if $0.count > 0 { body.copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
            nonce.withUnsafeBytes { n in
                Self.ad(journal: journal, index: index, part: "h").withUnsafeBytes { a in
                    header.withUnsafeBytes { k in
                        _ = AEAD.sealInPlace(lengthField, plaintextLength: 4, additionalData: a, nonce: n.baseAddress!, key: k)
                    }
                }
                Self.ad(journal: journal, index: index, part: "b").withUnsafeBytes { a in
                    self.body.withUnsafeBytes { k in
                        _ = AEAD.sealInPlace(body, plaintextLength: payload.count, additionalData: a, nonce: n.baseAddress!, key: k)
                    }
                }
            }
        }
        return record
    }
}

/// What reading a journal file found at its end.
struct JournalEnd: Equatable {
    /// The records read whole.
    var records: UInt64
    /// Where the last whole record ends.
    var offset: Int64
    /// Where the last whole record begins (0 when there is none).
    var lastRecordStart: Int64 = 0
    /// The first byte of the last whole record, when the file holds it as zero and it was
    /// found again (`JournalReader.firstByteOfFinishedRecord`); nil otherwise.
    var lastRecordFoundFirstByte: UInt8?
    /// Bytes after it that do not form a whole record: a write cut short by a crash, a copy
    /// still arriving, or a cut. Never removed by a reader.
    var cutBytes: Int64
    /// True when those bytes are the journal's writer's last `append`, stopped before it
    /// finished (a kill or crash): a zero byte where the next record begins (the byte an
    /// append writes second), then no more than one record sealed as that record; or that
    /// record whole but for its last byte (written last). Such a record was never durable,
    /// so never reported done.
    var unfinished = false
}

/// Reads one journal file: every whole record, in order. A journal is only ever read here;
/// nothing is truncated or repaired.
enum JournalReader {
    /// Opens a store file for reading, refusing anything but a regular file of this user:
    /// a symbolic link (`O_NOFOLLOW`), a FIFO or device (opened without waiting, then checked).
    /// Its access time stays as it was (`O_NOATIME`): reading the key file must not tell when
    /// the store was opened, or tried at the door.
    static func openStoreFile(_ path: String) throws -> FileDescriptor {
        let fd = try FileDescriptor.open(path, .readOnly, options: [.noFollow, .nonBlocking, .noAccessTime])
        let st = try fd.status()
        guard st.isRegularFile else { throw StoreFileError.notRegular(path) }
        guard st.st_uid == geteuid() else { throw StoreFileError.foreignOwner(path) }
        try fd.setBlocking()
        return fd
    }

    /// Reads the records of the journal `id` from `fd` and hands each payload (with its index,
    /// and the offset where the record ends) to `apply`; the payload is wiped afterwards. The
    /// journal is read with the first of `keyChain` that opens its first record. Returns where
    /// the whole records end, and the index in `keyChain` of the keys that read them (nil when
    /// there was no whole record).
    /// - Throws: `MetadataError.unknownMasterKey` when no keys open the first record,
    ///   `.damaged` for a later record that fails authentication or does not parse, other
    ///   than a cut at the very end.
    static func read(_ fd: FileDescriptor, id: Identifier, keyChain: [JournalKeys], name: String,
                     apply: (UInt64, [UInt8], Int64) throws -> Void) throws -> (end: JournalEnd, keys: Int?) {
        var header = [UInt8](repeating: 0, count: JournalKeys.headerLength)
        var chosen: Int?
        if try fd.size() >= Int64(JournalKeys.headerLength) {
            _ = try header.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: JournalKeys.headerLength, offset: 0) }
            // A first byte a copier read as zero (`firstByteOfFinishedRecord`) is looked for
            // under each key too (review BE-3).
            chosen = keyChain.firstIndex { $0.openHeader(header, journal: id, index: 0) != nil }
                ?? keyChain.firstIndex { withFirstByteFound(header, keys: $0, journal: id, index: 0) != nil }
        }
        do {
            let end = try read(fd, id: id, keys: keyChain[chosen ?? 0], name: name, apply: apply)
            return (end, end.records > 0 ? chosen ?? 0 : nil)
        } catch MetadataError.damaged where chosen == nil {
            throw MetadataError.unknownMasterKey([id])
        }
    }

    /// Reads the journal `id` with one set of keys (see above).
    static func read(_ fd: FileDescriptor, id: Identifier, keys: JournalKeys, name: String,
                     apply: (UInt64, [UInt8], Int64) throws -> Void) throws -> JournalEnd {
        let size = try fd.size()
        var offset: Int64 = 0
        var index: UInt64 = 0
        var lastRecordStart: Int64 = 0
        var lastRecordFoundFirstByte: UInt8?
        var header = [UInt8](repeating: 0, count: JournalKeys.headerLength)
        func end(unfinished: Bool = false) -> JournalEnd {
            JournalEnd(records: index, offset: offset, lastRecordStart: lastRecordStart, lastRecordFoundFirstByte: lastRecordFoundFirstByte,
                       cutBytes: size - offset, unfinished: unfinished)
        }
        while offset < size {
            let remaining = size - offset
            if remaining < Int64(JournalKeys.headerLength) {
                var first: UInt8 = 0xff
                _ = try withUnsafeMutableBytes(of: &first) { try fd.preadFully(into: $0.baseAddress!, count: 1, offset: offset) }
                return end(unfinished: first == 0)
            }
            _ = try header.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: JournalKeys.headerLength, offset: offset) }
            let zeroFirstByte = header[0] == 0
            guard let length = try keys.openHeader(header, journal: id, index: index)
                    ?? firstByteOfFinishedRecord(&header, fd, at: offset, size: size, keys: keys, journal: id, index: index) else {
                if isUnfinishedAppend(header, remaining: remaining, keys: keys, journal: id, index: index) {
                    return end(unfinished: true)
                }
                // At the end, a header that does not authenticate is a torn write only when
                // nothing could follow it: too few bytes for any record, or all zeros.
                if remaining < Int64(JournalKeys.headerLength + AEAD.tagLength) { return end() }
                var rest = [UInt8](repeating: 0, count: Int(remaining))
                _ = try rest.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: Int(remaining), offset: offset) }
                if rest.allSatisfy({ $0 == 0 }) { return end() }
                throw MetadataError.damaged("\(name), record \(index) does not authenticate")
            }
            let bodyLength = Int64(length) + Int64(AEAD.tagLength)
            let recordLength = Int64(JournalKeys.headerLength) + bodyLength
            // One byte short: an append stopped before its last write (see `JournalWriter.append`).
            if remaining < recordLength { return end(unfinished: remaining == recordLength - 1) }
            var body = [UInt8](repeating: 0, count: Int(bodyLength))
            _ = try body.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: Int(bodyLength), offset: offset + Int64(JournalKeys.headerLength)) }
            let payloadLength: Int
            do {
                payloadLength = try keys.openBody(&body, nonce: header[0..<AEAD.nonceLength], journal: id, index: index)
            } catch {
                throw MetadataError.damaged("\(name), record \(index) does not authenticate")
            }
            body.removeLast(body.count - payloadLength)
            defer { body.withUnsafeMutableBytes { wipe($0) } }
            do {
                try apply(index, body, offset + Int64(JournalKeys.headerLength) + bodyLength)
            } catch let e as MalformedRecord {
                throw MetadataError.damaged("\(name), record \(index) \(e.why)")
            }
            lastRecordStart = offset
            lastRecordFoundFirstByte = zeroFirstByte && header[0] != 0 ? header[0] : nil   // not a record from before review AY whose first byte is zero
            offset += Int64(JournalKeys.headerLength) + bodyLength
            index += 1
        }
        return end()
    }

    /// The length of record `index` at `offset` when `header` is that of a record a copier
    /// read before its first byte was written (zero there), and the record was finished in
    /// the file it copied: with the first byte found again (the one of 255 under which the
    /// header authenticates, put into `header`, whose nonce then opens the body as ever),
    /// and the next record's header after it authenticating as the one after (the writer
    /// begins a record only after the last one is durable; a record whose append failed is
    /// cut off before the next). A copier that reads until the end of the file while the
    /// device appends twice leaves such a record (review BD-2); the last record of a file
    /// is judged as before (`isUnfinishedAppend`).
    private static func firstByteOfFinishedRecord(_ header: inout [UInt8], _ fd: FileDescriptor, at offset: Int64, size: Int64,
                                                  keys: JournalKeys, journal: Identifier, index: UInt64) throws -> Int? {
        guard header[0] == 0, let (first, length) = withFirstByteFound(header, keys: keys, journal: journal, index: index) else { return nil }
        let next = offset + Int64(JournalKeys.headerLength) + Int64(length) + Int64(AEAD.tagLength)
        guard size - next >= Int64(JournalKeys.headerLength) else { return nil }
        var following = [UInt8](repeating: 0, count: JournalKeys.headerLength)
        _ = try following.withUnsafeMutableBytes { try fd.preadFully(into: $0.baseAddress!, count: JournalKeys.headerLength, offset: next) }
        guard keys.openHeader(following, journal: journal, index: index + 1) != nil
                || withFirstByteFound(following, keys: keys, journal: journal, index: index + 1) != nil else { return nil }
        header[0] = first
        return length
    }

    /// The first byte under which `header`, its first byte zero, authenticates as record
    /// `index`, and the length it then gives; nil when none does.
    private static func withFirstByteFound(_ header: [UInt8], keys: JournalKeys, journal: Identifier, index: UInt64) -> (UInt8, Int)? {
        guard header[0] == 0 else { return nil }
        var candidate = header
        for first in UInt8(1)...UInt8.max {
            candidate[0] = first
            if let length = keys.openHeader(candidate, journal: journal, index: index) { return (first, length) }
        }
        return nil
    }

    /// True when `header`, at the end of a journal with `remaining` bytes from it to the end,
    /// begins the writer's last append, stopped before it finished: its first byte is zero
    /// (an append writes it after all but the last byte, and a sealed record's is never
    /// zero), the rest of the header authenticates as record `index` with some other first
    /// byte, and no more than that one record follows. A journal cut inside a whole record
    /// (but for its very last byte), a copy still arriving (sequential copies bring the first
    /// byte with the header) and zeros written over more than one record (damage) are not.
    private static func isUnfinishedAppend(_ header: [UInt8], remaining: Int64, keys: JournalKeys,
                                           journal: Identifier, index: UInt64) -> Bool {
        guard let (_, length) = withFirstByteFound(header, keys: keys, journal: journal, index: index) else { return false }
        return remaining <= Int64(JournalKeys.headerLength) + Int64(length) + Int64(AEAD.tagLength)
    }
}

/// Why a store file was not read.
public enum StoreFileError: Error, CustomStringConvertible {
    /// A symbolic link, FIFO, device or folder where a store file should be.
    case notRegular(String)
    /// A file another user owns.
    case foreignOwner(String)

    public var description: String {
        switch self {
        case .notRegular(let path): return "\(path) is not a regular file; the store was altered"
        case .foreignOwner(let path): return "\(path) belongs to another user; the store was altered"
        }
    }
}

/// This device's journal, open for appending. Nothing but this device ever writes it.
final class JournalWriter {
    let id: Identifier
    let path: String
    private let fd: FileDescriptor
    private let keys: JournalKeys
    private(set) var recordCount: UInt64
    private(set) var endOffset: Int64
    /// Where its last record begins (0 before the first).
    private(set) var lastRecordStart: Int64
    /// True when an append failed and so did cutting the file back: its bytes after
    /// `endOffset` are cut before the next append, which fails if that fails again. (Left
    /// there, a shorter next record left the failed one's end after it: damage; review AZ-6.)
    private var failedAppendLeftBytes = false
    /// Where a new journal waits for its first record, which gives it its name.
    private enum Naming {
        /// Under its name already.
        case named
        /// Written unnamed (`O_TMPFILE`), to be linked into this folder.
        case unnamed(in: FileDescriptor)
        /// Written at `file` in this device's own staging folder `folder`, to be renamed into
        /// place (where there are no unnamed files; the folder goes at the next open).
        case staged(file: String, folder: String)
    }
    private var naming: Naming

    private init(id: Identifier, path: String, fd: FileDescriptor, keys: JournalKeys, records: UInt64, end: Int64,
                 lastRecordStart: Int64 = 0, naming: Naming = .named) {
        self.id = id
        self.path = path
        self.fd = fd
        self.keys = keys
        recordCount = records
        endOffset = end
        self.lastRecordStart = lastRecordStart
        self.naming = naming
    }

    /// Creates a new journal at `path` in `directory` (the name must be free; never through a
    /// link). It appears under its name only with its first record (`append`): a crash before
    /// that leaves no empty journal behind, which every device would report for good (no
    /// device can tell whose an empty journal is). It is written unnamed (`O_TMPFILE`), or
    /// where the file system makes no unnamed files (FAT, FUSE) in a folder `staging` makes,
    /// one this device removes at its next open (any device, once left for a day).
    static func create(id: Identifier, path: String, directory: String, keys: JournalKeys,
                       staging: () throws -> String) throws -> JournalWriter {
        let folder = try FileDescriptor.open(directory, .readOnly, options: .directory)
        do {
            let fd = try folder.open(".", .readWrite, options: .unnamedTemporary, permissions: 0o600)
            return JournalWriter(id: id, path: path, fd: fd, keys: keys, records: 0, end: 0, naming: .unnamed(in: folder))
        } catch let e as SystemError where [EOPNOTSUPP, EISDIR, EINVAL].contains(e.code) {
            let stage = try staging()
            let file = stage + "/" + id.hex
            let fd = try FileDescriptor.open(file, .readWrite, options: [.create, .exclusive])
            return JournalWriter(id: id, path: path, fd: fd, keys: keys, records: 0, end: 0, naming: .staged(file: file, folder: stage))
        }
    }

    /// Removes what a journal whose first record could not be written left (it holds nothing).
    func abandon() {
        switch naming {
        case .named: try? FileSystem.unlink(path, missingOK: true)
        case .unnamed: break
        case .staged(_, let folder): FileSystem.removeTreeOfFiles(folder)
        }
    }

    /// Opens this device's existing journal to append after its `end` (read whole and
    /// intact: no bytes after its last record).
    static func reopen(id: Identifier, path: String, keys: JournalKeys, end: JournalEnd) throws -> JournalWriter {
        let fd = try FileDescriptor.open(path, .readWrite, options: [.noFollow, .nonBlocking])
        let st = try fd.status()
        guard st.isRegularFile, Int64(st.st_size) == end.offset else { throw StoreFileError.notRegular(path) }
        try fd.setBlocking()
        return JournalWriter(id: id, path: path, fd: fd, keys: keys, records: end.records, end: end.offset,
                             lastRecordStart: end.lastRecordStart)
    }

    /// Appends one record holding `payload` and makes it durable (`fdatasync`). On failure
    /// (a full disk, say) the file is cut back to its previous length: those bytes are this
    /// device's own and were never committed. A new journal whose name was given but not made
    /// durable is named for `abandon`, which takes the name back: cut to nothing under it, it
    /// was reported by every device at every open, for good (review AD).
    ///
    /// The record is written in three writes: all but its first and last bytes, then its
    /// first byte (never zero), then its last. A kill stops a large write between pages
    /// (review AW): a record stopped in or after the first write begins with a zero byte,
    /// and one stopped before the last write is one byte short of its length; either tells
    /// the next open that it was never finished (`JournalEnd.unfinished`), where a journal
    /// cut after its records were whole does not (review AY). The file reaches its new size
    /// only with the last byte, and its modification time is then set from the fine-grained
    /// clock: a backup or sync engine that copied it meanwhile (and took its size and time
    /// before the last write) sees both change once more, and copies it again. One that
    /// compares size and time kept a copy taken between two writes of one size and, on a
    /// kernel with coarse timestamps, one time (review AZ-1); one that reads until the end of
    /// the file can still end its copy after the last write, with the final size (review BA-1).
    func append(_ payload: [UInt8]) throws {
        if failedAppendLeftBytes {
            try fd.truncate(to: endOffset)
            failedAppendLeftBytes = false
        }
        var record = keys.seal(payload, journal: id, index: recordCount)
        defer { record.withUnsafeMutableBytes { wipe($0) } }
        do {
            try record.withUnsafeBytes { r in
                let last = r.count - 1
                try fd.pwriteAll(r.baseAddress! + 1, count: last - 1, offset: endOffset + 1)
                try fd.pwriteAll(r.baseAddress!, count: 1, offset: endOffset)
                try fd.pwriteAll(r.baseAddress! + last, count: 1, offset: endOffset + Int64(last))
            }
            fd.stampModificationTimeFinely()
            try fd.dataSync()
            switch naming {
            case .named: break
            case .unnamed(let folder):
                try fd.link(as: id.hex, in: folder, displayPath: path)
                naming = .named
                try folder.sync()
            case .staged(let file, let folder):
                try FileSystem.rename(file, path)
                naming = .named
                try FileSystem.syncDirectory(FileSystem.parentDirectory(of: path))
                // The old entry's removal too: on FAT a power cut could leave both entries
                // pointing at the journal's clusters.
                try? FileSystem.syncDirectory(folder)
                try? FileSystem.removeDirectory(folder)
            }
        } catch {
            if (try? fd.truncate(to: endOffset)) == nil {
                failedAppendLeftBytes = true
                // Left whole (its `fdatasync` failed), the record would be read at the next
                // open, its change done though reported failed: with its first byte zero it
                // is an unfinished append, cut off there.
                var zero: UInt8 = 0
                try? fd.pwriteAll(&zero, count: 1, offset: endOffset)
            }
            throw error
        }
        lastRecordStart = endOffset
        endOffset += Int64(record.count)
        recordCount += 1
        let copy: String?
        do { copy = try savedIfReplaced() } catch { throw ReplacedAndNotSaved(cause: error) }
        if let copy { throw Replaced(copy: copy) }
    }

    /// The journal's name no longer names the file appended to: another program replaced it
    /// (a sync engine carrying another copy of it, a restore) or removed it, and what was
    /// appended went to a file no one else sees. Everything it holds, the record just written
    /// too, was saved whole as a copy of the journal (`copy`, its path), which every open
    /// reads as one (review CF-6: the records were lost when the session ended, each change
    /// reported done). This writer must not be appended to again.
    struct Replaced: Error {
        let copy: String
    }

    /// As `Replaced`, but the copy could not be written: the record just written, and those
    /// the replacement lacks, are in no file the store holds.
    struct ReplacedAndNotSaved: Error {
        let cause: any Error
    }

    /// The path of the copy saved (`saveAsCopy`) when the journal's name no longer leads to
    /// this writer's file, as `append` finds after writing; nil while it does. Asked when no
    /// append comes to find it (between lines, at a session's end: review CJ-2).
    func savedIfReplaced() throws -> String? {
        guard case .named = naming, !isUnderItsName() else { return nil }
        return try saveAsCopy()
    }

    /// True when `path` still names the file this writer appends to (or when that cannot be
    /// told: a failed look is no evidence of a replacement).
    private func isUnderItsName() -> Bool {
        guard let mine = try? fd.status() else { return true }
        guard let there = try? FileSystem.lstatIfExists(path) else { return mine.st_nlink > 0 }
        return there.st_dev == mine.st_dev && there.st_ino == mine.st_ino
    }

    /// Writes everything this writer's file holds, whole and durable, beside the journal's
    /// name as a copy of it (a name with `conflict` after the identifier, as sync engines give
    /// their copies), and returns its path.
    private func saveAsCopy() throws -> String {
        let folder = try FileDescriptor.open(FileSystem.parentDirectory(of: path), .readOnly, options: .directory)
        let name = (path.lastPathComponent ?? id.hex) + ".conflict-replaced-" + Identifier.random().hex.prefix(12)
        try WholeFile.write(named: name, in: folder, path: folder.pathOfEntry(name)) { copy in
            let chunk = 1 << 20
            let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
            defer { buffer.deallocate() }
            var offset: Int64 = 0
            while offset < endOffset {
                let count = Int(min(Int64(chunk), endOffset - offset))
                guard try fd.preadFully(into: buffer, count: count, offset: offset) == count else {
                    throw StoreFileError.notRegular(path)
                }
                try copy.writeAll(buffer, count: count)
                offset += Int64(count)
            }
        }
        return folder.pathOfEntry(name)
    }
}

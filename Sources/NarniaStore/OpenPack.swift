import NarniaSystem
import Glibc

/// A pack an import batch is filling: one object file holding the sealed contents of several
/// small files, one segment after another (docs/FORMAT.md, "Packs").
///
/// A pack is written once: its batch stops adding to it when it commits (or when it is full, or
/// after a failed append), and nothing is ever appended to a committed pack. Its items record
/// their segment's offset and the pack's final length.
final class OpenPack {
    /// Files at most this large (as their source reports before reading) go into a pack: those
    /// that fit in one chunk.
    static let largestMember = UInt64(ContentFormat.chunkSize)
    /// Once a pack holds this many bytes the next small file begins another, so that the space
    /// of removed files comes back in steps of at most this size (a pack goes with its last item).
    static let capacity: Int64 = 16 << 20

    let objectID: Identifier
    /// Writes the pack, past the page cache where the file system allows (`AlignedFileWriter`):
    /// its segments reach the file in whole blocks as they fill, the rest at `finish`, when the
    /// batch commits.
    let file: AlignedFileWriter
    /// Where the next segment goes: the bytes appended so far.
    var length: Int64 = 0
    /// The staged items whose content is in this pack.
    var members: [Identifier] = []
    /// False once the pack is full or an append failed: it takes no more segments.
    var accepting = true

    /// Creates the (empty) object file of a new pack; its shard's entry is made durable by the
    /// batch's commit, with the pack.
    init(layout: StoreLayout, objectID: Identifier) throws {
        self.objectID = objectID
        try layout.ensureShard(for: objectID, durable: false)
        file = AlignedFileWriter(try FileDescriptor.open(layout.objectPath(for: objectID), .writeOnly,
                                                         options: [.create, .exclusive, .noFollow], permissions: 0o600))
    }
}

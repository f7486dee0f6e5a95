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
    let fd: FileDescriptor
    /// Where the next segment goes: the bytes written so far.
    var length: Int64 = 0
    /// The staged items whose content is in this pack.
    var members: [Identifier] = []
    /// False once the pack is full or an append failed: it takes no more segments.
    var accepting = true
    /// The bytes handed to the kernel's writeback so far (`noteWritten`).
    private var handedToWriteback: Int64 = 0

    /// Called after each segment: every 4 MiB the new bytes go to the kernel's writeback, so
    /// that the batch's sync does not find a whole pack still in memory (an import of small
    /// files otherwise stood still, both cores idle, while each group's packs were flushed).
    func noteWritten() {
        if length - handedToWriteback >= 4 << 20 {
            fd.startWriteback(offset: handedToWriteback, length: length - handedToWriteback)
            handedToWriteback = length
        }
    }

    /// Creates the (empty) object file of a new pack; its shard's entry is made durable by the
    /// batch's commit, with the pack.
    init(layout: StoreLayout, objectID: Identifier) throws {
        self.objectID = objectID
        try layout.ensureShard(for: objectID, durable: false)
        fd = try FileDescriptor.open(layout.objectPath(for: objectID), .writeOnly, options: [.create, .exclusive, .noFollow], permissions: 0o600)
    }
}

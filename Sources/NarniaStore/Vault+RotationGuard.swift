import NarniaCrypto
import NarniaSystem

/// After `passwd --rotate`, an old key file and its passphrase still open the records written
/// under the master key it replaced, and a device that has not heard of the rotation goes on
/// writing under that key: those records are read. But whoever holds an old key file (a leaked
/// passphrase, the very reason to rotate) and a copy of the store could write such records
/// too, as a new device, and every device took them (review CM-1: an item's content replaced,
/// a folder removed, the inbox key made theirs, `verify` passing). So a journal of another
/// device sealed under a replaced master key is read only when the rotation had read records
/// of that device: the first record written under the newest master key (the rotation's
/// snapshot, or the earliest kept since) says, in its knowledge, which devices those were
/// (docs/FORMAT.md, "Rotating the master key").
extension Vault {
    /// The journals of devices the newest rotation had read nothing of, sealed under a master
    /// key it replaced, by journal, with their device; none before any rotation, or when no
    /// record under the newest key is here yet.
    func journalsUnknownAtRotation(_ files: [(id: Identifier, entry: StoreInventory.Entry)]) -> [Identifier: Identifier] {
        guard journalKeyChain.count > 1 else { return [:] }
        var firsts: [(id: Identifier, keyIndex: Int, header: RecordHeader, owner: Identifier)] = []
        for (id, entry) in files {
            for path in entry.all {
                guard let fd = try? JournalReader.openStoreFile(layout.root + "/" + path),
                      case (let keyIndex, var payload)? = try? JournalReader.firstRecord(fd, id: id, keyChain: journalKeyChain) else { continue }
                defer { payload.withUnsafeMutableBytes { wipe($0) } }
                guard let (header, owner) = RecordCoding.headerAndOwner(ofFirstRecord: payload) else { continue }
                firsts.append((id, keyIndex, header, owner))
                break
            }
        }
        // The first record under each key: under the newest, the rotation's; under another,
        // that of the device that made the key, the first to write under it.
        var earliest: [Int: (header: RecordHeader, owner: Identifier)] = [:]
        for first in firsts {
            if let e = earliest[first.keyIndex], (e.header.wall, e.header.counter, e.owner) <= (first.header.wall, first.header.counter, first.owner) { continue }
            earliest[first.keyIndex] = (first.header, first.owner)
        }
        guard let known = earliest[0]?.header.knowledge else { return [:] }
        var unknown: [Identifier: Identifier] = [:]
        // A device that made the key its journal is under is no stranger to it: a rotation on
        // another device at the same moment, whose key this device's key file holds too.
        for first in firsts where first.keyIndex > 0 && first.owner != device && known[first.owner] == 0
            && earliest[first.keyIndex]?.owner != first.owner {
            unknown[first.id] = first.owner
        }
        return unknown
    }

    /// The warning for the journals set aside (`journalsUnknownAtRotation`), one per device.
    func warningsForJournalsUnknownAtRotation() -> [String] {
        Dictionary(grouping: journalsSetAsideAtRotation, by: \.value).keys.sorted().map { owner in
            "journals of device \(owner.hex.prefix(8)) are sealed under a master key that 'passwd --rotate' replaced, and no device had read anything of it at the rotation: they are not read, for anyone who holds an old key file and its passphrase could have written them. If it is a device of yours that had not synced before the rotation, open the vault there with the new passphrase: it then writes its records anew under the new key, and they are read; if not, someone who knows an old passphrase writes to the store"
        }
    }
}

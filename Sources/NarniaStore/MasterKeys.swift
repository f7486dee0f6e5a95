import NarniaCrypto

/// The master keys a key file holds (docs/FORMAT.md, "Key files" and "Rotating the master
/// key"): the current one, which seals every record this device writes, and those that
/// `passwd --rotate` replaced, kept so that records sealed under them stay readable. The
/// vault's first master key keys the names of store files and devices, so that a rotation
/// changes neither.
struct MasterKeys {
    /// Seals new records.
    private(set) var current: Secret
    /// The master keys `current` replaced, newest first; the vault's first is last.
    private(set) var former: [Secret]

    /// At most this many master keys: a key file stays under 4 KiB.
    static let maximumCount = 100

    /// `keys` as a key file lists them: the current first, the vault's first last.
    init(_ keys: [Secret]) {
        precondition(!keys.isEmpty)
        current = keys[0]
        former = Array(keys.dropFirst())
    }

    /// Every key, the current first and the vault's first last.
    var all: [Secret] { [current] + former }

    /// The vault's first master key, which keys store file names and device identifiers.
    var namesKey: Secret { former.last ?? current }

    /// True when `other` comes from the same vault (the same first key).
    func isSameVault(as other: MasterKeys) -> Bool { namesKey.isEqual(to: other.namesKey) }

    private func holds(_ key: Secret) -> Bool { all.contains { $0.isEqual(to: key) } }

    /// True when this set holds every key of `other` and the same current key.
    func holds(all other: MasterKeys) -> Bool {
        current.isEqual(to: other.current) && other.all.allSatisfy(holds)
    }

    /// `fresh` becomes the current key; the current one joins the former.
    /// - Throws: `VaultError.refused` past `maximumCount` keys.
    mutating func rotate(to fresh: Secret) throws {
        guard former.count + 2 <= Self.maximumCount else {
            throw VaultError.refused("this vault's master key was rotated \(Self.maximumCount - 1) times, the most a key file holds: for a new master key, make a new vault and move the items into it (export them, then import them there); plain 'passwd' still changes the passphrase")
        }
        former.insert(current, at: 0)
        current = fresh
    }

    /// Adds the keys of `other`, another key file of the same vault, that this set lacks. When
    /// `other` was written after a rotation of this set's current key, its current key becomes
    /// the current one; after a rotation made at the same time as this set's (each replaced a
    /// key the other holds too), this set's current key stays current. Returns true when any
    /// key was new.
    @discardableResult
    mutating func adopt(_ other: MasterKeys) -> Bool {
        guard isSameVault(as: other) else { return false }
        let newer = other.former.contains { $0.isEqual(to: current) } && !holds(other.current)
        let first = namesKey
        var added = false
        for key in other.all where !holds(key) && former.count + 2 <= Self.maximumCount {
            former.insert(key, at: 0)
            added = true
        }
        if newer, let index = former.firstIndex(where: { $0.isEqual(to: other.current) }) {
            former[index] = current
            current = other.current
        }
        // The vault's first key stays last (it can only have been current when this set
        // held one key, which the newer set replaced).
        if let index = former.firstIndex(where: { $0.isEqual(to: first) }), index != former.count - 1 {
            former.remove(at: index)
            former.append(first)
        }
        return added
    }
}

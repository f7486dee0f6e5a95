import NarniaCrypto

extension Vault {
    /// Tries `key` at the door: the vault at `directory` when the key opens it (and
    /// `mayOpen`), else nil — after the same key-derivation work in every case, so that a wrong
    /// key, no store, an empty key, a store in use or unreadable, a key file retired by a
    /// rotation or a damaged journal cannot be told apart by time: `doorDerivations`
    /// derivations, on the salts of the newest key files of that many salts (a store holds two
    /// for a while after `passwd` on one device of several, and the live one need not be the
    /// newer by its file time), the rest on random salts with the limits of the salts they stand
    /// in for, or without a store `parametersWithoutStore`. One derivation for each key file
    /// made a store of two answer later than none on a slow machine; a passphrase from before a
    /// rotation once cost one for every key file (review AN).
    public static func openBehindDoor(at directory: String, key: Secret?, mayOpen: Bool,
                                      parametersWithoutStore: KDFParameters) -> Vault? {
        let budget = DerivationBudget(count: doorDerivations, fallback: parametersWithoutStore)
        budget.plan(storeAt: directory)
        if let key, mayOpen, let vault = try? Vault.open(at: directory, passphrase: key, budget: budget) {
            return vault
        }
        if let decoy = key ?? (try? Secret.random(count: 16)) { budget.padToCount(key: decoy) }
        return nil
    }

    /// The key derivations every try at the door costs.
    static let doorDerivations = 2
}

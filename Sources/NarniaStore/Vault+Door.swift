import NarniaCrypto

extension Vault {
    /// Tries `key` at the door: the vault at `directory` when the key opens it (and
    /// `mayOpen`), else nil — after the same key-derivation work in every case, so that a wrong
    /// key, no store, an empty key, a store in use or unreadable cannot be told apart by time:
    /// `doorDerivations` derivations, on the salts of the newest key files of that many salts
    /// (a store holds two for a while after `passwd` on one device of several, and the live one
    /// need not be the newer by its file time), else on random salts with the store's limits,
    /// or without a store `parametersWithoutStore`. One derivation for each key file made a
    /// store of two answer later than none on a slow machine.
    public static func openBehindDoor(at directory: String, key: Secret?, mayOpen: Bool,
                                      parametersWithoutStore: KDFParameters) -> Vault? {
        var derived = false
        if let key, mayOpen {
            do {
                return try Vault.open(at: directory, passphrase: key, exactDerivations: doorDerivations)
            } catch VaultError.wrongPassphrase {
                derived = true
            } catch MetadataError.unknownMasterKey {
                derived = true   // a passphrase from before a rotation: the usual answer
            } catch {}
        }
        if !derived, let decoy = key ?? (try? Secret.random(count: 16)) {
            for _ in 0..<doorDerivations {
                _ = try? PassphraseKey.derive(passphrase: decoy, salt: randomBytes(PassphraseKey.saltLength), parameters: parametersWithoutStore)
            }
        }
        return nil
    }

    /// The key derivations every try at the door costs.
    static let doorDerivations = 2
}

import NarniaCrypto

extension Vault {
    /// Tries `key` at the door: the vault at `directory` when the key opens it (and
    /// `mayOpen`), else nil — after the same key-derivation work in every case, so that a wrong
    /// key, no store, an empty key, a store in use or unreadable cannot be told apart by time.
    /// Without a store (or a key), the derivation runs on a random salt with
    /// `parametersWithoutStore`; with one, on the newest key file alone: a store holding
    /// several (after `passwd` on one device of several) took one derivation for each, which
    /// a slow machine showed past the door's least delay.
    public static func openBehindDoor(at directory: String, key: Secret?, mayOpen: Bool,
                                      parametersWithoutStore: KDFParameters) -> Vault? {
        var derived = false
        if let key, mayOpen {
            do {
                return try Vault.open(at: directory, passphrase: key, newestKeyFileOnly: true)
            } catch VaultError.wrongPassphrase {
                derived = true
            } catch MetadataError.unknownMasterKey {
                derived = true   // a passphrase from before a rotation: the usual answer
            } catch {}
        }
        if !derived, let decoy = key ?? (try? Secret.random(count: 16)) {
            _ = try? PassphraseKey.derive(passphrase: decoy, salt: randomBytes(PassphraseKey.saltLength), parameters: parametersWithoutStore)
        }
        return nil
    }
}

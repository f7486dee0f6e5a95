import NarniaCrypto

/// The passphrase questions asked on a terminal, by the launcher (`init`, opening the vault)
/// and by `passwd`: each answer is read without echo into secure memory.
public struct PassphraseQuestions {
    /// How many times a new passphrase is asked for when its repetition differs, and how many
    /// tries a wrong passphrase gets when opening the vault (as sudo gives).
    public static let tries = 3

    /// Asks one question without echo.
    /// - Throws: `PassphraseError` (`.interrupted` for Ctrl-C).
    public let ask: (String) throws -> Secret
    /// Says something to the person at the terminal (a weak passphrase, a mismatch).
    public let warn: (String) -> Void

    public init(ask: @escaping (String) throws -> Secret, warn: @escaping (String) -> Void) {
        self.ask = ask
        self.warn = warn
    }

    /// A new passphrase, asked twice; when the repetition differs, both are asked again, up
    /// to `tries` times.
    /// - Throws: `PassphraseError.mismatch` after the last try, or what `ask` throws.
    public func newPassphrase() throws -> Secret {
        for attempt in 1...Self.tries {
            let first = try ask("New passphrase: ")
            if first.count < 12 { warn("a passphrase under 12 characters is weak; a few random words are better") }
            let second = try ask("Repeat it: ")
            if first.isEqual(to: second) { return first }
            if attempt < Self.tries { warn("the two passphrases differ; try again") }
        }
        throw PassphraseError.mismatch
    }
}

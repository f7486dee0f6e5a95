import NarniaCrypto
import NarniaLanguage
import NarniaStore
import NarniaSystem

/// The lines that show an inbox key, alike in the vault (`inbox-key`) and outside it
/// (`drop --show-key`), so that the two can be compared.
enum InboxKeyLines {
    static func print(_ key: InboxKey, on out: Output) {
        out.line("fingerprint  \(key.fingerprint)")
        out.line("age          \(AgeRecipient.string(forX25519PublicKey: key.publicKey))")
        out.line("public key   \(key.hex)")
        out.line("made         \(Formatting.dateTime(key.created))")
    }
}

/// The inbox in the vault shell: `inbox-key`, and adopting drops when a session starts.
enum Inbox {
    /// `inbox-key [--rotate]`.
    static func inboxKey(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.isEmpty else { throw CommandTable.tooManyArguments(for: "inbox-key") }
        let key = a.has("--rotate") ? try s.vault.rotateInboxKey() : try s.vault.inboxKey()
        InboxKeyLines.print(key, on: s.out)
    }
}

extension Session {
    /// Adopts the drops found in the store (at the start of every session, and after `sync`)
    /// and returns the paths of the items they became. Damaged drops are warnings; with
    /// `announcing`, an interactive session says once how many files arrived (scripts get
    /// nothing on standard output).
    @discardableResult
    public func adoptDrops(announcing: Bool = true) -> [String] {
        do {
            let adoption = try vault.adoptDrops(classifyLater: classifyLater)
            for problem in adoption.problems { warning("inbox", problem) }
            let count = adoption.items.count
            if announcing && interactive && count > 0 {
                out.line("\(count) new file\(count == 1 ? "" : "s") in \(out.name(adoption.folder))")
                out.flush()
            }
            return adoption.items.map { vaultPath(of: $0.id).description }
        } catch {
            warning("inbox", "could not adopt the dropped files: \(describe(error)); they stay in the store for the next unlock")
            return []
        }
    }
}

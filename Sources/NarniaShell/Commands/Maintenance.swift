import NarniaLanguage
import NarniaCrypto
import NarniaStore

/// `verify`, `passwd`, `help`, `exit`.
enum Maintenance {
    /// `verify [PATH...]`: every item, or the items named and everything under them.
    static func verify(_ s: Session, _ a: ParsedArguments) throws {
        var only: Set<Identifier>?
        if !a.operands.isEmpty {
            var ids = Set<Identifier>()
            for word in a.operands {
                for (_, id) in try s.existing(word) {
                    if id == .root || s.vault.isFolder(id) {
                        ids.insert(id)
                        for item in s.vault.descendants(of: id) { ids.insert(item.id) }
                    } else {
                        ids.insert(id)
                    }
                }
            }
            ids.remove(.root)
            only = ids
        }
        let total = only.map { $0.reduce(UInt64(0)) { $0 + (s.vault.item($1)?.size ?? 0) } }
            ?? (s.vault.children(of: .root).isEmpty ? 0 : s.vault.descendants(of: .root).reduce(UInt64(0)) { $0 + $1.size })
        let progress = ProgressMeter(session: s, label: "verify", totalBytes: total)
        progress?.begin(item: "")
        let report = try s.vault.verify(only: only, observer: s.observer(progress: progress))
        progress?.finish()
        for failure in report.damaged { s.error("verify", "\(s.shown(failure.item.id, on: s.err)): damaged (\(failure.reason))") }
        for failure in report.missing { s.error("verify", "\(s.shown(failure.item.id, on: s.err)): \(failure.reason)") }
        for problem in report.problems { s.error("verify", problem) }
        for note in report.notes { s.note("verify", note) }
        if let note = report.skippedMovesNote(showing: { s.shown($0, on: s.err) }) { s.note("verify", note) }
        if let note = report.undecodableNote(spelling: s.err.undecodableName) { s.note("verify", note) }
        guard report.isWhole else { throw Reported() }
        s.out.line("verified \(report.checked) item\(report.checked == 1 ? "" : "s"), all intact")
    }

    /// `passwd [--rotate] [--new-passphrase-file FILE]`. On a terminal, without the file, it
    /// asks for the current passphrase first (as passwd(1) does), then the new one twice;
    /// Ctrl-C at any question cancels the command and changes nothing.
    static func passwd(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.isEmpty else { throw CommandTable.tooManyArguments(for: "passwd") }
        try s.vault.refuseKeyChangeAfterRotationElsewhere(rotating: a.has("--rotate"))   // before any question
        let passphrase: Secret
        let file = a.flags["--new-passphrase-file"]
        func readNew(from file: String) throws -> Secret {
            let passphrase = try PassphraseSource.readFirstLine(path: file) { s.warning("passwd", $0) }
            try PassphraseSource.checkNew(passphrase, from: file)
            return passphrase
        }
        if let questions = s.passphraseQuestions {
            // The current passphrase first, as passwd(1) asks, wherever the new one comes from
            // (review DP-1: with the file nothing was asked, and whoever sat at an open session
            // could write one with `!` and lock its owner out).
            do {
                let current = try questions.ask("Current passphrase: ")
                guard try s.vault.opens(withPassphrase: current) else {
                    throw CommandFailure("wrong passphrase; nothing was changed")
                }
                passphrase = try file.map(readNew) ?? questions.newPassphrase()
            } catch PassphraseError.interrupted {
                throw Cancelled()
            } catch PassphraseError.mismatch {
                throw CommandFailure("the two passphrases differ; nothing was changed")
            }
        } else if let file {
            passphrase = try readNew(from: file)
        } else {
            // A -c or -b run never asks, on a terminal or not (review CA-4: it said there was none).
            throw s.interactive
                ? CommandFailure("no terminal to ask for the new passphrase", hint: "use passwd --new-passphrase-file FILE")
                : CommandFailure("asks for the new passphrase only in the interactive shell", hint: "in -c and -b runs use passwd --new-passphrase-file FILE")
        }
        if a.has("--rotate") {
            try s.vault.rotateMasterKey(passphrase: passphrase, parameters: s.kdfParametersForNewPassphrase)
            s.out.line("passphrase changed; new master key")
        } else {
            try s.vault.changePassphrase(to: passphrase, parameters: s.kdfParametersForNewPassphrase)
            s.out.line("passphrase changed")
        }
        // Perhaps the only place the new passphrase is written (review BH-2).
        if let file = a.flags["--new-passphrase-file"] { s.keepOriginal(of: file, because: "the file passwd took this vault's passphrase from") }
    }

    static func help(_ s: Session, _ a: ParsedArguments) throws {
        let width = HelpText.width(terminalColumns: s.out.isTerminal ? terminalWidth() : nil)
        let lines: [String]
        guard a.operands.count <= 1 else { throw CommandTable.tooManyArguments(for: "help") }
        if let name = a.operands.first?.text {
            guard let spec = CommandTable.find(name) else {
                // `help ls-l` means `help ls` (review CC-13): only the command of a suggestion.
                let commands = CommandTable.nearest(to: name).map { "help " + $0.prefix { $0 != " " } }
                throw CommandFailure("no command '\(name)'", hint: commands.isEmpty ? "'help' lists the commands"
                                     : "did you mean \(CommandTable.alternatives(commands))? ('help' lists the commands)")
            }
            lines = HelpText.page(spec, width: width)
        } else {
            lines = HelpText.overview(CommandTable.all, width: width)
        }
        for line in lines { s.out.line(line) }
    }

    /// Leaves the vault. It takes no status (`exit 3` would let a script believe it chose its
    /// exit status): the run's status says whether every command succeeded.
    static func exit(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.isEmpty else { throw CommandTable.tooManyArguments(for: "exit", hint: "exit takes no status: the exit status says whether every command succeeded") }
        s.exitRequested = true
    }
}

import NarniaCrypto
import NarniaStore

/// `verify`, `passwd`, `help`, `exit`.
enum Maintenance {
    static func verify(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.isEmpty else { throw CommandFailure("takes no arguments") }
        let total = s.vault.children(of: .root).isEmpty ? 0 : s.vault.descendants(of: .root).reduce(UInt64(0)) { $0 + $1.size }
        let progress = ProgressMeter(session: s, label: "verify", totalBytes: total)
        progress?.begin(item: "")
        let report = try s.vault.verify(observer: s.observer(progress: progress))
        progress?.finish()
        for failure in report.damaged { s.error("verify", "\(s.shown(failure.item.id, on: s.err)): damaged (\(failure.reason))") }
        for failure in report.missing { s.error("verify", "\(s.shown(failure.item.id, on: s.err)): \(failure.reason)") }
        for problem in report.problems { s.error("verify", problem) }
        for note in report.notes { s.note("verify", note) }
        guard report.isWhole else {
            var parts: [String] = []
            if !report.damaged.isEmpty { parts.append("\(report.damaged.count) damaged") }
            if !report.missing.isEmpty { parts.append("\(report.missing.count) not on this device") }
            if !report.problems.isEmpty { parts.append("the metadata is not whole in this copy") }
            throw Reported(CommandFailure(parts.joined(separator: ", ")))
        }
        s.out.line("verified \(report.checked) items, all intact")
    }

    /// `passwd [--rotate] [--new-passphrase-file FILE]`. On a terminal, without the file, it
    /// asks for the current passphrase first (as passwd(1) does), then the new one twice;
    /// Ctrl-C at any question cancels the command and changes nothing.
    static func passwd(_ s: Session, _ a: ParsedArguments) throws {
        guard a.operands.isEmpty else { throw CommandFailure("takes no arguments", hint: "usage: passwd [--rotate] [--new-passphrase-file FILE]") }
        let passphrase: Secret
        if let file = a.flags["--new-passphrase-file"] {
            passphrase = try PassphraseSource.readFirstLine(path: file)
        } else if let questions = s.passphraseQuestions {
            do {
                let current = try questions.ask("Current passphrase: ")
                guard try s.vault.opens(withPassphrase: current) else {
                    throw CommandFailure("wrong passphrase; nothing was changed")
                }
                passphrase = try questions.newPassphrase()
            } catch PassphraseError.interrupted {
                throw Cancelled()
            } catch PassphraseError.mismatch {
                throw CommandFailure("the two passphrases differ; nothing was changed")
            }
        } else {
            throw CommandFailure("no terminal to ask for the new passphrase", hint: "use passwd --new-passphrase-file FILE")
        }
        if a.has("--rotate") {
            try s.vault.rotateMasterKey(passphrase: passphrase, parameters: s.kdfParametersForNewPassphrase)
            s.out.line("passphrase changed; new master key")
        } else {
            try s.vault.changePassphrase(to: passphrase, parameters: s.kdfParametersForNewPassphrase)
            s.out.line("passphrase changed")
        }
    }

    static func help(_ s: Session, _ a: ParsedArguments) throws {
        if let name = a.operands.first?.text {
            guard let spec = CommandTable.find(name) else { throw CommandFailure("no command '\(name)'", hint: "type 'help' for the list") }
            s.out.line("usage: \(spec.name)\(spec.usage.isEmpty ? "" : " " + spec.usage)")
            if !spec.aliases.isEmpty { s.out.line("also: \(spec.aliases.joined(separator: ", "))") }
            s.out.line("")
            s.out.line(spec.abstract)
            if !spec.details.isEmpty { s.out.line(""); s.out.line(spec.details) }
            if !spec.flags.isEmpty {
                s.out.line("")
                let width = spec.flags.map { $0.spelling.count + ($0.takesValue ? 6 : 0) }.max() ?? 0
                for f in spec.flags {
                    let left = f.spelling + (f.takesValue ? " VALUE" : "")
                    s.out.line("  " + left.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + f.help)
                }
            }
            return
        }
        let width = CommandTable.all.map(\.name.count).max() ?? 0
        for spec in CommandTable.all {
            s.out.line(spec.name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + spec.abstract)
        }
    }

    static func exit(_ s: Session, _ a: ParsedArguments) throws {
        s.exitRequested = true
    }
}

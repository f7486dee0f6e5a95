import NarniaKinds
import NarniaLanguage
import NarniaSystem
import NarniaStore

/// Tab completion over the running session: the command table, the vault tree and the host.
public struct ShellCompletionSource: CompletionSource {
    let session: Session

    public init(session: Session) { self.session = session }

    public var numbersTypedBare: Bool { HiddenNames.numbersTypedBare(session) }

    public var commandNames: [String] {
        CommandTable.all.flatMap { [$0.name] + $0.aliases }
    }

    public func flags(for command: String) -> [String] {
        CommandTable.find(command)?.flags.map(\.spelling) ?? []
    }

    public func argumentKind(for command: String, argumentIndex: Int, previousWords: [String]) -> ArgumentKind {
        guard let spec = CommandTable.find(command) else { return .none }
        if let flag = previousWords.last, let f = spec.flags.first(where: { $0.spelling == flag }), f.takesValue {
            switch flag {
            case "-type": return .choice(ItemKind.allCases.map(\.name))
            case "--new-passphrase-file": return .hostPath
            default: return .none
            }
        }
        if spec.name == "help" { return .choice(CommandTable.all.map(\.name)) }
        if spec.name == "set" { return argumentIndex == 0 ? .settingKey : argumentIndex == 1 ? .settingValue(key: previousWords.first ?? "") : .none }
        if spec.name == "cd" { return .vaultFolder }
        if spec.name == "lcd" { return .hostFolder }
        if spec.name == "import" && argumentIndex >= 1 && previousWords.contains("-") { return .none }
        if spec.lastOperandIsHost && argumentIndex >= 1 && command != "mget" {
            // export: more sources or the host destination: vault names first, else the host's;
            // a path written out from `/` or `.` the host's first (see `.vaultOrHost`).
            return .vaultOrHostPath
        }
        guard let operand = spec.operands.last else { return .none }
        switch operand {
        case .vaultPath: return .vaultPath
        case .hostPath: return .hostPath
        case .settingKey: return .settingKey
        case .none: return .none
        }
    }

    public func vaultEntries(in folder: String) -> [CompletionEntry] {
        // `#N` parts (hide-names) name items too.
        let word = Word(text: folder, quotedScalars: Array(repeating: false, count: folder.unicodeScalars.count))
        let typed = (try? HiddenNames.resolving(word, in: session)) ?? word
        let path = VaultPath.resolve(ItemName.nfc(typed.text), relativeTo: session.cwd)
        guard let id = session.resolve(path), session.vault.isFolder(id) else { return [] }
        // Under hide-names on the screen, the candidates are the items' numbers, not names.
        if session.out.isTerminal && ViewingPreferences(session).hideNames {
            return session.vault.children(of: id).map {
                CompletionEntry(name: "#\(HiddenNames.listedNumber(of: $0, in: session.vault))", isFolder: $0.isFolder)
            }
        }
        return session.vault.children(of: id).map { CompletionEntry(name: $0.name, isFolder: $0.isFolder) }
    }

    public func hostEntries(in folder: String) -> [CompletionEntry] {
        let dir = folder.isEmpty ? "." : folder
        guard let names = try? FileSystem.listDirectory(dir) else { return [] }
        return names.map { CompletionEntry(name: $0, isFolder: FileSystem.isDirectory(dir + "/" + $0)) }
    }

    public var settingKeys: [String] { Settings.all.map(\.key) }

    public func settingValues(for key: String) -> [String] { Settings.find(key)?.values ?? [] }
}

import Glibc
import NarniaCrypto
import NarniaShell
import NarniaStore

/// Wires the parsed options to the store and the shell.
struct Launcher {
    static let version = "0.1.0"
    let options: Options

    /// Prints `narnia: error: …` and exits with `status`.
    static func fail(_ message: String, hint: String? = nil, status: Int32) -> Never {
        fputs("narnia: error: \(message)\n", stderr)
        if let hint { fputs("narnia: hint: \(hint)\n", stderr) }
        exit(status)
    }

    /// The store directory: --vault, else $NARNIA_VAULT, else $XDG_DATA_HOME/lining.
    var storeDirectory: String {
        if let v = options.vault { return v }
        if let v = getenv("NARNIA_VAULT"), v.pointee != 0 { return String(cString: v) }
        let data: String
        if let x = getenv("XDG_DATA_HOME"), x.pointee != 0 { data = String(cString: x) }
        else { data = (getenv("HOME").map { String(cString: $0) } ?? ".") + "/.local/share" }
        return data + "/lining"
    }

    /// Argon2id limits for a new wrapping: MODERATE, or the test limits when
    /// NARNIA_INSECURE_TEST_KDF=1 (see the README).
    var kdfParameters: KDFParameters {
        if let v = getenv("NARNIA_INSECURE_TEST_KDF"), String(cString: v) == "1" { return .insecureTestOnly }
        return .moderate
    }

    var stdinIsTerminal: Bool { isatty(0) == 1 }

    func run() -> Int32 {
        switch options.mode {
        case .initialize:
            return initialize()
        case .enter:
            return openAndRun(commands: stdinIsTerminal ? .interactive : .standardInput)
        case .commands(let text):
            return openAndRun(commands: .text(text))
        case .batchFile(let path):
            return openAndRun(commands: path == "-" ? .standardInput : .file(path))
        case .cover:
            if !stdinIsTerminal { return openAndRun(commands: .standardInput) }
            if !storeExists {
                return firstRun()
            }
            return openAndRun(commands: .interactive)
        }
    }

    var storeExists: Bool {
        (try? FileSystem.statIfExists(storeDirectory)) != nil
            && !((try? FileSystem.listDirectory(storeDirectory))?.isEmpty ?? true)
    }

    // MARK: Passphrases

    /// The passphrase from --passphrase-file / --passphrase-fd, else asked on the terminal.
    func passphrase(confirm: Bool) -> Secret {
        do {
            if let file = options.passphraseFile { return try PassphraseSource.readFirstLine(path: file) }
            if let fd = options.passphraseFD { return try PassphraseSource.readFirstLine(fd: fd, name: "descriptor \(fd)") }
        } catch let e as PassphraseError {
            Launcher.fail(e.description, status: 2)
        } catch {
            Launcher.fail(describe(error), status: 2)
        }
        guard TerminalPassphrase.available else {
            Launcher.fail("no passphrase: there is no terminal to ask on", hint: "use --passphrase-file FILE or --passphrase-fd N", status: 2)
        }
        return askOnTerminal(confirm: confirm)
    }

    func askOnTerminal(confirm: Bool) -> Secret {
        do {
            let first = try TerminalPassphrase.ask(confirm ? "New passphrase: " : "Passphrase: ")
            if confirm {
                if first.count < 12 { fputs("narnia: warning: a passphrase under 12 characters is weak; a few random words are better\n", stderr) }
                let second = try TerminalPassphrase.ask("Repeat it: ")
                guard first.isEqual(to: second) else { Launcher.fail("the two passphrases differ; nothing was changed", status: 2) }
            }
            return first
        } catch {
            Launcher.fail(describe(error), status: 2)
        }
    }

    // MARK: init and open

    func warnIfTestKDF(_ p: KDFParameters) {
        if p.isWeakerThanModerate { fputs("narnia: warning: this vault uses the insecure test key derivation\n", stderr) }
    }

    func initialize() -> Int32 {
        if storeExists { Launcher.fail(VaultError.alreadyExists(storeDirectory).description, status: 1) }
        let secret = passphrase(confirm: options.passphraseFile == nil && options.passphraseFD == nil)
        do {
            let vault = try Vault.create(at: storeDirectory, passphrase: secret, parameters: kdfParameters)
            warnIfTestKDF(vault.kdfParameters)
            return 0
        } catch {
            Launcher.fail("cannot create a vault at \(storeDirectory): \(describe(error))", status: 1)
        }
    }

    /// The very first run on a terminal with no store: offer to create one, then go in.
    func firstRun() -> Int32 {
        print("Nothing is stored here yet. Set up a private store at \(storeDirectory)?")
        print("Choose a passphrase: it is the only way in, and it cannot be recovered.")
        let secret = askOnTerminal(confirm: true)
        do {
            let vault = try Vault.create(at: storeDirectory, passphrase: secret, parameters: kdfParameters)
            return shell(vault, commands: .interactive)
        } catch {
            Launcher.fail("cannot create a store at \(storeDirectory): \(describe(error))", status: 1)
        }
    }

    func openAndRun(commands: CommandSource) -> Int32 {
        let secret = passphrase(confirm: false)
        let vault: Vault
        do {
            vault = try Vault.open(at: storeDirectory, passphrase: secret)
        } catch VaultError.noVault(let dir) {
            Launcher.fail("no vault at \(dir)", hint: "create one with: narnia --vault \(dir) init", status: 3)
        } catch VaultError.wrongPassphrase {
            Launcher.fail("wrong passphrase", status: 3)
        } catch {
            Launcher.fail(describe(error), status: 1)
        }
        warnIfTestKDF(vault.kdfParameters)
        return shell(vault, commands: commands)
    }

    func shell(_ vault: Vault, commands: CommandSource) -> Int32 {
        let interactive = commands == .interactive
        let session = Session(vault: vault, out: Output(fd: 1), err: Output(fd: 2), interactive: interactive)
        session.kdfParametersForNewPassphrase = kdfParameters
        if TerminalPassphrase.available && interactive {
            session.newPassphraseSource = { askOnTerminal(confirm: true) }
        }
        session.commandsFromStandardInput = commands == .standardInput || interactive
        switch commands {
        case .interactive:
            return InteractiveLoop(session: session).run()
        case .text(let text):
            return BatchRunner(session: session, keepGoing: options.keepGoing).run(lines: text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
        case .file(let path):
            guard let fd = try? FileDescriptor.open(path, O_RDONLY) else { Launcher.fail("cannot read the batch file \(path)", status: 2) }
            return BatchRunner(session: session, keepGoing: options.keepGoing).run(reader: LineReader(fd: fd.raw), keep: fd)
        case .standardInput:
            return BatchRunner(session: session, keepGoing: options.keepGoing).run(reader: LineReader(fd: 0), keep: nil)
        }
    }
}

/// Where commands come from.
enum CommandSource: Equatable {
    case interactive
    case text(String)
    case file(String)
    case standardInput
}

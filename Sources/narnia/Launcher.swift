import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaCover
import NarniaCrypto
import NarniaShell
import NarniaStore

/// Wires the parsed options to the store and the shell.
struct Launcher {
    static let version = "0.1.0"
    let options: Options

    /// Writes a message on standard error as every message there goes (`Output.messageLine`):
    /// what the store or the user's paths put in it cannot drive the terminal or break the line.
    static func say(_ line: String) {
        fflush(StandardStream.error)
        let err = Output(fd: 2)
        err.messageLine(line)
        err.flush()
    }

    /// Prints `narnia: warning: …` through `say`.
    static func warn(_ message: String) { say("narnia: warning: \(message)") }

    /// Prints `narnia: error: …` (and a hint) through `say` and exits with `status`.
    static func fail(_ message: String, hint: String? = nil, status: Int32) -> Never {
        say("narnia: error: \(message)")
        if let hint { say("narnia: hint: \(hint)") }
        exit(status)
    }

    /// The store directory: --vault, else $NARNIA_VAULT, else $XDG_DATA_HOME/lining, made
    /// absolute once, at launch: `lcd` changes the working directory, and the store must not
    /// move with it (a relative store path once sent new objects into whatever folder `lcd` chose).
    let storeDirectory: String

    init(options: Options) {
        self.options = options
        storeDirectory = Self.storeDirectory(options)
    }

    private static func storeDirectory(_ options: Options) -> String {
        if let v = options.vault { return FileSystem.absolute(v) }
        if let v = environment("NARNIA_VAULT") { return FileSystem.absolute(expandingTilde(v)) }
        // The cover's start names no vault option (review DA-2): it needs HOME for the closet
        // anyway.
        let hint = options.mode == .cover ? closetHint : "give --vault DIR, or set HOME"
        return FileSystem.absolute(dataHome(or: hint) + "/lining")
    }

    /// What to do when HOME is unset, for the Wardrobe, which takes no option for its closet.
    static let closetHint = "set HOME, or XDG_DATA_HOME to an absolute path"

    /// Where this user's data goes: `$XDG_DATA_HOME` when it is an absolute path (the XDG
    /// specification ignores a relative one), else `$HOME/.local/share`; with neither, a usage
    /// error (review CU-7: the vault and the closet went to `./.local/share` under whatever
    /// folder narnia started in, and the same script run from another found no vault).
    /// `hint` says what to do instead (review CZ-2: the Wardrobe's closet, which has no
    /// option, was told to take `--vault`).
    static func dataHome(or hint: String) -> String {
        if let data = environment("XDG_DATA_HOME"), data.hasPrefix("/") { return data }
        guard let home = environment("HOME") else {
            fail("HOME is not set, so there is no default place for narnia's data", hint: hint, status: 2)
        }
        return home + "/.local/share"
    }

    /// `path` with a leading `~` or `~/` replaced by `$HOME`, as a shell does after a space but
    /// not after `--vault=`, nor in an environment file (`NARNIA_VAULT=~/vault`); as it is
    /// otherwise. With HOME unset such a path is a usage error (review CC-10: it made a folder
    /// named `~`).
    static func expandingTilde(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        guard let home = environment("HOME") else {
            fail("\(path): HOME is not set, so '~' stands for no folder", hint: "give the path in full", status: 2)
        }
        return home + path.dropFirst()
    }

    /// An environment variable's value when set and not empty; one that is not UTF-8 is a
    /// usage error (decoded lossily, it would name another folder).
    static func environment(_ name: String) -> String? {
        do { return try environmentPath(name) } catch { fail(error.description, status: 2) }
    }

    /// Argon2id limits for a new wrapping: MODERATE, or the test limits when
    /// NARNIA_INSECURE_TEST_KDF=1 (see the README).
    var kdfParameters: KDFParameters {
        if let v = getenv("NARNIA_INSECURE_TEST_KDF"), String(cString: v) == "1" { return .insecureTestOnly }
        return .moderate
    }

    var stdinIsTerminal: Bool { isatty(0) == 1 }

    /// Runs the chosen mode. After a panic the session is already released (keys wiped) when
    /// the mode returns; the panic then finishes and the process exits at once.
    func run() -> Int32 {
        let status = runMode()
        if Session.panicRequested != 0 { Signals.finishPanic(status: status) }
        return status
    }

    private func runMode() -> Int32 {
        switch options.mode {
        case .initialize:
            return initialize()
        case .enter:
            return openAndRun(commands: stdinIsTerminal ? .interactive : .standardInput)
        case .commands(let text):
            return openAndRun(commands: .text(text))
        case .batchFile(let path):
            if path == "-" { return openAndRun(commands: .standardInput) }
            // Opened before the key derivation, so a mistyped name costs no passphrase.
            do {
                let file = try FileDescriptor.open(path, .readOnly)
                if try file.status().isDirectory { throw SystemError(code: EISDIR, operation: "read", path: path) }
                return openAndRun(commands: .file(file))
            } catch {
                Launcher.fail("cannot read the batch file: \(describe(error))", status: 2)
            }
        case .drop(let arguments):
            return DropCommand(store: storeDirectory) { Signals.terminationStatus() ?? 130 }.run(arguments)
        case .cover:
            if !stdinIsTerminal { return openAndRun(commands: .standardInput) }
            Signals.enablePanicKey()
            if isFirstRun { return firstRun() }
            return cover()
        }
    }

    /// Where the Wardrobe keeps its garments.
    var closetFile: ClosetFile {
        ClosetFile.location(inDataHome: Launcher.dataHome(or: Launcher.closetHint))
    }

    /// The very first run: neither a store (a non-empty store directory) nor the Wardrobe's
    /// `closet.json` exists. Only then is set-up offered; once either exists, every start
    /// shows the Wardrobe, whose door answers the same whether a store exists or not. (The
    /// set-up screen can only say "nothing is stored here" while the Wardrobe itself has
    /// never been used: there is nothing to hide yet.)
    var isFirstRun: Bool { !storeExists && !closetFile.exists }

    /// A store directory that is there and holds something but what Syncthing keeps in a
    /// folder it shares (review DQ-3: a folder shared empty was no first run), or that cannot
    /// be looked into (review CU-5: an unreadable store was announced as "nothing is stored
    /// here yet").
    var storeExists: Bool {
        do {
            guard try FileSystem.statIfExists(storeDirectory) != nil else { return false }
            return try !FileSystem.listDirectory(storeDirectory).allSatisfy(Vault.syncEngineMarkers.contains)
        } catch {
            return true
        }
    }

    // MARK: Passphrases

    /// A passphrase and commands never come from one stream: a passphrase too long, or a
    /// script written wrongly, would otherwise run its tail as commands.
    func refusePassphraseFromCommandStream(_ commands: CommandSource) {
        guard commands.isStandardInput else { return }
        var input = stat(), source = stat()
        guard fstat(0, &input) == 0 else { return }
        let same: Bool
        if let fd = options.passphraseFD {
            same = fd == 0 || (fstat(fd, &source) == 0 && source.st_dev == input.st_dev && source.st_ino == input.st_ino)
        } else if let file = options.passphraseFile {
            same = stat(file, &source) == 0 && source.st_dev == input.st_dev && source.st_ino == input.st_ino
        } else {
            same = false
        }
        if same {
            Launcher.fail("the passphrase and the commands both come from standard input",
                          hint: "give the commands with -c or -b FILE, or the passphrase from another descriptor or file", status: 2)
        }
    }

    /// The passphrase from --passphrase-file / --passphrase-fd, else asked on the terminal.
    func passphrase(confirm: Bool) -> Secret {
        do {
            if let file = options.passphraseFile { return try PassphraseSource.readFirstLine(path: file, warn: Launcher.warn) }
            if let fd = options.passphraseFD {
                if let exposure = PassphraseSource.exposure(of: fd, name: "the file at descriptor \(fd)") { Launcher.warn(exposure) }
                return try PassphraseSource.readFirstLine(fd: fd, name: "descriptor \(fd)")
            }
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

    /// The questions asked on the terminal, warnings on standard error.
    var questions: PassphraseQuestions {
        PassphraseQuestions(ask: TerminalPassphrase.ask, warn: Launcher.warn)
    }

    /// Asks on the terminal: a new passphrase twice (`confirm`), else the passphrase once.
    /// Ctrl-C exits 130; every other failure exits 2.
    func askOnTerminal(confirm: Bool) -> Secret {
        do {
            return confirm ? try questions.newPassphrase() : try questions.ask("Passphrase: ")
        } catch {
            Launcher.failAsking(error)
        }
    }

    /// Ends the process after a failed question: 130 for Ctrl-C, else 2.
    static func failAsking(_ error: Error) -> Never {
        switch error {
        case PassphraseError.interrupted:
            // The panic key stops the question as Ctrl-C does; it still ends as a panic.
            if Session.panicRequested != 0 { Signals.finishPanic() }
            // SIGTERM or SIGHUP stops it too: their status, not Ctrl-C's (review CT-5).
            exit(Signals.terminationStatus() ?? 130)
        case PassphraseError.mismatch: Launcher.fail("the two passphrases differ; nothing was changed", status: 2)
        default: Launcher.fail(describe(error), status: 2)
        }
    }

    // MARK: init and open

    func warnIfTestKDF(_ p: KDFParameters) {
        if p.isWeakerThanModerate { fputs("narnia: warning: this vault uses the insecure test key derivation\n", StandardStream.error) }
    }

    func initialize() -> Int32 {
        do { try Vault.checkCanCreate(at: storeDirectory) } catch {
            Launcher.fail(describe(error), hint: Vault.holdsOnlyEmptyShardFolders(storeDirectory) ? Self.emptyShardFoldersHint : nil, status: 1)
        }
        let secret = passphrase(confirm: options.passphraseFile == nil && options.passphraseFD == nil)
        // Typed at the terminal, the same keyboard types it again (review BJ-1).
        if let source = options.passphraseFile ?? options.passphraseFD.map({ "descriptor \($0)" }) {
            do { try PassphraseSource.checkNew(secret, from: source) } catch { Launcher.fail(describe(error), status: 2) }
        }
        do {
            let vault = try Vault.create(at: storeDirectory, passphrase: secret, parameters: kdfParameters)
            warnIfTestKDF(vault.kdfParameters)
            let out = Output(fd: 1)
            out.line("created a vault at \(out.name(vault.directory))")
            out.flush()
            return 0
        } catch {
            Launcher.fail("cannot create a vault at \(storeDirectory): \(describe(error))", status: 1)
        }
    }

    /// The very first run on a terminal (see `isFirstRun`): offer to create a store, then go
    /// straight into the vault shell. An empty answer skips set-up and opens the Wardrobe.
    /// Either way the closet file is created, so that every later start shows the Wardrobe.
    func firstRun() -> Int32 {
        let out = Output(fd: 1)
        out.line("Nothing is stored here yet. Set up a private store at \(out.name(storeDirectory))?")
        out.flush()
        print("Choose a passphrase: it is the only way in, and it cannot be recovered.")
        print("(Press Enter without typing anything to skip; 'narnia init' sets up later.)")
        let secret: Secret
        do {
            secret = try questions.newPassphrase()
        } catch PassphraseError.empty {
            createCloset()
            return cover()
        } catch PassphraseError.mismatch {
            Launcher.fail("the two passphrases differ; nothing was created", status: 2)
        } catch {
            Launcher.failAsking(error)
        }
        do {
            let vault = try Vault.create(at: storeDirectory, passphrase: secret, parameters: kdfParameters)
            createCloset()
            warnIfTestKDF(vault.kdfParameters)
            print("Your store is ready. From now on narnia opens on the Wardrobe: to come back here,")
            print("type 'hold back-panel' (it stands in Outerwear) and give this passphrase.")
            fflush(StandardStream.output)
            return shell(vault, commands: .interactive)
        } catch {
            Launcher.fail("cannot create a store at \(storeDirectory): \(describe(error))", status: 1)
        }
    }

    /// Saves an empty closet unless one exists.
    func createCloset() {
        let file = closetFile
        if !file.exists { try? file.save(Closet()) }
    }

    // MARK: The cover and the door

    /// The Wardrobe. `hold back-panel` runs `knock`; when the door opens, the Wardrobe closes
    /// and the vault shell runs; when that ends, so does the process (one authentication per
    /// process).
    func cover() -> Int32 {
        let file = closetFile
        var closet = Closet()
        do { closet = try file.load() } catch let e as CommandFailure {
            let aside = file.setAside()
            let err = Output(fd: 2)
            err.messageLine("wardrobe: warning: \(e.message); starting with an empty closet" + (aside.map { " (the old file is kept as \(err.name($0)))" } ?? ""))
            err.flush()
        } catch {}
        let wardrobe = Wardrobe(closet: closet, file: file, console: TerminalConsole())
        let door = DoorState()
        wardrobe.backPanel = { [launcher = self] atTheDoor in
            if let vault = launcher.knock(opening: atTheDoor) {
                door.vault = vault
                wardrobe.leave()
            }
        }
        let status = CoverLoop(wardrobe: wardrobe).run()
        wardrobe.backPanel = nil
        guard let vault = door.vault else { return status }
        door.vault = nil
        warnAtOpen(vault)
        return shell(vault, commands: .interactive)
    }

    /// The door's least delay, and the step its delay is rounded up to: a wrong key and a
    /// missing store answer at the same moment, whatever small differences the work had.
    static let doorMinimumDelay = 1.5
    static let doorDelayStep = 0.5

    /// `hold back-panel`: asks for the key without echo and tries it. The key derivation runs
    /// in every case — on the store's salt and limits when there is a store, else on a random
    /// salt with the default limits (MODERATE, or the test limits under
    /// NARNIA_INSECURE_TEST_KDF=1) — and every failure (wrong key, no store, empty key, a store
    /// in use or unreadable) gives the same words after the same delay. Returns the open vault
    /// for the right key. Unless `opening` (the panel held from a tab other than Outerwear),
    /// every key gets that answer: it is asked for only so that it is never echoed.
    func knock(opening: Bool) -> Vault? {
        print(Wardrobe.keyholeText)
        fflush(StandardStream.output)
        let key = try? TerminalPassphrase.ask(Wardrobe.keyPrompt)
        // SIGTERM or SIGHUP at the question ends the process now, store or none (review CU-6:
        // both derivations and the whole delay ran first).
        if Signals.terminationStatus() != nil { return nil }
        let start = SystemClock.monotonicSeconds()
        if let vault = Vault.openBehindDoor(at: storeDirectory, key: key, mayOpen: opening, parametersWithoutStore: kdfParameters) {
            return vault
        }
        let elapsed = SystemClock.monotonicSeconds() - start
        let delay = max(Launcher.doorMinimumDelay, (elapsed / Launcher.doorDelayStep).rounded(.up) * Launcher.doorDelayStep)
        Launcher.sleep(until: start + delay)
        if Signals.terminationStatus() != nil { return nil }
        print(Wardrobe.doorStaysShut)
        fflush(StandardStream.output)
        return nil
    }

    static func sleep(until deadline: Double) {
        while true {
            let left = deadline - SystemClock.monotonicSeconds()
            if left <= 0 || Session.panicRequested != 0 || Signals.terminationStatus() != nil { return }
            var ts = timespec(tv_sec: Int(left), tv_nsec: Int((left - Double(Int(left))) * 1e9))
            _ = nanosleep(&ts, nil)
        }
    }

    func openAndRun(commands: CommandSource) -> Int32 {
        // On a terminal Ctrl-\ panics from the passphrase question on, in `-c` and `-b` runs
        // too, where it ends with 131: their commands did not all run.
        Signals.panicKeyStatus = commands.isInteractive ? 0 : 131
        Signals.enablePanicKey()
        refusePassphraseFromCommandStream(commands)
        // No passphrase is asked for, nor read, where no store can be.
        if Vault.isAbsent(at: storeDirectory) { failNoVault(storeDirectory) }
        var secret = passphrase(confirm: false)
        let asked = options.passphraseFile == nil && options.passphraseFD == nil
        var tries = 1
        // After rotations of the master key on two devices at once, each with its own
        // passphrase, an interactive session asks for the other one (batch runs never prompt).
        let askAnother: (() -> Secret?)? = commands.isInteractive && TerminalPassphrase.available ? {
            fputs("narnia: this passphrase does not open every journal: the vault's master key was also rotated elsewhere under another passphrase (or again since this one was chosen: then give the newest)\n", StandardStream.error)
            return try? TerminalPassphrase.ask("The other passphrase: ")
        } : nil
        var opened: Vault?
        while opened == nil {
            do {
                opened = try Vault.open(at: storeDirectory, passphrase: secret, notice: { notice in
                    Launcher.say("narnia: note: \(notice)")
                }, anotherPassphrase: askAnother)
            } catch VaultError.noVault(let dir) {
                failNoVault(dir)
            } catch let error as VaultError where error.isWrongPassphrase {
                // On a terminal, two more tries, as sudo gives, each costing the whole derivation.
                // Read from a file or a descriptor: what a newcomer most likely got wrong (review
                // EF-11: the error alone said nothing of either).
                let given = options.passphraseFile != nil ? "the first line of the passphrase file" : "the first line read from the descriptor"
                guard asked && tries < PassphraseQuestions.tries else {
                    guard !asked, case .wrongPassphrase = error else { Launcher.fail(error.description, status: 3) }
                    Launcher.fail(error.description, hint: "the passphrase is \(given); after 'passwd' (here or on another device) it is the one chosen then, once that device's new key file is here (a sync engine may still be bringing it)", status: 3)
                }
                fputs("narnia: \(error.description); try again\n", StandardStream.error)
                tries += 1
                do { secret = try questions.ask("Passphrase: ") } catch { Launcher.failAsking(error) }
            } catch VaultError.refusedLimits(let limits) {
                Launcher.fail(VaultError.refusedLimits(limits).description, status: 3)
            } catch VaultError.locked(let dir) {
                Launcher.fail(VaultError.locked(dir).description,
                              hint: "a session or a script has it open: run this when it has ended; 'narnia drop' adds files meanwhile", status: 1)
            } catch let e as MetadataError {
                if case .unknownMasterKey = e {
                    // Review EG-1: a rotation's journals here without its key file (damaged on
                    // the remote when they came) left no passphrase that opened, and no word why.
                    Launcher.fail(e.description, hint: "should the passphrase chosen then be refused too, that rotation's key file is not here yet: a sync engine bringing the store may not have brought it (wait for it to finish, and try again); if nothing is arriving, \(Launcher.copyKeyFiles)", status: 3)
                }
                if case .needsAnotherPassphrase = e {
                    // Review EO-3: the same where the key file here of one of two rotations is
                    // damaged at another key file's length; only a terminal's refusal said it.
                    Launcher.fail(e.description, hint: "should the other passphrase be refused there too, a rotation's key file here is damaged: \(Launcher.copyKeyFiles)", status: 3)
                }
                if e.isAboutThePassphrase { Launcher.fail(e.description, status: 3) }
                if case .incomplete = e {
                    Launcher.fail(describe(e), hint: "nothing was changed; a store still arriving through a sync engine, or one a first 'sync' to it left cut short: wait for it, or run that sync again from the device that sent it; if neither, its journals were removed: open a copy from another device or a backup", status: 1)
                }
                Launcher.fail(describe(e), hint: "nothing was changed; open a copy from another device or a backup restored to a new folder (man narnia: USING A VAULT ON SEVERAL DEVICES)", status: 1)
            } catch {
                Launcher.fail(describe(error), status: 1)
            }
        }
        let vault = opened!
        warnAtOpen(vault)
        return shell(vault, commands: commands)
    }

    /// How to bring whole key files where one did not arrive whole.
    static let copyKeyFiles = "copy the key files from the top of another device's store (or of the remote, where they are whole), files named by 32 hex digits, into this store's folder"

    /// What to do with a folder holding only empty shard folders (`Vault.holdsOnlyEmptyShardFolders`).
    static let emptyShardFoldersHint = "it holds only empty folders named like a store's: an init cut short, or a sync engine still bringing a store (then wait, and open it); if nothing is arriving, remove them and run init"

    /// "no vault" (exit 3), with a hint that fits what is at `dir`: `init` makes a vault only
    /// in a new or empty folder.
    func failNoVault(_ dir: String) -> Never {
        let shown = Output(fd: 2).name(dir)
        let hint: String
        if let st = try? FileSystem.statIfExists(dir), !st.isDirectory {
            hint = "\(shown) is not a folder; give --vault the store's folder"
        } else if Vault.holdsOnlyEmptyShardFolders(dir) {
            hint = Self.emptyShardFoldersHint
        } else if Vault.holdsOnlySyncEngineFiles(dir) {
            hint = "\(shown) holds only a sync engine's files: if the vault was made on another device, its store is still arriving, so wait for it and open it then; if no device has made it yet, create one once nothing is arriving: narnia --vault \(shellQuote(dir)) init"
        } else if (try? Vault.checkCanCreate(at: dir)) == nil {
            hint = "\(shown) holds other files; to make a vault, give init a new or empty folder"
        } else {
            hint = "create one with: narnia --vault \(shellQuote(dir)) init"
        }
        Launcher.fail("no vault at \(shown)", hint: hint, status: 3)
    }

    /// What opening found that the user should know, and the test-KDF warning.
    func warnAtOpen(_ vault: Vault) {
        for warning in vault.warnings { Launcher.warn(warning) }
        warnIfTestKDF(vault.kdfParameters)
    }

    func shell(_ vault: Vault, commands: CommandSource) -> Int32 {
        let interactive = commands.isInteractive
        let session = Session(vault: vault, out: Output(fd: 1), err: Output(fd: 2), interactive: interactive)
        session.kdfParametersForNewPassphrase = kdfParameters
        if TerminalPassphrase.available && interactive { session.passphraseQuestions = questions }
        session.commandsFromStandardInput = commands.isStandardInput || interactive
        if case .text = commands { session.commandsTyped = true } else { session.commandsTyped = interactive }
        if let file = options.passphraseFile { session.keepOriginal(of: file, because: "the passphrase file this run was opened with") }
        if let fd = options.passphraseFD { session.keepOriginal(ofDescriptor: fd, because: "the passphrase file this run was opened with (--passphrase-fd)") }
        if case .batchFile(let path) = options.mode, path != "-" { session.keepOriginal(of: path, because: "the batch file this run reads") }
        if commands.isStandardInput { session.keepOriginal(ofDescriptor: 0, because: "the batch file this run reads (on standard input)") }
        Signals.session = session
        session.adoptDrops()
        // What the session's commands left running (a `!` command's background job, what a
        // viewer started) ends with it, however it ends.
        defer { ChildProcesses.killAll() }
        // A journal replaced after the last append is found and saved before the session ends
        // (review CJ-2: what it had written was lost).
        defer { session.sayWarningsSinceOpen(after: session.vault.saveJournalIfReplaced) }
        // A session that reads lines sees other devices' changes arrive between them (CF-4).
        if case .text = commands {} else { session.watchStore() }
        switch commands {
        case .interactive:
            Session.askYesNo = { question in
                guard let answer = try? TerminalConsole().ask(question) else { return nil }   // Ctrl-C: no answer
                let word = answer.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" }).first
                return ["y", "yes"].contains(word.map { $0.lowercased() } ?? "")
            }
            return InteractiveLoop(session: session).run()
        case .text(let text):
            // One -c text was typed at once: its numbers are read as they were then (CC-2).
            return session.readingNumbersAsTyped {
                BatchRunner(session: session, keepGoing: options.keepGoing, echo: options.verbose)
                    .run(lines: text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init))
            }
        case .file(let fd):
            return BatchRunner(session: session, keepGoing: options.keepGoing, file: fd.path, echo: options.verbose)
                .run(reader: LineReader(fd: fd.raw), keep: fd)
        case .standardInput:
            return BatchRunner(session: session, keepGoing: options.keepGoing, file: "-", echo: options.verbose).run(reader: LineReader(fd: 0), keep: nil)
        }
    }
}

/// Carries the vault out of the door's closure to the launcher.
final class DoorState {
    var vault: Vault?
}

/// Where commands come from.
enum CommandSource {
    case interactive
    case text(String)
    /// A batch file, opened before the vault.
    case file(FileDescriptor)
    /// Piped commands, with `-b -` or without: messages name their lines `-:LINE`, as those
    /// of a file (reviews AS, DM-5: piped without `-b -`, they named none).
    case standardInput

    var isInteractive: Bool { if case .interactive = self { true } else { false } }
    var isStandardInput: Bool { if case .standardInput = self { true } else { false } }
}

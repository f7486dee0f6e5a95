import NarniaLanguage
import Glibc
import NarniaStore
import NarniaSystem

/// `!COMMAND` and `!`, as in sftp: a host command run by `/bin/sh`, or the user's shell, in the
/// host folder (`lcd`). They run as a viewer does (see `Job`): the terminal, and only
/// descriptors 0–2, so nothing of the vault — no store file, no key — reaches them.
enum HostShell {
    /// From the command table (`help !`); the runner hands `!` lines over whole, see below.
    static func run(_ s: Session, _ a: ParsedArguments) throws {
        try run(s, command: a.operands.map(\.text).joined(separator: " "))
    }

    /// True when `/bin/sh -n` reads `command` without a syntax error (it runs nothing). The
    /// error it prints goes to the user, unless `quietly` (a probe expected to fail).
    private static func shellReads(_ command: String, quietly: Bool = false) throws -> Bool {
        var probe = ChildCommand(["/bin/sh", "-n", "-c", command])
        if quietly { probe.standardError = Glibc.open("/dev/null", O_WRONLY | O_CLOEXEC) }
        defer { if let fd = probe.standardError { close(fd) } }
        let job = Job()
        _ = try job.start(probe)
        return job.wait() == 0
    }

    /// A word as `/bin/sh` reads it back: as it is when it holds only characters the shell
    /// takes literally (or globs), else in single quotes.
    static func quoted(_ word: String) -> String {
        let plain = word.unicodeScalars.allSatisfy { c in
            c.properties.isAlphabetic || ("0"..."9").contains(c) || "-_./,:=+@%*?[]~".unicodeScalars.contains(c)
        }
        return plain && !word.isEmpty ? word : "'" + word.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }

    /// Runs `command` (everything after the `!`, untouched), or with none the user's shell.
    /// - Throws: `CommandFailure` when it cannot start or exits with a status other than 0.
    static func run(_ s: Session, command: String) throws {
        let arguments: [String]
        if command.allSatisfy({ $0 == " " || $0 == "\t" }) {
            guard s.interactive, isatty(0) == 1 else {
                throw CommandFailure(s.interactive ? "'!' alone starts a shell, which needs a terminal" : "'!' alone starts a shell only in the interactive shell",
                                     hint: "give a command: !COMMAND")
            }
            let shell = try environmentPath("SHELL") ?? "/bin/sh"
            arguments = [shell]
        } else {
            arguments = ["/bin/sh", "-c", command]
        }
        s.out.flush()
        s.err.flush()
        // A host command is one line, whole: one sh cannot read alone (a construct the lines
        // after it would finish: `{`, `if …; then`) is not run, nor anything after it, which
        // may be the host's (review CQ-5: with --keep-going, the `rm -r photos` inside such a
        // construct, on the next line, removed the vault's photos).
        // So is one with a here-document, which sh takes unclosed: its lines would be the
        // vault's (review CR-1); sh tells one by taking a lone `)` after it as its text (review
        // CS-3: narnia's own reading of `<<` took `$((1<<4))` for one, and missed one after `$'`).
        if arguments.count == 3 {
            let why: String?
            if try !shellReads(command) {
                why = "/bin/sh cannot read it as a whole command"
            } else if try shellReads(command + "\n)", quietly: true) {
                why = "it holds a here-document ('<<'), whose lines would be read as the vault's"
            } else {
                why = nil
            }
            if let why {
                s.runMustStop = true
                throw CommandFailure("\(why): not run\(s.interactive ? "" : ", nor anything after it (the lines after it may be the host's)")",
                                     hint: "give the host one line, as in !sh -c '…', or a script file")
            }
        }
        let job = Job()
        do {
            _ = try job.start(ChildCommand(arguments))
        } catch let failure as SpawnFailure {
            throw CommandFailure("\(failure.program): \(failure.missingProgram ? "not found" : SystemError.reason(for: failure.code))")
        }
        job.passInterruptsOn()
        let status = job.wait()
        // Stopped by Ctrl-C, or killed by narnia itself on SIGTERM or SIGHUP (review CY-4:
        // "exited with status 137", an error of the command's own).
        if status != 0 && Session.interruptRequested != 0 { throw Cancelled() }
        guard status == 0 else { throw CommandFailure("exited with status \(status)") }
    }
}

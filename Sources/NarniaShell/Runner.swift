import NarniaSystem
import NarniaLanguage
import NarniaStore

extension Session {
    /// The longest command line accepted (a longer one is refused, not split).
    public static let maximumLineBytes = 1 << 20

    /// Runs one command (already split into words). Prints its errors; returns success.
    /// `!COMMAND` gives the host's shell `source`, the command's text as typed after its `!`
    /// (`tokenizeCommands`: the rest of its line), or else its words, each quoted.
    public func run(words: [Word], source: Substring? = nil) -> Bool {
        guard let first = words.first else { return true }
        if Self.isHostCommand(words) {
            return runOnHost(source.map { String($0.drop { $0 != "!" }.dropFirst()) }
                             ?? ([String(first.text.dropFirst())] + words.dropFirst().map { HostShell.quoted($0.text) }).joined(separator: " "))
        }
        guard let spec = CommandTable.find(first.text) else {
            let near = CommandTable.nearest(to: first.text)
            if !near.isEmpty {
                error(first.text, "unknown command", hint: "did you mean \(CommandTable.alternatives(near))? ('help' lists the commands)")
            } else {
                error(first.text, "unknown command", hint: "'help' lists the commands")
            }
            return false
        }
        Session.interruptRequested = 0
        runningCommand = (spec.name, first.text)
        defer {
            for warning in vault.takeWarningsSinceOpen() { self.warning(spec.name, warning) }
            runningCommand = nil
            settleCurrentFolder(after: spec.name)
            out.flush()
        }
        let generationBefore = vault.generation
        do {
            if spec.asksForHelp(Array(words.dropFirst())) {
                try Maintenance.help(self, ParsedArguments(command: "help", operands: [Word(quoted: spec.name)]))
                return true
            }
            var arguments = try spec.parse(Array(words.dropFirst()))
            arguments.typedName = first.text
            try spec.run(self, arguments)
            return true
        } catch is Reported {
            // Already reported, operand by operand.
        } catch let failure as CommandFailure {
            // The usage of the alias typed (`put`, `mget`), not of the command it names.
            let usage = CommandTable.usage(of: spec.name)
            error(spec.name, failure.message, hint: failure.hint == usage ? CommandTable.usage(of: first.text) : failure.hint)
        } catch is Cancelled {
            out.flush()
            err.line("narnia: \(located)\(asTyped(spec.name)): interrupted")
            err.flush()
        } catch let e as SystemError where e.isDiskFull && (e.path.map(isInStore) ?? true) {
            // A store file's name says nothing to the user (review AE). A command of several
            // operands saves each on its own: what it did before the disk filled stays done,
            // and running it again would fail on that (review CH-2).
            error(spec.name, "the disk holding the vault is full",
                  hint: vault.generation == generationBefore ? "free space on it, then run the command again"
                      : "part of the command was done before the disk filled, and is kept: free space on it, look at what is there, then do the rest")
        } catch {
            self.error(spec.name, describe(error))
        }
        hintAtShellSyntax(in: words)
        return false
    }

    /// After a failed command whose line holds a bare `|`, `>`, `>>` or `<` (`ls | head`,
    /// which looked for a file `|`), says that the vault shell has none of them (review AX7).
    private func hintAtShellSyntax(in words: [Word]) {
        guard let bare = words.dropFirst().first(where: { ["|", ">", ">>", "<", "2>"].contains($0.text) && !$0.quotedScalars.contains(true) }) else { return }
        err.messageLine("narnia: hint: the vault shell has no pipes or redirections ('\(bare.text)'): run narnia -c 'COMMAND' | ... from your own shell")
        err.flush()
    }

    /// True for a path inside the vault's store.
    private func isInStore(_ path: String) -> Bool {
        path.utf8.starts(with: (vault.directory.endsWithSlash ? vault.directory : vault.directory + "/").utf8)
    }

    /// Runs `command` with the host's shell (`!`); prints why it failed. Returns success.
    private func runOnHost(_ command: String) -> Bool {
        do {
            try HostShell.run(self, command: command)
            return true
        } catch let failure as CommandFailure {
            error("!", failure.message, hint: failure.hint)
        } catch is Cancelled {
            out.flush()
            err.line("narnia: \(located)!: interrupted")
            err.flush()
        } catch {
            self.error("!", describe(error))
        }
        return false
    }

    /// Runs one line of batch input with sftp's rules: blank lines and `#` comments do nothing;
    /// a command starting with a bare `-` (the line's first, or one after a `;`) may fail without
    /// counting, and excuses only itself. Returns false when a counted command failed; the rest
    /// of the line runs only with `keepGoing`.
    public func runBatchLine(_ line: String, keepGoing: Bool = false) -> Bool {
        var text = Substring(line)
        while let c = text.first, c == " " || c == "\t" { text = text.dropFirst() }
        if text.isEmpty || text.hasPrefix("#") { return true }
        var mayFail = false
        if text.hasPrefix("-") {
            mayFail = true
            text = text.dropFirst()
        }
        let commands: [(words: [Word], source: String)]
        do {
            commands = try tokenizeCommands(String(text), numberedItems: HiddenNames.numbersTypedBare(self))
        } catch {
            // A host command whose quote or backslash the next lines would finish: they may be
            // the host's, and a run of lines ends here (review CR-3: `!echo cleaning \` then
            // `rm -r photos` removed the vault's photos, exit 0 with a `-` mark).
            let hostMayGoOn = !interactive && Self.mayBeginHostCommand(text)
            if hostMayGoOn { runMustStop = true }
            out.flush()
            err.line("narnia: error: \(located)\(describe(error))\(hostMayGoOn ? "; a host command ('!') may go on in the lines after it, which are not run" : "")")
            if case .unterminatedQuote(let quote, _) = error {
                // Tab completes a folder inside a quote without closing it (review AX7).
                let mark = quote == .double ? "\"" : "'"
                err.messageLine("narnia: hint: close it with a \(mark)\(interactive ? " (Tab leaves the quote open after a folder, for the path to go on)" : "")")
            }
            err.flush()
            return mayFail && !hostMayGoOn
        }
        return commands.count > 1 ? readingNumbersAsTyped { run(commands, mayFail: mayFail, keepGoing: keepGoing) }
                                  : run(commands, mayFail: mayFail, keepGoing: keepGoing)
    }

    /// Runs the commands of one line (see `runBatchLine`), their numbers read as typed (BQ-1).
    private func run(_ commands: [(words: [Word], source: String)], mayFail: Bool, keepGoing: Bool) -> Bool {
        // `!COMMAND` goes last on its line, its text given to the host's shell as typed. One
        // followed by `;` and more is refused, nothing run: whether that `;` is the host's or
        // ends the host command cannot be told. Review CN-1: a line beginning with `!` gave sh
        // the whole rest of it, so `!ls; rm -r photos` removed the host's photos, not the
        // vault's; review CO-1: cut at the `;`, `!{ echo; rm -r photos; }` removed the vault's.
        if commands.indices.dropLast().contains(where: { Self.isHostCommand($0 == 0 ? commands[$0].words : Self.withoutMayFailMark(commands[$0].words).words) }) {
            return refuseHostLine("a host command ('!') is followed by ';' and more on its line: whether that ';' is the host's or ends the host command is unclear",
                                  hint: "put the host command last on its line; for a ';' of the host's ({ …; }, $(…), for …; do …) or several host commands, use !sh -c '…'")
        }
        var ok = true
        for (index, (typed, source)) in commands.enumerated() {
            if exitRequested || Session.interruptRequested != 0 { break }
            let (words, excused) = index == 0 ? (typed, mayFail) : Self.withoutMayFailMark(typed)
            let host = Self.isHostCommand(words)
            // At the prompt under hide-names `#2024` is a number, not a comment: one that names
            // nothing stops the line before the command holding it runs, for it was most likely
            // meant as a comment, and `rm -rf scratch  #2024 photos` would otherwise remove
            // photos (BI-4). Each command's numbers are judged in the folder it runs in, after
            // the `cd`s before it (review BQ-2: judged where the line began, `cd sub; rm -rf
            // scratch #5 photos` ran in sub).
            if !host, let number = HiddenNames.numberNamingNothing(in: typed, s: self) {
                out.flush()
                err.line("narnia: error: \(located)\(number): names no item here (with hide-names on, a word beginning with '#' and a digit names an item); \(index == 0 ? "nothing was run" : "the rest of the line was not run")")
                err.messageLine("narnia: hint: to write a comment, put a space after the '#'")
                err.flush()
                return index == 0 && mayFail
            }
            if !run(words: words, source: host ? Substring(source) : nil) {
                if excused {
                    if let name = words.first.flatMap({ CommandTable.find($0.text)?.name }), name == "import" || name == "export" {
                        excusedTransferFailed = true
                    }
                } else {
                    ok = false
                    if !keepGoing { break }
                }
            }
        }
        return ok
    }

    /// Refuses a line holding a host command, `why`: nothing on it runs, and a run of lines
    /// (`-c`, `-b`) ends there (`runMustStop`). Returns false.
    private func refuseHostLine(_ why: String, hint: String) -> Bool {
        out.flush()
        err.line("narnia: error: \(located)\(why); nothing was run\(interactive ? "" : ", nor will the lines after it be")")
        err.messageLine("narnia: hint: \(hint)")
        err.flush()
        runMustStop = true
        return false
    }

    /// True when a line that does not split into words (a quote or a backslash left open) has
    /// a `!` where a command begins: at its start, or after a `;` (review CS-4: any `!` ended a
    /// run, `-mkdir "Hello!` too).
    static func mayBeginHostCommand(_ text: Substring) -> Bool {
        text.split(separator: ";", omittingEmptySubsequences: false).contains { part in
            part.drop { $0 == " " || $0 == "\t" || $0 == "-" }.hasPrefix("!")
        }
    }

    /// True for `!COMMAND` (a `!` not quoted).
    static func isHostCommand(_ words: [Word]) -> Bool {
        guard let first = words.first else { return false }
        return first.text.hasPrefix("!") && first.quotedScalars.first != true
    }

    /// A command after a `;` with its own `-` mark taken off its first word, and whether it had
    /// one. A quoted `'-x'` is no mark (it names a command `-x`, which does not exist).
    static func withoutMayFailMark(_ words: [Word]) -> (words: [Word], mayFail: Bool) {
        guard let first = words.first, first.looksLikeFlag else { return (words, false) }
        let rest = Word(text: String(first.text.unicodeScalars.dropFirst()), quotedScalars: Array(first.quotedScalars.dropFirst()))
        return (rest.text.isEmpty ? Array(words.dropFirst()) : [rest] + words.dropFirst(), true)
    }
}

import NarniaStore

/// How a run of commands ended.
public enum RunStatus: Equatable {
    case success
    case failure
}

extension Session {
    /// The longest command line accepted (a longer one is refused, not split).
    public static let maximumLineBytes = 1 << 20

    /// Runs one command (already split into words). Prints its errors; returns success.
    public func run(words: [Word]) -> Bool {
        guard let first = words.first else { return true }
        guard let spec = CommandTable.find(first.text) else {
            error(first.text, "unknown command", hint: "type 'help' for the list of commands")
            return false
        }
        Session.interruptRequested = 0
        defer {
            settleCurrentFolder()
            out.flush()
        }
        do {
            let arguments = try spec.parse(Array(words.dropFirst()))
            try spec.run(self, arguments)
            return true
        } catch is Reported {
            return false
        } catch let failure as CommandFailure {
            error(spec.name, failure.message, hint: failure.hint)
        } catch is Cancelled {
            out.flush()
            err.line("narnia: \(spec.name): interrupted")
            err.flush()
        } catch {
            self.error(spec.name, describe(error))
        }
        return false
    }

    /// Runs one line of batch input with sftp's rules: blank lines and `#` comments do nothing;
    /// a line starting with `-` may fail without counting. Returns false when a counted
    /// command failed; the rest of the line runs only with `keepGoing`.
    public func runBatchLine(_ line: String, keepGoing: Bool = false) -> Bool {
        var text = Substring(line)
        while let c = text.first, c == " " || c == "\t" { text = text.dropFirst() }
        if text.isEmpty || text.hasPrefix("#") { return true }
        var mayFail = false
        if text.hasPrefix("-") {
            mayFail = true
            text = text.dropFirst()
        }
        let commands: [[Word]]
        do {
            commands = try tokenize(String(text))
        } catch {
            out.flush()
            err.line("narnia: error: \(describe(error))")
            err.flush()
            return mayFail
        }
        var ok = true
        for words in commands {
            if exitRequested || Session.interruptRequested != 0 { break }
            if !run(words: words) && !mayFail {
                ok = false
                if !keepGoing { break }
            }
        }
        return ok
    }
}

import NarniaShell

/// The command line (INTERFACE.md, Invocation details; man narnia, SYNOPSIS), parsed.
struct Options {
    enum Mode: Equatable {
        case cover                 // no subcommand
        case initialize            // init
        case enter                 // enter
        case commands(String)      // -c
        case batchFile(String)     // -b FILE (or -)
        case drop([String])        // drop ARGS… (no passphrase)
    }

    var mode: Mode = .cover
    var vault: String?
    var passphraseFile: String?
    var passphraseFD: Int32?
    var keepGoing = false
    /// `-v`: batch lines are echoed before they run.
    var verbose = false
    var showVersion = false
    var showHelp = false

    /// narnia's own long options, for the nearest to one mistyped.
    static let longOptions = ["--vault", "--passphrase-file", "--passphrase-fd", "--keep-going", "--verbose", "--version", "--help"]

    struct UsageError: Error, CustomStringConvertible {
        let description: String
        /// What to do instead, where there is better to say than "see narnia --help".
        var hint: String? = nil
    }

    /// Refuses options that would do nothing in the mode chosen (review CA-8: `narnia
    /// --passphrase-file F` on a terminal opened the Wardrobe, the file unread, without a word).
    /// `stdinIsTerminal` tells the Wardrobe and `enter` from commands piped in.
    func checkUse(stdinIsTerminal: Bool) throws {
        let runsCommands: Bool
        switch mode {
        case .commands, .batchFile: runsCommands = true
        case .cover, .enter: runsCommands = !stdinIsTerminal
        case .initialize, .drop: runsCommands = false
        }
        for (given, flag) in [(keepGoing, "--keep-going"), (verbose, "-v (--verbose)")] where given && !runsCommands {
            let dropsOwn = flag.hasPrefix("-v") && { if case .drop = mode { return true } else { return false } }()
            throw UsageError(description: "\(flag) goes with -c, -b or commands piped in, not here",
                             hint: dropsOwn ? "drop takes its own -v after the word drop: narnia drop -v FILE..." : nil)
        }
        if mode == .cover && stdinIsTerminal && (passphraseFile != nil || passphraseFD != nil) {
            throw UsageError(description: "\(passphraseFile != nil ? "--passphrase-file" : "--passphrase-fd") goes with init, enter, -c, -b or commands piped in, not with the wardrobe")
        }
    }

    /// Parses `arguments` (without the program name).
    static func parse(_ arguments: [String]) throws -> Options {
        var o = Options()
        var i = 0
        var modeSet = false
        func value(_ flag: String) throws -> String {
            i += 1
            guard i < arguments.count else { throw UsageError(description: "\(flag) needs a value") }
            return arguments[i]
        }
        func setMode(_ m: Mode) throws {
            if modeSet { throw UsageError(description: "choose one of init, enter, drop, -c and -b") }
            modeSet = true
            o.mode = m
        }
        while i < arguments.count {
            let arg = arguments[i]
            var flag = arg, inline: String?
            if arg.hasPrefix("--"), let eq = arg.firstIndex(of: "=") {
                flag = String(arg[..<eq])
                inline = String(arg[arg.index(after: eq)...])
            }
            // After `=` no shell expands `~`: it is expanded here, as it would be after a space
            // (review CA-2: `--vault=~/vault` made a vault in a folder named `~`).
            func v() throws -> String { try inline.map(Launcher.expandingTilde) ?? value(flag) }
            // A flag that takes no value refuses one (`--keep-going=no` turned it on: review AJ).
            if let inline, ["--keep-going", "--verbose", "--version", "--help"].contains(flag) {
                throw UsageError(description: "\(flag) takes no value, not '\(inline)'")
            }
            switch flag {
            case "--vault":
                // An empty value (`--vault "$UNSET"`) named the working directory (review AX2).
                let folder = try v()
                guard !folder.isEmpty else { throw UsageError(description: "--vault needs a folder, not an empty value") }
                o.vault = folder
            case "--passphrase-file": o.passphraseFile = try v()
            case "--passphrase-fd":
                let text = try v()
                guard let fd = Int32(text), fd >= 0 else { throw UsageError(description: "--passphrase-fd needs a descriptor number, not '\(text)'") }
                o.passphraseFD = fd
            case "--keep-going": o.keepGoing = true
            case "-v", "--verbose": o.verbose = true
            case "--version": o.showVersion = true
            case "--help", "-h": o.showHelp = true
            case "-c": try setMode(.commands(try value("-c")))
            case "-b": try setMode(.batchFile(try value("-b")))
            case "init": try setMode(.initialize)
            case "enter": try setMode(.enter)
            case "drop":
                // Everything after `drop` is the drop command's own.
                try setMode(.drop(Array(arguments[(i + 1)...])))
                i = arguments.count
                continue
            default:
                // A vault command given to narnia itself (`narnia ls`): how to run it (review CA-10).
                // A typo of a mode or an option: the nearest (review EU-7), as the shell says.
                let hint = CommandTable.find(arg) != nil && !arg.hasPrefix("-") ? "vault commands run inside the vault: narnia -c '\(arg) ...'"
                    : CommandTable.didYouMean(flag, among: arg.hasPrefix("-") ? Self.longOptions : ["init", "enter", "drop"])
                throw UsageError(description: arg.hasPrefix("-") ? "unknown option \(arg)" : "unknown command \(arg)", hint: hint)
            }
            i += 1
        }
        if o.passphraseFile != nil && o.passphraseFD != nil {
            throw UsageError(description: "give either --passphrase-file or --passphrase-fd, not both")
        }
        return o
    }

    static let usage = """
    usage: narnia [--vault DIR]                       the wardrobe
           narnia [--vault DIR] init                  create a vault
           narnia [--vault DIR] enter                 open the vault shell
           narnia [--vault DIR] -c 'CMD; CMD'         run commands, then exit
           narnia [--vault DIR] -b FILE               run a batch file (FILE may be -)
           narnia [--vault DIR] drop [-v|-q] FILE...  add files to the inbox, no passphrase
           narnia [--vault DIR] drop - NAME           the same, from standard input
           narnia [--vault DIR] drop --show-key       the key drops are sealed to
    options:
      --vault DIR               the store (default: $NARNIA_VAULT, else
                                ${XDG_DATA_HOME:-~/.local/share}/lining)
      --passphrase-file FILE    read the passphrase from the first line of FILE
      --passphrase-fd N         read the passphrase from the first line of descriptor N
      --keep-going              in -c/-b mode, go on after a failing command
      -v, --verbose             in -c/-b mode, echo each line before it runs (narnia> LINE)
      --version, -h, --help
    Inside the vault, type 'help' for the commands. See narnia(1).
    """
}

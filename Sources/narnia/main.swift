import Glibc
import NarniaCrypto
import NarniaShell
import NarniaStore
import NarniaSystem

// narnia: parse the command line, harden the process, unlock the vault, and hand the
// commands to the shell. Exit status: 0 ok, 1 a command failed, 2 usage, 3 auth / no vault.

// Run again as a viewer's guard, narnia is only that (`Processes.forkExecGuarded`).
Processes.becomeViewerGuardIfAsked()
Hardening.apply()
setlocale(LC_CTYPE, "")
// libedit reads keys in the locale's encoding: in the C locale (ssh without locale forwarding,
// cron, a container) it dropped every character beyond ASCII typed or pasted, and ran the rest
// (`rm résumé.txt` removed rsum.txt: review BN-1). There keys are read as UTF-8, narnia's
// names' encoding. Another encoding (Latin-1) is kept: its keys give lines that are not
// UTF-8, which narnia refuses whole (review BP-3). What the terminal can draw (glyphs) is
// still the user's locale's.
TerminalStyle.localeCodeset = String(cString: nl_langinfo(nl_item(CODESET)))
if TerminalStyle.localeCodeset == "ANSI_X3.4-1968" { setlocale(LC_CTYPE, "C.UTF-8") }
Signals.install()

// Swift decodes arguments lossily: a byte that is not UTF-8 would silently become U+FFFD and
// name another file, or another item. Narnia's names are UTF-8, so such an argument is refused.
// (`stride`: a process started with no arguments at all, not even its name, has an argc of 0.)
for index in stride(from: 1, to: Int(CommandLine.argc), by: 1) where CommandLine.unsafeArgv[index].map({ String(validatingCString: $0) == nil }) ?? false {
    Launcher.fail("argument \(index) is not valid UTF-8 (names and paths are given in UTF-8)", status: 2)
}

let options: Options
do {
    options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    Launcher.fail("\(error)", hint: (error as? Options.UsageError)?.hint ?? "see narnia --help", status: 2)
}
// The arguments, read, are wiped where the kernel shows them to every user of the machine
// (`/proc/PID/cmdline`, `ps`): a `-c` script and the names given to `drop` stay only in this
// process's memory (review AQ). Only for the moment before this line are they visible.
for index in stride(from: 1, to: Int(CommandLine.argc), by: 1) {
    if let argument = CommandLine.unsafeArgv[index] { memset(argument, 0, strlen(argument)) }
}
/// Prints `text` and exits 0, or 1 when it could not be written (review CA-7: `--version >
/// /dev/full` exited 0); a reader gone (`| head`) is no failure, as for every run.
func printAndExit(_ text: String) -> Never {
    if StandardDescriptors.outputWasClosed {   // review DD-4, as for every other output (DC-7)
        Launcher.say("narnia: error: standard output is closed")
        exit(1)
    }
    fputs(text + "\n", StandardStream.output)
    if fflush(StandardStream.output) != 0, errno != EPIPE {
        Launcher.say("narnia: error: standard output: \(SystemError.reason(for: errno))")
        exit(1)
    }
    exit(0)
}
if options.showHelp { printAndExit(Options.usage) }
if options.showVersion { printAndExit("narnia \(Launcher.version)") }
do { try options.checkUse(stdinIsTerminal: isatty(0) == 1) } catch {
    Launcher.fail("\(error)", hint: (error as? Options.UsageError)?.hint ?? "see narnia --help", status: 2)
}
if FileSystem.currentDirectoryIsUndecodable {
    Launcher.fail("the current folder's path is not valid UTF-8 (read as text, it would name another folder)",
                  hint: "run narnia from a folder whose path is UTF-8", status: 2)
}

var status = Launcher(options: options).run()
Signals.leaveViewerScreen()
// Output that could not be written (a full disk, `> /dev/full`) fails the run; a reader gone
// (`| head`) does not.
if let code = Output.standardOutputFailure, status == 0 {
    Launcher.say("narnia: error: standard output\(StandardDescriptors.outputWasClosed ? " is closed" : ": \(SystemError.reason(for: code))")")
    status = 1
}
exit(status)

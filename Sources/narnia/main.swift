import Glibc
import NarniaCrypto
import NarniaShell
import NarniaStore

// narnia: parse the command line, harden the process, unlock the vault, and hand the
// commands to the shell. Exit status: 0 ok, 1 a command failed, 2 usage, 3 auth / no vault.

Hardening.apply()
setlocale(LC_CTYPE, "")
Signals.install()

let options: Options
do {
    options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
} catch {
    Launcher.fail("\(error)", hint: "see narnia --help", status: 2)
}
if options.showHelp { print(Options.usage); exit(0) }
if options.showVersion { print("narnia \(Launcher.version)"); exit(0) }

exit(Launcher(options: options).run())

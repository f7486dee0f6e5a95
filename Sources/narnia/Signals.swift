import Glibc
import NarniaShell

/// Signal handling: SIGINT asks the running command to stop (the shell polls the flag);
/// SIGPIPE is ignored so a closed pipe becomes an ordinary write error.
enum Signals {
    static func install() {
        signal(SIGPIPE, SIG_IGN)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in Session.interruptRequested = 1 }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        sigaction(SIGINT, &action, nil)
    }
}

import Glibc
import NarniaCrypto
import NarniaShell

/// Signal handling.
///
/// - SIGINT sets `Session.interruptRequested`: long commands poll it and stop cleanly; at the
///   prompt it abandons the line (the read is interrupted: no `SA_RESTART`).
/// - SIGTERM and SIGHUP record the signal, ask the running command to stop the same way, and
///   wake a watcher thread. The watcher kills the viewers at once (a shell waiting for one is
///   then free), and gives the main thread `grace` to end the session normally, which releases
///   the vault and so wipes its keys (`sodium_free`). If the main thread does not finish in
///   time, the watcher restores the terminal and ends the process with `_exit(128 + signal)`;
///   the keys' pages are locked (`mlock`), never swapped, and go with the process.
/// - SIGPIPE is ignored so that a closed pipe becomes an ordinary write error.
///
/// The handlers only store integers and `write(2)` one byte: nothing that is not
/// async-signal-safe runs in them.
enum Signals {
    /// The SIGTERM or SIGHUP that asked the process to end; 0 while none has.
    nonisolated(unsafe) static var terminationSignal: Int32 = 0
    nonisolated(unsafe) private static var wakeWrite: Int32 = -1
    nonisolated(unsafe) private static var wakeRead: Int32 = -1
    nonisolated(unsafe) private static var savedTerminal = termios()
    nonisolated(unsafe) private static var terminalSaved = false
    /// How long the main thread has to end the session after SIGTERM or SIGHUP.
    static let graceMicroseconds: useconds_t = 2_000_000

    static func install() {
        signal(SIGPIPE, SIG_IGN)
        // Touch every global a handler uses, so that none is lazily initialised inside one.
        Session.interruptRequested = 0
        terminationSignal = 0
        if isatty(0) == 1 { terminalSaved = tcgetattr(0, &savedTerminal) == 0 }
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
            wakeRead = fds[0]
            wakeWrite = fds[1]
        }

        handle(SIGINT) { _ in Session.interruptRequested = 1 }
        handle(SIGTERM) { Signals.requestTermination($0) }
        handle(SIGHUP) { Signals.requestTermination($0) }

        // The watcher starts with these signals blocked, so that they always reach the main
        // thread and interrupt its reads.
        var block = sigset_t(), previous = sigset_t()
        sigemptyset(&block)
        for s in [SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGTSTP, SIGCONT, SIGQUIT] { sigaddset(&block, s) }
        pthread_sigmask(SIG_BLOCK, &block, &previous)
        if wakeRead >= 0 {
            var thread = pthread_t()
            _ = pthread_create(&thread, nil, { _ in Signals.watch(); return nil }, nil)
            pthread_detach(thread)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }

    /// The exit status the session should end with now (128 + the signal), or nil while no
    /// SIGTERM or SIGHUP has arrived.
    static func terminationStatus() -> Int32? {
        terminationSignal == 0 ? nil : 128 + terminationSignal
    }

    private static func handle(_ signal: Int32, _ handler: @convention(c) (Int32) -> Void) {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handler
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0 // no SA_RESTART: a blocking read returns EINTR
        sigaction(signal, &action, nil)
    }

    /// Runs in the handler: async-signal-safe only.
    private static func requestTermination(_ signal: Int32) {
        if terminationSignal == 0 { terminationSignal = signal }
        Session.interruptRequested = 1
        var byte: UInt8 = 1
        let saved = errno
        _ = write(wakeWrite, &byte, 1)
        errno = saved
    }

    /// The watcher thread: waits for SIGTERM or SIGHUP, kills the viewers, gives the main
    /// thread its grace, then ends the process.
    private static func watch() {
        var byte: UInt8 = 0
        while read(wakeRead, &byte, 1) != 1 {
            if errno != EINTR { return }
        }
        ChildProcesses.killAll()
        var waited: useconds_t = 0
        while waited < graceMicroseconds {
            usleep(50_000)
            waited += 50_000
        }
        if terminalSaved { _ = tcsetattr(0, TCSANOW, &savedTerminal) }
        Secret.wipeAllBeforeExit()
        _exit(128 + terminationSignal)
    }
}

import NarniaSystem
import Glibc
import Synchronization
import NarniaCrypto
import NarniaShell

/// Signal handling: one module, one watcher thread, one self-pipe, one saved terminal state.
///
/// - SIGINT sets `Session.interruptRequested`: long commands poll it and stop cleanly; at the
///   prompt it abandons the line (the read is interrupted: no `SA_RESTART`). A host command
///   in a process group of its own gets it too (`ChildProcesses.passOnInterrupt`).
/// - SIGTERM and SIGHUP record the signal, ask the running command to stop the same way, and
///   wake the watcher. The watcher kills the viewers at once (a shell waiting for one is then
///   free), and gives the main thread `grace` to end the session normally, which releases the
///   vault and so wipes its keys (`sodium_free`). If the main thread does not finish in time,
///   the watcher restores the terminal and ends the process with `_exit(128 + signal)`.
/// - SIGQUIT, the panic key (Ctrl-\, the terminal's QUIT character), once `enablePanicKey()`
///   has run on a terminal (before that, and without a terminal, it ends the process as
///   SIGTERM does): the watcher kills the viewers, clears the screen and scrollback,
///   restores the terminal, asks the shell to stop and interrupts the main thread, whose
///   unwinding releases the session and wipes every key; `finishPanic` then exits. If the main
///   thread cannot unwind within a second (blocked in a question), the watcher wipes every
///   secret and exits itself. Viewers run in the shell's own process group (see `Job`), so the
///   key reaches the shell at its prompts and while any viewer runs.
/// - SIGPIPE is ignored so that a closed pipe becomes an ordinary write error; SIGIO, which
///   signals a lease break, is ignored too.
///
/// The handlers only store integers and `write(2)` one byte: nothing that is not
/// async-signal-safe runs in them.
enum Signals {
    /// The SIGTERM or SIGHUP that asked the process to end; 0 while none has. Stored by a
    /// handler, read by the watcher and the main thread: a lock-free atomic word.
    static var terminationSignal: Int32 {
        get { termination.load(ordering: .relaxed) }
        set { termination.store(newValue, ordering: .relaxed) }
    }
    private static let termination = Atomic<Int32>(0)
    /// Set by the termination signal's handler when a job had the terminal then.
    private static let viewerHadTerminal = Atomic<Bool>(false)
    /// The session the panic key ends (weak: the main thread must be able to release it), set
    /// by the main thread and read by the watcher.
    static var session: Session? {
        get { sessionBox.withLock { $0.session } }
        set { sessionBox.withLock { $0.session = newValue } }
    }
    private struct WeakSession: Sendable { weak var session: Session? }
    private static let sessionBox = Mutex(WeakSession())
    /// The self-pipe's ends, made once by `install` before any handler or the watcher runs.
    private static let wakeWrite = Atomic<Int32>(-1)
    private static let wakeRead = Atomic<Int32>(-1)
    // Written once by `install` on the main thread before the watcher thread starts (thread
    // creation orders the writes before its reads), and only read afterwards: no lock needed.
    nonisolated(unsafe) private static var savedTerminal = termios()
    nonisolated(unsafe) private static var terminalSaved = false
    nonisolated(unsafe) private static var mainThread = pthread_self()
    /// Main thread only.
    nonisolated(unsafe) private static var panicKeyEnabled = false
    /// How long the main thread has to end the session after SIGTERM or SIGHUP.
    static let graceMicroseconds: useconds_t = 2_000_000

    private static let terminationByte: UInt8 = UInt8(ascii: "T")
    private static let panicByte: UInt8 = UInt8(ascii: "Q")

    static func install() {
        signal(SIGPIPE, SIG_IGN)
        signal(SIGIO, SIG_IGN)   // a lease break (import --move, `whileNoOneWrites`) must not end the program
        // Touch every global a handler uses, so that none is lazily initialised inside one.
        Session.interruptRequested = 0
        Session.terminationRequested = false
        Session.panicRequested = 0
        terminationSignal = 0
        viewerHadTerminal.store(false, ordering: .relaxed)
        viewerScreenLeft.store(false, ordering: .relaxed)
        _ = ChildProcesses.jobOnTerminal
        mainThread = pthread_self()
        if isatty(0) == 1 { terminalSaved = tcgetattr(0, &savedTerminal) == 0 }
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        wakeRead.store(fds[0], ordering: .relaxed)
        wakeWrite.store(fds[1], ordering: .relaxed)

        handle(SIGINT) { _ in
            Session.interruptRequested = 1
            let saved = errno
            ChildProcesses.passOnInterrupt()
            errno = saved
        }
        handle(SIGTERM) { Signals.requestTermination($0) }
        handle(SIGHUP) { Signals.requestTermination($0) }
        // Until the panic key is enabled, SIGQUIT ends the process like SIGTERM (status 131),
        // never through the Swift runtime's backtracer, which would print registers and
        // memory and offer a debugger.
        handle(SIGQUIT) { Signals.requestTermination($0) }
        // SIGUSR2 only interrupts a blocking read of the main thread (no SA_RESTART).
        handle(SIGUSR2) { _ in }

        // The watcher starts with every signal blocked, so that they always reach the main
        // thread and interrupt its reads.
        var all = sigset_t(), previous = sigset_t()
        sigfillset(&all)
        pthread_sigmask(SIG_SETMASK, &all, &previous)
        var thread = pthread_t()
        _ = pthread_create(&thread, nil, { _ in Signals.watch(); return nil }, nil)
        pthread_detach(thread)
        pthread_sigmask(SIG_SETMASK, &previous, nil)
    }

    /// The status a panic by the key ends with: 0 where a person works (the shell, the
    /// Wardrobe), 131 (128 + SIGQUIT) in a `-c` or `-b` run, whose commands did not all run —
    /// `narnia -c 'import --keep photos' && rm -r photos` must not go on. The `panic` command
    /// always ends with 0. Set before `enablePanicKey`.
    nonisolated(unsafe) static var panicKeyStatus: Int32 = 0
    private static let panicByKey: Int32 = 2

    /// Makes Ctrl-\ the panic key; on a terminal only.
    static func enablePanicKey() {
        guard !panicKeyEnabled, isatty(0) == 1, wakeWrite.load(ordering: .relaxed) >= 0 else { return }
        panicKeyEnabled = true
        handle(SIGQUIT) { _ in
            // The running command stops as for Ctrl-C, so that what it leaves behind (an
            // export's hidden partial file, on a file system without unnamed files) goes.
            Session.panicRequested = Signals.panicByKey
            Session.interruptRequested = 1
            Signals.wake(Signals.panicByte)
        }
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

    /// Runs in a handler: async-signal-safe only.
    private static func wake(_ byte: UInt8) {
        var b = byte
        let saved = errno
        _ = write(wakeWrite.load(ordering: .relaxed), &b, 1)
        errno = saved
    }

    /// Runs in the handler: async-signal-safe only.
    private static func requestTermination(_ signal: Int32) {
        if terminationSignal == 0 {
            // Noted now: the main thread may kill the viewer and wait for it (an interrupted
            // feed) before the watcher looks (review CX-3).
            if ChildProcesses.jobOnTerminal { viewerHadTerminal.store(true, ordering: .relaxed) }
            terminationSignal = signal
        }
        Session.terminationRequested = true
        Session.interruptRequested = 1
        wake(terminationByte)
    }

    /// The watcher thread: waits for a panic or a termination, and sees it through.
    private static func watch() {
        var byte: UInt8 = 0
        while true {
            let n = read(wakeRead.load(ordering: .relaxed), &byte, 1)
            // Only the bytes the handlers write mean anything (review CB-3).
            if n == 1 && (byte == terminationByte || byte == panicByte) { break }
            if n == 1 { continue }
            if n < 0 && errno == EINTR { continue }
            return
        }
        if byte == panicByte { panicFromWatcher() }
        ChildProcesses.killAll()
        leaveViewerScreen()
        var waited: useconds_t = 0
        while waited < graceMicroseconds {
            usleep(50_000)
            waited += 50_000
        }
        restoreTerminal()
        Secret.wipeAllBeforeExit()
        _exit(128 + terminationSignal)
    }

    /// After SIGTERM or SIGHUP: a viewer killed while it had the terminal leaves its screen (a
    /// page of plaintext) and modes behind, undone here (review CT-3), on a terminal only, and
    /// only when a job had it (review CX-4: after an interrupted `sync` the sequence moved the
    /// cursor). Once, by whichever comes first: the watcher, once it killed what runs, or the
    /// main thread about to exit, which may have killed the viewer itself (an interrupted
    /// feed) and would otherwise end the process before the watcher writes (review CX-3).
    static func leaveViewerScreen() {
        guard terminationSignal != 0, viewerHadTerminal.load(ordering: .relaxed), isatty(1) == 1,
              !viewerScreenLeft.exchange(true, ordering: .relaxed) else { return }
        Session.clearTerminal(Session.leaveViewerScreen)
        restoreTerminal()
    }
    private static let viewerScreenLeft = Atomic<Bool>(false)

    // MARK: The panic

    /// The visible part of a panic: viewers killed, screen and scrollback cleared, terminal
    /// back in the mode it had when the program started.
    static func stopViewersAndClear() {
        ChildProcesses.killAll()
        fflush(StandardStream.output)
        Session.clearTerminal()
        restoreTerminal()
    }

    private static func restoreTerminal() {
        if terminalSaved { _ = tcsetattr(0, TCSANOW, &savedTerminal) }
    }

    /// The shell is asked to stop before the viewers are killed, so that a command returning
    /// from a killed viewer draws no prompt; the main thread's read is interrupted until it
    /// ends the session (a read begun after one interruption would miss it). If it has not
    /// within a second, the watcher clears again — the line editor may have drawn and changed
    /// the terminal's mode since — and exits itself.
    private static func panicFromWatcher() -> Never {
        let hasSession = session.map { $0.requestExit(); return true } ?? false
        stopViewersAndClear()
        if hasSession {
            for _ in 0..<100 {
                _ = pthread_kill(mainThread, SIGUSR2)
                usleep(10_000)
            }
        }
        stopViewersAndClear()
        Secret.wipeAllBeforeExit()
        _exit(panicKeyStatus)
    }

    /// The end of every panic, on the main thread, once the session is released: clear once
    /// more (the line editor may have drawn since) and exit (`panicKeyStatus` after the key;
    /// after the `panic` command, the run's `status`: 1 when a command before it failed, as
    /// `exit` gives, not 0: review AX8).
    static func finishPanic(status: Int32 = 0) -> Never {
        stopViewersAndClear()
        Secret.wipeAllBeforeExit()
        _exit(Session.panicRequested == panicByKey ? panicKeyStatus : status)
    }
}

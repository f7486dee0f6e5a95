import Glibc

/// Descriptors 0–2 as the process found them. One that was closed (`cmd <&-`, a daemon's
/// job) gets `/dev/null` before anything else opens: a file opened later would take its
/// number, and what narnia reads or writes there would go to it (review CB-3: the signal
/// watcher's pipe became standard input, and `import -` waited on it for ever; as standard
/// error, the first warning ended the run with status 128). Which ones were closed is kept,
/// so that reading a closed standard input as content fails rather than reading nothing.
public enum StandardDescriptors {
    /// Set once, by `openClosed()`, before any other thread exists; read only afterwards.
    nonisolated(unsafe) private static var closedAtStart: Set<Int32> = []

    /// Puts `/dev/null` on each of descriptors 0–2 that is closed. Call first thing in `main`.
    public static func openClosed() {
        for fd: Int32 in 0...2 where fcntl(fd, F_GETFD) == -1 && errno == EBADF {
            closedAtStart.insert(fd)
            let opened = open("/dev/null", O_RDWR)
            if opened != fd && opened >= 0 { close(opened) }
        }
    }

    /// Whether standard input was closed when the process started (and is `/dev/null` now).
    public static var inputWasClosed: Bool { closedAtStart.contains(0) }

    /// Whether standard output was closed when the process started (and is `/dev/null` now):
    /// what is written there is lost, and the run must not report success (review DC-7:
    /// `narnia -c 'cat /a.txt' >&-` printed nothing and exited 0).
    public static var outputWasClosed: Bool { closedAtStart.contains(1) }
}

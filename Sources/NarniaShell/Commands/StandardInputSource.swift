import Glibc
import NarniaLanguage
import NarniaStore
import NarniaSystem

/// Standard input as the content of `import - NAME` and `drop - NAME`, read to its end.
///
/// Ctrl-C stops it: a read waiting for input is interrupted (SIGINT has no `SA_RESTART`), and
/// input that ends once the signal has come is not taken for the whole stream, for the same
/// Ctrl-C killed the program writing it (`pg_dump db | narnia -c 'import - db.sql'`): the end
/// seen is a cut, which was committed and reported as imported (review BG-1). A terminal's
/// Ctrl-D ends the input at once (it was asked for again after a short read, so it took two).
/// A standard input that was closed when narnia started is refused, as `cat <&-` refuses it:
/// it reads as `/dev/null` now, and went in as an empty item.
final class StandardInputSource {
    private let input = FileDescriptor.borrowing(0, name: "standard input")
    private var atEnd = false

    /// - Throws: `CommandFailure` when standard input was closed at start.
    init() throws {
        guard !StandardDescriptors.inputWasClosed else { throw CommandFailure("standard input is closed") }
    }

    /// Up to `count` bytes, fewer only at the end of the input.
    /// - Throws: `Cancelled` once SIGINT has come; `SystemError` when a read fails.
    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws -> Int {
        var done = 0
        while done < count && !atEnd {
            if Session.interruptRequested != 0 { throw Cancelled() }
            let n = Glibc.read(input.raw, buffer + done, count - done)
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw SystemError.current("read", input.path) }
            if n == 0 { atEnd = true } else { done += n }
        }
        if Session.interruptRequested != 0 { throw Cancelled() }
        return done
    }
}

import NarniaLanguage
import NarniaSystem
import Glibc
import NarniaKinds
import NarniaStore

/// `open PATH...`: shows items by kind (man narnia, open).
///
/// | kind | shown by |
/// | --- | --- |
/// | photo | chafa, fed on standard input, sized to the terminal |
/// | video | mpv: muted, no config, scripts, network or resume files, input from a memfd |
/// | document | text in `less -R`; PDF through `pdftotext - -` then `less`; others as hex |
/// | other | libmagic's description and a hex view in `less` |
///
/// A viewer set with `set viewer.KIND` or `set viewer.TYPE/SUBTYPE` replaces these. Plaintext
/// reaches helpers only through pipes or a memfd; nothing is written to a disk.
enum Viewing {
    /// The Debian package that provides each helper program, for the "not installed" hint.
    static let packages = ["chafa": "chafa", "mpv": "mpv", "pdftotext": "poppler-utils", "less": "less",
                           "xxd": "xxd", "ffmpeg": "ffmpeg", "sh": "dash"]

    static func open(_ s: Session, _ a: ParsedArguments) throws {
        guard !a.operands.isEmpty else { throw CommandFailure("missing path", hint: CommandTable.usage(of: "open")) }
        var items: [(VaultPath, Item)] = []
        for word in a.operands {
            for (path, id) in try s.existing(word) {
                guard let item = s.vault.item(id), !item.isFolder else {
                    throw CommandFailure("\(shownPath(s, path, id)): is a folder", hint: "'ls -g' shows a folder's thumbnails")
                }
                items.append((path, item))
            }
        }
        let stepping = items.count > 1 && s.interactive && isatty(0) == 1
        var index = 0
        var failures = 0
        while index < items.count, Session.interruptRequested == 0 {
            let (path, item) = items[index]
            do {
                try show(s, path, item)
            } catch is Cancelled {
                throw Cancelled()
            } catch {
                s.error("open", "\(shownPath(s, path, item.id)): \(describe(error))")
                failures += 1
            }
            if stepping {
                switch StepPrompt.ask(position: index + 1, of: items.count, err: s.err) {
                case .next: index += 1
                case .previous: index = max(0, index - 1)
                case .quit: index = items.count
                }
            } else {
                index += 1
            }
        }
        if failures > 0 { throw Reported() }
    }

    /// A path as messages may show it: `#N` labels while names are hidden.
    static func shownPath(_ s: Session, _ path: VaultPath, _ id: Identifier) -> String {
        s.shown(path, on: s.err)
    }

    /// Shows one file item: a configured viewer, else the kind's default.
    static func show(_ s: Session, _ path: VaultPath, _ item: Item) throws {
        guard let content = item.content else { return }
        try s.vault.checkHere(item)
        s.out.flush()
        let preferences = ViewingPreferences(s)
        if let command = preferences.viewer(mime: content.mime, kind: item.kind.name) {
            try runConfigured(s, item, command: command)
            return
        }
        do {
            switch item.kind {
            case .photo: try showPhoto(s, item)
            case .video: try playVideo(s, item)
            case .document:
                if Classifier.isText(mime: content.mime) {
                    try page(s) { fd in try feed(s, item, to: fd) }
                } else if content.mime == "application/pdf" {
                    try showPDF(s, item)
                } else {
                    try hexView(s, path, item)
                }
            case .other, .folder:
                try hexView(s, path, item)
            }
        } catch let e as SpawnFailure where e.missingProgram {
            missing(s, e.program)
            try hexView(s, path, item)
        }
    }

    /// Said once a session where viewers cannot run below a guard (`Processes.guardsAvailable`).
    private nonisolated(unsafe) static var warnedUnguarded = false

    /// A viewer that may start programs of its own (`ChildCommand.guarded`). Where guards
    /// cannot run, says so once: made only where one starts, so that an `open` that starts
    /// none (`open x | cat`, the hex view) says nothing (review AV).
    static func guardedCommand(_ s: Session, _ arguments: [String]) -> ChildCommand {
        if !Processes.guardsAvailable, !warnedUnguarded {
            warnedUnguarded = true
            s.warning("open", "viewers run without their guard: narnia cannot run itself again (/proc/self/exe is another program, as when started through the dynamic loader or an emulator); what a viewer starts could outlive narnia killed")
        }
        var command = ChildCommand(arguments)
        command.guarded = true
        return command
    }

    /// Says that a helper program is missing and which Debian package has it.
    static func missing(_ s: Session, _ program: String) {
        let package = packages[program] ?? program
        s.warning("open", "\(program) is not installed (Debian package: \(package)); showing the hex view")
    }

    // MARK: Feeding content

    /// Decrypts `item` into `fd`. A reader that went away (a pager the user quit) ends the
    /// feed quietly.
    static func feed(_ s: Session, _ item: Item, to fd: Int32) throws {
        do {
            try s.vault.readContent(of: item, observer: s.observer(progress: nil)) { p, n in try writeAll(fd, p, n) }
        } catch is ReaderGone {
        }
    }

    /// `/dev/null` for a child's standard input when the shell's is not a terminal (commands
    /// may arrive there: a viewer must not eat them).
    static func childInput() -> Int32? {
        isatty(0) == 1 ? nil : Glibc.open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    // MARK: The pager

    /// Runs `produce` into the pager (`less`, hardened, without `-R`) on a terminal, or straight
    /// into standard output otherwise. On a terminal, with or without `less`, what is shown
    /// passes `cat`'s filter (`SanitisingSink`): control characters, bidirectional overrides
    /// and escape sequences, colours and hyperlinks included, show as `.`.
    static func page(_ s: Session, produce: (Int32) throws -> Void) throws {
        s.out.flush()
        guard s.out.isTerminal else {
            try ignoringReaderGone { try produce(s.out.descriptor) }
            return
        }
        let pipe = try Pipe()
        let job = Job()
        var pager = guardedCommand(s, ["less"])
        pager.environment = pagerEnvironment
        pager.standardInput = pipe.readEnd
        do {
            try job.start(pager)
        } catch let e as SpawnFailure where e.missingProgram {
            s.warning("open", "less is not installed (Debian package: less); writing to the terminal")
            let sink = try SanitisingSink(target: s.out.descriptor)
            defer { sink.finish() }
            try ignoringReaderGone { try produce(sink.descriptor) }
            return
        }
        pipe.closeRead()
        defer { job.wait() }
        defer { pipe.closeWrite() }
        // less shows escape sequences and C1 controls as text, but passes a bidirectional
        // override as it is: what reaches it goes through `cat`'s filter first.
        let sink = try SanitisingSink(target: pipe.writeEnd)
        defer { sink.finish() }
        try ignoringReaderGone { try produce(sink.descriptor) }
    }

    /// `LESSSECURE=1` (no shell escapes, no editing, no log files), no history file, no input
    /// preprocessor that could write a temporary copy, and no `LESS` options (a `-R` there
    /// would pass the file's escape sequences to the terminal). No lesskey file, the user's or
    /// the system's: less reads the variables of its `#env` section before the environment
    /// (review CT-1: a `~/.lesskey` naming a history file wrote what was searched for in a
    /// vault document to it), and removed, these variables send less to `~/.lesskey`.
    static let pagerEnvironment: [String: String?] = [
        "LESSSECURE": "1", "LESSHISTFILE": "-", "LESSHISTSIZE": "0", "LESSOPEN": nil, "LESSCLOSE": nil, "LESS": nil,
        "LESSKEYIN": "/dev/null", "LESSKEY": "/dev/null", "LESSKEYIN_SYSTEM": "/dev/null", "LESSKEY_SYSTEM": "/dev/null",
        "LESSKEY_CONTENT": nil, "LESSEDIT": nil, "VISUAL": nil, "EDITOR": nil,
    ]

    static func ignoringReaderGone(_ body: () throws -> Void) throws {
        do { try body() } catch is ReaderGone {}
    }

    // MARK: Kinds

    /// A photo through chafa, sized to the terminal.
    static func showPhoto(_ s: Session, _ item: Item) throws {
        let (columns, rows) = TerminalSize.current()
        var arguments = ["chafa", "--animate=off", "--size=\(columns)x\(max(1, rows - 1))"]
        if !s.out.isTerminal { arguments += ["--format=symbols", "--colors=none"] }   // plain text into a pipe
        // From an in-memory file by its /proc path, as the grid does. Debian 12's chafa reads
        // some pictures from no file with a name (a JPEG without a JFIF or Exif segment, BMP,
        // TGA): those go through ffmpeg to PNG, and one neither can read fails the command.
        let content = try MemoryFile()
        try content.fill(from: s.vault, item: item, observer: s.observer(progress: nil))
        arguments.append(ChildCommand.procPath(ofExtra: 0))
        if try drawn(arguments, content, quiet: true) { return }
        guard let png = try Converter.pngFrame(of: content), try drawn(arguments, png, quiet: false) else {
            throw CommandFailure("chafa could not draw it")
        }
    }

    /// Runs chafa (`arguments`) on `picture` at descriptor 3, on the terminal; true when it
    /// drew it. With `quiet`, what chafa says on standard error is not shown.
    private static func drawn(_ arguments: [String], _ picture: MemoryFile, quiet: Bool) throws -> Bool {
        var chafa = ChildCommand(arguments)
        chafa.extra = [picture.fd]
        _ = lseek(picture.fd, 0, SEEK_SET)
        let input = childInput()
        let silence = quiet ? Glibc.open("/dev/null", O_WRONLY | O_CLOEXEC) : -1
        defer {
            if let input { close(input) }
            if silence >= 0 { close(silence) }
        }
        if let input { chafa.standardInput = input }
        if silence >= 0 { chafa.standardError = silence }
        let job = Job()
        try job.start(chafa)
        let status = job.wait()
        return status == 0 || status >= 128
    }

    /// The mpv arguments that keep a video private: audio muted at start; no config files,
    /// scripts, youtube-dl, sibling files, resume or watch-later files; no screenshots (an
    /// input map from a memfd unbinds them); a neutral title and no metadata on the terminal.
    static func mpvArguments(contentFD: Int32, inputConfPath: String, display: Bool) -> [String] {
        var arguments = [
            "mpv", "--no-config", "--mute=yes", "--ytdl=no", "--load-scripts=no", "--autoload-files=no",
            "--force-media-title=video", "--title=video", "--no-resume-playback", "--save-position-on-quit=no",
            "--watch-later-directory=/nonexistent", "--screenshot-directory=/nonexistent",
            "--input-conf=\(inputConfPath)", "--display-tags=", "--osd-playing-msg=", "--idle=no",
            "--keep-open=no", "--cache-on-disk=no", "--msg-level=all=no",
        ]
        if !display { arguments.append("--vo=tct") }
        arguments.append("fd://\(contentFD)")
        return arguments
    }

    /// Keys of mpv's default bindings that write files (screenshots, watch-later), unbound.
    static let mpvInputConf = """
        s ignore
        S ignore
        ctrl+s ignore
        alt+s ignore
        Q quit
        shift+q quit

        """

    /// True when a graphical display is reachable (X11 or Wayland).
    static var hasDisplay: Bool {
        for name in ["DISPLAY", "WAYLAND_DISPLAY"] {
            if let v = getenv(name), v.pointee != 0 { return true }
        }
        return false
    }

    /// A video in mpv, input from a memfd at fd 3 (`fd://3`), so seeking works.
    static func playVideo(_ s: Session, _ item: Item) throws {
        guard Job.which("mpv") != nil else { throw SpawnFailure(program: "mpv", code: ENOENT) }
        let video = try MemoryFile()
        try video.fill(from: s.vault, item: item, observer: s.observer(progress: nil))
        let inputConf = try MemoryFile(bytes: Array(mpvInputConf.utf8))
        var mpv = guardedCommand(s, mpvArguments(contentFD: 3, inputConfPath: ChildCommand.procPath(ofExtra: 1), display: hasDisplay))
        mpv.extra = [video.fd, inputConf.fd]
        let input = childInput()
        defer { if let input { close(input) } }
        mpv.standardInput = input
        let job = Job()
        try job.start(mpv)
        let status = job.wait()
        if status != 0 && status < 128 { s.warning("open", "mpv exited with status \(status)") }
    }

    /// A PDF's text: `pdftotext - -` reading standard input, into the pager.
    static func showPDF(_ s: Session, _ item: Item) throws {
        guard Job.which("pdftotext") != nil else { throw SpawnFailure(program: "pdftotext", code: ENOENT) }
        try page(s) { sink in
            let input = try Pipe()
            let job = Job(takeTerminal: false)
            var converter = ChildCommand(["pdftotext", "-q", "-layout", "-", "-"])
            converter.standardInput = input.readEnd
            converter.standardOutput = sink
            try job.start(converter)
            input.closeRead()
            defer { job.wait() }
            defer { input.closeWrite() }
            try feed(s, item, to: input.writeEnd)
        }
    }

    /// libmagic's description, then the hex view, in the pager.
    static func hexView(_ s: Session, _ path: VaultPath, _ item: Item) throws {
        let head = (try? s.vault.readPrefix(of: item, limit: 1 << 20)) ?? []
        let description = head.withUnsafeBytes { s.classifier?.describe($0) } ?? "data"
        let name = HiddenNames.active(s) ? HiddenNames.label(of: item, in: s.vault) : s.shown(path, on: s.out)   // review DM-4: the script form off a terminal
        let header = "\(name): \(terminalSafe(description))\ntype: \(item.content?.mime ?? "")\nsize: \(item.size) bytes\n\n"
        try page(s) { fd in
            try Array(header.utf8).withUnsafeBytes { try writeAll(fd, $0.baseAddress!, $0.count) }
            let formatter = HexFormatter()
            do {
                try s.vault.readContent(of: item, observer: s.observer(progress: nil)) { p, n in
                    let text = formatter.lines(UnsafeRawBufferPointer(start: p, count: n))
                    try Array(text.utf8).withUnsafeBytes { if $0.count > 0 { try writeAll(fd, $0.baseAddress!, $0.count) } }
                }
            } catch is ReaderGone { return }
            let tail = formatter.finish()
            try Array(tail.utf8).withUnsafeBytes { if $0.count > 0 { try writeAll(fd, $0.baseAddress!, $0.count) } }
        }
    }

    /// A configured viewer: `/bin/sh -c COMMAND`. With `%s`, the command gets the memfd's
    /// `/proc/self/fd/3` path (each `%s` replaced, the rest untouched); without, the content
    /// on its standard input.
    static func runConfigured(_ s: Session, _ item: Item, command: String) throws {
        let job = Job()
        if command.contains("%s") {
            let file = try MemoryFile()
            try file.fill(from: s.vault, item: item, observer: s.observer(progress: nil))
            var viewer = guardedCommand(s, ["/bin/sh", "-c", command.replacingAll("%s", with: ChildCommand.procPath(ofExtra: 0))])
            viewer.extra = [file.fd]
            let input = childInput()
            defer { if let input { close(input) } }
            viewer.standardInput = input
            try job.start(viewer)
            let status = job.wait()
            if status != 0 { throw CommandFailure("the viewer '\(command)' failed (exit status \(status))") }
        } else {
            let pipe = try Pipe()
            var viewer = guardedCommand(s, ["/bin/sh", "-c", command])
            viewer.standardInput = pipe.readEnd
            try job.start(viewer)
            pipe.closeRead()
            do {
                try feed(s, item, to: pipe.writeEnd)
            } catch {
                pipe.closeWrite()
                job.kill()
                job.wait()
                throw error
            }
            pipe.closeWrite()
            let status = job.wait()
            if status != 0 && status != 128 + SIGPIPE {
                throw CommandFailure("the viewer '\(command)' failed (exit status \(status))")
            }
        }
    }
}

extension String {
    /// Every occurrence of `target` replaced by `replacement`.
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = ""
        var rest = Substring(self)
        while let range = rest.range(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

/// Writing to a terminal without a pager: a thread copies a pipe into the terminal through a
/// `TerminalTextFilter`, so content cannot drive it.
final class SanitisingSink: @unchecked Sendable {
    // Sendable: the copying thread reads only `pipe.readEnd` and `target`, both set before it
    // starts; `thread` is written and joined by the thread that made the sink.
    private let pipe: Pipe
    private let target: Int32
    private var thread = pthread_t()

    /// Starts the copying thread; write into `descriptor`, then call `finish`.
    init(target: Int32) throws {
        pipe = try Pipe()
        self.target = target
        let box = Unmanaged.passRetained(self).toOpaque()
        guard pthread_create(&thread, nil, { arg in
            let sink = Unmanaged<SanitisingSink>.fromOpaque(arg!).takeRetainedValue()
            sink.copy()
            return nil
        }, box) == 0 else {
            Unmanaged<SanitisingSink>.fromOpaque(box).release()
            throw SystemError(code: errno, operation: "pthread_create")
        }
    }

    var descriptor: Int32 { pipe.writeEnd }

    /// Closes the write end and waits for the copy to drain.
    func finish() {
        pipe.closeWrite()
        pthread_join(thread, nil)
    }

    private func copy() {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var filter = TerminalTextFilter()
        let out = FileDescriptor.borrowing(target, name: "the terminal")
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(pipe.readEnd, $0.baseAddress!, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { try? out.writeAll(filter.finish()); break }
            // A write that fails (the terminal gone) ends the copy.
            guard (try? out.writeAll(buffer.withUnsafeBytes { filter.filter(UnsafeRawBufferPointer(rebasing: $0[..<n])) })) != nil else { break }
        }
        pipe.closeRead()
    }
}

import Glibc

/// Helper programs run on a decrypted file held in memory, which they read as descriptor 3 by
/// its `/proc` path (`ChildCommand.procPath(ofExtra:)`): nothing of it is written to disk.
enum Converter {
    /// Runs `arguments` with `input` at descriptor 3 and standard error silenced; returns its
    /// standard output, or nothing when it fails.
    static func output(_ arguments: [String], input: MemoryFile) throws -> [UInt8] {
        let output = try Pipe()
        let quiet = Glibc.open("/dev/null", O_RDWR | O_CLOEXEC)
        defer { if quiet >= 0 { close(quiet) } }
        var command = ChildCommand(arguments)
        command.extra = [input.fd]
        command.standardOutput = output.writeEnd
        command.standardInput = quiet
        command.standardError = quiet
        _ = lseek(input.fd, 0, SEEK_SET)
        let job = Job(takeTerminal: false)
        try job.start(command)
        output.closeWrite()
        let bytes = readAll(output.readEnd)
        let status = job.wait()
        return status == 0 ? bytes : []
    }

    /// One frame of `input` as PNG, made by ffmpeg, `seconds` in (a video's poster frame) and
    /// scaled to `width` when given; nil when ffmpeg is missing or cannot read it. For a
    /// picture, this is how one that chafa cannot read from a file without a name gets drawn:
    /// a JPEG without a JFIF or Exif segment, BMP, TGA, PCX.
    static func pngFrame(of input: MemoryFile, at seconds: String? = nil, width: Int? = nil) throws -> MemoryFile? {
        guard Job.which("ffmpeg") != nil else { return nil }
        var arguments = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error"]
        if let seconds { arguments += ["-ss", seconds] }
        arguments += ["-i", ChildCommand.procPath(ofExtra: 0), "-frames:v", "1"]
        if let width { arguments += ["-vf", "scale=\(width):-2"] }
        arguments += ["-f", "image2pipe", "-vcodec", "png", "-"]
        let png = try output(arguments, input: input)
        return png.isEmpty ? nil : try MemoryFile(bytes: png)
    }
}

extension String {
    /// The text of a C buffer up to its first NUL (all of it if there is none); invalid UTF-8
    /// is repaired, as `String(cString:)` does.
    public init(nulTerminated buffer: [CChar]) {
        self = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

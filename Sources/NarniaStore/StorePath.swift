/// A path relative to a store, compared byte for byte. Swift's `String` equality is canonical
/// equivalence, so `café` spelled NFC and spelled NFD are one string; but a file system (and
/// rclone) holds them as two files, as sync engines on two systems can name two copies of a
/// journal (review AF). Tables of store files are keyed by this, never by the string.
public struct StorePath: Hashable, Sendable, CustomStringConvertible {
    public let text: String

    public init(_ text: String) {
        self.text = text
    }

    public var description: String { text }

    public static func == (a: StorePath, b: StorePath) -> Bool {
        a.text.utf8.elementsEqual(b.text.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        for byte in text.utf8 { hasher.combine(byte) }
    }
}

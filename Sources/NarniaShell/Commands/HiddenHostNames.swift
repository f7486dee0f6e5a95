/// The hidden names narnia gives host files while it works on them — an export's file not yet
/// in place (`.narnia-partial-…`), an original being removed by `import --move`
/// (`.narnia-removing-…`): a prefix, then lowercase hex digits. Only a name of exactly that form
/// is taken for one; a user's own file that merely begins so is not (review EY-1).
enum HiddenHostName {
    /// True when `name` is `prefix` followed by a number of lowercase hex digits in `digits`.
    static func matches(_ name: String, prefix: String, digits: ClosedRange<Int>) -> Bool {
        guard name.hasPrefix(prefix) else { return false }
        let rest = name.utf8.dropFirst(prefix.utf8.count)
        return digits.contains(rest.count) && rest.allSatisfy { "0123456789abcdef".utf8.contains($0) }
    }
}

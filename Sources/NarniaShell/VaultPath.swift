import NarniaLanguage

/// An absolute path inside the vault: the language's path in a tree, resolved against the
/// vault's folders (`Session.resolve`).
public typealias VaultPath = TreePath

import NarniaStore
import NarniaSystem
import NarniaLanguage

/// The settings `set` knows, with their values and defaults. Values live encrypted in the
/// vault's journal.
public struct SettingSpec: Sendable {
    public let key: String
    /// The accepted values; empty when any text goes.
    public let values: [String]
    public let defaultValue: String
    public let help: String
}

public enum Settings {
    /// Every setting: the vault's own here, the viewers' in `Viewing/`.
    public static let all: [SettingSpec] = vaultSettings + viewingSettings

    static let vaultSettings: [SettingSpec] = [
        SettingSpec(key: "remove-originals", values: ["on", "off"], defaultValue: "off",
                    help: "remove each imported original once its vault copy is committed (as import --move)"),
        SettingSpec(key: "inbox", values: [], defaultValue: "/Inbox",
                    help: "the vault folder that files dropped with 'narnia drop' are adopted into"),
    ]

    /// Every key, with its values where they are few, for `help set` and the hint after an
    /// unknown key: `remove-originals (on|off), inbox, …, viewer.TYPE/SUBTYPE`.
    public static var keyList: String {
        (all.map { $0.values.isEmpty ? $0.key : "\($0.key) (\($0.values.joined(separator: "|")))" }
            + ["viewer.TYPE/SUBTYPE"]).joined(separator: ", ")
    }

    /// The setting `key`, including the per-MIME-type viewer keys (`viewer.image/png`).
    public static func find(_ key: String) -> SettingSpec? { all.first { $0.key == key } ?? viewerSetting(forKey: key) }
}

extension Maintenance {
    static func set(_ s: Session, _ a: ParsedArguments) throws {
        switch a.operands.count {
        case 0:
            // On a terminal an unset setting says so, with its default (an empty viewer
            // command means narnia's own choice); scripts get `KEY VALUE` lines, `KEY` alone
            // for an empty value (no trailing space). One line each, whatever a value holds
            // (review BP-7: a line feed in one printed a line that read as another setting).
            for spec in Settings.all {
                if let value = s.vault.settings[spec.key] {
                    s.out.messageLine("\(spec.key) \(value)")
                } else if s.out.isTerminal {
                    s.out.line("\(spec.key) \(spec.defaultValue.isEmpty ? "(not set: narnia's own choice)" : "\(spec.defaultValue) (not set: the default)")")
                } else {
                    s.out.line(spec.defaultValue.isEmpty ? spec.key : "\(spec.key) \(spec.defaultValue)")
                }
            }
            for (key, value) in s.vault.settings.sorted(by: { $0.key < $1.key })
            where Settings.all.first(where: { $0.key == key }) == nil && Settings.viewerSetting(forKey: key) != nil {
                s.out.messageLine("\(key) \(value)")
            }
        case 1:
            let typed = a.operands[0].text
            guard let spec = Settings.find(typed) else { throw unknownSetting(typed) }
            s.out.messageLine(s.vault.settings[spec.key] ?? spec.defaultValue)
        case 2:
            let typed = a.operands[0].text, value = a.operands[1].text
            // A key an earlier build took and this one refuses (review DA-4: `viewer.*/*`) can
            // still be cleared.
            if value.isEmpty, Settings.find(typed) == nil, s.vault.settings[typed] != nil {
                try s.vault.setSetting(typed, nil)
                return
            }
            guard let spec = Settings.find(typed) else { throw unknownSetting(typed) }
            let key = spec.key   // a viewer's MIME type in lower case
            guard spec.values.isEmpty || spec.values.contains(value) else {
                throw CommandFailure("\(key): '\(value)' is not one of: \(spec.values.joined(separator: ", "))")
            }
            // `set` prints values as they are: one holding a control character or one that
            // shows as nothing could not be told from another (review BP-7).
            if let bad = nameScalars(value).first(where: \.escaped)?.scalar {
                throw CommandFailure("\(key): a value may not hold \(escapedForScripts(bad)) (no control characters, nor characters that show as nothing)")
            }
            if key == "inbox" {
                let names = value.pathComponents
                guard value.unicodeScalars.first == "/", !names.isEmpty, names.allSatisfy({ (try? ItemName.validated($0)) == $0 }) else {
                    throw CommandFailure("inbox: '\(value)' is not an absolute vault path of a folder, such as /Inbox")
                }
                // A file there would make every adoption start a new numbered folder beside it.
                if let id = s.resolve(VaultPath(components: names)), !s.vault.isFolder(id) {
                    throw CommandFailure("inbox: \(s.inMessage(VaultPath(components: names))) is a file, not a folder")
                }
            }
            // The inbox is stored as every path is shown: `/Inbox/` and `/a//b` as `/Inbox`, `/a/b`.
            let stored = key == "inbox" ? VaultPath(components: value.pathComponents).description : value
            // remove-originals is stored even when off: its absence means "not asked yet".
            try s.vault.setSetting(key, stored == spec.defaultValue && key != "remove-originals" ? nil : stored)
        default:
            throw CommandTable.tooManyArguments(for: "set")
        }
    }

    private static func unknownSetting(_ key: String) -> CommandFailure {
        CommandFailure("no setting '\(key)'", hint: "settings: " + Settings.keyList)
    }
}

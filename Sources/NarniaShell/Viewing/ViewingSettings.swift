extension Settings {
    /// The settings of viewers and listings (man narnia, set).
    static let viewingSettings: [SettingSpec] = [
        SettingSpec(key: "viewer.photo", values: [], defaultValue: "",
                    help: "command that shows photos (default: chafa in the terminal); %s is a path to the content, else it reads standard input"),
        SettingSpec(key: "viewer.video", values: [], defaultValue: "",
                    help: "command that plays videos (default: mpv, muted, hardened); %s is a path to the content, else it reads standard input"),
        SettingSpec(key: "viewer.document", values: [], defaultValue: "",
                    help: "command that shows documents (default: text and PDF text in less, others as hex); %s is a path, else standard input"),
        SettingSpec(key: "viewer.other", values: [], defaultValue: "",
                    help: "command that shows other items (default: type description and hex view); %s is a path, else standard input"),
        SettingSpec(key: "hide-names", values: ["on", "off"], defaultValue: "off",
                    help: "on a terminal, list items as #N and a kind glyph instead of their names; #N still names them"),
        SettingSpec(key: "grid", values: ["on", "off"], defaultValue: "off",
                    help: "on a terminal, plain ls draws the thumbnail grid of ls -g"),
    ]

    /// The spec of a per-MIME-type viewer setting, `viewer.TYPE/SUBTYPE` (for instance
    /// `viewer.application/pdf`), or nil when `key` is not one. These keys are open-ended, so
    /// they are not in `all`; `find` falls back to this. MIME types are case-insensitive
    /// (RFC 2045) and libmagic names them in lower case: the spec's key is the lower-case
    /// spelling, under which `set` stores it (`viewer.TEXT/PLAIN` was kept apart and never
    /// used: review AX6).
    static func viewerSetting(forKey typed: String) -> SettingSpec? {
        guard typed.hasPrefix("viewer.") else { return nil }
        let key = typed.lowercased()
        let mime = key.dropFirst("viewer.".count)
        let parts = mime.split(separator: "/", omittingEmptySubsequences: false)
        // A `*` only as a whole subtype, as mailcap has it (review CZ-7: `*/*` and `image/jp*`
        // were taken, and never used).
        guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty, !parts[0].contains("*"),
              parts[1] == "*" || !parts[1].contains("*"),
              mime.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F && $0 != "=" })
        else { return nil }
        return SettingSpec(key: key, values: [], defaultValue: "",
                           help: "command that shows items of type \(mime); %s is a path to the content, else it reads standard input")
    }
}

/// The viewing settings as the viewing code reads them.
struct ViewingPreferences {
    let settings: [String: String]

    init(_ session: Session) { settings = session.vault.settings }

    /// The configured viewer command for an item: by MIME type first, then by its type with
    /// any subtype (`viewer.image/*`, as in mailcap; review CT-6: accepted, then never used),
    /// then by kind.
    func viewer(mime: String, kind: String) -> String? {
        let type = mime.lowercased()
        let anySubtype = type.split(separator: "/", maxSplits: 1).first.map { "\($0)/*" }
        for key in ["viewer.\(type)", anySubtype.map { "viewer.\($0)" }, "viewer.\(kind)"].compactMap({ $0 }) {
            // A key set in another case before `set` folded it still counts.
            let value = settings[key] ?? settings.first { $0.key.lowercased() == key }?.value
            if let value, !value.allSatisfy({ $0 == " " }) { return value }
        }
        return nil
    }

    var hideNames: Bool { settings["hide-names"] == "on" }
    var grid: Bool { settings["grid"] == "on" }
}

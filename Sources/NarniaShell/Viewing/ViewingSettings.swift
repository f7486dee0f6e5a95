extension Settings {
    /// The settings of viewers and listings (BRIEF §5).
    static let viewingSettings: [SettingSpec] = []
}

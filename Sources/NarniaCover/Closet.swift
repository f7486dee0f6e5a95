import Foundation
import NarniaLanguage

/// One of the Wardrobe's five tabs, in the order they are listed.
public enum Tab: String, CaseIterable, Codable, Sendable {
    case tops = "Tops"
    case bottoms = "Bottoms"
    case outerwear = "Outerwear"
    case shoes = "Shoes"
    case accessories = "Accessories"

    /// The name shown in listings and prompts.
    public var name: String { rawValue }

    /// The tab a user typed, ignoring case (`outerwear` is `Outerwear`).
    public init?(typed text: String) {
        guard let tab = Tab.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) else { return nil }
        self = tab
    }
}

/// The seasons a garment can be marked with; empty means unmarked.
public enum Season {
    /// Accepted values, in the order `help add` lists them.
    public static let all = ["spring", "summer", "autumn", "winter", "all-year"]

    /// The canonical form of a typed season (`Fall` is `autumn`, `all` is `all-year`), `""` for
    /// an empty answer, nil when it is not a season.
    public static func normalised(_ text: String) -> String? {
        let t = text.trimmingCharacters(in: .whitespaces).lowercased()
        switch t {
        case "": return ""
        case "fall": return "autumn"
        case "all", "any", "all year", "allyear", "year-round": return "all-year"
        default: return all.contains(t) ? t : nil
        }
    }
}

/// A piece of clothing in the Wardrobe.
public struct Garment: Codable, Equatable, Sendable {
    public var name: String
    public var colour: String
    public var season: String
    public var notes: String
    /// When it was added, `YYYY-MM-DD`.
    public var added: String

    public init(name: String, colour: String = "", season: String = "", notes: String = "", added: String = "") {
        self.name = name
        self.colour = colour
        self.season = season
        self.notes = notes
        self.added = added
    }
}

/// Everything in the Wardrobe: the garments of each tab. The back panel is not stored: it is
/// part of the wardrobe itself and always stands last in Outerwear.
public struct Closet: Equatable, Sendable {
    /// The name of the fixed panel at the back of Outerwear; no garment may take it.
    public static let backPanel = "back-panel"

    private var garments: [Tab: [Garment]] = [:]

    public init() {}

    /// Two closets are equal when every tab holds the same garments.
    public static func == (a: Closet, b: Closet) -> Bool {
        Tab.allCases.allSatisfy { a.garments(in: $0) == b.garments(in: $0) }
    }

    /// A tab's garments, sorted by name (ignoring case).
    public func garments(in tab: Tab) -> [Garment] {
        (garments[tab] ?? []).sorted { a, b in
            let (x, y) = (a.name.lowercased(), b.name.lowercased())
            return x == y ? a.name < b.name : x < y
        }
    }

    /// What a tab's listing shows, in order: its garments, then in Outerwear the back panel.
    public func listing(of tab: Tab) -> [String] {
        garments(in: tab).map(\.name) + (tab == .outerwear ? [Closet.backPanel] : [])
    }

    /// The garment called `name` in `tab`: the exact name first, else the only one whose name
    /// matches ignoring case.
    public func garment(named name: String, in tab: Tab) -> Garment? {
        let all = garments[tab] ?? []
        if let exact = all.first(where: { $0.name == name }) { return exact }
        let folded = all.filter { $0.name.lowercased() == name.lowercased() }
        return folded.count == 1 ? folded[0] : nil
    }

    /// The tabs holding a garment with this name.
    public func tabs(holding name: String) -> [Tab] {
        Tab.allCases.filter { garment(named: name, in: $0) != nil }
    }

    /// Adds a garment. - Throws: `CommandFailure` when the name is not usable or taken in `tab`.
    public mutating func add(_ garment: Garment, to tab: Tab) throws {
        try Closet.check(name: garment.name)
        if let clash = self.garment(named: garment.name, in: tab), clash.name.lowercased() == garment.name.lowercased() {
            throw CommandFailure("\(tab.name) already holds '\(clash.name)'")
        }
        garments[tab, default: []].append(garment)
    }

    /// Removes and returns the garment called `name` from `tab`.
    @discardableResult
    public mutating func remove(_ name: String, from tab: Tab) throws -> Garment {
        guard let g = garment(named: name, in: tab), let i = garments[tab]?.firstIndex(of: g) else {
            throw CommandFailure("no '\(name)' in \(tab.name)")
        }
        garments[tab]!.remove(at: i)
        return g
    }

    /// Why a name cannot be a garment's, or nothing when it can.
    public static func check(name: String) throws {
        let trimmed = name.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw CommandFailure("a garment needs a name") }
        guard !name.utf8.contains(UInt8(ascii: "/")) else { throw CommandFailure("'\(name)': a name cannot contain '/'") }
        guard name != ".", name != ".." else { throw CommandFailure("'\(name)' cannot be a name") }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw CommandFailure("a name cannot contain control characters")
        }
        guard name.count <= 200 else { throw CommandFailure("a name of at most 200 characters, please") }
        guard name.lowercased() != backPanel else { throw CommandFailure("'\(backPanel)' is part of the wardrobe; choose another name") }
    }

    // MARK: The file

    private struct File: Codable {
        var version: Int
        var tabs: [String: [Garment]]
    }

    /// The JSON text of `closet.json`: tabs by name, keys sorted, pretty-printed.
    public func encoded() throws -> Data {
        var tabs: [String: [Garment]] = [:]
        for tab in Tab.allCases { tabs[tab.name] = garments(in: tab) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(File(version: 1, tabs: tabs))
    }

    /// Reads `closet.json`. Unknown tabs are ignored; missing fields are an error.
    public init(decoding data: Data) throws {
        let file = try JSONDecoder().decode(File.self, from: data)
        for (name, list) in file.tabs {
            if let tab = Tab(typed: name) { garments[tab, default: []] += list }
        }
    }
}

import NarniaLanguage

/// Tab completion in the Wardrobe, through the shell's pure `complete(line:cursor:source:)`:
/// command names, flags, season values, tabs and garments (tabs behave as folders, so
/// `cd Out<Tab>` gives `cd Outerwear/`, from the top or any tab; at the top a garment only one
/// tab holds is offered by its name alone, as `Wardrobe.place` finds it).
public struct WardrobeCompletionSource: CompletionSource {
    let wardrobe: Wardrobe

    public init(wardrobe: Wardrobe) { self.wardrobe = wardrobe }

    public var commandNames: [String] {
        WardrobeCommand.all.flatMap { [$0.name] + $0.aliases }
    }

    public func flags(for command: String) -> [String] {
        WardrobeCommand.find(command)?.flags.flatMap(\.spellings) ?? []
    }

    public func argumentKind(for command: String, argumentIndex: Int, previousWords: [String]) -> ArgumentKind {
        guard let c = WardrobeCommand.find(command) else { return .none }
        if let last = previousWords.last, let f = c.flag(last), f.valueName != nil {
            return f.choices.isEmpty ? .none : .choice(f.choices)
        }
        switch c.operand {
        case .none: return .none
        case .tab: return .vaultFolder
        case .place: return .vaultPath
        case .command: return .choice(WardrobeCommand.all.map(\.name))
        }
    }

    /// `folder` is the typed path up to its last `/`: `""` (here), `Tops/`, `../`, `/`.
    public func vaultEntries(in folder: String) -> [CompletionEntry] {
        let components = wardrobe.components(of: folder)
        switch components.count {
        case 0:
            // The tabs, and the garments a bare name finds at the top: those only one tab holds.
            let tabs = Tab.allCases.map { CompletionEntry(name: $0.name, isFolder: true) }
            let names = Tab.allCases.flatMap { wardrobe.closet.garments(in: $0).map(\.name) }
            let unique = Set(names.filter { wardrobe.closet.tabs(holding: $0).count == 1 })
            return tabs + unique.sorted().map { CompletionEntry(name: $0, isFolder: false) }
        case 1:
            guard let tab = Tab(typed: components[0]) else { return [] }
            let garments = wardrobe.closet.listing(of: tab).map { CompletionEntry(name: $0, isFolder: false) }
            // In a tab, a bare tab name is that tab, as `Wardrobe.place` finds it (review EF-6:
            // `cd Sho<Tab>` offered nothing from Outerwear).
            guard folder.isEmpty, wardrobe.cwd != nil else { return garments }
            let here = Set(garments.map(\.name))
            return garments + Tab.allCases.filter { !here.contains($0.name) }.map { CompletionEntry(name: $0.name, isFolder: true) }
        default:
            return []
        }
    }

    public func hostEntries(in folder: String) -> [CompletionEntry] { [] }

    public var settingKeys: [String] { [] }

    public var homeDirectory: String? { nil }
}

extension Wardrobe {
    /// What Tab does to `line` with the cursor at byte `cursor`.
    public func complete(line: String, cursor: Int) -> Completion {
        NarniaLanguage.complete(line: line, cursor: cursor, source: WardrobeCompletionSource(wardrobe: self))
    }
}

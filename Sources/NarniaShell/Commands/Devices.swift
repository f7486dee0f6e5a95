import NarniaLanguage
import NarniaStore
import NarniaSystem

/// `devices`: the devices that write this store, renaming this one, forgetting one.
enum Devices {
    static func run(_ s: Session, _ a: ParsedArguments) throws {
        let words = a.operands.map(\.text)
        if let action = words.first, ["name", "forget"].contains(action), a.has("--json") {
            throw CommandFailure("--json goes with the list only, not with '\(action)'", hint: "usage: devices [--json] | name NEW | forget NAME|ID")
        }
        switch words.first {
        case nil:
            list(s, json: a.has("--json"))
        case "name":
            guard words.count == 2 else { throw CommandFailure("needs one new name", hint: "usage: devices name NEW") }
            do { try s.vault.renameDevice(to: words[1]) } catch let e as VaultError { throw CommandFailure(e.description) }
            s.out.line("this device is now called \(s.out.name(s.vault.thisDeviceName))")
        case "forget":
            guard words.count == 2 else { throw CommandFailure("needs one device", hint: "usage: devices forget NAME|ID") }
            let device = try find(s, words[1])
            try s.vault.forgetDevice(device.id)
            s.out.line("forgot \(s.out.name(device.name)) (\(device.shortID)); it no longer holds back deletions")
        default:
            throw CommandFailure("\(words[0]): unknown; use devices, devices name NEW or devices forget NAME|ID")
        }
    }

    /// How far past this machine's clock a last write may be stamped before it is marked: a
    /// day, beyond any time zone or ordinary drift.
    static let aheadMargin = 86_400 * Nanoseconds.perSecond

    /// One line per device: short id, name, when it last wrote, the space its pending
    /// acknowledgements hold, and marks (a device known only because another device read its
    /// records holds back every deletion until its own records arrive). A last write stamped
    /// after this machine's clock is marked: a device's clock ran ahead, and every device that
    /// read its changes stamps after them since (docs/FORMAT.md, "The clock"), so the date is
    /// no time anything happened.
    private static func list(_ s: Session, json: Bool) {
        let devices = s.vault.devices
        if json {
            for d in devices {
                s.out.line("{\"id\":\"\(d.id.hex)\",\"name\":\(Formatting.json(d.name)),\"last_wrote\":\(d.lastWrote > 0 ? "\"" + Formatting.isoDate(d.lastWrote) + "\"" : "null"),\"held_bytes\":\(d.heldBytes),\"this_device\":\(d.isThisDevice),\"forgotten\":\(d.isForgotten),\"records_here\":\(d.hasRecordsHere)}")
            }
            return
        }
        let names = devices.map { s.out.name($0.name) }
        let width = names.map { displayWidth($0) }.max() ?? 0
        let human = s.out.isTerminal
        let now = SystemClock.nowNanoseconds()
        for (d, name) in zip(devices, names) {
            let pad = String(repeating: " ", count: width - displayWidth(name))
            let when = d.lastWrote > 0 ? Formatting.shortDate(d.lastWrote) : "-"
            var line = "\(d.shortID)  \(name)\(pad)  \(when)  holds \(Formatting.size(UInt64(d.heldBytes), human: human))"
            if d.isThisDevice { line += d.lastWrote > 0 ? "  (this device)" : "  (this device; not written yet)" }
            if d.isForgotten { line += "  (forgotten)" }
            if !d.isThisDevice && !d.hasRecordsHere { line += "  (known from another device's records; its own have not arrived)" }
            if d.lastWrote > now &+ aheadMargin { line += "  (stamped ahead of this machine's clock)" }
            s.out.line(line)
        }
    }

    private static func find(_ s: Session, _ word: String) throws -> DeviceInfo {
        let devices = s.vault.devices
        let matches = devices.filter { $0.name == word || $0.id.hex.hasPrefix(word.lowercased()) && word.count >= 4 }
        guard let device = matches.first else { throw CommandFailure("\(word): no such device", hint: "'devices' lists them") }
        guard matches.count == 1 else { throw CommandFailure("\(word): names more than one device; give more of its id") }
        return device
    }
}

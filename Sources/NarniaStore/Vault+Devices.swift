import NarniaSystem

/// One device that wrote this store, as `devices` shows it.
public struct DeviceInfo: Sendable {
    /// Its identifier.
    public let id: Identifier
    /// Its name (`devices name NEW` on it changes it).
    public let name: String
    /// When it last wrote, nanoseconds since the epoch (0 when unknown).
    public let lastWrote: Int64
    /// Bytes of retired files present in this copy that wait for it to acknowledge them.
    public let heldBytes: Int64
    /// True for the device this session runs on.
    public let isThisDevice: Bool
    /// True once `devices forget` released its hold.
    public let isForgotten: Bool
    /// False for a device heard of only through another's records: none of its own has
    /// reached this copy yet (its name and last write are then unknown).
    public let hasRecordsHere: Bool

    /// The first eight hex digits of its identifier.
    public var shortID: String { String(id.hex.prefix(8)) }
}

extension Vault {
    /// Every device that wrote this store, and this one first, even before it has written
    /// (a copy just opened on this machine: its `lastWrote` is then 0).
    public var devices: [DeviceInfo] {
        var held: [Identifier: Int64] = [:]
        let missingRecords = Set(devicesWithRecordsMissing)
        let waiting = state.waitingDevices
        // (An object back in use is kept for that, not for any device: review DY-5.)
        for file in state.retired.keys where !mayDeleteRetired(file) && !state.isInUse(file) {
            let size = retiredFileSize(file)
            guard size > 0 else { continue }
            // An object waits for every one of its retirements (review DW-2), and while records a
            // device acknowledged past are missing here, for them (review DW-1).
            for (id, device) in waiting {
                let covered = state.retirements(of: file, areRead: device.lastKnowledge.covers)
                if !covered || file.kind == .object && missingRecords.contains(id) { held[id, default: 0] += size }
            }
        }
        var listed = state.devices.filter { $0.key == device ? $0.value.lastSeq > 0 || isKnownDevice : $0.value.hasWritten }.map { id, record in
            DeviceInfo(id: id, name: deviceName(id), lastWrote: record.lastWall, heldBytes: held[id] ?? 0,
                       isThisDevice: id == device, isForgotten: record.forgotten, hasRecordsHere: record.lastSeq > 0)
        }
        if !listed.contains(where: \.isThisDevice) {
            listed.append(DeviceInfo(id: device, name: thisDeviceName, lastWrote: 0, heldBytes: 0, isThisDevice: true, isForgotten: false,
                                     hasRecordsHere: false))
        }
        return listed.sorted { ($0.isThisDevice ? 0 : 1, $0.name, $0.id) < ($1.isThisDevice ? 0 : 1, $1.name, $1.id) }
    }

    /// The name of a device: the latest it gave itself.
    func deviceName(_ id: Identifier) -> String {
        state.devices[id]?.name ?? (id == device ? defaultDeviceName : String(id.hex.prefix(8)))
    }

    /// This device's name.
    public var thisDeviceName: String { deviceName(device) }

    /// Bytes of a retired file present in this copy.
    private func retiredFileSize(_ file: RetiredFile) -> Int64 {
        let entry = file.kind == .keyFile ? inventory.keyFiles[file.id] ?? inventory.inboxKeys[file.id] : inventory.files[file.id]
        return (entry?.all ?? []).reduce(0) { total, path in
            total + ((try? FileSystem.lstatIfExists(layout.root + "/" + path)).flatMap { $0.map { Int64($0.st_size) } } ?? 0)
        }
    }

    /// Renames this device. Names of conflict copies that carry it change with it.
    /// - Throws: `VaultError.refused` for an empty name, one over 64 bytes, or with control
    ///   characters or a `/` (which would put a `/` in those names: review AX4).
    public func renameDevice(to name: String) throws {
        let clean = ItemName.nfc(name)
        guard !clean.isEmpty, clean.utf8.count <= RecordCoding.maximumDeviceName, !clean.utf8.contains(UInt8(ascii: "/")),
              !clean.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }) else {
            throw VaultError.refused("a device name has 1 to \(RecordCoding.maximumDeviceName) bytes, no control characters and no '/'")
        }
        try commit([.deviceName(clean)], view: .rebuild)
    }

    /// Releases the hold of another device on deletions: retired files it has not yet
    /// acknowledged can go. Its records stay part of the vault.
    /// - Throws: `VaultError.refused` for this device or one not known to have written.
    public func forgetDevice(_ id: Identifier) throws {
        guard id != device else { throw VaultError.refused("this is the device you are on") }
        guard state.devices[id]?.hasWritten ?? false else { throw VaultError.refused("no such device") }
        try commit([.forgetDevice(id)], view: .none)
        deleteRetiredFiles()
    }
}

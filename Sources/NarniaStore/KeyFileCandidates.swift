import Glibc
import NarniaCrypto
import NarniaSystem

/// Unlocking: which of the store's key files the passphrase opens.
///
/// A store holds one key file, more for a while after `passwd` (the retired one waits for
/// every device to hear of the new one) or after `passwd` on two devices at once; copies
/// that sync engines made of one count as that one. The newest are tried first, and a
/// derivation is shared by key files with the same salt and limits. After rotations of the
/// master key on two devices at once, opening needs the key files of both (`unlockAll`).
///
/// Each salt costs a derivation, and anyone who can write to the store can add key files, which
/// no reader can tell from real ones before deriving. All are tried — a cap would let eight
/// forged files newer than the real one lock every device out (review AL) — but past the
/// newest `quietDerivations` salts the user is told why the unlock takes longer.
enum KeyFileCandidates {
    /// How many salts, newest first, are tried before the user is told that more are: narnia
    /// leaves one key file, a few for a while after `passwd` while a device is away.
    static let quietDerivations = 8

    struct Unlocked {
        let id: Identifier
        let contents: KeyFile.Contents
        let kek: Secret
        let salt: [UInt8]
        let parameters: KDFParameters
    }

    fileprivate struct Candidate {
        let id: Identifier
        let bytes: [UInt8]
        let salt: [UInt8]
        let parameters: KDFParameters
        let former: Bool
        let modified: Int64

        /// What one derivation serves: the salt and the limits.
        var derivationKey: [UInt8] { salt + KeyFile.maskedParameters(parameters, salt: salt) }
    }

    /// Unwraps the first key file, newest first, that `derivations`' passphrase opens. Past the
    /// newest `quietDerivations` salts, its `notice` hears how many more are tried.
    /// - Throws: `VaultError.wrongPassphrase` when none does, `.refusedLimits`, `.noVault`,
    ///   `.damagedKeyFile`, `StoreFileError`, `SystemError`.
    ///
    /// With a `budget` (the door), only the newest key files of `budget.count` salts are tried,
    /// and their limits are what the budget pads with.
    static func unlock(inventory: StoreInventory, root: String, derivations: inout Derivations) throws -> Unlocked {
        let candidates = try read(inventory: inventory, root: root)
        let acceptable = candidates.filter { $0.parameters.isAcceptable }
        guard !acceptable.isEmpty else {
            let p = candidates[0].parameters
            throw VaultError.refusedLimits(KDFParametersDescription(passes: p.opsLimit, mebibytes: p.memLimitKiB / 1024))
        }
        let (newest, others) = splitAfterSalts(acceptable, count: derivations.budget?.count ?? quietDerivations)
        derivations.budget?.planned = plannedParameters(newest)
        for candidate in newest {
            if let unlocked = try derivations.open(candidate) { return unlocked }
        }
        guard derivations.budget == nil else { throw VaultError.wrongPassphrase }
        if !others.isEmpty, let notice = derivations.notice {
            let more = Set(others.map(\.derivationKey)).count
            notice("the passphrase opens none of the key files of the \(derivations.derived.count) newest salts; trying those of the \(more) others, a key derivation each (passwd leaves a few key files while a device is away; many more may have been put at the store's top by someone who can write to it)")
        }
        for candidate in others {
            if let unlocked = try derivations.open(candidate) { return unlocked }
        }
        throw VaultError.wrongPassphrase
    }

    /// Unwraps every format-2 key file, other than those in `except`, that `derivations`'
    /// passphrase opens. With a budget (the door), only key files whose salt and limits were
    /// derived already are tried: adopting costs no derivation there.
    static func unlockAll(inventory: StoreInventory, root: String, derivations: inout Derivations,
                          except: Set<Identifier>) throws -> [Unlocked] {
        var opened: [Unlocked] = []
        for candidate in try read(inventory: inventory, root: root)
        where !candidate.former && candidate.parameters.isAcceptable && !except.contains(candidate.id) && !opened.contains(where: { $0.id == candidate.id }) {
            if derivations.budget != nil && derivations.derived[candidate.derivationKey] == nil { continue }
            if let unlocked = try derivations.open(candidate) { opened.append(unlocked) }
        }
        return opened
    }

    /// The limits of the newest `count` acceptable salts of the store, newest first (the door's
    /// plan, `DerivationBudget`).
    static func newestParameters(inventory: StoreInventory, root: String, count: Int) throws -> [KDFParameters] {
        plannedParameters(splitAfterSalts(try read(inventory: inventory, root: root).filter { $0.parameters.isAcceptable }, count: count).first)
    }

    /// The limits of each distinct salt among `candidates`, in order.
    private static func plannedParameters(_ candidates: [Candidate]) -> [KDFParameters] {
        var seen = Set<[UInt8]>()
        return candidates.filter { seen.insert($0.derivationKey).inserted }.map(\.parameters)
    }

    /// The candidates, in order, whose salt and limits are among the first `count` met, and
    /// the others.
    private static func splitAfterSalts(_ candidates: [Candidate], count: Int) -> (first: [Candidate], others: [Candidate]) {
        var salts = Set<[UInt8]>()
        var first: [Candidate] = [], others: [Candidate] = []
        for candidate in candidates {
            let salt = candidate.derivationKey
            if salts.contains(salt) || salts.count < count && salts.insert(salt).inserted { first.append(candidate) } else { others.append(candidate) }
        }
        return (first, others)
    }

    /// Every key file present (and every copy of one), format 2 first, newest first. A file
    /// named as one that is not of a key file's length, or cannot be opened or read, is passed
    /// over while another can be tried: one such file put at the top (5,000 bytes, or mode
    /// 000) made every unlock fail (review AN). With none left, the first such error is thrown.
    private static func read(inventory: StoreInventory, root: String) throws -> [Candidate] {
        var candidates: [Candidate] = []
        var firstFailure: Error?
        for (id, entry) in inventory.keyFiles {
            for path in entry.all {
                do {
                    let fd = try JournalReader.openStoreFile(root + "/" + path)
                    let st = try fd.status()
                    guard KeyFile.masterCount(ofLength: Int(st.st_size)) != nil else { continue }
                    let bytes = try fd.readToEnd(limit: 4096)
                    guard let (salt, parameters, former) = KeyFile.header(of: bytes) else { continue }
                    candidates.append(Candidate(id: id, bytes: bytes, salt: salt, parameters: parameters, former: former,
                                                modified: st.modifiedNanoseconds))
                } catch {
                    firstFailure = firstFailure ?? error
                }
            }
        }
        if candidates.isEmpty, let firstFailure { throw firstFailure }
        guard !candidates.isEmpty else {
            if inventory.keyFiles.isEmpty && inventory.files.isEmpty { throw VaultError.noVault(root) }
            if !inventory.keyFiles.isEmpty { throw VaultError.damagedKeyFile("none has the length of a key file") }
            if !inventory.notKeyFiles.isEmpty {
                throw VaultError.damagedKeyFile("there is none that is a regular file: \(inventory.notKeyFiles.sorted().joined(separator: ", ")), named as one, is a symbolic link or a special file, not read; put the file itself there")
            }
            // A key file cut to an inbox public key's length is listed as one: say so.
            if !inventory.inboxKeys.isEmpty {
                throw VaultError.damagedKeyFile("there is none; one of the files of \(InboxPublicKeyFile.length) bytes at the store's top, an inbox key's length, may be a key file cut short")
            }
            throw VaultError.damagedKeyFile("there is none: it has not arrived yet (a sync engine still copying the store?), or was deleted (put a backup of it back), or an init was cut short before writing it (then nothing was stored here yet)")
        }
        // Format 2 before format 1 (an upgrade in progress), newest first.
        candidates.sort { ($0.former ? 1 : 0, -$0.modified, $0.id) < ($1.former ? 1 : 0, -$1.modified, $1.id) }
        return candidates
    }

    /// Key derivations of one passphrase, shared by key files with the same salt and limits.
    struct Derivations {
        let passphrase: Secret
        let notice: ((String) -> Void)?
        /// At the door, the derivations a try costs in all (`DerivationBudget`).
        let budget: DerivationBudget?
        fileprivate(set) var derived: [[UInt8]: Secret] = [:]
        /// Whether `notice` heard of limits costlier than MODERATE (once is enough).
        private var announcedCostlier = false

        init(passphrase: Secret, notice: ((String) -> Void)?, budget: DerivationBudget? = nil) {
            self.passphrase = passphrase
            self.notice = notice
            self.budget = budget
        }

        /// The key file unwrapped, or nil when the passphrase does not open it.
        fileprivate mutating func open(_ candidate: Candidate) throws -> Unlocked? {
            let cacheKey = candidate.derivationKey
            let kek: Secret
            if let known = derived[cacheKey] {
                kek = known
            } else {
                if candidate.parameters.isCostlierThanModerate, !announcedCostlier, let notice {
                    announcedCostlier = true
                    notice("this vault's key derivation is slower than usual (\(candidate.parameters.opsLimit) passes, \(candidate.parameters.memLimitKiB / 1024) MiB)")
                }
                kek = try PassphraseKey.derive(passphrase: passphrase, salt: candidate.salt, parameters: candidate.parameters)
                budget?.spent += 1
                derived[cacheKey] = kek
            }
            guard let contents = try? KeyFile.open(candidate.bytes, kek: kek, id: candidate.id) else { return nil }
            guard contents.chunkSizeLog2 == ContentFormat.chunkSizeLog2 else { throw VaultError.damagedKeyFile("unknown chunk size") }
            return Unlocked(id: candidate.id, contents: contents, kek: kek, salt: candidate.salt, parameters: candidate.parameters)
        }
    }
}

/// The key derivations a try at the door costs: exactly `count`, whether the vault opens or
/// not and whatever the store holds or the try meets after deriving (a key file retired by a
/// rotation, a damaged journal, a store in use), so that time tells nothing. Opening spends
/// them on the newest salts; `padToCount` spends the rest on random salts, each with the limits
/// of the salt it stands in for, as a wrong passphrase would have derived them (review AO).
public final class DerivationBudget {
    public let count: Int
    /// The derivations made so far.
    public internal(set) var spent = 0
    /// The limits of the newest `count` salts of the store, in the order they are derived.
    var planned: [KDFParameters] = []
    /// The limits without a store, and beyond `planned`'s end without another salt.
    private let fallback: KDFParameters

    /// A budget of `count` derivations, with `fallback` limits where the store gives none.
    public init(count: Int, fallback: KDFParameters) {
        self.count = count
        self.fallback = fallback
    }

    /// Reads the limits of the newest `count` salts of the store at `directory`, before it is
    /// opened (which may fail before reading them: a store in use); none if it cannot be read.
    public func plan(storeAt directory: String) {
        guard let inventory = try? StoreInventory.scanTopLevel(directory) else { return }
        planned = (try? KeyFileCandidates.newestParameters(inventory: inventory, root: directory, count: count)) ?? []
    }

    /// Derives `key` with random salts until `count` derivations have been made.
    public func padToCount(key: Secret) {
        while spent < count {
            let parameters = spent < planned.count ? planned[spent] : planned.last ?? fallback
            _ = try? PassphraseKey.derive(passphrase: key, salt: randomBytes(PassphraseKey.saltLength), parameters: parameters)
            spent += 1
        }
    }
}

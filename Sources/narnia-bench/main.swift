import NarniaLanguage
import NarniaSystem
import Glibc
import Dispatch
import Synchronization
import NarniaCrypto
import NarniaKinds
import NarniaShell
import NarniaStore

// narnia-bench: times the library in process for `make bench` (bench/run.sh drives it and
// prints the table). Each subcommand prints JSON lines on stdout:
//
//   prepare VAULT moderate|test     create an empty vault (the bench passphrase)
//   stream VAULT FILE OUT           unlock; import FILE, export it to OUT, remove it: wall times
//                                   and peak RSS of each, with the high-water mark reset after unlock
//   small VAULT SRC                 create a vault (test KDF) and import the folder SRC: wall and CPU
//                                   time, sizes
//   library VAULT SRC OUT           create a vault (test KDF), import the folder SRC, export it into
//                                   OUT: wall times and peak RSS of each, the peak reset after unlock
//   open VAULT                      open once (for profiling)
//   classify SRC                    libmagic alone over every file under SRC (its first MiB, read
//                                   beforehand), on all cores: the floor an import of SRC cannot beat
//                                   (wall and CPU time); then again with the reading timed too
//   scale WORK                      open time at 1,000 / 100,000 items (and 100,000 packed); mkdir, mv, rm at 100 /
//                                   100,000 items; ls and Tab completion in a folder of 10,000
//   build VAULT N                   a vault (test KDF) of N small files in folders of 100, packed as an
//                                   import packs them (for the sync bench)
//   devices WORK                    open of 100,000 items written by one device vs by three
//
// Never a test: timings belong here, side by side with the tools they are compared with.

let benchPassphrase = "narnia bench passphrase"

func passphrase() -> Secret {
    let bytes = Array(benchPassphrase.utf8)
    return try! bytes.withUnsafeBytes { try Secret(copying: $0) }
}

func fail(_ message: String) -> Never {
    fputs("narnia-bench: error: \(message)\n", StandardStream.error)
    exit(1)
}

func devNull() -> Output {
    let fd = open("/dev/null", O_WRONLY)
    return Output(fd: fd)
}

/// A session whose output goes to /dev/null and whose errors go to stderr.
func quietSession(_ vault: Vault) -> Session {
    Session(vault: vault, out: devNull(), err: Output(fd: 2), interactive: false)
}

func run(_ session: Session, _ line: String) {
    guard session.runBatchLine(line) else { fail("command failed: \(line)") }
}

func kdf(_ name: String) -> KDFParameters {
    switch name {
    case "moderate": return .moderate
    case "test": return .insecureTestOnly
    default: fail("unknown KDF \(name) (moderate or test)")
    }
}

func quoted(_ path: String) -> String { "'" + path.replacingAll("'", "'\\''") + "'" }

// MARK: stream: one big file in and out

func stream(vaultDirectory: String, file: String, out: String) throws {
    var r = Report()
    let baseline = Measure.status("VmRSS")
    var vault: Vault?
    let unlock = try Measure.time { vault = try Vault.open(at: vaultDirectory, passphrase: passphrase()) }
    let session = quietSession(vault!)
    r.add("unlock_s", unlock)
    r.add("rss_before_unlock_kib", baseline)
    r.add("hwm_during_unlock_kib", Measure.status("VmHWM"))
    r.add("rss_after_unlock_kib", Measure.status("VmRSS"))
    let name = String(file.split(separator: "/").last!)

    let resetWorks = Measure.resetPeak()
    r.add("hwm_reset", resetWorks ? 1 : 0)
    var sampler = RSSSampler()
    r.add("import_s", Measure.time { run(session, "import \(quoted(file))") })
    r.add("import_hwm_kib", Measure.status("VmHWM"))
    r.add("import_sampled_kib", sampler.stop())

    Measure.resetPeak()
    sampler = RSSSampler()
    r.add("export_s", Measure.time { run(session, "export \(quoted("/" + name)) \(quoted(out))") })
    r.add("export_hwm_kib", Measure.status("VmHWM"))
    r.add("export_sampled_kib", sampler.stop())
    run(session, "rm \(quoted("/" + name))")
    r.print()
}

// MARK: small: a folder of many files

func small(vaultDirectory: String, source: String) throws {
    let vault = try Vault.create(at: vaultDirectory, passphrase: passphrase(), parameters: .insecureTestOnly)
    let session = quietSession(vault)
    var r = Report()
    var cpu = 0.0
    var machine = (busy: 0.0, idle: 0.0)
    r.add("import_s", Measure.time { machine = Measure.machineTime { cpu = Measure.cpuTime { run(session, "import \(quoted(source))") } } })
    r.add("import_cpu_s", cpu)
    r.add("import_machine_busy_s", machine.busy)
    r.add("import_machine_idle_s", machine.idle)
    let content = treeBytes(source)
    let store = treeBytes(vaultDirectory)
    r.add("items", vault.itemCount)
    r.add("content_files", content.files)
    r.add("content_bytes", Int(content.apparent))
    r.add("content_allocated", Int(content.allocated))
    r.add("store_files", store.files)
    r.add("store_bytes", Int(store.apparent))
    r.add("store_allocated", Int(store.allocated))
    r.print()
}

// MARK: library: a camera roll in and out

func library(vaultDirectory: String, source: String, out: String) throws {
    let vault = try Vault.create(at: vaultDirectory, passphrase: passphrase(), parameters: .insecureTestOnly)
    let session = quietSession(vault)
    var r = Report()
    r.add("rss_after_unlock_kib", Measure.status("VmRSS"))
    let name = String(source.split(separator: "/").last!)
    r.add("hwm_reset", Measure.resetPeak() ? 1 : 0)
    var sampler = RSSSampler()
    r.add("import_s", Measure.time { run(session, "import \(quoted(source))") })
    r.add("import_hwm_kib", Measure.status("VmHWM"))
    r.add("import_sampled_kib", sampler.stop())
    r.add("items", vault.itemCount)
    Measure.resetPeak()
    sampler = RSSSampler()
    r.add("export_s", Measure.time { run(session, "export \(quoted("/" + name)) \(quoted(out))") })
    r.add("export_hwm_kib", Measure.status("VmHWM"))
    r.add("export_sampled_kib", sampler.stop())
    r.print()
}

// MARK: classify: libmagic alone

/// Times `Classifier.classify` over the first MiB of every regular file under `source`, the bytes
/// an import hands it, on one worker per core. Reading happens before the clock starts.
func classifyAlone(source: String) throws {
    var collected: [[UInt8]] = []
    collectHeads(source, into: &collected)
    let heads = collected
    let cores = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    let next = Atomic<Int>(0)
    var r = Report()
    r.add("files", heads.count)
    r.add("cores", cores)
    var cpu = 0.0
    var machine = (busy: 0.0, idle: 0.0)
    r.add("classify_s", Measure.time { machine = Measure.machineTime { cpu = Measure.cpuTime {
        DispatchQueue.concurrentPerform(iterations: cores) { _ in
            guard let classifier = try? Classifier() else { fail("libmagic did not load") }
            while true {
                let i = next.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < heads.count else { return }
                _ = heads[i].withUnsafeBytes { classifier.classify($0) }
            }
        }
    } } })
    r.add("classify_cpu_s", cpu)
    r.add("classify_machine_busy_s", machine.busy)
    r.add("classify_machine_idle_s", machine.idle)
    // The same again with each file's first MiB read inside the clock, as `file(1)` would
    // read it: the floor an import meets if getting the bytes counts (it reads every file).
    var found: [String] = []
    collectFiles(source, into: &found)
    let paths = found
    let nextPath = Atomic<Int>(0)
    var readingCPU = 0.0
    r.add("classify_reading_s", Measure.time { readingCPU = Measure.cpuTime {
        DispatchQueue.concurrentPerform(iterations: cores) { _ in
            guard let classifier = try? Classifier() else { fail("libmagic did not load") }
            let head = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { head.deallocate() }
            while true {
                let i = nextPath.wrappingAdd(1, ordering: .relaxed).oldValue
                guard i < paths.count else { return }
                let fd = open(paths[i], O_RDONLY)
                guard fd >= 0 else { continue }
                let n = read(fd, head.baseAddress, head.count)
                close(fd)
                if n > 0 { _ = classifier.classify(UnsafeRawBufferPointer(rebasing: head.prefix(n))) }
            }
        }
    } })
    r.add("classify_reading_cpu_s", readingCPU)
    r.print()
}

/// The regular files under `path`, depth first.
func collectFiles(_ path: String, into paths: inout [String]) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return }
    if (st.st_mode & S_IFMT) == S_IFREG {
        paths.append(path)
        return
    }
    guard (st.st_mode & S_IFMT) == S_IFDIR, let dir = opendir(path) else { return }
    defer { closedir(dir) }
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        if name != "." && name != ".." { collectFiles(path + "/" + name, into: &paths) }
    }
}

/// The first MiB of each regular file under `path`, depth first.
func collectHeads(_ path: String, into heads: inout [[UInt8]]) {
    var paths: [String] = []
    collectFiles(path, into: &paths)
    for file in paths {
        let fd = open(file, O_RDONLY)
        guard fd >= 0 else { continue }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 1 << 20)
        let n = head.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n > 0 { heads.append(Array(head.prefix(n))) }
    }
}

// MARK: scale

/// Creates a vault (test KDF unless `parameters` says otherwise) holding `items` items: folders
/// of `perFolder` (one folder and `perFolder - 1` tiny files each), committed a few thousand at
/// a time as an import would.
func buildVault(_ directory: String, items: Int, perFolder: Int = 100, wide: Int = 0, packed: Bool = false,
                parameters: KDFParameters = .insecureTestOnly) throws {
    let vault = try Vault.create(at: directory, passphrase: passphrase(), parameters: parameters)
    try addItems(vault, items: items, perFolder: perFolder, wide: wide, packed: packed)
}

/// Adds `items` items to `vault` as `buildVault` does; folder names start at `firstFolder`.
/// With `packed`, the files say their size, so that they share packs as an import's do.
func addItems(_ vault: Vault, items: Int, perFolder: Int = 100, wide: Int = 0, firstFolder: Int = 0, packed: Bool = false) throws {
    let batch = ImportBatch.begin(in: vault)
    var made = 0
    func tinyFile(_ name: String, in folder: Identifier) throws {
        var given = false
        let text = Array("item \(name)\n".utf8)
        _ = try batch.addFile(named: name, in: folder, sizeHint: packed ? UInt64(text.count) : nil, source: { p, n in
            if given { return 0 }
            given = true
            let k = min(n, text.count)
            text.withUnsafeBytes { p.copyMemory(from: $0.baseAddress!, byteCount: k) }
            return k
        }, classify: { _ in ("text/plain", .document) })
        made += 1
        if batch.count >= 2000 { try batch.commit() }
    }
    var folderIndex = firstFolder
    while made < items {
        let folder = try batch.addFolder(named: String(format4(folderIndex), prefix: "d"), in: .root)
        made += 1
        folderIndex += 1
        var k = 0
        while k < perFolder - 1 && made < items {
            try tinyFile("f\(format4(k)).txt", in: folder.id)
            k += 1
        }
    }
    if wide > 0 {
        let folder = try batch.addFolder(named: "wide", in: .root)
        for k in 0..<wide { try tinyFile("photo-\(format5(k)).jpg", in: folder.id) }
    }
    try batch.commit()
}

func format4(_ n: Int) -> String { let s = String(n); return String(repeating: "0", count: max(0, 4 - s.count)) + s }
func format5(_ n: Int) -> String { let s = String(n); return String(repeating: "0", count: max(0, 5 - s.count)) + s }
extension String { init(_ s: String, prefix: String) { self = prefix + s } }

/// A vault whose open `scale` times: its size, whether its small files share packs, and
/// whether its key file asks for the default Argon2id limits (what a person's vault uses) or
/// the test limits.
struct TimedOpen: Hashable {
    let items: Int
    let packed: Bool
    let defaultLimits: Bool

    var parameters: KDFParameters { defaultLimits ? .moderate : .insecureTestOnly }
    var directoryName: String { "vault-\(items)" + (packed ? "-packed" : "") + (defaultLimits ? "-default-kdf" : "") }
}

func scale(work: String) throws {
    var dirs: [Int: String] = [:]
    for n in [100, 1_000, 100_000] {
        let dir = work + "/vault-\(n)"
        let t = try Measure.time { try buildVault(dir, items: n) }
        dirs[n] = dir
        var r = Report(); r.add("build_items", n); r.add("build_s", t); r.print()
    }
    // Issue 14, item 4 is an open of 100,000 items after Argon2id: these two vaults ask for the
    // default limits, as a person's does, so that what opening runs beside the derivation (the
    // listing of the shard folders) counts as it does for them. One gives each file an object
    // of its own (as format 1 did, and as files over 1 MiB get), the other packs the small
    // files as an import does.
    let unpacked = TimedOpen(items: 100_000, packed: false, defaultLimits: true)
    let packed = TimedOpen(items: 100_000, packed: true, defaultLimits: true)
    for v in [unpacked, packed] {
        let t = try Measure.time { try buildVault(work + "/" + v.directoryName, items: v.items, packed: v.packed, parameters: v.parameters) }
        var built = Report(); built.add("build_items", v.items); if v.packed { built.add("packed", 1) }
        built.add("default_kdf", 1); built.add("build_s", t); built.print()
    }

    // Open, excluding the key derivation: time Vault.open, minus the median time of the same
    // Argon2id derivation measured alone, interleaved with the opens. The page cache is warm
    // from building. Five rounds; the 1,000-item vault opens three times a round (it is
    // cheap), and the last handle of the test-limits 100,000-item vault is kept for the next part.
    let testUnpacked = TimedOpen(items: 100_000, packed: false, defaultLimits: false)
    let timed = [TimedOpen(items: 1_000, packed: false, defaultLimits: false), testUnpacked, unpacked, packed]
    let salt = (0..<PassphraseKey.saltLength).map { _ in UInt8.random(in: 0...255) }
    var derive: [Bool: [Double]] = [:]
    var opens: [TimedOpen: [Double]] = [:]
    var kept: Vault?
    for round in 0..<5 {
        for v in (round % 2 == 0 ? timed : timed.reversed()) {
            let dir = v.defaultLimits ? work + "/" + v.directoryName : dirs[v.items]!
            for _ in 0..<(v.items == 1_000 ? 3 : 1) {
                derive[v.defaultLimits, default: []].append(try Measure.time {
                    _ = try PassphraseKey.derive(passphrase: passphrase(), salt: salt, parameters: v.parameters)
                })
                if v == testUnpacked { kept = nil }
                var vault: Vault?
                let t = try Measure.time { vault = try Vault.open(at: dir, passphrase: passphrase()) }
                guard vault!.itemCount == v.items else { fail("\(dir) holds \(vault!.itemCount) items") }
                if v == testUnpacked { kept = vault }
                vault = nil
                opens[v, default: []].append(t)
            }
        }
    }
    for v in timed {
        let d = Measure.median(derive[v.defaultLimits]!)
        var r = Report()
        r.add("open_items", v.items)
        if v.packed { r.add("packed", 1) }
        if v.defaultLimits { r.add("default_kdf", 1) }
        r.add("open_ms", (Measure.median(opens[v]!) - d) * 1000)
        r.add("open_us_per_item", (Measure.median(opens[v]!) - d) * 1e6 / Double(v.items))
        r.add("derive_ms", d * 1000)
        r.print()
    }

    // mkdir, mv, rm at 100 and 100,000 items, interleaved. Each is one journal commit.
    let large = quietSession(kept!)
    kept = nil
    let small = quietSession(try Vault.open(at: dirs[100]!, passphrase: passphrase()))
    var ops: [String: [Int: [Double]]] = [:]
    for op in ["mkdir", "mv", "rm", "mv-file", "rm-file"] { ops[op] = [100: [], 100_000: []] }
    for round in 0..<15 {
        for (n, s) in (round % 2 == 0 ? [(100, small), (100_000, large)] : [(100_000, large), (100, small)]) {
            ops["mkdir"]![n]!.append(Measure.time { run(s, "mkdir /bench-a") })
            ops["mv"]![n]!.append(Measure.time { run(s, "mv /bench-a /bench-b") })
            ops["mv-file"]![n]!.append(Measure.time { run(s, "mv /d0000/f0001.txt /bench-b/") })
            ops["rm-file"]![n]!.append(Measure.time { run(s, "rm /bench-b/f0001.txt") })
            ops["rm"]![n]!.append(Measure.time { run(s, "rm -r /bench-b") })
            // Put the file back (untimed) so every round is the same.
            try restoreFile(s.vault)
        }
    }
    for op in ["mkdir", "mv", "rm", "mv-file", "rm-file"] {
        var r = Report()
        r.add("op", op)
        r.add("ms_100", Measure.median(ops[op]![100]!) * 1000)
        r.add("ms_100000", Measure.median(ops[op]![100_000]!) * 1000)
        r.print()
    }

    // ls and Tab completion in a folder of 10,000 items, beside `ls -1` of a host folder
    // holding files of the same names.
    let wideDir = work + "/vault-wide"
    try buildVault(wideDir, items: 0, wide: 10_000)
    let host = work + "/host-wide"
    mkdir(host, 0o700)
    for k in 0..<10_000 { close(open(host + "/photo-\(format5(k)).jpg", O_WRONLY | O_CREAT, 0o600)) }
    let wide = quietSession(try Vault.open(at: wideDir, passphrase: passphrase()))
    let source = ShellCompletionSource(session: wide)
    var times: [String: [Double]] = ["ls": [], "ls -l": [], "tab all": [], "tab prefix": [], "host ls -1": [], "host ls -l": []]
    var candidates = (0, 0)
    for _ in 0..<11 {
        times["host ls -1"]!.append(Measure.spawn(["ls", "-1", host]))
        times["ls"]!.append(Measure.time { run(wide, "ls /wide") })
        times["host ls -l"]!.append(Measure.spawn(["ls", "-l", host]))
        times["ls -l"]!.append(Measure.time { run(wide, "ls -l /wide") })
        let all = "ls /wide/", prefix = "ls /wide/photo-012"
        times["tab all"]!.append(Measure.time { candidates.0 = complete(line: all, cursor: all.utf8.count, source: source).candidates.count })
        times["tab prefix"]!.append(Measure.time { candidates.1 = complete(line: prefix, cursor: prefix.utf8.count, source: source).candidates.count })
    }
    var r = Report()
    for (k, v) in times { r.add("wide_" + k.replacingAll(" ", "_").replacingAll("-", ""), Measure.median(v) * 1000) }
    r.add("tab_all_candidates", candidates.0)
    r.add("tab_prefix_candidates", candidates.1)
    r.print()
}

// MARK: devices: the same vault written by one device and by three

/// Open time (net of the key derivation) of a 100,000-item vault written by one device, and
/// of one whose items three devices wrote a third each (copies of one store at three paths,
/// whose files are then gathered into one, as a sync engine would).
func devices(work: String) throws {
    let n = 100_000
    let one = work + "/one-device"
    try buildVault(one, items: n)
    let three = work + "/three-devices"
    let parts = [work + "/part-a", work + "/part-b", work + "/part-c"]
    _ = try Vault.create(at: parts[0], passphrase: passphrase(), parameters: .insecureTestOnly)
    for (i, part) in parts.enumerated() {
        if i > 0 { try copyTree(parts[0], part) }
        let vault = try Vault.open(at: part, passphrase: passphrase())
        try addItems(vault, items: i == 2 ? n - 2 * (n / 3) : n / 3, firstFolder: i * 1000)
    }
    for part in parts { try copyTree(part, three, keepExisting: true) }
    let salt = (0..<PassphraseKey.saltLength).map { _ in UInt8.random(in: 0...255) }
    var derive: [Double] = []
    var opens: [String: [Double]] = [one: [], three: []]
    for round in 0..<5 {
        for dir in (round % 2 == 0 ? [one, three] : [three, one]) {
            derive.append(try Measure.time { _ = try PassphraseKey.derive(passphrase: passphrase(), salt: salt, parameters: .insecureTestOnly) })
            var vault: Vault?
            let t = try Measure.time { vault = try Vault.open(at: dir, passphrase: passphrase()) }
            guard vault!.itemCount == n else { fail("\(dir) holds \(vault!.itemCount) items, not \(n)") }
            opens[dir]!.append(t)
        }
    }
    let d = Measure.median(derive)
    var r = Report()
    r.add("one_device_ms", (Measure.median(opens[one]!) - d) * 1000)
    r.add("three_devices_ms", (Measure.median(opens[three]!) - d) * 1000)
    r.print()
}

/// Copies the store files of `source` into `destination` (made if missing), skipping files the
/// destination has when `keepExisting`.
func copyTree(_ source: String, _ destination: String, keepExisting: Bool = false) throws {
    let status = Glibc.system("mkdir -p \(quoted(destination)) && chmod 700 \(quoted(destination)) && cp -r\(keepExisting ? "n" : "") \(quoted(source))/. \(quoted(destination))/")
    if status != 0 { fail("copying \(source) failed") }
}

/// Puts /d0000/f0001.txt back after a round removed it.
func restoreFile(_ vault: Vault) throws {
    guard let d = vault.child(named: "d0000", in: .root) else { fail("no /d0000") }
    if vault.child(named: "f0001.txt", in: d.id) != nil { return }
    let batch = ImportBatch.begin(in: vault)
    var given = false
    _ = try batch.addFile(named: "f0001.txt", in: d.id, source: { p, n in
        if given { return 0 }
        given = true
        p.storeBytes(of: UInt8(ascii: "x"), as: UInt8.self)
        return 1
    }, classify: { _ in ("text/plain", .document) })
    try batch.commit()
}

// MARK: main

let args = Array(CommandLine.arguments.dropFirst())
do {
    switch (args.first, args.count) {
    case ("prepare", 3):
        _ = try Vault.create(at: args[1], passphrase: passphrase(), parameters: kdf(args[2]))
    case ("stream", 4):
        try stream(vaultDirectory: args[1], file: args[2], out: args[3])
    case ("small", 3):
        try small(vaultDirectory: args[1], source: args[2])
    case ("library", 4):
        try library(vaultDirectory: args[1], source: args[2], out: args[3])
    case ("open", 2):
        // For profiling (perf record narnia-bench open VAULT): one open, timed.
        var r = Report()
        r.add("open_s", try Measure.time { _ = try Vault.open(at: args[1], passphrase: passphrase()) })
        r.print()
    case ("classify", 2):
        try classifyAlone(source: args[1])
    case ("scale", 2):
        try scale(work: args[1])
    case ("build", 3):
        try buildVault(args[1], items: Int(args[2]) ?? 0, packed: true)
    case ("devices", 2):
        try devices(work: args[1])
    default:
        fputs("usage: narnia-bench prepare VAULT moderate|test | stream VAULT FILE OUT | small VAULT SRC | library VAULT SRC OUT | classify SRC | scale WORK | build VAULT N | devices WORK\n", StandardStream.error)
        exit(2)
    }
} catch {
    fail(describe(error))
}

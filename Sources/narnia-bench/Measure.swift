import NarniaSystem
import Dispatch
import Glibc
import NarniaStore
import Synchronization

/// Clocks, memory high-water marks and child processes, for timing the library in process.
enum Measure {
    /// Seconds on the monotonic clock.
    static func now() -> Double { SystemClock.monotonicSeconds() }

    /// Runs `body` and returns its wall time in seconds.
    static func time(_ body: () throws -> Void) rethrows -> Double {
        let start = now()
        try body()
        return now() - start
    }

    /// Runs `body` and returns the CPU time (user and system, every thread of the process)
    /// it took, in core-seconds.
    static func cpuTime(_ body: () throws -> Void) rethrows -> Double {
        func used() -> Double {
            var u = rusage()
            getrusage(RUSAGE_SELF.rawValue, &u)
            return Double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + Double(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6
        }
        let start = used()
        try body()
        return used() - start
    }

    /// Core-seconds the whole machine spent busy and idle (iowait included) while `body` ran,
    /// from /proc/stat: what the process's own CPU time leaves out (kernel threads writing
    /// back, cores left waiting).
    static func machineTime(_ body: () throws -> Void) rethrows -> (busy: Double, idle: Double) {
        func sample() -> (busy: Double, idle: Double) {
            guard let f = fopen("/proc/stat", "r") else { return (.nan, .nan) }
            defer { fclose(f) }
            var line = [CChar](repeating: 0, count: 512)
            guard fgets(&line, Int32(line.count), f) != nil else { return (.nan, .nan) }
            let ticks = String(nulTerminated: line).split(separator: " ").dropFirst().compactMap { Double($0) }
            guard ticks.count >= 5 else { return (.nan, .nan) }
            let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
            let idle = ticks[3] + ticks[4]
            return ((ticks.prefix(8).reduce(0, +) - idle) / hz, idle / hz)
        }
        let start = sample()
        try body()
        let end = sample()
        return (end.busy - start.busy, end.idle - start.idle)
    }

    /// The median of `values` (the mean of the middle two for an even count).
    static func median(_ values: [Double]) -> Double {
        let s = values.sorted()
        guard !s.isEmpty else { return .nan }
        return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
    }

    /// A field of /proc/self/status in KiB (`VmRSS`, `VmHWM`), or -1.
    static func status(_ field: String) -> Int {
        guard let f = fopen("/proc/self/status", "r") else { return -1 }
        defer { fclose(f) }
        var line = [CChar](repeating: 0, count: 256)
        while fgets(&line, Int32(line.count), f) != nil {
            let text = String(nulTerminated: line)
            if text.hasPrefix(field + ":") {
                let digits = text.dropFirst(field.count + 1).filter { $0.isNumber }
                return Int(digits) ?? -1
            }
        }
        return -1
    }

    /// Resets the peak RSS (`VmHWM`) to the current RSS: `echo 5 > /proc/self/clear_refs`.
    @discardableResult
    static func resetPeak() -> Bool {
        let fd = open("/proc/self/clear_refs", O_WRONLY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return write(fd, "5", 1) == 1
    }

    /// Runs `argv` with stdout and stderr to /dev/null, waits, and returns its wall time.
    static func spawn(_ argv: [String]) -> Double {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var cargs = argv.map { strdup($0) }
        cargs.append(nil)
        defer { for p in cargs { free(p) } }
        var pid: pid_t = 0
        let start = now()
        guard posix_spawnp(&pid, argv[0], &actions, nil, &cargs, environ) == 0 else { return .nan }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return now() - start
    }
}

/// Samples the resident set size from a thread, as a cross-check of `VmHWM` (some kernels do
/// not support resetting it).
final class RSSSampler: Sendable {
    private let peakPages = Atomic<Int>(0)
    private let running = Atomic<Bool>(true)
    private let done = DispatchSemaphore(value: 0)
    private let pageKiB = Int(sysconf(Int32(_SC_PAGESIZE))) / 1024

    init() {
        let thread = Thread { [self] in
            let fd = open("/proc/self/statm", O_RDONLY)
            var buffer = [CChar](repeating: 0, count: 128)
            while running.load(ordering: .acquiring) {
                let n = pread(fd, &buffer, buffer.count - 1, 0)
                if n > 0 {
                    buffer[n] = 0
                    let fields = String(nulTerminated: buffer).split(separator: " ")
                    if fields.count > 1, let rss = Int(fields[1]) { peakPages.max(rss, ordering: .relaxed) }
                }
                usleep(2000)
            }
            close(fd)
            done.signal()
        }
        thread.start()
    }

    /// Stops sampling and returns the largest RSS seen, in KiB.
    func stop() -> Int {
        running.store(false, ordering: .releasing)
        done.wait()
        return peakPages.load(ordering: .relaxed) * pageKiB
    }
}

/// A minimal pthread wrapper (Foundation is not linked).
final class Thread {
    private let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }

    func start() {
        let box = Unmanaged.passRetained(self).toOpaque()
        var tid = pthread_t()
        pthread_create(&tid, nil, { arg in
            let me = Unmanaged<Thread>.fromOpaque(arg!).takeRetainedValue()
            me.body()
            return nil
        }, box)
        pthread_detach(tid)
    }
}

/// One result line: `{"name": value, ...}` on stdout, read by bench/bench.py.
struct Report {
    private var fields: [(String, String)] = []

    mutating func add(_ key: String, _ value: Double) {
        fields.append((key, value.isFinite ? String(value) : "null"))
    }
    mutating func add(_ key: String, _ value: Int) { fields.append((key, String(value))) }
    mutating func add(_ key: String, _ value: String) {
        fields.append((key, "\"" + value.replacingAll("\\", "\\\\").replacingAll("\"", "\\\"") + "\""))
    }

    func print() {
        let body = fields.map { "\"\($0.0)\": \($0.1)" }.joined(separator: ", ")
        Swift.print("{" + body + "}")
        fflush(StandardStream.output)
    }
}

extension String {
    func replacingAll(_ a: String, _ b: String) -> String {
        split(separator: a, omittingEmptySubsequences: false).joined(separator: b)
    }
}

/// Apparent bytes and allocated bytes of every file under `path` (not following links).
func treeBytes(_ path: String) -> (apparent: Int64, allocated: Int64, files: Int) {
    var st = stat()
    guard lstat(path, &st) == 0 else { return (0, 0, 0) }
    if (st.st_mode & S_IFMT) == S_IFREG { return (Int64(st.st_size), Int64(st.st_blocks) * 512, 1) }
    guard (st.st_mode & S_IFMT) == S_IFDIR, let dir = opendir(path) else { return (0, 0, 0) }
    defer { closedir(dir) }
    var total: (Int64, Int64, Int) = (0, 0, 0)
    while let entry = readdir(dir) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        if name == "." || name == ".." { continue }
        let sub = treeBytes(path + "/" + name)
        total = (total.0 + sub.apparent, total.1 + sub.allocated, total.2 + sub.files)
    }
    return total
}

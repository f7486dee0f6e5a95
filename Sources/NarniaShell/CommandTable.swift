import NarniaLanguage

/// Every command of the vault shell, in `help` order. Parsing, `help`, `help CMD` and Tab
/// completion all read this one table. Each group of commands declares its part beside its
/// code: the tree and transfer commands here, viewing in `Viewing/`, the session's own
/// (`panic`) in `SessionCommands.swift`.
public enum CommandTable {

    public static let all: [CommandSpec] = vaultCommands + viewingCommands + sessionCommands

    static let vaultCommands: [CommandSpec] = [
        CommandSpec("ls", usage: "[-1adlhtSrRg] [--json] [PATH...]", abstract: "list a folder's items",
          details: "Not on a terminal (or with -1): one name per line. -l adds kind, size and date, and '(not on this device)' after a file whose content has not arrived; --json prints JSON Lines, one object per item (with \"here\": false for such a file); -R lists every folder below too; -d lists a folder named as itself, not its items; -g draws a thumbnail grid (not with -l, -1, -R or --json). Names sort by name; -t puts the newest first, -S the largest (not both), -r reverses.",
          flags: [.flag("-l", "long listing: kind, size, date, name"), .flag("-a", "include names starting with a dot"),
                  .flag("-d", "list folders themselves, not their items"),
                  .flag("-1", "one name per line, on a terminal too"), .flag("-h", "sizes for people (1.5M) in scripts too"),
                  .flag("-t", "newest first"), .flag("-S", "largest first"), .flag("-r", "reverse the order"),
                  .flag("-R", "list the folders below too, each under its path"),
                  .flag("-g", "thumbnail grid: photos, video frames, icons"), .flag("--json", "one JSON object per line")],
          // The grid is a listing of its own (review DM-1: -g silently won over --json, -l, -R
          // and -1); -t and -S are two orders (DM-6: -t silently won).
          exclusive: [["-g", "--json"], ["-g", "-l"], ["-g", "-R"], ["-g", "-1"], ["-t", "-S"]],
          operands: [.vaultPath], run: Browse.ls),
        CommandSpec("cd", usage: "[PATH|-]", abstract: "change the current vault folder",
          details: "Without PATH, or with ~, go to /. With -, go back to the previous folder.", operands: [.vaultPath], namesNothingRelative: Browse.cdIgnoresTheCurrentFolder, run: Browse.cd),
        CommandSpec("pwd", abstract: "print the current vault folder", treeUse: .none, run: Browse.pwd),
        CommandSpec("tree", usage: "[-d] [-L DEPTH] [PATH]", abstract: "show a folder and everything under it",
          flags: [.flag("-d", "folders only"), .flag("-L", value: "DEPTH", "descend at most DEPTH levels")],
          operands: [.vaultPath], run: Browse.tree),
        CommandSpec("mkdir", usage: "[-p] PATH...", abstract: "create folders",
          flags: [.flag("-p", "create missing parents; an existing folder is fine")], operands: [.vaultPath], run: Rearrange.mkdir),
        CommandSpec("import", aliases: ["put", "mput"], usage: "[--move|--keep] [--skip-existing] [-v|-q] HOSTPATH... | - NAME", abstract: "copy host files and folders into the current folder",
          details: "Folders are imported with everything under it; symbolic links inside are skipped. A name that is taken gets a number: 'name (2).ext'; with --skip-existing a folder of that name is merged into and a file of that name, size and modification time (to 2 s) is left as it is (when moving, with --move or remove-originals on, one that holds the same bytes is taken in again over it, so that its original can go, and one that does not is imported beside it, numbered), so an import cut short can be finished by running it again. With --move (or 'set remove-originals on') each original is removed only after its vault copy is written, synced and committed; --keep keeps them whatever the setting says (for scripts: the setting travels with the vault to every device). Every source that can be imported is; each bad one is reported. On a terminal a progress bar and one summary line are shown; in scripts, a line per file. 'import - NAME' reads standard input into NAME (with -c or -b FILE, where standard input does not carry the commands). A file NAME.age encrypted with age to the vault's inbox recipient (see inbox-key) is decrypted into NAME.",
          flags: [.flag("--move", "remove each original once its copy is committed"),
                  .flag("--keep", "keep the originals, whatever remove-originals says"),
                  .flag("--skip-existing", "merge into folders of the same name; leave files of the same name, size and modification time (moving, take them in again if they hold the same bytes)"),
                  .flag("-v", "a line per file, on a terminal too"), .flag("-q", "no line per file and no summary")],
          exclusive: [["--move", "--keep"], ["-v", "-q"]],
          operands: [.hostPath], run: Transfer.importCommand),
        CommandSpec("export", aliases: ["get", "mget"], usage: "[-f|--force] [--skip-existing] [-v|-q] PATH... [HOSTDEST]",
          aliasUsages: ["mget": "[-f|--force] [--skip-existing] [-v|-q] PATH..."], abstract: "copy vault items out to the host",
          details: "HOSTDEST may be an existing host folder, or a new path for a single item; without it, items go into the current host folder (see lcd), as sftp's get does. With two operands or more the last is HOSTDEST, but for 'mget', which takes every operand as a vault path and exports into the current host folder, as sftp's mget does. An existing host file is never replaced without --force; with --skip-existing a host file of the same name, size and modification time (to 2 s) is left as it is. No partial file is left behind (but after kill -9 on a file system without unnamed files: see the man page). Files are made 0600, folders 0700; a destination inside the vault's own store, or a folder below it that is the store, is refused.",
          flags: [.flag("--force", "replace existing host files"), .flag("-f", "the same as --force"),
                  .flag("--skip-existing", "leave host files of the same name, size and modification time"),
                  .flag("-v", "a line per file, on a terminal too"), .flag("-q", "no line per file and no summary")],
          exclusive: [["-v", "-q"]],
          operands: [.vaultPath], lastOperandIsHost: true, reshapingFlags: ["-f", "--force"], run: Transfer.export),
        CommandSpec("cat", usage: "[--force] PATH...", abstract: "write items' content to standard output",
          details: "On a terminal, writes only text, with control characters other than tab and newline (C1 and bidirectional marks too) shown as '.', so a file's escape sequences cannot drive the terminal; into a pipe or file, the bytes as they are.",
          flags: [.flag("--force", "write to a terminal anyway, every byte as it is")], operands: [.vaultPath], run: Transfer.cat),
        CommandSpec("rm", usage: "[-r] [-f] [-i] PATH...", abstract: "remove items",
          details: "All or none, as 'git rm': an operand that cannot be removed is named, with 'nothing was removed', and nothing is (rmdir, mv and cp alike).",
          flags: [.flag("-r", "remove folders and everything in them"), .flag("-f", "ignore missing items"),
                  .flag("-i", "ask before each removal (on a terminal only)")],
          operands: [.vaultPath], treeUse: .reshapes, run: Rearrange.rm),
        CommandSpec("rmdir", usage: "PATH...", abstract: "remove empty folders", operands: [.vaultPath], treeUse: .reshapes, run: Rearrange.rmdir),
        CommandSpec("mv", usage: "[-f|-n] SRC... DEST", abstract: "rename or move items",
          details: "When DEST is a folder the sources move into it. An existing item is never replaced unless -f, and a folder never; with -n a source whose destination exists stays where it is, silently. All or none, as 'git mv': a source that cannot move is named, with 'nothing was moved', and none moves.",
          flags: [.flag("-f", "replace an existing file at the destination"), .flag("-n", "never replace: leave such a source where it is")],
          exclusive: [["-f", "-n"]],
          operands: [.vaultPath], treeUse: .reshapes, run: Rearrange.mv),
        CommandSpec("cp", usage: "[-r|-a] [-f|-n] SRC... DEST", abstract: "copy items",
          details: "Copies keep their modification times; -a is -r. All or none, as mv.",
          flags: [.flag("-r", "copy folders and everything in them"), .flag("-a", "the same as -r (times are always kept)"),
                  .flag("-f", "replace an existing file at the destination"), .flag("-n", "never replace: leave such a source uncopied; with -r a folder goes into one of its name, adding only what it lacks")],
          exclusive: [["-f", "-n"]],
          operands: [.vaultPath], treeUse: .reshapes, run: Rearrange.cp),
        CommandSpec("find", usage: "[PATH] [-name GLOB|-iname GLOB] [-type photo|video|document|other|folder]", abstract: "list items below a folder by name or kind",
          details: "An item is listed when it matches every option given; each is given at most once.",
          flags: [.flag("-name", value: "GLOB", "match names against GLOB"), .flag("-iname", value: "GLOB", "the same, ignoring case"),
                  .flag("-type", value: "KIND", "match a kind")],
          operands: [.vaultPath], run: Browse.find),
        CommandSpec("stat", usage: "[--json] PATH...", abstract: "show an item's details",
          flags: [.flag("--json", "one JSON object per item")], operands: [.vaultPath], run: Browse.stat),
        CommandSpec("du", usage: "[-h] [-s] [PATH...]", abstract: "show the content size of items",
          details: "One total per PATH, as du -s gives; sizes in bytes in scripts, for people on a terminal.",
          flags: [.flag("-h", "sizes for people (1.5M) in scripts too"), .flag("-s", "one total per PATH (always so)")],
          operands: [.vaultPath], run: Browse.du),
        CommandSpec("verify", usage: "[PATH...]", abstract: "authenticate every item and name any damaged one",
          details: "With PATHs, only those items and everything under them; problems of the metadata are reported either way.",
          operands: [.vaultPath], run: Maintenance.verify),
        CommandSpec("passwd", usage: "[--rotate] [--new-passphrase-file FILE]", abstract: "change the passphrase",
          details: "Re-wraps the master key under the new passphrase; whoever has an old key file and its passphrase (a backup) can still read everything. With --rotate, a new master key seals everything written from now on, so old key files open nothing written afterwards; files keep their own keys. In scripts, give the new passphrase as the first line of FILE.",
          flags: [.flag("--rotate", "also replace the master key"),
                  .flag("--new-passphrase-file", value: "FILE", "read the new passphrase from FILE")], treeUse: .none, run: Maintenance.passwd),
        CommandSpec("set", usage: "[KEY [VALUE]]", abstract: "show or change settings",
          details: "Without arguments, every setting and its value; with KEY, its value; with KEY VALUE, change it. Settings are stored encrypted in the vault. Keys: " + Settings.keyList + ".",
          operands: [.settingKey], treeUse: .none, run: Maintenance.set),
        CommandSpec("sync", usage: "REMOTE", abstract: "exchange the store with an rclone remote or another folder",
          details: "REMOTE is an rclone remote (name:path from your own 'rclone config') or a plain folder; it becomes a copy of the store that other devices can sync with or open. What either side lacks is copied, objects before the journals that name them; a journal is copied only over a shorter copy it extends; retired files are deleted on both sides. Needs the Debian package rclone. An interrupted sync leaves both sides valid: run it again.",
          operands: [.hostPath], treeUse: .none, run: SyncCommand.run),
        CommandSpec("inbox-key", usage: "[--rotate]", abstract: "show the key that 'narnia drop' seals files to",
          details: "Prints the inbox public key's fingerprint, the key as an age recipient (age1…) and in hex. 'narnia drop' adds files to the vault without the passphrase; they are adopted into the inbox folder ('set inbox', default /Inbox) at the next unlock. Compare the fingerprint with what 'narnia drop --show-key' prints where you drop from. Files encrypted with age to the age1 recipient are decrypted by import. With --rotate, a new key pair replaces the public key; files dropped with the old one are still adopted.",
          flags: [.flag("--rotate", "make a new key pair for drops from now on")], treeUse: .none, run: Inbox.inboxKey),
        CommandSpec("devices", usage: "[--json] | name NEW | forget NAME|ID", abstract: "list the devices that write this store",
          details: "One line per device: its short id, name, when it last wrote, the space of retired files it has not yet acknowledged (they wait for it), and which is this device. 'devices name NEW' renames this device; 'devices forget NAME|ID' stops waiting for a device that will not come back (its changes stay).",
          flags: [.flag("--json", "one JSON object per device")], treeUse: .none, run: Devices.run),
        CommandSpec("lcd", usage: "[HOSTPATH]", abstract: "change the host folder (default: $HOME)", operands: [.hostPath], treeUse: .none, run: Host.lcd),
        CommandSpec("lpwd", abstract: "print the host folder", treeUse: .none, run: Host.lpwd),
        CommandSpec("lmkdir", usage: "[-p] HOSTPATH...", abstract: "create host folders",
          flags: [.flag("-p", "create missing parents; an existing folder is fine")], operands: [.hostPath], treeUse: .none, run: Host.lmkdir),
        CommandSpec("lls", usage: "[-l] [-a] [HOSTPATH...]", abstract: "list a host folder",
          flags: [.flag("-l", "long listing"), .flag("-a", "include names starting with a dot")], operands: [.hostPath], treeUse: .none, run: Host.lls),
    ]

    /// The command called `name` (or with that alias).
    public static func find(_ name: String) -> CommandSpec? {
        all.first { $0.name == name || $0.aliases.contains(name) }
    }

    /// `usage: NAME USAGE` for a hint, as `help NAME` gives it.
    static func usage(of name: String) -> String {
        find(name)?.usageLine(as: name) ?? "usage: \(name)"
    }

    /// The one refusal of operands beyond those `name` takes: "too many arguments", with its
    /// usage line as the hint (five wordings before: review AX7).
    static func tooManyArguments(for name: String, hint: String? = nil) -> CommandFailure {
        CommandFailure("too many arguments", hint: hint ?? usage(of: name))
    }

    /// The command names or aliases closest to a mistyped `word` (`exprot` → `export`; `lss`
    /// → `lls`, `ls`): at most one edit (a letter added, dropped, changed, or two swapped) for
    /// short words, two for words of five letters or more, or a command with the space before
    /// its argument left out (`cd ..`); empty when none is that close, or more than three are.
    static func nearest(to word: String) -> [String] {
        // A command run into its argument (`cd..`, `ls-l`, `cd/photos`): the space it lacks
        // (review CA-9).
        if let split = word.firstIndex(where: { $0 == "." || $0 == "-" || $0 == "/" }), split > word.startIndex,
           find(String(word[..<split])) != nil {
            return ["\(word[..<split]) \(word[split...])"]
        }
        let typed = Array(word.lowercased())
        let limit = editsAllowed(typed)
        // Each command once, by its nearest name (review EG-6: `mput` and `put` both named).
        let scored = all.compactMap { spec -> (String, Int)? in
            ([spec.name] + spec.aliases).filter { $0.count > 1 }.map { ($0, editDistance(typed, Array($0))) }
                .filter { $0.1 <= limit }.min { $0.1 < $1.1 }
        }
        guard let best = scored.map(\.1).min() else { return [] }
        let closest = Set(scored.filter { $0.1 == best }.map(\.0)).sorted()
        return closest.count <= 3 ? closest : []
    }

    /// The hint for a word mistyped on narnia's own command line (`narnia entr`, `--vualt`):
    /// "did you mean …?" of the `candidates` as close as `nearest` asks of a vault command, or
    /// nil when none is.
    public static func didYouMean(_ word: String, among candidates: [String]) -> String? {
        let typed = Array(word.lowercased())
        let limit = editsAllowed(typed)
        let scored = candidates.map { ($0, editDistance(typed, Array($0))) }.filter { $0.1 <= limit }
        guard let best = scored.map(\.1).min() else { return nil }
        return "did you mean \(alternatives(scored.filter { $0.1 == best }.map(\.0)))?"
    }

    /// How far a mistyped word may be from what it is taken for: one edit, two from five letters.
    private static func editsAllowed(_ typed: [Character]) -> Int { typed.count >= 5 ? 2 : 1 }

    /// `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'`: the suggestions of a hint.
    static func alternatives(_ names: [String]) -> String {
        let quoted = names.map { "'\($0)'" }
        return quoted.count < 2 ? quoted.joined() : quoted.dropLast().joined(separator: ", ") + " or " + quoted.last!
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
    /// neighbours each count one.
    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1) }
            }
        }
        return d[a.count][b.count]
    }
}

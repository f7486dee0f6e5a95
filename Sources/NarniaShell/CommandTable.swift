/// Every command of the vault shell, in `help` order. Parsing, `help`, `help CMD` and Tab
/// completion all read this one table. Each group of commands declares its part beside its
/// code: the tree and transfer commands here, viewing in `Viewing/`, the session's own
/// (`panic`) in `SessionCommands.swift`.
public enum CommandTable {
    typealias F = CommandSpec

    public static let all: [CommandSpec] = vaultCommands + viewingCommands + sessionCommands

    static let vaultCommands: [CommandSpec] = [
        F("ls", usage: "[-l] [-a] [-R] [-g] [--json] [PATH...]", abstract: "list a folder's items",
          details: "Not on a terminal: one name per line. -l adds kind, size and date, and '(not on this device)' after a file whose content has not arrived; --json prints one JSON object per item (with \"here\": false for such a file); -R lists every folder below too; -g draws a thumbnail grid.",
          flags: [.flag("-l", "long listing: kind, size, date, name"), .flag("-a", "include names starting with a dot"),
                  .flag("-R", "list the folders below too, each under its path"),
                  .flag("-g", "thumbnail grid: photos, video frames, icons"), .flag("--json", "one JSON object per line")],
          operands: [.vaultPath], run: Browse.ls),
        F("cd", usage: "[PATH|-]", abstract: "change the current vault folder",
          details: "Without PATH, go to /. With -, go back to the previous folder.", operands: [.vaultPath], run: Browse.cd),
        F("pwd", abstract: "print the current vault folder", run: Browse.pwd),
        F("tree", usage: "[PATH]", abstract: "show a folder and everything under it", operands: [.vaultPath], run: Browse.tree),
        F("mkdir", usage: "[-p] PATH...", abstract: "create folders",
          flags: [.flag("-p", "create missing parents; an existing folder is fine")], operands: [.vaultPath], run: Rearrange.mkdir),
        F("import", usage: "[--move] HOSTPATH... | - NAME", abstract: "copy host files and folders into the current folder",
          details: "Folders are imported with everything under it; symbolic links inside are skipped. A name that is taken gets a number: 'name (2).ext'. With --move (or 'set remove-originals on') each original is removed only after its vault copy is written, synced and committed. 'import - NAME' reads standard input into NAME.",
          flags: [.flag("--move", "remove each original once its copy is committed")], operands: [.hostPath], run: Transfer.importCommand),
        F("export", usage: "[--force] PATH... HOSTDEST", abstract: "copy vault items out to the host",
          details: "HOSTDEST may be an existing host folder, or a new path for a single item. An existing host file is never replaced without --force; a partial file is never left behind.",
          flags: [.flag("--force", "replace existing host files")], operands: [.vaultPath], lastOperandIsHost: true, run: Transfer.export),
        F("cat", usage: "[--force] PATH...", abstract: "write items' content to standard output",
          details: "Refuses to write content that is not text to a terminal unless --force.",
          flags: [.flag("--force", "write binary content to a terminal anyway")], operands: [.vaultPath], run: Transfer.cat),
        F("rm", usage: "[-r] [-f] PATH...", abstract: "remove items",
          flags: [.flag("-r", "remove folders and everything in them"), .flag("-f", "ignore missing items")],
          operands: [.vaultPath], run: Rearrange.rm),
        F("rmdir", usage: "PATH...", abstract: "remove empty folders", operands: [.vaultPath], run: Rearrange.rmdir),
        F("mv", usage: "[-f] SRC... DEST", abstract: "rename or move items",
          details: "When DEST is a folder the sources move into it. An existing item is never replaced unless -f, and a folder never.",
          flags: [.flag("-f", "replace an existing file at the destination")], operands: [.vaultPath], run: Rearrange.mv),
        F("cp", usage: "[-r] [-f] SRC... DEST", abstract: "copy items",
          flags: [.flag("-r", "copy folders and everything in them"), .flag("-f", "replace an existing file at the destination")],
          operands: [.vaultPath], run: Rearrange.cp),
        F("find", usage: "[PATH] [-name GLOB] [-type photo|video|document|other|folder]", abstract: "list items below a folder by name or kind",
          flags: [.flag("-name", "match names against a glob", value: true), .flag("-type", "match a kind", value: true)],
          operands: [.vaultPath], run: Browse.find),
        F("stat", usage: "PATH...", abstract: "show an item's details", operands: [.vaultPath], run: Browse.stat),
        F("du", usage: "[PATH...]", abstract: "show the content size of items", operands: [.vaultPath], run: Browse.du),
        F("verify", abstract: "authenticate every item and name any damaged one", run: Maintenance.verify),
        F("passwd", usage: "[--rotate] [--new-passphrase-file FILE]", abstract: "change the passphrase",
          details: "Re-wraps the master key under the new passphrase; whoever has an old key file and its passphrase (a backup) can still read everything. With --rotate, a new master key seals everything written from now on, so old key files open nothing written afterwards; files keep their own keys. In scripts, give the new passphrase as the first line of FILE.",
          flags: [.flag("--rotate", "also replace the master key"),
                  .flag("--new-passphrase-file", "read the new passphrase from FILE", value: true)], run: Maintenance.passwd),
        F("set", usage: "[KEY [VALUE]]", abstract: "show or change settings",
          details: "Without arguments, every setting and its value; with KEY, its value; with KEY VALUE, change it. Settings are stored encrypted in the vault.",
          operands: [.settingKey], run: Maintenance.set),
        F("sync", usage: "REMOTE", abstract: "exchange the store with an rclone remote or another folder",
          details: "REMOTE is an rclone remote (name:path from your own 'rclone config') or a plain folder; it becomes a copy of the store that other devices can sync with or open. What either side lacks is copied, objects before the journals that name them; a journal is copied only over a shorter copy it extends; retired files are deleted on both sides. Needs the Debian package rclone. An interrupted sync leaves both sides valid: run it again.",
          operands: [.hostPath], run: SyncCommand.run),
        F("devices", usage: "[--json] | name NEW | forget NAME|ID", abstract: "list the devices that write this store",
          details: "One line per device: its short id, name, when it last wrote, the space of retired files it has not yet acknowledged (they wait for it), and which is this device. 'devices name NEW' renames this device; 'devices forget NAME|ID' stops waiting for a device that will not come back (its changes stay).",
          flags: [.flag("--json", "one JSON object per device")], run: Devices.run),
        F("lcd", usage: "[HOSTPATH]", abstract: "change the host folder (default: $HOME)", operands: [.hostPath], run: Host.lcd),
        F("lpwd", abstract: "print the host folder", run: Host.lpwd),
        F("lls", usage: "[-l] [-a] [HOSTPATH...]", abstract: "list a host folder",
          flags: [.flag("-l", "long listing"), .flag("-a", "include names starting with a dot")], operands: [.hostPath], run: Host.lls),
    ]

    /// The command called `name` (or with that alias).
    public static func find(_ name: String) -> CommandSpec? {
        all.first { $0.name == name || $0.aliases.contains(name) }
    }
}

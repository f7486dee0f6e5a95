"""How files reach the disk whole: on FUSE (bindfs here; sshfs, an rclone mount and gocryptfs
alike) under the store or an export, and for an ordinary user on an older kernel.

What makes an import durable before its originals go, on a store whose file system does not
pass `syncfs` on: FUSE sends no FSYNC to its server for a `syncfs`, so the objects an import
wrote could be lost at a power cut after `import --move` had deleted the originals. There each
object is `fsync`ed. And FUSE has no unnamed files (`O_TMPFILE`): an export writes a hidden
partial file there, which every ending but `kill -9` removes, a panic too.

Mounting needs root and /dev/fuse (as on CI and the development machines); elsewhere these
tests skip.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time

import pytest
from pathlib import Path

from harness import DEFAULT_PASSPHRASE, INSECURE_KDF_WARNING, Narnia, a_day_later, mounted_fuse, q, skip_unless_root_for_strace_paths, started_under_strace, traced_calls
from terminal import Terminal
from test_devices import torn_import
from test_store_forks import a_fork_whose_fetch_is_cut_off


@pytest.fixture
def fuse_mount(tmp_path):
    """A bindfs (FUSE) mount of tmp_path/backing at tmp_path/mnt."""
    if shutil.which("bindfs") is None:
        pytest.skip("bindfs is not installed")
    backing, mount = tmp_path / "backing", tmp_path / "mnt"
    backing.mkdir()
    mount.mkdir()
    yield from mounted_fuse(["bindfs", str(backing), str(mount)], mount)


@pytest.fixture
def fuse_store(narnia_bin, tmp_path, fuse_mount):
    """A Narnia whose store is on a FUSE mount."""
    n = Narnia(narnia_bin, tmp_path)
    n.vault = fuse_mount / "vault"
    n.init()
    return n


def synced_paths(n: Narnia, command: str, tmp_path) -> tuple[set[str], int]:
    """Runs `command` under strace; returns the paths `fsync`ed and the number of `syncfs` calls."""
    skip_unless_root_for_strace_paths()
    log = tmp_path / "strace.log"
    argv = ["strace", "-f", "-y", "-o", str(log), "-e", "trace=fsync,fdatasync,syncfs"] + n.argv(["-c", command])
    r = subprocess.run(argv, capture_output=True, text=True, env=n.env, cwd=n.workdir)
    assert r.returncode == 0, r.stderr
    text = log.read_text()
    fsynced = set(re.findall(r"\bfsync\(\d+<([^>]*)>", text))
    return fsynced, len(re.findall(r"\bsyncfs\(", text))


def store_objects(n: Narnia) -> set[str]:
    """The files in the store's shard folders (objects, packs, journals)."""
    return {str(p) for p in n.vault.glob("??/*") if p.is_file()}


def a_first_journal_killed_at_its_first_record(n: Narnia, tmp_path) -> Narnia:
    """A copy of `n`'s store beside it (another device), killed as its first journal's first
    record is written: on FUSE, its staging folder is left at the copy's top."""
    other = Narnia(n.binary, tmp_path / "other")
    other.vault = n.vault.parent / "vault2"
    subprocess.run(["cp", "-a", str(n.vault), str(other.vault)], check=True)
    argv = ["strace", "-f", "-o", "/dev/null", "-e", "trace=pwrite64", "-e", "inject=pwrite64:signal=SIGKILL:when=1"] \
        + other.argv(["-c", "mkdir /x"])
    r = subprocess.run(argv, capture_output=True, text=True, env=other.env, cwd=other.workdir)
    assert r.returncode != 0, "the kill did not happen"
    return other


def staging_folders(n: Narnia) -> list[Path]:
    return [p for p in n.vault.iterdir() if p.is_dir() and len(p.name) == 32]


def test_on_fuse_a_staging_folder_left_by_a_device_no_one_will_be_again_goes_after_a_day(fuse_store, tmp_path):
    """Review AD: a new journal's staging folder was removed only by the device that made it,
    and a FUSE or FAT store remounted under other numbers is another device: the folder stayed
    for good, carried by every sync engine. Here it comes to a device that is not the one that
    made it (a sync engine's copy): kept while it may still be in use, removed once left for a
    day, with nothing committed lost and nothing to report."""
    other = a_first_journal_killed_at_its_first_record(fuse_store, tmp_path)
    subprocess.run(["cp", "-a", f"{other.vault}/.", str(fuse_store.vault)], check=True)   # as a sync engine would
    left = staging_folders(fuse_store)
    assert len(left) == 1 and [p.name for p in left[0].iterdir()] != [], "no staging folder was left"
    fuse_store.ok("mkdir /kept; ls /")
    assert staging_folders(fuse_store) == left, "a staging folder that may be in use was removed"
    day_ago = time.time() - 25 * 3600
    for p in [*left[0].iterdir(), left[0]]:
        os.utime(p, (day_ago, day_ago))
    r = fuse_store.ok("ls /; verify")
    assert staging_folders(fuse_store) == [], "the left staging folder stayed"
    assert r.out_lines[0] == "kept" and r.err_lines == [], r.describe()


def test_on_fuse_a_process_killed_before_a_new_journal_s_first_record_leaves_no_empty_journal(fuse_store, tmp_path):
    """Review AA: where there are no unnamed files (FUSE, FAT) a new journal was created empty
    under its name, then written: a kill between left a journal of 0 bytes that every sync
    spread, and every device reported at every open for good (no device can tell whose it
    is). It now waits for its first record in a folder of this device's, removed at the next
    open. Killed here at that record's write: another device's first journal (a copy of the
    store in another folder)."""
    other = a_first_journal_killed_at_its_first_record(fuse_store, tmp_path)
    empty = [p for p in other.vault.glob("??/*") if p.stat().st_size == 0]
    for n in (other, fuse_store):
        r = n.ok("ls /")
        assert "holds no whole record" not in r.err, r.describe()
    subprocess.run(["cp", "-a", f"{other.vault}/.", str(fuse_store.vault)], check=True)   # as a sync engine would
    r = fuse_store.ok("ls /; verify")
    assert "holds no whole record" not in r.err and not empty, f"{empty}" + r.describe()
    assert other.ok("mkdir /x; ls /").out_lines == ["x"]
    assert staging_folders(other) == [], "the staging folder stayed"


@pytest.mark.parametrize("on_fuse", [False, True], ids=["unnamed-file", "staging-folder-on-fuse"])
def test_a_new_journal_whose_name_does_not_reach_the_disk_is_taken_back_not_emptied(narnia_bin, tmp_path, request, on_fuse):
    """Review AD: a new journal's first record is written, the journal is named (linked, or on
    FUSE renamed from its staging folder), and its folder's `fsync` fails (EIO, injected into
    the first `fsync` of a shard folder, whichever of the 256 the new device's is: counting
    all `fsync`s missed it when that shard was already there, as init's is). The failed append
    cut the file, under its name by then, to 0 bytes and left it: every device reported it at
    every open, for good. Now the name is taken back, and the command says what failed."""
    n = Narnia(narnia_bin, tmp_path)
    if on_fuse:
        n.vault = request.getfixturevalue("fuse_mount") / "vault"
    n.init()
    other = Narnia(narnia_bin, tmp_path / "other")
    other.vault = n.vault.parent / "vault2"
    subprocess.run(["cp", "-a", str(n.vault), str(other.vault)], check=True)
    shard_folders = [word for shard in range(256) for word in ("-P", f"{other.vault}/{shard:02x}")]
    argv = ["strace", "-f", "-o", "/dev/null", "-e", "trace=fsync", *shard_folders, "-e", "inject=fsync:error=EIO:when=1"] \
        + other.argv(["-c", "mkdir /x"])
    r = subprocess.run(argv, capture_output=True, text=True, env=other.env, cwd=other.workdir)
    assert r.returncode == 1 and re.search(r"error: mkdir: .*/vault2/[0-9a-f]{2}: input/output error", r.stderr), r.stderr
    empty = [p.name for p in other.vault.glob("??/*") if p.stat().st_size == 0]
    assert empty == [], "a journal was left empty under its name"
    subprocess.run(["cp", "-a", f"{other.vault}/.", str(n.vault)], check=True)   # as a sync engine would
    for device in (other, n):
        r = device.ok("ls /; verify")
        assert "holds no whole record" not in r.err and "x" not in r.out_lines, r.describe()
    assert other.ok("mkdir /x; ls /").out_lines == ["x"]


def test_on_fuse_a_fetch_cut_off_in_a_fork_says_so(narnia_bin, host, tmp_path, fuse_mount):
    """Review AB: on FUSE each folder a fetch put files in is `fsync`ed; that of this device's
    object held back for its journal, never made here, was too, and the sync failed saying
    "no such file or directory" in place of what happened."""
    n = Narnia(narnia_bin, tmp_path)
    n.vault = fuse_mount / "vault"
    a_fork_whose_fetch_is_cut_off(n, host, tmp_path, "a network error")


def test_on_fuse_every_object_is_fsynced_before_the_originals_go(fuse_store, tmp_path):
    n = fuse_store
    host = tmp_path / "host"
    host.mkdir()
    (host / "small.txt").write_bytes(b"hello\n")
    (host / "big.bin").write_bytes(bytes(range(256)) * 12_000)   # 3 MB: an object of its own
    before = store_objects(n)
    fsynced, syncfs_calls = synced_paths(n, f"import --move {q(str(host / 'small.txt'))} {q(str(host / 'big.bin'))}", tmp_path)
    assert not (host / "small.txt").exists() and not (host / "big.bin").exists()
    new = store_objects(n) - before
    journals = {p for p in new if n.vault.joinpath(p).stat().st_mode & 0o777 != 0o400}
    objects = new - journals
    assert len(objects) == 2, f"expected a pack and an object: {sorted(new)}"
    assert objects <= fsynced, f"objects never fsynced on FUSE: {sorted(objects - fsynced)}"
    assert syncfs_calls == 0, "syncfs does not reach a FUSE server's disk; it should not be relied on"
    assert n.c("cat /small.txt").out == "hello\n"


def test_on_fuse_move_says_the_lease_saw_no_writer_beneath(vault, fuse_mount, tmp_path):
    """Review DF-1: on FUSE the kernel grants the read lease but sees only the openers through
    the mount: a program appending to the original beneath it (on the server, the backing
    folder here) was not seen, and `import --move` removed the original without a word (not
    even CB-4's warning). It is removed, as the lease found no writer, and said to be so."""
    backing = tmp_path / "backing"
    (backing / "log.txt").write_text("line 1\n")
    with open(backing / "log.txt", "a") as writer:
        r = vault.ok(f"import --move {q(str(fuse_mount / 'log.txt'))}")
        writer.write("line 2\n")
    assert "removed without the check that no other program had it open for writing: on this file system (FUSE" in r.err, r.describe()
    assert vault.ok("cat /log.txt").out == "line 1\n"


def test_sigterm_while_originals_are_removed_keeps_the_rest_and_says_so(vault, tmp_path):
    """Review DF-2: SIGTERM while `import --move` removed its originals, on a slow file system
    (each unlink held 0.3 s here, as a round trip to an sshfs server may be), ended the process
    after its grace wherever it was: one original left under a hidden name, the rest gone or
    kept without a word, no `imported` line. No removal is begun once it is asked to end; what
    was imported is said, and the originals kept."""
    src = tmp_path / "d"
    src.mkdir()
    for i in range(20):
        (src / f"f{i:02}").write_text(f"file {i}\n")
    p = started_under_strace(vault, f"import --move {q(str(src))}", tmp_path / "strace.log",
                             ["-e", "trace=renameat,renameat2,unlinkat", "-e", "inject=unlinkat:delay_enter=300000"],
                             until="rename", what="the removal of its originals")
    narnia = int(Path(f"/proc/{p.pid}/task/{p.pid}/children").read_text().split()[0])
    os.kill(narnia, signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert out.count("imported ") == 20, out
    kept = sorted(f.name for f in src.iterdir())
    assert not [name for name in kept if name.startswith(".narnia-removing-")], kept
    assert len(kept) >= 18 and f"the originals of the last {len(kept)} files imported are kept" in err, (kept, err)
    assert all(vault.ok(f"cat /d/{name}").out == (src / name).read_text() for name in kept)


def test_import_move_says_what_it_imported_before_it_removes_an_original(vault, tmp_path):
    """Review DR-1: the `imported` lines of a batch waited in the output's buffer while its
    originals were removed: killed then, originals were gone and a script's log held none of
    them. Killed at any removal, every original gone is named in the log."""
    src = tmp_path / "d"
    log = tmp_path / "import.log"
    for when in (1, 5, 15):
        src.mkdir()
        for i in range(20):
            (src / f"f{i:02}").write_text(f"file {i}\n")
        with open(log, "w") as out:
            r = subprocess.run(["strace", "-f", "-o", "/dev/null", "-e", "trace=unlinkat", "-e", f"inject=unlinkat:signal=KILL:when={when}"]
                               + vault.argv(["-c", f"import --move {q(str(src))}"]), stdout=out, stderr=subprocess.PIPE,
                               env=vault.env, cwd=vault.workdir)
        left = {f.name for f in src.iterdir()}
        said = {line.split(" -> ")[0].rsplit("/", 1)[-1] for line in log.read_text().splitlines() if line.startswith("imported ")}
        gone = {f"f{i:02}" for i in range(20)} - left
        assert r.returncode in (-9, 137) and gone and gone <= said, (when, sorted(gone), sorted(said))
        vault.ok("rm -r /d")
        shutil.rmtree(src)
    # Review DS-1: nor when the lines could not be written: every original stays.
    src.mkdir()
    for i in range(20):
        (src / f"f{i:02}").write_text(f"file {i}\n")
    with open("/dev/full", "w") as full:
        r = subprocess.run(vault.argv(["-c", f"import --move {q(str(src))}"]), stdout=full, stderr=subprocess.PIPE, text=True,
                           env=vault.env, cwd=vault.workdir)
    assert r.returncode == 1 and len(list(src.iterdir())) == 20, r.stderr
    assert "narnia: warning: import: standard output could not be written: the originals of 20 files imported are kept, as nothing says which they are (the vault holds them)" in r.stderr, r.stderr


def test_on_a_local_file_system_one_syncfs_does(vault, tmp_path):
    narnia = vault
    """The fast path stays: on the test folder's own (local) file system, one `syncfs`."""
    host = tmp_path / "host"
    host.mkdir()
    for i in range(3):
        (host / f"f{i}.txt").write_bytes(b"x" * (i + 1))
    before = store_objects(narnia)
    fsynced, syncfs_calls = synced_paths(narnia, f"import {q(str(host))}", tmp_path)
    objects = {p for p in store_objects(narnia) - before if narnia.vault.joinpath(p).stat().st_mode & 0o777 == 0o400}
    assert objects and syncfs_calls >= 1
    assert not objects & fsynced


def test_a_panic_during_an_export_to_fuse_leaves_no_partial_file(vault, fuse_mount, tmp_path):
    """Ctrl-\\ during an export onto FUSE left `.narnia-partial-…`, hundreds of MB of plaintext,
    while Ctrl-C, SIGTERM and SIGHUP removed it (a review): the panic stops the command too."""
    big = tmp_path / "big"
    block = os.urandom(1 << 20)
    with open(big, "wb") as f:
        for _ in range(256):
            f.write(block)
    vault.ok(f"import {q(str(big))}")
    destination = fuse_mount / "out"
    destination.mkdir()
    shell = Terminal(vault.argv(["enter"]), vault.env, vault.workdir)
    try:
        shell.expect("> ")
        shell.send(f"export /big {q(str(destination))}\r")
        deadline = time.monotonic() + 30
        while not any(p.name.startswith(".narnia-partial-") for p in destination.iterdir()):
            assert time.monotonic() < deadline, "the export never began"
            time.sleep(0.01)
        shell.send("\x1c")
        assert shell.wait(timeout=10) == 0
    finally:
        shell.close()
    assert list(destination.iterdir()) == [], f"left behind: {[p.name for p in destination.iterdir()]}"


def traced_export(n: Narnia, command: str, tmp_path) -> list[str]:
    """Runs `command` under strace; returns its `fsync`, `syncfs`, `linkat` and `rename` calls in order."""
    return traced_calls(n, command, tmp_path / "strace.log", ["fsync", "syncfs", "linkat", "renameat", "renameat2"])


def imported_files_and_an_export_folder(vault: Narnia, tmp_path, name: str, count: int) -> Path:
    """Imports a folder `name` of `count` files `fI.txt` (holding "content I"); returns an empty
    host folder to export into."""
    src = tmp_path / name
    src.mkdir()
    for i in range(count):
        (src / f"f{i}.txt").write_bytes(b"content %d\n" % i)
    vault.ok(f"import {q(str(src))}")
    out = tmp_path / "out"
    out.mkdir()
    return out


def test_exported_files_are_on_disk_before_they_are_named_and_reported(vault, tmp_path):
    """An export named its files before their bytes reached the disk and never synced them: after
    a power cut, every file of `export /data DEST; rm -r /data` was there with 0 bytes, the vault
    empty (a review, on ext4, XFS and Btrfs). A `syncfs` now comes before the first file takes its
    name, and another after the last, before the export returns; with `-f` too."""
    out = imported_files_and_an_export_folder(vault, tmp_path, "data", 5)
    for command in (f"export /data {q(str(out))}", f"export -f /data {q(str(out))}"):
        calls = traced_export(vault, command, tmp_path)
        named = [i for i, c in enumerate(calls) if ("linkat" in c or "rename" in c) and str(out) in c]
        synced = [i for i, c in enumerate(calls) if "syncfs(" in c]
        assert len(named) >= 5, calls
        assert synced and synced[0] < named[0] and synced[-1] > named[-1], calls
        assert sorted(p.name for p in (out / "data").iterdir()) == [f"f{i}.txt" for i in range(5)]
        assert (out / "data" / "f3.txt").read_bytes() == b"content 3\n"


def test_exported_files_whose_names_the_disk_did_not_confirm_are_said_so_and_synced_when_skipped(vault, tmp_path):
    """Review DC-1: when the `syncfs` after the files took their names failed, the export said
    "3 files not exported", though all three stood in place, whole; the rerun the hint leads to,
    `export --skip-existing`, took them for done and exited 0 without syncing anything. The
    message says they are in place, unconfirmed, and `--skip-existing` makes what it skips
    durable (and fails when it cannot)."""
    out = imported_files_and_an_export_folder(vault, tmp_path, "d", 3)

    def export(command, inject_when=None):
        log = tmp_path / "strace.log"
        inject = ["-e", f"inject=syncfs:error=EIO:when={inject_when}"] if inject_when else []
        argv = ["strace", "-f", "-o", str(log), "-e", "trace=syncfs", *inject] + vault.argv(["-c", command])
        r = subprocess.run(argv, capture_output=True, text=True, env=vault.env, cwd=vault.workdir)
        return r, log.read_text().count("syncfs(")

    r, _ = export(f"export /d {q(str(out))}", inject_when=2)
    assert r.returncode == 1 and "3 files are in place, but the disk did not confirm their names" in r.stderr, r.stderr
    assert "run the export again with --skip-existing, which makes what it skips durable" in r.stderr, r.stderr   # DD-3
    assert sorted(p.name for p in (out / "d").iterdir()) == ["f0.txt", "f1.txt", "f2.txt"]
    r, _ = export(f"export --skip-existing /d {q(str(out))}", inject_when=1)
    assert r.returncode == 1 and "input/output error" in r.stderr, r.stderr
    r, syncs = export(f"export --skip-existing /d {q(str(out))}")
    assert r.returncode == 0 and syncs >= 1 and r.stdout.count("(already there)") == 3, (syncs, r.stdout, r.stderr)


def test_on_fuse_each_exported_file_and_its_folder_is_fsynced(vault, fuse_mount, tmp_path):
    """Where `syncfs` does not reach the disk (FUSE), every exported file is `fsync`ed before it
    takes its name, and the folders after."""
    src = tmp_path / "data"
    src.mkdir()
    for i in range(3):
        (src / f"f{i}.txt").write_bytes(b"x" * (i + 1))
    vault.ok(f"import {q(str(src))}")
    calls = traced_export(vault, f"export /data {q(str(fuse_mount))}", tmp_path)
    fsyncs = [c for c in calls if c.startswith("fsync(") or re.search(r"\bfsync\(", c)]
    on_mount = [c for c in fsyncs if str(fuse_mount) in c]
    assert len(on_mount) >= 3 + 2, calls  # three files, then the folder made and the top
    first_name = next(i for i, c in enumerate(calls) if "rename" in c or "linkat" in c)
    assert sum(1 for c in calls[:first_name] if re.search(r"\bfsync\(", c) and str(fuse_mount) in c) >= 3, calls
    assert sorted(p.name for p in (fuse_mount / "data").iterdir()) == ["f0.txt", "f1.txt", "f2.txt"]


def test_export_force_replaces_a_file_only_with_one_on_disk(vault, tmp_path):
    """`export -f` renamed an unsynced file over the existing one: after a power cut, an empty or
    partial file where a whole one stood (a review)."""
    (tmp_path / "a.txt").write_bytes(b"new content\n")
    vault.ok(f"import {q(str(tmp_path / 'a.txt'))}")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_bytes(b"old\n")
    calls = traced_export(vault, f"export -f /a.txt {q(str(out))}", tmp_path)
    replaced = next(i for i, c in enumerate(calls) if "rename" in c and str(out) in c)
    assert any("syncfs(" in c or re.search(r"\bfsync\(", c) for c in calls[:replaced]), calls
    assert (out / "a.txt").read_bytes() == b"new content\n"


def test_rm_of_several_operands_is_one_change(vault, host):
    """Review ET-3: `rm` of several operands (a glob) wrote a record, and waited for the disk,
    for each: killed part way, it had removed some and not the others. Its operands are now
    checked first and removed in one record (one `fdatasync`), killed anywhere all or none."""
    folder = host / "in"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text(name)
    vault.ok(f"import {q(str(folder))}")
    argv = ["strace", "-f", "-o", "/dev/null", "-e", "trace=fdatasync", "-e", "inject=fdatasync:signal=SIGKILL:when=1"] \
        + vault.argv(["-c", "rm /in/*.txt"])
    assert subprocess.run(argv, capture_output=True, env=vault.env, cwd=vault.workdir).returncode != 0
    assert vault.ok("ls /in").out_lines == [], "killed at its first wait for the disk, rm had removed only some"


def test_a_file_export_force_left_when_killed_is_named_by_the_next_export(vault, tmp_path):
    """Review AG (F5): `export -f` links the new file under a hidden `.narnia-partial-…` name
    and renames it over the old one; killed in between, the whole plaintext stayed beside the
    target, and nothing ever named it. It cannot be avoided (no call puts an unnamed file over
    a name); the next export into that folder names it, and leaves it (it may be another
    export's, under way)."""
    (tmp_path / "a.txt").write_bytes(b"new content\n")
    vault.ok(f"import {q(str(tmp_path / 'a.txt'))}")
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.txt").write_bytes(b"old\n")
    log = tmp_path / "strace.log"
    command = f"export -f /a.txt {q(str(out))}"
    argv = ["strace", "-f", "-o", str(log), "-e", "trace=renameat,renameat2"] + vault.argv(["-c", command])
    assert subprocess.run(argv, capture_output=True, env=vault.env, cwd=vault.workdir).returncode == 0
    call, when = first_call(log, ["renameat", "renameat2"], lambda line: ".narnia-partial-" in line)
    (out / "a.txt").write_bytes(b"old\n")
    argv = ["strace", "-f", "-o", "/dev/null", "-e", f"trace={call}", "-e", f"inject={call}:signal=SIGKILL:when={when}"] \
        + vault.argv(["-c", command])
    assert subprocess.run(argv, capture_output=True, env=vault.env, cwd=vault.workdir).returncode != 0
    left = sorted(p.name for p in out.glob(".narnia-partial-*"))
    assert len(left) == 1 and (out / "a.txt").read_bytes() == b"old\n", left
    r = vault.ok(command)
    assert any(f"{out}/{left[0]}: left by an export killed" in line for line in r.err_lines), r.describe()
    assert (out / left[0]).exists() and (out / "a.txt").read_bytes() == b"new content\n"
    # Review ET-2: the re-run an interruption suggests, `--skip-existing`, finding every file of
    # that folder in place, named it too (it wrote nothing there, and looked at nothing).
    r = vault.ok(f"export --skip-existing /a.txt {q(str(out))}")
    assert "(already there)" in r.out and any(f"{out}/{left[0]}: left by an export killed" in line for line in r.err_lines), r.describe()


def test_files_appear_whole_for_an_ordinary_user_before_linux_6_10(narnia, tmp_path):
    """Before Linux 6.10, `linkat(fd, "", …, AT_EMPTY_PATH)` needs CAP_DAC_READ_SEARCH, which an
    ordinary user lacks (ENOENT): `init`, `passwd`, drops and every `export` failed for them on
    Debian 12's kernel (a review; these tests run as root on a newer kernel). strace fails each
    such call as that kernel would, and the /proc/self/fd link must do instead."""
    def run(args, **kw):
        argv = ["strace", "-f", "-o", "/dev/null", "-e", "trace=linkat", "-e", "inject=linkat:error=ENOENT:when=1+2"]
        return subprocess.run(argv + narnia.argv(args, **kw), capture_output=True, text=True, env=narnia.env, cwd=narnia.workdir)
    r = run(["init"])
    assert r.returncode == 0, r.stderr
    (tmp_path / "a.txt").write_bytes(b"hello\n")
    out = tmp_path / "out"
    out.mkdir()
    r = run(["drop", str(tmp_path / "a.txt")], passphrase=None)
    assert r.returncode == 0, r.stderr
    r = run(["-c", f"export /Inbox/a.txt {q(str(out))}"])
    assert r.returncode == 0, r.stderr
    assert (out / "a.txt").read_bytes() == b"hello\n"


def test_sync_makes_what_it_moved_durable_before_it_builds_on_it(vault, tmp_path):
    """rclone syncs nothing it writes. A power cut after `sync` left the remote folder one sync
    behind; and after the next command the received journal empty while this device's record
    acknowledging it was on disk (a review, on ext4 and XFS). A `syncfs` now follows what is
    sent to a folder, and comes before and after the received files take their place."""
    remote = tmp_path / "remote"
    remote.mkdir()
    vault.ok(f"sync {q(str(remote))}")
    other = Narnia(vault.binary, tmp_path / "other-work")
    other.vault = tmp_path / "other"
    shutil.copytree(remote, other.vault)
    os.chmod(other.vault, 0o700)
    (tmp_path / "a.txt").write_bytes(b"a\n")
    sync_calls = ["syncfs", "rename", "renameat", "renameat2"]
    calls = traced_calls(vault, f"import {q(str(tmp_path / 'a.txt'))}; sync {q(str(remote))}", tmp_path / "a.log", sync_calls)
    last_write = max(i for i, c in enumerate(calls) if "rename" in c and str(remote) in c)
    assert any("syncfs(" in c and str(remote) in c for c in calls[last_write:]), calls
    calls = traced_calls(other, f"sync {q(str(remote))}", tmp_path / "b.log", sync_calls)
    placed = [i for i, c in enumerate(calls) if "rename" in c and f'"{other.vault}/' in c.split(", ")[-1]]
    synced = [i for i, c in enumerate(calls) if "syncfs(" in c and str(other.vault) in c]
    assert placed and synced and synced[0] < placed[0] and synced[-1] > placed[-1], calls
    assert "a.txt" in other.ok("ls /").out


def test_sync_to_a_union_makes_each_of_its_folders_durable(vault, tmp_path):
    """A union remote puts each file in one of its upstreams, as its create policy chooses:
    what was sent to a union of folders here is made durable in each folder it went to (the
    sync once made none of them so)."""
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
    (tmp_path / "x.txt").write_bytes(b"x\n")
    remote = f":union,upstreams='{folders[0]} {folders[1]}':"
    sync_calls = ["syncfs", "rename", "renameat", "renameat2"]
    calls = traced_calls(vault, f"import {q(str(tmp_path / 'x.txt'))}; sync {q(remote)}", tmp_path / "u.log", sync_calls)
    written = 0
    for folder in folders:
        writes = [i for i, c in enumerate(calls) if "rename" in c and f"{folder}/" in c]
        if writes:
            written += 1
            assert any("syncfs(" in c and f"<{folder}>" in c for c in calls[max(writes):]), (folder, calls)
    assert written, calls
    assert sum(len(list(folder.rglob("*"))) for folder in folders) > 0


@pytest.mark.serial
def test_import_move_keeps_an_original_a_program_opened_for_writing_while_it_was_compared(vault, host):
    """Review AD: `import --move` holds a read lease on the original while it compares it with
    the vault's copy and removes it; a program that opened it for writing meanwhile (an editor
    saving in place) waited for the lease, then wrote into the removed file: its bytes were
    gone, exit 0, no word. The opener is now noticed before the removal. The file is just
    written, so it is compared byte for byte, which leaves time to open it during the lease."""
    original = host / "video.bin"
    with open(original, "wb") as f:
        for _ in range(150):
            f.write(os.urandom(1 << 20))
    ino = os.stat(original).st_ino
    p = vault.popen("-c", f"import --move {q(str(original))}")
    deadline = time.monotonic() + 120
    while not any("LEASE" in line and f":{ino} " in line for line in open("/proc/locks").read().splitlines()):
        if p.poll() is not None or time.monotonic() > deadline:
            pytest.skip("the import ended before its lease was seen (a file system without leases?)")
        time.sleep(0.002)
    fd = os.open(original, os.O_WRONLY)   # waits for the lease
    os.pwrite(fd, b"saved by the user", 0)
    os.fsync(fd)
    os.close(fd)
    out, err = p.communicate(timeout=120)
    assert original.exists(), f"the original went with what was saved into it: {err.decode()}"
    assert original.read_bytes()[:17] == b"saved by the user"
    # Said as for an original changed while it was imported: a warning, the import done.
    assert "warning: import: " in err.decode() and "another program opened it for writing; the original is kept" in err.decode(), err.decode()


@pytest.mark.serial
@pytest.mark.parametrize("arrives", ["before-the-removal", "before-the-removal-on-fuse", "while-it-is-removed"])
def test_import_move_sees_a_program_that_opens_the_original_as_it_is_removed(vault, host, request, arrives):
    """Review AD's race left by the test above: an opener for writing arriving between the last
    look at the lease and the removal wrote into the removed file, in silence. The original is
    now first renamed to a hidden name, the lease asked again, and only then removed. Each
    system call of the removal is held 5 s (strace), and the program opens the original in
    that time: by its name, before the rename (it is kept, and says so), or, as an open under
    way in the kernel across the rename would, through narnia's own descriptor of it (the
    removal goes on, and says what the program writes is lost). On FUSE (bindfs) the same."""
    if arrives.endswith("-on-fuse"):
        host = request.getfixturevalue("fuse_mount")
    original = host / "photo.jpg"

    def attempt():
        original.write_bytes(os.urandom(1 << 20))
        os.utime(original, (time.time() - 3600, time.time() - 3600))   # old: no byte comparison
        ino = os.stat(original).st_ino
        held = import_move_held(vault, original, "renameat,renameat2,linkat,unlinkat,unlink" if arrives.startswith("before") else "unlinkat,unlink")
        p = held.process
        if arrives.startswith("before"):
            held.check_in_time()
            fd = os.open(original, os.O_WRONLY)   # waits for the lease
        else:
            narnia = int(subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()[0])
            try:
                links = [f"/proc/{narnia}/fd/{n}" for n in os.listdir(f"/proc/{narnia}/fd")]
            except PermissionError:
                pytest.skip("narnia's descriptors are root's to open (it is not dumpable)")
            held.check_in_time()
            fd = os.open(next(link for link in links if os.stat(link).st_ino == ino), os.O_WRONLY)   # waits for the lease
        os.pwrite(fd, b"saved by the user", 0)
        os.close(fd)
        err = p.communicate(timeout=60)[1].decode()
        assert p.returncode == 0, err
        return err

    err = in_time(attempt, undo=lambda: vault.ok("rm -f /photo.jpg"))
    if arrives.startswith("before"):
        assert original.read_bytes()[:17] == b"saved by the user", f"the save went with the original: {err}"
        assert "another program opened it for writing; the original is kept" in err, err
    else:
        assert not original.exists()
        assert "another program opened it for writing as it was removed: what that program writes goes to the removed file" in err, err
    assert [p.name for p in host.iterdir()] == (["photo.jpg"] if arrives.startswith("before") else []), "a hidden file stayed"
    assert vault.ok("ls /").out_lines == ["photo.jpg"]


def test_import_move_says_which_originals_it_removed_without_a_lease(vault, host):
    """Review CB-4: where no lease can be taken (a file of another user, a file system without
    them; here leases are turned off), nothing can tell whether a program has the original
    open for writing, and its later writes go to the removed file: the originals were removed
    without a word. One warning names them at the end."""
    try:
        with open("/proc/sys/fs/leases-enable", "w") as f:
            f.write("0")
    except OSError:
        pytest.skip("leases cannot be turned off here (root only)")
    try:
        for name in ("a.txt", "b.txt", "c.txt"):
            (host / "in" / name).parent.mkdir(exist_ok=True)
            (host / "in" / name).write_text(name)
        r = vault.ok(f"import --move {q(str(host / 'in'))}")
    finally:
        with open("/proc/sys/fs/leases-enable", "w") as f:
            f.write("1")
    assert not (host / "in").exists() and vault.ok("ls /in").out_lines == ["a.txt", "b.txt", "c.txt"]
    warned = [l for l in r.err_lines if "removed without the check" in l]
    assert warned == [f"narnia: warning: import: {host / 'in' / 'a.txt'} and 2 more: removed without the check that no other program "
                      "had them open for writing: no lease could be taken (invalid argument: the file system takes none, or leases "
                      "are off); what such a program writes "
                      "after goes to the removed file"], r.describe()


class TooLate(Exception):
    """The test ran too late to act inside a held window: nothing can be judged from it."""


class HeldImport:
    """An `import --move` whose removal is held (`import_move_held`), and when its lease was
    first seen at the latest."""

    def __init__(self, process: subprocess.Popen, lease_since: float):
        self.process = process
        self.lease_since = lease_since

    def check_in_time(self, window: float = 3.5):
        """Raises `TooLate` (once the import has ended) when more of the held 5 s may have
        passed since the lease was taken than `window`: on a loaded machine the test itself may
        not run for seconds (ci39, ci54: the original was already gone when it was opened), and
        then the removal it meant to meet may be over."""
        late = time.monotonic() - self.lease_since
        if late > window:
            self.process.communicate(timeout=60)
            raise TooLate(f"{late:.1f} s after the lease")


def in_time(attempt, undo, attempts: int = 3):
    """Runs `attempt` until it acts inside its held window (it raises `TooLate` when it could
    not), calling `undo` after each that came too late; returns what it returned."""
    for _ in range(attempts):
        try:
            return attempt()
        except TooLate:
            undo()
    pytest.fail(f"{attempts} attempts came too late into their held windows: the machine is too loaded to judge")


def import_move_held(vault, original: Path, held: str) -> HeldImport:
    """`import --move ORIGINAL` with each of the system calls `held` (strace names) held 5 s,
    returned once its lease on the original was seen and the removal is held."""
    ino = os.stat(original).st_ino
    argv = ["strace", "-f", "-o", "/dev/null", "-e", f"trace={held}", "-e", f"inject={held}:delay_enter=5000000"] \
        + vault.argv(["-c", f"import --move {q(str(original))}"])
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=vault.env, cwd=vault.workdir)
    deadline = time.monotonic() + 60
    # The lease was taken after the last look that did not see it.
    looked = time.monotonic()
    while not any("LEASE" in line and f":{ino} " in line for line in open("/proc/locks").read().splitlines()):
        if p.poll() is not None or time.monotonic() > deadline:
            pytest.skip("the import ended before its lease was seen (a file system without leases?)")
        time.sleep(0.002)
        looked = time.monotonic()
    time.sleep(0.3)   # the lease was looked at; the removal is held
    return HeldImport(p, looked)


@pytest.mark.serial
@pytest.mark.parametrize("held", ["the-rename-aside", "the-removal-on-fuse"])
def test_import_move_keeps_a_new_version_saved_over_the_original_as_it_is_removed(vault, host, request, held):
    """Review AR: `import --move` looked at the original through its descriptor, then renamed
    it aside by name: a program saving a new version by renaming it over the original in
    between (editors do) had that version renamed aside and removed, exit 0, no word. The
    rename is held 5 s (strace) and the new version put in place meanwhile. On FUSE (bindfs),
    which cannot rename without replacing, the rename aside was a link then an unlink of the
    name, and a version saved between the two was the one removed (review CI-1): there the
    removal is held."""
    if held.endswith("-on-fuse"):
        host = request.getfixturevalue("fuse_mount")
    original = host / "notes.txt"

    def attempt():
        original.write_bytes(b"first version\n")
        os.utime(original, (time.time() - 3600, time.time() - 3600))   # old: no byte comparison
        imported = import_move_held(vault, original, "renameat,renameat2" if held == "the-rename-aside" else "unlinkat")
        (host / "notes.txt.new").write_bytes(b"second version\n")
        imported.check_in_time()
        os.replace(host / "notes.txt.new", original)   # a rename breaks no lease
        p = imported.process
        err = p.communicate(timeout=60)[1].decode()
        assert p.returncode == 0, err
        return err

    err = in_time(attempt, undo=lambda: vault.ok("rm -f /notes.txt"))
    assert original.read_bytes() == b"second version\n", f"the new version went: {err}"
    if held == "the-rename-aside":
        assert "another file took its name as it was removed (a program saving a new version); that file is kept" in err, err
    assert [p.name for p in host.iterdir()] == ["notes.txt"], "a hidden file stayed"
    assert vault.ok("cat /notes.txt").out == "first version\n"


def test_an_original_left_under_its_hidden_name_by_a_killed_import_move_is_not_taken_in_again(vault, host):
    """A narnia killed between renaming an original to its hidden name and removing it leaves
    the file: its vault copy is committed, so importing the folder again skips it, saying so,
    rather than taking it in a second time under the hidden name."""
    (host / "photo.jpg").write_bytes(b"taken in")
    (host / ".narnia-removing-3f2a9c").write_bytes(b"taken in before")
    r = vault.ok(f"import --move {q(str(host))}; ls -a /{host.name}")
    assert r.out_lines[-1:] == ["photo.jpg"], r.describe()
    # Review DF-3: said as what it most likely is, not as a fact, nor with "delete it".
    assert f"warning: import: {host}/.narnia-removing-3f2a9c: skipped: an import --move gives an original such a name just before removing it" in r.err, r.describe()
    assert "check that before you delete it" in r.err and "its vault copy was committed" not in r.err, r.describe()
    assert [p.name for p in host.iterdir()] == [".narnia-removing-3f2a9c"]


def test_a_file_of_the_users_that_only_begins_like_an_originals_hidden_name_is_imported(vault, host):
    """Review EY-1: every file whose name began `.narnia-removing-` was skipped — the user's
    `.narnia-removing-notes.txt` too, with exit 0, so that `import --move DIR && rm -rf DIR`
    lost it. Only the form narnia gives (the prefix and up to 16 hex digits) is skipped."""
    for name in (".narnia-removing-notes.txt", ".narnia-removing-", ".narnia-removing-3F2A", ".narnia-removing-12345678901234567"):
        (host / name).write_bytes(name.encode())
    r = vault.ok(f"import -q --move {q(str(host))}; ls -a /{host.name}")
    assert sorted(r.out_lines) == sorted([".narnia-removing-notes.txt", ".narnia-removing-", ".narnia-removing-3F2A",
                                          ".narnia-removing-12345678901234567"]), r.describe()
    assert "skipped" not in r.err and not host.exists(), r.describe()


def first_call(log: Path, calls: list[str], matching) -> tuple[str, int]:
    """The first of the system calls `calls` in the strace log `log` whose line is `matching`:
    its name and its number among the calls of that name (which strace's `inject=…:when=`
    counts apart)."""
    seen = dict.fromkeys(calls, 0)
    for line in log.read_text().splitlines():
        if m := re.search(r"\b(" + "|".join(calls) + r")\(", line):
            seen[m[1]] += 1
            if matching(line):
                return m[1], seen[m[1]]
    pytest.fail(f"none of {calls} in {log} is the one looked for")


# Each command's arguments, whether it opens the vault, and the warning the next open gives
# after it was killed at its new file's first write (passwd's retirement record came first).
WHOLE_FILE_WRITERS = {
    "passwd": (lambda n: ["-c", f"passwd --new-passphrase-file {q(str(n.passphrase_file('battery staple')))}"], True,
               "a change of passphrase on this device did not finish"),
    "inbox-key --rotate": (lambda n: ["-c", "inbox-key --rotate"], True, None),
    "drop": (lambda n: ["drop", str(n.workdir / "dropped.txt")], False, None),
}


@pytest.mark.parametrize("command", list(WHOLE_FILE_WRITERS))
def test_on_fuse_a_store_file_cut_short_by_a_kill_leaves_nothing_under_its_name(narnia_bin, tmp_path, fuse_mount, command):
    """Review AG (F3, F4): where there are no unnamed files (FUSE here, FAT), a new key file,
    inbox public key file or drop was made under its final name, then written: a kill between
    left it empty there — every open said a new key file was "still arriving", the inbox key
    could not be read and `drop` failed until `inbox-key --rotate`, a drop stayed "not whole".
    It is now written under a hidden temporary name and renamed; the kill (at its first write)
    leaves only that name, which no open reads and one removes once left for a day."""
    n = Narnia(narnia_bin, tmp_path)
    n.vault = fuse_mount / "vault"
    n.init()
    n.ok("mkdir /kept")
    (n.workdir / "dropped.txt").write_text("a dropped file\n")
    make_args, opened, expected_warning = WHOLE_FILE_WRITERS[command]
    args = make_args(n)
    pristine = tmp_path / "pristine"
    subprocess.run(["cp", "-a", str(n.vault), str(pristine)], check=True)
    before = set(n.store().sizes())

    # The first write into a file the command makes in the store, found by tracing it once.
    log = tmp_path / "strace.log"
    skip_unless_root_for_strace_paths()
    argv = ["strace", "-f", "-y", "-o", str(log), "-e", "trace=write,pwrite64"] + n.argv(args, passphrase=DEFAULT_PASSPHRASE if opened else None)
    assert subprocess.run(argv, capture_output=True, env=n.env, cwd=n.workdir).returncode == 0

    def into_a_new_store_file(line: str) -> bool:
        m = re.search(r"\(\d+<([^>]*)>", line)
        return bool(m) and m[1].startswith(str(n.vault) + "/") and os.path.relpath(m[1], n.vault) not in before
    call, when = first_call(log, ["write", "pwrite64"], into_a_new_store_file)

    shutil.rmtree(n.vault)
    subprocess.run(["cp", "-a", str(pristine), str(n.vault)], check=True)
    argv = ["strace", "-f", "-o", "/dev/null", "-e", f"trace={call}", "-e", f"inject={call}:signal=SIGKILL:when={when}"] + n.argv(args, passphrase=DEFAULT_PASSPHRASE if opened else None)
    r = subprocess.run(argv, capture_output=True, env=n.env, cwd=n.workdir)
    assert r.returncode != 0, "the command was not killed"

    empty = [p for p, size in n.store().sizes().items() if size == 0 and not Path(p).name.startswith(".")]
    assert empty == [], f"{command} killed left empty store files under their names"
    r = n.ok("ls /; verify")
    warnings = [l for l in r.err_lines if l != INSECURE_KDF_WARNING]
    assert r.out_lines[0] == "kept" and len(warnings) == (expected_warning is not None), r.describe()
    assert all(expected_warning in w for w in warnings), r.describe()
    drop = n("drop", str(n.workdir / "dropped.txt"), passphrase=None)
    assert drop.rc == 0, drop.describe()
    left = [p for p in n.vault.rglob(".narnia-writing-*")]
    assert len(left) == 1, f"the temporary file is not where it was: {left}"
    n.ok("pwd")
    assert left[0].exists(), "a temporary file a day old at most was removed: it may be a drop being written"
    day_ago = time.time() - 25 * 3600
    os.utime(left[0], (day_ago, day_ago))   # as a sync engine's copy keeps its source's time
    n.ok("pwd")
    assert left[0].exists(), "a temporary file changed within the day was removed: it may have just arrived"
    n.ok("pwd", **a_day_later(n))
    assert not left[0].exists(), "a temporary file left for a day was not removed"


def test_objects_a_kill_left_unmarked_after_their_record_are_marked_at_the_next_open(vault, host):
    """Review AG (F2): an object is made 0400 once the record naming it is durable; a kill in
    between left it 0600 until a compaction, so that, were that record lost later, it would
    be deleted as a leftover never named. The next open marks it."""
    for name in ("a", "b", "c"):     # 3 MB each: an object of its own, not one pack for all
        (host / f"{name}.txt").write_bytes(name.encode() * 3_000_000)
    before = set(vault.store().sizes())
    command = "import " + " ".join(q(str(host / f"{name}.txt")) for name in ("a", "b", "c"))
    argv = ["strace", "-f", "-o", "/dev/null", "-e", "trace=chmod", "-e", "inject=chmod:signal=SIGKILL:when=2"] \
        + vault.argv(["-c", command])
    assert subprocess.run(argv, capture_output=True, env=vault.env, cwd=vault.workdir).returncode != 0
    new = [vault.vault / p for p in set(vault.store().sizes()) - before]
    modes = sorted(p.stat().st_mode & 0o777 for p in new)
    assert modes == [0o400, 0o600, 0o600], f"the kill did not fall between the marks: {modes}"
    assert vault.ok("ls /").out_lines == ["a.txt", "b.txt", "c.txt"]
    modes = sorted(p.stat().st_mode & 0o777 for p in new)
    assert modes == [0o400, 0o400, 0o400], f"the objects of the record were not all marked: {modes}"


def test_on_fuse_a_drop_waiting_on_its_pipe_keeps_its_temporary_file(narnia_bin, tmp_path, fuse_mount):
    """Review AI: a drop from a pipe writes nothing until a chunk has come, so its temporary file
    can stay untouched for longer than the day after which an open removes one as left by a
    killed process — and the drop then failed, its input consumed. The dropper holds it
    locked, and an open leaves a locked one."""
    n = Narnia(narnia_bin, tmp_path)
    n.vault = fuse_mount / "vault"
    n.init()
    feeder = subprocess.Popen(["sh", "-c", "head -c 1000 /dev/urandom; sleep 4"], stdout=subprocess.PIPE)
    dropping = n.popen("drop", "-", "slow.bin", passphrase=None, stdin=feeder.stdout)
    feeder.stdout.close()
    try:
        deadline = time.monotonic() + 10
        while not (left := list(n.vault.rglob(".narnia-writing-*"))) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(left) == 1, "the drop made no temporary file"
        day_ago = time.time() - 25 * 3600
        os.utime(left[0], (day_ago, day_ago))
        n.ok("pwd")
        assert left[0].exists(), "an open removed the temporary file of a drop under way"
    finally:   # the FUSE mount is unmounted after: nothing may hold it
        out, err = dropping.communicate(timeout=60)
        feeder.wait()
    assert dropping.returncode == 0, err
    assert "slow.bin" in n.ok("ls /Inbox").out


def test_after_an_adoption_an_open_looks_at_one_object_not_all(vault, host, tmp_path):
    """Review AI: the check for a marking cut short looked at the newest record's greatest
    object, whoever's; an adopted drop (0600 for good, not this device's) made every open
    after an adoption probe the file system and stat every object of this device."""
    for name in ("a", "b", "c"):     # 3 MB each: an object of its own
        (host / f"{name}.bin").write_bytes(name.encode() * 3_000_000)
    vault.ok("import " + " ".join(q(str(host / f"{name}.bin")) for name in ("a", "b", "c")))
    (host / "h.txt").write_text("dropped\n")
    assert vault("drop", str(host / "h.txt"), passphrase=None).rc == 0
    assert "h.txt" in vault.ok("ls /Inbox").out
    log = tmp_path / "strace.log"
    argv = ["strace", "-f", "-o", str(log), "-e", "trace=newfstatat,statx,lstat,stat"] + vault.argv(["-c", "pwd"])
    assert subprocess.run(argv, capture_output=True, env=vault.env, cwd=vault.workdir).returncode == 0
    shard_file = re.compile(re.escape(str(vault.vault)) + r"/[0-9a-f]{2}/[0-9a-f]{32}")
    looked_at = {m.group(0) for line in log.read_text().splitlines() for m in [shard_file.search(line)] if m}
    # One object, and this device's journal, which a session looks at when it ends (that its
    # name still leads to the file it appends to: review CJ-2); not the four objects.
    assert len(looked_at) <= 2, "\n".join(sorted(looked_at))


@pytest.mark.parametrize("failing", ["unlink-of-the-temporary-name", "fsync-of-the-folder"])
def test_on_fuse_passwd_whose_key_file_is_in_place_never_says_it_failed_alone(narnia_bin, tmp_path, fuse_mount, failing):
    """Review AI: on FUSE the new key file is linked under its name, then its temporary name
    removed; that removal failing (EIO) made passwd fail although the new key file was in
    force: the old passphrase was refused, the new one — "not set" — was the only way in. The
    removal is not needed; a failed `fsync` of the folder after the name is given is reported
    saying the new passphrase opens the vault now."""
    n = Narnia(narnia_bin, tmp_path)
    n.vault = fuse_mount / "vault"
    n.init()
    command = f"passwd --new-passphrase-file {q(str(n.passphrase_file('battery staple')))}"
    if failing == "unlink-of-the-temporary-name":
        argv = ["strace", "-f", "-o", "/dev/null", "-e", "trace=unlinkat", "-e", "inject=unlinkat:error=EIO:when=1"]
    else:
        # The first `fsync` of the store's folder: the journal exists, so the retirement
        # record needs none; the key file's name is the first.
        skip_unless_root_for_strace_paths()
        argv = ["strace", "-f", "-o", "/dev/null", "-P", str(n.vault), "-e", "trace=fsync", "-e", "inject=fsync:error=EIO:when=1"]
    argv += n.argv(["-c", command])
    r = subprocess.run(argv, capture_output=True, text=True, env=n.env, cwd=n.workdir)
    if failing == "unlink-of-the-temporary-name":
        assert r.returncode == 0, r.stderr
    else:
        assert r.returncode == 1 and "the new passphrase opens the vault now; run 'passwd' again" in r.stderr, (r.returncode, r.stderr)
    assert n.c("pwd", passphrase="battery staple").rc == 0
    assert n.c("pwd").rc == 3


def test_an_init_killed_before_its_first_file_says_what_to_do(narnia_bin, tmp_path):
    """Review AI (N2): `init` killed at its first link left only an empty shard folder, which
    open called "other files" and init refused, without a word of what to do. Both now say
    (init does not go on by itself: a sync engine bringing a store makes such folders first,
    and a second vault there would mix with it: review AK)."""
    n = Narnia(narnia_bin, tmp_path)
    argv = ["strace", "-f", "-o", "/dev/null", "-e", "trace=linkat", "-e", "inject=linkat:signal=SIGKILL:when=1"] \
        + n.argv(["init"])
    assert subprocess.run(argv, capture_output=True, env=n.env, cwd=n.workdir).returncode != 0
    assert [p for p in n.vault.rglob("*") if p.is_file()] == [], "the kill fell after a file was written"
    for r in (n("-c", "pwd"), n("init")):
        assert r.rc in (1, 3) and "it holds only empty folders named like a store's: an init cut short" in r.err, r.describe()
    for shard in n.vault.iterdir():
        shard.rmdir()
    n.init()
    assert n.ok("mkdir /x; ls /").out_lines == ["x"]


def test_on_fuse_a_torn_record_is_kept_not_cut(narnia_bin, tmp_path, fuse_mount):
    """The record of a commit a kill stopped is cut off only on a local file system: on FUSE
    (sshfs, rclone mount) a copier on another machine, a restore still arriving, holds no lease
    here, so the tail is kept (review AY), said once (review AZ-4: not as a cut, which lost no
    committed record, and `verify` passes), and the device goes on in a new journal."""
    n = Narnia(narnia_bin, tmp_path)
    n.vault = fuse_mount / "vault"
    host = tmp_path / "host"
    host.mkdir()
    journal, size_before, objects = torn_import(n, host, 0o600)
    r = n.c("verify; mkdir /after")
    assert r.rc == 0 and any("could not be cut off" in l for l in r.err_lines), r.describe()
    assert journal.stat().st_size > size_before, r.describe()
    r = n.c("ls /; verify")
    assert r.rc == 0 and r.out_lines == ["after", "first.txt", "verified 2 items, all intact"], r.describe()
    assert not any("warning" in l for l in r.err_lines), "said once" + r.describe()
    assert journal.stat().st_size > size_before, r.describe()


@pytest.mark.parametrize("command", ["passwd", "passwd --rotate"])
def test_passwd_whose_key_file_is_not_written_says_the_old_passphrase_is_in_force(vault, command):
    """Review DH-3: with the disk full when the new key file was written, `passwd` said only
    "part of the command was done before the disk filled, and is kept: … look at what is there,
    then do the rest", not which passphrase opens the vault. (ENOSPC injected into the second
    `write`, the key file's; the first is the record retiring the old one.)"""
    vault.ok("mkdir /a")
    new = vault.passphrase_file("a new passphrase")
    full = ["strace", "-f", "-o", "/dev/null", "-e", "trace=write", "-e", "inject=write:error=ENOSPC:when=2"]
    r = subprocess.run(full + vault.argv(["-c", f"{command} --new-passphrase-file {q(str(new))}"]),
                       capture_output=True, text=True, env=vault.env, cwd=vault.workdir)
    said = [l for l in r.stderr.splitlines() if l.startswith("narnia: error: passwd: ")]
    assert r.returncode == 1 and said and said[0].startswith("narnia: error: passwd: the new key file could not be written (") \
        and said[0].endswith(f"the disk is full): the passphrase was not changed, and the old one still opens the vault; run '{command}' again once that is mended"), r.stderr
    assert vault.ok("ls /").out_lines == ["a"]
    assert vault.c("pwd", passphrase="a new passphrase").rc == 3


def test_passwd_rotate_cut_short_after_its_key_file_says_the_new_passphrase_is_in_force(vault, tmp_path):
    """Review CH-3: `passwd --rotate` on a full disk wrote the new key file, then failed to
    write the snapshot under the new master key: "the disk holding the vault is full … run the
    command again", exit 1, though only the new passphrase opened the vault from then on; and
    while the disk stayed full, every open with the new one failed too (resealing at open),
    naming a store folder. The failure says which passphrase is in force, and an open that
    cannot reseal opens all the same, saying so. (ENOSPC injected into every `linkat` after the
    key file's: the new journal's name. The first names the journal of the rotation's first
    step, the retirement of the old key file.)"""
    vault.ok("mkdir /a; mkdir /b")
    new = vault.passphrase_file("a new passphrase")
    full = ["strace", "-f", "-o", "/dev/null", "-e", "trace=linkat", "-e", "inject=linkat:error=ENOSPC:when=3+"]
    r = subprocess.run(full + vault.argv(["-c", f"passwd --rotate --new-passphrase-file {q(str(new))}"]),
                       capture_output=True, text=True, env=vault.env, cwd=vault.workdir)
    assert r.returncode == 1 and "the passphrase was changed, and the new one opens the vault now (the old one no longer does)" in r.stderr, r.stderr
    assert vault.c("pwd").rc == 3, "the old passphrase no longer opens it"
    full[-1] = "inject=linkat:error=ENOSPC"
    r = subprocess.run(full + vault.argv(["-c", "ls /"], passphrase="a new passphrase"),
                       capture_output=True, text=True, env=vault.env, cwd=vault.workdir)
    assert r.returncode == 0 and r.stdout.splitlines() == ["a", "b"], r.stderr
    assert "this device's records could not be written anew under the vault's new master key" in r.stderr, r.stderr
    r = vault.ok("ls /; verify", passphrase="a new passphrase")
    assert r.out_lines == ["a", "b", "verified 2 items, all intact"] and "written anew" not in r.err, r.describe()

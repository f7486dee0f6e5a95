"""Many devices, one vault: the two silent losses of format 1, as regression tests.

1. Copies of one store changed on two devices and merged the way Syncthing merges folders
   lost one device's import (its object deleted as a leftover, `verify` all intact).
2. A journal cut short (or emptied, or replaced by a FIFO or a link) opened as an older or
   empty vault, deleted the objects of the dropped items and truncated the evidence.

And what a device sees of another: `devices`, `(not on this device)`, `"here": false`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness import Narnia, q
from terminal import Terminal


def device(n: Narnia, path: Path) -> Narnia:
    """Another device: a copy of n's store at `path` (a copy at another path is another device),
    named after the path by its first record (which starts its journal)."""
    d = device_not_yet_written(n, path)
    d.ok(f"devices name {path.name}")
    return d


def device_not_yet_written(n: Narnia, path: Path) -> Narnia:
    """A copy of n's store at `path`: another device, which has written nothing yet."""
    shutil.copytree(n.vault, path, symlinks=True)
    os.chmod(path, 0o700)
    d = Narnia(n.binary, path.parent / (path.name + "-work"))
    d.vault = path
    return d


def syncthing_merge(a: Path, b: Path):
    """Merges two folders as Syncthing does: files only one side has are copied across; a file
    both have with different content keeps the newer (by mtime) under its name and the other as
    NAME.sync-conflict-20261201-073500-ABCDEFG."""
    for src, dst in ((a, b), (b, a)):
        for p in sorted(src.rglob("*")):
            rel = p.relative_to(src)
            target = dst / rel
            if p.is_dir():
                target.mkdir(exist_ok=True)
            elif not target.exists():
                shutil.copy2(p, target)
            elif target.read_bytes() != p.read_bytes():
                newer, older = (p, target) if p.stat().st_mtime_ns > target.stat().st_mtime_ns else (target, p)
                data_newer, data_older = newer.read_bytes(), older.read_bytes()
                for side in (a, b):
                    (side / rel).write_bytes(data_newer)
                    (side / rel).with_name(rel.name + ".sync-conflict-20261201-073500-ABCDEFG").write_bytes(data_older)


def carry(src: Path, dst: Path):
    """What a sync engine carries from `src` to `dst`: the files `dst` lacks, and those that
    differ, each put in place whole by a rename (as Syncthing does; the files narnia made
    read-only cannot be written over as an ordinary user)."""
    for p in sorted(src.rglob("*")):
        target = dst / p.relative_to(src)
        if p.is_dir():
            target.mkdir(exist_ok=True)
        elif not target.exists() or target.read_bytes() != p.read_bytes():
            temporary = target.with_name(target.name + ".carrying")
            shutil.copy2(p, temporary)
            os.replace(temporary, target)


def listing(n: Narnia) -> str:
    return n.ok("ls -lR --json /").out


def own_journal(n: Narnia, command: str) -> tuple[Path, list[int]]:
    """Runs `command` and returns the file of this device's journal that grew, with its size."""
    before = n.store().sizes()
    n.ok(command)
    after = n.store().sizes()
    grown = [p for p in after if p in before and after[p] > before[p] and "/" in p]
    new = [p for p in after if p not in before and "/" in p]
    assert grown or new, "no journal grew"
    rel = (grown or new)[0]
    return n.vault / rel, after[rel]


def test_imports_on_two_devices_both_survive_a_syncthing_merge(narnia, host):
    narnia.init()
    narnia.ok("mkdir /shared")
    a = device(narnia, host / "A")
    b = device(narnia, host / "B")
    (host / "fa.bin").write_bytes(os.urandom(5000))
    (host / "fb.bin").write_bytes(os.urandom(7000))
    a.ok(f"import {q(str(host / 'fa.bin'))}")
    b.ok(f"import {q(str(host / 'fb.bin'))}")
    syncthing_merge(a.vault, b.vault)
    assert not list(a.vault.rglob("*sync-conflict*")), "no store file was changed on two devices"
    for d in (a, b):
        names = sorted(d.ok("ls /").out_lines)
        assert names == ["fa.bin", "fb.bin", "shared"], "both imports survive the merge" + d.c("ls /").describe()
        assert d.ok(f"cat /fa.bin").outb == (host / "fa.bin").read_bytes()
        assert d.ok(f"cat /fb.bin").outb == (host / "fb.bin").read_bytes()
        v = d.c("verify")
        assert v.rc == 0 and "all intact" in v.out, v.describe()
    assert listing(a) == listing(b), "two devices holding the same files show the same tree"


def forked_journal(narnia: Narnia, host: Path) -> tuple[Path, bytes]:
    """A new vault holding /base.bin, then /branch1.bin; the journal is then put back to before
    the second import (a backup restored). Returns the journal and its bytes with branch 1."""
    narnia.init()
    (host / "base.bin").write_bytes(os.urandom(1000))
    narnia.ok(f"import {q(str(host / 'base.bin'))}")
    before = narnia.store().sizes()
    (host / "branch1.bin").write_bytes(os.urandom(2000))
    journal, _ = own_journal(narnia, f"import {q(str(host / 'branch1.bin'))}")
    branch1 = journal.read_bytes()
    journal.write_bytes(branch1[:before[str(journal.relative_to(narnia.vault))]])
    return journal, branch1


@pytest.mark.parametrize("suffix", [
    ".sync-conflict-20261201-073500-ABCDEFG",   # Syncthing
    " (conflicted copy 2026-12-01 120000)",     # Dropbox, Nextcloud
    "_conflict-20261201-120000",                # ownCloud
    "-laptop-safeBackup-0001",                  # OneDrive's Linux client
])
def test_both_branches_of_a_forked_journal_are_read_under_every_engines_copy_name(narnia, host, suffix):
    """A journal forked (a backup restored, then written again) and kept by the engine as a file
    and a copy under its conflict name: both branches are read. OneDrive's Linux client's names
    were not recognised, so the import on one branch vanished with `verify` all intact (a
    review). (Its Windows form, `NAME-COMPUTERNAME`, cannot be told from a hand backup:
    `verify` names such a file.)"""
    journal, branch1 = forked_journal(narnia, host)
    (host / "branch2.bin").write_bytes(os.urandom(3000))
    narnia.ok(f"import {q(str(host / 'branch2.bin'))}")
    journal.with_name(journal.name + suffix).write_bytes(branch1)
    assert sorted(narnia.ok("ls /").out_lines) == ["base.bin", "branch1.bin", "branch2.bin"]
    assert narnia.ok("cat /branch1.bin").outb == (host / "branch1.bin").read_bytes()


def test_a_copy_under_a_name_no_engine_gives_is_named_by_verify(narnia, host):
    """A journal branch kept as `<id>.bak` (a hand copy, rclone's --suffix) is not read, but
    `verify` names it, with how to have it read; it went unmentioned (a review)."""
    journal, branch1 = forked_journal(narnia, host)
    narnia.ok("ls /")
    kept = journal.with_name(journal.name + ".bak")
    kept.write_bytes(branch1)
    v = narnia.ok("verify")
    note = (f"narnia: note: verify: 1 file is named like store files but as no sync engine names a copy, and not "
            f"read: {journal.parent.name}/{kept.name} (to have one read as a copy, add .sync-conflict to its name)")
    assert note in v.err_lines, v.describe()
    kept.rename(kept.with_name(kept.name + ".sync-conflict"))
    assert "branch1.bin" in narnia.ok("ls /").out_lines
    assert "named like store files" not in narnia.ok("verify").err


def test_a_copy_whose_name_is_not_utf8_is_named_by_verify(narnia, host):
    """A journal branch kept by an engine under a copy name that is not UTF-8 (Dropbox's copy
    named after a host in Latin-1) cannot be read under its name; it went unmentioned, by
    `verify` too (review AC). Renamed in UTF-8, it is read."""
    journal, branch1 = forked_journal(narnia, host)
    narnia.ok("ls /")
    kept = os.fsencode(journal) + b" (conflicted copy from caf\xe9)"
    with open(kept, "wb") as f:
        f.write(branch1)
    v = narnia.ok("verify")
    note = (f"narnia: note: verify: 1 file is named like store files but not in UTF-8, and not read: "
            f"{journal.parent.name}/{journal.name} (conflicted copy from caf\\xe9) (to have one read as a copy, "
            f"rename it in UTF-8, keeping its hex digits and its sync engine's suffix)")
    assert note in v.err_lines, v.describe()
    t = Terminal(narnia.argv(["-c", "verify"]), narnia.env, narnia.workdir)   # review BD-6
    try:
        t.wait(timeout=60)
        assert b"(conflicted copy from caf?) (to have one read" in t.output, t.output
    finally:
        t.close()
    assert "branch1.bin" not in narnia.ok("ls /").out_lines
    os.rename(kept, os.fsencode(journal) + b" (conflicted copy from caf\xc3\xa9)")
    assert "branch1.bin" in narnia.ok("ls /").out_lines
    assert "named like store files" not in narnia.ok("verify").err


def test_hand_backups_beside_a_store_file_are_left_alone(narnia, host):
    """Hand backups of the key file (`KEY-before-passwd`, `KEY-OLD`, `KEY.bak`) outlive the key
    file's retirement by `passwd`, and a folder under a copy's name is left alone: when every
    name with a dash counted as OneDrive's copy, the first two went with the retired key file,
    and such a folder made opening refuse ("the store was altered"). A backup of a retired file
    gets no note from `verify` (made a copy, as the note advises for others, it would go too;
    reviews)."""
    narnia.init()
    [key] = [p for p in narnia.vault.iterdir() if p.is_file() and len(p.name) == 32 and p.stat().st_size != 72]
    backups = [key.with_name(key.name + suffix) for suffix in ("-before-passwd", "-OLD", ".bak")]
    for b in backups:
        b.write_bytes(key.read_bytes())
    (narnia.vault / (key.name + ".sync-conflict-20261201-073500-ABCDEFG")).mkdir()
    narnia.ok(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('new one')))}")
    v = narnia.ok("verify", passphrase="new one")
    assert not key.exists(), "the retired key file is deleted"
    assert all(b.exists() for b in backups), "hand backups are the user's"
    assert "named like store files" not in v.err, v.describe()


@pytest.mark.parametrize("garbled", ["copy", "journal"])
def test_a_file_of_a_journal_that_does_not_open_is_set_aside_not_a_refusal(narnia, host, garbled):
    """A file named as a journal's copy (or the journal itself, beside a whole copy) whose first
    record does not open, while another file of that journal does: it is no copy, or altered.
    The vault refused to open, blaming the passphrase ("does not open the vault's current master
    key … or the store was altered"); it opens now, says so, and `verify` fails naming it."""
    journal, branch1 = forked_journal(narnia, host)
    journal.write_bytes(branch1)
    copy = journal.with_name(journal.name + ".sync-conflict-20261201-073500-ABCDEFG")
    if garbled == "copy":
        copy.write_bytes(os.urandom(len(branch1)))
        bad = copy
    else:
        copy.write_bytes(branch1)
        journal.write_bytes(os.urandom(len(branch1)))
        bad = journal
    shown = f"{bad.parent.name}/{bad.name}"
    r = narnia.ok("ls /")
    assert sorted(r.out_lines) == ["base.bin", "branch1.bin"], r.describe()
    assert any(shown in l and "does not open as one" in l for l in r.err_lines if l.startswith("narnia: warning:")), r.describe()
    v = narnia.c("verify")
    assert v.rc == 1 and any(l.startswith(f"narnia: error: verify: {shown}, named as a file of a journal") for l in v.err_lines), v.describe()
    assert narnia.ok("cat /branch1.bin").outb == (host / "branch1.bin").read_bytes()
    assert bad.exists(), "left as it is"


def test_an_object_whose_journal_has_not_arrived_is_never_deleted(narnia, host):
    narnia.init()
    a = device(narnia, host / "A")
    b = device(narnia, host / "B")
    (host / "f.bin").write_bytes(os.urandom(3000))
    before = set(a.store().sizes())
    journal, _ = own_journal(a, f"import {q(str(host / 'f.bin'))}")
    objects = [p for p in a.store().sizes() if p not in before and a.vault / p != journal]
    assert len(objects) == 1
    (b.vault / objects[0]).parent.mkdir(exist_ok=True)
    shutil.copy2(a.vault / objects[0], b.vault / objects[0])
    b.ok("ls /; verify")
    assert (b.vault / objects[0]).exists(), "b deleted a's object whose journal had not arrived"
    (b.vault / journal.relative_to(a.vault)).parent.mkdir(exist_ok=True)
    shutil.copy2(journal, b.vault / journal.relative_to(a.vault))
    assert b.ok("cat /f.bin").outb == (host / "f.bin").read_bytes()


def test_an_item_whose_content_has_not_arrived_is_listed_not_here(narnia, host):
    narnia.init()
    a = device(narnia, host / "A")
    b = device(narnia, host / "B")
    (host / "big.bin").write_bytes(os.urandom(200_000))
    before = set(a.store().sizes())
    journal, _ = own_journal(a, f"import {q(str(host / 'big.bin'))}")
    (b.vault / journal.relative_to(a.vault)).parent.mkdir(exist_ok=True)
    shutil.copy2(journal, b.vault / journal.relative_to(a.vault))   # the journal, not the object
    r = b.ok("ls -l /")
    assert re.search(r"big\.bin \(not on this device\)$", r.out, re.M), r.describe()
    entry = json.loads(b.ok("ls --json /").out_lines[0])
    assert entry["name"] == "big.bin" and entry["here"] is False
    assert "here: no (not on this device yet)" in b.ok("stat /big.bin").out_lines   # review CF-5
    assert not any(l.startswith("here:") for l in a.ok("stat /big.bin").out_lines)
    for cmd in ("cat /big.bin", f"export /big.bin {q(str(host / 'out.bin'))}"):
        r = b.c(cmd)
        assert r.rc == 1 and any("/big.bin: not yet on this device" in l for l in r.errors), r.describe()
    assert not (host / "out.bin").exists()
    v = b.c("verify")
    assert v.rc == 1 and "narnia: error: verify: /big.bin: not yet on this device" in v.err_lines, v.describe()
    b.ok("mkdir /other")   # nothing else fails
    for p in a.store().sizes():
        if p not in before:
            (b.vault / p).parent.mkdir(exist_ok=True)
            if not (b.vault / p).exists():
                shutil.copy2(a.vault / p, b.vault / p)
    assert b.ok("cat /big.bin").outb == (host / "big.bin").read_bytes()
    assert json.loads(b.ok("ls --json /big.bin").out_lines[0])["here"] is True


def test_devices_lists_every_device_that_wrote(narnia, host):
    narnia.init()
    a = device(narnia, host / "A")
    b = device(narnia, host / "B")
    a.ok("mkdir /a; devices name laptop")
    b.ok("mkdir /b")
    syncthing_merge(a.vault, b.vault)
    rows = [json.loads(l) for l in a.ok("devices --json").out_lines]
    names = {r["name"] for r in rows}
    assert {"laptop", "B"} <= names and len(rows) == 3, rows   # the one that made the store, a, b
    assert [r["this_device"] for r in rows].count(True) == 1
    assert next(r for r in rows if r["this_device"])["name"] == "laptop"
    text = a.ok("devices").out_lines
    assert any(l.endswith("(this device)") and "laptop" in l for l in text), text
    r = a.c("devices forget nosuch")
    assert r.rc == 1 and r.errors, r.describe()
    other = next(r for r in rows if r["name"] == "B")
    assert "forgot" in a.ok(f"devices forget {other['id'][:8]}").out
    assert any(json.loads(l)["forgotten"] for l in a.ok("devices --json").out_lines)
    # Review BN-4: the device forgotten is told, once it has read of it.
    assert "forgot this one" not in a.ok("pwd").err and "forgot this one" not in b.ok("pwd").err
    syncthing_merge(a.vault, b.vault)
    r = b.ok("mkdir /still-here")
    assert "narnia: warning: another device forgot this one ('devices forget')" in r.err, r.describe()
    assert "give this copy a device of its own" in r.err, "it says how to be waited for again (CC-9)"
    syncthing_merge(a.vault, b.vault)
    assert a.ok("ls /").out_lines == ["a", "b", "still-here"], "what it writes still counts"


def test_a_last_write_stamped_ahead_of_the_clock_is_marked(narnia, host):
    """A device whose clock ran days ahead stamps its changes so, and every device that read
    them stamps after them from then on (the hybrid clock): `devices` showed those dates as
    when each last wrote, unmarked (stop 49's note, BN-5)."""
    narnia.init()
    a = device(narnia, host / "A")
    b = device(narnia, host / "B")
    a.ok("mkdir /a")
    ahead = {"wrapper": ["faketime", "-f", "+3d"], "env": {**b.env, "NO_FAKE_STAT": "1"}}
    r = b.c("mkdir /b", **ahead)
    assert r.rc == 0, r.describe()
    mark = "(stamped ahead of this machine's clock)"
    assert mark not in a.ok("devices").out, "A has not read B's changes yet"
    syncthing_merge(a.vault, b.vault)
    a.ok("mkdir /after")
    lines = a.ok("devices").out_lines
    marked = [l for l in lines if mark in l]
    assert len(marked) == 2 and any("(this device)" in l for l in marked), lines   # B, and A since it read B
    assert mark not in b.ok("devices", **ahead).out, "on B's own clock the dates are not ahead"


def test_a_device_name_with_a_slash_is_refused(narnia):
    """A `/` in a device name went into the names of its conflict copies, which no path could
    reach (review AX4)."""
    narnia.init()
    r = narnia.c("devices name x/y")
    assert r.rc == 1 and "no '/'" in r.err, r.describe()
    assert all(json.loads(l)["name"] != "x/y" for l in narnia.ok("devices --json").out_lines)


def test_json_goes_with_the_device_list_only(narnia):
    """Review AX (7.8): `devices --json name x` renamed the device and ignored `--json`."""
    narnia.init()
    before = narnia.ok("devices --json").out
    for line in ("devices --json name x", "devices --json forget x"):
        r = narnia.c(line)
        assert r.rc == 1 and "--json goes with the list only" in r.err and "usage: devices" in r.err, r.describe()
    assert narnia.ok("devices --json").out == before


def test_a_copy_not_yet_written_to_lists_this_device_first(narnia, host):
    narnia.init()
    narnia.ok("mkdir /a")
    path = host / "copy"
    shutil.copytree(narnia.vault, path, symlinks=True)
    os.chmod(path, 0o700)
    copy = Narnia(narnia.binary, host / "copy-work")
    copy.vault = path
    text = copy.ok("devices").out_lines
    assert len(text) == 2 and text[0].endswith("(this device; not written yet)"), text
    assert "  -  holds 0" in text[0], text
    rows = [json.loads(l) for l in copy.ok("devices --json").out_lines]
    assert rows[0]["this_device"] and rows[0]["last_wrote"] is None, rows


def test_another_devices_records_this_device_read_are_never_lost_in_silence(narnia, host):
    """B's changes reach A, A reads them and writes; then B's journal in A's store is cut at a
    record boundary, or removed (a sync engine's revert, a restore). A must say so (at open,
    and `verify` fails), not show the older vault with exit 0."""
    narnia.init()
    a = device(narnia, host / "A")
    b = device(narnia, host / "B")
    b_journal, _ = own_journal(b, "mkdir /fromB")
    sizes = [b_journal.stat().st_size]
    b.ok("mkdir /fromB/second")
    sizes.append(b_journal.stat().st_size)
    syncthing_merge(a.vault, b.vault)
    a.ok("mkdir /fromA")                     # A's record: it has read B's
    copy = a.vault / b_journal.relative_to(b.vault)
    for cut in ("boundary", "removed"):
        if cut == "boundary":
            os.truncate(copy, sizes[0])
        else:
            copy.unlink()
        r = a.c("ls /")
        assert any("which this device has read here, is missing from this copy" in l or "which this device has read here, are missing from this copy" in l for l in r.err_lines), cut + r.describe()
        r = a.c("verify")
        assert r.rc == 1 and any("missing from this copy" in l for l in r.errors), cut + r.describe()


def test_a_new_devices_first_import_killed_leaves_a_leftover_not_an_alarm(narnia, host):
    """A copy that has never written has its first import killed: what is left is an object no
    record ever named (mode 0600). It was taken for lost records — a warning at every open,
    `verify` failing until the device wrote, then the dead object kept for good (a review). It
    is kept without a word now (a restore whose umask made objects 0600 looks the same until
    its journal comes back: another review), and goes once the device has written."""
    narnia.init()
    b = device_not_yet_written(narnia, host / "B")
    before = set(b.store().sizes())
    run = b.popen("-c", "import - big", stdin=subprocess.PIPE)
    run.stdin.write(os.urandom(3_000_000))
    run.stdin.flush()
    deadline = time.monotonic() + 30
    while not set(b.store().sizes()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    run.kill()
    run.wait()
    run.stdin.close()
    left = set(b.store().sizes()) - before
    assert left and all((b.vault / x).stat().st_mode & 0o777 == 0o600 for x in left), left
    r = b.ok("ls; verify")
    assert "all intact" in r.out and "kept" not in r.err and "missing" not in r.err, r.describe()
    assert set(b.store().sizes()) - before == left, "kept until the device has written"
    b.ok("mkdir /written")
    r = b.ok("ls; verify")
    assert "all intact" in r.out and "kept" not in r.err, r.describe()
    assert not left & set(b.store().sizes()), "the leftover goes once the device's records are whole"


# -- The second loss: a journal cut short --------------------------------------------------


def five_imports(n: Narnia, host: Path) -> tuple[Path, list[int], dict[str, bytes]]:
    n.init()
    files = {}
    sizes = []
    journal = None
    for i in range(5):
        f = host / f"f{i}.bin"
        f.write_bytes(os.urandom(1000 + i))
        files[f.name] = f.read_bytes()
        journal, size = own_journal(n, f"import {q(str(f))}")
        sizes.append(size)
    return journal, sizes, files


def test_a_journal_cut_mid_record_is_reported_and_nothing_is_deleted(narnia, host):
    journal, sizes, files = five_imports(narnia, host)
    store_before = set(narnia.store().sizes())
    os.truncate(journal, 300)
    r = narnia.c("verify")
    assert r.rc == 1, "verify must not say all intact after a cut journal" + r.describe()
    assert "all intact" not in r.out
    assert any(re.match(r"narnia: warning: this device's journal \w+ ends in \d+ bytes that are not a whole record", l)
               for l in r.err_lines), "opening must warn, naming the bytes" + r.describe()
    assert journal.stat().st_size == 300, "the cut journal is evidence: never truncated further"
    assert store_before <= set(narnia.store().sizes()), "no object was deleted"
    r = narnia.c("ls /")
    assert r.rc == 0 and len(r.out_lines) < 5
    narnia.ok("mkdir /after")   # the vault goes on, in a new journal
    assert "after" in narnia.ok("ls /").out_lines
    assert store_before <= set(narnia.store().sizes()), "objects the lost records may name are kept"


def torn_import(n: Narnia, host: Path, mark: int, unfinished: bool = True) -> tuple[Path, int, list[Path]]:
    """A vault holding /first.txt, then the record of an import of 40 files torn half way, as
    a kill while it was written leaves it (review AW): its first byte, which an append writes
    after the rest but the last, still zero (`unfinished`), or present, as when a whole record
    was cut afterwards. The
    import's objects are left in mode `mark` (0o600: never marked committed, as a kill leaves
    them, or as a restore under umask 077 makes them; 0o400: marked, as after a commit)."""
    n.init()
    (host / "first.txt").write_bytes(b"first")
    journal, size_before = own_journal(n, f"import {q(str(host / 'first.txt'))}")
    store_before = set(n.store().sizes())
    batch = host / "batch"
    batch.mkdir()
    for i in range(40):
        (batch / f"f{i}.txt").write_bytes(os.urandom(100 + i))
    grown, size_after = own_journal(n, f"import {q(str(batch))}")
    assert grown == journal
    objects = [n.vault / p for p in set(n.store().sizes()) - store_before]
    assert objects
    for p in objects:
        os.chmod(p, mark)
    os.truncate(journal, size_before + (size_after - size_before) // 2)
    if unfinished:
        with open(journal, "r+b") as f:
            f.seek(size_before)
            f.write(b"\0")
    return journal, size_before, objects


def test_the_record_of_a_commit_killed_while_it_was_written_is_cut_off(narnia, host):
    """A kill -9 while a large record was written (an import's group commit) left part of it,
    and the open reported a cut journal, kept the batch's objects for good and failed the first
    `verify` (review AW). The record's first byte, which an append writes last, is missing: the
    commit never finished, the torn record is cut off, its objects go as any killed batch's,
    without a word, and `verify` passes."""
    journal, size_before, objects = torn_import(narnia, host, 0o600)
    before, torn = journal.read_bytes()[:size_before], journal.read_bytes()[size_before:]
    r = narnia.c("ls /; verify")
    assert r.rc == 0 and r.out_lines[0] == "first.txt" and "batch" not in r.out_lines, r.describe()
    assert not any("warning" in l for l in r.err_lines), "a commit that never finished is no damage" + r.describe()
    # Cut off; what follows is the open's own record, which retires the leftovers (review CL-2).
    now = journal.read_bytes()
    assert now[:size_before] == before and not now[size_before:].startswith(torn), "the torn record is cut off"
    assert not any(p.exists() for p in objects), "the batch's objects are leftovers"
    narnia.ok("mkdir /after")
    r = narnia.ok("ls /; verify")
    assert r.out_lines[:2] == ["after", "first.txt"] and "all intact" in r.out, r.describe()


def killed_while_its_record_was_written(n: Narnia, command: str, write: int = 2):
    """Runs `command`, killed (SIGKILL, by strace) as it begins the `write`-th write of its
    first record: 2, the record's first byte, written after all but the first and last; 3,
    its last byte, written last."""
    argv = ["strace", "-f", "-o", "/dev/null", "-e", "trace=pwrite64", "-e", f"inject=pwrite64:signal=SIGKILL:when={write}"] \
        + n.argv(["-c", command])
    r = subprocess.run(argv, capture_output=True, env=n.env, cwd=n.workdir)
    assert r.returncode != 0, "the command was not killed"


def import_600_files_into_t(n: Narnia, host: Path) -> tuple[Path, int]:
    """Imports 600 small files as /t: their `rm -r` writes one record of about 20 KB, appended
    to the journal. Returns the journal and its size."""
    batch = host / "t"
    batch.mkdir()
    for i in range(600):
        (batch / f"file-{i:04d}-{'x' * 20}.txt").write_bytes(b"%d\n" % i)
    return own_journal(n, f"import -q {q(str(batch))}")


@pytest.mark.parametrize("torn", ["before-its-first-byte", "before-its-last-byte", "between-pages", "inside-its-header"])
def test_the_record_of_a_removal_killed_while_it_was_written_is_cut_off(narnia, host, torn):
    """Review AY-1: the record of `rm -r` of many items names no new object, so nothing but the
    record can tell that its commit never finished. A kill before its first byte or its last
    (the append's second and third writes), or with the first write stopped between pages as a
    kill stops a large write (or within the record's header), leaves the vault as before the `rm`, without a word, and `verify`
    passes; before, the open warned of a cut journal and the first `verify` failed."""
    narnia.init()
    journal, size_before = import_600_files_into_t(narnia, host)
    killed_while_its_record_was_written(narnia, "rm -r /t", write=3 if torn == "before-its-last-byte" else 2)
    size_killed = journal.stat().st_size
    assert size_killed - size_before > 8192, "the rm's record was not appended to the journal"
    assert (journal.read_bytes()[size_before] == 0) == (torn != "before-its-last-byte")
    if torn == "between-pages":
        os.truncate(journal, (size_before // 4096 + 2) * 4096)
    elif torn == "inside-its-header":   # fewer bytes than a record's header
        os.truncate(journal, size_before + 20)
    r = narnia.c("ls /t; verify")
    assert r.rc == 0 and len(r.out_lines) == 601 and "all intact" in r.out, r.describe()
    assert not any("warning" in l for l in r.err_lines), r.describe()
    assert journal.stat().st_size == size_before, "the unfinished record is cut off"
    narnia.ok("rm -r /t")
    assert narnia.ok("ls /; verify").out_lines == ["verified 0 items, all intact"]


def test_another_devices_unfinished_record_is_no_failure_of_verify(narnia, host):
    """A device's journal carried to another device (by a sync engine) before its device
    reopened after a kill ends in the unfinished record: the other device's `verify` notes it
    and passes (its device cuts it off at its next open)."""
    narnia.init()
    b = device(narnia, host / "B")
    journal, _ = import_600_files_into_t(narnia, host)
    killed_while_its_record_was_written(narnia, "rm -r /t")
    shutil.copytree(narnia.vault, b.vault, dirs_exist_ok=True)   # a sync engine carries it
    r = b.c("verify")
    assert r.rc == 0 and "all intact" in r.out, r.describe()
    assert any("of a write that device never finished" in l for l in r.err_lines), r.describe()
    assert len(b.ok("ls /t").out_lines) == 600
    narnia.ok("pwd")   # its device opens, and cuts the record off; the sync engine carries that
    shutil.copy2(journal, b.vault / journal.relative_to(narnia.vault))
    r = b.c("verify")
    assert r.rc == 0 and r.out_lines == ["verified 601 items, all intact"], r.describe()


def test_another_devices_record_a_copy_holds_the_first_byte_of_is_no_unfinished_write(narnia, host):
    """Review AZ-7: of two copies of another device's journal that hold the same records, one
    ending unfinished (the next record's first byte zero) and one holding more of that record
    with its first byte (finished there; that copy is still arriving, or was cut), the record
    was finished: `verify` reports the journal not whole, as any cut, rather than note a write
    its device never finished."""
    narnia.init()
    b = device(narnia, host / "B")
    journal, size_before = import_600_files_into_t(narnia, host)
    narnia.ok("rm -r /t")
    whole = journal.read_bytes()
    assert len(whole) - size_before > 8192, "the rm's record was not appended to the journal"
    shutil.copytree(narnia.vault, b.vault, dirs_exist_ok=True)   # a sync engine carries it
    there = b.vault / journal.relative_to(narnia.vault)
    torn = bytearray(whole[:size_before + 4096])
    torn[size_before] = 0
    there.write_bytes(torn)
    there.with_name(there.name + ".sync-conflict-20261201-073500-ABCDEFG").write_bytes(whole[:size_before + 8192])
    r = b.c("verify")
    assert r.rc == 1 and any("not a whole record: still arriving, or cut short" in l for l in r.err_lines), r.describe()
    assert not any("never finished" in l for l in r.err_lines), r.describe()


def test_a_record_another_device_read_is_never_noted_as_a_killed_write(narnia, host):
    """Review BA-3: this device's journal cut one byte short (which reads as an unfinished
    append) in a record another device had read and acknowledged: reported as a cut, with
    this device's records missing, and later `verify`s kept failing, but noted the tail as a
    killed write "kept until an open can cut them off", which was neither. Since review CF-1
    the device carries its records on past the gap in a snapshot at that open: later `verify`s
    pass, noting the cut as reported before."""
    narnia.init()
    narnia.ok("mkdir /a")
    b = device(narnia, host / "B")
    journal, size = own_journal(narnia, "mkdir /b")
    shutil.copytree(narnia.vault, b.vault, dirs_exist_ok=True)   # a sync engine carries it
    b.ok("mkdir /x")                                             # B has read /b, and says so
    shutil.copytree(b.vault, narnia.vault, dirs_exist_ok=True)
    os.truncate(journal, size - 1)
    r = narnia.c("ls /; verify")
    assert r.rc == 1 and any("not a whole record" in l for l in r.err_lines), r.describe()
    assert any("record 4 of this device is missing" in l for l in r.err_lines), r.describe()
    for _ in range(2):
        r = narnia.c("verify")
        assert r.rc == 0 and any("not a whole record: a write cut short, or the file was cut (reported before)" in l for l in r.err_lines), r.describe()
        assert not any("kill or crash" in l for l in r.err_lines), r.describe()


def test_a_torn_record_another_process_has_open_is_kept_and_said_once(narnia, host):
    """A journal some other process holds open (a copy still arriving that brings bytes out
    of order, so that a record's first byte may come last; a backup or sync engine reading it)
    is not cut. Review AZ-4: it was then reported as a cut for good (records lost, `verify`
    failed). Now the open says once that the unfinished write is kept, this device goes on in
    a new journal, and `verify` passes with a note. It is not cut later (review BA-2: the
    longer copy a sync had sent meanwhile came back at every sync); the killed batch's objects
    go as leftovers."""
    journal, size_before, objects = torn_import(narnia, host, 0o600)
    with open(journal, "ab"):
        r = narnia.c("verify; mkdir /during")
        assert r.rc == 0 and "all intact" in r.out, r.describe()
        warnings = [l for l in r.err_lines if "warning" in l]
        assert len(warnings) == 1 and "could not be cut off" in warnings[0], r.describe()
        r = narnia.c("verify")
        assert r.rc == 0 and not any("warning" in l for l in r.err_lines), "said once" + r.describe()
    r = narnia.ok("ls /; verify")
    assert r.out_lines == ["during", "first.txt", "verified 2 items, all intact"], r.describe()
    assert not any("warning" in l for l in r.err_lines), r.describe()
    assert any("a kill or crash stopped before it finished, kept" in l for l in r.err_lines), r.describe()
    assert journal.stat().st_size > size_before, "kept"
    assert not any(p.exists() for p in objects), "the batch's objects are leftovers"


@pytest.mark.parametrize("mark", [0o400, 0o600])
def test_a_whole_record_cut_afterwards_is_reported(narnia, host, mark):
    """The same tail with the record's first byte present: the record was whole once, and the
    journal was cut after: reported and kept, as any cut, whether the import's objects were
    marked committed (0400) or made 0600 by a restore under umask 077 (review AY-3: such a
    restore, cut inside a record, lost the record without a word)."""
    journal, size_before, objects = torn_import(narnia, host, mark, unfinished=False)
    r = narnia.c("verify")
    assert r.rc == 1 and any("not a whole record" in l for l in r.err_lines), r.describe()
    assert journal.stat().st_size > size_before, "the cut journal is evidence: left as it is"
    assert all(p.exists() for p in objects), "objects the lost record may name are kept"


@pytest.mark.parametrize("replacement", ["empty", "fifo", "link-to-dev-null"])
def test_a_journal_replaced_by_nothing_is_not_an_empty_vault(narnia, host, replacement):
    journal, sizes, files = five_imports(narnia, host)
    store_before = set(narnia.store().sizes())
    journal.unlink()
    if replacement == "empty":
        journal.write_bytes(b"")
    elif replacement == "fifo":
        os.mkfifo(journal, 0o600)
    else:
        journal.symlink_to("/dev/null")
    r = narnia.c("ls /", timeout=20)
    assert r.rc != 0, f"a journal replaced by {replacement} must not open as an empty vault" + r.describe()
    assert r.out == "" and r.errors, r.describe()
    store_after = set(narnia.store().sizes()) if replacement == "empty" else set(narnia.store().sizes()) | {str(journal.relative_to(narnia.vault))}
    assert store_before <= store_after, "nothing was deleted"


def test_a_cut_at_a_record_boundary_loses_no_object_its_lost_records_named(narnia, host):
    """As FORMAT.md's rollback section says, a cut exactly at a record boundary of a one-device
    vault cannot be told from an older state; but the objects the lost records named were
    marked committed, so they are kept (said at open, and `verify` fails in that session, as for
    a cut tail; it passed), and when the whole journal comes back (from a backup, or a sync
    engine's other copy) the files read again."""
    journal, sizes, files = five_imports(narnia, host)
    whole = journal.read_bytes()
    store_before = set(narnia.store().sizes())
    os.truncate(journal, sizes[2])
    r = narnia.c("ls /; verify")
    assert r.rc == 1 and r.out_lines == ["f0.bin", "f1.bin", "f2.bin"], r.describe()
    lost = "2 objects this device wrote were named by records that this copy no longer holds"
    assert any(l.startswith("narnia: warning:") and lost in l for l in r.err_lines), r.describe()
    assert any(l.startswith("narnia: error: verify: " + lost) for l in r.err_lines), r.describe()
    v = narnia.ok("verify")
    assert "2 objects are kept because records that may name them were lost (by the devices that wrote them)" in v.err, "reported once, then noted"
    assert store_before <= set(narnia.store().sizes()), "no object was deleted"
    journal.write_bytes(whole)
    r = narnia.ok("ls /")
    assert r.out_lines == [f"f{i}.bin" for i in range(5)], r.describe()
    for name, data in files.items():
        assert narnia.ok(f"cat /{name}").outb == data
    narnia.ok("verify")


def test_objects_kept_for_lost_records_are_not_noted_once_the_records_are_back(narnia, host):
    """The cut journal's whole version comes back beside it, as a sync engine's copy, after this
    device wrote (its keep record): every file reads, and `verify` no longer notes the objects
    as kept for lost records (it did at every run)."""
    journal, sizes, files = five_imports(narnia, host)
    whole = journal.read_bytes()
    os.truncate(journal, sizes[2])
    narnia.c("ls /")
    (journal.parent / (journal.name + ".sync-conflict-20261203-120000-ABCDEFG")).write_bytes(whole)
    r = narnia.c("ls /")
    assert r.out_lines == [f"f{i}.bin" for i in range(5)], r.describe()
    for name, data in files.items():
        assert narnia.ok(f"cat /{name}").outb == data
    v = narnia.ok("verify")
    assert "objects are kept" not in v.err, "the records that name them are back" + v.describe()


def test_another_devices_cut_journal_is_only_read(narnia, host):
    narnia.init()
    a = device(narnia, host / "A")
    b = device(narnia, host / "B")
    for i in range(3):
        (host / f"g{i}").write_bytes(os.urandom(500))
        journal, size = own_journal(a, f"import {q(str(host / f'g{i}'))}")
    syncthing_merge(a.vault, b.vault)
    copy = b.vault / journal.relative_to(a.vault)
    os.truncate(copy, size - 7)
    r = b.c("verify")
    assert r.rc == 1 and any("the journal of device" in l and "not a whole record" in l for l in r.errors), r.describe()
    assert copy.stat().st_size == size - 7, "another device's journal is never changed"
    assert sorted(b.ok("ls /").out_lines) == ["g0", "g1"]
    shutil.copy2(journal, copy)   # the rest arrives
    assert sorted(b.ok("ls /; verify").out_lines)[:3] == ["g0", "g1", "g2"]


@pytest.mark.parametrize("failing", ["pwrite64:error=ENOSPC", "fdatasync:error=EIO"])
@pytest.mark.parametrize("truncates", ["fail-once", "keep-failing"])
def test_a_failed_append_that_could_not_be_cut_back_is_cut_before_the_next(narnia, host, truncates, failing):
    """Review AZ-6: a record whose write failed (a full disk) and whose bytes could not be cut
    back either (a failing truncate, as on a full btrfs) stayed in the journal, and the next
    record of the same session was written over its start: the vault was refused as damaged
    at the next open, although the later commits were reported done. The bytes are cut before
    the next append now, which fails if that cut fails too; the next open cuts what is left.
    A record whose `fdatasync` failed is left whole, with its first byte zeroed: the next open
    cuts it off rather than apply the change that was reported failed."""
    narnia.init()
    import_600_files_into_t(narnia, host)
    call = failing.split(":")[0]
    truncate_failures = "when=1" if truncates == "fail-once" else "when=1+"
    argv = ["strace", "-f", "-o", "/dev/null", "-e", f"trace={call},ftruncate",
            "-e", f"inject={failing}:when={2 if call == 'pwrite64' else 1}", "-e", f"inject=ftruncate:error=EIO:{truncate_failures}"] \
        + narnia.argv(["--keep-going", "-c", "rm -r /t; mkdir /x; mkdir /y"])
    r = subprocess.run(argv, capture_output=True, env=narnia.env, cwd=narnia.workdir, text=True)
    reason = "the disk holding the vault is full" if call == "pwrite64" else "input/output error"
    assert r.returncode == 1 and reason in r.stderr, r.stderr
    committed = ["x", "y"] if truncates == "fail-once" else []
    assert r.stderr.count("input/output error") == (0 if committed else 2) + (call == "fdatasync"), r.stderr
    r = narnia.c("ls /; verify")
    assert r.rc == 0 and r.out_lines == ["t", *committed, "verified 603 items, all intact" if committed else "verified 601 items, all intact"], r.describe()
    assert not any("warning" in l for l in r.err_lines), r.describe()


def test_a_current_folder_a_sync_merges_with_another_devices_is_still_the_current_one(narnia, host, tmp_path):
    """Review CC-6, CD: a sync that merged the current folder with another device's folder of
    its name said "the current folder /F no longer exists; now in /F"."""
    narnia.init()
    a = device(narnia, host / "A")
    b = device(narnia, host / "B")
    remote = tmp_path / "remote"
    remote.mkdir()
    b.ok(f"mkdir /F; cd /F; import - from-b; sync {q(str(remote))}", input=b"b")
    a.ok("mkdir /F; cd /F; import - from-a", input=b"a")
    r = a.ok(f"cd /F; sync {q(str(remote))}; pwd; ls")
    assert not [l for l in r.err_lines if "current folder" in l], r.describe()
    assert r.out_lines[-3:] == ["/F", "from-a", "from-b"], r.describe()
    # Review DD-2: the merged folder is neither removed nor new; only b's file is.
    assert [l for l in r.out_lines if l.startswith(("new:", "removed:")) or "removed on" in l] == ["new: /F/from-b"], r.describe()


def test_a_sync_names_the_items_other_devices_removed(narnia, host, tmp_path):
    """Review DB-2: the sync said only "1 item was removed on another device". It names where
    each removed item was (a folder once, not what it held). Two devices swapped two names with
    `mv -f` while apart: both files were gone after the sync; each rename now takes its file out
    of the other's removal (FORMAT's rule 3), and neither is named."""
    narnia.init()
    a = device(narnia, host / "A")
    remote = tmp_path / "remote"
    a.ok(f"import - draft.txt; import - final.txt; mkdir /trip; cd /trip; import - x.jpg; sync {q(str(remote))}", input=b"d")
    b = device(a, host / "B")
    a.ok("mv -f /draft.txt /final.txt; rm -r /trip")
    b.ok("mv -f /final.txt /draft.txt")
    a.ok(f"sync {q(str(remote))}")
    r = b.ok(f"sync {q(str(remote))}; ls /")
    assert ["removed: /trip"] == [l for l in r.out_lines if l.startswith("removed:")], r.describe()
    assert "2 items were removed on other devices" in r.out_lines, r.describe()
    assert r.out_lines[-2:] == ["draft.txt", "final.txt"], r.describe()


def test_verify_names_a_folder_whose_move_was_skipped_to_break_a_cycle(narnia, host, tmp_path):
    """Review DB-3: A moved /x into /y while B moved /y into /x; B's move, the later, is skipped
    (FORMAT.md rule 2) and /y stays at the root, where B saw it. verify noted only a count
    ("1 moves made …"), naming no folder."""
    from test_device_housekeeping import exchange
    narnia.init()
    a = device(narnia, host / "A")
    a.ok("mkdir /x /y")
    b = device(a, host / "B")
    a.ok("mv /x /y/")
    b.ok("mv /y /x/")
    exchange(a, b)
    for n in (a, b):
        assert n.ok("find /").out_lines == ["/y", "/y/x"]
        r = n.ok("verify")
        assert "narnia: note: verify: moves made on different devices at once would have put a folder inside itself; " \
            "the latest was skipped, and the folder stays where it stood before it: /y" in r.err_lines, r.describe()


def test_a_sync_that_removes_half_of_a_merged_folder_names_what_went(narnia, host, tmp_path):
    """Review DE-1: b's /F was merged with a's; t, which knew only a's, removed it. b's sync said
    "new: /F", "removed: /F" and "2 items were removed", of a folder still there with b's file,
    and never named a's file, the one that went."""
    narnia.init()
    a, b, t = (device(narnia, host / name) for name in "ABT")
    remote = tmp_path / "remote"
    a.ok(f"mkdir /F; cd /F; import - from-a; sync {q(str(remote))}", input=b"a")
    t.ok(f"sync {q(str(remote))}")
    b.ok(f"mkdir /F; cd /F; import - from-b; sync {q(str(remote))}", input=b"b")
    t.ok(f"rm -r /F; sync {q(str(remote))}")
    r = b.ok(f"sync {q(str(remote))}; ls /F")
    said = [l for l in r.out_lines if l.startswith(("new:", "removed")) or "removed on" in l]
    assert said == ["removed: /F/from-a", "1 item was removed on another device"] and r.out_lines[-1] == "from-b", r.describe()


def a_session_whose_journal_is_put_back(narnia: Narnia, before: str | None, typed: bytes) -> tuple[subprocess.Popen, Path]:
    """A `-b -` session on a new store whose journal is saved once it holds /one; `before` runs
    first, then the session reads `typed` (which lists /one and /two), then a sync engine puts
    the saved journal back in its place (a rename over it). Returns the session and the journal."""
    narnia.init()
    journal, _ = own_journal(narnia, "mkdir /one")
    older = journal.read_bytes()
    if before:
        narnia.ok(before)
    session = narnia.popen("-b", "-", stdin=subprocess.PIPE)
    session.stdin.write(typed)
    session.stdin.flush()
    assert session.stdout.readline() == b"one\n" and session.stdout.readline() == b"two\n"
    replacement = journal.with_name(journal.name + ".engine-tmp")
    replacement.write_bytes(older)
    os.replace(replacement, journal)
    return session, journal


def test_changes_after_this_devices_journal_was_replaced_under_the_session_are_kept(narnia, host):
    """Review CF-6: a sync engine put an older copy of this device's journal in its place
    (rename over it) while a session was open: the session went on appending to the file no
    name led to any more, reported every change done, and lost them all when it ended. Now
    the first append after it (or the look between lines) sees the name no longer leads to its
    file, saves everything the file holds as a copy of the journal, says so, and goes on in a
    new journal; the copy's records are carried on in a snapshot, after which (no other device
    waiting) the copy goes with the old journal."""
    session, journal = a_session_whose_journal_is_put_back(narnia, "mkdir /two", b"ls /\n")
    out, err = session.communicate(b"mkdir /three\nmkdir /four\nls /\n", timeout=60)
    assert session.returncode == 0, err.decode()
    assert out.decode().splitlines() == ["four", "one", "three", "two"]
    said = [l for l in err.decode().splitlines() if "was replaced by another copy of it while this session was open" in l]
    # Found by the first append after it, or between lines (the session watches the store).
    assert len(said) == 1 and said[0].startswith("narnia: warning: ") and "this device's journal " in said[0] \
        and "everything this session wrote to it is kept, as " in said[0] and "do not delete that file" in said[0], err.decode()
    r = narnia.ok("ls /; verify")
    assert r.out_lines == ["four", "one", "three", "two", "verified 4 items, all intact"], r.describe()
    r = narnia.ok("ls /; verify")
    assert r.out_lines[-1] == "verified 4 items, all intact" and not [l for l in r.err_lines if "insecure" not in l], "said once: " + r.describe()
    assert not list(narnia.vault.glob("*/*conflict*")) and not journal.exists(), "carried on, and gone with the journal"


def beside_another_device_with_a_saved_journal(narnia: Narnia, host: Path, command: str) -> tuple[Narnia, Path, bytes]:
    """A new store and another device B, merged; then `command` here. Returns B, this device's
    journal that `command` grew, and its bytes then (to put back later, as a restore would)."""
    narnia.init()
    b = device(narnia, host / "B")
    syncthing_merge(narnia.vault, b.vault)
    journal, _ = own_journal(narnia, command)
    return b, journal, journal.read_bytes()


def test_a_journal_a_sync_engine_copy_alone_holds_whole_is_carried_on(narnia, host):
    """Review CF-3: an older copy of this device's journal came back under its name and the
    engine kept the newer as its conflict copy: the device went on in a new journal, and the
    copy stayed the only file holding committed records, without a word; deleting it (what
    users do with conflict files) brought a removed item back and lost an import on every
    device. The device carries them on in a snapshot at its next open, and the copy goes with
    the journal once the other device has read that."""
    a = narnia
    b, journal, older = beside_another_device_with_a_saved_journal(narnia, host, "mkdir /kept")
    a.ok("mkdir /imported; rm -r /kept")
    syncthing_merge(a.vault, b.vault)
    copy = journal.with_name(journal.name + ".sync-conflict-20261206-041248-LQ3BOCD")
    copy.write_bytes(journal.read_bytes())
    journal.write_bytes(older)   # what the engine put back, newer by its time
    r = a.ok("ls /")
    assert r.out_lines == ["imported"], r.describe()
    assert any(f"a sync engine's copy of this device's journal {journal.name[:8]} holds records the journal lacks" in l for l in r.err_lines), r.describe()
    syncthing_merge(a.vault, b.vault)
    b.ok("ls /")    # B reads the snapshot, and says so in its next record
    syncthing_merge(a.vault, b.vault)
    a.ok("mkdir /later")
    assert not copy.exists() and not journal.exists(), "the copy went with the journal it holds"
    syncthing_merge(a.vault, b.vault)
    for d in (a, b):
        r = d.ok("ls /; verify")
        assert r.out_lines == ["imported", "later", "verified 2 items, all intact"], r.describe()


@pytest.mark.parametrize("elsewhere", ["top", "shard"])
def test_a_journal_outside_its_shard_folder_is_said_not_passed_over(narnia, host, elsewhere):
    """Review DI-1: a file named as a store file but outside the folder its name belongs in (at
    the store's top, or in another shard folder) was neither read nor said: with the longer
    version of this device's journal there and an older one in place, the vault showed less
    than was committed and `verify` said all intact."""
    narnia.init()
    journal, _ = own_journal(narnia, "mkdir /first")
    older = journal.read_bytes()
    narnia.ok("mkdir /second")
    newer = journal.read_bytes()
    if elsewhere == "top":
        moved = narnia.vault / journal.name
    else:
        other = "00" if journal.parent.name != "00" else "01"
        (narnia.vault / other).mkdir(exist_ok=True)
        moved = narnia.vault / other / journal.name
    moved.write_bytes(newer)
    journal.unlink()
    journal.write_bytes(older)
    shown = str(moved.relative_to(narnia.vault))
    said = (f"{shown}, named as a journal of this vault, is {'at the store' + chr(39) + 's top' if elsewhere == 'top' else 'in ' + shown[:2] + '/'}, "
            f"not in the folder {journal.parent.name}/ its name belongs in: it is not read, and may hold what the store lacks; "
            f"move it into {journal.parent.name}/, adding .sync-conflict to its name if a file of that name is there")
    r = narnia.c("ls /")
    assert r.rc == 0 and r.out_lines == ["first"] and f"narnia: warning: {said}" in r.err_lines, r.describe()
    r = narnia.c("verify")
    assert r.rc == 1 and f"narnia: error: verify: {said}" in r.err_lines, r.describe()
    # Done as said, nothing is missing.
    moved.rename(journal.with_name(journal.name + ".sync-conflict"))
    assert narnia.ok("ls /").out_lines == ["first", "second"]
    assert narnia.ok("verify").out_lines == ["verified 2 items, all intact"]


def test_a_gap_in_this_devices_record_numbers_is_carried_past(narnia, host):
    """Review CF-1, CF-2: an older copy of this device's journal came back after another
    device had read the newer records: every open warned and every `verify` failed, for good,
    and no device could acknowledge this device's later retirements, so nothing it removed was
    deleted on any device again. The first open says so and goes on in a snapshot past the
    gap; afterwards `verify` notes the kept objects, and removals are deleted again."""
    a = narnia
    b, journal, older = beside_another_device_with_a_saved_journal(narnia, host, "mkdir /one")
    (host / "lost.txt").write_text("lost")
    a.ok(f"import {q(str(host / 'lost.txt'))}")
    syncthing_merge(a.vault, b.vault)
    b.ok("mkdir /fromB")               # B's record says it read A's import
    syncthing_merge(a.vault, b.vault)
    for side in (a.vault, b.vault):    # a restore of the older copy, carried everywhere
        (side / journal.relative_to(a.vault)).write_bytes(older)
    r = a.c("verify")
    assert r.rc == 1 and any("of this device is missing from this copy of the store" in l for l in r.err_lines), r.describe()
    for _ in range(2):
        r = a.ok("verify")
        assert "missing" not in r.err and "1 object is kept because records that may name it were lost" in r.err, r.describe()
    (host / "big.bin").write_bytes(os.urandom(2_000_000))
    before = set(a.store().sizes())
    a.ok(f"import {q(str(host / 'big.bin'))}")
    big = [p for p in a.store().sizes() if p not in before and a.store().sizes()[p] > 1_900_000]
    assert len(big) == 1
    syncthing_merge(a.vault, b.vault)
    a.ok("rm /big.bin")
    for _ in range(2):
        syncthing_merge(a.vault, b.vault)
        b.ok("ls /")
        syncthing_merge(a.vault, b.vault)
        a.ok("pwd")
    b.ok("pwd")
    assert not (a.vault / big[0]).exists() and not (b.vault / big[0]).exists(), "a removal after the gap is deleted"


def test_a_session_sees_other_devices_changes_arrive_between_lines(narnia, host):
    """Review CF-4: a session (the shell, `-b`, piped commands) showed the vault as it was when
    opened for its whole life: an item another device removed was still listed, its content
    "not yet on this device", and a new one never showed. Between lines it now reads the
    journals again when another device's changed in the store, and says what changed."""
    narnia.init()
    (host / "old.txt").write_text("old\n")
    (host / "new.txt").write_text("new\n")
    narnia.ok(f"import {q(str(host / 'old.txt'))}")
    b = device_not_yet_written(narnia, host / "B")
    session = b.popen("-b", "-", stdin=subprocess.PIPE)
    session.stdin.write(b"ls /\n")
    session.stdin.flush()
    assert session.stdout.readline() == b"old.txt\n"
    narnia.ok(f"import {q(str(host / 'new.txt'))}; rm /old.txt")
    carry(narnia.vault, b.vault)   # what a sync engine carries
    out, err = session.communicate(b"ls /\nmkdir /made\nls /\n", timeout=60)
    assert session.returncode == 0, err.decode()
    assert out.decode().splitlines() == ["new.txt", "made", "new.txt"]
    assert "narnia: note: other devices' changes arrived: 1 new item, 1 item removed" in err.decode().splitlines(), err.decode()
    assert sorted(narnia.ok("ls /").out_lines) == ["new.txt"]
    syncthing_merge(b.vault, narnia.vault)   # files both hold are the same (and read-only)
    assert sorted(narnia.ok("ls /").out_lines) == ["made", "new.txt"]


@contextlib.contextmanager
def shell_of_another_device(narnia: Narnia, host: Path):
    """The interactive shell, on a pseudo-terminal, of a device made from narnia's store (which
    then plays the other device: `carry` brings its changes), logged in; left at the end."""
    from test_shell_pty import Shell
    b = device_not_yet_written(narnia, host / "B")
    shell = Shell(b)
    try:
        shell.login()
        yield b, shell
        if shell.proc.poll() is None:
            shell.send("exit\r")
            shell.wait()
    finally:
        shell.close()


def arrive(narnia: Narnia, b: Narnia, commands: str, **kw):
    """Runs `commands` on narnia's device, and carries its store to b's, as a sync engine would."""
    narnia.ok(commands, **kw)
    carry(narnia.vault, b.vault)
    time.sleep(0.2)


def test_the_shell_reads_what_arrived_while_a_line_was_typed_before_it_runs(narnia, host):
    """Review CL-1: the shell read other devices' changes when it drew the prompt, where a user
    sits while a sync engine delivers: the next line ran on the tree as it was (`rm -r` of a
    folder another device had just filled left it there), the note after its output. CL-3:
    the prompt went on showing a current folder removed there."""
    from test_shell_pty import PROMPT, names
    narnia.init()
    narnia.ok("mkdir /trip /keep")
    with shell_of_another_device(narnia, host) as (b, shell):
        shell.run("cd /trip")
        arrive(narnia, b, "rm -r /trip; mkdir /new")
        # Review CO-6: a line typed in a folder gone meanwhile is not run in the one above
        # (`rm -r *` typed in /trip emptied the vault's root).
        out = shell.run("rm -r *")
        assert out.splitlines() == ["narnia: note: other devices' changes arrived: 1 new item, 1 item removed",
                                    "narnia: note: the current folder /trip no longer exists; now in /",
                                    "narnia: error: the line was not run: other devices' changes arrived while it was typed, after the prompt showed the vault",
                                    "narnia: hint: look again; Up brings the line back"], out
        assert PROMPT.findall(shell.output)[-1] == b"/", shell.output[-200:]
        assert names(shell.run("ls /")) == ["keep/", "new/"]


def test_item_numbers_read_off_a_listing_that_changed_before_the_line_ran_run_nothing(narnia, host):
    """Review CO-5: under hide-names, `rm #1` typed against the listing on screen ran after
    other devices' changes were read, and removed the item that had just arrived as #1 (CQ-1,
    CQ-2: or one moved there, or through `./#1`). A line typed while the tree changed is not run."""
    narnia.init()
    narnia.ok("mkdir /p; cd /p; import - b.jpg; import - c.jpg", input=b"x")
    with shell_of_another_device(narnia, host) as (b, shell):
        shell.run("set hide-names on")
        shell.run("cd /p")
        shell.run("ls")
        arrive(narnia, b, "cd /p; import - a.jpg", input=b"new")
        out = shell.run("rm #1")
        assert out.splitlines()[1:] == ["narnia: error: the line was not run: other devices' changes arrived while it was typed, after the prompt showed the vault",
                                        "narnia: hint: look again; Up brings the line back"], out
        shell.run("set hide-names off")
        assert shell.run("ls -1 /p").split() == ["a.jpg", "b.jpg", "c.jpg"]
        # Review CR-2: changes read at the prompt while an earlier line ran (here, read before
        # the prompt after `pwd`) still make the numbers of a listing shown before stale.
        shell.run("set hide-names on")
        shell.run("ls")
        arrive(narnia, b, "mv /p/b.jpg /p/zz.jpg")
        shell.run("pwd")
        out = shell.run("rm #1")
        assert out.splitlines() == ["narnia: error: rm: #1: other devices' changes arrived since this folder's numbers were last shown, and may have changed them; nothing was done",
                                    "narnia: hint: list the folder again"], out
        shell.run("ls")
        shell.run("rm #1")
        shell.run("set hide-names off")
        assert shell.run("ls -1 /p").split() == ["c.jpg", "zz.jpg"]
        # Review CS-1: the prompt, which shows the numbers of the folders above the current one,
        # does not make them count as listed.
        shell.run("set hide-names on")
        shell.run("ls /")
        arrive(narnia, b, "mkdir /a")
        shell.run("pwd")
        out = shell.run("ls /#1")
        assert "narnia: error: ls: #1: other devices' changes arrived since this folder's numbers were last shown" in out, out


def test_a_line_that_removes_or_moves_nothing_runs_on_what_arrived_while_it_was_typed(narnia, host):
    """Only a line that removes, moves or overwrites items, named as the user saw them, waits for
    a fresh look when other devices' changes arrive while it is typed: `ls`, `exit` and `panic`
    (the quick exit) were refused too, and refused again for as long as a sync engine delivered
    changes faster than a line was typed."""
    from test_shell_pty import names
    narnia.init()
    narnia.ok("mkdir /trip /keep")
    with shell_of_another_device(narnia, host) as (b, shell):
        arrive(narnia, b, "mkdir /new")
        out = shell.run("ls /")
        assert out.splitlines()[0] == "narnia: note: other devices' changes arrived: 1 new item", out
        assert names(out.split("\n", 1)[1]) == ["keep/", "new/", "trip/"], out
        arrive(narnia, b, "mkdir /newer")
        out = shell.run("mkdir /mine; cp -r /keep /copy")
        assert "the line was not run" in out and "copy" not in shell.run("ls /"), out
        # Review CW-2: export --force replaces host files with items named as shown.
        arrive(narnia, b, "mkdir /newest")
        out = shell.run(f"export -f /keep {q(str(host))}")
        assert "the line was not run" in out, out
        # Review CW-5: a command asked for its help names no item.
        arrive(narnia, b, "mkdir /later")
        assert "usage: rm" in shell.run("rm --help")
        # Review CW-1: under hide-names `#1` at the prompt is an item, not a comment: the
        # `rm -r *` after it was not seen, and removed what had just arrived.
        shell.run("set hide-names on")
        shell.run("ls /")
        arrive(narnia, b, "mkdir /arrived")
        out = shell.run("-stat #1; rm -r *")
        assert "the line was not run" in out, out
        shell.run("set hide-names off")
        assert "arrived/" in names(shell.run("ls /")), out
        shell.run("cd /trip")
        arrive(narnia, b, "rm -r /trip")
        out = shell.run("pwd")
        assert out.splitlines()[-1] == "/", out
        # Review CY-3: `cd` to a folder named from the root goes there from any folder; a
        # relative one, typed in a folder removed meanwhile, still waits.
        shell.run("cd /keep")
        arrive(narnia, b, "rm -r /keep")
        out = shell.run("cd new")
        assert "narnia: error: the line typed in /keep was not run: that folder was moved or removed on another device" in out, out
        shell.run("cd /new")
        arrive(narnia, b, "rm -r /new")
        out = shell.run("cd /newer; pwd")
        assert "was not run" not in out and out.splitlines()[-1] == "/newer", out
        arrive(narnia, b, "mkdir /last")
        shell.send("panic\r")
        assert shell.wait(timeout=30) == 0, shell.output[-300:]


@pytest.mark.parametrize("elsewhere", ["mv /trip/sub /archive", "rm -r /trip/sub; mkdir /trip/sub"])
def test_a_batch_line_read_in_a_folder_another_device_moved_or_replaced_is_not_run(narnia, host, elsewhere):
    """Reviews CO-6, CQ-3, CQ-4: a line of `-b -` ran in the folder the session followed or
    moved up to: `rm -r ../tmp` read in /trip/sub removed /archive/tmp once another device had
    moved sub there, and `rm -r *` removed what a folder made anew under the same name held."""
    narnia.init()
    narnia.ok("mkdir -p /trip/sub /trip/tmp /archive/tmp")
    b = device_not_yet_written(narnia, host / "B")
    session = b.popen("-b", "-", "--keep-going", stdin=subprocess.PIPE)
    session.stdin.write(b"cd /trip/sub\npwd\n")
    session.stdin.flush()
    assert session.stdout.readline() == b"/trip/sub\n"
    arrive(narnia, b, elsewhere)
    out, err = session.communicate(b"rm -r ../tmp\n", timeout=60)
    assert session.returncode == 1, err.decode()
    assert "narnia: error: -:3: the line typed in /trip/sub was not run: that folder was moved or removed on another device" in err.decode().splitlines(), err.decode()
    assert "tmp" in b.ok("ls /archive").out_lines and "tmp" in b.ok("ls /trip").out_lines


def test_a_line_read_in_a_folder_merged_with_another_devices_of_its_name_runs(narnia, host):
    """Review DO-1: `mkdir -p` of one folder on two devices merges the two (rule 4), under the
    identifier of the one made first: a session standing in the other refused its next line,
    "that folder was moved or removed on another device", though nothing was."""
    narnia.init()
    b = device_not_yet_written(narnia, host / "B")
    narnia.ok("mkdir -p /p/x; cd /p/x; import - a.txt", input=b"a")   # made first
    session = b.popen("-b", "-", stdin=subprocess.PIPE)
    session.stdin.write(b"mkdir -p /p/x\ncd /p/x\npwd\n")
    session.stdin.flush()
    assert session.stdout.readline() == b"/p/x\n"
    carry(narnia.vault, b.vault)
    time.sleep(0.2)
    out, err = session.communicate(b"mkdir y\nls\n", timeout=60)
    assert session.returncode == 0, err.decode()
    assert out.decode().splitlines()[-2:] == ["a.txt", "y"], (out, err)


def test_a_line_read_in_a_removed_folder_shown_again_and_merged_is_not_run(narnia, host):
    """Review DQ-1: B stands in /m, which A removes while B puts a file in it (so it is shown
    again, rule 3) and C, unknown to both, made a /m of its own first (rule 4 merges them): the
    fix of DO-1 took the merged folder for B's, and `rm *` read in it removed C's file, never
    shown on B."""
    def push(source: Narnia, target: Narnia):   # as a sync engine: what is new or longer
        for p in sorted(source.vault.rglob("*")):
            t = target.vault / p.relative_to(source.vault)
            if p.is_dir():
                t.mkdir(exist_ok=True)
            elif not t.exists() or t.stat().st_size < p.stat().st_size:
                shutil.copy2(p, t.with_name(t.name + ".carrying"))
                os.replace(t.with_name(t.name + ".carrying"), t)
    narnia.init()
    b, c = device_not_yet_written(narnia, host / "B"), device_not_yet_written(narnia, host / "C")
    c.ok("mkdir /m; cd /m; import - c-secret.txt", input=b"c")
    session = b.popen("-b", "-", stdin=subprocess.PIPE)
    session.stdin.write(b"mkdir -p /m\ncd /m\npwd\n")
    session.stdin.flush()
    assert session.stdout.readline() == b"/m\n"
    push(b, narnia)
    narnia.ok("rm -r /m")
    session.stdin.write(b"mkdir late\npwd\n")     # B, not yet told
    session.stdin.flush()
    assert session.stdout.readline() == b"/m\n"
    push(narnia, b)
    push(c, b)
    time.sleep(0.2)
    out, err = session.communicate(b"rm -r *\n", timeout=60)
    assert session.returncode == 1 and "the line typed in /m was not run: that folder was moved or removed on another device" in err.decode(), err.decode()
    assert "c-secret.txt" in b.ok("ls /m").out_lines


def test_a_journal_replaced_after_the_sessions_last_write_is_saved_when_it_ends(narnia, host):
    """Review CJ-2: replaced after the session's last write, the journal was found by no
    append, and what the session had written (reported done) was lost when it ended."""
    session, _ = a_session_whose_journal_is_put_back(narnia, None, b"mkdir /two\nls /\n")
    out, err = session.communicate(b"", timeout=60)
    assert session.returncode == 0 and "was replaced by another copy of it while this session was open" in err.decode(), err.decode()
    assert narnia.ok("ls /").out_lines == ["one", "two"]

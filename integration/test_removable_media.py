"""USB sticks and external disks: FAT (here through fusefat, which needs no loop device; exFAT
and NTFS behave alike in what is tested), which does not tell names apart by case.

Mounting needs root and /dev/fuse (as on CI and the development machines); elsewhere these
tests skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness import blank_image, mounted_fuse, q, started_under_strace, unmount_fuse


@pytest.fixture
def stick(tmp_path):
    """A fresh 64 MiB FAT file system mounted at tmp_path/stick."""
    if shutil.which("fusefat") is None or shutil.which("mkfs.vfat") is None:
        pytest.skip("fusefat or dosfstools is not installed")
    image, mount = tmp_path / "stick.img", tmp_path / "stick"
    blank_image(image)
    subprocess.run(["mkfs.vfat", str(image)], check=True, capture_output=True)
    mount.mkdir()
    yield from mounted_fuse(["fusefat", "-o", "rw+", str(image), str(mount)], mount)


def large_store_files(n) -> list:
    """The store's files over 1 MiB: objects of a big import, whole or cut."""
    return [f for f in n.vault.rglob("*") if f.is_file() and f.stat().st_size > (1 << 20)]


def kill_an_import_midway(n, tmp_path, mebibytes: int) -> None:
    """Starts the import of a file of random bytes and kills it (-9) once its object is in the
    store, over 1 MiB but not yet committed."""
    (tmp_path / "big.bin").write_bytes(os.urandom(mebibytes << 20))
    p = n.popen("-c", f"import {q(str(tmp_path / 'big.bin'))}")
    deadline = time.monotonic() + 30
    while not large_store_files(n):
        assert time.monotonic() < deadline and p.poll() is None, "the import wrote no object"
        time.sleep(0.02)
    p.kill()
    p.wait()


@pytest.fixture
def twins(vault, tmp_path):
    """A vault folder /pics holding names the stick takes for one: Photo.jpg and photo.jpg,
    Dir/f and dir/f, each with its own bytes."""
    src = tmp_path / "pics"
    (src / "Dir").mkdir(parents=True)
    (src / "dir").mkdir()
    (src / "Photo.jpg").write_bytes(b"upper photo\n")
    (src / "photo.jpg").write_bytes(b"lower photo\n")
    (src / "Dir" / "f").write_bytes(b"upper folder\n")
    (src / "dir" / "f").write_bytes(b"lower folder\n")
    vault.ok(f"import {q(str(src))}")
    return vault


@pytest.mark.parametrize("force", [False, True])
def test_names_a_stick_takes_for_one_are_refused_not_overwritten(twins, stick, force):
    """`export -f` of Photo.jpg and photo.jpg onto exFAT said both were exported, exit 0, and
    only one was on the stick: the second had replaced the first (a review; FAT and NTFS too).
    Now the second is refused, naming the first, and the export fails."""
    r = twins.c(f"export {'-f ' if force else ''}/pics {q(str(stick))}")
    assert r.rc == 1, r.describe()
    assert "pics/photo.jpg" in r.err and "pics/Photo.jpg" in r.err, r.describe()
    assert "pics/dir" in r.err and "pics/Dir" in r.err, r.describe()
    # Review DC-9: written by this export an instant before, not "already there" (fusefat
    # numbers a file anew at each lookup).
    assert "pics/Photo.jpg, exported just before" in r.err and "pics/Dir, exported just before" in r.err, r.describe()
    assert "exported /pics/photo.jpg" not in r.out and "exported /pics/dir/f" not in r.out, r.describe()
    pics = stick / "pics"
    assert sorted(p.name for p in pics.iterdir()) == ["Dir", "Photo.jpg"]
    assert (pics / "Photo.jpg").read_bytes() == b"upper photo\n"
    assert (pics / "Dir" / "f").read_bytes() == b"upper folder\n"
    assert [p.name for p in pics.rglob(".narnia-partial-*")] == []


@pytest.mark.serial
def test_skip_existing_does_not_take_a_twin_for_a_file_exported_before(twins, stick):
    """After the first export failed on photo.jpg, `export --skip-existing` (the man page's way
    to finish it) said "skipped … (already there)" for it, exit 0: it took Photo.jpg, of the same
    size, for photo.jpg (a review). The twin is named as the other now (here the folder `dir`,
checked before any file), and the export fails."""
    twins.c(f"export /pics {q(str(stick))}")
    r = twins.c(f"export --skip-existing /pics {q(str(stick))}")
    assert r.rc == 1, r.describe()
    assert "skipped /pics/photo.jpg" not in r.out and "skipped /pics/dir/f" not in r.out, r.describe()
    assert "pics/dir: this file system takes it for" in r.err and "pics/Dir, already there" in r.err, r.describe()
    assert (stick / "pics" / "Photo.jpg").read_bytes() == b"upper photo\n"


def move_rewriting_the_original(vault, original, rewritten: bytes, tmp_path, other_name: Path | None = None) -> str:
    """Runs `import --move ORIGINAL` and, while its commit's `syncfs` is held 3 s (between the
    original's read and its removal), rewrites the original in place with `rewritten` (of the
    same size) and puts its times back, so that its status does not change (but for its change
    time and link count, when `other_name`, another name of it, is removed first). Returns
    stderr."""
    p = started_under_strace(vault, f"import --move {q(str(original))}", tmp_path / "strace.log",
                             ["-e", "trace=syncfs,openat", "-e", "inject=syncfs:delay_enter=3000000"],
                             until="syncfs(", what="its commit")
    before = os.stat(original)
    assert len(rewritten) == before.st_size
    if other_name:
        other_name.unlink()
    with open(original, "r+b") as f:
        f.write(rewritten)
    os.utime(original, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(original)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert other_name or after.st_ctime_ns == before.st_ctime_ns
    _, err = p.communicate(timeout=60)
    assert p.returncode == 0, err
    return err


def test_move_keeps_an_original_rewritten_as_another_name_of_it_went(vault, tmp_path):
    """Review DF-4: a new link count excused a new change time (so that two hard links imported
    together do not call each other changed); removing another name of the original and
    rewriting it in place with its times put back, after it was read, then went unseen, and
    the new version was removed with it. Its bytes are compared now."""
    folder = tmp_path / "d"
    folder.mkdir()
    original = folder / "f"
    original.write_bytes(b"version 1 of the text\n")
    os.utime(original, (1767261600, 1767261600))                           # 2026-01-01: not racy
    os.link(original, tmp_path / "f.bak")
    err = move_rewriting_the_original(vault, original, b"VERSION 2 of the text\n", tmp_path, other_name=tmp_path / "f.bak")
    assert "changed while it was imported; the original is kept" in err, err
    assert original.read_bytes() == b"VERSION 2 of the text\n"


@pytest.mark.parametrize("age", ["new", "an-hour-old"])
def test_move_keeps_an_original_rewritten_with_its_times_put_back(vault, stick, tmp_path, age):
    """FAT keeps modification times to 2 s: a file rewritten in place with the same size just
    after `import --move` read it kept its status, and the original was deleted, the vault
    holding the older version (a review). A file modified that shortly before it is read has
    its bytes compared with the vault's copy before it goes. So has an older one on a file
    system that keeps no change time (FAT, exFAT, FUSE): a rewrite that put its modification
    time back (`rsync --inplace -t`) left its status as it was, and it went (review W5)."""
    original = stick / "notes.txt"
    original.write_bytes(b"first version\n")
    if age == "an-hour-old":
        hour_ago = time.time_ns() - 3600 * 10**9
        os.utime(original, ns=(hour_ago, hour_ago))
    err = move_rewriting_the_original(vault, original, b"other version\n", tmp_path)
    assert original.read_bytes() == b"other version\n"
    assert "changed while it was imported; the original is kept" in err, err
    assert vault.ok("cat /notes.txt").out == "first version\n"


def age_to_inbox(vault, plain: bytes, out) -> None:
    """Writes `plain` encrypted with age to the vault's inbox recipient at `out`."""
    age = shutil.which("age")
    if age is None:
        pytest.skip("age is not installed (make test installs it)")
    [recipient] = [l.split()[1] for l in vault.ok("inbox-key").out_lines if l.startswith("age ")]
    subprocess.run([age, "-r", recipient, "-o", str(out)], input=plain, check=True)


@pytest.mark.parametrize("age", ["new", "an-hour-old"])
def test_move_keeps_an_age_original_rewritten_with_its_times_put_back(vault, stick, tmp_path, age):
    """An age file sent to the inbox recipient goes in decrypted, so its bytes are not the
    vault's: one rewritten in place (another encryption, same size, its times put back) after
    `import --move` read it was deleted on a file system that keeps no change time (review W5,
    for age files). It is decrypted again and compared with the vault's copy."""
    original = stick / "notes.txt.age"
    age_to_inbox(vault, b"first version\n", original)
    if age == "an-hour-old":
        hour_ago = time.time_ns() - 3600 * 10**9
        os.utime(original, ns=(hour_ago, hour_ago))
    other = tmp_path / "other.age"
    age_to_inbox(vault, b"other version\n", other)
    assert other.stat().st_size == original.stat().st_size
    err = move_rewriting_the_original(vault, original, other.read_bytes(), tmp_path)
    assert original.read_bytes() == other.read_bytes()
    assert "changed while it was imported; the original is kept" in err, err
    assert vault.ok("cat /notes.txt").out == "first version\n"


def test_move_removes_a_new_age_original_that_is_unchanged(vault, stick):
    """A new age file was always kept ("too recently to be sure", review W6), and a second
    `import --move` imported it again as `notes (2).txt`; it is compared like any other."""
    original = stick / "notes.txt.age"
    age_to_inbox(vault, b"just sent\n", original)
    r = vault.ok(f"import --move {q(str(original))}")
    assert not original.exists() and "kept" not in r.err, r.describe()
    assert vault.ok("cat /notes.txt").out == "just sent\n"


def test_move_removes_a_new_original_that_is_unchanged(vault, stick):
    """The comparison a new file gets does not keep one that did not change."""
    original = stick / "new.txt"
    original.write_bytes(b"just saved\n")
    r = vault.ok(f"import --move {q(str(original))}")
    assert not original.exists(), r.describe()
    assert vault.ok("cat /new.txt").out == "just saved\n"


@pytest.fixture
def ntfs_store(vault, tmp_path):
    """Mounts an NTFS disk (ntfs-3g, which takes an image file) with the mount options given,
    and puts the vault's store there: ntfs-3g shows every file with the mode the options say,
    whatever chmod did, as the FAT and exFAT drivers do."""
    if shutil.which("ntfs-3g") is None or shutil.which("mkfs.ntfs") is None:
        pytest.skip("ntfs-3g is not installed")
    image, mount = tmp_path / "disk.img", tmp_path / "disk"
    blank_image(image)
    subprocess.run(["mkfs.ntfs", "-F", "-Q", str(image)], check=True, capture_output=True)
    mount.mkdir()

    def mounted(options: str, init: bool = True):
        r = subprocess.run(["ntfs-3g"] + (["-o", options] if options else []) + [str(image), str(mount)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount FUSE here: {r.stderr.strip()}")
        vault.vault = mount / "store"
        if not init:
            return vault
        vault.init()
        vault.ok("mkdir /d")
        return vault

    try:
        yield mounted
    finally:
        unmount_fuse(mount)


def test_on_a_stick_without_modes_an_older_journal_is_said_and_its_objects_kept(ntfs_store, tmp_path):
    """A committed object is marked by its mode (0400), which FAT, exFAT and NTFS do not keep:
    with a journal put back older, the object of the lost import was deleted as a leftover
    without a word, `verify` all intact (a review, on exFAT and NTFS with fmask=0177). Now such a
    file system is found out, the object kept, and the open says why."""
    n = ntfs_store("fmask=0177,dmask=0077")  # every file shows 0600
    before = {p: p.read_bytes() for p in n.vault.rglob("*") if p.is_file()}
    (tmp_path / "big.bin").write_bytes(os.urandom(3 << 20))
    n.ok(f"import {q(str(tmp_path / 'big.bin'))}")
    new = [p for p in n.vault.rglob("*") if p.is_file() and p not in before]
    for path, data in before.items():  # the store put back as it was, the new object left
        path.write_bytes(data)
    r = n.ok("ls /")
    assert "big.bin" not in r.out
    assert "this file system keeps no file modes" in r.err and "they are kept" in r.err, r.describe()
    assert all(p.exists() for p in new), "the object of the lost record was deleted"
    v = n.ok("verify")
    assert "kept" in v.out + v.err, v.describe()


def test_on_a_stick_without_modes_an_import_cut_short_is_no_lost_record(ntfs_store, tmp_path):
    """After `kill -9` during an import into a store on exFAT or NTFS, the next open said
    "changes this device committed are missing" and `verify` failed (a review): a partial object
    there looks like one a lost record named. It is kept without that claim."""
    n = ntfs_store("umask=0077")  # every file shows 0700
    kill_an_import_midway(n, tmp_path, 32)
    r = n.c("verify")
    assert r.rc == 0, r.describe()
    assert "committed are missing" not in r.err, r.describe()


def test_a_store_a_disk_shows_to_everyone_is_refused_with_a_hint_that_works(ntfs_store):
    """NTFS mounted with its defaults shows every file 0777: `init` refused, rightly, but told
    to `chmod 700`, which does nothing there (a review). It says to mount the disk private."""
    n = ntfs_store("", init=False)
    r = n("init")
    assert r.rc == 1, r.describe()
    assert "keeps no modes" in r.err and "umask=077" in r.err and "chmod" not in r.err, r.describe()


def test_a_name_the_stick_cannot_hold_is_named_once_and_leaves_nothing(vault, stick, tmp_path):
    """FAT holds no `?` in a name: the file is named in the error (with one slash after a
    destination given with a trailing one: it read `stick//what?`, a review), the export fails,
    and no partial file is left."""
    (tmp_path / "what?").write_bytes(b"question\n")
    vault.ok(f"import {q(str(tmp_path / 'what?'))}")
    r = vault.c(f"export '/what?' {q(str(stick))}/")
    assert r.rc == 1, r.describe()
    assert f"{stick}/what?" in r.err and "//what?" not in r.err, r.describe()
    assert list(stick.iterdir()) == []


def test_a_read_only_store_with_a_leftover_opens(narnia, tmp_path):
    """After an import killed mid-way, a store made read-only (a disk mounted so, `chattr +i`)
    would not open: the probe of its file modes could not be made, which was taken for "keeps no
    modes", and the record keeping the leftover could not be written (a review). Nothing is
    judged where nothing can be written; the leftover goes at the next open that can."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount")
    image, mount = blank_image(tmp_path / "disk.img"), tmp_path / "disk"
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    mount.mkdir()
    r = subprocess.run(["mount", "-o", "loop", str(image), str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a loop device here: {r.stderr.strip()}")
    try:
        os.chmod(mount, 0o700)
        narnia.vault = mount / "store"
        narnia.init()
        narnia.ok("mkdir /d")
        kill_an_import_midway(narnia, tmp_path, 24)
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        r = narnia.c("ls /")
        assert r.rc == 0, r.describe()
        subprocess.run(["mount", "-o", "remount,rw", str(mount)], check=True)
        r = narnia.ok("verify")
        assert "kept" not in r.out + r.err, r.describe()
        assert not large_store_files(narnia), "the leftover stayed"
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)

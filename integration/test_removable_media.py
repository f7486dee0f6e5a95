"""USB sticks and external disks: FAT (here through fusefat, which needs no loop device; exFAT
and NTFS behave alike in what is tested), which does not tell names apart by case.

Mounting needs root and /dev/fuse (as on CI and the development machines); elsewhere these
tests skip.
"""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from harness import q


@pytest.fixture
def stick(tmp_path):
    """A fresh 64 MiB FAT file system mounted at tmp_path/stick."""
    if shutil.which("fusefat") is None or shutil.which("mkfs.vfat") is None:
        pytest.skip("fusefat or dosfstools is not installed")
    image, mount = tmp_path / "stick.img", tmp_path / "stick"
    with open(image, "wb") as f:
        f.truncate(64 << 20)
    subprocess.run(["mkfs.vfat", str(image)], check=True, capture_output=True)
    mount.mkdir()
    r = subprocess.run(["fusefat", "-o", "rw+", str(image), str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount FUSE here: {r.stderr.strip()}")
    try:
        yield mount
    finally:
        for _ in range(20):
            if subprocess.run(["fusermount", "-u", str(mount)], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)


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
    assert "exported /pics/photo.jpg" not in r.out and "exported /pics/dir/f" not in r.out, r.describe()
    pics = stick / "pics"
    assert sorted(p.name for p in pics.iterdir()) == ["Dir", "Photo.jpg"]
    assert (pics / "Photo.jpg").read_bytes() == b"upper photo\n"
    assert (pics / "Dir" / "f").read_bytes() == b"upper folder\n"
    assert [p.name for p in pics.rglob(".narnia-partial-*")] == []


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

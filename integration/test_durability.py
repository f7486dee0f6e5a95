"""What makes an import durable before its originals go, on a store whose file system does not
pass `syncfs` on: FUSE (bindfs here; sshfs, an rclone mount and gocryptfs alike) sends no
FSYNC to its server for a `syncfs`, so the objects an import wrote could be lost at a power cut
after `import --move` had deleted the originals. There each object is `fsync`ed.

Mounting needs root and /dev/fuse (as on CI and the development machines); elsewhere these
tests skip.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time

import pytest

from harness import Narnia, q


@pytest.fixture
def fuse_store(narnia_bin, tmp_path):
    """A Narnia whose store is on a bindfs (FUSE) mount of a folder in tmp_path."""
    if shutil.which("bindfs") is None:
        pytest.skip("bindfs is not installed")
    backing, mount = tmp_path / "backing", tmp_path / "mnt"
    backing.mkdir()
    mount.mkdir()
    r = subprocess.run(["bindfs", str(backing), str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount FUSE here: {r.stderr.strip()}")
    try:
        n = Narnia(narnia_bin, tmp_path)
        n.vault = mount / "vault"
        n.init()
        yield n
    finally:
        for _ in range(20):
            if subprocess.run(["fusermount", "-u", str(mount)], capture_output=True).returncode == 0:
                break
            time.sleep(0.2)


def synced_paths(n: Narnia, command: str, tmp_path) -> tuple[set[str], int]:
    """Runs `command` under strace; returns the paths `fsync`ed and the number of `syncfs` calls."""
    log = tmp_path / "strace.log"
    argv = ["strace", "-f", "-y", "-o", str(log), "-e", "trace=fsync,fdatasync,syncfs"] + n.argv(["-c", command])
    r = subprocess.run(argv, capture_output=True, text=True, env=n.env, cwd=n.workdir)
    assert r.returncode == 0, r.stderr
    text = log.read_text()
    fsynced = set(re.findall(r"\bfsync\(\d+<([^>]*)>\)", text))
    return fsynced, len(re.findall(r"\bsyncfs\(", text))


def store_objects(n: Narnia) -> set[str]:
    """The files in the store's shard folders (objects, packs, journals)."""
    return {str(p) for p in n.vault.glob("??/*") if p.is_file()}


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

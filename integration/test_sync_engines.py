"""Real sync engines carrying one store between devices (docs/FORMAT.md, "Devices", "Merging",
"Retirement and acknowledgement", "What sync engines may do to the store").

A device is one store directory on one machine, so two copies at different paths here are two
devices. Every engine runs on 127.0.0.1 only (engines.py). What is promised:

- **Syncthing** (two real instances) may carry a store whose devices change it at the same
  time, even while one of them is killed -9 in the middle of an import: once the folders are in
  sync, both devices list the same tree byte for byte, every file reads back identical and is
  here, and `verify` passes on both (conflict copies, if Syncthing made any, are read). The
  object of a removed file stays until the other device has heard, then goes on both.
- **`sync` with an rclone folder remote**: three devices taking turns converge on one tree;
  `mkdir -p` of one path on two devices makes one folder, two files of one name are both kept;
  a removal wins over a concurrent rename; a successful sync leaves the remote holding every
  file the device holds; the object of a removed file stays until every device has heard and
  is deleted on every side (the remote too) once every device has synced twice; the remote
  itself opens as the vault, and opening it to look changes nothing.
- **`sync` with a network remote** (`rclone serve webdav`, configured through `RCLONE_CONFIG_*`
  variables in narnia's environment): two devices converge; after `passwd` on one, the other
  gets the new key file, the old passphrase stops opening it, and the old key file is deleted
  everywhere.
- **An interrupted `sync`** (its rclone child killed -9 while sending objects or a journal, or
  narnia killed -9 while receiving, which takes its rclone child with it) leaves both sides
  opening with a consistent tree, nothing damaged and nothing the remote held before lost;
  rerunning `sync` finishes the job.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from engines import (RcloneServer, Syncthing, SYNCTHING_TMP_PREFIXES, have, rclone_children,
                     wait_connected, wait_in_sync)
from harness import Narnia, Result, a_day_later, find_object, mounted_fuse, object_size, q
from test_devices import forked_journal, own_journal

MIB = 1048576
IMPORTED_RE = re.compile(r"^imported (.+) -> (/.*)$")
SYNCED_RE = re.compile(r"^synced with (.+): sent (\d+) files, received (\d+), deleted (\d+) retired$")
HEX32 = re.compile(r"[0-9a-f]{32}")



@pytest.fixture(autouse=True)
def engines_installed(request):
    """rclone (and Syncthing for its test) must be installed: `make test-deps` installs them;
    a missing engine fails the test rather than passing it unseen."""
    needed = ["rclone"] + (["syncthing"] if "syncthing" in request.node.name else [])
    missing = [p for p in needed if not have(p)]
    if missing:
        pytest.fail(f"{', '.join(missing)} not installed (make test-deps installs the Debian packages)",
                    pytrace=False)


# ---------------------------------------------------------------------------------------------
# Devices


class Device:
    """One device: a store directory with its own runner (HOME, XDG directories)."""

    def __init__(self, name: str, n: Narnia):
        self.name = name
        self.n = n

    @property
    def vault(self) -> Path:
        return self.n.vault

    def c(self, commands: str, **kw) -> Result:
        return self.n.c(commands, **kw)

    def ok(self, commands: str, ctx: str = "", **kw) -> Result:
        r = self.n.c(commands, **kw)
        assert r.rc == 0, f"{commands!r} failed on device {self.name}{ctx}" + r.describe()
        return r

    def listing(self, ctx: str = "") -> str:
        """`ls -lR --json /`, which must succeed."""
        return self.ok("ls -lR --json /", ctx).out

    def verify(self, ctx: str = "") -> Result:
        r = self.n.c("verify")
        assert r.rc == 0 and "all intact" in r.out, \
            f"verify fails on device {self.name}{ctx}" + r.describe()
        return r

    def sync(self, remote: str, ctx: str = "", env: dict | None = None, **kw) -> Result:
        r = self.n.c(f"sync {q(remote)}", env=env, **kw)
        assert r.rc == 0, f"sync {remote} failed on device {self.name}{ctx}" + r.describe()
        assert r.out_lines and SYNCED_RE.match(r.out_lines[0]), \
            f"sync on {self.name} printed no summary line{ctx}" + r.describe()
        return r


def make_device(binary: Path, root: Path, name: str, source: Path, env: dict | None = None,
                remote: str | None = None) -> Device:
    """A new device: a copy of the store at `source` (cp -a), or of `remote` (rclone copy),
    made mode 0700, with its own runner."""
    n = Narnia(binary, root / f"device-{name}")
    if remote is None:
        subprocess.run(["cp", "-a", str(source), str(n.vault)], check=True)
    else:
        r = subprocess.run(["rclone", "copy", remote, str(n.vault)], env=env or n.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert r.returncode == 0, f"rclone copy {remote} {n.vault} failed:\n{r.stdout.decode(errors='replace')}"
    os.chmod(n.vault, 0o700)
    return Device(name, n)


def tree(listing: str) -> dict[str, dict]:
    items = {}
    for line in listing.splitlines():
        obj = json.loads(line)
        items[obj["path"]] = obj
    return items


def assert_same_listings(devices: list[Device], ctx: str = "") -> dict[str, dict]:
    """Every device lists the same tree byte for byte; the tree, parsed."""
    listings = {d.name: d.listing(ctx) for d in devices}
    first = devices[0].name
    for name, text in listings.items():
        if text != listings[first]:
            a, b = tree(listings[first]), tree(text)
            only_a = sorted(set(a) - set(b))
            only_b = sorted(set(b) - set(a))
            differ = sorted(p for p in set(a) & set(b) if a[p] != b[p])
            pytest.fail(f"devices {first} and {name} list different trees{ctx}:\n"
                        f"  only on {first}: {only_a[:10]}\n  only on {name}: {only_b[:10]}\n"
                        f"  different: {[(a[p], b[p]) for p in differ[:5]]}")
    return tree(listings[first])


def assert_contents(dev: Device, expected: dict[str, bytes], ctx: str = "") -> None:
    """Every vault path in `expected` reads back (cat) exactly its bytes on `dev`."""
    paths = sorted(expected)
    batch = dev.n.workdir / f"cat-{time.monotonic_ns()}"
    batch.write_text("cat " + " ".join(q(p) for p in paths) + "\n")
    r = dev.n("-b", str(batch), timeout=120)
    batch.unlink()
    assert r.rc == 0, f"cat of the imported files failed on device {dev.name}{ctx}" + r.describe()
    pos = 0
    for p in paths:
        data = expected[p]
        assert r.outb[pos:pos + len(data)] == data, \
            f"{p} reads back wrong on device {dev.name}{ctx}"
        pos += len(data)
    assert pos == len(r.outb), f"cat gave {len(r.outb)} bytes, expected {pos} on {dev.name}{ctx}"


def assert_all_here(items: dict[str, dict], ctx: str = "") -> None:
    absent = sorted(p for p, o in items.items() if o["type"] == "file" and not o.get("here", True))
    assert not absent, f"files still not on this device after the sync{ctx}: {absent[:10]}"


def write_files(root: Path, rng: random.Random, spec: dict[str, int]) -> dict[str, bytes]:
    """Writes files of the given sizes under root; relative path -> content."""
    files = {}
    for rel, size in spec.items():
        data = rng.randbytes(size)
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        files[rel] = data
    return files


def store_files(root: Path) -> dict[str, tuple[int, int]]:
    """The store's files that a sync engine carries: relative path -> (size, crc), without
    Syncthing's marker and temporaries."""
    out = {}
    for p in sorted(Path(root).rglob("*")):
        rel = str(p.relative_to(root))
        if rel == ".stfolder" or rel.startswith(".stfolder/") or p.name.startswith(SYNCTHING_TMP_PREFIXES):
            continue
        if p.is_file():
            data = p.read_bytes()
            out[rel] = (len(data), hash(data))
    return out


def sides_differ(here: Path, there: Path, ignore: set[str] = frozenset()) -> str | None:
    """What differs between two store folders (file paths and sizes), or None."""
    def files(root):
        return {rel: p.stat().st_size for p in Path(root).rglob("*")
                if p.is_file() and (rel := str(p.relative_to(root))) not in ignore}
    h, t = files(here), files(there)
    if h == t:
        return None
    return (f"only here {sorted(set(h) - set(t))[:4]}, only there {sorted(set(t) - set(h))[:4]}, "
            f"sizes here/there {[(p, h[p], t[p]) for p in sorted(h) if p in t and h[p] != t[p]][:4]}")


def conflict_copies(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in Path(root).rglob("*") if "conflict" in p.name)


class Background:
    """A narnia process whose stdout lines are collected as they come."""

    def __init__(self, dev: Device, commands: str, env: dict | None = None):
        self.dev = dev
        self.commands = commands
        self.proc = subprocess.Popen(dev.n.argv(["-c", commands]), stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     cwd=str(dev.n.workdir), env=env or dev.n.env)
        self.lines: list[str] = []
        self.err = b""
        self.first_line = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.err_reader = threading.Thread(target=self._read_err, daemon=True)
        self.err_reader.start()

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.append(raw.decode("utf-8", "surrogateescape").rstrip("\n"))
            self.first_line.set()

    def _read_err(self):
        self.err = self.proc.stderr.read()

    def wait(self, timeout: float = 120) -> int:
        rc = self.proc.wait(timeout)
        self.reader.join(30)
        self.err_reader.join(30)
        return rc

    def kill(self) -> bool:
        """SIGKILL; whether the process had already finished by itself."""
        finished = self.proc.poll() is not None
        if not finished:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.wait(60)
        return finished

    def describe(self) -> str:
        return (f"\n  device {self.dev.name}: {self.commands!r}\n  exit status: {self.proc.returncode}"
                f"\n  stdout: {self.lines[:20]!r}\n  stderr: {self.err.decode(errors='replace')!r}")

    def reported(self) -> set[str]:
        return {m.group(2) for l in self.lines if (m := IMPORTED_RE.match(l))}


@pytest.fixture
def services():
    """Things to stop when the test ends, whatever happens (Syncthing, rclone servers)."""
    started = []
    yield started
    for s in reversed(started):
        s.stop()


def vault_files(host_root: Path, files: dict[str, bytes], vault_folder: str) -> dict[str, bytes]:
    """Vault path -> content for host files imported as the folder `vault_folder`."""
    return {f"{vault_folder}/{rel}": data for rel, data in files.items()}


# ---------------------------------------------------------------------------------------------
# 1. Syncthing


def test_syncthing_carries_concurrent_imports_and_a_killed_one(narnia, tmp_path, services):
    """Two devices of one store, each shared by its own Syncthing instance: imports on both at
    the same time, and an import killed -9 on one of them while the other imports. Once the
    folders are in sync both list the same tree, every imported file reads back identical on
    both, every file is here, and verify passes on both (conflict copies included, if any)."""
    rng = random.Random(11)
    host = tmp_path / "host"
    narnia.init()
    a = Device("A", narnia)
    base = write_files(host / "base", rng, {f"b{i}.bin": rng.randrange(100, 200_000) for i in range(6)})
    a.ok(f"import {q(str(host / 'base'))}")
    b = make_device(narnia.binary, tmp_path, "B", a.vault)
    expected = vault_files(host, base, "/base")

    sa, sb = Syncthing(tmp_path / "st-a", "st-a"), Syncthing(tmp_path / "st-b", "st-b")
    sa.configure([sb], {"narnia": a.vault})
    sb.configure([sa], {"narnia": b.vault})
    services.extend([sa, sb])
    sa.start()
    sb.start()
    instances = [sa, sb]
    wait_connected(instances)

    def stores_equal():
        fa, fb = store_files(a.vault), store_files(b.vault)
        if fa == fb:
            return None
        return (f"the store folders differ: only on A {sorted(set(fa) - set(fb))[:5]}, only on B "
                f"{sorted(set(fb) - set(fa))[:5]}, different {[p for p in fa if p in fb and fa[p] != fb[p]][:5]}")

    wait_in_sync(instances, "narnia", 60, also=stores_equal)

    # 1. Imports on both devices at once, one file of each into one folder made on both.
    fa1 = write_files(host / "a1", rng, {**{f"s{i:02d}.bin": rng.randrange(0, 50_000) for i in range(25)},
                                         "big1.bin": 2 * MIB + 5, "big2.bin": 3 * MIB})
    fb1 = write_files(host / "b1", rng, {**{f"t{i:02d}.bin": rng.randrange(0, 50_000) for i in range(25)},
                                         "huge.bin": 5 * MIB + 1})
    both_a = write_files(host / "both-a", rng, {"from-a.bin": 70_000})
    both_b = write_files(host / "both-b", rng, {"from-b.bin": 80_000})
    runs = [Background(a, f"import {q(str(host / 'a1'))}; mkdir -p /both/sub; cd /both/sub; "
                          f"import {q(str(host / 'both-a' / 'from-a.bin'))}"),
            Background(b, f"import {q(str(host / 'b1'))}; mkdir -p /both/sub; cd /both/sub; "
                          f"import {q(str(host / 'both-b' / 'from-b.bin'))}")]
    for run in runs:
        assert run.wait() == 0, "a concurrent import failed" + run.describe()
    expected.update(vault_files(host, fa1, "/a1"))
    expected.update(vault_files(host, fb1, "/b1"))
    expected["/both/sub/from-a.bin"] = both_a["from-a.bin"]
    expected["/both/sub/from-b.bin"] = both_b["from-b.bin"]

    # 2. A larger import on B, killed -9 just after its first commit, while A imports more.
    big = write_files(host / "b-big", rng, {f"k{i:02d}.bin": 4 * MIB + i for i in range(20)})
    fa2 = write_files(host / "a2", rng, {f"u{i:02d}.bin": rng.randrange(0, 300_000) for i in range(30)})
    other = Background(a, f"import {q(str(host / 'a2'))}")
    victim = Background(b, f"import {q(str(host / 'b-big'))}")
    assert victim.first_line.wait(120), "the large import printed nothing" + victim.describe()
    finished = victim.kill()
    assert other.wait() == 0, "the import on A failed" + other.describe()
    expected.update(vault_files(host, fa2, "/a2"))
    reported = victim.reported()
    print(f"large import on B: {len(reported)} of {len(big)} files reported before the kill"
          f"{' (it had finished)' if finished else ''}")
    ctx = f" (after kill -9 of an import on B that had reported {len(reported)} of {len(big)} files)"
    # B's next open cleans up its own leftovers; Syncthing then carries that too.
    opened = b.ok("ls /", ctx)
    if opened.err_lines:
        # a journal cut by the kill is reported, and verify fails once (FORMAT.md, Reading journals)
        print(f"B's open after the kill warned: {opened.err_lines}; verify: {b.c('verify').describe()}")
    # While Syncthing carries all that, A opens and lists at any moment (a file whose content
    # has not arrived is listed as not here).
    for _ in range(3):
        r = a.c("ls -lR --json /")
        assert r.rc == 0, f"A does not open while Syncthing carries B's changes{ctx}" + r.describe()
        tree(r.out)
        time.sleep(0.2)

    wait_in_sync(instances, "narnia", 90, also=stores_equal)

    # 3. A removes a large file while B renames another. The removed file's object stays on
    # both until B has heard (B's open acknowledges), then A's next open deletes it, and
    # Syncthing carries the deletion.
    size = object_size(len(fa1["big2.bin"]))
    candidates = [rel for rel, (n, _) in store_files(a.vault).items() if n == size]
    assert len(candidates) == 1, f"cannot tell big2.bin's object among {candidates}"
    doomed = candidates[0]
    a.ok("rm /a1/big2.bin", ctx)
    b.ok("mv /b1/t00.bin /b1/t00-renamed.bin", ctx)
    del expected["/a1/big2.bin"]
    expected["/b1/t00-renamed.bin"] = expected.pop("/b1/t00.bin")
    wait_in_sync(instances, "narnia", 60, also=stores_equal)
    a.ok("ls /", ctx)
    wait_in_sync(instances, "narnia", 60, also=stores_equal)
    held = [d.name for d in (a, b) if (d.vault / doomed).exists()]
    assert held == ["A", "B"], \
        f"the removed file's object was deleted before B heard of the removal: held by {held}{ctx}"
    b.ok("ls /", ctx)     # B reads the retirement and acknowledges it
    wait_in_sync(instances, "narnia", 60, also=stores_equal)
    a.ok("ls /", ctx)     # A sees every device has heard: the object goes
    wait_in_sync(instances, "narnia", 60, also=stores_equal)
    held = [d.name for d in (a, b) if (d.vault / doomed).exists()]
    assert held == [], \
        (f"the removed file's object {doomed} is still held by {held} after both devices heard of "
         f"the removal and Syncthing carried everything{ctx}")

    items = assert_same_listings([a, b], ctx)
    assert_all_here(items, ctx)
    big_paths = {f"/b-big/{rel}": data for rel, data in big.items()}
    missing = sorted(p for p in list(expected) + sorted(reported) if p not in items)
    assert not missing, f"imported files missing after the sync{ctx}: {missing[:10]}"
    present_big = {p: d for p, d in big_paths.items() if p in items}
    strays = sorted(p for p, o in items.items()
                    if o["type"] == "file" and p not in expected and p not in big_paths)
    assert not strays, f"unexpected files in the synced tree{ctx}: {strays[:10]}"
    both = sorted(p for p in items if p.startswith("/both"))
    assert both == ["/both", "/both/sub", "/both/sub/from-a.bin", "/both/sub/from-b.bin"], \
        f"the folder made on both devices is not one folder holding both files{ctx}: {both}"
    for dev in (a, b):
        assert_contents(dev, {**expected, **present_big}, ctx)
        dev.verify(ctx)
    copies = conflict_copies(a.vault) + conflict_copies(b.vault)
    print(f"Syncthing conflict copies: {copies}")
    # verify passed above with whatever copies there are; they must be copies of store files
    for c in copies:
        stem = Path(c).name.split(".sync-conflict-")[0]
        assert HEX32.fullmatch(stem), f"a conflict copy of something that is not a store file: {c}"


# ---------------------------------------------------------------------------------------------
# 2. rclone, a folder remote


def test_rclone_folder_remote_three_devices_take_turns(narnia, tmp_path):
    """Three devices take turns at `sync R` (R a plain folder) with changes in between: imports
    on each, `mkdir -p` of one path on two devices, a rename on one device of a file that
    another removes, and the removal of a large file whose object must stay wherever a device
    has not heard yet and be deleted on every side once all devices have synced twice. At the
    end all three and R itself (opened as a vault) list the same tree and verify."""
    rng = random.Random(22)
    host = tmp_path / "host"
    remote = tmp_path / "R"
    narnia.init()
    a = Device("A", narnia)
    docs = write_files(host / "docs", rng, {"r.txt": 3000, "keep.txt": 5000, "n.bin": 200_000})
    a.ok(f"import {q(str(host / 'docs'))}")
    doomed = write_files(host / "m", rng, {"doomed.bin": 3 * MIB + 17})
    before = a.n.store().sizes()
    a.ok(f"mkdir -p /m; cd /m; import {q(str(host / 'm' / 'doomed.bin'))}")
    doomed_object = find_object(before, a.n.store().sizes(), object_size(3 * MIB + 17), "doomed.bin")
    expected = {**vault_files(host, docs, "/docs")}

    first = a.sync(str(remote))
    assert int(SYNCED_RE.match(first.out_lines[0]).group(2)) > 0, "the first sync sent nothing" + first.describe()
    b = make_device(narnia.binary, tmp_path, "B", None, remote=str(remote))
    c = make_device(narnia.binary, tmp_path, "C", None, remote=str(remote))
    devices = [a, b, c]
    lags: list[str] = []

    def synced(dev: Device, ctx: str) -> Result:
        """dev syncs with R, which must succeed; then both sides hold the same store files
        (a sync exchanges everything; recorded in `lags` and checked at the end)."""
        r = dev.sync(str(remote), ctx)
        # a retired file is never copied to a side that lacks it
        lag = sides_differ(dev.vault, remote, ignore={doomed_object})
        if lag:
            lags.append(f"{dev.name}{ctx}: {lag}; it printed {r.out_lines[0]!r}")
        return r

    # Changes between turns.
    fb = write_files(host / "fromB", rng, {f"b{i}.bin": rng.randrange(0, 100_000) for i in range(8)})
    b.ok(f"import {q(str(host / 'fromB'))}")
    deep_b = write_files(host / "deep-b", rng, {"b.txt": 1234, "same.txt": 111})
    deep_c = write_files(host / "deep-c", rng, {"c.txt": 4321, "same.txt": 222})
    b.ok(f"mkdir -p /common/deep; cd /common/deep; import {q(str(host / 'deep-b' / 'b.txt'))} "
         f"{q(str(host / 'deep-b' / 'same.txt'))}")
    synced(b, " (B's first turn)")
    c.ok(f"mkdir -p /common/deep; cd /common/deep; import {q(str(host / 'deep-c' / 'c.txt'))} "
         f"{q(str(host / 'deep-c' / 'same.txt'))}")
    r = synced(c, " (C's first turn)")
    assert "new: /fromB/b0.bin" in r.out_lines, \
        "C's sync does not report the items B imported as new" + r.describe()
    expected.update(vault_files(host, fb, "/fromB"))
    expected["/common/deep/b.txt"] = deep_b["b.txt"]
    expected["/common/deep/c.txt"] = deep_c["c.txt"]

    # A renames /docs/r.txt while B (which has not seen the rename) removes it, and B removes
    # the large file.
    a.ok("mv /docs/r.txt /docs/renamed.txt")
    b.ok("rm /docs/r.txt; rm /m/doomed.bin")
    expected["/docs/renamed.txt"] = expected.pop("/docs/r.txt")
    fa = write_files(host / "fromA", rng, {f"a{i}.bin": rng.randrange(0, 100_000) for i in range(5)})
    a.ok(f"import {q(str(host / 'fromA'))}")
    expected.update(vault_files(host, fa, "/fromA"))

    def holders():
        return [name for name, root in (("A", a.vault), ("B", b.vault), ("C", c.vault), ("R", remote))
                if (Path(root) / doomed_object).exists()]

    assert holders() == ["A", "B", "C", "R"], \
        (f"the removal on B deleted the object before the other devices heard of it (nothing "
         f"another device may need is deleted): held by {holders()}")
    for turn, dev in enumerate([b, a, c, b, a, c], 1):
        r = synced(dev, f" (turn {turn} after the removal)")
        if turn == 1:
            assert holders() == ["A", "B", "C", "R"], \
                (f"the removed file's object was deleted where a device that has not heard of the "
                 f"removal still needs it: now held by {holders()}" + r.describe())
    held_after_two = holders()

    # the rename, which B had not seen, takes the file out of B's removal
    items = assert_same_listings(devices, " (after the turns)")
    assert "/docs/renamed.txt" in items and "/docs/r.txt" not in items, \
        "a rename made on another device while B removed the file keeps it (FORMAT.md, Merging 3)"
    assert "/m/doomed.bin" not in items, "the removed large file is still listed"
    deep = sorted(p for p in items if p.startswith("/common"))
    # B placed its same.txt first (it synced before C imported), so C's is the conflict copy
    conflict = [p for p in deep if re.fullmatch(r"/common/deep/same \(conflict \d{4}-\d{2}-\d{2} .+\)\.txt", p)]
    assert len(conflict) == 1 and deep == sorted(["/common", "/common/deep", "/common/deep/b.txt",
                                                  "/common/deep/c.txt", "/common/deep/same.txt"] + conflict), \
        (f"mkdir -p of one path on two devices must make one folder holding every file, two files of "
         f"one name both kept (FORMAT.md, Merging 4 and 5): {deep}")
    expected["/common/deep/same.txt"] = deep_b["same.txt"]
    expected[conflict[0]] = deep_c["same.txt"]
    files = sorted(p for p, o in items.items() if o["type"] == "file")
    assert files == sorted(expected), f"the merged tree holds {files}, expected {sorted(expected)}"
    assert_all_here(items)
    for dev in devices:
        assert_contents(dev, expected)
        dev.verify()

    # R itself is a store: opening it to look lists the same tree and adds nothing to it.
    before = {str(p.relative_to(remote)): p.stat().st_size for p in remote.rglob("*") if p.is_file()}
    r_dev = Device("R", Narnia(narnia.binary, tmp_path / "device-R"))
    r_dev.n.vault = remote
    os.chmod(remote, 0o700)
    assert_same_listings([a, r_dev], " (the remote opened as a vault)")
    r_dev.verify(" (the remote opened as a vault)")
    after = {str(p.relative_to(remote)): p.stat().st_size for p in remote.rglob("*") if p.is_file()}
    assert after == before, "opening the remote to look at it changed it (a device that has not written writes nothing)"

    # Checked last, so that a failure here does not hide the ones above.
    for dev in devices:
        synced(dev, " (a third turn)")
    held_after_three = holders()
    problems = []
    if lags:
        problems.append("a sync that succeeded left the remote without what the device holds "
                        "(a record the sync itself wrote, such as the acknowledgement of a "
                        "retirement, goes out only with the next sync):\n    " + "\n    ".join(lags))
    if held_after_two:
        problems.append(f"the removed file's object {doomed_object} is still held by {held_after_two} "
                        f"after every device has synced twice since the removal (after a third "
                        f"turn: {held_after_three})")
    assert not problems, "\n  ".join(problems)


# ---------------------------------------------------------------------------------------------
# 3. rclone, a network remote


def test_a_sync_says_which_file_here_became_a_conflict_copy(narnia, tmp_path):
    """A and B import /d/same.txt (and more), A first; B's sync shows A's as new and names B's own,
    now a conflict copy (review EC-2: "new: /d/same.txt" alone pointed at a file that was
    no longer the user's). A's sync, which finds its own file keeping its name, says none."""
    remote = tmp_path / "R"
    narnia.init()
    a = Device("A", narnia)
    a.ok("mkdir /d")
    a.sync(str(remote))
    b = make_device(narnia.binary, tmp_path, "B", None, remote=str(remote))
    # In /d, which both know; in /p, which each makes (merged: review EE-1); and at the root,
    # where A makes a folder of the name (a folder keeps it: review EE-6).
    a.ok("cd /d; import - same.txt; mkdir /p; cd /p; import - y.txt; mkdir /f.txt", input=b"from A\n")
    b.ok("cd /d; import - same.txt; mkdir /p; cd /p; import - y.txt; cd /; import - f.txt", input=b"from B\n")
    assert "conflict:" not in a.sync(str(remote)).out
    r = b.sync(str(remote))
    copies = [p for p in b.ok("find /").out_lines if " (conflict " in p]
    assert [c.split(" (conflict ")[0] for c in copies] == ["/d/same", "/f", "/p/y"], r.describe()
    assert b.ok(f"cat {q(copies[0])}").outb == b"from B\n", r.describe()   # the first import took the input
    assert "new: /d/same.txt" in r.out_lines, r.describe()
    for was, copy, holder in zip(["/d/same.txt", "/f.txt", "/p/y.txt"], copies, ["file", "folder", "file"]):
        assert f"conflict: {was} is now {copy}: a {holder} from another device has its name" in r.out_lines, r.describe()
    assert "conflict:" not in a.sync(str(remote)).out


def test_two_devices_syncing_with_one_remote_at_once_lose_nothing(narnia, tmp_path):
    """Two devices run `sync R` at the same moment, round after round, each having imported
    new files and removed folders of its own (so that retirements and their deletions on R
    cross the other's sync). Every sync succeeds with nothing on standard error but the test
    key warning (and, beside the other's, the note that content has not arrived yet); afterwards both devices list the same tree, every file still there reads
    back, and both verify (stop 49's note: concurrent syncs were never tried)."""
    rng = random.Random(41)
    host = tmp_path / "host"
    remote = tmp_path / "R"
    narnia.init()
    a = Device("A", narnia)
    expected = vault_files(host, write_files(host / "first", rng, {f"f{i}.bin": rng.randrange(0, 200_000) for i in range(6)}), "/first")
    a.ok(f"import {q(str(host / 'first'))}")
    a.sync(str(remote))
    b = make_device(narnia.binary, tmp_path, "B", None, remote=str(remote))
    devices = [a, b]

    def quiet(err: str, racing: bool = False) -> list[str]:
        """The lines of `err` but the test key warning and, for a sync run beside another
        (`racing`), the note that content has not arrived yet: one sync may list R before the
        other's objects land there and fetch its journal after, which is the documented outcome
        of that race; the sequential syncs at the end must bring the content."""
        return [l for l in err.splitlines() if "insecure test key derivation" not in l
                and not (racing and "not on this device yet (their content has not arrived)" in l)]

    for turn in range(6):
        for d in devices:
            folder = f"{d.name}{turn}"
            files = write_files(host / folder, rng, {f"x{i}.bin": rng.randrange(0, 300_000) for i in range(3)})
            d.ok(f"import {q(str(host / folder))}")
            expected.update(vault_files(host, files, "/" + folder))
            own = sorted(p.split("/")[1] for p in expected if p.startswith(f"/{d.name}") and p.split("/")[1] != folder)
            if own and turn % 2 == 1:
                gone = rng.choice(own)
                d.ok(f"rm -r /{gone}")
                expected = {p: data for p, data in expected.items() if not p.startswith(f"/{gone}/")}
        runs = [d.n.popen("-c", f"sync {q(str(remote))}", stdout=subprocess.PIPE, stderr=subprocess.PIPE) for d in devices]
        for d, run in zip(devices, runs):
            out, err = run.communicate(timeout=120)
            assert run.returncode == 0 and not quiet(err.decode(), racing=True), \
                f"turn {turn}: {d.name}'s sync, run beside the other's, exit {run.returncode}:\n{out.decode()}{err.decode()}"
    for d in devices * 2:
        assert not quiet(d.sync(str(remote), " (after the concurrent turns)").err)
    items = assert_same_listings(devices, " after concurrent syncs")
    assert sorted(p for p, o in items.items() if o["type"] == "file") == sorted(expected)
    for d in devices:
        assert_contents(d, expected, " after concurrent syncs")
        d.verify(" after concurrent syncs")


def test_rclone_webdav_remote(narnia, tmp_path, services):
    """`rclone serve webdav` on 127.0.0.1 holds the remote, configured for narnia's rclone
    through RCLONE_CONFIG_* variables: two devices exchange changes through NETR:store and end
    with the same tree, verified; the served folder opens as the vault too."""
    rng = random.Random(33)
    host = tmp_path / "host"
    served = tmp_path / "served"
    served.mkdir()
    server = RcloneServer("webdav", served, tmp_path)
    services.append(server)
    env = dict(narnia.env)
    env.update({"RCLONE_CONFIG_NETR_TYPE": "webdav",
                "RCLONE_CONFIG_NETR_URL": f"http://127.0.0.1:{server.port}",
                "RCLONE_CONFIG_NETR_VENDOR": "other"})
    remote = "NETR:store"
    narnia.init()
    a = Device("A", narnia)
    f1 = write_files(host / "one", rng, {"a.bin": 100_000, "b.bin": 2 * MIB + 1, "c.txt": 10})
    a.ok(f"import {q(str(host / 'one'))}")
    a.sync(remote, " (A's first sync)", env=env)
    b = make_device(narnia.binary, tmp_path, "B", None, env=env, remote=remote)
    b.n.env = env
    a.n.env = env
    expected = vault_files(host, f1, "/one")

    f2 = write_files(host / "two", rng, {"d.bin": 300_000, "e.bin": 1_500_000})
    b.ok(f"import {q(str(host / 'two'))}; mkdir -p /x/y; mv /one/c.txt /x/y/c.txt")
    f3 = write_files(host / "three", rng, {"f.bin": 50_000})
    a.ok(f"import {q(str(host / 'three'))}; rm /one/a.bin")
    expected.update(vault_files(host, f2, "/two"))
    expected.update(vault_files(host, f3, "/three"))
    expected["/x/y/c.txt"] = expected.pop("/one/c.txt")
    del expected["/one/a.bin"]
    for turn, dev in enumerate([b, a, b, a], 1):
        dev.sync(remote, f" (turn {turn}){server.describe()}")
    items = assert_same_listings([a, b], " (after exchanging through WebDAV)")
    files = sorted(p for p, o in items.items() if o["type"] == "file")
    assert files == sorted(expected), f"the merged tree holds {files}, expected {sorted(expected)}"
    assert_all_here(items)
    for dev in (a, b):
        assert_contents(dev, expected)
        dev.verify()
    served_dev = Device("served", Narnia(narnia.binary, tmp_path / "device-served"))
    served_dev.n.vault = served / "store"
    os.chmod(served / "store", 0o700)
    assert_same_listings([a, served_dev], " (the served folder opened as a vault)")
    served_dev.verify(" (the served folder opened as a vault)")

    # passwd on A writes a new key file (of the same size: WebDAV compares sizes only) and
    # retires the old one: once B has the new key file the old passphrase no longer opens B,
    # and the old key file is deleted everywhere once both devices have heard.
    old_pass, new_pass = "correct horse", "battery staple"
    a.ok(f"passwd --new-passphrase-file {q(str(a.n.passphrase_file(new_pass)))}")
    a.sync(remote, " (after passwd)", passphrase=new_pass)
    b.sync(remote, " (B's first sync after A's passwd, with the old passphrase)", passphrase=old_pass)
    b.ok("pwd", " (the new passphrase, after B's sync brought the new key file)", passphrase=new_pass)
    r = b.c("pwd", passphrase=old_pass)
    assert r.rc == 3, ("the old passphrase still opens B after its sync brought the new key file "
                       "and the retirement of the old one" + r.describe())
    for turn, dev in enumerate([a, b, a, b], 1):
        dev.sync(remote, f" (turn {turn} after passwd)", passphrase=new_pass)
    keys = {d: sorted(p.name for p in Path(root).iterdir() if p.is_file() and p.stat().st_size != 72)   # not the inbox key
            for d, root in (("A", a.vault), ("B", b.vault), ("served", served / "store"))}
    assert all(len(k) == 1 for k in keys.values()) and len({k[0] for k in keys.values()}) == 1, \
        f"the retired key file is not deleted everywhere after both devices heard twice: {keys}"
    for dev in (a, b, served_dev):
        r = dev.c("pwd", passphrase=old_pass)
        assert r.rc == 3, f"the old passphrase still opens {dev.name} after passwd" + r.describe()
        dev.ok("verify", " (after passwd)", passphrase=new_pass)


# ---------------------------------------------------------------------------------------------
# 4. Interrupted sync


def running(pid: int) -> bool:
    """Whether the process exists and is not a zombie."""
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return st[st.rindex(")") + 2:].split()[0] not in ("Z", "X")


def wait_for_rclone_copy(run: Background, source: str | None = None, destination: str | None = None,
                         timeout: float = 60) -> tuple[int, list[str]]:
    """The pid and argv of narnia's rclone child once it runs `copy` from `source` or to
    `destination`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if run.proc.poll() is not None:
            pytest.fail("sync finished before its rclone copy could be caught" + run.describe())
        for pid, argv in rclone_children(run.proc.pid):
            if "copy" in argv and (source is None or argv[-2] == source) \
                    and (destination is None or argv[-1] == destination):
                return pid, argv
        time.sleep(0.02)
    pytest.fail("no rclone copy child of narnia appeared" + run.describe())


def test_interrupted_sync_is_finished_by_the_next(narnia, tmp_path):
    """A sync that sends tens of MB (slowed by RCLONE_BWLIMIT) has its rclone child killed -9
    mid-transfer: the sync fails, the device and the remote both still open with a consistent
    tree (the remote lacks the new items, nothing earlier is lost, nothing is damaged) and a
    third device syncing with the half-written remote is fine. Then narnia itself is killed -9
    while receiving: its rclone child dies with it, the device opens without the receiving
    folder and verifies. Rerunning sync finishes the job on every side."""
    rng = random.Random(44)
    host = tmp_path / "host"
    remote = tmp_path / "R"
    narnia.init()
    a = Device("A", narnia)
    early = write_files(host / "early", rng, {f"e{i}.bin": rng.randrange(0, 200_000) for i in range(10)})
    a.ok(f"import {q(str(host / 'early'))}")
    a.sync(str(remote))
    b = make_device(narnia.binary, tmp_path, "B", None, remote=str(remote))
    earlier = a.listing()
    expected = vault_files(host, early, "/early")

    large = write_files(host / "large", rng, {f"L{i}.bin": 8 * MIB + i for i in range(4)})
    a.ok(f"import {q(str(host / 'large'))}")
    expected_all = {**expected, **vault_files(host, large, "/large")}
    full = a.listing()

    # 1. The rclone child killed -9 while sending.
    slow = dict(a.n.env, RCLONE_BWLIMIT="8M")
    remote_before = {str(p.relative_to(remote)): p.read_bytes() for p in remote.rglob("*") if p.is_file()}
    run = Background(a, f"sync {q(str(remote))}", env=slow)
    pid, argv = wait_for_rclone_copy(run, destination=str(remote))
    time.sleep(1.0)
    os.kill(pid, signal.SIGKILL)
    rc = run.wait()
    ctx = " (after the rclone child of a sending sync was killed -9)"
    assert rc == 1, f"a sync whose rclone was killed must fail{ctx}" + run.describe()
    err = run.err.decode(errors="replace")
    assert "narnia: error: sync:" in err and "rclone" in err, \
        f"the failed sync must say that rclone failed{ctx}" + run.describe()
    # A failed command prints nothing on stdout: what it did goes to stderr as notes (its
    # "synced with …" summary on stdout read as a success to scripts; a review).
    assert run.lines == [] and "narnia: note: sync: partly synced with " in err, \
        f"a failed sync must say what it did on stderr only{ctx}" + run.describe()
    sizes_a = {str(p.relative_to(a.vault)): p.stat().st_size for p in a.vault.rglob("*") if p.is_file()}
    new_there = {rel: (remote / rel).stat().st_size if (remote / rel).exists() else None
                 for rel in sizes_a if rel not in remote_before}
    print(f"after the kill, the remote holds of the new files (path: size there / here): "
          f"{ {rel: f'{size}/{sizes_a[rel]}' for rel, size in new_there.items()} }")
    assert any(size != sizes_a[rel] for rel, size in new_there.items()), \
        f"the send had finished when its rclone was killed: the test hit nothing{ctx}"
    for rel, data in remote_before.items():
        p = remote / rel
        assert p.exists() and p.read_bytes()[:len(data)] == data, \
            f"a file the remote held before the interrupted sync was lost or changed: {rel}{ctx}"
    assert a.listing(ctx) == full, f"the sending device's tree changed{ctx}"
    a.verify(ctx)
    r_dev = Device("R", Narnia(narnia.binary, tmp_path / "device-R"))
    r_dev.n.vault = remote
    os.chmod(remote, 0o700)
    assert r_dev.listing(ctx) == earlier, \
        f"the half-written remote must open with the tree it had before (no new item without its content){ctx}"
    r_dev.verify(ctx)
    b.sync(str(remote), ctx + " (B syncs with the half-written remote)")
    assert b.listing(ctx) == earlier, f"B must see the earlier tree from the half-written remote{ctx}"
    b.verify(ctx + " (B, after syncing with the half-written remote)")

    # 2. The sync is finished by rerunning it.
    a.sync(str(remote), " (rerun after the interrupted send)")
    assert r_dev.listing() == full, "the remote lacks items after the rerun sync"
    r_dev.verify(" (the remote after the rerun)")

    # 3. narnia killed -9 while receiving the large files on B.
    run = Background(b, f"sync {q(str(remote))}", env=dict(b.n.env, RCLONE_BWLIMIT="8M"))
    pid, argv = wait_for_rclone_copy(run, source=str(remote))
    time.sleep(1.0)
    finished = run.kill()
    assert not finished, "B's receiving sync finished before the kill: the test hit nothing" + run.describe()
    deadline = time.monotonic() + 5
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = running(pid)
    if alive:
        os.kill(pid, signal.SIGKILL)
    assert not alive, "narnia's rclone child outlived narnia's kill -9 (it writes into the store unsupervised)"
    ctx = " (after kill -9 of narnia while it received)"
    receiving = [p.name for p in b.vault.iterdir() if p.is_dir() and HEX32.fullmatch(p.name)]
    assert receiving, f"no receiving folder in the store right after the kill: the kill hit nothing{ctx}"
    listing = tree(b.listing(ctx))
    for p, o in tree(earlier).items():
        assert p in listing, f"{p}, there before the interrupted sync, is gone{ctx}"
    present = {p: d for p, d in expected_all.items() if p in listing and listing[p].get("here", True)}
    assert_contents(b, present, ctx)
    b.verify(ctx)
    leftovers = [p.name for p in b.vault.iterdir() if p.is_dir() and HEX32.fullmatch(p.name)]
    assert not leftovers, f"the interrupted sync's receiving folder is still in the store after an open{ctx}: {leftovers}"

    # 4. Rerun: everything everywhere.
    b.sync(str(remote), " (rerun after the kill)")
    a.sync(str(remote), " (A's last turn)")
    items = assert_same_listings([a, b, r_dev], " (after the reruns)")
    assert_all_here(items)
    for dev in (a, b, r_dev):
        assert_contents(dev, expected_all)
        dev.verify(" (after the reruns)")


def test_interrupted_journal_send_loses_nothing_the_remote_had(narnia, tmp_path):
    """A sync whose rclone child is killed -9 while it sends a grown journal (slowed by
    RCLONE_BWLIMIT) must not cost the remote what it held before: the remote still opens
    with every item an earlier, finished sync gave it, and rerunning sync finishes the job."""
    host = tmp_path / "host"
    remote = tmp_path / "R"
    narnia.init()
    a = Device("A", narnia)
    for part in ("one", "two"):
        (host / part).mkdir(parents=True)
        for i in range(1500):
            (host / part / f"f{i:04d}.txt").write_text(f"{part} {i}\n")
    a.ok(f"import {q(str(host / 'one'))}")
    a.sync(str(remote))
    r_dev = Device("R", Narnia(narnia.binary, tmp_path / "device-R"))
    r_dev.n.vault = remote
    os.chmod(remote, 0o700)
    before = tree(r_dev.listing(" (the remote after a finished sync)"))
    a.ok(f"import {q(str(host / 'two'))}")

    def sizes(root):
        return {str(p.relative_to(root)): p.stat().st_size for p in Path(root).rglob("*") if p.is_file()}
    here, there = sizes(a.vault), sizes(remote)
    grown = [p for p in here if p in there and here[p] > there[p]]
    assert len(grown) == 1, f"expected one journal grown since the last sync, found {grown}"
    journal = grown[0]

    run = Background(a, f"sync {q(str(remote))}", env=dict(a.n.env, RCLONE_BWLIMIT="100k"))
    deadline = time.monotonic() + 60
    pid = None
    while pid is None and time.monotonic() < deadline:
        assert run.proc.poll() is None, "the sync finished before its journal transfer was caught" + run.describe()
        for child, argv in rclone_children(run.proc.pid):
            if "copy" in argv and argv[-1] == str(remote) and "--files-from-raw" in argv:
                try:
                    listed = Path(argv[argv.index("--files-from-raw") + 1]).read_text().split("\n")
                except OSError:
                    continue
                if journal in listed:
                    pid = child
            elif "copyto" in argv and any(a.endswith("/" + journal) for a in argv):
                pid = child   # the journal, sent under a temporary name
        time.sleep(0.01)
    assert pid is not None, "no rclone child sending the journal appeared" + run.describe()
    time.sleep(0.7)
    os.kill(pid, signal.SIGKILL)
    run.wait()
    ctx = (f" (after the rclone child sending journal {journal} was killed -9; the remote's copy "
           f"had {there[journal]} bytes before, {(remote / journal).stat().st_size} after, "
           f"{here[journal]} here)")
    assert run.proc.returncode == 1, f"a sync whose rclone was killed must fail{ctx}" + run.describe()
    a.verify(ctx)
    after = r_dev.c("ls -lR --json /")
    assert after.rc == 0, f"the remote does not open{ctx}" + after.describe()
    lost = sorted(set(before) - set(tree(after.out)))
    assert not lost, (f"items the remote held after an earlier finished sync are gone from it "
                      f"({len(lost)} of {len(before)}, e.g. {lost[:3]}){ctx}")
    # Review CM-5: the temporary name tells the remote nothing of the device that sends it.
    device = next(l.split()[0] for l in a.ok("devices").out_lines if l.endswith("(this device)"))
    cut = [p for p in remote_files(remote) if ".narnia-sending-" in p]
    assert all(device not in p.rsplit(".narnia-sending-", 1)[1] for p in cut), (device, cut)
    a.sync(str(remote), " (rerun)")
    assert not [p for p in remote_files(remote) if ".narnia-sending-" in p], "the cut transfer is left there"
    assert_same_listings([a, r_dev], " (after the rerun)")
    r_dev.verify(" (after the rerun)")


def test_a_folder_remote_is_as_private_as_the_store(vault, tmp_path):
    """rclone ran with the user's umask: `sync` to a local folder made a world-readable copy of
    the store, key file included, which any user of the machine could take away and attack
    offline (a review). It writes under umask 077, as narnia does."""
    (tmp_path / "a.txt").write_bytes(b"private\n")
    vault.ok(f"import {q(str(tmp_path / 'a.txt'))}")
    remote = tmp_path / "R"
    old = os.umask(0o022)
    try:
        vault.ok(f"sync {q(str(remote))}")
    finally:
        os.umask(old)
    paths = [remote] + sorted(remote.rglob("*"))
    assert len(paths) > 3
    loose = [f"{p} {p.stat().st_mode & 0o777:o}" for p in paths if p.stat().st_mode & 0o077]
    assert loose == [], loose


@pytest.mark.parametrize("misread", [b" (conflicted copy from caf\xe9)", b" (conflicted copy)\r",
                                     " (conflicted copy from \u201bx)".encode()], ids=["latin-1", "carriage-return", "quote-mark"])
def test_a_store_file_rclone_cannot_fetch_is_named_and_the_sync_goes_on(narnia, host, tmp_path, misread):
    """A copy on the remote whose name is not UTF-8 (an engine's copy of a journal named after a
    host in Latin-1) is listed by rclone with U+FFFD for the bytes it cannot read, and cannot be
    fetched under that name: every sync then failed for good, taking it for a file that went
    during the sync (review AC). So for a carriage return at the end of a name, which rclone
    drops from the list it reads, and `‛`, which it lists doubled (review AF). It is named,
    left there, and read once renamed in UTF-8 without those."""
    journal, branch1 = forked_journal(narnia, host)
    (host / "branch2.bin").write_bytes(os.urandom(3000))
    narnia.ok(f"import {q(str(host / 'branch2.bin'))}")
    remote = tmp_path / "remote"
    narnia.ok(f"sync {q(str(remote))}")
    there = os.fsencode(remote / journal.parent.name / journal.name)
    with open(there + misread, "wb") as f:
        f.write(branch1)
    for _ in range(2):
        r = narnia.ok(f"sync {q(str(remote))}")
        said = (f"narnia: warning: sync: {remote} holds 1 file named like store files that rclone lists under another "
                f"name and cannot fetch (not UTF-8, or holding a control character or ‛): {journal.parent.name}/{journal.name}")
        assert [l for l in r.err_lines if l.startswith(said)], r.describe()
        if misread.endswith(b"\xe9)"):
            assert (said + " (conflicted copy from caf\ufffd) (to have it read, rename it there in UTF-8 without those, "
                    "keeping the hex digits and the sync engine's suffix)") in r.err_lines, r.describe()
        assert "branch1.bin" not in narnia.ok("ls /").out_lines
    assert os.path.exists(there + misread), "the copy there is left alone"
    os.rename(there + misread, there + b" (conflicted copy from cafe)")
    r = narnia.ok(f"sync {q(str(remote))}")
    assert "cannot fetch" not in r.err, r.describe()
    assert sorted(l for l in narnia.ok("ls /").out_lines) == ["base.bin", "branch1.bin", "branch2.bin"]
    assert narnia.ok("cat /branch1.bin").outb == (host / "branch1.bin").read_bytes()


def test_copies_whose_names_differ_only_in_unicode_normalisation_are_two_files(narnia, host, tmp_path):
    """Review AF (L1): the listing was keyed by Swift strings, which compare canonically, so two
    copies on the remote named `… café`, one spelled NFC and one NFD (engines on two systems),
    were one file to sync: one was fetched and the records of the other's branch never, without
    a word. Names are told apart byte for byte, as the file system does."""
    import unicodedata
    from test_store_forks import put_back, save
    narnia.init()
    (host / "base.bin").write_bytes(os.urandom(1000))
    narnia.ok(f"import {q(str(host / 'base.bin'))}")
    save(narnia.vault, tmp_path / "saved")
    branches = []
    for n in (1, 2, 3):
        (host / f"branch{n}.bin").write_bytes(os.urandom(1000 * n))
        if n > 1:
            put_back(tmp_path / "saved", narnia.vault)
        journal, _ = own_journal(narnia, f"import {q(str(host / f'branch{n}.bin'))}")
        branches.append(journal.read_bytes())
        save(narnia.vault, tmp_path / f"branch{n}")
    remote = tmp_path / "remote"
    narnia.ok(f"sync {q(str(remote))}")
    for n in (1, 2):   # their objects, as the devices that wrote them would have sent them
        for f in (tmp_path / f"branch{n}").glob("??/*"):
            if f.name != journal.name and not (remote / f.parent.name / f.name).exists():
                (remote / f.parent.name).mkdir(exist_ok=True)
                shutil.copy(f, remote / f.parent.name / f.name)
    copies = [os.fsencode(journal.name + unicodedata.normalize(form, " (conflicted copy from caf\u00e9)")) for form in ("NFC", "NFD")]
    assert copies[0] != copies[1]
    for name, branch in zip(copies, branches):
        with open(os.path.join(os.fsencode(remote / journal.parent.name), name), "wb") as f:
            f.write(branch)
    r = narnia.ok(f"sync {q(str(remote))}")
    assert SYNCED_RE.match(r.out_lines[0]).group(3) == "4", r.describe()   # two copies, two objects
    assert sorted(narnia.ok("ls /").out_lines) == ["base.bin", "branch1.bin", "branch2.bin", "branch3.bin"]
    for n in (1, 2):
        assert narnia.ok(f"cat /branch{n}.bin").outb == (host / f"branch{n}.bin").read_bytes()
    for _ in range(2):
        narnia.ok(f"sync {q(str(remote))}")
    assert "intact" in narnia.ok("verify").out
    other = Narnia(narnia.binary, tmp_path / "other-work")
    other.vault = remote
    assert sorted(other.ok("ls /").out_lines) == ["base.bin", "branch1.bin", "branch2.bin", "branch3.bin"]


def two_devices_on_a_local_remote(narnia_bin: Path, host: Path, tmp_path: Path) -> tuple[Device, Device, Path]:
    """A and B on the folder remote `tmp_path/remote`, B one record ahead of A there."""
    a = Device("A", Narnia(narnia_bin, tmp_path / "a"))
    a.n.init()
    (host / "a.bin").write_bytes(os.urandom(2000))
    a.ok(f"import {q(str(host / 'a.bin'))}")
    remote = tmp_path / "remote"
    a.sync(str(remote))
    b = make_device(narnia_bin, tmp_path, "B", remote)
    (host / "b.bin").write_bytes(os.urandom(2000))
    b.ok(f"import {q(str(host / 'b.bin'))}")
    b.sync(str(remote))
    return a, b, remote


def with_rclone_wrapped(device: Device, tmp_path: Path, case: str) -> dict:
    """The environment of `device` with an `rclone` first in PATH that runs the shell `case`
    clause `case` (on its arguments "$@") before the real rclone."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "rclone").write_text(f'#!/bin/sh\ncase "$*" in {case} esac\nexec /usr/bin/rclone "$@"\n')
    (fake / "rclone").chmod(0o755)
    return {**device.n.env, "PATH": f"{fake}:{device.n.env['PATH']}"}


def remote_files(remote: Path) -> dict[str, bytes]:
    return {str(p.relative_to(remote)): p.read_bytes() for p in remote.rglob("*") if p.is_file()}


def test_a_listing_cut_short_by_a_folder_that_went_sends_nothing(narnia_bin, host, tmp_path):
    """Review AF (high): rclone's `lsjson -R` exits 3, "directory not found", also when a folder
    in the remote goes while it lists (another program's, a sync engine removing an empty
    one). That was taken for a remote not made yet: everything was sent, and the journals
    there, B's longer one too, were replaced by the copies here. Now the sync fails, sending
    nothing. Here an rclone in PATH says so of every recursive listing."""
    a, _, remote = two_devices_on_a_local_remote(narnia_bin, host, tmp_path)
    env = with_rclone_wrapped(a, tmp_path, '*"lsjson -R"*) echo "ERROR : d7: directory not found" >&2; exit 3;;')
    before = remote_files(remote)
    r = a.c(f"sync {q(str(remote))}", env=env)
    assert r.rc == 1 and f"rclone could not list {remote} (exit status 3): a folder in it went while it was listed" in r.err, r.describe()
    assert remote_files(remote) == before, "files were sent on a listing that was not the remote's"
    a.sync(str(remote))
    assert sorted(a.ok("ls /").out_lines) == ["a.bin", "b.bin"]


def test_a_journal_sent_to_a_folder_remote_replaces_the_copy_there_at_once(narnia_bin, host, tmp_path):
    """Review CL-4 (high): a journal went there under a temporary name, then `rclone moveto`,
    which deletes the copy there before it renames: a session open on that store saw the
    journal's items go, and a sync cut between the two left the remote without the journal,
    its items gone there with `verify` passing. Here an rclone in PATH does what rclone's
    moveto does up to that cut: it deletes the destination, then dies."""
    a, _, remote = two_devices_on_a_local_remote(narnia_bin, host, tmp_path)
    env = with_rclone_wrapped(a, tmp_path, 'moveto*) for last; do :; done; rm -f "$last"; kill -9 $$;;')
    a.ok("mkdir /after")
    r = a.c(f"sync {q(str(remote))}", env=env)
    assert r.rc == 0, r.describe()
    assert not [p for p in remote_files(remote) if ".narnia-sending-" in p]
    c = make_device(narnia_bin, tmp_path, "C", remote)
    assert sorted(c.ok("ls /").out_lines) == ["a.bin", "after", "b.bin"]


def test_leftovers_of_a_killed_import_taken_by_a_sync_straight_from_the_store_go_everywhere(narnia_bin, host, tmp_path):
    """Review CL-2: objects an import killed -9 left (uncommitted, one half written), which
    another device's `sync` straight from that store took before it was opened again, went
    back and forth at every sync for ever: each open of the first deleted them without a
    trace, and each sync of the other sent them back. Now the open retires them too."""
    a = Device("A", Narnia(narnia_bin, tmp_path / "a"))
    a.n.init()
    a.ok("mkdir /one")
    b = make_device(narnia_bin, tmp_path, "B", a.vault)
    b.sync(str(a.vault))
    (host / "big.bin").write_bytes(os.urandom(96 << 20))
    before = {p for p in a.vault.rglob("*") if p.is_file()}
    run = Background(a, f"import {q(str(host / 'big.bin'))}")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and run.proc.poll() is None:
        new = [p for p in a.vault.rglob("*") if p.is_file() and p not in before and p.stat().st_size > (1 << 20)]
        if new:
            break
        time.sleep(0.005)
    if run.proc.poll() is not None:
        pytest.skip("the import ended before it could be killed")
    os.kill(run.proc.pid, signal.SIGKILL)
    run.wait()
    leftovers = sorted(str(p.relative_to(a.vault)) for p in a.vault.rglob("*") if p.is_file() and p not in before
                       and p.stat().st_mode & 0o777 == 0o600 and len(p.name) == 32)
    assert leftovers, "the import left no object"
    b.sync(str(a.vault))
    assert all((b.vault / p).exists() for p in leftovers), "the other device took the leftovers"
    for turn in range(3):
        a.ok("pwd")
        r = b.sync(str(a.vault), f" (turn {turn})")
        assert "sent 0 files" in r.out, r.describe()
    a.ok("pwd")
    for store in (a.vault, b.vault):
        assert not [p for p in leftovers if (store / p).exists()], f"{store} keeps leftovers {leftovers}"
    a.verify()
    b.verify()


def test_a_failure_names_rclones_error_not_a_notice_after_it(narnia_bin, host, tmp_path):
    """Review AF: a failed sync quoted rclone's last line, which can be a notice that is no
    reason for it ("Config file … not found"). Its last error is quoted."""
    a, _, remote = two_devices_on_a_local_remote(narnia_bin, host, tmp_path)
    env = with_rclone_wrapped(a, tmp_path, '*"lsjson -R"*) echo "2026/12/04 06:00:00 ERROR : d7: permission denied" >&2;'
                              ' echo "2026/12/04 06:00:00 NOTICE: Config file \\"/x/rclone.conf\\" not found - using defaults" >&2; exit 6;;')
    r = a.c(f"sync {q(str(remote))}", env=env)
    assert r.rc == 1 and r.err_lines[-1] == (f"narnia: error: sync: rclone could not list {remote} (exit status 6): "
                                             "2026/12/04 06:00:00 ERROR : d7: permission denied"), r.describe()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder (as-ordinary-user.sh runs it)")
def test_a_folder_of_the_remote_that_cannot_be_read_stops_no_sync(narnia_bin, host, tmp_path):
    """Review AF (M4): the remote's listing read every folder in it, so one that cannot be read
    (`lost+found` at the top of a USB disk used as the remote) made every sync fail. Only the
    top and the shard folders, where store files are, are read."""
    a, _, remote = two_devices_on_a_local_remote(narnia_bin, host, tmp_path)
    (remote / "lost+found").mkdir()
    (remote / "lost+found" / "x").write_bytes(b"x")
    (remote / "lost+found").chmod(0)
    try:
        a.sync(str(remote))
        assert sorted(a.ok("ls /").out_lines) == ["a.bin", "b.bin"]
    finally:
        (remote / "lost+found").chmod(0o700)


def test_a_bare_remote_name_gets_the_journals_where_it_gets_the_objects(narnia_bin, host, tmp_path):
    """Review AF (high): `sync here:` joined `here:` and a journal's path with a `/`, which the
    local and sftp backends read from the file system's root: objects went to the remote,
    journals elsewhere (or failed, for good, where / cannot be written)."""
    a = Device("A", Narnia(narnia_bin, tmp_path / "a"))
    a.n.init()
    (host / "a.bin").write_bytes(os.urandom(2000))
    a.ok(f"import {q(str(host / 'a.bin'))}")
    remote = tmp_path / "remote"
    remote.mkdir()
    config = tmp_path / "rclone.conf"
    config.write_text("[here]\ntype = local\n")
    a.sync("here:", env={**a.n.env, "RCLONE_CONFIG": str(config)}, cwd=remote)
    here = {str(p.relative_to(a.vault)) for p in a.vault.rglob("*") if p.is_file()}
    assert set(remote_files(remote)) == here
    b = make_device(narnia_bin, tmp_path, "B", remote)
    assert b.ok("ls /").out_lines == ["a.bin"]


def test_rclone_settings_that_change_what_is_copied_are_not_given_to_it_and_are_named(narnia_bin, host, tmp_path):
    """Review AF (high): with RCLONE_IGNORE_EXISTING=true the renaming of a sent journal over
    the copy there was skipped, and every sync said "synced" while the remote kept the older
    journal; filters (RCLONE_EXCLUDE, RCLONE_MAX_SIZE…) and RCLONE_PROGRESS made every sync
    fail, RCLONE_DRY_RUN=true sent nothing, saying it had, and RCLONE_DIRS_ONLY=true listed the
    remote as empty and sent the journals here over longer ones; with RCLONE_RETRIES=0 rclone
    runs nothing and exits 0. Such settings are taken out of rclone's
    environment, and named in a note."""
    a, b, remote = two_devices_on_a_local_remote(narnia_bin, host, tmp_path)
    settings = {"RCLONE_IGNORE_EXISTING": "true", "RCLONE_EXCLUDE": "*.tmp", "RCLONE_MAX_SIZE": "1k", "RCLONE_DRY_RUN": "true",
                "RCLONE_DIRS_ONLY": "true", "RCLONE_PROGRESS": "true", "RCLONE_RETRIES": "0"}
    env = {**a.n.env, **settings}
    a.sync(str(remote), env=env)
    (host / "c.bin").write_bytes(os.urandom(2000))
    a.ok(f"import {q(str(host / 'c.bin'))}")
    r = a.sync(str(remote), env=env)
    assert ("narnia: note: sync: not given to rclone: RCLONE_DIRS_ONLY, RCLONE_DRY_RUN, RCLONE_EXCLUDE, RCLONE_IGNORE_EXISTING, "
            "RCLONE_MAX_SIZE, RCLONE_PROGRESS, RCLONE_RETRIES (they would change which store files rclone lists, copies, replaces or deletes, or what it prints)") in r.err_lines, r.describe()
    b.sync(str(remote))
    assert sorted(b.ok("ls /").out_lines) == ["a.bin", "b.bin", "c.bin"]


@pytest.mark.parametrize("logging", [None, "RCLONE_LOG_LEVEL=ERROR", "RCLONE_QUIET=true", "RCLONE_USE_JSON_LOG=true", "RCLONE_LOG_FILE"])
def test_a_shard_folder_that_is_a_link_on_the_remote_stops_the_sync(narnia_bin, host, tmp_path, logging):
    """Review AF (M2): rclone lists nothing in a linked folder, yet writes through the link: A
    took B's longer journal there for missing and sent its shorter copy over it. A shard folder
    that is a link now fails the sync before anything is sent — whatever the environment says
    of rclone's logging, which the sync reads (review CG-6: with the notice hidden, in a file
    or as JSON, the older journal went over the longer one, exit 0)."""
    a, b, remote = two_devices_on_a_local_remote(narnia_bin, host, tmp_path)
    a.sync(str(remote))
    (host / "b2.bin").write_bytes(os.urandom(2000))
    b.ok(f"import {q(str(host / 'b2.bin'))}")
    b.sync(str(remote))
    longer = next(p for p in remote.glob("??/*") if (a.vault / p.relative_to(remote)).exists()
                  and (a.vault / p.relative_to(remote)).stat().st_size < p.stat().st_size)   # B's journal
    shard = longer.parent
    aside = tmp_path / "aside"
    shard.rename(aside)
    shard.symlink_to(aside)
    before = remote_files(aside)
    env = dict(a.n.env)
    if logging == "RCLONE_LOG_FILE":
        env["RCLONE_LOG_FILE"] = str(tmp_path / "rclone.log")
    elif logging:
        env.update([logging.split("=")])
    r = a.c(f"sync {q(str(remote))}", env=env)
    assert r.rc == 1 and (f"narnia: error: sync: {shard} is a symbolic link, which rclone does not follow: the store "
                          "files in the folder it points to cannot be listed, and files sent there would replace them "
                          "unseen; nothing was sent") in r.err_lines, r.describe()
    assert remote_files(aside) == before
    shard.unlink()
    aside.rename(shard)
    a.sync(str(remote))
    assert a.ok("cat /b2.bin").outb == (host / "b2.bin").read_bytes()


def test_a_store_file_that_is_a_link_on_the_remote_is_named_not_missed(narnia_bin, host, tmp_path):
    """Review AF: rclone does not follow a symbolic link it lists (a notice only), so a store
    file there that is one was missed at every sync, "synced", exit 0: the item stayed "not on
    this device" for good. It is named in a warning; put in place of the link, it is read."""
    a, _, remote = two_devices_on_a_local_remote(narnia_bin, host, tmp_path)
    b_object = next(p for p in remote.glob("??/*") if not (a.vault / p.relative_to(remote)).exists())   # B's object or journal
    aside = tmp_path / "aside"
    b_object.rename(aside)
    b_object.symlink_to(aside)
    name = str(b_object.relative_to(remote))
    for _ in range(2):
        r = a.sync(str(remote))
        assert (f"narnia: warning: sync: {remote} holds 1 file named like store files that are symbolic links, which rclone "
                f"does not follow: {name} (to have it read, put the file there in place of the link)") in r.err_lines, r.describe()
    b_object.unlink()
    aside.rename(b_object)
    a.sync(str(remote))
    assert a.ok("cat /b.bin").outb == (host / "b.bin").read_bytes()


def test_a_remote_holding_another_vault_is_refused(narnia_bin, host, tmp_path):
    """Review AJ: `sync` into the folder of another vault mixed the two stores: each unlock then
    took the other's inbox key for a forgery and deleted it (drop failed), and with one
    passphrase for both, one vault's tree took the other's place. A remote holding store files
    none of which is this vault's is refused, nothing sent; one that a first sync cut short
    left holding only some of this vault's files is not."""
    a = Device("A", Narnia(narnia_bin, tmp_path / "a"))
    a.n.init()
    (host / "a.bin").write_bytes(os.urandom(2000))
    a.ok(f"import {q(str(host / 'a.bin'))}")
    other = Narnia(narnia_bin, tmp_path / "other")
    other.init()
    other.ok("mkdir /theirs")
    before = remote_files(other.vault)
    r = a.c(f"sync {q(str(other.vault))}")
    assert r.rc == 1 and f"narnia: error: sync: {other.vault}: holds the store of another vault" in r.err, r.describe()
    assert "passwd --rotate" in r.err, "the hint names the rotation that makes a copy look so" + r.describe()
    assert remote_files(other.vault) == before
    assert other.ok("ls /").out_lines == ["theirs"]

    # A first sync that sent key files and objects but no journal yet (journals are 0600 here,
    # objects 0400; rclone makes every file 0600 there).
    remote = tmp_path / "remote"
    a.sync(str(remote))
    journals = [p.relative_to(a.vault) for p in a.vault.glob("??/*") if p.stat().st_mode & 0o200]
    for journal in journals:
        (remote / journal).unlink()
    assert list(remote.glob("??/*")), "no object is left on the remote"
    r = make_device(narnia_bin, tmp_path, "early", remote).c("ls /")
    assert r.rc == 1 and "narnia: error: the vault's store is incomplete: it holds a key file but no journal" in r.err, r.describe()
    assert "run that sync again from the device that sent it" in r.err, "opened before the rerun: said what it is (AW-3)" + r.describe()
    for key_file in [p for p in remote.iterdir() if p.is_file()]:
        key_file.unlink()
    a.sync(str(remote))
    assert make_device(narnia_bin, tmp_path, "B", remote).ok("ls /").out_lines == ["a.bin"]


def test_a_cut_transfer_of_a_conflict_copy_is_no_copy(narnia_bin, tmp_path):
    """Review AM: a journal transfer under way was named `NAME.narnia-sending-DEVICE` (now a tag
    only its device recognises; the old form is still known as its own); when NAME
    was a Syncthing conflict copy's, the `conflict` in it made the cut temporary read as a copy:
    fetched by every device, sent back, never deleted, and each sync reported a transfer."""
    a = Device("A", Narnia(narnia_bin, tmp_path / "a"))
    a.n.init()
    journal, _ = own_journal(a.n, "mkdir /a")
    c = make_device(narnia_bin, tmp_path, "C", a.vault)
    d = make_device(narnia_bin, tmp_path, "D", a.vault)
    c.ok("mkdir /c")
    remote = tmp_path / "remote"
    c.sync(str(remote))
    device = next(l.split()[0] for l in c.ok("devices").out_lines if l.endswith("(this device)"))
    rel = journal.relative_to(a.vault)
    cut = remote / f"{rel}.sync-conflict-20261204-122710-OW35KIE.narnia-sending-{device}"
    cut.write_bytes(journal.read_bytes()[:150])
    d.sync(str(remote))
    assert not list(d.vault.glob("*/*narnia-sending*")), "D fetched the cut transfer as a copy"
    c.sync(str(remote))
    assert not cut.exists(), "the device that left it deletes its cut transfer at its next sync"
    assert not list(c.vault.glob("*/*narnia-sending*"))
    r = c.sync(str(remote))
    assert r.out_lines[0].startswith("synced") and "sent 0" in r.out and "received 0" in r.out, \
        "a sync with nothing to do transfers nothing" + r.describe()


def test_transfers_in_flight_a_sync_engine_carried_here_go_after_a_day(vault):
    """Review AN: a cut transfer fetched before a07e161, or one a sync engine carried into the
    store (`….narnia-sending-…`, rclone's `.partial`, Resilio's `.!sync`), stayed for ever,
    unread. Untouched for a day, its transfer is over: an open removes it; a younger one may
    be under way, and stays."""
    journal, _ = own_journal(vault, "mkdir /a")
    names = [f"{journal.name}.narnia-sending-{'ab' * 16}", f"{journal.name}.sync-conflict-20261204-122710-OW35KIE.narnia-sending-{'cd' * 16}",
             f"{journal.name}.1f2e3d4c.partial", f"{journal.name}.!sync"]
    old = [journal.with_name(n) for n in names] + [vault.vault / f"{'e' * 32}.2a3b.partial"]
    day_ago = time.time() - 25 * 3600
    for path in old:
        path.write_bytes(journal.read_bytes()[:100])
        # rclone gives a copy its source's time: the journal's, here a day old (review AO).
        os.utime(path, (day_ago, day_ago))
    vault.ok("ls /")
    assert all(p.exists() for p in old), "a transfer that arrived within the day may be under way"
    vault.ok("ls /", **a_day_later(vault))
    assert [p for p in old if p.exists()] == [], "transfers untouched for a day are over"
    assert vault.ok("ls /").out_lines == ["a"]
    vault.ok("verify")


@pytest.mark.parametrize("where", ["inside-the-store", "holding-the-store", "holding-it-through-a-folder-not-there",
                                   "holding-it-from-home", "holding-it-as-:local:", "inside-it-as-:local,OPTIONS:",
                                   "holding-it-with-a-quote-inside-a-value", "holding-it-as-a-local-remote-of-the-config",
                                   "inside-it-through-an-alias-of-the-config", "inside-it-through-an-alias-on-the-fly",
                                   "holding-it-through-a-hasher-of-the-config", "holding-it-as-the-default-alias-of-the-environment",
                                   "inside-it-through-a-crypt-with-plain-folder-names", "inside-it-as-the-environment-overrides-the-config",
                                   "holding-it-as-an-upstream-of-a-union", "inside-it-through-a-combine-remote",
                                   "holding-it-as-a-combine-upstream-named-like-a-shard-folder", "through-a-union-and-twenty-aliases"])
def test_a_folder_remote_in_or_around_the_store_is_refused(vault, tmp_path, where):
    """Review AJ: `sync` took a folder inside the store (a second store nested in the first) or
    the folder holding it (a Syncthing folder: key files and shard folders among the user's
    own files), where export, import and drop refuse such paths. Review AK: spelt with `..`
    through a folder that is not there (rclone reads `..` as text), or from `~` (which made a
    folder named `~`), too. Review AL: or in rclone's on-the-fly `:local:` syntax. Review AN: a
    quote inside an option's value (`Bob's`) hid the folder, and remotes of type local or alias
    in rclone's config, or an alias on the fly, were not read. Review AO: nor remotes wrapping a
    folder (hasher…), nor a backend's default target in the environment. Review AP: nor a crypt
    that keeps folder names plain, nor a backend's setting in the environment over the config
    file's, as rclone takes it. Nor the folders of a union's or a combine's upstreams (review AT:
    nor one past a few steps followed)."""
    parent, inside = vault.vault.parent, vault.vault / "inside"
    config = tmp_path / "rclone.conf"
    config.write_text(f"[mine]\ntype = local\n\n[store]\ntype = alias\nremote = mine:{vault.vault}\n\n"
                      f"[hs]\ntype = hasher\nremote = {parent}\n\n[elsewhere]\ntype = hasher\nremote = {tmp_path / 'elsewhere'}\n\n"
                      f"[cr]\ntype = crypt\nremote = {parent}\ndirectory_name_encryption = false\n"
                      f"password = {subprocess.run(['rclone', 'obscure', 'pw'], capture_output=True, text=True).stdout.strip()}\n")
    shard = None
    if where.endswith("like-a-shard-folder"):
        (tmp_path / "f.txt").write_bytes(b"f\n")
        (tmp_path / "elsewhere").mkdir()
        vault.ok(f"import {q(str(tmp_path / 'f.txt'))}")
        shard = next(d.name for d in vault.vault.iterdir() if d.is_dir() and len(d.name) == 2)
    remote = {"inside-the-store": str(inside), "holding-the-store": str(parent),
              "holding-it-through-a-folder-not-there": str(parent / "nothing" / ".."),
              "holding-it-from-home": "~/..", "holding-it-as-:local:": f":local:{parent}",
              "inside-it-as-:local,OPTIONS:": f":local,case_insensitive=true,description='a:b':{inside}",
              "holding-it-with-a-quote-inside-a-value": f":local,description=Bob's:{parent}",
              "holding-it-as-a-local-remote-of-the-config": f"mine:{parent}",
              "inside-it-through-an-alias-of-the-config": "store:inside",
              "inside-it-through-an-alias-on-the-fly": f":alias,remote={vault.vault}:inside",
              "holding-it-through-a-hasher-of-the-config": "hs:",
              "holding-it-as-the-default-alias-of-the-environment": ":alias:",
              "inside-it-through-a-crypt-with-plain-folder-names": f"cr:{vault.vault.name}/inside",
              "inside-it-as-the-environment-overrides-the-config": "elsewhere:inside",
              "holding-it-as-an-upstream-of-a-union": f":union,upstreams='{tmp_path / 'elsewhere'} {parent}:nc':",
              "inside-it-through-a-combine-remote": f":combine,upstreams='v={vault.vault}':v/inside",
              "holding-it-as-a-combine-upstream-named-like-a-shard-folder": f":combine,upstreams='{shard}={parent} cc={tmp_path / 'elsewhere'}':",
              "through-a-union-and-twenty-aliases": f":union,upstreams='{tmp_path / 'elsewhere'}:ro c0:':"}[where]
    # Review AT F1: too far to follow is refused, not taken for a remote reaching no folder.
    chain = {f"RCLONE_CONFIG_C{i}_{k}": v for i in range(20) for k, v in (("TYPE", "alias"), ("REMOTE", f"c{i + 1}:" if i < 19 else str(parent)))}
    home = parent / "home-here"   # ~/.. holds the store
    home.mkdir()
    before = sorted(p.name for p in parent.iterdir())
    r = vault.c(f"sync {q(remote) if ':' in remote else remote}",
                env={**vault.env, "HOME": str(home), "RCLONE_CONFIG": str(config),
                     **({"RCLONE_ALIAS_REMOTE": str(parent)} if where.endswith("of-the-environment") else {}),
                     **({"RCLONE_HASHER_REMOTE": str(vault.vault)} if where.endswith("overrides-the-config") else {}),
                     **(chain if where.endswith("twenty-aliases") else {})})
    assert r.rc == 1 and "nothing was sent" in r.err, r.describe()
    assert sorted(p.name for p in parent.iterdir()) == before
    assert not inside.exists()


def test_the_store_through_an_rclone_mount_that_caches_listings_is_refused(vault, tmp_path):
    """Review AL F4: through `rclone mount --dir-cache-time`, a listing the mount made before
    the sync hid the probe file put at the store's top: the store was taken for a remote. A
    folder in an rclone mount is followed to the folder behind it."""
    vault.ok("mkdir /kept")
    mount = tmp_path / "mnt"
    mount.mkdir()
    mounted = mounted_fuse(["rclone", "mount", f":local:{vault.vault.parent}", str(mount), "--daemon", "--dir-cache-time", "1h"], mount)
    through = next(mounted) / vault.vault.name
    try:
        assert sorted(os.listdir(through)) == sorted(os.listdir(vault.vault)), "the mount shows the store"
        r = vault.c(f"sync {q(str(through))}")
    finally:
        mounted.close()
    assert r.rc == 1 and "the vault's own store, or inside it; nothing was sent" in r.err, r.describe()
    assert vault.ok("ls /").out_lines == ["kept"]


@pytest.mark.parametrize("spelling", ["webdav-server-here", "bindfs", "crypt-over-a-server-here"])
def test_the_store_reached_by_another_path_is_refused(vault, tmp_path, spelling):
    """Review AK: the folder-remote check compares folder identities, so the store reached
    another way — served on this machine (`rclone serve webdav`), or another mount of it
    (bindfs) — was taken for a remote: a listing that shows the probe file the sync puts at the
    store's top tells it now. Review CG-7: through crypt, whose listing hides the probe (its name
    does not decrypt), the store was synced into itself, exit 0: a file written through the
    remote that lands at the store's top tells it."""
    vault.ok("mkdir /kept")
    before = sorted(str(p.relative_to(vault.vault)) for p in vault.vault.rglob("*"))
    if spelling == "bindfs":
        if shutil.which("bindfs") is None:
            pytest.skip("bindfs is not installed")
        mount = tmp_path / "view"
        mount.mkdir()
        mounted = mounted_fuse(["bindfs", str(vault.vault), str(mount)], mount)
        remote = str(next(mounted))
    else:
        # The store served over WebDAV on this machine: a remote that sync cannot read as a
        # folder here (one it can, a local, alias or union one, it refuses before listing).
        server = RcloneServer("webdav", vault.vault.parent, tmp_path)
        mounted, remote = None, f":webdav,url='http://127.0.0.1:{server.port}':{vault.vault.name}"
    env = dict(vault.env)
    if spelling == "crypt-over-a-server-here":
        password = subprocess.run(["rclone", "obscure", "a password"], capture_output=True, text=True, check=True).stdout.strip()
        config = tmp_path / "rclone.conf"
        config.write_text(f"[w]\ntype = webdav\nurl = http://127.0.0.1:{server.port}/\nvendor = other\n\n"
                          f"[c]\ntype = crypt\nremote = w:{vault.vault.name}\npassword = {password}\n")
        env["RCLONE_CONFIG"] = str(config)
        remote = "c:"
    try:
        r = vault.c(f"sync {q(remote)}", env=env)
    finally:
        if mounted is not None:
            mounted.close()
        else:
            server.stop()
    assert r.rc == 1 and "is the vault's own store, reached by another path; nothing was sent" in r.err, r.describe()
    assert sorted(str(p.relative_to(vault.vault)) for p in vault.vault.rglob("*")) == before, "the probe is gone"
    assert vault.ok("ls /").out_lines == ["kept"]


def test_a_remote_of_the_users_own_files_is_refused(vault, tmp_path):
    """Review AS F2: a folder of the user's own files (`sync ~/Documents` for the folder in
    it) had the store's files and shard folders put among them, exit 0; one whose name is two
    hex digits became a shard folder. A remote with no store file is filled only when it holds
    nothing of the user's (a sync engine's hidden files, a drive's `lost+found` aside)."""
    vault.ok("mkdir /kept")
    documents = tmp_path / "Documents"
    (documents / "ab").mkdir(parents=True)
    (documents / ".stfolder").mkdir()
    (documents / "letter.txt").write_text("mine\n")
    r = vault.c(f"sync {q(str(documents))}")
    assert r.rc == 1 and "holds no vault's store but 2 files and folders of its own (ab/, letter.txt): the store's files would be put among them; nothing was sent" in r.err, r.describe()
    assert sorted(p.name for p in documents.rglob("*")) == [".stfolder", "ab", "letter.txt"]
    drive = tmp_path / "drive"
    for name in (".stfolder", "lost+found"):
        (drive / name).mkdir(parents=True)
    vault.ok(f"sync {q(str(drive))}")
    (drive / "notes.txt").write_text("the user's, beside a copy of the store\n")
    assert vault.ok(f"sync {q(str(drive))}").out.startswith(f"synced with {drive}:")


def test_a_remote_rclone_does_not_know_is_named_with_a_hint(vault, tmp_path):
    """Review AS F5: a remote's name missing from rclone's config, the likeliest slip, gave
    rclone's log line alone: no hint, no word of what was sent."""
    config = tmp_path / "rclone.conf"
    config.write_text("[backup]\ntype = local\n")
    r = vault.c("sync nosuch:x", env={**vault.env, "RCLONE_CONFIG": str(config)})
    assert r.rc == 1 and "sync: nosuch:x: rclone's config has no remote named nosuch; nothing was sent" in r.err, r.describe()
    assert "narnia: hint: 'rclone listremotes' names those there are" in r.err


def test_a_sync_leaves_no_rclone_config_folder_in_a_home_without_one(vault, tmp_path):
    """Review AQ F4: rclone makes `~/.config/rclone` on its first run; `sync` to a folder left
    that dated trace in a home where rclone was never configured. rclone runs with an empty
    config in memory there now; a config the user has is read as before."""
    remote = tmp_path / "remote"
    vault.ok("mkdir /a")
    env = {k: v for k, v in vault.env.items() if k != "RCLONE_CONFIG"}
    vault.ok(f"sync {q(str(remote))}", env=env)
    assert not (vault.home / ".config" / "rclone").exists()
    (vault.home / ".config" / "rclone").mkdir()
    (vault.home / ".config" / "rclone" / "rclone.conf").write_text(f"[mine]\ntype = alias\nremote = {remote}\n")
    assert vault.ok("sync mine:", env=env).out.startswith("synced with mine:")


def test_a_syncthing_folder_the_store_has_not_reached_yet_says_to_wait(narnia_bin, host, tmp_path):
    """Review FM-3: a folder Syncthing shares, opened before the first store file arrived,
    was said to hold other files, and the hint pointed at `init`."""
    folder = tmp_path / "shared"
    folder.mkdir(mode=0o700)
    (folder / ".stfolder").mkdir()
    (folder / ".syncthing.0a1b2c.tmp").write_bytes(b"arriving")
    n = Narnia(narnia_bin, tmp_path)
    r = n.c("ls", vault=folder)
    assert r.rc == 3 and "holds only a sync engine's files: if the vault was made on another " \
        "device, its store is still arriving, so wait for it and open it then" in r.err, r.describe()

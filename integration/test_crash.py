"""Crash: `kill -9` at random moments during `import` (and `import --move`), many times, into
the same vault. After each kill: the vault opens, leftovers are cleaned up, `verify` passes,
every item reported `imported` is intact, no visible item holds wrong bytes, and with --move
no original is ever lost (each one is still on the host or intact in the vault).

Imports may commit items in groups, so BIGDIR holds small files, varied ones, and large
files worth more than 64 MiB: enough for several commits, so that kills land between them. Half the kills come
at a uniformly random moment of a full import's duration, half shortly after the first
`imported` line (the moment --move removes originals).

Also: kill -9 during passwd (exactly one passphrase opens the vault), during cp -r, rm -r and
mv of a folder, during removals that rewrite a pack, during export (no partial file under its final name), SIGTERM during import,
and a torn journal tail.

NARNIA_CRASH_ITERATIONS (default 20) is the number of kills, shared by the two import tests;
NARNIA_CRASH_SEED (default 1) seeds the delays; NARNIA_CRASH_SMALL_FILES (default 300) and
NARNIA_CRASH_LARGE_FILES (default 15, of 4 to 5 MiB) size BIGDIR."""

from __future__ import annotations

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

from corpus import MIB
from harness import Narnia, object_size, q

ITERATIONS = int(os.environ.get("NARNIA_CRASH_ITERATIONS", "20"))
SEED = int(os.environ.get("NARNIA_CRASH_SEED", "1"))
SMALL_FILES = int(os.environ.get("NARNIA_CRASH_SMALL_FILES", "300"))
LARGE_FILES = int(os.environ.get("NARNIA_CRASH_LARGE_FILES", "15"))
IMPORTED_RE = re.compile(r"^imported (.+) -> (/.*)$")


def make_bigdir(root: Path, rng: random.Random) -> dict[str, bytes]:
    """BIGDIR: 40 files of varied sizes (multi-chunk ones too), small files and large files."""
    files = {}
    sizes = [0, 1, 3, 4096, 65536, 1_000_000, MIB + 7, 2 * MIB + 3]
    sizes += [rng.randrange(1_000, 300_000) for _ in range(32)]
    for i, size in enumerate(sizes):
        files[f"v/f{i:03d}.bin"] = rng.randbytes(size)
    for i in range(SMALL_FILES):
        files[f"s{i // 500}/x{i:05d}.bin"] = rng.randbytes(rng.randrange(0, 1500))
    for i in range(LARGE_FILES):
        files[f"l/big{i:02d}.bin"] = rng.randbytes(rng.randrange(4 * MIB, 5 * MIB))
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return files


class Run:
    """A narnia process whose stdout lines are collected as they come."""

    def __init__(self, n: Narnia, commands: str, **kw):
        self.proc = n.popen("-c", commands, **kw)
        self.lines: list[str] = []
        self.first_line = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            self.lines.append(raw.decode("utf-8", "surrogateescape").rstrip("\n"))
            self.first_line.set()

    def kill(self) -> bool:
        """SIGKILL; whether the process had already finished by itself."""
        finished = self.proc.poll() is not None
        if not finished:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        self.reader.join(timeout=60)
        self.proc.stderr.close()
        return finished


def kill_during(n: Narnia, command: str, rng: random.Random, full: float) -> None:
    """Runs `command` and kills it -9 at a random moment of its uninterrupted duration `full`
    (or just after it)."""
    run = Run(n, command)
    time.sleep(rng.uniform(0, full * 1.1))
    run.kill()


def assert_recovers(n: Narnia, listing: str, ctx: str):
    """After kill -9: the vault opens (running `listing`, whose result is returned), the open
    removed the leftovers of the interrupted write, and verify passes."""
    r = n.c(listing)
    assert r.rc == 0, "the vault does not open after kill -9" + ctx + r.describe()
    problems = n.store().layout_problems()
    assert not problems, "leftovers of the interrupted write were not cleaned up on open" + ctx + \
        ":\n  " + "\n  ".join(problems)
    v = n.c("verify")
    assert v.rc == 0, "verify fails after kill -9" + ctx + v.describe()
    return r


def check_after_crash(n: Narnia, it: int, folder: str, originals: dict[str, bytes],
                      lines: list[str], tmp: Path, moved_from: Path | None):
    ctx = f" (iteration {it}, seed {SEED})"
    assert_recovers(n, "ls /", ctx)

    prefix = f"/{folder}/BIGDIR/"
    reported = {m.group(2)[len(prefix):] for l in lines
                if (m := IMPORTED_RE.match(l)) and m.group(2).startswith(prefix)}
    unknown = reported - set(originals)
    assert not unknown, f"import reported unexpected vault paths {sorted(unknown)[:5]}" + ctx

    # Every visible file, reported or not, must hold exactly its original bytes.
    visible: list[str] = []
    listing = n.c(f"ls /{folder}")
    if listing.rc == 0 and "BIGDIR" in listing.out_lines:
        f = n.c(f"find /{folder}/BIGDIR")
        assert f.rc == 0, "find after the crash" + ctx + f.describe()
        paths = [p[len(prefix):] for p in f.out_lines]
        visible = sorted(p for p in paths if p in originals)
        strays = [p for p in paths if p not in originals and p.split("/")[0] not in ("v", "l")
                  and not re.fullmatch(r"s\d+", p)]
        assert not strays, f"unexpected items in the vault after the crash: {strays[:5]}" + ctx
    missing = sorted(reported - set(visible))
    assert not missing, f"items reported imported are missing after kill -9: {missing[:5]}" + ctx
    if visible:
        batch = tmp / f"cat{it}"
        batch.write_text(f"cd /{folder}/BIGDIR\ncat " + " ".join(visible) + "\n")
        c = n("-b", str(batch), timeout=120)
        assert c.rc == 0, "cat of the items that survived the crash failed" + ctx + c.describe()
        expected = b"".join(originals[p] for p in visible)
        if c.outb != expected:
            pos = 0
            for p in visible:
                size = len(originals[p])
                assert c.outb[pos:pos + size] == originals[p], \
                    f"{p} is visible in the vault with wrong content after kill -9" + ctx
                pos += size
            pytest.fail(f"cat gave {len(c.outb)} bytes, expected {len(expected)}" + ctx)

    # Orphans of the interrupted write (content objects no item refers to) are removed on open.
    # Content objects have Padmé sizes; what is left over is the key file and the journal.
    store_bytes = sum(n.store().sizes().values())
    expected = sum(object_size(len(originals[p])) for p in visible)
    assert store_bytes - expected < 2 * MIB, \
        (f"the store holds {store_bytes - expected} bytes beyond the visible items' content "
         f"objects: orphans of the interrupted import were not removed" + ctx)

    if moved_from is not None:
        visible_set = set(visible)
        for rel, data in originals.items():
            hp = moved_from / rel
            if hp.exists():
                assert hp.read_bytes() == data, f"original {rel} was altered on the host" + ctx
            else:
                assert rel in visible_set, \
                    f"original {rel} is gone from the host and not in the vault: LOST" + ctx

    if listing.rc == 0:
        rm = n.c(f"rm -r /{folder}")
        assert rm.rc == 0, "removing the crashed import's folder failed" + ctx + rm.describe()


def calibrate(n: Narnia, src: Path, move: bool) -> tuple[float, float]:
    """Seconds a full, uninterrupted import takes on this machine, and how long of that comes
    after its first `imported` line."""
    work = src
    if move:
        work = src.parent / "calibrate" / "BIGDIR"
        shutil.copytree(src, work)
    flag = "--move " if move else ""
    t0 = time.monotonic()
    run = Run(n, f"mkdir /calibrate; cd /calibrate; import {flag}{q(str(work))}")
    assert run.first_line.wait(timeout=300), "the calibration import printed nothing"
    first = time.monotonic()
    rc = run.proc.wait(timeout=300)
    end = time.monotonic()
    run.kill()
    assert rc == 0, f"the uninterrupted import (calibration) failed with exit {rc}"
    n.ok("rm -r /calibrate")
    return end - t0, end - first


@pytest.mark.parametrize("move", [False, True], ids=["import", "import-move"])
def test_kill_during_import(narnia_bin, tmp_path, move):
    iterations = ITERATIONS // 2 if move else ITERATIONS - ITERATIONS // 2
    rng = random.Random(SEED * 2 + int(move))
    n = Narnia(narnia_bin, tmp_path)
    n.init()
    src = tmp_path / "src" / "BIGDIR"
    originals = make_bigdir(src, rng)
    full, tail = calibrate(n, src, move)
    finished_runs = partial_runs = 0
    for it in range(iterations):
        folder = f"iter{it}"
        work = src
        if move:
            work = tmp_path / f"move{it}" / "BIGDIR"
            shutil.copytree(src, work)
        flag = "--move " if move else ""
        started = time.monotonic()
        run = Run(n, f"mkdir /{folder}; cd /{folder}; import {flag}{q(str(work))}")
        if it % 2 == 0:
            how = f"after {rng.uniform(0.0, full * 1.1):.3f} s"
            time.sleep(float(how.split()[1]))
        else:
            delay = rng.uniform(0.0, tail * 0.6)
            run.first_line.wait(timeout=full * 3 + 10)
            how = f"{delay:.3f} s after the first line"
            time.sleep(delay)
        finished = run.kill()
        finished_runs += finished
        if finished:  # the calibration run was slower (cold caches): aim the next kills better
            full = min(full, time.monotonic() - started)
        reported = sum(1 for l in run.lines if IMPORTED_RE.match(l))
        partial_runs += 0 < reported < len(originals)
        print(f"iteration {it}: killed {how}: {reported} of {len(originals)} reported"
              f"{' (it had finished)' if finished else ''}")
        check_after_crash(n, it, folder, originals, run.lines, tmp_path, work if move else None)
        if move:
            shutil.rmtree(work.parent)
    assert finished_runs <= iterations * 3 // 4, \
        (f"{finished_runs} of {iterations} runs finished before the kill; the delays are too long "
         f"to test anything (a full import took {full:.2f} s)")
    assert partial_runs >= 1, \
        (f"no kill landed between two commits of the import (a full import took {full:.2f} s, "
         f"{len(originals)} files): the test did not exercise a partly reported import")



def test_kill_during_passwd(narnia_bin, tmp_path):
    """After a kill -9 during passwd, exactly one of the old and new passphrases opens the
    vault, and the content is intact."""
    rng = random.Random(SEED + 100)
    n = Narnia(narnia_bin, tmp_path)
    n.init()
    data = rng.randbytes(200_000)
    n.ok("import - keep.bin", input=data)
    phrases = ["correct horse", "battery staple"]
    t0 = time.monotonic()
    n.ok(f"passwd --new-passphrase-file {q(str(n.passphrase_file(phrases[1])))}", passphrase=phrases[0])
    n.ok(f"passwd --new-passphrase-file {q(str(n.passphrase_file(phrases[0])))}", passphrase=phrases[1])
    full = (time.monotonic() - t0) / 2
    current = 0
    for it in range(max(4, ITERATIONS)):
        new = 1 - current
        run = Run(n, f"passwd --new-passphrase-file {q(str(n.passphrase_file(phrases[new])))}",
                  passphrase=phrases[current])
        time.sleep(rng.uniform(0, full * 1.2))
        run.kill()
        opens = [n.c("pwd", passphrase=p).rc for p in phrases]
        ctx = f" (iteration {it}; exit status with the old one {opens[current]}, the new one {opens[new]})"
        assert sorted(opens) == [0, 3], \
            "after kill -9 during passwd exactly one passphrase must open the vault" + ctx
        current = opens.index(0)
        c = n.c("cat /keep.bin", passphrase=phrases[current])
        assert c.rc == 0 and c.outb == data, "content after a kill during passwd" + ctx + c.describe()
        problems = n.store().layout_problems()
        assert not problems, "leftovers after a kill during passwd" + ctx + ": " + "; ".join(problems)


TREE_COMMANDS = ["cp -r /src /dst", "rm -r /src", "mv /src /moved/inner"]


@pytest.mark.parametrize("command", TREE_COMMANDS)
def test_kill_during_tree_changes(narnia_bin, tmp_path, command):
    """kill -9 during cp -r, rm -r and mv of a 160-item folder: the vault opens, leftovers are
    cleaned up, verify passes, and every visible item holds its original bytes."""
    rng = random.Random(SEED * 7 + TREE_COMMANDS.index(command))
    src = tmp_path / "host" / "src"
    originals = {}
    for i in range(160):
        rel = f"d{i // 40}/f{i:03d}.bin"
        originals[rel] = rng.randbytes(MIB + i if i % 40 == 0 else rng.randrange(0, 3000))
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(originals[rel])

    def fresh(name: str) -> Narnia:
        n = Narnia(narnia_bin, tmp_path / name)
        n.init()
        n.ok(f"import {q(str(src))}; mkdir /moved")
        return n

    n = fresh("calibrate")
    t0 = time.monotonic()
    n.ok(command)
    full = time.monotonic() - t0
    for it in range(max(2, ITERATIONS // 5)):
        ctx = f" ({command!r}, iteration {it}, seed {SEED})"
        n = fresh(f"it{it}")
        kill_during(n, command, rng, full)
        r = assert_recovers(n, "find /", ctx)
        files = [p for p in r.out_lines if re.search(r"/f\d{3}\.bin$", p)]
        if files:
            batch = tmp_path / f"cat{it}"
            batch.write_text("cat " + " ".join(files) + "\n")
            c = n("-b", str(batch))
            assert c.rc == 0, "cat of the visible items failed" + ctx + c.describe()
            expected = b"".join(originals[re.search(r"d\d/f\d{3}\.bin$", p).group(0)] for p in files)
            assert c.outb == expected, "a visible item holds wrong bytes after kill -9" + ctx
        if not command.startswith("rm"):
            source = sorted(p[len("/src/"):] for p in files if p.startswith("/src/"))
            target = sorted(p.split("/", 3 if command.startswith("mv") else 2)[-1]
                            for p in files if not p.startswith("/src/"))
            if command.startswith("mv"):
                assert source == sorted(originals) or target == sorted(originals), \
                    "after kill -9 during mv, the folder must be whole at its old or its new place" + ctx
            else:
                assert source == sorted(originals), "cp -r must leave its source whole" + ctx


def test_kill_during_repack(narnia_bin, tmp_path):
    """kill -9 while rm takes most files out of a pack, so that the pack is rewritten (FORMAT.md,
    "Packs") one or more times: the vault opens, leftovers are cleaned up, verify passes, the
    files never removed are all there and intact, and no visible file holds wrong bytes."""
    rng = random.Random(SEED * 11)
    src = tmp_path / "host" / "src"
    src.mkdir(parents=True)
    originals = {f"f{i:02d}.bin": rng.randbytes(rng.randrange(300_000, 900_000)) for i in range(40)}
    for name, data in originals.items():
        (src / name).write_bytes(data)
    doomed = sorted(originals)[:30]
    command = "rm " + " ".join(f"/src/{name}" for name in doomed)

    def fresh(name: str) -> Narnia:
        n = Narnia(narnia_bin, tmp_path / name)
        n.init()
        n.ok(f"import {q(str(src))}")
        assert len(n.store().files()) <= 5, "the 40 small files should share two packs (besides key, inbox key, journal)"
        return n

    n = fresh("calibrate")
    t0 = time.monotonic()
    n.ok(command)
    full = time.monotonic() - t0
    assert len(n.store().files()) <= 4
    for it in range(max(4, ITERATIONS // 2)):
        ctx = f" (iteration {it}, seed {SEED})"
        n = fresh(f"it{it}")
        kill_during(n, command, rng, full)
        r = assert_recovers(n, "ls /src", ctx)
        visible = sorted(r.out.split())
        assert set(originals) - set(doomed) <= set(visible), "a file that was not removed is gone" + ctx
        c = n.c("cat " + " ".join(f"/src/{name}" for name in visible))
        assert c.rc == 0, "cat of the visible files failed" + ctx + c.describe()
        assert c.outb == b"".join(originals[name] for name in visible), "a file holds wrong bytes" + ctx


def test_kill_during_export_leaves_no_partial_file(narnia_bin, tmp_path):
    """INTERFACE: each exported file is written to a temporary name and renamed, so after a
    kill -9 a file under its final name is always complete."""
    rng = random.Random(SEED + 300)
    n = Narnia(narnia_bin, tmp_path)
    n.init()
    src = tmp_path / "host" / "exp"
    originals = {f"e{i}.bin": rng.randbytes(6 * MIB + i) for i in range(4)}
    src.mkdir(parents=True)
    for name, data in originals.items():
        (src / name).write_bytes(data)
    n.ok(f"import {q(str(src))}")
    t0 = time.monotonic()
    n.ok(f"export /exp {q(str(tmp_path / 'calibrate'))}")
    full = time.monotonic() - t0
    for it in range(max(2, ITERATIONS // 4)):
        dest = tmp_path / f"out{it}"
        run = Run(n, f"export /exp {q(str(dest))}")
        time.sleep(rng.uniform(0, full))
        run.kill()
        if dest.exists():
            for p in dest.iterdir():
                if p.name in originals:
                    assert p.read_bytes() == originals[p.name], \
                        f"after kill -9 during export, {p.name} exists under its final name but is partial"


def test_sigterm_during_import(narnia_bin, tmp_path):
    """SIGTERM ends the shell: an import cut short exits non-zero, the vault verifies, and no
    item is visible with partial content."""
    rng = random.Random(SEED + 400)
    n = Narnia(narnia_bin, tmp_path)
    n.init()
    src = tmp_path / "host" / "BIGDIR"
    originals = make_bigdir(src, rng)
    run = Run(n, f"mkdir /t; cd /t; import {q(str(src))}")
    run.first_line.wait(timeout=120)
    time.sleep(0.05)
    if run.proc.poll() is None:
        run.proc.send_signal(signal.SIGTERM)
    rc = run.proc.wait(timeout=60)
    run.reader.join(timeout=60)
    reported = sum(1 for l in run.lines if IMPORTED_RE.match(l))
    if reported < len(originals):
        assert rc != 0, f"an import ended by SIGTERM after {reported} of {len(originals)} items exited 0"
    check_after_crash(n, 0, "t", originals, run.lines, tmp_path, None)


def test_torn_journal_tail(narnia_bin, tmp_path):
    """A metadata write cut short (the journal's tail torn off by a crash) loses at most that
    change; the vault opens with a warning naming the bytes (never silently), the next change is
    durable (the torn bytes do not poison it: they are left as they are and the device goes on
    in a new journal), `verify` fails the first time it finds the cut and notes it afterwards."""
    n = Narnia(narnia_bin, tmp_path)
    n.init()
    for i in range(5):
        n.ok(f"mkdir /d{i}")
    key = n.store().key_file()
    # (Cut by exactly one byte, the journal would be taken for a record whose last byte a
    # kill stopped, and cut off: JournalEndTests.)
    for cut in (5, 2):
        journal = max((p for p in n.store().files() if p != key), key=lambda p: p.stat().st_mtime_ns)
        os.truncate(journal, journal.stat().st_size - cut)
        size = journal.stat().st_size
        r = n.c("verify")
        assert r.rc == 1, f"verify must fail when it first finds a torn tail ({cut} bytes cut)" + r.describe()
        assert any(re.match(r"narnia: warning: this device's journal \w+ ends in \d+ bytes that are not a whole record", l)
                   for l in r.err_lines), "opening must warn of the torn tail, naming the bytes" + r.describe()
        assert journal.stat().st_size == size, "the torn bytes are evidence: they must stay"
        r = n.c("ls /")
        assert r.rc == 0, f"the vault must open after a torn journal tail ({cut} bytes cut)" + r.describe()
        assert r.out_lines[:3] == ["d0", "d1", "d2"], "only the torn change may be lost" + r.describe()
        n.ok(f"mkdir /after-cut-{cut}")
        r = n.c("ls /; verify")
        assert r.rc == 0 and f"after-cut-{cut}" in r.out_lines, \
            "a change made after a torn tail must be durable, and verify passes once the cut was reported" + r.describe()


def test_the_store_probe_of_a_sync_killed_while_it_listed_goes_at_the_next_open(narnia, tmp_path):
    """Review AW-2: a `sync` killed while it listed the remote left its empty
    `.narnia-store-probe-…` at the store's top for a day (a sync engine carried it meanwhile).
    Its name carries a tag only this device makes: this device's next open removes it. One
    another device made (a sync engine's copy) still waits for the day."""
    from harness import q
    narnia.init()
    remote = tmp_path / "remote"
    remote.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    hanging = bin_dir / "rclone"
    hanging.write_text('#!/bin/bash\nreal=$(PATH="${PATH#*:}" command -v rclone)\n'
                       '[ "$1" = lsjson ] && exec sleep 60\nexec "$real" "$@"\n')
    hanging.chmod(0o755)
    foreign = narnia.vault / ".narnia-store-probe-0123456789ab"
    foreign.write_bytes(b"")
    env = dict(narnia.env, PATH=f"{bin_dir}:{narnia.env['PATH']}")
    run = subprocess.Popen(narnia.argv(["-c", f"sync {q(str(remote))}"]), env=env, cwd=narnia.workdir,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    probes: list[Path] = []
    while time.monotonic() < deadline and not probes:
        probes = [p for p in narnia.vault.glob(".narnia-store-probe-*") if p != foreign]
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    assert len(probes) == 1 and probes[0].exists(), "the killed sync left its probe"
    narnia.ok("ls /")
    assert not probes[0].exists(), "this device's next open removes its own probe"
    assert foreign.exists(), "another device's probe waits for the day"

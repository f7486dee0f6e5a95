"""Crash: `kill -9` at random moments during `import` (and `import --move`), many times, into
the same vault. After each kill: the vault opens, `verify` passes, leftovers are cleaned up,
every item reported `imported` is intact, no visible item holds wrong bytes, and with --move
no original is ever lost (each one is still on the host or intact in the vault).

NARNIA_CRASH_ITERATIONS (default 20) sets the number of kills per test, NARNIA_CRASH_SEED the
random seed (default 1)."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import time
from pathlib import Path

import pytest

from corpus import MIB
from harness import Narnia, q, tree_files

ITERATIONS = int(os.environ.get("NARNIA_CRASH_ITERATIONS", "20"))
SEED = int(os.environ.get("NARNIA_CRASH_SEED", "1"))
IMPORTED_RE = re.compile(r"^imported (.+) -> (/.*)$")


def make_bigdir(root: Path, rng: random.Random) -> dict[str, bytes]:
    """BIGDIR: ~40 files of varied sizes in two levels, including multi-chunk files."""
    files = {}
    sizes = [0, 1, 3, 4096, 65536, 1_000_000, MIB + 7, 2 * MIB + 3]
    sizes += [rng.randrange(1_000, 300_000) for _ in range(32)]
    for i, size in enumerate(sizes):
        rel = f"f{i:03d}.bin" if i % 3 else f"sub/g{i:03d}.bin"
        data = rng.randbytes(size)
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        files[rel] = data
    return files


def kill_during(n: Narnia, commands: str, delay: float) -> tuple[list[str], bool]:
    """Run `narnia -c COMMANDS`, SIGKILL it after `delay` seconds; the stdout lines it printed,
    and whether it had already finished by itself."""
    proc = n.popen("-c", commands)
    time.sleep(delay)
    finished = proc.poll() is not None
    if not finished:
        os.kill(proc.pid, signal.SIGKILL)
    out, _ = proc.communicate(timeout=60)
    return out.decode("utf-8", "surrogateescape").splitlines(), finished


def check_after_crash(n: Narnia, it: int, folder: str, originals: dict[str, bytes],
                      lines: list[str], out_root: Path, moved_from: Path | None):
    ctx = f" (iteration {it}, seed {SEED})"
    r = n.c("ls /")
    assert r.rc == 0, "the vault does not open after kill -9" + ctx + r.describe()
    problems = n.store().layout_problems()
    assert not problems, "leftovers of the interrupted write were not cleaned up on open" + ctx + \
        ":\n  " + "\n  ".join(problems)
    v = n.c("verify")
    assert v.rc == 0, "verify fails after kill -9" + ctx + v.describe()

    prefix = f"/{folder}/BIGDIR/"
    reported = set()
    for line in lines:
        m = IMPORTED_RE.match(line)
        if m and m.group(2).startswith(prefix):
            reported.add(m.group(2)[len(prefix):])
    unknown = reported - set(originals)
    assert not unknown, f"import reported unexpected vault paths {sorted(unknown)}" + ctx

    exported: dict[str, bytes] = {}
    listing = n.c(f"ls /{folder}")
    if listing.rc == 0 and "BIGDIR" in listing.out_lines:
        dest = out_root / f"out{it}"
        e = n.c(f"export /{folder}/BIGDIR {q(str(dest))}", timeout=120)
        assert e.rc == 0, "exporting what survived the crash failed" + ctx + e.describe()
        exported = tree_files(dest)
    missing = sorted(reported - set(exported))
    assert not missing, f"items reported imported are missing after kill -9: {missing}" + ctx
    for rel, data in exported.items():
        assert rel in originals, f"unexpected file {rel} in the vault after the crash" + ctx
        assert data == originals[rel], \
            f"{rel} is visible in the vault with wrong content after kill -9" + ctx

    if moved_from is not None:
        for rel, data in originals.items():
            hp = moved_from / rel
            if hp.exists():
                assert hp.read_bytes() == data, f"original {rel} was altered on the host" + ctx
            else:
                assert rel in exported, \
                    f"original {rel} is gone from the host and not in the vault: LOST" + ctx

    rm = n.c(f"rm -r /{folder}")
    if listing.rc == 0:
        assert rm.rc == 0, "removing the crashed import's folder failed" + ctx + rm.describe()


def calibrate(n: Narnia, src: Path, move: bool) -> float:
    """Seconds a full, uninterrupted import takes on this machine."""
    work = src
    if move:
        work = src.parent / "calibrate" / "BIGDIR"
        shutil.copytree(src, work)
    flag = "--move " if move else ""
    t0 = time.monotonic()
    r = n.c(f"mkdir /calibrate; cd /calibrate; import {flag}{q(str(work))}", timeout=300)
    took = time.monotonic() - t0
    assert r.rc == 0, "the uninterrupted import (calibration) failed" + r.describe()
    n.ok("rm -r /calibrate")
    return took


@pytest.mark.parametrize("move", [False, True], ids=["import", "import-move"])
def test_kill_during_import(narnia_bin, tmp_path, move):
    rng = random.Random(SEED * 2 + int(move))
    n = Narnia(narnia_bin, tmp_path)
    n.init()
    src = tmp_path / "src" / "BIGDIR"
    originals = make_bigdir(src, rng)
    full = calibrate(n, src, move)
    finished_runs = 0
    for it in range(ITERATIONS):
        folder = f"iter{it}"
        if move:
            work = tmp_path / f"move{it}" / "BIGDIR"
            shutil.copytree(src, work)
        else:
            work = src
        flag = "--move " if move else ""
        delay = rng.uniform(0.0, full * 1.1)
        lines, finished = kill_during(n, f"mkdir /{folder}; cd /{folder}; import {flag}{q(str(work))}",
                                      delay)
        finished_runs += finished
        check_after_crash(n, it, folder, originals, lines, tmp_path, work if move else None)
        if move:
            shutil.rmtree(work.parent)
    assert finished_runs < max(2, ITERATIONS // 2), \
        (f"{finished_runs} of {ITERATIONS} runs finished before the kill; the delays are too long "
         f"to test anything (full import took {full:.2f} s)")

"""Tamper: a flipped byte, a truncated object, swapped chunks, two swapped objects, a deleted
object. The damaged item fails to export (exit 1, a clear error, no partial file), `cat` never
emits a byte that is not the original's, every other item still exports byte-identical, and
`verify` names exactly the damaged items: as damaged, or, for an object that is missing or
shorter than its metadata says, as not (wholly) on this device — a deleted or cut object
cannot be told from one a sync has not delivered yet. Damaged metadata or key file: a clear
error, never 0."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from corpus import MIB, text_lines
from harness import CHUNK, Narnia, find_object, object_size, overwrite, q, writable

LOST = "its encrypted object, written on this device, is not in the store: deleted, or a restored store not yet given it back"
HEADER = 24
TAG = 16

ITEMS = {
    "flip.bin": 300_000,
    "multi.bin": 2 * MIB,          # exactly two full chunks
    "twin-a.bin": 200_000,         # the twins have the same padded size
    "twin-b.bin": 200_000,
    "gone.bin": 150_000,
    "keep.txt": None,              # text, size set below
    "keep.bin": MIB + 1,
}


class TamperVault:
    def __init__(self, n: Narnia, host: Path):
        self.n = n
        self.host = host
        self.contents: dict[str, bytes] = {}
        self.objects: dict[str, Path] = {}
        rng = random.Random(99)
        src = host / "src"
        src.mkdir()
        for name, size in ITEMS.items():
            data = text_lines(rng, 800, name) if size is None else rng.randbytes(size)
            (src / name).write_bytes(data)
            self.contents[name] = data
        n.init()
        n.ok("mkdir /t")
        store = n.store()
        for name, data in self.contents.items():
            before = store.sizes()
            n.ok(f"cd /t; import {q(str(src / name))}")
            after = store.sizes()
            rel = find_object(before, after, object_size(len(data)), name)
            self.objects[name] = store.root / rel

    # -- tampering ------------------------------------------------------------------------

    def flip(self, name: str, offset: int):
        p = self.objects[name]
        data = bytearray(p.read_bytes())
        data[offset % len(data)] ^= 0x01
        overwrite(p, bytes(data))

    def truncate(self, name: str, size: int):
        p = self.objects[name]
        with writable(p), open(p, "r+b") as f:
            f.truncate(size)

    def swap_objects(self, a: str, b: str):
        pa, pb = self.objects[a], self.objects[b]
        da, db = pa.read_bytes(), pb.read_bytes()
        overwrite(pa, db)
        overwrite(pb, da)

    def swap_chunks(self, name: str, i: int, j: int):
        p = self.objects[name]
        data = bytearray(p.read_bytes())
        size = CHUNK + TAG
        ci = data[HEADER + i * size:HEADER + (i + 1) * size]
        cj = data[HEADER + j * size:HEADER + (j + 1) * size]
        assert len(ci) == len(cj) == size, "swap_chunks needs two full chunks"
        data[HEADER + i * size:HEADER + (i + 1) * size] = cj
        data[HEADER + j * size:HEADER + (j + 1) * size] = ci
        overwrite(p, bytes(data))

    def delete(self, name: str):
        self.objects[name].unlink()

    def metadata_files(self) -> list[Path]:
        store = self.n.store()
        known = set(self.objects.values()) | {store.key_file()}
        return [p for p in store.files() if p not in known]

    # -- checking -------------------------------------------------------------------------

    def check(self, damaged: set[str], tmp: Path):
        n = self.n
        intact = [x for x in self.contents if x not in damaged]

        ls = n.c("ls /t")
        assert ls.rc == 0, "ls should still work when only content objects are damaged" + ls.describe()
        assert sorted(ls.out_lines) == sorted(self.contents), "ls should still list every item" + ls.describe()

        v = n.c("verify")
        assert v.rc == 1, f"verify should exit 1 when {sorted(damaged)} are damaged" + v.describe()
        assert "all intact" not in v.out, "verify claims all intact" + v.describe()
        # Every object here is this device's own, whole before its record was written: missing,
        # it is deleted (or a restored store still receiving it), not merely not yet here.
        for name in damaged:
            pat = re.compile(rf"^narnia: error: verify: /t/{re.escape(name)}: "
                             r"(damaged \(.+\)|" + re.escape(LOST) +
                             r"|only \d+ of its \d+ encrypted bytes are on this device \(still arriving, or cut\))$")
            assert any(pat.match(l) for l in v.err_lines), \
                f"verify should report `narnia: error: verify: /t/{name}: damaged (WHY)` or why it is not here" + v.describe()
        for name in intact:
            assert f"/t/{name}" not in v.err, f"verify names intact item {name} as damaged" + v.describe()

        for name in damaged:
            dest = tmp / f"export-{name}"
            dest.mkdir()
            e = n.c(f"export /t/{name} {q(str(dest / name))}")
            assert e.rc == 1, f"export of damaged {name} must exit 1" + e.describe()
            assert any(l.startswith(f"narnia: error: export: /t/{name}") for l in e.err_lines), \
                f"export of damaged {name} should say `narnia: error: export: /t/{name}: …`" + e.describe()
            assert "exported" not in e.out, f"export of damaged {name} reported success" + e.describe()
            left = sorted(p.name for p in dest.iterdir())
            assert not left, f"a failed export left files behind: {left}"

            c = n.c(f"cat /t/{name}")
            assert c.rc == 1, f"cat of damaged {name} must exit 1" + c.describe()
            assert self.contents[name].startswith(c.outb), \
                (f"cat of damaged {name} wrote {len(c.outb)} bytes that are not a prefix of the "
                 f"original: wrong bytes reached stdout")

        for name in intact:
            dest = tmp / f"ok-{name}"
            e = n.c(f"export /t/{name} {q(str(dest))}")
            assert e.rc == 0, f"intact item {name} should still export" + e.describe()
            assert dest.read_bytes() == self.contents[name], f"intact item {name} exported wrong bytes"

        whole = tmp / "whole"
        e = n.c(f"export /t {q(str(whole))}")
        assert e.rc == 1, "exporting a folder with damaged items must exit 1 (partial export)" + e.describe()
        if whole.exists():
            for p in whole.rglob("*"):
                if p.is_file():
                    assert p.name in intact, f"folder export wrote damaged item {p.name} (or a leftover)"
                    assert p.read_bytes() == self.contents[p.name], f"folder export wrote wrong bytes for {p.name}"


@pytest.fixture
def tv(narnia, host) -> TamperVault:
    return TamperVault(narnia, host)


CASES = {
    "flip-middle": (lambda t: t.flip("flip.bin", object_size(300_000) // 2), {"flip.bin"}),
    "flip-header": (lambda t: t.flip("flip.bin", 5), {"flip.bin"}),
    "flip-last-byte": (lambda t: t.flip("flip.bin", -1), {"flip.bin"}),
    "flip-second-chunk": (lambda t: t.flip("multi.bin", HEADER + CHUNK + TAG + 1000), {"multi.bin"}),
    "truncate-tail": (lambda t: t.truncate("flip.bin", object_size(300_000) - 100), {"flip.bin"}),
    "truncate-to-first-chunk": (lambda t: t.truncate("multi.bin", HEADER + CHUNK + TAG), {"multi.bin"}),
    "truncate-to-zero": (lambda t: t.truncate("keep.bin", 0), {"keep.bin"}),
    "swap-chunks": (lambda t: t.swap_chunks("multi.bin", 0, 1), {"multi.bin"}),
    "swap-objects-same-size": (lambda t: t.swap_objects("twin-a.bin", "twin-b.bin"),
                               {"twin-a.bin", "twin-b.bin"}),
    "swap-objects-different-size": (lambda t: t.swap_objects("flip.bin", "gone.bin"),
                                    {"flip.bin", "gone.bin"}),
    "delete": (lambda t: t.delete("gone.bin"), {"gone.bin"}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_tamper(tv, tmp_path, case):
    tamper, damaged = CASES[case]
    tamper(tv)
    tv.check(damaged, tmp_path)


def test_tamper_everything_at_once(tv, tmp_path):
    tv.flip("flip.bin", 1000)
    tv.truncate("multi.bin", HEADER + CHUNK + TAG)
    tv.swap_objects("twin-a.bin", "twin-b.bin")
    tv.delete("gone.bin")
    tv.check({"flip.bin", "multi.bin", "twin-a.bin", "twin-b.bin", "gone.bin"}, tmp_path)


def test_appended_bytes_never_give_wrong_content(tv, tmp_path):
    p = tv.objects["flip.bin"]
    with writable(p), open(p, "ab") as f:
        f.write(random.Random(3).randbytes(CHUNK // 4))
    dest = tmp_path / "out.bin"
    e = tv.n.c(f"export /t/flip.bin {q(str(dest))}")
    if e.rc == 0:
        assert dest.read_bytes() == tv.contents["flip.bin"], "export gave wrong bytes with exit 0"
    else:
        assert e.rc == 1 and not dest.exists(), "a refused export must exit 1 and leave no file" + e.describe()
    v = tv.n.c("verify")
    assert v.rc == 1 and "/t/flip.bin" in v.err, \
        "verify should notice bytes appended to a content object" + v.describe()


def test_damaged_metadata_is_reported(tv):
    meta = tv.metadata_files()
    assert meta, "no metadata journal found in the store (every file is a key file or an object)"
    target = max(meta, key=lambda p: p.stat().st_size)
    data = bytearray(target.read_bytes())
    data[len(data) // 3] ^= 0x40
    overwrite(target, bytes(data))
    r = tv.n.c("ls /t")
    assert r.rc == 1, ("damaged metadata must make the command fail with exit 1, "
                       "not silently drop or keep changes") + r.describe()
    assert any(l.startswith("narnia: error:") for l in r.err_lines), "expected a clear error" + r.describe()
    assert any(l.startswith("narnia: hint: nothing was changed; open a copy from another device") for l in r.err_lines), \
        "and what to do about it" + r.describe()
    assert r.out == "", "nothing should be listed from damaged metadata" + r.describe()


def test_damaged_key_file_is_refused(tv):
    key = tv.n.store().key_file()
    before = key.read_bytes()
    data = bytearray(before)
    data[len(data) // 2] ^= 0x01
    overwrite(key, bytes(data))
    r = tv.n.c("ls /t")
    assert r.rc in (1, 3), "a damaged key file must be refused (exit 1 or 3)" + r.describe()
    assert r.out == "", "nothing should be listed with a damaged key file" + r.describe()
    assert any(l.startswith("narnia: error:") for l in r.err_lines), "expected a clear error" + r.describe()


def test_a_key_file_cut_to_an_inbox_key_s_length_is_named_as_possibly_cut(tv):
    """A key file cut to 72 bytes is listed as an inbox public key (that length): the error
    said there was no key file at all."""
    key = tv.n.store().key_file()
    overwrite(key, key.read_bytes()[:72])
    r = tv.n.c("ls /t")
    assert r.rc == 1 and r.out == "", r.describe()
    assert "key file is damaged (there is none; one of the files of 72 bytes at the store's top, an inbox key's length, may be a key file cut short)" in r.err, r.describe()


@pytest.mark.parametrize("case", ["delete", "flip-middle", "truncate-to-zero"])
def test_damaged_items_can_be_removed(tv, case):
    """After verify names a damaged item, the user can remove it, and verify passes again."""
    tamper, damaged = CASES[case]
    tamper(tv)
    for name in damaged:
        r = tv.n.c(f"rm /t/{name}")
        assert r.rc == 0, f"rm of damaged item {name} ({case}) should succeed" + r.describe()
    v = tv.n.c("verify")
    assert v.rc == 0, "verify should pass once the damaged items are removed" + v.describe()
    assert sorted(tv.n.ok("ls /t").out_lines) == sorted(set(tv.contents) - damaged)
    problems = tv.n.store().layout_problems()
    assert not problems, "store layout after removing damaged items: " + "; ".join(problems)


def test_copy_of_a_damaged_item(tv, tmp_path):
    """cp of a damaged item must not make a healthy-looking copy of wrong bytes: it fails with
    exit 1 and no copy, or the copy is itself reported damaged."""
    tv.flip("flip.bin", object_size(300_000) // 2)
    r = tv.n.c("cp /t/flip.bin /t/copy.bin")
    assert r.rc in (0, 1), "cp of a damaged item must exit 0 or 1, not crash" + r.describe()
    if r.rc == 0:
        v = tv.n.c("verify")
        assert "/t/copy.bin" in v.err and v.rc == 1, \
            "cp of a damaged item succeeded and verify does not flag the copy" + r.describe() + v.describe()
    else:
        assert r.rc == 1 and any(l.startswith("narnia: error: cp:") for l in r.err_lines), \
            "cp of a damaged item must fail cleanly: exit 1 and `narnia: error: cp: …`" + r.describe()
        assert "Program crashed" not in r.err, "cp of a damaged item crashed narnia" + r.describe()
        assert "copy.bin" not in tv.n.ok("ls /t").out_lines, "a failed cp left a copy behind"
    c = tv.n.c("cat /t/copy.bin")
    assert c.rc != 0 or c.outb == tv.contents["flip.bin"], "the copy of a damaged item gave wrong bytes with exit 0"


@pytest.mark.parametrize("case", ["delete", "flip-middle"])
def test_copy_of_a_folder_with_a_damaged_item(tv, case):
    tamper, damaged = CASES[case]
    tamper(tv)
    r = tv.n.c("cp -r /t /t2")
    assert r.rc in (0, 1), "cp -r of a folder holding a damaged item must exit 0 or 1, not crash" + r.describe()
    v = tv.n.c("verify")
    assert v.rc == 1, v.describe()
    for name in set(tv.contents) - damaged:
        c = tv.n.c(f"cat /t2/{name}")
        if c.rc == 0:
            assert c.outb == tv.contents[name], f"the copy of intact {name} holds wrong bytes"


def test_a_deleted_object_of_this_device_is_not_called_content_to_come(tv):
    """Content this device wrote is whole in its store before any record names it, so its
    object missing was deleted — or the store is a backup restored in place that a sync engine
    is still filling — and `verify`, `cat` and `cp` say so; they said "not yet on this device",
    as if a sync would surely bring it."""
    tv.delete("gone.bin")
    gone = LOST
    v = tv.n.c("verify /t/gone.bin")
    assert v.rc == 1 and v.err_lines[-1] == f"narnia: error: verify: /t/gone.bin: {gone}", v.describe()
    c = tv.n.c("cat /t/gone.bin")
    assert c.rc == 1 and c.err_lines[-1] == f"narnia: error: cat: /t/gone.bin: {gone}", c.describe()
    c = tv.n.c("cp /t/gone.bin /t/again.bin")
    assert c.rc == 1 and c.err_lines[-1].endswith(gone), c.describe()

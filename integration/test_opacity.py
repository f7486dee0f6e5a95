"""Opacity: after importing the corpus, the store shows nothing readable — no item name, no
plaintext slice, no header shared between store files, random file names, Padmé-padded sizes,
and file(1) finds no more formats in it than it finds in random bytes by chance.

One import of a folder packs its small files into a few shared objects (docs/FORMAT.md,
"Packs"); importing the files one command at a time gives each its own object, which is what
the per-object checks (headers, sizes) need."""

from __future__ import annotations

import math
import os
import random
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from corpus import nfc
from harness import Narnia, object_size, padme, q

# Formats in the corpus whose file(1) signatures are strong enough never to match random bytes
# in a sample of this size (at least 3 fixed bytes, or structure checks).
STRONG_FORMATS = ["PNG", "JPEG", "GIF", "PDF", "Zip", "ELF", "tar archive", "bzip2", "XZ",
                  "RIFF", "WAVE", "TrueType", "PC bitmap", "Ogg", "ID3", "ISO Media"]
# Text needs every byte to be a text byte: random bytes pass by chance only when the file is
# tiny (a 40-byte object is "Non-ISO extended-ASCII text" about once in 200), never at 256 bytes.
TEXT_FORMATS = ["text", "XML", "HTML", "SVG", "JSON", "CSV", "Unicode", "ASCII", "UTF-8", "script"]
TEXT_MIN_SIZE = 256


def names_a_format(description: str, formats: list[str]) -> bool:
    """True when file(1)'s `description` names one of `formats` as a word: "script" in "Bourne-Again
    shell script", not in the "descriptor" of a boot sector libmagic reads into random bytes."""
    return any(re.search(rf"\b{re.escape(f)}\b", description, re.IGNORECASE) for f in formats)


@pytest.fixture(scope="module")
def store_with_corpus(narnia_bin, corpus, tmp_path_factory):
    n = Narnia(narnia_bin, tmp_path_factory.mktemp("opacity"))
    n.init()
    r = n.c(f"import {q(str(corpus.root))}", timeout=300)
    assert r.rc == 0, "importing the corpus failed" + r.describe()
    # a few folders and items with distinctive names made inside the vault too
    n.ok("mkdir -p '/Secret Plans/Operation Lamppost'; cd '/Secret Plans'; "
         "import - 'confession-of-edmund.txt'", input=b"I betrayed them for Turkish Delight.\n" * 40)
    return n


@pytest.fixture(scope="module")
def store_one_by_one(narnia_bin, corpus, tmp_path_factory):
    """The corpus imported one file per command: one content object per file."""
    n = Narnia(narnia_bin, tmp_path_factory.mktemp("one-by-one"))
    n.init()
    script = "\n".join(f"import {q(str(corpus.root / rel))}" for rel in sorted(corpus.files))
    r = n.c(script, timeout=300)
    assert r.rc == 0, "importing the corpus file by file failed" + r.describe()
    return n


def store_blobs(n: Narnia) -> dict[str, bytes]:
    return {n.store().rel(p): p.read_bytes() for p in n.store().files()}


def test_store_layout(store_with_corpus):
    problems = store_with_corpus.store().layout_problems()
    assert not problems, "the store does not have the documented layout:\n  " + "\n  ".join(problems)


def test_no_names_in_store(store_with_corpus, corpus):
    blobs = store_blobs(store_with_corpus)
    names = set()
    for rel in list(corpus.files) + list(corpus.dirs):
        for part in Path(rel).parts:
            names.add(part)
            names.add(nfc(part))
    names |= {"corpus", "Secret Plans", "Operation Lamppost", "confession-of-edmund.txt"}
    needles = sorted(n for n in names if len(n.encode()) >= 5)
    assert len(needles) > 40, "too few distinctive names to make this test meaningful"
    found = []
    for needle in needles:
        for enc in {needle.encode("utf-8"), needle.encode("utf-16-le")}:
            for rel, blob in blobs.items():
                if enc in blob:
                    found.append((needle, rel))
    assert not found, f"item names appear in plaintext in store files: {found[:10]}"


def test_no_plaintext_slices_in_store(store_with_corpus, corpus):
    blobs = store_blobs(store_with_corpus)
    needles = {}
    for rel in corpus.files:
        data = corpus.content(rel)
        if len(data) < 24:
            continue
        for off in sorted({0, len(data) // 3, len(data) // 2, len(data) - 24}):
            slice_ = data[off:off + 24]
            if len(set(slice_)) > 4:          # skip runs such as zero padding inside formats
                needles[slice_] = f"{rel}@{off}"
    needles[b"I betrayed them for Turkish Delight."] = "confession-of-edmund.txt"
    assert len(needles) > 100, "too few plaintext slices to make this test meaningful"
    found = [(what, rel) for needle, what in needles.items()
             for rel, blob in blobs.items() if needle in blob]
    assert not found, f"plaintext slices appear in store files: {found[:10]}"


def test_folder_import_packs_small_files(store_with_corpus, corpus):
    files = store_with_corpus.store().files()
    assert len(files) * 4 < len(corpus.files), (
        f"importing a folder of {len(corpus.files)} files left {len(files)} store files; "
        "its small files should share a few packs")


def test_no_shared_headers(store_one_by_one):
    blobs = {rel: b for rel, b in store_blobs(store_one_by_one).items() if len(b) >= 16}
    n = len(blobs)
    assert n >= 40, f"expected many store files after importing the corpus, found {n}"
    for k in (4, 8, 16):
        prefixes = Counter(b[:k] for b in blobs.values())
        shared = {p.hex(): c for p, c in prefixes.items() if c > 1}
        assert not shared, f"store files share their first {k} bytes (a header): {shared}"
    # Even a fixed first byte or two is a header: random bytes spread evenly.
    for k, limit in ((1, max(4, n // 10)), (2, 2)):
        prefixes = Counter(b[:k] for b in blobs.values())
        common, count = prefixes.most_common(1)[0]
        assert count <= limit, (f"{count} of {n} store files begin with the same {k} byte(s) "
                                f"{common.hex()} — more than chance allows ({limit})")


def file_descriptions(paths: list[Path]) -> list[str]:
    if not paths:
        return []
    out = subprocess.run(["file", "-b", "--"] + [str(p) for p in paths],
                         stdout=subprocess.PIPE, check=True, timeout=120).stdout.decode()
    lines = out.splitlines()
    assert len(lines) == len(paths)
    return lines


@pytest.mark.skipif(shutil.which("file") is None, reason="file(1) is not installed")
def test_file_finds_no_format(store_with_corpus, tmp_path):
    store = store_with_corpus.store()
    paths = store.files()
    descriptions = file_descriptions(paths)
    strong = [(store.rel(p), p.stat().st_size, d) for p, d in zip(paths, descriptions)
              if names_a_format(d, STRONG_FORMATS)
              or (p.stat().st_size >= TEXT_MIN_SIZE and names_a_format(d, TEXT_FORMATS))]
    assert not strong, f"file(1) recognises formats in store files: {strong}"

    # Calibrate on random bytes of the same sizes (capped), in this run, on this machine.
    rng = random.Random(7)
    rand_dir = tmp_path / "random"
    rand_dir.mkdir()
    rand_paths = []
    for i in range(400):
        size = min(paths[i % len(paths)].stat().st_size, 65536)
        p = rand_dir / f"r{i}"
        p.write_bytes(rng.randbytes(max(size, 64)))
        rand_paths.append(p)
    rand_rate = sum(d != "data" for d in file_descriptions(rand_paths)) / len(rand_paths)
    p_chance = max(rand_rate, 0.06)
    n = len(paths)
    not_data = [(store.rel(p), d) for p, d in zip(paths, descriptions) if d != "data"]
    limit = n * p_chance + 4 * math.sqrt(n * p_chance * (1 - p_chance)) + 2
    assert len(not_data) <= limit, (
        f"file(1) finds something in {len(not_data)} of {n} store files; random bytes give "
        f"{rand_rate:.1%}, so at most {limit:.0f} were expected: {not_data}")


def test_content_sizes_are_padme_padded(store_one_by_one, corpus):
    sizes = Counter(store_one_by_one.store().sizes().values())
    missing = []
    for rel, n in corpus.sizes.items():
        if sizes[object_size(n)] == 0:
            missing.append((rel, n, padme(n), object_size(n)))
    assert not missing, ("no store file has the Padmé-padded object size "
                         "24 + P + 16*chunks for these files (rel, N, P, expected): "
                         f"{missing[:10]}")


def test_store_files_private(store_with_corpus):
    """Store files should not be readable by other users."""
    store = store_with_corpus.store()
    loose = [store.rel(p) for p in store.files() if p.stat().st_mode & 0o077]
    assert not loose, f"store files readable or writable by group/others: {loose[:10]}"
    assert not (store.root.stat().st_mode & 0o077), \
        f"store directory mode {oct(store.root.stat().st_mode)} lets group/others in"


def test_read_only_commands_leave_store_identical(store_with_corpus):
    store = store_with_corpus.store()
    before = store.snapshot()
    store_with_corpus.ok("ls -l /; ls --json /corpus; tree /corpus; find / -type photo; "
                         "stat /corpus; du /; cat /corpus/deep/top.txt; pwd")
    after = store.snapshot()
    changed = sorted(set(before.items()) ^ set(after.items()))
    assert not changed, f"read-only commands changed the store: {changed[:10]}"


def test_reading_the_store_leaves_access_times_as_they_were(vault, tmp_path):
    """With access times on (relatime), reading the key file at every open, and at every try of
    the door, dated each (a review): store files and folders are read with O_NOATIME."""
    (tmp_path / "a.txt").write_bytes(b"some content\n")
    vault.ok(f"import {q(str(tmp_path / 'a.txt'))}")
    paths = [vault.vault] + sorted(vault.vault.rglob("*"))
    old = 1_000_000_000                          # 2001: relatime would update every one of them
    for p in paths:
        os.utime(p, (old, p.stat().st_mtime), follow_symlinks=False)
    vault.ok("pwd; ls -l /; cat /a.txt; verify")
    assert vault.c("pwd", passphrase="not the passphrase").rc == 3
    touched = [str(p) for p in paths if p.exists() and p.stat().st_atime != old]
    assert touched == [], f"access times changed: {touched}"
    # The file system does keep access times here (else the test above shows nothing).
    probe = next(p for p in paths if p.is_file())
    probe.read_bytes()
    if probe.stat().st_atime == old:
        pytest.skip("this file system does not record access times")

"""Round trip: the corpus (real files of many types, chunk-boundary sizes, zero-byte files,
hostile names, NFC/NFD, 255-byte names, four levels of nesting) imports and exports
byte-identical, and hostile names can be addressed with quoting on both sides."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest

from corpus import HOSTILE_NAMES, LONG_ASCII_NAME, LONG_UTF8_NAME, MIB, nfc
from harness import Narnia, q, run_measuring_rss, sha, tree_files, script_form

IMPORTED_RE = re.compile(r"^imported (.+) -> (/.*)$")
EXPORTED_RE = re.compile(r"^exported (/.*) -> (.+)$")


@pytest.fixture(scope="module")
def imported(narnia_bin, corpus, tmp_path_factory):
    """A vault holding the corpus at /corpus, and the result of the import."""
    n = Narnia(narnia_bin, tmp_path_factory.mktemp("roundtrip"))
    n.init()
    r = n.c(f"import {q(str(corpus.root))}", timeout=300)
    return n, r


def byte_order(names):
    return sorted(names, key=lambda s: unicodedata.normalize("NFC", s).encode())


def test_import_reports_every_file(imported, corpus):
    n, r = imported
    assert r.rc == 0, "importing the corpus failed" + r.describe()
    assert not r.errors, "importing the corpus printed errors" + r.describe()
    reported = {m.group(2) for l in r.out_lines if (m := IMPORTED_RE.match(l))}
    missing = sorted("/corpus/" + v for v in corpus.files.values() if script_form("/corpus/" + v) not in reported)
    assert not missing, (f"{len(missing)} files have no `imported HOST -> VAULT` line, e.g. "
                         f"{missing[:5]}" + r.describe())
    unexpected = [l for l in r.out_lines if not IMPORTED_RE.match(l)]
    assert not unexpected, f"import printed lines other than `imported … -> …`: {unexpected[:5]}"


def test_export_is_byte_identical(imported, corpus, tmp_path):
    n, r = imported
    assert r.rc == 0, "import failed, see test_import_reports_every_file"
    dest = tmp_path / "out"
    e = n.c(f"export /corpus {q(str(dest))}", timeout=300)
    assert e.rc == 0, "export of the whole corpus failed" + e.describe()
    assert dest.is_dir(), f"export /corpus to a new host path should create it as the copy ({dest})"
    got = tree_files(dest)
    expected = {v: corpus.content(k) for k, v in corpus.files.items()}
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing, f"files missing after export: {missing[:10]}"
    assert not extra, f"unexpected files after export (temporary leftovers?): {extra[:10]}"
    wrong = [k for k in expected if sha(expected[k]) != sha(got[k])]
    assert not wrong, f"exported files differ from the originals: {wrong}"
    for rel, vrel in corpus.dirs.items():
        assert (dest / vrel).is_dir(), f"folder {vrel!r} (empty folders too) missing after export"
    lines = [l for l in e.out_lines if EXPORTED_RE.match(l)]
    assert len(lines) == len(corpus.files), \
        f"expected one `exported … -> …` line per file ({len(corpus.files)}), got {len(lines)}"


def test_verify_after_import(imported, corpus):
    n, _ = imported
    r = n.c("verify")
    assert r.rc == 0, "verify of a freshly imported corpus failed" + r.describe()
    m = re.fullmatch(r"verified (\d+) items, all intact", r.out.strip())
    assert m, "verify should print `verified N items, all intact`" + r.describe()
    assert int(m.group(1)) >= len(corpus.files), \
        f"verify counted {m.group(1)} items but the vault holds {len(corpus.files)} files"


def test_hostile_names_listed_exactly(imported, corpus):
    n, _ = imported
    r = n.ok("ls -a /corpus/hostile")
    names = [nfc(x) for x in HOSTILE_NAMES] + ["dir with 'quote' and *star*"]
    assert r.out_lines == [script_form(x) for x in byte_order(names)], \
        "ls -a of the hostile folder should list every name exactly, in NFC byte order" + r.describe()
    r = n.ok("ls /corpus/hostile")
    assert r.out_lines == [script_form(x) for x in byte_order(x for x in names if not x.startswith("."))], \
        "ls without -a should hide names starting with a dot and show the rest exactly" + r.describe()


def test_nfc_and_nfd_both_round_trip(imported):
    n, _ = imported
    for folder, content in (("nfc", b"spelled NFC\n"), ("nfd", b"spelled NFD\n")):
        r = n.ok(f"ls /corpus/unicode/{folder}")
        assert r.out_lines == [nfc("caf\u00e9.txt")], \
            f"the {folder.upper()} name should be listed in NFC" + r.describe()
        for spelling in ("NFC", "NFD"):
            name = unicodedata.normalize(spelling, "caf\u00e9.txt")
            r = n.c(f"cat {q('/corpus/unicode/' + folder + '/' + name)}")
            assert r.rc == 0 and r.outb == content, \
                f"the item should be addressable in {spelling} spelling" + r.describe()


def test_hostile_names_quoted_both_sides(imported, corpus, tmp_path):
    """Each hostile item exported by a quoted vault path to a quoted hostile host path."""
    n, _ = imported
    dest = tmp_path / "each one"
    dest.mkdir()
    lines = [f"export {q('/corpus/hostile/' + name)} {q(str(dest / name))}" for name in HOSTILE_NAMES]
    batch = tmp_path / "export.batch"
    batch.write_text("\n".join(lines) + "\n")
    r = n("--keep-going", "-b", str(batch))
    assert r.rc == 0, "exporting hostile names one by one failed" + r.describe()
    for name in HOSTILE_NAMES:
        got = dest / nfc(name)
        assert got.is_file(), f"{name!r} was not exported to its quoted host path" + r.describe()
        assert got.read_bytes() == corpus.content("hostile/" + name), f"{name!r} differs"


def test_hostile_names_backslash_escaped(imported, corpus):
    n, _ = imported
    for name in ("name with spaces.txt", "it's.txt", 'say "hi".txt', "star*.txt", "what?.txt",
                 "[brackets].txt", "semi;colon.txt", "(parens) & amp.txt", "#hash.txt"):
        escaped = re.sub(r"([^A-Za-z0-9_./-])", r"\\\1", "/corpus/hostile/" + name)
        r = n.c(f"cat {escaped}")
        assert r.rc == 0, f"cat {escaped} (backslash-escaped) failed" + r.describe()
        assert r.outb == corpus.content("hostile/" + name), f"cat {escaped} gave wrong bytes"


def test_leading_dash_after_double_dash(imported, corpus):
    n, _ = imported
    r = n.c("cd /corpus/hostile; cat -- -leading-dash.txt")
    assert r.rc == 0, "`cat -- -leading-dash.txt` should treat the name as a path" + r.describe()
    assert r.outb == corpus.content("hostile/-leading-dash.txt")
    r = n.c("cd /corpus/hostile; cat ./-leading-dash.txt")
    assert r.rc == 0 and r.outb == corpus.content("hostile/-leading-dash.txt"), \
        "`cat ./-leading-dash.txt` should work" + r.describe()


def test_long_names(imported, corpus):
    n, _ = imported
    for name in (LONG_ASCII_NAME, LONG_UTF8_NAME):
        assert len(name.encode()) == 255
        r = n.c(f"cat {q('/corpus/hostile/' + name)}")
        assert r.rc == 0 and r.outb == corpus.content("hostile/" + name), \
            f"the 255-byte name {name[:10]}… should round-trip" + r.describe()


def test_chunk_boundary_sizes(imported, corpus):
    n, _ = imported
    for name, size in (("chunk minus one.bin", MIB - 1), ("chunk exact.bin", MIB),
                       ("chunk plus one.bin", MIB + 1), ("two chunks.bin", 2 * MIB),
                       ("three chunks plus five.bin", 3 * MIB + 5), ("one byte.bin", 1)):
        path = "/corpus/binaries/" + name
        r = n.ok(f"stat {q(path)}")
        fields = dict(l.split(": ", 1) for l in r.out_lines if ": " in l)
        assert fields.get("size") == str(size), f"stat size of {name}" + r.describe()
        r = n.c(f"cat {q(path)}")
        assert r.rc == 0 and r.outb == corpus.content("binaries/" + name), \
            f"cat of {name} ({size} bytes) is not byte-identical (got {len(r.outb)} bytes)"


def test_zero_byte_files(imported):
    n, _ = imported
    for name in ("zero.bin", "zero.txt", ".zero-hidden"):
        r = n.c(f"cat /corpus/empty/{name}")
        assert r.rc == 0 and r.outb == b"", f"cat of zero-byte {name}" + r.describe()
    r = n.ok("ls -a /corpus/empty")
    assert r.out_lines == [".zero-hidden", "nothing here", "zero.bin", "zero.txt"], \
        "the empty folder and zero-byte files should be listed" + r.describe()


def test_hostile_host_paths_imported_one_by_one(vault, corpus):
    """Host-side quoting: each hostile host path, quoted, imported on its own."""
    cmds = ["mkdir /single", "cd /single"]
    cmds += [f"import {q(str(corpus.path('hostile/' + name)))}" for name in HOSTILE_NAMES]
    r = vault.c("; ".join(cmds), timeout=120)
    assert r.rc == 0, "importing quoted hostile host paths one by one failed" + r.describe()
    ls = vault.ok("ls -a /single")
    assert ls.out_lines == [script_form(x) for x in byte_order(nfc(x) for x in HOSTILE_NAMES)], \
        "each hostile host file should keep its (NFC) name" + ls.describe()
    for name in HOSTILE_NAMES:
        c = vault.c(f"cat {q('/single/' + name)}")
        assert c.rc == 0 and c.outb == corpus.content("hostile/" + name), f"{name!r} differs"


def test_streaming_memory_is_bounded(vault, host):
    """Brief §3.4: import, export and cat stream; peak RSS stays under 64 MiB."""
    import os
    size = 128 * MIB + 12345
    block = os.urandom(MIB)
    big = host / "big.bin"
    with open(big, "wb") as f:
        for i in range(size // MIB):
            f.write(bytes([i & 255]) + block[1:])
        f.write(block[:size % MIB])
    limit_kib = 64 * 1024
    for what, cmd in (("import", f"import {q(str(big))}"),
                      ("cat", "cat /big.bin"),
                      ("export", f"export /big.bin {q(str(host / 'back.bin'))}"),
                      ("verify", "verify")):
        rc, rss, err = run_measuring_rss(vault.argv(["-c", cmd]), vault.env, vault.workdir)
        assert rc == 0, f"{what} of a 128 MiB file failed: {err!r}"
        assert rss < limit_kib, f"{what} of a 128 MiB file peaked at {rss // 1024} MiB RSS (limit 64 MiB)"
    assert (host / "back.bin").stat().st_size == size
    with open(big, "rb") as a, open(host / "back.bin", "rb") as b:
        while True:
            x, y = a.read(1 << 22), b.read(1 << 22)
            assert x == y, "the exported 128 MiB file differs from the original"
            if not x:
                break

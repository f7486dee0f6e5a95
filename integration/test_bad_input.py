"""Bad input: each command's error cases (missing path, bad name, folder into itself, rmdir of
a non-empty folder, export over an existing file, import of a missing host path, …) give a
clear `narnia: error: CMD: …` message naming the path, exit 1, print nothing on stdout, and
change nothing: the vault's tree, the store's bytes and the host folder are as before. Also:
fuzzed command lines never crash, host read errors and stdout write errors fail cleanly, and a
host name that is not UTF-8 is never left out silently."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from harness import Narnia, q

LONG = "n" * 256
LONG_UTF8 = "\u00e9" * 128  # 256 bytes in NFC


def host_snapshot(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir")
            for p in sorted(root.rglob("*"))}


@pytest.fixture(scope="module")
def template(narnia_bin, tmp_path_factory):
    """A vault with /docs/notes.txt, /docs/sub/, /photos/a.png, /empty/ and a host folder."""
    n = Narnia(narnia_bin, tmp_path_factory.mktemp("bad-input"))
    n.init()
    host = n.workdir / "host"
    (host / "src").mkdir(parents=True)
    (host / "src/notes.txt").write_bytes(b"notes\n")
    (host / "src/a.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 64)
    (host / "existing.txt").write_bytes(b"precious host file")
    (host / "notes.txt").write_bytes(b"a host file named like the vault item")
    n.ok(f"mkdir -p /docs/sub /photos /empty; cd /docs; import {q(str(host / 'src/notes.txt'))}; "
         f"cd /photos; import {q(str(host / 'src/a.png'))}")
    return n


@pytest.fixture
def base(template, narnia_bin, tmp_path):
    """A private copy of the template vault and host folder, so that one case cannot spoil
    another."""
    n = Narnia(narnia_bin, tmp_path)
    shutil.copytree(template.vault, n.vault)
    shutil.copytree(template.workdir / "host", tmp_path / "host")
    n.host = tmp_path / "host"
    return n


# (id, command line, CMD in the error, text the message must contain, regex the message must match)
CASES = [
    ("ls-missing", "ls /nope", "ls", "/nope", None),
    ("cd-missing", "cd /nope", "cd", "/nope", None),
    ("cd-file", "cd /docs/notes.txt", "cd", "/docs/notes.txt", None),
    ("cat-missing", "cat /nope", "cat", "/nope", None),
    ("cat-folder", "cat /docs", "cat", "/docs", None),
    ("cat-file-with-trailing-slash", "cat /docs/notes.txt/", "cat", "/docs/notes.txt", None),
    ("ls-file-with-trailing-slash", "ls /docs/notes.txt/", "ls", "/docs/notes.txt", None),
    ("stat-missing", "stat /nope", "stat", "/nope", None),
    ("tree-missing", "tree /nope", "tree", "/nope", None),
    ("du-missing", "du /nope", "du", "/nope", None),
    ("find-missing", "find /nope", "find", "/nope", None),
    ("find-bad-type", "find / -type bogus", "find", "bogus", None),
    ("open-missing", "open /nope", "open", "/nope", None),
    ("rm-missing", "rm /nope", "rm", "/nope", None),
    ("rm-folder-without-r", "rm /docs", "rm", "/docs", None),
    ("rm-root", "rm -r /", "rm", "", None),
    ("rmdir-missing", "rmdir /nope", "rmdir", "/nope", None),
    ("rmdir-not-empty", "rmdir /docs", "rmdir", "/docs", r"not empty"),
    ("rmdir-file", "rmdir /docs/notes.txt", "rmdir", "/docs/notes.txt", None),
    ("rmdir-root", "rmdir /", "rmdir", "", None),
    ("mkdir-exists", "mkdir /docs", "mkdir", "/docs", None),
    ("mkdir-missing-parent", "mkdir /nope/x", "mkdir", "/nope", None),
    ("mkdir-name-too-long", f"mkdir /{LONG}", "mkdir", "", r"long|255|name"),
    ("mkdir-utf8-name-too-long", f"mkdir /{LONG_UTF8}", "mkdir", "", r"long|255|name"),
    ("mkdir-p-name-too-long", f"mkdir -p /newtop/{LONG}", "mkdir", "", r"long|255|name"),
    ("mkdir-p-through-file", "mkdir -p /docs/notes.txt/x", "mkdir", "/docs/notes.txt", None),
    ("mv-missing", "mv /nope /x", "mv", "/nope", None),
    ("mv-into-itself", "mv /docs /docs/sub", "mv", "/docs", None),
    ("mv-onto-itself", "mv /docs /docs", "mv", "/docs", None),
    ("mv-root", "mv / /x", "mv", "", None),
    ("mv-over-existing", "mv /docs/notes.txt /photos/a.png", "mv", "/photos/a.png", None),
    ("mv-missing-parent", "mv /docs/notes.txt /nope/x", "mv", "/nope", None),
    ("mv-name-too-long", f"mv /docs/notes.txt /docs/{LONG}", "mv", "", r"long|255|name"),
    ("mv-folder-over-file", "mv -f /empty /docs/notes.txt", "mv", "", None),
    ("cp-missing", "cp /nope /x", "cp", "/nope", None),
    ("cp-folder-without-r", "cp /docs /copy", "cp", "/docs", None),
    ("cp-into-itself", "cp -r /docs /docs/sub", "cp", "/docs", None),
    ("cp-over-existing", "cp /docs/notes.txt /photos/a.png", "cp", "/photos/a.png", None),
    ("cp-onto-itself", "cp /docs/notes.txt /docs/notes.txt", "cp", "/docs/notes.txt", None),
    ("cp-f-onto-itself", "cp -f /docs/notes.txt /docs/notes.txt", "cp", "/docs/notes.txt", None),
    ("cp-name-too-long", f"cp /docs/notes.txt /{LONG}", "cp", "", r"long|255|name"),
    ("export-missing", "export /nope HOST/out.txt", "export", "/nope", None),
    ("export-over-existing", "export /docs/notes.txt HOST/existing.txt", "export", "existing.txt", None),
    ("export-missing-host-parent", "export /docs/notes.txt HOST/no/such/dir/x", "export", "", None),
    ("export-folder-over-file", "export /docs HOST/existing.txt", "export", "existing.txt", None),
    ("import-missing", "import HOST/missing.txt", "import", "missing.txt", None),
    ("import-missing-glob", "import HOST/missing*.txt", "import", "missing", r"no match"),
    ("import-stdin-empty-name", "import - ''", "import", "", None),
    ("import-stdin-long-name", f"import - {LONG}", "import", "", r"long|255|name"),
    ("import-stdin-slash-in-missing-folder", "import - /nope/x", "import", "", None),
    ("lcd-missing", "lcd HOST/missing", "lcd", "missing", None),
    ("lls-missing", "lls HOST/missing", "lls", "missing", None),
    ("help-unknown", "help frobnicate", "help", "frobnicate", None),
    ("passwd-no-terminal-no-flag", "passwd", "passwd", "", None),
    ("ls-bad-flag", "ls --bogus /", "ls", "--bogus", None),
    ("glob-no-match", "rm /docs/*.nothing", "rm", "", r"no match"),
    ("set-unknown-key", "set no-such-setting on", "set", "no-such-setting", None),
    ("set-bad-value", "set remove-originals perhaps", "set", "perhaps", None),
    ("export-into-folder-over-existing", "export /docs/notes.txt HOST", "export", "", None),
    # Several sources to a destination that is not there: "no such folder", as with one
    # (review AX1); to a file: "not a folder".
    ("export-several-to-missing", "export /docs/notes.txt /photos/a.png HOST/nodir", "export", "nodir", r"nodir: no such folder$"),
    ("export-several-to-file", "export /docs/notes.txt /photos/a.png HOST/existing.txt", "export", "existing.txt", r"existing.txt: not a folder$"),
    ("mv-several-to-missing", "mv /docs/notes.txt /photos/a.png /nodir", "mv", "/nodir", r"/nodir: no such folder; nothing was moved$"),
    ("cp-several-to-missing", "cp /docs/notes.txt /photos/a.png /nodir", "cp", "/nodir", r"/nodir: no such folder; nothing was copied$"),
    # Operands beyond those a command takes: one wording (review AX7).
    ("cd-too-many", "cd /docs /photos", "cd", "", r"^narnia: error: cd: too many arguments$"),
    ("pwd-too-many", "pwd x", "pwd", "", r"^narnia: error: pwd: too many arguments$"),
    ("tree-too-many", "tree /docs /photos", "tree", "", r"^narnia: error: tree: too many arguments$"),
    ("find-too-many", "find /docs /photos", "find", "", r"^narnia: error: find: too many arguments$"),
    ("lcd-too-many", "lcd HOST HOST", "lcd", "", r"^narnia: error: lcd: too many arguments$"),
    ("exit-with-status", "exit 3", "exit", "", r"^narnia: error: exit: too many arguments$"),
    # An empty name is shown as '' on the host side too, never as "import: : …" (review AX7).
    ("import-empty-host-path", "import ''", "import", "''", r"^narnia: error: import: '': no such file or folder$"),
    ("lcd-empty", "lcd ''", "lcd", "''", r"^narnia: error: lcd: '': no such file or folder$"),
    ("export-to-empty", "export /docs/notes.txt ''", "export", "''", r"^narnia: error: export: '': "),
    ("mv-to-empty", "mv /docs/notes.txt ''", "mv", "''", r"^narnia: error: mv: '': a name cannot be empty$"),
    ("import-stdin-empty-name-shown", "import - ''", "import", "''", r"^narnia: error: import: '': a name cannot be empty$"),
    ("cp-several-to-file", "cp /docs/notes.txt /empty /photos/a.png", "cp", "/photos/a.png", r"/photos/a.png: not a folder; nothing was copied$"),
    # A vault path below a file: "not a folder", as every other command says (review EP-2).
    ("mv-below-a-file", "mv /docs/notes.txt /photos/a.png/b.png", "mv", "/photos/a.png", r"/photos/a.png: not a folder$"),
    ("cp-below-a-file", "cp /docs/notes.txt /photos/a.png/b.png", "cp", "/photos/a.png", r"/photos/a.png: not a folder$"),
    ("mv-deep-below-a-file", "mv /docs/notes.txt /photos/a.png/c/d", "mv", "/photos/a.png", r"/photos/a.png: not a folder$"),
    # Several sources into a folder below a file, and a `..` climbing out of one: the file named.
    ("mv-several-below-a-file", "mv /docs/notes.txt /empty /photos/a.png/c", "mv", "/photos/a.png", r"/photos/a.png: not a folder; nothing was moved$"),
    ("rm-climbing-below-a-file", "rm -r /photos/a.png/c/../x", "rm", "/photos/a.png", r"/photos/a.png: not a folder$"),
    # A host path under a file is "not a folder", as ls(1) says "Not a directory", never
    # "no such folder" (review EC-3).
    ("export-under-a-file", "export /docs/notes.txt HOST/existing.txt/x", "export", "existing.txt", r"existing.txt: not a folder$"),
    ("export-into-a-file-as-folder", "export /docs/notes.txt HOST/existing.txt/", "export", "existing.txt", r"existing.txt: not a folder$"),
    ("lls-under-a-file", "lls HOST/existing.txt/x", "lls", "existing.txt/x", r"existing.txt/x: not a folder$"),
    ("import-under-a-file", "import HOST/existing.txt/x", "import", "existing.txt/x", r"existing.txt/x: not a folder$"),
    ("lmkdir-under-a-file", "lmkdir HOST/existing.txt/x", "lmkdir", "existing.txt", r"existing.txt: not a folder$"),
    ("lmkdir-missing-parent", "lmkdir HOST/nodir/x", "lmkdir", "nodir", r"nodir: no such folder$"),
    # A pattern that names several: all or nothing, and said so (review EC-4).
    ("rm-pattern-with-a-folder", "rm /docs/*", "rm", "/docs/sub", r"/docs/sub: is a folder; nothing was removed$"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input(base, case):
    _, line, cmd, mention, pattern = case
    line = line.replace("HOST", str(base.host))
    store_before = base.store().snapshot()
    tree_before = base.ok("find /").out
    host_before = host_snapshot(base.host)

    r = base.fails(line, cmd)
    errs = [l for l in r.err_lines if l.startswith(f"narnia: error: {cmd}:")]
    if mention:
        assert any(mention in l for l in errs), f"the error should name {mention!r}" + r.describe()
    if pattern:
        assert any(re.search(pattern, l, re.I) for l in errs), f"the error should match /{pattern}/" + r.describe()
    assert len(r.err_lines) <= 3, "one clear error (and perhaps a hint), not a flood" + r.describe()

    assert base.store().snapshot() == store_before, f"`{line}` failed but changed the store"
    assert base.ok("find /").out == tree_before, f"`{line}` failed but changed the vault's tree"
    assert host_snapshot(base.host) == host_before, f"`{line}` failed but changed the host folder"



FUZZ_COMMANDS = ["ls", "ls -l", "ls -a --json", "cd", "stat", "find", "find / -name", "cat",
                 "mkdir -p /fz/", "rm -rf /fz/", "mv /fz/", "cp -r /fz/", "tree", "du", "pwd",
                 "lls", "help", "rmdir /fz/", "export /fz/", "import"]
FUZZ_FRAGMENTS = ["a", "b c", "'", '"', "\\", "'q'", '"d q"', "\\ ", "*", "?", "[", "]", "[!a]",
                  "[^", "{a,b}", "~", "$HOME", ";", "#", "..", ".", "/", "//", "-", "--", "-x",
                  "''", '""', "e\u0301", "\u00e9", "\u0301", "\U0001F600", "\u200b", "\t",
                  "x" * 300, "\u00e9" * 130, "%s", "\\*", "\\'", "'\\''", "a/../b", "\x7f", "ü"]


def test_fuzzed_command_lines_never_crash(base):
    """Random command lines built from quoting, glob, unicode and separator fragments: each is
    either run or refused with exit 0/1 — never a crash, a hang or a stack trace."""
    import random as _random
    rng = _random.Random(4242)
    base.ok("mkdir /fz")
    lines = []
    for _ in range(400):
        words = [rng.choice(FUZZ_COMMANDS)]
        for _ in range(rng.randrange(0, 4)):
            words.append("".join(rng.choice(FUZZ_FRAGMENTS) for _ in range(rng.randrange(1, 4))))
        lines.append(" ".join(words).replace("\n", " "))
    crash_markers = ("Fatal error", "Precondition failed", "Backtracing", "Program crashed",
                     "Stack dump", "Illegal instruction", "Segmentation fault")

    def run(batch_lines):
        f = base.workdir / "fuzz.batch"
        f.write_text("\n".join(batch_lines) + "\n")
        return base("--keep-going", "-b", str(f), timeout=60)

    for start in range(0, len(lines), 100):
        chunk = lines[start:start + 100]
        r = run(chunk)
        if r.rc in (0, 1) and not any(m in r.err for m in crash_markers):
            continue
        for line in chunk:  # find the first line that crashes on its own
            one = run([line])
            assert one.rc in (0, 1) and not any(m in one.err for m in crash_markers), \
                f"narnia crashed on the command line {line!r}" + one.describe()
        pytest.fail(f"a batch of fuzzed lines crashed narnia (rc {r.rc}), no single line did" + r.describe())


def test_read_error_on_a_host_file(base):
    """A host file that cannot be read (here /proc/self/mem, which answers EIO) fails the import
    cleanly: exit 1, a clear error, nothing half-imported, and no crash."""
    store_before = base.store().snapshot()
    tree_before = base.ok("find /").out
    r = base.c("import /proc/self/mem")
    assert r.rc == 1, "an import whose source read fails must exit 1 (not crash)" + r.describe()
    assert any(l.startswith("narnia: error: import: /proc/self/mem") for l in r.err_lines), r.describe()
    assert "Program crashed" not in r.err and "Backtracing" not in r.err, "narnia crashed" + r.describe()
    assert base.ok("find /").out == tree_before, "a failed import left an item behind"
    assert not base.store().layout_problems(), base.store().layout_problems()
    base.ok("pwd")
    assert base.store().snapshot() == store_before, "a failed import left bytes in the store"


def test_write_error_on_stdout(base):
    """cat into a full device: exit 1 with a clear error, no crash."""
    import subprocess
    with open("/dev/full", "wb") as full:
        p = subprocess.run(base.argv(["-c", "cat /docs/notes.txt"]), stdin=subprocess.DEVNULL,
                           stdout=full, stderr=subprocess.PIPE, env=base.env, cwd=base.workdir, timeout=60)
    err = p.stderr.decode(errors="replace")
    assert p.returncode == 1, f"cat into /dev/full must exit 1 (rc {p.returncode}): {err!r}"
    assert "narnia: error: cat:" in err and "Program crashed" not in err, err


def test_host_name_that_is_not_utf8(base, tmp_path):
    """A host file whose name is not UTF-8 cannot keep its name in the vault. It is either
    imported under a valid (repaired) name, or refused with a clear error naming it and a
    non-zero exit, since the import is then partial (with --move the original stays). Leaving it
    out silently with exit 0 is never right."""
    src = tmp_path / "latin1"
    src.mkdir()
    bad = os.path.join(os.fsencode(src), b"caf\xe9.txt")
    with open(bad, "wb") as f:
        f.write(b"latin-1 name")
    (src / "good.txt").write_bytes(b"good")
    r = base.c(f"mkdir /l; cd /l; import --move {q(str(src))}")
    assert "Program crashed" not in r.err, r.describe()
    names = base.ok("ls /l/latin1").out_lines
    imported = [n for n in names if n != "good.txt"]
    if r.rc == 0:
        assert len(imported) == 1, ("import exited 0 but the file with a non-UTF-8 name is not in "
                                    f"the vault (silently left out): {names}" + r.describe())
        assert base.ok(f"cat {q('/l/latin1/' + imported[0])}").outb == b"latin-1 name"
    else:
        assert r.rc == 1, r.describe()
        assert any("caf" in l and l.startswith("narnia: error: import:") for l in r.err_lines), \
            "the error should name the file whose name is not UTF-8" + r.describe()
        assert os.path.exists(bad), "--move removed an original that was not imported"
    assert names.count("good.txt") == 1, "the well-named file is imported either way"


def test_an_argument_that_is_not_utf8_is_refused_not_repaired(base, tmp_path):
    """Swift decodes arguments lossily: `drop - $'bad\\xff'` would have made an item named
    `bad\\u{FFFD}`, and a path would have named another file. Such an argument is a usage error."""
    import subprocess
    argv = [os.fsencode(str(base.binary)), b"--vault", os.fsencode(str(base.vault)), b"drop", b"-", b"bad\xff"]
    p = subprocess.run(argv, input=b"x", capture_output=True, env=base.env)
    assert p.returncode == 2 and b"argument 5 is not valid UTF-8" in p.stderr, p
    assert base.ok("ls -R /").out.count("bad") == 0


def test_a_host_pattern_matching_a_name_that_is_not_utf8_fails_whole(base, tmp_path):
    """Review AQ: `import DIR/*` left out a file whose name is not UTF-8, in silence, and
    exited 0 after a partial import (`import DIR/caf*` said "no match"). The pattern fails
    whole now, naming it; one that matches only UTF-8 names is used as before."""
    folder = tmp_path / "latin1"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "wb") as f:
        f.write(b"x")
    (folder / "good.txt").write_text("g")
    for pattern in ("*", "caf*"):
        r = base.c(f"import {q(str(folder))}/{pattern}")
        assert r.rc == 1 and f"narnia: error: import: {folder}/{pattern}: matches a name that is not valid UTF-8 ({folder}/caf\\xe9.txt), which cannot be named here; none of its matches was used" in r.err_lines, r.describe()
    before = base.ok("ls /").out_lines
    assert "good.txt" not in before
    base.ok(f"import {q(str(folder))}/g*")
    assert base.ok("ls /").out_lines == sorted(before + ["good.txt"])


def test_lls_says_which_names_it_cannot_show(base, tmp_path):
    folder = tmp_path / "latin1"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), b"caf\xe9.txt"), "wb") as f:
        f.write(b"x")
    (folder / "good.txt").write_text("g")
    r = base.ok(f"lls {q(str(folder))}")
    assert r.out_lines == ["good.txt"], r.describe()
    assert f"narnia: warning: lls: {folder}/caf\\xe9.txt: the name is not valid UTF-8; not listed (rename it to import it)" in r.err_lines, r.describe()


def test_of_nfc_and_nfd_twins_the_nfc_one_keeps_its_name(base, tmp_path):
    """Review AR2: a folder holding `café` spelled NFC and NFD imported the NFD one (first in
    byte order) as `café` and the NFC one as `café (2)`: exported, the host file named `café`,
    byte for byte the original NFC name, held the other file's bytes."""
    src = tmp_path / "twins"
    src.mkdir()
    (src / "caf\u00e9").write_text("nfc")
    (src / "cafe\u0301").write_text("nfd")
    base.ok(f"mkdir /t; cd /t; import {q(str(src))}")
    assert base.ok("cat '/t/twins/caf\u00e9'").out == "nfc"
    assert base.ok("cat '/t/twins/caf\u00e9 (2)'").out == "nfd"


def test_an_export_goes_on_past_a_host_folder_it_cannot_make(base, tmp_path):
    """Review AR2 F5: a host folder the export could not make (permission denied) stopped the
    whole export, unsaid: files whose folders could be made were not written. The folder is
    named, the files below it are not tried, the rest is exported, exit 1."""
    src = tmp_path / "top"
    (src / "x").mkdir(parents=True)
    (src / "y" / "sub").mkdir(parents=True)
    (src / "x" / "file1").write_text("1")
    (src / "y" / "sub" / "file2").write_text("2")
    (src / "z").write_text("3")
    base.ok(f"mkdir /e; cd /e; import {q(str(src))}")
    closed = tmp_path / "out" / "top" / "y"
    closed.mkdir(parents=True)
    # Closed to the user: by its mode, or for root (whom modes do not stop) made immutable.
    immutable = os.geteuid() == 0
    if immutable:
        subprocess.run(["chattr", "+i", str(closed)], check=True)
    else:
        closed.chmod(0o555)
    try:
        r = base.c(f"export /e/top {q(str(tmp_path / 'out'))}")
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(closed)], check=True)
        closed.chmod(0o755)
    assert r.rc == 1 and f"narnia: error: export: {closed}/sub: " in r.err, r.describe()
    assert (tmp_path / "out" / "top" / "z").read_text() == "3"
    assert (tmp_path / "out" / "top" / "x" / "file1").read_text() == "1"
    assert not (closed / "sub").exists()


def test_import_skip_existing_finds_each_twin_where_it_went(base, tmp_path):
    """Review AR2: with `--skip-existing`, the NFD twin, numbered `café (2)` at the first
    import, was compared again with `café` (the NFC one's copy) and imported anew at every
    run; twin folders merged into one."""
    src = tmp_path / "twins"
    (src / "caf\u00e9").mkdir(parents=True)
    (src / "cafe\u0301").mkdir()
    (src / "caf\u00e9" / "x").write_text("nfc folder")
    (src / "cafe\u0301" / "x").write_text("nfd folder!")
    (src / "caf\u00e9.txt").write_text("nfc")
    (src / "cafe\u0301.txt").write_text("nfd, longer")
    base.ok(f"mkdir /t; cd /t; import {q(str(src))}")
    before = base.ok("find /t").out_lines
    r = base.ok(f"cd /t; import --skip-existing {q(str(src))}")
    assert "imported" not in r.out, r.describe()
    assert base.ok("find /t").out_lines == before
    assert base.ok("cat '/t/twins/caf\u00e9 (2).txt'").out == "nfd, longer"
    assert base.ok("cat '/t/twins/caf\u00e9 (2)/x'").out == "nfd folder!"


def test_import_skip_existing_finds_a_twin_added_after_the_first_import(base, tmp_path):
    """Review AU: the NFC twin added after the NFD one was imported went to `café (2).txt`;
    each run after looked at `café.txt` alone (the other twin's copy) and imported it anew,
    as `café (3).txt`, `café (4).txt`…"""
    src = tmp_path / "src"
    src.mkdir()
    (src / "cafe\u0301.txt").write_text("nfd, first")
    base.ok(f"mkdir /t; cd /t; import {q(str(src))}")
    (src / "caf\u00e9.txt").write_text("nfc twin, added later")
    for _ in range(3):
        base.ok(f"cd /t; import --skip-existing {q(str(src))}")
    assert sorted(base.ok("ls /t/src").out_lines) == ["caf\u00e9 (2).txt", "caf\u00e9.txt"]
    assert base.ok("cat '/t/src/caf\u00e9 (2).txt'").out == "nfc twin, added later"


@pytest.mark.parametrize("force", ["", "-f "])
def test_export_refused_by_what_is_in_the_way_says_nothing_was_exported(base, tmp_path, force):
    """Review AR2: `export -f` of a folder where one file met a host folder of its name
    exported nothing, rightly, but did not say so; a file where a folder goes was the same."""
    (tmp_path / "a").write_text("a")
    (tmp_path / "b").write_text("b")
    base.ok(f"mkdir -p /d/sub; cd /d; import {q(str(tmp_path / 'a'))} {q(str(tmp_path / 'b'))}")
    dest = tmp_path / "dest"
    (dest / "d" / "a").mkdir(parents=True)
    (dest / "d" / "sub").write_text("a file where a folder goes")
    base.ok("mkdir -p /d/sub/deeper/deepest")
    r = base.fails(f"export {force}/d {q(str(dest))}", "export")
    assert r.err_lines.count(f"narnia: error: export: {dest}/d/sub: exists and is not a folder") == 1, \
        "said once, not again for each folder below it (review AU)" + r.describe()
    assert r.err_lines[-1].startswith("narnia: hint: nothing was exported"), r.describe()
    (dest / "d" / "sub").unlink()
    r = base.fails(f"export {force}/d {q(str(dest))}", "export")
    assert f"narnia: error: export: {dest}/d/a: a folder is in the way" in r.err_lines, r.describe()
    assert r.err_lines[-1].startswith("narnia: hint: nothing was exported"), r.describe()
    assert sorted(p.name for p in (dest / "d").iterdir()) == ["a"]


def test_a_pipe_typed_in_the_vault_shell_gets_a_hint(base):
    """`ls | head` looked for files `|` and `head` and said only that; a newcomer from bash is
    told the vault shell has no pipes (review AX7). A quoted `'|'` is a name, without the hint."""
    r = base.fails("cat /docs/notes.txt | head", "cat")
    assert r.err_lines[-1].startswith("narnia: hint: the vault shell has no pipes or redirections ('|')"), r.describe()
    r = base.fails("ls '|'", "ls")
    assert not any("pipes" in l for l in r.err_lines), r.describe()


def test_an_unclosed_quote_is_refused_with_how_to_close_it(base):
    r = base.c("ls \"/docs")
    assert r.rc == 1 and r.err_lines[-2:] == ["narnia: error: unterminated quote: a \" is never closed",
                                              "narnia: hint: close it with a \""], r.describe()


def test_a_home_that_is_not_utf8_is_refused_not_read_as_another_folder(base, tmp_path):
    """With `--vault` given, a HOME holding a byte that is not UTF-8 reached the session
    decoded lossily: `lcd` and `~/…` went to the folder whose name has U+FFFD there, and
    `export` wrote into it (review BC-3). They are refused; a path without `~` still works."""
    home = os.fsencode(str(tmp_path)) + b"/home\xff"
    twin = tmp_path / "home\ufffd"
    os.mkdir(home)
    twin.mkdir()
    env = {**base.env, "HOME": os.fsdecode(home)}
    r = base.fails("lcd", "lcd", env=env)
    assert "$HOME is not valid UTF-8" in r.err, r.describe()
    r = base.fails("export /docs/notes.txt ~/exported.txt", "export", env=env)
    assert "$HOME is not valid UTF-8" in r.err, r.describe()
    assert os.listdir(home) == [] and list(twin.iterdir()) == []
    base.ok(f"export /docs/notes.txt {q(str(tmp_path / 'plain.txt'))}", env=env)


def test_sync_expands_a_folder_s_wildcards_and_takes_a_leading_dash_as_a_name(base, tmp_path):
    """`sync backup*` made a folder named `backup*` beside `backup 2024` (review BC-6), and
    `sync \\-backup` handed `-backup` to rclone as options (review BC-4)."""
    (tmp_path / "backup 2024").mkdir()
    (tmp_path / "-backup").mkdir()
    base.ok("sync backup*", cwd=tmp_path)
    assert not (tmp_path / "backup*").exists() and any((tmp_path / "backup 2024").iterdir())
    base.ok("sync \\-backup", cwd=tmp_path)
    assert any((tmp_path / "-backup").iterdir())
    r = base.fails("sync nomatch*", "sync", cwd=tmp_path)
    assert "nomatch*: no match" in r.err, r.describe()
    r = base.fails("sync remote:photos*", "sync", cwd=tmp_path)
    assert r.err_lines[-1] == "narnia: hint: a remote's path is taken as it is: quote the * ? [ in it, as in 'remote:photos*'", r.describe()
    (tmp_path / "backup 2025").mkdir()
    r = base.fails("sync backup*", "sync", cwd=tmp_path)
    assert "names more than one folder" in r.err, r.describe()


def test_a_current_folder_whose_path_is_not_utf8_is_refused_not_renamed(base, tmp_path):
    """Review BD-4: a working directory whose path is not UTF-8 was read lossily (U+FFFD) and
    used as a path: `export` without a destination and a relative `--vault` wrote into a new
    folder `caf\\uFFFD` beside it. Narnia refuses to start there, as for such a $HOME, and `lcd`
    refuses a link to such a folder."""
    odd = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.mkdir(odd)
    r = subprocess.run(base.argv(["-c", "export /docs/notes.txt"]), cwd=odd, env=base.env, capture_output=True)
    assert r.returncode == 2 and b"the current folder's path is not valid UTF-8" in r.stderr, r
    assert os.listdir(odd) == []
    assert not [n for n in os.listdir(tmp_path) if "\ufffd" in n], "no folder named with U+FFFD"
    os.symlink(odd, tmp_path / "link")
    r = base.c(f"-lcd {q(str(tmp_path / 'link'))}; lpwd", cwd=tmp_path)
    assert r.out_lines == [str(tmp_path)], r.describe()
    assert f"lcd: {tmp_path / 'link'}: its real path is not valid UTF-8" in r.err, r.describe()


def test_a_word_holding_a_nul_character_is_refused(base, tmp_path):
    """Review BD-5: `$'\\x00'` put a NUL into a host path, which the system cut there: `export`
    said it wrote `new.txt\\x00.bak` and wrote `new.txt`."""
    out = tmp_path / "out"
    out.mkdir()
    r = base.c(f"export /docs/notes.txt $'{out}/new.txt\\x00.bak'")
    assert r.rc == 1 and "a word holds a NUL character, which no name or path can" in r.err, r.describe()
    assert list(out.iterdir()) == []


def test_a_current_host_folder_removed_after_start_is_said_not_taken_for_the_root(base, tmp_path):
    """Review BE-7: once the working folder was removed (or renamed to a name that is not
    UTF-8) while narnia ran, `/` stood for it: `lpwd` said `/` and `export` without a
    destination wrote into the root folder."""
    work = tmp_path / "work"
    work.mkdir()
    p = base.popen("-b", "-", cwd=work, stdin=subprocess.PIPE)
    p.stdin.write(b"lpwd\n")
    p.stdin.flush()
    deadline = time.monotonic() + 60
    while p.stdout.readline().strip() != str(work).encode():
        assert time.monotonic() < deadline and p.poll() is None, "lpwd did not answer"
    work.rmdir()
    out, err = p.communicate(b"-lpwd\nexport /docs/notes.txt\n", timeout=60)
    assert p.returncode == 1, (out, err)
    assert b"the current host folder was removed, or its path is no longer valid UTF-8" in err, err
    assert not os.path.exists("/notes.txt")


def test_files_dated_beyond_what_nanoseconds_hold_are_taken_with_the_nearest_date(base, tmp_path):
    """Review BK-1: `import`, `drop` and `lls -l` of a file dated 2300 (ext4 holds 1901 to 2446)
    stopped the program with a signal (exit 70): the nanoseconds overflowed. Such a time is held
    to 2262-04-11, the latest a vault holds; a file dated before 1970, between two seconds, comes
    back out with its date to the nanosecond (futimens refused the negative nanoseconds)."""
    src = tmp_path / "dated"
    src.mkdir()
    for name, date in [("a.txt", None), ("future.txt", "2300-01-01 00:00:00"), ("old.txt", "1905-06-01 12:00:00.5")]:
        (src / name).write_text(name)
        if date:
            subprocess.run(["touch", "-d", date, str(src / name)], check=True, env={**os.environ, "TZ": "UTC"})
    old_ns = (src / "old.txt").stat().st_mtime_ns
    r = base.ok(f"lls -l {q(str(src))}")
    assert any(l.endswith(" future.txt") and "2262" in l for l in r.out_lines), r.describe()
    r = base("drop", str(src), passphrase=None)
    assert r.rc == 0 and "dropped" in r.out, r.describe()
    r = base.ok(f"mkdir /d; cd /d; import --keep {q(str(src))}; ls -l /d/dated; stat /d/dated/future.txt")
    assert any(l.endswith(" future.txt") and "2262" in l for l in r.out_lines), r.describe()
    assert "modified: 2262-04-11T23:47:16Z" in r.out_lines, r.describe()
    assert sorted(base.ok("ls /Inbox/dated").out_lines) == ["a.txt", "future.txt", "old.txt"]
    out = tmp_path / "out"
    out.mkdir()
    base.ok(f"export /d/dated {q(str(out))}")
    assert (out / "dated" / "old.txt").stat().st_mtime_ns == old_ns, "a date before 1970 comes back whole"
    assert (out / "dated" / "future.txt").stat().st_mtime_ns == 2**63 - 1


@pytest.mark.parametrize("clock", ["2300-01-01 00:00:00", "1677-09-21 12:00:00"])
def test_a_clock_beyond_what_nanoseconds_hold_stops_nothing(base, tmp_path, clock):
    """Review BL-3: with the system clock past 2262-04-11 every command stopped with a signal
    (exit 70), drop included; within a day of 1677-09-21, so did opening. The clock is held to
    the ends as file times are."""
    (tmp_path / "note.txt").write_text("note")
    wrap = {"wrapper": ["faketime", clock], "env": {**base.env, "NO_FAKE_STAT": "1"}}
    r = base("drop", str(tmp_path / "note.txt"), passphrase=None, **wrap)
    assert r.rc == 0, r.describe()
    r = base.c("mkdir /then; ls -l /", **wrap)
    assert r.rc == 0 and "then" in r.out, r.describe()
    r = base.ok("ls /; ls /Inbox")
    assert "then" in r.out_lines and "note.txt" in r.out_lines, r.describe()


def test_closed_standard_descriptors_neither_hang_nor_end_the_run(vault):
    """Review CB-3: with standard input closed, the signal watcher's pipe took its number and
    `import -` waited on it for ever; with standard output and error closed, the first
    warning went into that pipe and ended the run 2 s later with status 128."""
    argv = vault.argv(["-c", "import - empty.txt"])
    r = subprocess.run(argv, preexec_fn=lambda: os.close(0), capture_output=False, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=vault.env, cwd=str(vault.workdir), timeout=30)
    # A closed standard input is refused, as `cat <&-` refuses it: it went in as an empty item.
    assert r.returncode == 1 and b"standard input is closed" in r.stderr, r
    argv = vault.argv(["-c", "mkdir /a"])
    r = subprocess.run(argv, preexec_fn=lambda: (os.close(1), os.close(2)), env=vault.env, cwd=str(vault.workdir), timeout=30)
    assert r.returncode == 0, r
    assert vault.ok("ls /").out_lines == ["a"]
    # Review DC-7: what goes to a closed standard output is lost, so the run fails, as
    # coreutils' `cat f >&-` does (`cat` wrote the content into /dev/null, exit 0).
    vault.ok("cd /a; import - f.txt", input=b"content")
    for argv in (["-c", "cat /a/f.txt"], ["-c", "ls /"], ["--version"]):   # --version: review DD-4
        r = subprocess.run(vault.argv(argv), preexec_fn=lambda: os.close(1), stderr=subprocess.PIPE,
                           env=vault.env, cwd=str(vault.workdir), timeout=30)
        assert r.returncode == 1 and b"standard output is closed" in r.stderr, (argv, r)
    inbox = vault.argv(["drop", "-", "empty.txt"])
    r = subprocess.run(inbox, preexec_fn=lambda: os.close(0), capture_output=True, env=vault.env, cwd=str(vault.workdir), timeout=30)
    assert r.returncode == 1 and r.stderr.decode().startswith("narnia: error: drop: -: standard input is closed"), r

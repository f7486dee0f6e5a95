"""Each command and flag of docs/INTERFACE.md, with its documented output (not on a terminal):
ls -l/-a/--json, cd/cd -, pwd, tree, mkdir -p, import (--move, -, keep-both numbering,
symlinks, special files), export (--force, folders), cat, rm -r -f, rmdir, mv, cp -r, find,
stat, du, lcd/lpwd/lls, set, help, exit, --version, --help, and globs on both sides."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import random
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import unicodedata
from pathlib import Path

import pytest

from corpus import GIF_1X1, MIB, jpeg_gray_8x8, mp4, pdf, png, text_lines
from harness import DEFAULT_PASSPHRASE, Narnia, object_size, q, tree_files

rng = random.Random(5)
PNG_A = png(20, 10, rng)
PNG_C = png(12, 12, rng, noise=True)
JPG_B = jpeg_gray_8x8()
PDF = pdf("stat me")
NOTES = text_lines(rng, 50, "notes")
OTHER = rng.randbytes(5000)
CLIP = mp4()

SAMPLE = {
    "photos/a.png": PNG_A,
    "photos/b.jpg": JPG_B,
    "photos/2024/c.png": PNG_C,
    "docs/report.pdf": PDF,
    "docs/notes.txt": NOTES,
    "videos/clip.mp4": CLIP,
    "other.bin": OTHER,
}

ROOT_LS = ["docs", "empty", "other.bin", "photos", "videos"]
LS_L_RE = re.compile(r"^(folder|photo|video|document|other) +(-|\d+) (\d{4}-\d\d-\d\d \d\d:\d\d) (.+)$")
ISO_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def write_tree(root: Path, files: dict[str, bytes]):
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


@pytest.fixture
def sample(vault, host) -> Narnia:
    """/photos/{a.png,b.jpg,2024/c.png} /docs/{report.pdf,notes.txt} /videos/clip.mp4
    /other.bin and an empty folder /empty."""
    src = host / "sample"
    write_tree(src, SAMPLE)
    vault.ok(f"import {q(str(src / 'photos'))} {q(str(src / 'docs'))} {q(str(src / 'videos'))} "
             f"{q(str(src / 'other.bin'))}; mkdir /empty")
    return vault


def find_all(n: Narnia, path="/") -> list[str]:
    return n.ok(f"find {q(path)}").out_lines


# ---------------------------------------------------------------------------------------------
# ls


def test_ls_plain(sample):
    assert sample.ok("ls /").out_lines == ROOT_LS, "ls / should list names sorted, one per line"
    assert sample.ok("ls").out_lines == ROOT_LS, "ls with no argument lists the current folder (/)"
    assert sample.ok("ls /photos").out_lines == ["2024", "a.png", "b.jpg"]
    assert sample.ok("ls /photos/a.png").out_lines == ["a.png"], "ls of a file prints its name"
    assert sample.ok("cd /photos; ls 2024").out_lines == ["c.png"], "relative paths"
    assert sample.ok("cd /photos/2024; ls ..").out_lines == ["2024", "a.png", "b.jpg"], "`..`"
    assert sample.ok("cd /photos/2024; ls ../../docs/./").out_lines == ["notes.txt", "report.pdf"]


def test_ls_sort_is_byte_order(vault):
    names = ["b", "B", "a", "_x", "Zebra", "äpfel", "10", "9", "a b"]
    vault.ok("; ".join(f"mkdir {q('/' + n)}" for n in names))
    expected = sorted(names, key=lambda s: unicodedata.normalize("NFC", s).encode())
    assert vault.ok("ls /").out_lines == expected, "ls sorts by byte order of the NFC UTF-8 name"


def test_ls_several_paths(sample):
    r = sample.ok("ls /docs /photos")
    assert r.out_lines == ["/docs:", "notes.txt", "report.pdf", "", "/photos:", "2024", "a.png", "b.jpg"], \
        "several PATHs: `PATH:` headers and a blank line between, like coreutils" + r.describe()


def test_ls_of_files_in_several_folders_shows_their_paths(sample):
    """Review AJ: `ls /*/*.png` listed bare names, which did not say which folder each was in;
    files of one folder are still listed by name."""
    r = sample.ok("ls /photos/*.png /photos/2024/*.png")
    assert r.out_lines == ["/photos/2024/c.png", "/photos/a.png"], r.describe()
    r = sample.ok("ls -l /photos/a.png /docs/notes.txt")
    assert [l.split()[-1] for l in r.out_lines] == ["/docs/notes.txt", "/photos/a.png"], r.describe()
    assert sample.ok("ls /photos/*.*").out_lines == ["a.png", "b.jpg"]


def test_ls_d_lists_folders_themselves(sample):
    """Review AX7: `ls -d` (`ls -ld /photos`, as coreutils and sftp users type) was refused as
    an unknown option. A folder named is listed as a file is, not its items."""
    assert sample.ok("ls -d /photos").out_lines == ["photos"]
    assert sample.ok("cd /photos; ls -d").out_lines == ["photos"], "the current folder by default"
    r = sample.ok("ls -ld /photos /docs/notes.txt /")
    assert [LS_L_RE.match(l).group(1, 2, 4) for l in r.out_lines] == [
        ("folder", "-", "/"), ("document", str(len(NOTES)), "/docs/notes.txt"), ("folder", "-", "/photos")], r.describe()
    assert sample.ok("ls -dR /photos").out_lines == ["photos"], "-d lists no folder below"
    root = json.loads(sample.ok("ls -d --json /").out)
    assert {k: v for k, v in root.items() if k != "modified"} == {"name": "/", "path": "/", "type": "folder", "kind": "folder"}
    assert ISO_RE.match(root["modified"]), root
    sample.fails("ls -d /nothing", "ls")


def test_ls_a_shows_dot_names(sample, host):
    (host / ".hidden").write_bytes(b"x")
    sample.ok(f"cd /docs; import {q(str(host / '.hidden'))}")
    assert sample.ok("ls /docs").out_lines == ["notes.txt", "report.pdf"], "dot names are hidden without -a"
    assert sample.ok("ls -a /docs").out_lines == [".hidden", "notes.txt", "report.pdf"], \
        "ls -a shows names starting with a dot"


def test_ls_l(sample):
    r = sample.ok("ls -l /")
    lines = r.out_lines
    assert len(lines) == len(ROOT_LS), "ls -l prints one line per item" + r.describe()
    parsed = []
    for l in lines:
        m = LS_L_RE.match(l)
        assert m, f"ls -l line {l!r} does not match `KIND SIZE YYYY-MM-DD HH:MM NAME`"
        parsed.append(m.groups())
    assert [p[3] for p in parsed] == ROOT_LS, "ls -l keeps the name order"
    kinds = {p[3]: p[0] for p in parsed}
    sizes = {p[3]: p[1] for p in parsed}
    assert kinds == {"docs": "folder", "empty": "folder", "other.bin": "other", "photos": "folder",
                     "videos": "folder"}, f"ls -l kinds: {kinds}"
    assert sizes["docs"] == "-" and sizes["photos"] == "-", "a folder's SIZE is `-`"
    assert sizes["other.bin"] == str(len(OTHER)), "SIZE is in bytes when not on a terminal"
    date_cols = {l.index(m.group(3)) for l in lines if (m := LS_L_RE.match(l))}
    assert len(date_cols) == 1, f"ls -l columns are not aligned (SIZE right-aligned): {lines}"
    r = sample.ok("ls -l /photos /docs /videos")
    kinds = {m.group(4): m.group(1) for l in r.out_lines if (m := LS_L_RE.match(l))}
    assert kinds == {"2024": "folder", "a.png": "photo", "b.jpg": "photo", "notes.txt": "document",
                     "report.pdf": "document", "clip.mp4": "video"}, f"ls -l kinds by type: {kinds}"


def test_ls_json(sample):
    expected = {
        "/photos/a.png": ("photo", "image/png", len(PNG_A)),
        "/photos/b.jpg": ("photo", "image/jpeg", len(JPG_B)),
        "/docs/report.pdf": ("document", "application/pdf", len(PDF)),
        "/docs/notes.txt": ("document", "text/plain", len(NOTES)),
        "/videos/clip.mp4": ("video", "video/mp4", len(CLIP)),
        "/other.bin": ("other", "application/octet-stream", len(OTHER)),
    }
    by_path = {}
    for folder in ("/photos", "/docs", "/videos", "/"):
        r = sample.ok(f"ls --json {folder}")
        for l in r.out_lines:
            try:
                o = json.loads(l)
            except ValueError:
                pytest.fail(f"ls --json printed a line that is not a JSON object: {l!r}" + r.describe())
            by_path[o["path"]] = o
    for path, (kind, mime, size) in expected.items():
        o = by_path.get(path)
        assert o is not None, f"ls --json gave no object for {path}: {sorted(by_path)}"
        assert o["name"] == path.rsplit("/", 1)[1] and o["type"] == "file", f"{path}: {o}"
        assert o["kind"] == kind, f"{path}: kind {o['kind']!r}, expected {kind!r}"
        assert o["mime"] == mime, f"{path}: mime {o['mime']!r}, expected {mime!r}"
        assert o["size"] == size, f"{path}: size {o['size']!r}, expected {size}"
        assert ISO_RE.match(o["modified"]), f"{path}: modified {o['modified']!r} is not ISO 8601 UTC"
    folder = by_path.get("/photos/2024")
    assert folder and folder["type"] == "folder" and folder["kind"] == "folder", f"folder object: {folder}"
    assert "mime" not in folder and "size" not in folder, "folders have no mime/size in --json"


def test_ls_json_several_paths_is_still_json_lines(sample):
    r = sample.ok("ls --json /photos /docs /other.bin")
    bad = [l for l in r.out_lines if not (l.startswith("{") and l.endswith("}"))]
    assert not bad, ("ls --json gives one JSON object per line for scripts, also with several "
                     f"PATHs (no headers or blank lines): {bad}" + r.describe())
    paths = sorted(json.loads(l)["path"] for l in r.out_lines)
    assert paths == ["/docs/notes.txt", "/docs/report.pdf", "/other.bin", "/photos/2024",
                     "/photos/a.png", "/photos/b.jpg"], r.describe()


# ---------------------------------------------------------------------------------------------
# cd, pwd, tree, mkdir


def test_cd_and_pwd(sample):
    assert sample.ok("pwd").out == "/\n"
    assert sample.ok("cd /photos/2024; pwd").out == "/photos/2024\n"
    assert sample.ok("cd /photos/2024; cd ..; pwd").out == "/photos\n"
    assert sample.ok("cd /photos; cd; pwd").out == "/\n", "cd with no argument goes to /"
    r = sample.ok("cd /docs; cd /photos/2024; cd -; pwd")
    assert r.out == "/docs\n", "cd - returns to the previous folder (cd itself is silent)" + r.describe()
    r = sample.ok("cd /docs; cd /photos; cd -; cd -; pwd")
    assert r.out == "/photos\n", "cd - twice swaps back" + r.describe()
    sample.fails("cd /photos/a.png", "cd")
    # Review CN-4: `cd -` to a folder removed since said "not a folder".
    r = sample.c("mkdir /gone; cd /gone; cd /; rm -r /gone; cd -")
    assert r.rc == 1 and r.err_lines[-1] == "narnia: error: cd: /gone: no such folder", r.describe()


def test_tree(sample):
    r = sample.ok("tree /")
    assert r.out_lines == [
        "/",
        "├── docs/",
        "│   ├── notes.txt",
        "│   └── report.pdf",
        "├── empty/",
        "├── other.bin",
        "├── photos/",
        "│   ├── 2024/",
        "│   │   └── c.png",
        "│   ├── a.png",
        "│   └── b.jpg",
        "└── videos/",
        "    └── clip.mp4",
    ], "tree / output" + r.describe()
    r = sample.ok("tree /photos")
    assert r.out_lines[0] in ("photos", "photos/"), "tree PATH starts with the folder's name" + r.describe()
    assert r.out_lines[1:] == ["├── 2024/", "│   └── c.png", "├── a.png", "└── b.jpg"], r.describe()
    r = sample.ok("cd /photos; tree")
    assert r.out_lines[1:] == ["├── 2024/", "│   └── c.png", "├── a.png", "└── b.jpg"], \
        "tree without PATH shows the current folder" + r.describe()


def test_mkdir(vault):
    vault.ok("mkdir /a /b")
    assert vault.ok("ls /").out_lines == ["a", "b"], "mkdir takes several paths"
    vault.ok("mkdir -p /a/x/y/z")
    assert find_all(vault) == ["/a", "/a/x", "/a/x/y", "/a/x/y/z", "/b"], "mkdir -p makes parents"
    r = vault.ok("mkdir -p /a/x/y/z")
    assert r.out == "", "mkdir -p of an existing folder succeeds silently"
    vault.fails("mkdir /c/d", "mkdir")
    assert find_all(vault) == ["/a", "/a/x", "/a/x/y", "/a/x/y/z", "/b"], "failed mkdir changed the tree"
    vault.fails("mkdir /a", "mkdir")
    vault.ok("cd /b; mkdir rel; cd rel; mkdir ../rel2")
    assert vault.ok("ls /b").out_lines == ["rel", "rel2"], "mkdir with relative paths"


# ---------------------------------------------------------------------------------------------
# import


def test_import_file_line_and_target(vault, host):
    f = host / "one.txt"
    f.write_bytes(b"one\n")
    vault.ok("mkdir /in")
    r = vault.ok(f"cd /in; import {q(str(f))}")
    assert r.out_lines == [f"imported {f} -> /in/one.txt"], \
        "import prints `imported HOSTPATH -> VAULTPATH` and imports into the current folder" + r.describe()
    assert vault.ok("cat /in/one.txt").outb == b"one\n"


def test_import_folder_recursively(vault, host):
    tree = {"top/a.txt": b"a", "top/sub/b.txt": b"b", "top/sub/deeper/c.txt": b"c"}
    write_tree(host, tree)
    (host / "top/empty").mkdir()
    r = vault.ok(f"import {q(str(host / 'top'))}")
    paths = sorted(l.split(" -> ")[1] for l in r.out_lines if l.startswith("imported "))
    assert {"/top/a.txt", "/top/sub/b.txt", "/top/sub/deeper/c.txt"} <= set(paths), r.describe()
    assert find_all(vault) == ["/top", "/top/a.txt", "/top/empty", "/top/sub", "/top/sub/b.txt",
                               "/top/sub/deeper", "/top/sub/deeper/c.txt"], "folder import is recursive"


def test_import_move(vault, host):
    f = host / "moveme.bin"
    data = os.urandom(70_000)
    f.write_bytes(data)
    d = host / "movedir"
    write_tree(d, {"x.txt": b"x", "sub/y.txt": b"y"})
    r = vault.ok(f"import --move {q(str(f))} {q(str(d))}")
    assert not f.exists(), "import --move must remove the original" + r.describe()
    assert not (d / "x.txt").exists() and not (d / "sub/y.txt").exists(), \
        "import --move of a folder removes the original files"
    assert vault.ok("cat /moveme.bin").outb == data, "the moved file is intact in the vault"
    assert vault.ok("cat /movedir/sub/y.txt").outb == b"y"


def test_import_move_of_many_files_reports_and_removes_each_once(vault, host):
    """2,100 files: more than one commit's 2,000, and a commit in the middle of an import
    leaves its last files for the next one. Each file is reported once and its original
    removed."""
    d = host / "many"
    write_tree(d, {f"f{i:04d}.txt": f"file {i}\n".encode() for i in range(2100)})
    r = vault.ok(f"import --move {q(str(d))}")
    imported = [l.split(" -> ")[1] for l in r.out_lines if l.startswith("imported ")]
    assert len(imported) == 2100 and len(set(imported)) == 2100, r.describe()
    assert not d.exists(), "every original and then the folder are removed"
    listed = vault.ok("ls /many").out_lines
    assert sorted(listed) == sorted(p.rsplit("/", 1)[1] for p in imported)
    assert vault.ok("cat /many/f1999.txt /many/f2099.txt").out == "file 1999\nfile 2099\n"


@contextlib.contextmanager
def removal_refused(folder: Path, entry: Path | None = None):
    """Makes removing `entry` (or what `folder` holds) fail while in the block: as root,
    `entry` (or `folder`) is made immutable (chattr +i; skipped where it is not available),
    as an ordinary user `folder` is made read-only."""
    if os.geteuid() == 0:
        target = entry or folder
        if subprocess.run(["chattr", "+i", str(target)], capture_output=True).returncode != 0:
            pytest.skip("running as root and chattr +i is not available: cannot make removal fail")
        undo = ["chattr", "-i", str(target)]
    else:
        os.chmod(folder, 0o555)
        undo = ["chmod", "755", str(folder)]
    try:
        yield
    finally:
        subprocess.run(undo, capture_output=True)


def test_import_move_unremovable_original_is_kept_with_warning(vault, host):
    d = host / "locked"
    d.mkdir()
    f = d / "stuck.txt"
    f.write_bytes(b"stuck")
    with removal_refused(d, f):
        r = vault.c(f"import --move {q(str(f))}")
    assert r.rc == 0, "an original that cannot be removed is kept; the import still succeeds" + r.describe()
    assert f.read_bytes() == b"stuck", "the original must be kept"
    prefix = f"narnia: warning: import: {f}: could not remove the original: "
    assert any(l.startswith(prefix) for l in r.err_lines), f"expected `{prefix}WHY`" + r.describe()
    assert vault.ok("cat /stuck.txt").outb == b"stuck"


def test_import_move_keeps_the_passphrase_file_and_the_batch_file_the_run_was_opened_with(vault, host):
    """Review BG-8: `narnia --passphrase-file docs/pass.txt -c 'import --move docs'` took the
    passphrase file in and removed it: if it was the only place the passphrase was written, it
    was now only inside the vault it unlocks. It is imported, and kept with a warning; so is
    the batch file of `-b`."""
    docs = host / "docs"
    docs.mkdir()
    (docs / "report.txt").write_text("report\n")
    passphrase_file = vault.passphrase_file(DEFAULT_PASSPHRASE)
    moved = docs / "pass.txt"
    os.link(passphrase_file, moved)   # another name of the file the run is opened with
    batch = docs / "run.nb"
    batch.write_text(f"import --move {q(str(docs))}\n")
    r = vault("-b", str(batch))
    assert r.rc == 0, r.describe()
    assert f"narnia: warning: {batch}:1: import: {moved}: the original is kept: it is the passphrase file this run was opened with" in r.err_lines, r.describe()
    assert f"narnia: warning: {batch}:1: import: {batch}: the original is kept: it is the batch file this run reads" in r.err_lines, r.describe()
    assert sorted(p.name for p in docs.iterdir()) == ["pass.txt", "run.nb"]
    assert vault.ok("ls /docs").out_lines == ["pass.txt", "report.txt", "run.nb"]
    # Review BH-2: the same for --passphrase-fd reading a file, and for the file a passwd of
    # the same run took the new passphrase from.
    (docs / "report.txt").write_text("report\n")
    new = docs / "new-pass.txt"
    new.write_text("a new passphrase\n")
    with open(passphrase_file, "rb") as given:
        r = vault("--passphrase-fd", str(given.fileno()), "-c",
                  f"mkdir /again; cd /again; passwd --new-passphrase-file {q(str(new))}; import --move {q(str(docs))}",
                  passphrase=None, pass_fds=(given.fileno(),))
    assert r.rc == 0, r.describe()
    assert f"narnia: warning: import: {moved}: the original is kept: it is the passphrase file this run was opened with (--passphrase-fd)" in r.err_lines, r.describe()
    assert f"narnia: warning: import: {new}: the original is kept: it is the file passwd took this vault's passphrase from" in r.err_lines, r.describe()
    assert sorted(p.name for p in docs.iterdir()) == ["new-pass.txt", "pass.txt"]   # run.nb went: this run was not reading it
    # Review BI-2: a batch file on standard input (`narnia < FILE`) is kept too.
    batch.write_text(f"mkdir /third; cd /third; import --move {q(str(docs))}\n")
    with open(batch, "rb") as commands:
        r = subprocess.run(vault.argv([], passphrase="a new passphrase"), stdin=commands, capture_output=True, env=vault.env)
    assert r.returncode == 0 and batch.exists(), r
    assert f"the original is kept: it is the batch file this run reads (on standard input)" in r.stderr.decode(), r


def test_a_host_path_named_twice_is_imported_once(vault, host):
    """Review BG-6: `import --move b b` made /b and /b (2), then warned that the original was
    missing. Two names of one file (hard links) are two files, as in a folder walked (BJ-2)."""
    (host / "b").write_text("b")
    os.link(host / "b", host / "b-link")
    r = vault.c(f"import --move {q(str(host / 'b'))} {q(str(host / 'b'))} {q(str(host / 'b-link'))} {q(str(host) + '/./b')}")
    assert r.rc == 0, r.describe()
    assert [l for l in r.err_lines if "warning: import" in l] == [
        f"narnia: warning: import: {host / 'b'}: named before; imported once",
        f"narnia: warning: import: {host}/./b: named before; imported once"], r.describe()
    assert vault.ok("ls /").out_lines == ["b", "b-link"]
    assert not (host / "b").exists() and not (host / "b-link").exists()
    # A file or folder inside a folder also named (either order): imported with it, once.
    (host / "d" / "sub").mkdir(parents=True)
    (host / "d" / "sub" / "x").write_text("x")
    vault.ok("mkdir /in; mkdir /in2")
    for i, order in enumerate((f"{host / 'd' / 'sub' / 'x'} {host / 'd'}", f"{host / 'd'} {host / 'd' / 'sub'}")):
        folder = f"/in{'2' if i else ''}"
        r = vault.c(f"cd {folder}; import --keep {order}; find {folder}")
        inner = host / "d" / "sub" / ("x" if i == 0 else "")
        assert r.rc == 0 and f"narnia: warning: import: {str(inner).rstrip('/')}: inside {host / 'd'}, also named; imported with it, once" in r.err_lines, r.describe()
        assert r.out_lines[-3:] == [f"{folder}/d", f"{folder}/d/sub", f"{folder}/d/sub/x"], r.describe()


def test_a_host_file_named_through_a_bind_mount_too_is_imported_once(vault, host):
    """Review CB-5: a file named by its path and through a bind mount of its folder was
    imported twice (`f` and `f (2)`), and --move then warned it could not remove the second."""
    (host / "src").mkdir()
    (host / "src" / "f").write_text("f")
    mount = host / "view"
    mount.mkdir()
    r = subprocess.run(["mount", "--bind", str(host / "src"), str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {r.stderr.strip()}")
    try:
        r = vault.c(f"import --move {q(str(host / 'src' / 'f'))} {q(str(mount / 'f'))} {q(str(host / 'src'))} {q(str(mount))}")
        assert r.rc == 0 and [l for l in r.err_lines if "warning: import" in l] == [
            f"narnia: warning: import: {mount / 'f'}: named before; imported once",
            f"narnia: warning: import: {mount}: named before; imported once",
            f"narnia: warning: import: {host / 'src' / 'f'}: inside {host / 'src'}, also named; imported with it, once"], r.describe()
        assert vault.ok("find /").out_lines == ["/src", "/src/f"]
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_host_names_beginning_with_a_combining_mark_are_names_of_their_own(vault, host):
    """Review BG-12: host paths were split by Character, which joins a `/` and the combining
    mark after it: `import --move` left the folders it emptied without a word, a path ending
    in such a name was refused as holding a `/`, and `../*.txt` from such a folder climbed
    two folders (the wrong files imported, and with --move removed)."""
    c = "\u0301"
    (host / "src" / f"{c}sub").mkdir(parents=True)
    (host / "src" / f"{c}sub" / "a").write_text("a")
    (host / "src" / f"{c}b").write_text("b")
    r = vault.c(f"import --move {q(str(host / 'src'))}")
    assert r.rc == 0 and not (host / "src").exists(), r.describe()
    (host / "dir").mkdir()
    (host / "dir" / f"{c}x").write_text("x")
    r = vault.c(f"import --keep {q(str(host / 'dir' / (c + 'x')))}")
    assert r.rc == 0 and vault.ok(f"cat /{c}x").out == "x", r.describe()
    (host / "u" / f"{c}dir").mkdir(parents=True)
    (host / "u" / "meant.txt").write_text("meant")
    (host / "other.txt").write_text("other")
    vault.ok("mkdir /in")
    r = vault.c(f"cd /in; lcd {q(str(host / 'u' / (c + 'dir')))}; import --keep ../*.txt; ls")
    assert r.rc == 0 and r.out_lines[-1:] == ["meant.txt"], r.describe()
    # Review BG-2, item 3: the store's guard took `STORE/\u0301x` for a name in the store's parent.
    r = vault.c(f"export /in/meant.txt {q(str(vault.vault / (c + 'x')))}")
    assert r.rc == 1 and "inside the vault's own store" in r.err and not (vault.vault / (c + "x")).exists(), r.describe()


def test_import_move_empties_a_tree_deeper_than_path_max_whole(vault, host):
    """Review AR2: the emptied folders were removed by path, which fails past PATH_MAX (4096
    bytes): a deep tree was left behind, its folders empty, without a word."""
    top = host / "deep"
    top.mkdir()
    name = "d" * 200
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(25):                       # 25 × 201 bytes: past PATH_MAX
        os.mkdir(name, dir_fd=fd)
        below = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = below
    leaf = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
    os.write(leaf, b"at the bottom")
    os.close(leaf)
    os.close(fd)
    r = vault.ok(f"import --move {q(str(top))}")
    assert "emptied" not in r.err, r.describe()
    assert not top.exists(), "every emptied folder is removed, the deepest too" + r.describe()
    assert vault.ok("cat /deep/" + "/".join([name] * 25) + "/leaf.txt").out == "at the bottom"


def test_import_move_empties_nfc_and_nfd_twin_folders_both(vault, host):
    """Review AU: Swift's == took the NFD twin's path for the NFC one's, whose folders were
    removed just before, and the NFD tree stayed, emptied, without a word."""
    for name in ("cafe\u0301", "caf\u00e9"):
        write_tree(host / name, {"sub/f.txt": name.encode()})
    r = vault.ok("import --move " + " ".join(q(str(host / name)) for name in ("cafe\u0301", "caf\u00e9")))
    assert "emptied" not in r.err, r.describe()
    assert sorted(os.listdir(host)) == [], r.describe()


@pytest.mark.parametrize("kind", ["files", "folders"])
def test_a_host_glob_matching_nfc_and_nfd_twins_takes_both(vault, host, kind):
    """Review EP-1: a glob matching two host names spelled alike in NFC and NFD took one of
    them (Swift's == merged the two): `import --move` left the other on the host without a
    word, exit 0, and `lls` listed one folder. Both come, the NFC one keeping the name."""
    twins = host / "twins"
    for name, content in (("caf\u00e9", b"NFC"), ("cafe\u0301", b"NFD")):
        if kind == "files":
            write_tree(twins, {name: content})
        else:
            write_tree(twins / name, {"in.txt": content})
    listed = vault.ok(f"lls {q(str(twins))}/caf*").out_lines
    assert len([line for line in listed if kind == "files" or line == "in.txt"]) == 2, listed
    r = vault.ok(f"import --move {q(str(twins))}/caf*")
    assert os.listdir(twins) == [], r.describe()
    inner = "/in.txt" if kind == "folders" else ""
    assert vault.ok(f"cat '/caf\u00e9{inner}'").outb == b"NFC"
    assert vault.ok(f"cat '/caf\u00e9 (2){inner}'").outb == b"NFD"


def test_import_move_of_a_linked_folder_with_a_slash_keeps_the_link_without_a_word(vault, host):
    """Review AU: `link/` names the folder through the link, which lstat follows: the link
    was taken for an emptied folder and said not removable."""
    write_tree(host / "real", {"f.txt": b"f"})
    (host / "link").symlink_to("real")
    r = vault.ok(f"import --move {q(str(host / 'link'))}/")
    assert "emptied" not in r.err, r.describe()
    assert (host / "link").is_symlink() and (host / "real").is_dir() and not (host / "real" / "f.txt").exists()


def test_import_move_names_an_emptied_folder_it_cannot_remove(vault, host):
    """An emptied folder that cannot be removed (its folder made immutable) is named, not
    left without a word; the folder above it, not empty, stays without one."""
    top = host / "keep"
    write_tree(top, {"inner/x.txt": b"x"})
    with removal_refused(top):
        r = vault.c(f"import --move {q(str(top))}")
    assert r.rc == 0, r.describe()
    warnings = [l for l in r.err_lines if "emptied" in l]
    assert len(warnings) == 1 and warnings[0].startswith(f"narnia: warning: import: {top}/inner: emptied, but not removed: "), r.describe()
    assert (top / "inner").is_dir() and not (top / "inner" / "x.txt").exists(), r.describe()


def test_import_move_keeps_an_original_another_program_still_writes(vault, host):
    f = host / "download.part"
    with open(f, "wb") as writer:          # a download in progress: open for writing, paused
        writer.write(b"first half ")
        writer.flush()
        r = vault.c(f"import --move {q(str(f))}")
        writer.write(b"second half")
    assert r.rc == 0 and f.read_bytes() == b"first half second half", "the original is kept whole" + r.describe()
    assert any(l.startswith(f"narnia: warning: import: {f}: another program has it open for writing; the original is kept")
               for l in r.err_lines), r.describe()
    assert vault.ok("cat /download.part").outb == b"first half "


def test_import_move_never_takes_in_the_vaults_own_store(narnia, host):
    """A store kept in a synced folder (~/Sync/lining): moving ~/Sync into the vault must not
    take in, nor remove, the store's own files."""
    sync = host / "Sync"
    (sync / "photos").mkdir(parents=True)
    (sync / "photos" / "p1.jpg").write_bytes(b"p1")
    narnia.vault = sync / "lining"
    narnia.init()
    narnia.ok(f"import {q(str(host / 'Sync' / 'photos'))}")
    before = sorted(p.relative_to(narnia.vault) for p in narnia.vault.rglob("*"))
    r = narnia.c(f"import --move {q(str(sync))}")
    assert r.rc == 0, r.describe()
    assert f"narnia: warning: import: {sync / 'lining'}: the vault's own store skipped" in r.err_lines, r.describe()
    assert not (sync / "photos" / "p1.jpg").exists(), "the rest was moved"
    assert set(before) <= set(p.relative_to(narnia.vault) for p in narnia.vault.rglob("*")), "the store lost nothing"
    assert narnia.ok("find /").out_lines == ["/Sync", "/Sync/photos", "/Sync/photos/p1.jpg", "/photos", "/photos/p1.jpg"]
    assert narnia.ok("verify").rc == 0
    for inside in (narnia.vault, next(p for p in narnia.vault.iterdir() if p.is_dir())):
        r = narnia.c(f"import --move {q(str(inside))}")
        assert r.rc == 1 and f"{inside}: not imported: it is the vault's own store, or inside it" in r.err, r.describe()
    # The store seen another way (an overlay or network mount gives it another device number),
    # or a copy of it: found by its key file's name.
    elsewhere = host / "elsewhere"
    shutil.copytree(narnia.vault, elsewhere / "copy-of-store", symlinks=True)
    r = narnia.c(f"import --move {q(str(elsewhere))}")
    assert r.rc == 0 and f"narnia: warning: import: {elsewhere / 'copy-of-store'}: the vault's own store (another view of it, or a copy) skipped" in r.err_lines, r.describe()
    assert sorted(p.name for p in (elsewhere / "copy-of-store").iterdir()) == sorted(p.name for p in narnia.vault.iterdir())
    r = narnia("drop", str(sync), with_vault=True, passphrase=None)
    assert r.rc == 0 and f"narnia: warning: drop: {sync / 'lining'}: the vault's own store skipped" in r.err_lines, r.describe()
    assert narnia.ok("verify").rc == 0


def test_import_move_never_takes_in_a_shard_of_the_store_seen_through_a_bind_mount(narnia, host):
    """Review CB-2: only the store's top folder was recognised: `import --move` of a bind mount
    of one of its shard folders took the vault's encrypted objects in and removed them."""
    narnia.init()
    (host / "big.bin").write_bytes(os.urandom(2 << 20))
    narnia.ok(f"import {q(str(host / 'big.bin'))}")
    shard = next(p for p in narnia.vault.iterdir() if p.is_dir() and any(p.iterdir()))
    mount = host / "view" / "shard"
    mount.mkdir(parents=True)
    r = subprocess.run(["mount", "--bind", str(shard), str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {r.stderr.strip()}")
    try:
        before = sorted(p.name for p in shard.iterdir())
        r = narnia.c(f"import --move {q(str(mount))}")
        assert r.rc == 1 and f"{mount}: not imported: it is the vault's own store, or inside it" in r.err, r.describe()
        r = narnia.c(f"import --move {q(str(host / 'view'))}")
        assert f"narnia: warning: import: {mount}: the vault's own store skipped" in r.err_lines, r.describe()
        assert sorted(p.name for p in shard.iterdir()) == before
        assert narnia.ok("verify").rc == 0
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_export_refuses_the_vaults_own_store(vault, host):
    """`export /s.txt STORE` wrote plaintext into a store kept in a synced folder, and `export -f
    /s.txt STORE/KEYFILE` replaced the key file, the only way in, exit 0 (a review)."""
    (host / "s.txt").write_bytes(b"secret\n")
    vault.ok(f"import {q(str(host / 's.txt'))}")
    before = sorted((p.relative_to(vault.vault), p.read_bytes() if p.is_file() else None) for p in vault.vault.rglob("*"))
    key_file = next(p for p in vault.vault.iterdir() if p.is_file() and len(p.name) == 32 and p.stat().st_size != 72)
    shard = next(p for p in vault.vault.iterdir() if p.is_dir())
    for command in (f"export /s.txt {q(str(vault.vault))}", f"export -f /s.txt {q(str(key_file))}",
                    f"export /s.txt {q(str(shard / 'x'))}", f"lcd {q(str(vault.vault))}; export /s.txt"):
        r = vault.c(command)
        assert r.rc == 1 and "inside the vault's own store" in r.err, command + r.describe()
    assert sorted((p.relative_to(vault.vault), p.read_bytes() if p.is_file() else None) for p in vault.vault.rglob("*")) == before
    assert vault.ok("cat /s.txt").out == "secret\n"


def test_export_never_replaces_a_fifo_or_a_socket_even_with_force(vault, host):
    """Review BG-9: `export -f` replaced a FIFO, a socket (and, as root, a device such as
    /dev/null) with a regular file, breaking what used it; without -f the hint offered
    --force."""
    (host / "v").write_text("v\n")
    vault.ok(f"import --keep {q(str(host / 'v'))}")
    os.mkfifo(host / "fifo")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(host / "sock"))
        for name in ("fifo", "sock"):
            for force in ("", "-f "):
                r = vault.c(f"export {force}/v {q(str(host / name))}")
                assert r.rc == 1 and f"{host / name}: a special file (FIFO, socket or device) is in the way" in r.err, r.describe()
                assert "--force replaces" not in r.err, r.describe()
        assert stat.S_ISFIFO(os.lstat(host / "fifo").st_mode) and stat.S_ISSOCK(os.lstat(host / "sock").st_mode)


def test_export_never_replaces_a_link_to_a_special_file_a_process_file_or_a_folder(vault, host):
    """Review CI-5: `export -f ITEM /dev/stdout`, as root, replaced the system's link to
    /proc/self/fd/1 with a file holding the item's plaintext; `--force` replaced any link,
    whatever it led to: a FIFO, or a folder (which, unlinked, stands for the folder). A link to
    a regular file is still replaced with --force, the file it leads to untouched."""
    (host / "photos").write_text("photo\n")
    vault.ok(f"import --keep {q(str(host / 'photos'))}")
    out = host / "out"
    out.mkdir()
    os.mkfifo(host / "fifo")
    (host / "album").mkdir()
    (host / "kept.txt").write_text("kept\n")
    links = {"stdout": ("/proc/self/fd/1", "a link to a process's open file (in /proc) is in the way"),
             "fifo-link": (str(host / "fifo"), "a link to a special file (FIFO, socket or device) is in the way"),
             "photos": (str(host / "album"), "a link to a folder is in the way")}
    for name, (target, said) in links.items():
        os.symlink(target, out / name)
        r = vault.c(f"export -f /photos {q(str(out / name))}" if name != "photos" else f"export -f /photos {q(str(out))}")
        assert r.rc == 1 and f"{out / name}: {said}" in r.err and "--force replaces" not in r.err, r.describe()
        assert os.readlink(out / name) == target
    assert not list((host / "album").iterdir())
    # Review CJ-3: written relative, or through /dev/stdout, with standard output a file.
    os.symlink(os.path.relpath("/proc/self/fd/1", out), out / "relative")
    os.symlink("/dev/stdout", out / "through-dev")
    for name in ("relative", "through-dev"):
        with open(host / "stdout.txt", "w") as stdout:
            r = subprocess.run(vault.argv(["-c", f"export -f /photos {q(str(out / name))}"]), stdout=stdout,
                               stderr=subprocess.PIPE, text=True, env=vault.env, cwd=vault.workdir)
        assert r.returncode == 1 and f"{out / name}: a link to a process's open file (in /proc) is in the way" in r.stderr, r.stderr
        assert (out / name).is_symlink()
    os.symlink(host / "kept.txt", out / "file-link")
    vault.ok(f"export -f /photos {q(str(out / 'file-link'))}")
    assert (out / "file-link").read_text() == "photo\n" and not (out / "file-link").is_symlink()
    assert (host / "kept.txt").read_text() == "kept\n"


def test_export_refuses_a_folder_below_its_destination_that_is_the_store_or_a_copy(vault, host):
    """`export / DIR` with the store at DIR/vault exported the vault's root as the folder
    `vault`, that is into the store, in plaintext, exit 0; the same into a copy of the store
    (review BG-2). Refused before anything is written."""
    (host / "s.txt").write_bytes(b"secret\n")
    store_name = vault.vault.name
    vault.ok(f"mkdir /{q(store_name)} /copy; cd /{q(store_name)}; import {q(str(host / 's.txt'))}; cp s.txt /copy")
    copy_parent = host / "elsewhere"
    copy_parent.mkdir()
    shutil.copytree(vault.vault, copy_parent / "copy")

    def tree(folder):
        return sorted((p.relative_to(folder), p.read_bytes() if p.is_file() else None) for p in folder.rglob("*"))

    before, copy_before = tree(vault.vault), tree(copy_parent / "copy")
    for command, refused in ((f"export / {q(str(vault.vault.parent))}", vault.vault / "s.txt"),
                             (f"export -f /{q(store_name)} {q(str(vault.vault.parent))}", vault.vault / "s.txt"),
                             (f"export /copy {q(str(copy_parent))}", copy_parent / "copy" / "s.txt")):
        r = vault.c(command)
        assert r.rc == 1 and f"{refused.parent}: inside the vault's own store, or a copy of it" in r.err, command + r.describe()
        assert "nothing was exported" in r.err and r.out == "", command + r.describe()
    assert tree(vault.vault) == before and tree(copy_parent / "copy") == copy_before
    assert vault.ok("cat /copy/s.txt").out == "secret\n"


@pytest.mark.skipif(os.geteuid() == 0, reason="root searches any folder (integration/as-ordinary-user.sh runs this)")
def test_a_folder_that_lists_but_cannot_be_searched_is_named(vault, host):
    """As an ordinary user, importing a folder of mode 0600 named the vault's key file in the
    error (the store check asks after it inside each folder): the folder is named (review S)."""
    tree = host / "tree"
    (tree / "noexec").mkdir(parents=True)
    (tree / "ok.txt").write_text("fine\n")
    (tree / "noexec").chmod(0o600)
    try:
        r = vault.c(f"import --keep {q(str(tree))}")
    finally:
        (tree / "noexec").chmod(0o700)
    assert r.rc == 1 and f"{tree / 'noexec'}: permission denied" in r.err, r.describe()
    assert vault.ok("cat /tree/ok.txt").out == "fine\n"


def test_set_remove_originals(vault, host):
    f = host / "r.txt"
    f.write_bytes(b"remove me")
    vault.ok("set remove-originals on")
    r = vault.ok("set")
    assert re.search(r"remove-originals\s*[=: ]\s*on", r.out), "set lists remove-originals on" + r.describe()
    vault.ok(f"import {q(str(f))}")
    assert not f.exists(), "with remove-originals on (a stored setting), import removes the original"
    assert vault.ok("cat /r.txt").outb == b"remove me"
    # A script that must only copy says so: the setting travels with the vault (a review).
    f.write_bytes(b"keep me")
    vault.ok(f"import --keep {q(str(f))}")
    assert f.read_bytes() == b"keep me" and vault.ok("cat '/r (2).txt'").outb == b"keep me"
    r = vault.c(f"import --move --keep {q(str(f))}")
    assert r.rc == 1 and "--move and --keep cannot both be given" in r.err and f.exists(), r.describe()


def test_set_lists_one_key_value_line_each_without_a_trailing_space(vault):
    """Review AX (7.7): an unset viewer key was listed as `viewer.video ` (a trailing space),
    awkward for `read key value` in a script; it is `viewer.video` alone."""
    lines = vault.ok("set").out_lines
    assert "viewer.video" in lines and "remove-originals off" in lines, lines
    assert not [l for l in lines if l != l.rstrip()], lines


def test_set_refuses_a_value_that_would_print_as_another(vault):
    """Review BP-7: `set` printed a value with a line feed as two lines, the second reading as
    another setting (`viewer.photo feh` then `hide-names off`), and a control character
    escaped (`\\x1b`) exactly as the four characters `\\x1b` typed. Such values are refused."""
    for value, shown in (("$'feh\\nhide-names off'", "\\x0a"), ("$'a\\x1b'", "\\x1b"), ("$'mpv\\u200b'", "\\u{200b}")):
        r = vault.fails(f"set viewer.photo {value}", "set")
        assert f"viewer.photo: a value may not hold {shown}" in r.err, r.describe()
    vault.ok("set viewer.photo 'feh --title=a\\x1b'")
    lines = vault.ok("set").out_lines
    assert "viewer.photo feh --title=a\\x1b" in lines and lines.count("hide-names off") == 1, lines


def test_import_stdin(vault):
    data = os.urandom(3 * MIB + 5)
    r = vault.c("mkdir /cap; cd /cap; import - captured.bin", input=data, timeout=120)
    assert r.rc == 0, "import - NAME failed" + r.describe()
    assert vault.ok("ls /cap").out_lines == ["captured.bin"], "import - NAME makes the item NAME"
    out = vault.ok("cat /cap/captured.bin").outb
    assert out == data, f"import - round trip differs ({len(out)} bytes back, {len(data)} in)"
    r = vault.c("import - empty.txt", input=b"")
    assert r.rc == 0 and vault.ok("cat /empty.txt").outb == b"", "import - of empty stdin" + r.describe()
    # No original to remove or keep: the flags that would say otherwise are refused, not ignored.
    for flag in ("--move", "--keep", "--skip-existing"):
        r = vault.c(f"import {flag} - other.bin", input=b"x")
        assert r.rc == 1 and f"{flag} does not go with 'import - NAME'" in r.err, r.describe()


@pytest.mark.parametrize("form,producer_too", [("import", True), ("drop", True), ("import", False)])
def test_ctrl_c_on_a_pipeline_into_import_or_drop_takes_nothing_in(vault, form, producer_too):
    """Ctrl-C on `dump | narnia -c 'import - dump.sql'` sends SIGINT to both: the producer
    died, narnia read end of file and committed the cut stream as the whole item, reported
    `imported`, exit 130 (review BG-1); `drop -` the same. A SIGINT to narnia alone waited for
    the input to end, then did the same. Nothing is taken in now, at once."""
    before = vault.store().snapshot()
    # The producer writes 3 MiB into the pipe, then says so in a file: the pipe holds 64 KiB,
    # so narnia has read nearly all of it by then (narnia's /proc/PID/io is not the test's to
    # read as an ordinary user: narnia makes itself not dumpable).
    written = vault.workdir / "written"
    producer = subprocess.Popen([sys.executable, "-c", "import sys, time; sys.stdout.buffer.write(b'A' * (3 * 1048576 + 100));"
                                 f" sys.stdout.flush(); open({str(written)!r}, 'w').close(); time.sleep(60)"], stdout=subprocess.PIPE)
    args = ("-c", "import - dump.sql") if form == "import" else ("drop", "-", "dump.sql")
    proc = vault.popen(*args, **({} if form == "import" else {"passphrase": None}), stdin=producer.stdout)
    producer.stdout.close()
    try:
        # Once narnia has read what was written, the terminal's Ctrl-C: SIGINT to the pipeline.
        deadline = time.monotonic() + 60
        while not written.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "narnia did not read its input"
            time.sleep(0.05)
        time.sleep(0.3)
        for p in (proc, producer) if producer_too else (proc,):
            p.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        for p in (proc, producer):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert proc.returncode == 130 and out == b"", (proc.returncode, out, err)
    assert f"narnia: {form}: interrupted" in err.decode(), err
    assert vault.store().snapshot() == before
    if form == "import":
        assert vault.ok("ls -a /").out_lines == []


def test_keep_both_numbering(vault, host):
    for name, data in (("a.txt", b"1"), ("README", b"r"), (".bashrc", b"b")):
        (host / name).write_bytes(data)
    d = host / "folder"
    d.mkdir()
    (d / "in.txt").write_bytes(b"i")
    cmds = []
    for _ in range(3):
        cmds += [f"import {q(str(host / n))}" for n in ("a.txt", "README", ".bashrc", "folder")]
    r = vault.ok("; ".join(cmds))
    assert vault.ok("ls -a /").out_lines == sorted(
        [".bashrc", ".bashrc (2)", ".bashrc (3)", "README", "README (2)", "README (3)",
         "a (2).txt", "a (3).txt", "a.txt", "folder", "folder (2)", "folder (3)"],
        key=str.encode), "keep-both numbering `name (2).ext`, `name (2)` without extension" + r.describe()
    assert f"imported {host / 'a.txt'} -> /a (3).txt" in r.out_lines, \
        "the import line names the numbered vault path" + r.describe()
    assert vault.ok("cat '/folder (3)/in.txt'").outb == b"i"


def test_keep_both_for_nfc_and_nfd_in_one_folder(vault, host):
    d = host / "both"
    d.mkdir()
    (d / unicodedata.normalize("NFC", "caf\u00e9.txt")).write_bytes(b"NFC")
    (d / unicodedata.normalize("NFD", "caf\u00e9.txt")).write_bytes(b"NFD")
    vault.ok(f"import {q(str(d))}")
    names = vault.ok("ls /both").out_lines
    assert names == sorted(["caf\u00e9 (2).txt", "caf\u00e9.txt"], key=str.encode), \
        f"NFC and NFD spellings are one vault name, so the second gets keep-both numbering: {names}"
    contents = sorted(vault.ok(f"cat {q('/both/' + n)}").outb for n in names)
    assert contents == [b"NFC", b"NFD"], "both files are kept"


def test_symlinks_not_followed_out_of_tree(vault, host):
    outside = host / "outside"
    write_tree(outside, {"secret.txt": b"outside secret", "dir/more.txt": b"more secret"})
    tree = host / "linked"
    write_tree(tree, {"real.txt": b"real"})
    os.symlink(outside / "secret.txt", tree / "to-file")
    os.symlink(outside / "dir", tree / "to-dir")
    os.symlink("real.txt", tree / "inside-link")
    os.symlink(host / "nowhere", tree / "dangling")
    r = vault.c(f"import {q(str(tree))}", timeout=60)
    assert r.rc == 0, "symlinks inside the tree are skipped with a warning, the import succeeds" + r.describe()
    assert find_all(vault) == ["/linked", "/linked/real.txt"], \
        "only the real file is imported; symlinks are never followed" + r.describe()
    warnings = [l for l in r.err_lines if l.startswith("narnia: warning:")]
    for link in ("to-file", "to-dir", "inside-link", "dangling"):
        assert any(link in w for w in warnings), f"expected a warning naming skipped symlink {link}" + r.describe()


def test_symlink_on_command_line_to_a_file_is_followed(vault, host):
    (host / "target.txt").write_bytes(b"target")
    os.symlink(host / "target.txt", host / "link.txt")
    r = vault.ok(f"import {q(str(host / 'link.txt'))}")
    assert vault.ok("ls /").out_lines == ["link.txt"], r.describe()
    assert vault.ok("cat /link.txt").outb == b"target", "a symlink given directly is followed like cp"


def test_special_files_skipped(vault, host):
    d = host / "special"
    write_tree(d, {"ok.txt": b"ok"})
    os.mkfifo(d / "fifo")
    r = vault.c(f"import {q(str(d))}", timeout=30)
    assert r.rc == 0, "a fifo in the tree is skipped with a warning (and never read)" + r.describe()
    assert find_all(vault) == ["/special", "/special/ok.txt"]
    assert any("fifo" in l and l.startswith("narnia: warning:") for l in r.err_lines), r.describe()


def test_import_relative_to_lcd(vault, host):
    (host / "rel.txt").write_bytes(b"rel")
    vault.ok(f"lcd {q(str(host))}; import rel.txt")
    assert vault.ok("cat /rel.txt").outb == b"rel", "relative host paths are relative to lcd"


def test_export_relative_to_lcd_reports_the_host_path_as_typed(vault, host):
    """Review AX (7.16): `export /s.txt out.txt` after `lcd` reported `./out.txt`."""
    vault.ok("import - s.txt", input=b"s")
    r = vault.ok(f"lcd {q(str(host))}; export /s.txt out.txt")
    assert r.out_lines == ["exported /s.txt -> out.txt"], r.describe()
    assert (host / "out.txt").read_bytes() == b"s"


# ---------------------------------------------------------------------------------------------
# export, cat


def test_export_file_forms(sample, host):
    out = host / "out"
    out.mkdir()
    r = sample.ok(f"export /docs/notes.txt {q(str(out / 'n.txt'))}")
    assert (out / "n.txt").read_bytes() == NOTES, "export to a new host path writes that path"
    assert r.out_lines == [f"exported /docs/notes.txt -> {out / 'n.txt'}"], \
        "export prints `exported VAULTPATH -> HOSTPATH`" + r.describe()
    sample.ok(f"export /photos/a.png {q(str(out))}")
    assert (out / "a.png").read_bytes() == PNG_A, "export into an existing host folder writes inside it"
    sample.ok(f"export /photos/b.jpg /other.bin {q(str(out))}")
    assert (out / "b.jpg").read_bytes() == JPG_B and (out / "other.bin").read_bytes() == OTHER, \
        "several sources into a folder"


def test_export_folder_forms(sample, host):
    new = host / "newcopy"
    sample.ok(f"export /photos {q(str(new))}")
    assert tree_files(new) == {"a.png": PNG_A, "b.jpg": JPG_B, "2024/c.png": PNG_C}, \
        "export of a folder to a new path makes that path the copy"
    existing = host / "existing"
    existing.mkdir()
    sample.ok(f"export /photos {q(str(existing))}")
    assert tree_files(existing) == {"photos/a.png": PNG_A, "photos/b.jpg": JPG_B,
                                    "photos/2024/c.png": PNG_C}, \
        "export of a folder into an existing folder makes HOSTDEST/NAME"
    sample.ok(f"export /empty {q(str(host / 'e'))}")
    assert (host / "e").is_dir() and not any((host / "e").iterdir()), "an empty folder exports empty"


def test_a_tree_of_many_folders_round_trips_under_a_low_descriptor_limit(vault, host):
    """Export kept a descriptor for every folder it wrote into: a photo tree of a folder a day
    (about 1,000) ran out of the usual 1,024 and left a thousand empty folders (a review).
    Review DC-2: a batch of files waiting to be placed counted one descriptor each, but each
    kept its folders open too: with each file three folders down a day's folder, every file
    after the first batch failed with "too many open files". Under a hard limit of 128, 300
    such folders go in and come out whole."""
    import resource
    tree = host / "days"
    for i in range(300):
        (tree / f"day{i:03}" / "morning" / "raw").mkdir(parents=True)
        (tree / f"day{i:03}" / "morning" / "raw" / "p.txt").write_text(f"day {i}\n")

    def limited():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
    shutil.copytree(tree, host / "moved" / "days")
    for command in (f"import --keep {q(str(tree))}", f"export /days {q(str(host / 'out'))}",
                    f"mkdir /m; cd /m; import --move {q(str(host / 'moved' / 'days'))}"):
        r = subprocess.run(vault.argv(["-c", command]), capture_output=True, text=True, env=vault.env, cwd=vault.workdir,
                           preexec_fn=limited)
        assert r.returncode == 0, command + "\n" + r.stderr[-2000:]
    assert tree_files(host / "out") == tree_files(tree)
    assert not (host / "moved" / "days").exists()
    assert vault.ok("find /m -type document").out.count("\n") == 300


def test_an_interrupted_export_leaves_no_empty_folders_and_says_what_it_did(vault, host):
    """Review DC-10: Ctrl-C during an export left the whole folder tree of its operands, empty
    where no file had been placed, and said only "interrupted". Interrupted at the first batch's
    `syncfs` (batches of about 30 under a limit of 128 descriptors), the batch is placed, the
    folders made for nothing are removed, and a note says how many files went and how to finish."""
    import resource
    tree = host / "many"
    for folder in ("a", "b"):
        (tree / folder).mkdir(parents=True)
        for i in range(60):
            (tree / folder / f"f{i:02}").write_text(f"{folder} {i}\n")
        os.utime(tree / folder, (978307200, 978307200))                     # 2001-01-01
    vault.ok(f"import {q(str(tree))}")
    out = host / "out"
    out.mkdir()

    def limited():
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))
    argv = ["strace", "-f", "-o", "/dev/null", "-e", "trace=syncfs", "-e", "inject=syncfs:signal=SIGINT:when=1"] \
        + vault.argv(["-c", f"export /many {q(str(out))}; mkdir /not-run"])
    r = subprocess.run(argv, capture_output=True, text=True, env=vault.env, cwd=vault.workdir, preexec_fn=limited)
    assert r.returncode == 130, r.stderr
    placed = sorted(p.name for p in (out / "many" / "a").iterdir())
    assert 0 < len(placed) < 60 and not (out / "many" / "b").exists(), (placed, r.stderr)
    # Review DE-2: the folder kept has the vault's time, which the rerun would leave as it is.
    assert int((out / "many" / "a").stat().st_mtime) == 978307200
    assert f"narnia: note: export: {len(placed)} of 120 files were exported before the interruption; " \
        "'export --skip-existing' with the same operands does the rest" in r.stderr, r.stderr
    assert "not-run" not in vault.ok("ls /").out_lines


def test_an_export_destination_with_a_trailing_slash_is_a_folder(sample, host):
    """Review DC-8: `export /docs newd/` (newd missing) was "no such folder" where `export /docs
    newd` and `cp -r d newd/` make it; onto a file, `a.txt/` said "no such folder"."""
    sample.ok(f"export /docs {q(str(host / 'newd'))}/")
    assert (host / "newd" / "notes.txt").read_bytes() == NOTES
    (host / "a.txt").write_text("a")
    r = sample.fails(f"export -f /docs/notes.txt {q(str(host / 'a.txt'))}/", "export")
    assert r.err_lines[-1].endswith("a.txt: not a folder"), r.describe()
    r = sample.fails(f"export /docs/notes.txt {q(str(host / 'missing'))}/", "export")
    assert r.err_lines[-1].endswith("missing: no such folder"), r.describe()
    assert (host / "a.txt").read_text() == "a" and not (host / "missing").exists()


def test_export_gives_the_folders_it_makes_their_times(vault, host):
    """Review DC-5: the vault keeps a folder's modification time from the host, but export gave
    every folder the time of the export (cp -a, rsync -a and tar x keep them). A folder that
    was there before keeps its own."""
    (host / "d" / "sub").mkdir(parents=True)
    (host / "d" / "sub" / "x").write_text("x")
    os.utime(host / "d" / "sub" / "x", (1273017600, 1273017600))           # 2010-05-05
    for folder in (host / "d" / "sub", host / "d"):
        os.utime(folder, (978307200, 978307200))                            # 2001-01-01
    vault.ok(f"import {q(str(host / 'd'))}")
    vault.ok(f"export /d {q(str(host / 'out'))}")
    for path, seconds in (("out", 978307200), ("out/sub", 978307200), ("out/sub/x", 1273017600)):
        assert int((host / path).stat().st_mtime) == seconds, path
    shutil.copytree(host / "out", host / "there" / "d")
    os.utime(host / "there" / "d", (0, 0))
    vault.ok(f"export --skip-existing /d {q(str(host / 'there'))}")
    assert int((host / "there" / "d").stat().st_mtime) == 0


def test_an_item_named_like_a_partial_export_is_no_leftover_of_its_own_export(vault, host):
    """Review DC-6: a vault item named `.narnia-partial-0123456789ab` (anyone sharing a vault
    can name one so), exported, was called a leftover to delete at the next export into that
    folder, which also said it skipped it (already there)."""
    shared = host / "shared"
    shared.mkdir()
    (shared / ".narnia-partial-0123456789ab").write_text("real content")
    vault.ok(f"import {q(str(shared))}")
    out = host / "out"
    out.mkdir()
    vault.ok(f"export /shared {q(str(out))}")
    (host / "c.txt").write_text("c")
    vault.ok(f"cd /shared; import {q(str(host / 'c.txt'))}")
    r = vault.ok(f"export --skip-existing /shared {q(str(out))}")
    assert "left by an export killed" not in r.err and "(already there)" in r.out, r.describe()


def test_skip_existing_passes_over_a_file_it_may_not_read(vault, host):
    """Review DD-1: `--skip-existing` makes what it skips durable (DC-1); opening a skipped
    file this user may not read (mode 0200) failed the whole export, new files too. (As root
    the file opens; the run as an ordinary user is the one that tells.)"""
    (host / "d").mkdir()
    (host / "d" / "a.txt").write_text("a")
    vault.ok(f"import {q(str(host / 'd'))}")
    out = host / "out"
    out.mkdir()
    vault.ok(f"export /d {q(str(out))}")
    (out / "d" / "a.txt").chmod(0o200)
    (host / "c.txt").write_text("c")
    vault.ok(f"cd /d; import {q(str(host / 'c.txt'))}")
    r = vault.ok(f"export --skip-existing /d {q(str(out))}")
    assert (out / "d" / "c.txt").read_text() == "c" and "skipped /d/a.txt" in r.out, r.describe()


def test_export_force(sample, host):
    target = host / "exists.txt"
    target.write_bytes(b"precious")
    sample.fails(f"export /docs/notes.txt {q(str(target))}", "export")
    assert target.read_bytes() == b"precious", "export without --force replaced a host file"
    sample.ok(f"export --force /docs/notes.txt {q(str(target))}")
    assert target.read_bytes() == NOTES, "export --force replaces the host file"
    assert sorted(p.name for p in host.iterdir()) == ["exists.txt", "sample"], \
        "export left temporary files beside the target"


def test_cat(sample):
    r = sample.ok("cat /docs/notes.txt")
    assert r.outb == NOTES
    r = sample.ok("cat /docs/notes.txt /other.bin /photos/a.png")
    assert r.outb == NOTES + OTHER + PNG_A, "cat of several paths concatenates raw bytes"
    r = sample.ok("cd /photos; cat 2024/c.png")
    assert r.outb == PNG_C


# ---------------------------------------------------------------------------------------------
# rm, rmdir


def test_rm(sample):
    sample.ok("rm /other.bin")
    assert "other.bin" not in sample.ok("ls /").out_lines
    sample.fails("rm /photos", "rm")
    assert "photos" in sample.ok("ls /").out_lines, "rm of a folder without -r must not remove it"
    sample.ok("rm -r /photos")
    assert "photos" not in sample.ok("ls /").out_lines, "rm -r removes a folder"
    sample.ok("rm -rf /docs /videos")
    assert sample.ok("ls /").out_lines == ["empty"], "rm -rf (combined flags) with several paths"
    r = sample.c("rm -f /no-such-thing")
    assert r.rc == 0 and not r.errors, "rm -f of a missing path succeeds quietly, as in coreutils" + r.describe()
    sample.fails("rm -r /", "rm")
    sample.fails("rm -rf /", "rm")
    assert sample.ok("ls /").out_lines == ["empty"], "rm refuses the root"


def test_rm_content_is_gone_from_store(vault, host):
    f = host / "big.bin"
    f.write_bytes(os.urandom(400_000))
    before = vault.store().sizes()
    vault.ok(f"import {q(str(f))}")
    grown = sum(vault.store().sizes().values()) - sum(before.values())
    vault.ok("rm /big.bin")
    after = sum(vault.store().sizes().values())
    assert after < sum(before.values()) + grown - 300_000, \
        "rm should delete the item's content object from the store"


def test_rmdir(sample):
    sample.ok("rmdir /empty")
    assert "empty" not in sample.ok("ls /").out_lines
    r = sample.fails("rmdir /photos", "rmdir")
    assert any(l.startswith("narnia: error: rmdir: /photos: ") and "not empty" in l for l in r.err_lines), \
        "expected `narnia: error: rmdir: /photos: folder is not empty`" + r.describe()
    sample.fails("rmdir /other.bin", "rmdir")
    sample.fails("rmdir /", "rmdir")
    sample.ok("mkdir /e1 /e2; rmdir /e1 /e2")
    assert sample.ok("ls /").out_lines == ["docs", "other.bin", "photos", "videos"]


# ---------------------------------------------------------------------------------------------
# mv, cp


def test_mv_rename_and_into_folder(sample):
    sample.ok("mv /other.bin /renamed.bin")
    assert sample.ok("cat /renamed.bin").outb == OTHER, "mv renames"
    sample.ok("mv /renamed.bin /docs")
    assert sample.ok("ls /docs").out_lines == ["notes.txt", "renamed.bin", "report.pdf"], \
        "mv into an existing folder moves inside it"
    sample.ok("mv /docs/renamed.bin /photos/a.png /empty")
    assert sample.ok("ls /empty").out_lines == ["a.png", "renamed.bin"], "mv of several sources into a folder"
    sample.ok("mv /empty /docs")
    assert find_all(sample, "/docs") == ["/docs/empty", "/docs/empty/a.png", "/docs/empty/renamed.bin",
                                         "/docs/notes.txt", "/docs/report.pdf"], "mv of a folder into a folder"
    sample.ok("cd /docs; mv empty/a.png ../a-again.png")
    assert sample.ok("cat /a-again.png").outb == PNG_A, "mv with relative paths"


def test_mv_never_replaces_silently(sample):
    sample.ok("mkdir /x; mv /docs/notes.txt /x/")
    sample.fails("mv /other.bin /x/notes.txt", "mv")
    assert sample.ok("cat /x/notes.txt").outb == NOTES and sample.ok("cat /other.bin").outb == OTHER, \
        "a refused mv changed something"
    sample.ok("mv -f /other.bin /x/notes.txt")
    assert sample.ok("cat /x/notes.txt").outb == OTHER, "mv -f replaces an existing file"
    assert "other.bin" not in sample.ok("ls /").out_lines, "mv -f removes the source"


@pytest.mark.parametrize("command", ["mv -f", "cp -f", "mv"])
@pytest.mark.parametrize("destination", ["/docs/notes.txt/", "/docs/notes.txt/.", "/Archvie/"])
def test_a_destination_ending_in_a_slash_must_be_a_folder(sample, command, destination):
    """Review AE: the `/` was dropped, so `mv -f report.txt notes.txt/` replaced notes.txt and
    `mv report.txt Archvie/` (a folder's name mistyped) renamed the file. As coreutils, a file
    goes only into a folder so named; a folder may still take the name."""
    before = find_all(sample)
    r = sample.fails(f"{command} /other.bin {destination}", command.split()[0])
    wanted = "no such folder" if "Archvie" in destination else "not a folder"
    assert r.err_lines[-1].endswith(f"{destination.rstrip('/.')}: {wanted}"), r.describe()
    assert find_all(sample) == before and sample.ok("cat /docs/notes.txt").outb == NOTES
    sample.ok("mv /photos /albums/")
    assert "albums" in sample.ok("ls /").out_lines


@pytest.mark.parametrize("command", ["mv", "cp", "mv -f"])
@pytest.mark.parametrize("named", ["/a/x.txt /b/x.txt", "/?/x.txt"], ids=["operands", "pattern"])
def test_two_sources_of_one_name_are_refused_before_anything_moves(sample, command, named):
    """Review AE: `mv /a/x /b/x /dest` moved the first and then failed "already exists", with
    no path, on the second: half done. Two sources bound for one name are refused first, as
    export refuses two items bound for one host file. One source named twice is one. Named by
    one pattern, the refusal says too that nothing was moved (review EC-4)."""
    sample.ok("mkdir -p /a /b /dest; cd /a; import - x.txt; cd /b; import - x.txt", input=b"x")
    before = find_all(sample)
    r = sample.fails(f"{command} {named} /dest", command.split()[0])
    done = "moved" if command.startswith("mv") else "copied"
    assert r.err_lines[-1].endswith(f": /dest/x.txt: more than one source would go there (/a/x.txt and /b/x.txt); nothing was {done}"), r.describe()
    assert find_all(sample) == before
    sample.ok(f"{command} /a/x.txt /a/x.txt /dest")
    assert "x.txt" in sample.ok("ls /dest").out_lines


@pytest.mark.parametrize("command", ["rm -r", "ls", "cd", "mv /other.bin", "mkdir"])
def test_dot_dot_climbs_only_out_of_a_folder_that_is_there(sample, command):
    """Review AE: `..` was resolved as text, so `rm -r typo/../docs` (a folder's name
    mistyped) removed /docs. As a file system resolves it, `..` climbs only out of a folder
    that is there, whatever the command."""
    before = find_all(sample)
    r = sample.fails(f"{command} /Dosc/../docs", command.split()[0])
    assert r.err_lines[-1].endswith(": /Dosc: no such folder"), r.describe()
    r = sample.fails(f"{command} /other.bin/../docs", command.split()[0])
    assert r.err_lines[-1].endswith(": /other.bin: not a folder"), r.describe()
    assert find_all(sample) == before
    sample.ok("cd /photos/../docs; ls ../docs/../photos")


def test_mv_never_replaces_a_folder(sample):
    sample.ok("mkdir -p /a/same /b/same; cd /b/same; import - keep.txt", input=b"keep")
    sample.fails("mv -f /a/same /b", "mv")
    assert find_all(sample, "/b") == ["/b/same", "/b/same/keep.txt"], "mv -f replaced a folder"
    r = sample.c("mv -f /other.bin /b/same")
    assert r.rc == 0 and sample.ok("ls /b/same").out_lines == ["keep.txt", "other.bin"], \
        "mv -f FILE FOLDER moves into the folder, never replaces it" + r.describe()


def test_mv_into_itself_refused(sample):
    before = find_all(sample)
    sample.fails("mv /photos /photos/2024", "mv")
    sample.fails("mv /photos /photos/2024/deeper", "mv")
    sample.fails("mv /photos /photos", "mv")
    sample.fails("mv / /x", "mv")
    assert find_all(sample) == before, "a refused mv changed the tree"


def test_cp(sample):
    sample.ok("cp /other.bin /copy.bin")
    assert sample.ok("cat /copy.bin").outb == OTHER
    sample.ok("rm /other.bin")
    assert sample.ok("cat /copy.bin").outb == OTHER, "a copy survives removal of its source"
    sample.fails("cp /photos /p2", "cp")
    assert "p2" not in sample.ok("ls /").out_lines, "cp of a folder without -r must not copy it"
    sample.ok("cp -r /photos /p2")
    assert find_all(sample, "/p2") == ["/p2/2024", "/p2/2024/c.png", "/p2/a.png", "/p2/b.jpg"], "cp -r copies a tree"
    assert sample.ok("cat /p2/2024/c.png").outb == PNG_C
    sample.ok("cp -r /photos /docs")
    assert "photos" in sample.ok("ls /docs").out_lines, "cp -r into an existing folder copies inside"
    sample.fails("cp /copy.bin /docs/notes.txt", "cp")
    assert sample.ok("cat /docs/notes.txt").outb == NOTES, "cp without -f replaced a file"
    sample.ok("cp -f /copy.bin /docs/notes.txt")
    assert sample.ok("cat /docs/notes.txt").outb == OTHER, "cp -f replaces a file"
    before = find_all(sample)
    sample.fails("cp -r /photos /photos/2024", "cp")
    assert find_all(sample) == before, "cp of a folder into itself must be refused"
    v = sample.c("verify")
    assert v.rc == 0, "verify after cp/rm" + v.describe()


# ---------------------------------------------------------------------------------------------
# find, stat, du


def test_find(sample):
    assert find_all(sample) == [
        "/docs", "/docs/notes.txt", "/docs/report.pdf", "/empty", "/other.bin", "/photos",
        "/photos/2024", "/photos/2024/c.png", "/photos/a.png", "/photos/b.jpg", "/videos",
        "/videos/clip.mp4"], "find: absolute paths, depth first, sorted by name"
    assert find_all(sample, "/photos") == ["/photos/2024", "/photos/2024/c.png", "/photos/a.png",
                                           "/photos/b.jpg"], "find PATH does not print PATH"
    checks = {
        "find / -name '*.png'": ["/photos/2024/c.png", "/photos/a.png"],
        "find -name '?.jpg'": ["/photos/b.jpg"],
        "find / -type photo": ["/photos/2024/c.png", "/photos/a.png", "/photos/b.jpg"],
        "find / -type document": ["/docs/notes.txt", "/docs/report.pdf"],
        "find / -type video": ["/videos/clip.mp4"],
        "find / -type other": ["/other.bin"],
        "find / -type folder": ["/docs", "/empty", "/photos", "/photos/2024", "/videos"],
        "find /photos -name '[ab]*' -type photo": ["/photos/a.png", "/photos/b.jpg"],
        "cd /photos; find . -name 'c*'": ["/photos/2024/c.png"],
    }
    for cmd, expected in checks.items():
        r = sample.ok(cmd)
        assert r.out_lines == expected, f"`{cmd}`" + r.describe()
    sample.fails("find / -type nonsense", "find")
    # Review DM-2: a predicate given twice kept only the last, and listed what the first excluded.
    for twice in ("-name 'a*' -name '*.jpg'", "-type folder -type photo", "-iname A* -iname '*.PNG'"):
        r = sample.fails(f"find / {twice}", "find")
        assert r.err_lines[0] == f"narnia: error: find: {twice.split()[0]} given twice: an item has one name and one kind", r.describe()


def test_ls_refuses_flags_that_ask_for_another_listing_or_order(sample):
    """Reviews DM-1, DM-6: `-g` won over `--json`, `-l`, `-R` and `-1` without a word (a script
    asking for JSON got box drawing), and `-t` over `-S`."""
    for flags, said in (("-g --json", "-g and --json"), ("-lg", "-g and -l"), ("-gR", "-g and -R"), ("-1g", "-g and -1"),
                        ("-tS", "-t and -S")):
        r = sample.fails(f"ls {flags} /photos", "ls")
        assert r.err_lines[0] == f"narnia: error: ls: {said} cannot both be given", r.describe()


def test_stat(sample):
    r = sample.ok("stat /photos/a.png")
    fields = dict(l.split(": ", 1) for l in r.out_lines)
    for key in ("path", "type", "kind", "mime", "size", "stored", "created", "modified"):
        assert key in fields, f"stat has no `{key}:` line" + r.describe()
    assert fields["path"] == "/photos/a.png" and fields["type"] == "file"
    assert fields["kind"] == "photo" and fields["mime"] == "image/png", r.describe()
    assert fields["size"] == str(len(PNG_A)), r.describe()
    assert int(fields["stored"]) == object_size(len(PNG_A)), \
        f"stored is the content object's bytes on disk, padding included ({object_size(len(PNG_A))})" + r.describe()
    assert ISO_RE.match(fields["created"]) and ISO_RE.match(fields["modified"]), \
        "created/modified are ISO 8601 UTC" + r.describe()
    r = sample.ok("stat /photos")
    fields = dict(l.split(": ", 1) for l in r.out_lines)
    assert fields.get("type") == "folder" and fields.get("kind") == "folder", r.describe()
    assert fields.get("items") == "3", "stat of a folder gives `items:` (direct children)" + r.describe()
    r = sample.ok("stat /docs/notes.txt /other.bin")
    assert r.out.count("path: ") == 2, "stat takes several paths" + r.describe()


def test_du(sample):
    r = sample.ok("du /photos")
    assert r.out_lines == [f"{len(PNG_A) + len(JPG_B) + len(PNG_C)}\t/photos"], \
        "du PATH prints SIZE<TAB>PATH, the sum of content sizes" + r.describe()
    r = sample.ok("du /")
    assert r.out_lines == [f"{sum(len(v) for v in SAMPLE.values())}\t/"], r.describe()
    r = sample.ok("cd /docs; du")
    assert r.out_lines in ([f"{len(PDF) + len(NOTES)}\t."], [f"{len(PDF) + len(NOTES)}\t/docs"]), \
        "du with no PATH measures the current folder" + r.describe()


# ---------------------------------------------------------------------------------------------
# host side: lcd, lpwd, lls


def test_lcd_lpwd_lls(vault, host):
    write_tree(host, {"h1.txt": b"1", "h2.png": PNG_A, ".dot": b"d", "hsub/x": b"x"})
    r = vault.ok("lpwd")
    assert r.out == f"{vault.workdir}\n", "lpwd starts at the process's working directory" + r.describe()
    r = vault.ok(f"lcd {q(str(host))}; lpwd")
    assert r.out == f"{host}\n", "lcd changes the host folder (silently)" + r.describe()
    r = vault.ok(f"lcd {q(str(host))}; lls")
    assert r.out_lines == ["h1.txt", "h2.png", "hsub"], "lls lists the host folder, no dot names" + r.describe()
    r = vault.ok(f"lcd {q(str(host))}; lls -a")
    assert ".dot" in r.out_lines, "lls -a shows dot names" + r.describe()
    r = vault.ok(f"lls {q(str(host / 'hsub'))}")
    assert r.out_lines == ["x"], "lls HOSTPATH" + r.describe()
    r = vault.ok(f"lcd {q(str(host))}; lls -l")
    assert len(r.out_lines) >= 3 and any("h1.txt" in l for l in r.out_lines), r.describe()
    # A folder's size is '-', as in the vault's own ls -l.
    assert [l.split()[:2] for l in r.out_lines if l.endswith(" hsub")] == [["folder", "-"]], r.describe()
    # Review EY-2: a fifo, which import skips, is not called a file.
    os.mkfifo(host / "pipe")
    r = vault.ok(f"lls -l {q(str(host / 'pipe'))} {q(str(host / 'h1.txt'))}")
    assert [l.split()[0] for l in r.out_lines] == ["special", "file"], r.describe()
    (host / "pipe").unlink()
    r = vault.ok(f"lcd {q(str(host))}; lcd; lpwd")
    assert r.out == f"{vault.home}\n", "lcd with no argument goes to $HOME" + r.describe()
    # Review AS F6: several paths as ls(1) lists them, files first, a missing one said and
    # the rest listed.
    r = vault.c(f"lcd {q(str(host))}; lls hsub nope h1.txt")
    assert r.rc == 1 and r.out_lines == ["h1.txt", "", "hsub:", "x"], r.describe()
    assert r.err_lines == ["narnia: error: lls: nope: no such file or folder"], r.describe()
    r = vault.ok(f"lcd {q(str(host))}; lcd hsub; lpwd")
    assert r.out == f"{host / 'hsub'}\n", "lcd with a relative path" + r.describe()
    vault.fails(f"lcd {q(str(host / 'missing'))}", "lcd")


# ---------------------------------------------------------------------------------------------
# globs


def test_vault_globs(vault):
    vault.ok("mkdir /g")
    names = ["a1.txt", "a2.txt", "b1.txt", "c.log", ".hidden.txt", "lit*eral.txt", "litXeral.txt"]
    for name in names:
        vault.ok(f"cd /g; import - {q(name)}", input=name.encode())
    checks = {
        "ls /g/*.txt": ["a1.txt", "a2.txt", "b1.txt", "lit*eral.txt", "litXeral.txt"],
        "ls /g/a?.txt": ["a1.txt", "a2.txt"],
        "ls /g/[ab]1.txt": ["a1.txt", "b1.txt"],
        "ls /g/[!a]*.txt": ["b1.txt", "lit*eral.txt", "litXeral.txt"],
        "ls /g/[^a]*.txt": ["b1.txt", "lit*eral.txt", "litXeral.txt"],
        "ls /g/.h*": [".hidden.txt"],
        "ls '/g/lit*eral.txt'": ["lit*eral.txt"],
        "ls /g/lit\\*eral.txt": ["lit*eral.txt"],
        "ls \"/g/lit*eral.txt\"": ["lit*eral.txt"],
        "cd /g; ls a*": ["a1.txt", "a2.txt"],
        "ls /*/c.log": ["c.log"],
    }
    for cmd, expected in checks.items():
        r = vault.ok(cmd)
        # files given as paths: accept the name (INTERFACE: `ls PATH` of a file prints its name)
        # or the path as given (coreutils)
        got = [l.rsplit("/", 1)[-1] for l in r.out_lines]
        assert got == sorted(expected, key=str.encode), f"`{cmd}`" + r.describe()
    r = vault.fails("ls /g/*.nothing", "ls")
    assert any("no match" in l for l in r.err_lines), "a glob matching nothing is an error `no match`" + r.describe()
    vault.ok("rm '/g/lit*eral.txt'")
    assert "litXeral.txt" in vault.ok("ls /g").out_lines, "a quoted * must not glob in rm"
    vault.ok("rm /g/a*.txt")
    assert vault.ok("ls /g").out_lines == ["b1.txt", "c.log", "litXeral.txt"], "rm with a glob"
    vault.ok("mkdir /dest; mv /g/*.txt /dest")
    assert vault.ok("ls /dest").out_lines == ["b1.txt", "litXeral.txt"], "mv with a glob"
    r = vault.ok("cat /dest/b*")
    assert r.outb == b"b1.txt", "cat with a glob"


def test_host_globs(vault, host):
    write_tree(host, {"p1.png": PNG_A, "p2.png": PNG_C, "t.txt": b"t", "star*.png": b"literal",
                      ".dot.png": b"dot"})
    vault.ok(f"mkdir /h; cd /h; import {q(str(host))}/*.png")
    assert vault.ok("ls -a /h").out_lines == ["p1.png", "p2.png", "star*.png"], \
        "host glob imports only matching names, without dot names"
    vault.ok(f"mkdir /lit; cd /lit; import {q(str(host / 'star*.png'))}")
    assert vault.ok("ls /lit").out_lines == ["star*.png"], "a quoted host glob character is literal"
    r = vault.ok(f"lcd {q(str(host))}; lls p?.png")
    assert [l.rsplit("/", 1)[-1] for l in r.out_lines] == ["p1.png", "p2.png"], "lls with a host glob" + r.describe()
    r = vault.fails(f"import {q(str(host))}/*.nothing", "import")
    assert any("no match" in l for l in r.err_lines), "a host glob matching nothing: `no match`" + r.describe()
    out = host / "out"
    out.mkdir()
    vault.ok(f"lcd {q(str(out))}; export /h/p1.png .")
    assert (out / "p1.png").read_bytes() == PNG_A, "export to a relative host path (after lcd)"


# ---------------------------------------------------------------------------------------------
# help, exit, --version, --help, unknown things


COMMANDS = ["ls", "cd", "pwd", "tree", "mkdir", "import", "export", "cat", "open", "rm", "rmdir",
            "mv", "cp", "find", "stat", "du", "verify", "passwd", "set", "help", "lcd", "lpwd",
            "lls", "panic", "exit"]


def test_help(vault):
    r = vault.ok("help")
    firsts = [l.split()[0] for l in r.out_lines if l.strip()]
    missing = [c for c in COMMANDS if c not in firsts]
    assert not missing, f"help lists a line per command (`NAME  ABSTRACT`); missing {missing}" + r.describe()
    r = vault.ok("help mkdir")
    assert "mkdir" in r.out and "-p" in r.out, "help mkdir shows its usage" + r.describe()
    r = vault.ok("help export")
    assert "--force" in r.out, "help export shows --force" + r.describe()
    # mget takes every operand as a vault path: its own usage, without HOSTDEST (review AX).
    assert vault.ok("help mget").out_lines[:2] == [
        "usage: export [-f|--force] [--skip-existing] [-v|-q] PATH... [HOSTDEST]",
        "       mget [-f|--force] [--skip-existing] [-v|-q] PATH..."]
    vault.fails("help no-such-command", "help")
    # Review CA-1: it said grid thumbnails were never written to disk, which they are, encrypted.
    text = " ".join(vault.ok("help grid").out.split())
    assert "kept, encrypted, in the vault" in text and "never written" not in text, text
    r = vault.c("help ls cd")
    assert r.rc == 1 and "help: too many arguments" in r.err and "usage: help [COMMAND]" in r.err, r.describe()


def test_exit_and_quit_stop_the_run(vault):
    r = vault.ok("mkdir /before; exit; mkdir /after")
    assert vault.ok("ls /").out_lines == ["before"], "exit ends the run" + r.describe()
    vault.ok("quit; mkdir /after")
    assert vault.ok("ls /").out_lines == ["before"], "quit ends the run"
    # exit takes no status: `exit 3` must not pass for a choice of exit status (nor end in 0).
    vault.fails("exit 3", "exit")
    vault.fails("quit x", "quit")
    vault.fails("help ls cd", "help")


def test_an_alias_is_named_as_typed(vault):
    """Review AX7: a user who typed `get` or `put` read about `export` or `import`. Messages
    name the word typed, and a usage hint gives the alias's own usage."""
    vault.fails("get /nothing-here", "get")
    r = vault.fails("put", "put")
    assert "narnia: hint: usage: put [--move|--keep]" in r.err, r.describe()
    r = vault.fails("mget", "mget")
    assert "narnia: hint: usage: mget [-f|--force] [--skip-existing] [-v|-q] PATH...\n" in r.err, r.describe()
    vault.fails("bye now", "bye")
    vault.fails("get --bogus /x", "get")
    r = vault.fails("-get /nothing-here; export /nothing-here", "export")
    assert r.err_lines[-2:] == ["narnia: error: get: /nothing-here: no such file or folder",
                                "narnia: error: export: /nothing-here: no such file or folder"], r.describe()


def test_unknown_command_and_flag(vault):
    r = vault.c("frobnicate /x")
    assert r.rc == 1 and any(l.startswith("narnia: error:") for l in r.err_lines), \
        "an unknown command fails with exit 1" + r.describe()
    r = vault.c("ls --bogus /")
    assert r.rc == 1 and any(l.startswith("narnia: error: ls:") for l in r.err_lines), \
        "an unknown flag is an error of the command (exit 1 in batch)" + r.describe()


def test_version_and_help(narnia):
    r = narnia("--version", passphrase=None, with_vault=False)
    assert r.rc == 0 and re.search(r"\d+\.\d+", r.out), "--version prints a version, exit 0" + r.describe()
    assert len(r.out_lines) >= 1 and "narnia" in r.out.lower(), r.describe()
    r = narnia("--help", passphrase=None, with_vault=False)
    assert r.rc == 0, "--help exits 0" + r.describe()
    for opt in ("--vault", "--passphrase-file", "--passphrase-fd", "--keep-going", "-c", "-b",
                "init", "enter", "--version"):
        assert opt in r.out, f"--help should mention {opt}" + r.describe()
    assert not (narnia.home / ".local/share/lining").exists(), "--help/--version must not create a store"


def test_version_and_help_fail_when_their_output_cannot_be_written(narnia_bin):
    """Review CA-7: `--version > /dev/full` exited 0, as if the version had been printed."""
    for flag in ("--version", "--help"):
        with open("/dev/full", "w") as full:
            r = subprocess.run([str(narnia_bin), flag], stdout=full, stderr=subprocess.PIPE, timeout=30)
        assert r.returncode == 1 and b"narnia: error: standard output: the disk is full" in r.stderr, (flag, r)


def test_export_never_replaces_inside_folders(sample, host):
    out = host / "again"
    out.mkdir()
    sample.ok(f"export /photos {q(str(out))}")
    (out / "photos/a.png").write_bytes(b"edited on the host")
    r = sample.c(f"export /photos {q(str(out))}")
    assert r.rc == 1, "exporting over existing host files must fail without --force" + r.describe()
    assert (out / "photos/a.png").read_bytes() == b"edited on the host", "export replaced a host file"
    sample.ok(f"export --force /photos {q(str(out))}")
    assert (out / "photos/a.png").read_bytes() == PNG_A, "export --force replaces files inside folders"
    (out / "b.jpg").write_bytes(b"host")
    sample.fails(f"export /photos/b.jpg {q(str(out))}", "export")
    assert (out / "b.jpg").read_bytes() == b"host", "export of a file into a folder replaced NAME"


def test_cp_r_never_replaces_a_folder(sample):
    sample.ok("cp -r /photos /docs")
    sample.fails("cp -r /photos /docs", "cp")
    sample.fails("cp -rf /photos /docs", "cp")
    assert find_all(sample, "/docs/photos") == ["/docs/photos/2024", "/docs/photos/2024/c.png",
                                                "/docs/photos/a.png", "/docs/photos/b.jpg"]


def test_cp_rn_copies_into_a_folder_of_its_name_what_it_lacks(sample):
    """As coreutils: `cp -rn` merges a folder into one of its name, keeping what is there
    (review CV-3: the source was skipped whole, without a word, and exit 0)."""
    sample.ok("mkdir -p /backup/photos/2024; cp /photos/a.png /backup/photos; cd /backup/photos; import - b.jpg", input=b"kept")
    sample.ok("cp -rn /photos /backup")
    assert find_all(sample, "/backup") == ["/backup/photos", "/backup/photos/2024", "/backup/photos/2024/c.png",
                                           "/backup/photos/a.png", "/backup/photos/b.jpg"]
    assert sample.ok("cat /backup/photos/b.jpg").out == "kept"
    sample.ok("cp -rn /photos /backup")   # nothing left to copy
    # A folder onto a file, or a file onto a folder, is an error, as there; nothing is copied.
    sample.ok("mkdir /b2; cd /b2; import - photos", input=b"file")
    r = sample.fails("cp -rn /photos /docs /b2", "cp")
    assert "/b2/photos: cannot replace a file with a folder; nothing was copied" in r.err, r.describe()
    assert find_all(sample, "/b2") == ["/b2/photos"]
    # A file onto a folder is skipped, as a file onto a file (review CW-6: it failed with -r,
    # and was skipped without); a folder without -r fails, -n or not (CW-4: `cp -n` of a
    # folder whose target is there copied nothing, without a word).
    sample.ok("mkdir /b3 /b3/other.bin; cp -rn /other.bin /b3; cp -n /other.bin /b3")
    assert find_all(sample, "/b3") == ["/b3/other.bin"]
    r = sample.fails("cp -n /photos /backup", "cp")
    assert "/photos: is a folder" in r.err, r.describe()


def test_stat_and_du_of_root_and_files(sample):
    fields = dict(l.split(": ", 1) for l in sample.ok("stat /").out_lines)
    assert fields.get("path") == "/" and fields.get("type") == "folder", f"stat /: {fields}"
    assert fields.get("items") == str(len(ROOT_LS)), f"stat / counts its direct children: {fields}"
    r = sample.ok("du /other.bin")
    assert r.out_lines == [f"{len(OTHER)}\t/other.bin"], "du of a file" + r.describe()


def test_symlink_on_command_line_to_a_folder_is_followed(vault, host):
    write_tree(host, {"real/inner.txt": b"inner"})
    os.symlink(host / "real", host / "linkdir")
    vault.ok(f"import {q(str(host / 'linkdir'))}")
    assert find_all(vault) == ["/linkdir", "/linkdir/inner.txt"], "a symlink to a folder given directly is followed"


def test_name_length_counts_after_nfc(vault):
    nfd = unicodedata.normalize("NFD", "\u00e9" * 100)   # 300 bytes in NFD, 200 in NFC
    assert len(nfd.encode()) == 300
    r = vault.c(f"mkdir {q('/' + nfd)}")
    assert r.rc == 0, "a name of at most 255 bytes after NFC is valid whatever its input form" + r.describe()
    assert vault.ok("ls /").out_lines == ["\u00e9" * 100], "the name is stored in NFC"


def test_mv_and_cp_normalise_names(vault):
    vault.ok("import - a.txt", input=b"a")
    nfd = unicodedata.normalize("NFD", "r\u00e9sum\u00e9.txt")
    vault.ok(f"mv /a.txt {q('/' + nfd)}; cp {q('/' + nfd)} {q('/copy ' + nfd)}")
    assert vault.ok("ls /").out_lines == sorted(
        [unicodedata.normalize("NFC", "copy r\u00e9sum\u00e9.txt"), unicodedata.normalize("NFC", "r\u00e9sum\u00e9.txt")],
        key=str.encode), "mv and cp store the NFC form"


def test_silent_commands(sample, host):
    new = sample.passphrase_file("new phrase")
    r = sample.c(f"mkdir /s; mkdir -p /s/t/u; cd /s; cd -; cd /s/t; cp /other.bin /s/c.bin; "
                 f"cp -r /photos /s/p; mv /s/c.bin /s/d.bin; rm /s/d.bin; rm -r /s/p; rmdir /s/t/u; "
                 f"lcd {q(str(host))}; set remove-originals off; passwd --new-passphrase-file {q(str(new))}")
    assert r.rc == 0, r.describe()
    assert r.out == "passphrase changed\n", \
        "mkdir, cd, cp, mv, rm, rmdir, lcd and set KEY VALUE are silent on success; passwd says it changed" + r.describe()
    assert r.err_lines == [], "nothing on stderr either" + r.describe()


def test_ls_json_escapes_every_name(vault, host):
    """--json is for scripts: names with quotes, backslashes, control characters, newlines and
    non-ASCII characters still give exactly one valid JSON object per line."""
    names = ['q"uote', "back\\slash", "new\nline", "tab\there", "bell\x07", "del\x7f", "é😀", "\u2028sep"]
    d = host / "odd"
    d.mkdir()
    for name in names:
        (d / name).write_bytes(name.encode())
    r = vault.ok(f"import {q(str(d))}")
    j = vault.ok("ls --json /odd")
    lines = j.outb.split(b"\n")
    assert lines[-1] == b"", "ls --json ends with a newline"
    objs = []
    for raw in lines[:-1]:
        try:
            objs.append(json.loads(raw))
        except ValueError:
            pytest.fail(f"ls --json line is not valid JSON: {raw!r}" + j.describe())
    assert sorted(o["name"] for o in objs) == sorted(names), \
        "ls --json gives one object per item, with the exact name" + j.describe()


def test_a_relative_vault_path_stays_put_when_lcd_moves(narnia, host, tmp_path):
    """`--vault store` is resolved once: after `lcd` into a folder holding another `store`, new
    objects must still go to this vault (they went to the other folder's, and with --move the
    original was gone and the vault could not read its copy)."""
    here, there = tmp_path / "a", tmp_path / "b"
    for d in (here, there):
        d.mkdir()
        r = narnia("init", cwd=d, vault="store")
        assert r.rc == 0, r.describe()
    photo = host / "photo.bin"
    data = os.urandom(100_000)
    photo.write_bytes(data)
    r = narnia.c(f"lcd {q(str(there))}; import --move {q(str(photo))}; verify", cwd=here, vault="store")
    assert r.rc == 0 and "verified 1 item, all intact" in r.out, r.describe()
    assert narnia.ok("cat /photo.bin", cwd=here, vault="store").outb == data
    assert narnia.ok("ls /", cwd=there, vault="store").out == ""


def test_import_move_of_a_link_named_on_the_command_line_keeps_it_and_names_its_file(vault, host):
    """Review AE: `import --move LINK` removed the link and kept the file it points to, its
    plaintext, without a word. A link is not the original: both are kept, and the warning names
    the file. A linked folder is walked as any folder named there: its files are the originals,
    removed; the link and the folder it points to stay."""
    elsewhere = host / "elsewhere"
    write_tree(elsewhere, {"t.txt": b"target", "d/x.txt": b"in a linked folder", "d/sub/y.txt": b"deeper"})
    (host / "link.txt").symlink_to("elsewhere/t.txt")
    (host / "linkdir").symlink_to("elsewhere/d")
    r = vault.ok(f"import --move {q(str(host / 'link.txt'))} {q(str(host / 'linkdir'))}")
    assert f"narnia: warning: import: {host / 'link.txt'}: a symbolic link: the file it points to, {elsewhere / 't.txt'}, " \
        "is kept, and so is the link (the vault holds its bytes; remove them once you are sure)" in r.err_lines, r.describe()
    assert (host / "link.txt").is_symlink() and (elsewhere / "t.txt").read_bytes() == b"target"
    assert vault.ok("cat /link.txt /linkdir/x.txt /linkdir/sub/y.txt").outb == b"targetin a linked folderdeeper"
    assert (host / "linkdir").is_symlink() and (elsewhere / "d").is_dir(), "the link and its folder stay"
    assert not (elsewhere / "d/x.txt").exists() and not (elsewhere / "d/sub").exists(), "its files were moved"


def test_import_move_of_two_hard_links_removes_both(vault, host):
    d = host / "links"
    d.mkdir()
    (d / "a.txt").write_bytes(b"same inode")
    os.link(d / "a.txt", d / "b.txt")
    r = vault.ok(f"import --move {q(str(d))}")
    assert not any("changed while it was imported" in l or "hard link" in l for l in r.err_lines), r.describe()
    assert not d.exists(), "both links and then the folder were removed"
    assert vault.ok("cat /links/a.txt /links/b.txt").outb == b"same inodesame inode"


def test_import_move_names_an_original_whose_other_name_still_holds_its_bytes(vault, host):
    """`import --move` of a file with a hard link elsewhere removed the name given and left the
    plaintext under the other, without a word. The other name is not removed (it may be
    another's), but the warning says the bytes are still on the disk."""
    (host / "a.txt").write_bytes(b"two names")
    os.link(host / "a.txt", host / "elsewhere.txt")
    r = vault.ok(f"import --move {q(str(host / 'a.txt'))}")
    assert f"narnia: warning: import: {host / 'a.txt'}: removed, but another name (a hard link) still holds its bytes on the disk" \
        in r.err_lines, r.describe()
    assert not (host / "a.txt").exists() and (host / "elsewhere.txt").read_bytes() == b"two names"

"""Viewing (BRIEF §5, issue 4): `open` routing, viewer settings, the hardened player, the
thumbnail grid and hidden names.

Helper programs are real where the test is about what a person sees (chafa, ffmpeg, pdftotext)
and fakes early in PATH where the test is about what they are given (mpv, less, viewers that
hash their input). Terminal behaviour goes through a pseudo-terminal.
Debian packages (TEST_PACKAGES): chafa, ffmpeg, poppler-utils, less, libheif-examples.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import termios
import time
from pathlib import Path

import pytest

from harness import blank_image, q, sha
from terminal import Terminal
from test_kinds import build_media_corpus, need

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@pytest.fixture(scope="module")
def media(tmp_path_factory) -> Path:
    return build_media_corpus(tmp_path_factory.mktemp("viewmedia"))


def fake_bin(dirpath: Path, name: str, script: str) -> Path:
    dirpath.mkdir(parents=True, exist_ok=True)
    p = dirpath / name
    p.write_text("#!/bin/sh\n" + script)
    p.chmod(0o755)
    return p


def env_with(vault, path_first: Path | None = None, **extra) -> dict:
    env = dict(vault.env)
    if path_first is not None:
        env["PATH"] = f"{path_first}:{env.get('PATH', '/usr/bin:/bin')}"
    for k, v in extra.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def wait_for(predicate, timeout=30.0, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def cmdline(pid: int) -> bytes:
    """The arguments of process `pid`, NUL-separated; empty once it has ended (a process seen
    in /proc may end before its arguments are read)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def descends_from(pid: int, ancestor: int) -> bool:
    """True when `ancestor` is `pid`'s parent, or its parent's, and so on (read from /proc)."""
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().split(") ")[-1].split()[1])
        except (FileNotFoundError, ProcessLookupError):
            return False
        if pid == ancestor:
            return True
    return False


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        pass
    try:  # a zombie counts as dead
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):   # it went between the two (ESRCH on read)
        return False


# ---------------------------------------------------------------------------------------------
# A pseudo-terminal


class PtyRun(Terminal):
    """narnia on a pseudo-terminal (its controlling terminal), 100x40."""

    def __init__(self, vault, args, env, cols=100, rows=40):
        super().__init__(vault.argv(args), env, vault.workdir, cols=cols, rows=rows)

    def finish(self, timeout=60.0) -> int:
        """Reads until narnia ends; returns its exit status."""
        rc = self.wait(timeout)
        self.close()
        return rc


def colour_env(vault, **extra):
    return env_with(vault, TERM="xterm-256color", NO_COLOR=None, COLORTERM=None, **extra)


# ---------------------------------------------------------------------------------------------
# No plaintext anywhere


def tree_listing(root: Path, skip=lambda path: False) -> set[str]:
    """Every path under `root`, links not followed, but not inside a folder `skip` says to
    leave. Walked with a list, not `os.walk`, whose recursion failed on a folder nested a
    thousand deep that another program left in /tmp."""
    out: set[str] = set()
    pending = [str(root)]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            out.add(entry.path)
            if entry.is_dir(follow_symlinks=False) and not skip(entry.path):
                pending.append(entry.path)
    return out


def private_places(vault) -> list[Path]:
    home = Path(vault.env["HOME"])
    return [home, home / ".cache", Path(vault.env["XDG_RUNTIME_DIR"]), Path(vault.env["TMPDIR"])]


class NoTrace:
    """The files under /tmp, $XDG_RUNTIME_DIR, $HOME, ~/.cache and $TMPDIR before and after.

    The private places (HOME, XDG_RUNTIME_DIR, ~/.cache, TMPDIR) must be exactly the same. /tmp
    is shared with whatever else runs on the machine, so there no new file may hold the secret
    content (other processes may add their own files meanwhile) — save in other tests' folders:
    tests running at the same time (pytest-xdist's workers, and `make test`'s other pass) make
    the same media there."""

    # The folders pytest makes tests in: /tmp/pytest-of-USER/, and the ordinary-user pass's.
    OTHER_TESTS = re.compile(r"/tmp/(pytest-of-[^/]+|narnia-ordinary-user\.[^/]+)/")

    def __init__(self, vault, secret: bytes, allowed: set[str]):
        self.vault = vault
        self.secret = secret
        self.allowed = allowed
        self.private_before = {str(p): tree_listing(p) for p in private_places(vault)}
        self.tmp_before = tree_listing(Path("/tmp"), self.other_tests_folder)

    def other_tests_folder(self, path: str) -> bool:
        """A folder of another test, not walked: reading it dated it, and a test of access
        times running beside this one failed (`test_reading_the_store_leaves_access_times_as_they_were`)."""
        own = str(self.vault.workdir)
        inside = path + "/"
        return bool(self.OTHER_TESTS.match(inside)) and not own.startswith(inside) and not inside.startswith(own + "/")

    def check(self):
        for p in private_places(self.vault):
            after = tree_listing(p) - self.allowed
            assert after == self.private_before[str(p)] - self.allowed, \
                f"files appeared or vanished under {p}: {sorted(after ^ self.private_before[str(p)])}"
        new = tree_listing(Path("/tmp"), self.other_tests_folder) - self.tmp_before - self.allowed
        needle = self.secret[:64]
        own = str(self.vault.workdir) + "/"
        for f in sorted(new):
            if self.OTHER_TESTS.match(f) and not f.startswith(own):
                continue
            try:
                if os.path.isfile(f) and not os.path.islink(f) and os.path.getsize(f) >= len(needle):
                    with open(f, "rb") as fh:
                        assert needle not in fh.read(64 << 20), f"plaintext of the item found in {f}"
            except (PermissionError, FileNotFoundError):
                pass


@pytest.fixture
def tvault(vault, tmp_path):
    """A vault whose runs have a private TMPDIR too."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    vault.env["TMPDIR"] = str(tmpdir)
    return vault


# ---------------------------------------------------------------------------------------------
# Routing through configured viewers


def test_open_delivers_exact_bytes_through_stdin_and_path(tvault, host, tmp_path):
    # Several chunks. A fixed start keeps it application/octet-stream (kind other): random bytes
    # alone are now and then a format to libmagic (an image once: chafa was asked to draw it).
    data = b"narnia test blob\x00\xff" + os.urandom(3 * 1048576 + 12345)
    (host / "blob.bin").write_bytes(data)
    (host / "notes.txt").write_text("Meet at the lamp-post.\n" * 1000)
    tvault.ok(f"import {q(str(host / 'blob.bin'))} {q(str(host / 'notes.txt'))}")
    outdir = tmp_path / "out"
    outdir.mkdir()
    a, b, c = outdir / "a", outdir / "b", outdir / "c"
    trace = NoTrace(tvault, data, {str(a), str(b), str(c)})
    tvault.ok(f"set viewer.other {q(f'sha256sum > {a}')}")
    tvault.ok("open blob.bin")
    tvault.ok(f"set viewer.other {q(f'sha256sum %s > {b}; ls -l %s >> {b}')}")
    tvault.ok("open blob.bin")
    tvault.ok(f"set viewer.document {q(f'sha256sum > {c}')}")
    tvault.ok("open notes.txt")
    assert a.read_text().split()[0] == sha(data), "stdin viewer got other bytes"
    assert b.read_text().split()[0] == sha(data), "%s viewer got other bytes"
    assert "/proc/self/fd/3" in b.read_text(), "%s must be a /proc/self/fd path"
    assert c.read_text().split()[0] == sha((host / "notes.txt").read_bytes())
    trace.check()
    # The settings are stored in the vault, encrypted: nothing readable on disk.
    for p in tvault.store().files():
        assert b"sha256sum" not in p.read_bytes(), f"a viewer setting is readable in {p}"


def test_viewer_for_a_mime_type_wins_over_the_kind(vault, host, tmp_path):
    (host / "n.txt").write_text("text\n")
    vault.ok(f"import {q(str(host / 'n.txt'))}")
    vault.ok("set viewer.text/plain 'cat > /dev/null'")
    out = tmp_path / "mime"
    vault.ok(f"set viewer.document {q('echo kind > ' + str(out))}; set viewer.text/plain {q('echo mime > ' + str(out))}")
    vault.ok("open n.txt")
    assert out.read_text().strip() == "mime"
    # Review CT-6: as in mailcap, `text/*` is every text type: after the exact type, before the kind.
    vault.ok(f"set viewer.text/plain ''; set viewer.text/* {q('echo any-text > ' + str(out))}")
    vault.ok("open n.txt")
    assert out.read_text().strip() == "any-text"
    # Review CZ-7: a `*` elsewhere is no setting (it was taken, and never used).
    for key in ("viewer.*/*", "viewer.text/pl*"):
        vault.fails(f"set {q(key)} cat", "set")


def test_a_viewer_mime_type_is_set_in_any_case(vault, host, tmp_path):
    """MIME types are case-insensitive: `viewer.TEXT/PLAIN` was kept apart from the type
    libmagic gives, listed, and never used (review AX6)."""
    (host / "n.txt").write_text("text\n")
    out = tmp_path / "mime"
    vault.ok(f"import {q(str(host / 'n.txt'))}; set viewer.TEXT/Plain {q('echo upper > ' + str(out))}")
    vault.ok("open n.txt")
    assert out.read_text().strip() == "upper"
    assert vault.ok("set viewer.text/PLAIN").out.strip() == f"echo upper > {out}"
    assert [l for l in vault.ok("set").out_lines if "plain" in l.lower()] == [f"viewer.text/plain echo upper > {out}"]


def test_viewer_failure_is_reported(vault, host):
    (host / "n.txt").write_text("text\n")
    vault.ok(f"import {q(str(host / 'n.txt'))}; set viewer.document 'exit 3'")
    vault.fails("open n.txt", "open")


def test_open_without_a_terminal_writes_text_pdf_and_hex(vault, media):
    vault.ok(f"import {media / 'notes.txt'} {media / 'paper.pdf'} {media / 'random.bin'}")
    r = vault.ok("open notes.txt")
    assert r.outb == (media / "notes.txt").read_bytes()
    if need("pdftotext", "poppler-utils"):
        assert "Quarterly report of the lamp-post" in vault.ok("open paper.pdf").out
    r = vault.ok("open random.bin")
    lines = r.out_lines
    assert lines[0] == "/random.bin: data"
    assert "00000000: 0001 feff" in r.out
    assert len([l for l in lines if re.match(r"^[0-9a-f]{8}: ", l)]) == -(-4100 // 16)


def test_a_folder_cannot_be_opened(vault):
    vault.ok("mkdir box")
    vault.fails("open box", "open")


def test_missing_program_names_its_package_and_shows_hex(vault, media, tmp_path):
    vault.ok(f"import {media / 'photo.png'} {media / 'clip.mp4'}")
    empty = tmp_path / "emptybin"
    empty.mkdir()
    env = env_with(vault, PATH=str(empty))
    r = vault("-c", "open photo.png", env=env)
    assert r.rc == 0, r.describe()
    assert "chafa is not installed (Debian package: chafa)" in r.err
    assert "00000000: 8950 4e47" in r.out
    r = vault("-c", "open clip.mp4", env=env)
    assert r.rc == 0, r.describe()
    assert "mpv is not installed (Debian package: mpv)" in r.err


# ---------------------------------------------------------------------------------------------
# The player

FAKE_MPV = """\
rec="$FAKE_MPV_DIR"
echo $$ > "$rec/pid.tmp"
for a in "$@"; do printf '%s\\n' "$a"; done > "$rec/argv"
env > "$rec/env"
fd=$(for a in "$@"; do case "$a" in fd://*) echo "${a#fd://}";; esac; done)
sha256sum < "/proc/self/fd/$fd" > "$rec/sha"
mv "$rec/pid.tmp" "$rec/pid"
exec sleep 300
"""

# No messages (review BM-1: mpv quotes strings of the file in its warnings, escape sequences and
# all, onto the terminal).
HARDENING = ["--mute=yes", "--no-config", "--ytdl=no", "--load-scripts=no", "--autoload-files=no",
             "--no-resume-playback", "--save-position-on-quit=no", "--msg-level=all=no"]


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL", "SIGHUP"])
def test_mpv_gets_every_hardening_flag_and_dies_with_the_session(vault, media, tmp_path, how):
    vault.ok(f"import {media / 'clip.mp4'}")
    bindir, rec = tmp_path / "fakebin", tmp_path / "rec"
    rec.mkdir()
    fake_bin(bindir, "mpv", FAKE_MPV)
    env = env_with(vault, bindir, FAKE_MPV_DIR=str(rec), DISPLAY=None, WAYLAND_DISPLAY=None, MPV_VERBOSE="1", FFREPORT="level=32")
    proc = subprocess.Popen(vault.argv(["-c", "open clip.mp4"]), env=env, cwd=str(vault.workdir),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: (rec / "pid").exists(), what="the player to start")
        argv = (rec / "argv").read_text().splitlines()
        for flag in HARDENING:
            assert flag in argv, f"mpv lacks {flag}: {argv}"
        titles = [a for a in argv if a.startswith("--force-media-title=")]
        assert titles and "clip" not in titles[0], argv
        assert "--vo=tct" in argv, "no display: the video must go to the terminal"
        given = (rec / "env").read_text().splitlines()
        assert not [v for v in given if v.startswith(("MPV_VERBOSE=", "FFREPORT="))], "withheld from helpers (review BM-2)"
        inputs = [a for a in argv if a.startswith("fd://")]
        assert len(inputs) == 1 and argv[-1] == inputs[0], argv
        assert not any("clip.mp4" in a for a in argv), "the item's name must not reach the player"
        assert (rec / "sha").read_text().split()[0] == sha((media / "clip.mp4").read_bytes())
        player = int((rec / "pid").read_text())
        assert pid_alive(player)
        proc.send_signal(getattr(signal, how))
        proc.wait(timeout=30)
        wait_for(lambda: not pid_alive(player), timeout=10, what="the player to die with the session")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_mpv_uses_the_display_when_there_is_one(vault, media, tmp_path):
    vault.ok(f"import {media / 'clip.mp4'}")
    bindir, rec = tmp_path / "fakebin", tmp_path / "rec"
    rec.mkdir()
    fake_bin(bindir, "mpv", FAKE_MPV.replace("exec sleep 300", "exit 0"))
    env = env_with(vault, bindir, FAKE_MPV_DIR=str(rec), DISPLAY=":99")
    r = vault("-c", "open clip.mp4", env=env)
    assert r.rc == 0, r.describe()
    argv = (rec / "argv").read_text().splitlines()
    assert "--vo=tct" not in argv and "--mute=yes" in argv


# ---------------------------------------------------------------------------------------------
# On a terminal


def bare_jpeg(media, folder: Path) -> Path:
    """`bare.jpg`: the corpus JPEG without its JFIF segment, as some encoders write them, which
    Debian 12's chafa reads only from a file whose name ends in .jpg."""
    jpeg = (media / "photo.jpg").read_bytes()
    assert jpeg[2:4] == b"\xff\xe0", "a JFIF segment to take out"
    (folder / "bare.jpg").write_bytes(jpeg[:2] + jpeg[4 + int.from_bytes(jpeg[4:6], "big"):])
    return folder / "bare.jpg"


@pytest.mark.parametrize("name", ["photo.png", "photo.jpg", "bare.jpg"])
def test_photo_is_drawn_through_a_pseudo_terminal(vault, media, name, tmp_path):
    """A JPEG without a JFIF or Exif segment too (as some encoders write them): Debian 12's
    chafa reads none from standard input, and `open` printed only chafa's "Unknown file format",
    exit 0 (a review)."""
    need("chafa", "chafa")
    if name == "bare.jpg":
        vault.ok(f"import {bare_jpeg(media, tmp_path)}")
        assert "mime: image/jpeg" in vault.ok(f"stat {name}").out
    else:
        vault.ok(f"import {media / name}")
    run = PtyRun(vault, ["-c", f"open {name}"], colour_env(vault))
    rc = run.finish()
    assert rc == 0, run.text[-2000:]
    text = run.text
    assert re.search(r"\x1b\[(38|48);(5|2);", text), "no colour sequences: the photo was not drawn"
    blocks = [ch for ch in text if 0x2580 <= ord(ch) <= 0x259F or 0x1FB00 <= ord(ch) <= 0x1FBFF]
    assert len(blocks) > 50, "too few block symbols for a drawn photo"
    assert len([l for l in ANSI.sub("", text).splitlines() if l.strip()]) >= 5


def test_a_photo_chafa_cannot_draw_fails_the_command(vault, media, tmp_path):
    need("chafa", "chafa")
    broken = tmp_path / "broken.png"
    broken.write_bytes((media / "photo.png").read_bytes()[:120])   # its header, and no picture
    vault.ok(f"import {broken}")
    assert "kind: photo" in vault.ok("stat broken.png").out
    run = PtyRun(vault, ["-c", "open broken.png"], colour_env(vault))
    assert run.finish() == 1
    # Review CT-7: the path once, not twice.
    assert "open: /broken.png: chafa could not draw it" in run.text and run.text.count("broken.png") == 1, run.text


def test_pager_is_less_hardened_and_fed_on_stdin(vault, media, tmp_path):
    vault.ok(f"import {media / 'notes.txt'} {media / 'paper.pdf'}")
    bindir, rec = tmp_path / "fakebin", tmp_path / "rec"
    rec.mkdir()
    fake_bin(bindir, "less", 'n=$(ls "$FAKE_DIR" | wc -l)\n'
             'printf "%s|%s|%s|%s|%s\\n" "$*" "$LESSSECURE" "$LESSHISTFILE" "${LESSOPEN-unset}" "${LESS-unset}" > "$FAKE_DIR/$n.args"\n'
             'cat > "$FAKE_DIR/$n.in"\n')
    env = colour_env(vault, PATH=f"{bindir}:{vault.env['PATH']}", FAKE_DIR=str(rec), LESSOPEN="|cat %s", LESS="-R")
    run = PtyRun(vault, ["-c", "open notes.txt; open paper.pdf"], env)
    assert run.finish() == 0, run.text
    # No -R, and the user's LESS dropped: less shows a file's escape sequences as text.
    assert (rec / "0.args").read_text().strip() == "|1|-|unset|unset"
    assert (rec / "0.in").read_bytes() == (media / "notes.txt").read_bytes()
    assert (rec / "2.args").read_text().strip() == "|1|-|unset|unset"
    assert "Quarterly report of the lamp-post" in (rec / "2.in").read_text()


def test_a_lesskey_file_writes_no_history_of_a_vault_document(vault, media, tmp_path):
    """Review CT-1: less reads the `#env` section of the user's `~/.lesskey` before the
    environment, so one naming a history file beat `LESSHISTFILE=-`: a search typed while
    reading a vault document was written to it. No lesskey file is read."""
    history = tmp_path / "less-history"
    home = Path(vault.env["HOME"])
    (home / ".lesskey").write_text(f"#env\nLESSHISTFILE={history}\n")
    vault.ok(f"import {media / 'notes.txt'}")
    run = PtyRun(vault, ["-c", "open notes.txt"], env_with(vault, TERM="xterm"))
    run.read_until(lambda o: b"lamp-post" in o)
    run.send("/lamp\r")
    time.sleep(0.3)
    run.send("q")
    assert run.finish() == 0, run.text
    assert not history.exists(), history.read_text()


def test_stepping_through_items_next_previous_quit(vault, host, tmp_path):
    for n in "abc":
        (host / f"{n}.txt").write_text(f"item {n}\n")
    out = tmp_path / "seen"
    vault.ok(f"import {host / 'a.txt'} {host / 'b.txt'} {host / 'c.txt'}; "
             f"set viewer.document {q('cat >> ' + str(out))}")
    run = PtyRun(vault, ["enter"], colour_env(vault))
    run.read_until(lambda o: b"> " in o)
    run.send(b"open *.txt\r")
    run.read_until(lambda o: b"(1/3)" in o)
    run.send(b"n")
    run.read_until(lambda o: b"(2/3)" in o)
    run.send(b"p")
    run.read_until(lambda o: o.count(b"(1/3)") >= 2)
    run.send(b"q")
    run.read_until(lambda o: o.count(b"> ") >= 2)
    run.send(b"exit\r")
    assert run.finish() == 0, run.text
    assert out.read_text() == "item a\nitem b\nitem a\n"


# ---------------------------------------------------------------------------------------------
# The grid and hidden names

MIXED = ["photo.png", "photo.jpg", "clip.mp4", "paper.pdf", "notes.txt", "bundle.zip"]


def has_ls_grid(vault) -> bool:
    return "-g" in vault.ok("help ls").out


def grid_commands(vault):
    return ["grid"] + (["ls -g"] if has_ls_grid(vault) else [])


def test_grid_draws_a_folder_of_mixed_kinds(tvault, media, tmp_path):
    need("chafa", "chafa")
    need("ffmpeg", "ffmpeg")
    tvault.ok("mkdir sub; " + "import " + " ".join(str(media / n) for n in MIXED) + f" {bare_jpeg(media, tmp_path)}")
    trace = NoTrace(tvault, (media / "clip.mp4").read_bytes(), set())
    for command in grid_commands(tvault):
        r = tvault.ok(command)
        text = r.out
        plain = ANSI.sub("", text)
        labels = [l for l in plain.splitlines() if "paper.pdf" in l or "sub/" in l or "photo.png" in l]
        assert labels, plain
        for name in ["photo.png", "photo.jpg", "bare.jpg", "▶ clip.mp4", "paper.pdf", "notes.txt", "bundle.zip", "sub/"]:
            assert name in plain, f"{name} missing from the grid:\n{plain}"
        assert "│    ▶     │" not in plain, "the video got the fallback icon, not a poster frame"
        assert "│    ▣     │" not in plain, "a photo got the fallback icon, not a thumbnail"
        assert plain.count("▶") >= 2, "the video thumbnail has no play badge"
        assert "┌────┐" in plain and "│ ────── │" in plain, "folder and document icons missing"
        symbols = [ch for ch in plain if 0x2580 <= ord(ch) <= 0x259F or 0x1FB00 <= ord(ch) <= 0x1FBFF]
        assert len(symbols) > 30, "photo thumbnails not drawn"
        assert "Quarterly" not in plain and "lamp-post" not in plain, "document content shown in the grid"
    trace.check()


def test_ls_g_draws_in_the_order_asked_for(vault):
    """Review DM-1: the grid was always in name order, whatever -t, -S or -r asked."""
    vault.ok("mkdir /g; cd /g; import - a.txt; import - c.txt", input=b"x")
    vault.ok("cd /g; import - b.txt", input=b"bigger than the others")
    for flags, order in (("", "abc"), ("-r", "cba"), ("-S", "bac"), ("-Sr", "cab")):
        plain = ANSI.sub("", vault.ok(f"ls -g {flags} /g").out)
        shown = "".join(n[0] for n in re.findall(r"\b[abc]\.txt", plain))
        assert shown == order, f"ls -g {flags}:\n{plain}"


def test_grid_of_files_in_several_folders_draws_each_under_its_folder(vault, media):
    """Review AL: `grid /*/*.png` captioned thumbnails of two folders with their bare names."""
    vault.ok(f"mkdir /a /b; cd /a; import {q(str(media / 'photo.png'))}; cd /b; import {q(str(media / 'photo.png'))}")
    for command in grid_commands(vault):
        plain = ANSI.sub("", vault.ok(f"{command} /*/*.png").out)
        lines = plain.splitlines()
        assert "/a:" in lines and "/b:" in lines and lines.index("/a:") < lines.index("/b:"), plain
        assert plain.count("photo.png") == 2, plain


def test_grid_leaves_no_report_file_whatever_the_environment_asks(vault, media, tmp_path):
    """Review BM-2: with FFREPORT in the user's environment, the ffmpeg behind a video's
    thumbnail wrote its report log into the current folder, plaintext: the video's title,
    comment and place. No helper gets it."""
    vault.ok(f"import {media / 'clip.mp4'}")
    here = tmp_path / "here"
    here.mkdir()
    r = vault.c("grid", env=env_with(vault, FFREPORT="level=32"), cwd=here)
    assert r.rc == 0, r.describe()
    assert list(here.iterdir()) == [], "nothing written where narnia ran"


def test_grid_in_colour_on_a_terminal(vault, media):
    need("chafa", "chafa")
    vault.ok("import " + " ".join(str(media / n) for n in MIXED))
    run = PtyRun(vault, ["-c", "grid"], colour_env(vault), cols=120)
    assert run.finish() == 0, run.text
    assert re.search(r"\x1b\[(38|48);5;", run.text)
    rows = [l for l in ANSI.sub("", run.text).splitlines() if "paper.pdf" in l]
    assert rows and len(rows[0]) <= 120


SECRET_NAMES = {"lucy-at-the-lamp.png": "photo.png", "tumnus-tea.mp4": "clip.mp4",
                "witch-plans.pdf": "paper.pdf", "edmund-diary.txt": "notes.txt"}


def secret_vault(vault, media, tmp_path):
    for name, src in SECRET_NAMES.items():
        (tmp_path / name).write_bytes((media / src).read_bytes())
    vault.ok("mkdir aslan-camp; import " + " ".join(q(str(tmp_path / n)) for n in SECRET_NAMES)
             + "; set hide-names on")
    return vault


ALL_SECRET = list(SECRET_NAMES) + ["aslan-camp"]


def test_hide_names_hides_every_name_on_screen(vault, media, tmp_path):
    need("chafa", "chafa")
    secret_vault(vault, media, tmp_path)
    # Not on a terminal (scripts), names are listed as they are.
    assert "witch-plans.pdf" in vault.ok("ls").out
    out = tmp_path / "opened"
    vault.ok(f"set viewer.document {q('sha256sum > ' + str(out))}; set viewer.other {q('exit 1')}")
    # #2 is edmund-diary.txt (name order: aslan-camp, edmund-diary.txt, lucy…, tumnus…, witch…).
    run = PtyRun(vault, ["-c", "grid; open '#2'\n-open '#1'\n-open '#9'\n-grid '#4'"], colour_env(vault))
    run.finish()
    screen = ANSI.sub("", run.text)
    assert out.read_text().split()[0] == sha((media / "notes.txt").read_bytes()), "#2 did not name the item"
    assert "▸ #1/" in screen and "/#1: is a folder" in screen, screen
    leaks = [n for n in ALL_SECRET if n in screen]
    assert not leaks, f"names on screen with hide-names on: {leaks}\n{screen}"


def test_hide_names_grid_headers_are_masked_paths_as_in_ls(vault, media, tmp_path):
    """Review AN: the grid's folder headers under hide-names showed a folder's own `#N` only,
    where `ls` shows its whole path masked (`/#1/#2:`): two folders of one number looked alike."""
    (tmp_path / "lion.png").write_bytes((media / "photo.png").read_bytes())
    vault.ok(f"mkdir -p /narnia/cair /tashbaan/cair; cd /narnia/cair; import {q(str(tmp_path / 'lion.png'))}; "
             f"cd /tashbaan/cair; import {q(str(tmp_path / 'lion.png'))}; set hide-names on")
    run = PtyRun(vault, ["-c", "grid /*/*/*.png; ls /*/cair"], colour_env(vault))
    run.finish()
    screen = ANSI.sub("", run.text)
    lines = [l.strip() for l in screen.splitlines()]
    assert lines.count("/#1/#1:") == 2 and lines.count("/#2/#1:") == 2, screen   # once in the grid, once in ls
    leaks = [n for n in ("narnia", "tashbaan", "cair", "lion") if n in screen.replace("narnia:", "")]
    assert not leaks, f"names on screen with hide-names on: {leaks}\n{screen}"


def test_hide_names_in_ls_listings(vault, media, tmp_path):
    secret_vault(vault, media, tmp_path)
    run = PtyRun(vault, ["-c", "ls; ls -l; ls '#1'"] + [], colour_env(vault))
    run.finish()
    screen = ANSI.sub("", run.text)
    leaks = [n for n in ALL_SECRET if n in screen]
    assert not leaks, f"names on screen with hide-names on: {leaks}\n{screen}"
    assert "#3" in screen and "#4" in screen


def test_hide_names_hides_names_from_every_command_the_prompt_and_completion(vault, media, tmp_path):
    """Under hide-names, no item name appears anywhere on screen: the prompt, Tab's candidates,
    find, stat, du, tree, pwd, error messages; folders are shown by number too."""
    secret_vault(vault, media, tmp_path)
    vault.ok("cd aslan-camp; mkdir winter-tents; cd winter-tents; import " + q(str(tmp_path / "edmund-diary.txt")))
    secrets = ALL_SECRET + ["winter-tents"]
    run = PtyRun(vault, ["-c", "find /; stat '#1'; du '#1'; tree; cd '#1'; pwd; ls '#1'\n-cd '/#3'\n"
                         "-cd /aslan-camp/nope\n-rmdir '#1'\n-cat '#1'"], colour_env(vault))
    run.finish()
    screen = ANSI.sub("", run.text)
    leaks = [n for n in secrets if n in screen]
    assert not leaks, f"names on screen with hide-names on: {leaks}\n{screen}"
    assert "/#1/#1" in screen and "#3: not a folder" in screen and "nope: no such file or folder" in screen, screen
    run = PtyRun(vault, ["enter"], vault.env)
    try:
        run.expect("> ")
        run.send("cd '#1'\r")
        run.expect("narnia:/#1> ")
        run.send("cd '#1'\r")
        run.expect("narnia:/#1/#1> ")
        run.send("open /\t\t")
        run.settle()
        run.send("\x15exit\r")
        assert run.finish() == 0
        screen = ANSI.sub("", run.text)
        leaks = [n for n in secrets if n in screen]
        assert not leaks, f"names on screen with hide-names on: {leaks}\n{screen}"
        assert "#5" in screen, "Tab offers the numbers"
    finally:
        run.close()


def test_hide_names_export_progress_shows_the_number(vault, media, tmp_path):
    """Review AQ F6: under hide-names, `export '#2' FILE` showed the item's own name in its
    progress bar, though every listing shows its number."""
    secret_vault(vault, media, tmp_path)
    run = PtyRun(vault, ["enter"], vault.env)
    try:
        run.expect("> ")
        run.send(f"export '#2' {q(str(tmp_path / 'out.bin'))}\r")
        run.expect("exported")
        run.send("exit\r")
        assert run.finish() == 0
    finally:
        run.close()
    screen = ANSI.sub("", run.text)
    leaks = [n for n in ALL_SECRET if n in screen]
    assert not leaks, f"names on screen with hide-names on: {leaks}\n{screen}"
    assert (tmp_path / "out.bin").read_bytes() == (media / "notes.txt").read_bytes()


def test_hide_names_in_the_grid(vault, media, tmp_path):
    secret_vault(vault, media, tmp_path)
    run = PtyRun(vault, ["-c", "grid; grid '#1'"], colour_env(vault))
    assert run.finish() == 0, run.text
    screen = ANSI.sub("", run.text)
    for n in ALL_SECRET:
        assert n not in screen, f"{n} shown in the grid with hide-names on"
    for label in ["▸ #1/", "≡ #2", "▣ #3", "▶ #4", "≡ #5"]:
        assert label in screen, f"{label} missing:\n{screen}"


# ---------------------------------------------------------------------------------------------
# Panic from anywhere: Ctrl-\ ends everything, whatever runs

CLEAR = b"\x1b[0m\x1b[H\x1b[2J\x1b[?1049l\x1b[3J\x1b[H\x1b[2J\x1b[3J\x1b[?25h\x1b[?1l\x1b>"   # the cursor shown again last (BM-4)
ENTER_ALTERNATE_SCREEN, LEAVE_ALTERNATE_SCREEN = b"\x1b[?1049h", b"\x1b[?1049l"


def panic_during(vault, env, commands, ready, tmp_path):
    """Runs `commands` in the interactive shell, waits for `ready` on the screen, presses
    Ctrl-\\, and checks that narnia ended at once with status 0, the screen and scrollback
    cleared, and no helper left running."""
    run = PtyRun(vault, ["enter"], env)
    try:
        run.expect("> ")
        before = set(int(p) for p in os.listdir("/proc") if p.isdigit())
        run.send(commands + "\r")
        run.expect(ready, timeout=30)
        time.sleep(0.3)
        # Only narnia's own descendants: anything else the machine starts meanwhile is not a helper.
        helpers = [p for p in (set(int(p) for p in os.listdir("/proc") if p.isdigit()) - before)
                   if pid_alive(p) and descends_from(p, run.pid)]
        run.send("\x1c")
        rc = run.finish(timeout=10)
        assert rc == 0, f"panic must exit 0, got {rc}"
        assert CLEAR in run.output, "the screen and scrollback must be cleared"
        # A pager killed on its alternate screen never left it: the main screen, whole, came
        # back with the next program that leaves one (a review).
        assert run.output.rfind(LEAVE_ALTERNATE_SCREEN) >= run.output.rfind(ENTER_ALTERNATE_SCREEN)
        for pid in helpers:
            wait_for(lambda: not pid_alive(pid), timeout=5, what=f"helper {pid} to die with the panic")
        return run.output
    finally:
        run.close()


@pytest.mark.parametrize("sig,viewer", [(signal.SIGTERM, "waits"), (signal.SIGHUP, "waits"),
                                        (signal.SIGKILL, "waits"), (signal.SIGKILL, "returns")])
def test_the_end_of_a_session_ends_what_a_viewer_started(vault, media, tmp_path, sig, viewer):
    """A viewer that runs commands of its own (a wrapper, a viewer that forks) left them running
    after SIGTERM or SIGHUP, holding the shown file (a review): at a terminal viewers share
    narnia's process group, and the parent-death signal reaches only the viewer itself. After
    SIGKILL too (review AQ), whether the viewer still runs or returned at once, leaving its
    command in the background with the file open: its guard kills what it left."""
    vault.ok(f"import {media / 'photo.png'}")
    marker = f"sleep {300 + sig}"
    command = f"cat %s > /dev/null; {marker}; true" if viewer == "waits" else f"{marker} < %s & true"
    vault.ok(f"set viewer.photo {q(command)}")
    # Started by a job-control shell, as people do: narnia does not lead the terminal's session,
    # so its end does not hang the terminal up on what is left in its process group.
    run = Terminal(["bash", "--norc", "--noprofile", "-c", "set -m; " + shlex.join(vault.argv(["enter"])) + "; echo ENDED $?; sleep 10"],
                   vault.env, vault.workdir)
    try:
        run.expect("> ")
        narnia = int(Path(f"/proc/{run.pid}/task/{run.pid}/children").read_text().split()[0])
        run.send("open photo.png\r")

        def started():
            """The viewer's processes running the marker (not its guard, whose arguments
            hold the viewer's command too)."""
            return [p for p in (int(d) for d in os.listdir("/proc") if d.isdigit())
                    if descends_from(p, narnia) and marker.encode() in (argv := cmdline(p)).replace(b"\0", b" ")
                    and not argv.startswith(b"narnia-viewer-guard\0")]
        wait_for(lambda: started(), timeout=20, what="the viewer's own command")
        helpers = started()
        if viewer == "returns":
            # The viewer's own shell, which may have been seen before it returned, is gone:
            # what runs now is what it left in the background.
            run.expect("> ")
            helpers = started()
            assert helpers, "the viewer's background command runs"
        for pid in helpers:
            assert any(os.readlink(f"/proc/{pid}/fd/{fd}").startswith("/memfd:") for fd in os.listdir(f"/proc/{pid}/fd")), \
                "the viewer's command holds the decrypted file"
        os.kill(narnia, sig)
        run.expect(f"ENDED {128 + sig}", timeout=10)
        for pid in helpers:
            wait_for(lambda: not pid_alive(pid), timeout=5, what=f"{marker} ({pid}) to end with the session")
    finally:
        run.close()


def test_ctrl_z_stops_the_viewer_with_narnia_and_kill_9_then_ends_it(vault, media, tmp_path):
    """Review AU: the viewer's guard, which ignores the terminal's keys, continued the viewer
    stopped by Ctrl-Z at once: it ran on behind the user's shell while narnia was stopped.
    It stays stopped with narnia; narnia then killed with SIGKILL, the guard ends it."""
    vault.ok(f"import {media / 'photo.png'}")
    tick = tmp_path / "tick"
    vault.ok(f"set viewer.photo {q(f'cat %s > /dev/null; while :; do echo >> {tick}; sleep 0.05; done')}")
    run = Terminal(["bash", "--norc", "--noprofile", "-c", "set -m; " + shlex.join(vault.argv(["-c", "open photo.png"])) + "; echo STATUS $?; sleep 10"],
                   vault.env, vault.workdir)
    try:
        wait_for(lambda: tick.exists() and len(tick.read_text()) > 3, timeout=20, what="the viewer to tick")
        narnia = int(Path(f"/proc/{run.pid}/task/{run.pid}/children").read_text().split()[0])
        loop: list[int] = []

        def one_loop() -> bool:
            """The viewer's loop, alone: a fork of it not yet running `sleep` (the same
            arguments for a moment) is waited out, as CI once met one that had ended."""
            loop[:] = [p for p in (int(d) for d in os.listdir("/proc") if d.isdigit())
                       if descends_from(p, narnia) and b"while" in (argv := cmdline(p))
                       and not argv.startswith(b"narnia-viewer-guard\0")]
            return len(loop) == 1
        wait_for(one_loop, timeout=10, what="the viewer's loop alone")
        run.send("\x1a")
        run.expect("STATUS 148", timeout=10)
        time.sleep(0.3)
        ticks = len(tick.read_text())
        time.sleep(1)
        assert len(tick.read_text()) == ticks, "the viewer went on while narnia was stopped"
        assert Path(f"/proc/{loop[0]}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
        os.kill(narnia, signal.SIGKILL)
        wait_for(lambda: not pid_alive(loop[0]), timeout=10, what="the stopped viewer to end with narnia")
    finally:
        run.close()


def test_a_narnia_that_cannot_run_itself_again_says_viewers_run_unguarded(vault, host, tmp_path):
    """Started through the dynamic loader, /proc/self/exe is the loader, not narnia: viewers
    run as before guards were made, and the first open says so once (review AU: every
    guarded viewer failed with exit status 127, the pager without a word)."""
    loader = next((p for p in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1") if os.path.exists(p)), None)
    if loader is None:
        pytest.skip("no known dynamic loader here")
    (host / "n.txt").write_text("hello\n")
    out = tmp_path / "out"
    vault.ok(f"import {q(str(host / 'n.txt'))}; set viewer.document {q(f'cat %s >> {out}')}")
    r = subprocess.run([loader] + vault.argv(["-c", "open n.txt; open n.txt"]), env=vault.env, cwd=str(vault.workdir),
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 0, r.stderr
    assert out.read_text() == "hello\nhello\n"
    assert r.stderr.count("viewers run without their guard") == 1, r.stderr
    # An open that starts no guarded program (the hex view) says nothing of guards (review AV).
    (host / "b.bin").write_bytes(b"\x00\xfe\x01narnia\x00" * 100)
    vault.ok(f"import {q(str(host / 'b.bin'))}")
    r = subprocess.run([loader] + vault.argv(["-c", "open b.bin"]), env=vault.env, cwd=str(vault.workdir),
                       capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and "guard" not in r.stderr and r.stdout, r.stderr


def test_narnia_on_btrfs_runs_itself_again_as_the_guard(vault, host, tmp_path):
    """Review AV: the check that /proc/self/exe is narnia compared the device /proc/self/maps
    gives (the file system's) with stat's (on btrfs, the subvolume's own): on btrfs every
    viewer ran unguarded, with a warning that named the wrong cause."""
    if os.geteuid() != 0 or shutil.which("mkfs.btrfs") is None:
        pytest.skip("needs root and mkfs.btrfs to mount a btrfs image")
    image, mount = blank_image(tmp_path / "btrfs.img", 256), tmp_path / "btrfs"
    subprocess.run(["mkfs.btrfs", "-q", str(image)], check=True, capture_output=True)
    mount.mkdir()
    r = subprocess.run(["mount", "-o", "loop", str(image), str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a loop device here: {r.stderr.strip()}")
    try:
        shutil.copy2(vault.binary, mount / "narnia")
        (host / "n.txt").write_text("hello\n")
        parent = tmp_path / "parent"
        vault.ok(f"import {q(str(host / 'n.txt'))}; set viewer.document {q(f'cat /proc/$PPID/cmdline > {parent}; : %s')}")
        r = subprocess.run([str(mount / "narnia")] + vault.argv(["-c", "open n.txt"])[1:], env=vault.env, cwd=str(vault.workdir),
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
        assert r.returncode == 0 and "without their guard" not in r.stderr, r.stderr
        assert parent.read_bytes().startswith(b"narnia-viewer-guard\0"), parent.read_bytes()
    finally:
        subprocess.run(["umount", str(mount)], capture_output=True)


def test_panic_at_the_step_prompt_after_a_photo(vault, media, tmp_path):
    vault.ok(f"import {media / 'photo.png'} {media / 'notes.txt'}")
    panic_during(vault, vault.env, "open photo.png notes.txt", "[n]ext", tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_session_ended_while_less_shows_a_document_leaves_no_page_on_the_terminal(vault, media, sig):
    """Review CT-3: killed by SIGTERM (a lock script) while less showed a document, narnia wrote
    nothing more: the terminal stayed on less's alternate screen, the page of plaintext under
    the user's next prompt; after SIGKILL echo was off too. narnia leaves the screen and puts
    the modes back, and after SIGKILL the pager's guard does."""
    vault.ok(f"import {media / 'notes.txt'}")
    env = env_with(vault, TERM="xterm")
    run = Terminal(["bash", "--norc", "--noprofile", "-c", "set -m; " + shlex.join(vault.argv(["enter"])) + "; echo ENDED $?; sleep 10"],
                   env, vault.workdir)
    try:
        run.expect("> ")
        narnia = int(Path(f"/proc/{run.pid}/task/{run.pid}/children").read_text().split()[0])
        run.send("open notes.txt\r")
        run.expect("lamp-post")
        time.sleep(0.3)
        shown = len(run.output)
        assert ENTER_ALTERNATE_SCREEN in run.output
        os.kill(narnia, sig)
        run.expect(f"ENDED {128 + sig}", timeout=10)
        run.settle()
        assert LEAVE_ALTERNATE_SCREEN in run.output[shown:], run.output[shown:]
        modes = termios.tcgetattr(run.fd)[3]
        assert modes & termios.ECHO and modes & termios.ICANON, "echo and line mode are back"
    finally:
        run.close()


def test_panic_inside_less(vault, media, tmp_path):
    vault.ok(f"import {media / 'notes.txt'}")
    output = panic_during(vault, env_with(vault, TERM="xterm"), "open notes.txt", "lamp-post", tmp_path)
    assert ENTER_ALTERNATE_SCREEN in output, "less showed its alternate screen"


def test_panic_inside_the_hex_view(vault, tmp_path):
    blob = tmp_path / "blob.bin"
    import random as _random
    blob.write_bytes(_random.Random(7).randbytes(16384))
    vault.ok(f"import {blob}")
    panic_during(vault, env_with(vault, TERM="xterm"), "open blob.bin", "00000000", tmp_path)


def test_panic_while_a_video_plays(vault, media, tmp_path):
    vault.ok(f"import {media / 'clip.mp4'}")
    bindir, rec = tmp_path / "fakebin", tmp_path / "rec"
    rec.mkdir()
    # Like the real player: Ctrl-\ (SIGQUIT) makes it quit with status 4.
    fake_bin(bindir, "mpv", "trap 'exit 4' QUIT\necho playing\nwhile :; do sleep 0.1; done\n")
    env = env_with(vault, bindir, DISPLAY=None, WAYLAND_DISPLAY=None)
    panic_during(vault, env, "open clip.mp4", "playing", tmp_path)


def test_panic_after_the_grid(vault, media, tmp_path):
    vault.ok(f"mkdir /g; cd /g; import {media / 'photo.png'} {media / 'notes.txt'}")
    panic_during(vault, vault.env, "grid /g; cd /g", "g> ", tmp_path)


def test_the_pager_gets_text_through_the_filter_cat_uses(vault, tmp_path):
    """less without -R shows escape sequences as text but passes a bidirectional override; what
    reaches it goes through cat's filter first."""
    src = tmp_path / "evil.txt"
    src.write_bytes("left \u202eright \x1b]8;;http://evil.example/\x1b\\click \u009b2J end\n".encode())
    vault.ok(f"import {q(str(src))}")
    bindir, rec = tmp_path / "fakebin", tmp_path / "rec"
    rec.mkdir()
    fake_bin(bindir, "less", 'cat > "$FAKE_DIR/in"\n')
    run = PtyRun(vault, ["-c", "open evil.txt"], colour_env(vault, PATH=f"{bindir}:{vault.env['PATH']}", FAKE_DIR=str(rec)))
    assert run.finish() == 0, run.text
    assert (rec / "in").read_bytes() == b"left .right .]8;;http://evil.example/.\\click .2J end\n"

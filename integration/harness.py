"""Helpers for the integration suite: running the binary, quoting, the store on disk.

The suite drives the real `narnia` binary through pipes. The binary is taken from the
environment variable NARNIA_BIN, else `.build/debug/narnia` relative to the repository root.

Every test gets its own HOME and XDG directories, and `NARNIA_INSECURE_TEST_KDF=1` so that
`init` and `passwd` use libsodium's minimum Argon2id limits (the vault then prints a warning on
every open, which the helpers filter out of `Result.err_lines`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DEFAULT_PASSPHRASE = "correct horse"
INSECURE_KDF_WARNING = "narnia: warning: this vault uses the insecure test key derivation"
CHUNK = 1048576

# ---------------------------------------------------------------------------------------------
# The binary


def binary_path() -> Path:
    """The narnia binary under test (NARNIA_BIN, relative paths taken from the repo root)."""
    value = os.environ.get("NARNIA_BIN", ".build/debug/narnia")
    path = Path(value)
    if not path.is_absolute():
        path = REPO / path
    return path


# ---------------------------------------------------------------------------------------------
# Running it


class Result:
    """What one run of narnia gave: exit status, stdout and stderr.

    Unpacks as `(rc, out, err)` with text decoded from UTF-8 (undecodable bytes kept as
    surrogate escapes); `outb`/`errb` hold the raw bytes.
    """

    def __init__(self, args, rc: int, outb: bytes, errb: bytes):
        self.args = list(args)
        self.rc = rc
        self.outb = outb
        self.errb = errb

    @functools.cached_property
    def out(self) -> str:
        return self.outb.decode("utf-8", "surrogateescape")

    @functools.cached_property
    def err(self) -> str:
        return self.errb.decode("utf-8", "surrogateescape")

    def __iter__(self):
        return iter((self.rc, self.out, self.err))

    @property
    def out_lines(self) -> list[str]:
        return self.out.splitlines()

    @property
    def err_lines(self) -> list[str]:
        """stderr lines without the insecure-test-KDF warning."""
        return [l for l in self.err.splitlines() if l.strip() != INSECURE_KDF_WARNING]

    @property
    def errors(self) -> list[str]:
        return [l for l in self.err_lines if l.startswith("narnia: error:")]

    def describe(self) -> str:
        out = self.out if len(self.out) < 3000 else self.out[:3000] + "…"
        return (f"\n  command: {self.args!r}\n  exit status: {self.rc}\n"
                f"  stdout: {out!r}\n  stderr: {self.err!r}")


UNSAFE_ON_TERMINAL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def script_form(name: str) -> str:
    """A name as narnia prints it for scripts (docs/INTERFACE.md, "Names in output"): a
    backslash doubled, control and bidirectional characters as \\xHH or \\u{HHHH}."""
    def one(c: str) -> str:
        if c == "\\":
            return "\\\\"
        if UNSAFE_ON_TERMINAL.match(c):
            return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{{{ord(c):x}}}"
        return c
    return "".join(one(c) for c in name)


def q(word: str) -> str:
    """Quote one word for narnia's command language ('…', "…" and backslash, as in sftp)."""
    if word and re.fullmatch(r"[A-Za-z0-9_./=:+,@%-]+", word) and not word.startswith("-"):
        return word
    if "'" not in word:
        return "'" + word + "'"
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


class Narnia:
    """Runs the binary against one vault directory with a per-test environment."""

    def __init__(self, binary: Path, workdir: Path):
        self.binary = Path(binary)
        self.workdir = Path(workdir)
        self.home = self.workdir / "home"
        self.vault = self.workdir / "vault"
        self.secrets = self.workdir / "secrets"
        for d in (self.home, self.secrets, self.home / ".local/share", self.home / ".config",
                  self.home / ".cache", self.home / ".local/state", self.workdir / "run"):
            d.mkdir(parents=True, exist_ok=True)
        os.chmod(self.workdir / "run", 0o700)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("NARNIA_") and not k.startswith("XDG_")}
        env.update({
            "HOME": str(self.home),
            "XDG_DATA_HOME": str(self.home / ".local/share"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_STATE_HOME": str(self.home / ".local/state"),
            "XDG_RUNTIME_DIR": str(self.workdir / "run"),
            "NARNIA_INSECURE_TEST_KDF": "1",
            "LC_ALL": "C.UTF-8",
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "TERM": "dumb",
        })
        self.env = env
        self._pass_files: dict[str, Path] = {}

    def passphrase_file(self, passphrase: str, raw: bytes | None = None) -> Path:
        """A file holding `passphrase` as its first line (or exactly `raw` when given)."""
        data = raw if raw is not None else (passphrase + "\n").encode()
        key = hashlib.sha256(data).hexdigest()[:16]
        if key not in self._pass_files:
            path = self.secrets / f"pass-{key}"
            path.write_bytes(data)
            path.chmod(0o600)   # other users' read gets a warning (review EU-15)
            self._pass_files[key] = path
        return self._pass_files[key]

    def argv(self, args, passphrase=DEFAULT_PASSPHRASE, vault=None, with_vault=True):
        argv = [str(self.binary)]
        if with_vault:
            argv += ["--vault", str(vault if vault is not None else self.vault)]
        if passphrase is not None:
            argv += ["--passphrase-file", str(self.passphrase_file(passphrase))]
        return argv + [str(a) for a in args]

    def __call__(self, *args, input=None, passphrase=DEFAULT_PASSPHRASE, timeout=120,
                 cwd=None, vault=None, with_vault=True, env=None, pass_fds=(), wrapper=()) -> Result:
        argv = [*wrapper, *self.argv(args, passphrase, vault, with_vault)]
        if isinstance(input, str):
            input = input.encode()
        try:
            proc = subprocess.run(
                argv, input=input if input is not None else b"",
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                cwd=str(cwd or self.workdir), env=env or self.env, pass_fds=pass_fds)
        except subprocess.TimeoutExpired as e:
            pytest.fail(f"narnia did not finish within {timeout} s: {argv!r}\n"
                        f"stdout so far: {e.stdout!r}\nstderr so far: {e.stderr!r}")
        return Result(argv, proc.returncode, proc.stdout, proc.stderr)

    def popen(self, *args, passphrase=DEFAULT_PASSPHRASE, cwd=None, **kw) -> subprocess.Popen:
        argv = self.argv(args, passphrase)
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen(argv, cwd=str(cwd or self.workdir), env=self.env, **kw)

    def c(self, commands: str, *extra, **kw) -> Result:
        """`narnia -c COMMANDS`."""
        return self(*extra, "-c", commands, **kw)

    def ok(self, commands: str, *extra, **kw) -> Result:
        """`narnia -c COMMANDS`, which must succeed."""
        r = self.c(commands, *extra, **kw)
        assert r.rc == 0, f"expected success of {commands!r}" + r.describe()
        return r

    def fails(self, commands: str, cmd: str, *extra, rc: int = 1, **kw) -> Result:
        """`narnia -c COMMANDS`, which must fail with exit `rc`, a `narnia: error: CMD:` message
        on stderr, and nothing on stdout."""
        r = self.c(commands, *extra, **kw)
        assert r.rc == rc, f"expected exit {rc} from {commands!r}" + r.describe()
        prefix = f"narnia: error: {cmd}:"
        assert any(l.startswith(prefix) for l in r.err_lines), \
            f"expected an error line starting with {prefix!r}" + r.describe()
        assert r.out == "", f"a failed command must print nothing on stdout" + r.describe()
        for bad in ("Fatal error", "Stack dump", "Traceback", "Swift.", "Error Domain"):
            assert bad not in r.err, f"stderr looks like a crash or an error dump ({bad})" + r.describe()
        return r

    def init(self, passphrase=DEFAULT_PASSPHRASE) -> Result:
        r = self("init", passphrase=passphrase)
        assert r.rc == 0, "narnia init failed" + r.describe()
        assert self.vault.is_dir(), f"init made no store directory at {self.vault}"
        return r

    def store(self) -> "Store":
        return Store(self.vault)


# ---------------------------------------------------------------------------------------------
# The store on disk

KEY_FILE_RE = re.compile(r"[0-9a-f]{32}")
DIR_RE = re.compile(r"[0-9a-f]{2}")
OBJECT_RE = re.compile(r"[0-9a-f]{32}")
KEY_FILE_SIZE = 98
INBOX_KEY_SIZE = 72


def a_day_later(n: "Narnia") -> dict:
    """Keyword arguments that run `n` with its clock 25 hours ahead (the `faketime` wrapper,
    Debian package `faketime`), file times read as they are: what a file untouched for a day
    looks like to an open, by both its modification and its status-change time (which no
    program can set back). Set by hand, `LD_PRELOAD` and `FAKETIME` without the wrapper's
    shared clock gave the Swift runtime no arguments, about every other start."""
    if shutil.which("faketime") is None:
        pytest.fail("faketime is missing: install the Debian package faketime (.ci/run does)")
    return {"wrapper": ["faketime", "-f", "+25h"], "env": {**n.env, "NO_FAKE_STAT": "1"}}


def padme(n: int) -> int:
    """Padmé padded length (PURBs, Nikitin et al. 2019)."""
    if n <= 2:
        return n
    e = n.bit_length() - 1
    s = e.bit_length()
    last_bits = e - s
    mask = (1 << last_bits) - 1
    return (n + mask) & ~mask


def object_size(n: int) -> int:
    """Size on disk of the content object of an N-byte file."""
    p = padme(n)
    chunks = max(1, -(-p // CHUNK))
    return 24 + p + 16 * chunks


class Store:
    """A read-only view of a store directory."""

    def __init__(self, root: Path):
        self.root = Path(root)

    def files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*") if p.is_file())

    def rel(self, p: Path) -> str:
        return str(p.relative_to(self.root))

    def snapshot(self) -> dict[str, str]:
        """relative path -> sha256 of every regular file."""
        return {self.rel(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in self.files()}

    def sizes(self) -> dict[str, int]:
        return {self.rel(p): p.stat().st_size for p in self.files()}

    def layout_problems(self) -> list[str]:
        """Deviations from the documented layout (format 2): one 98-byte key file and one
        72-byte inbox public key file named by 32 hex digits at the top, 2-hex directories holding files named by 32 hex digits that
        begin with the directory's two, nothing else."""
        problems = []
        top_files = []
        for entry in sorted(self.root.iterdir()):
            if entry.is_symlink():
                problems.append(f"symlink in the store: {entry.name}")
            elif entry.is_file():
                top_files.append(entry.name)
                if not KEY_FILE_RE.fullmatch(entry.name):
                    problems.append(f"top-level file not named by 32 hex chars: {entry.name!r}")
            elif entry.is_dir():
                if not DIR_RE.fullmatch(entry.name):
                    problems.append(f"directory not named by 2 hex chars: {entry.name!r}")
                    continue
                for sub in sorted(entry.iterdir()):
                    if not sub.is_file() or sub.is_symlink():
                        problems.append(f"not a regular file: {entry.name}/{sub.name}")
                    elif not OBJECT_RE.fullmatch(sub.name) or not sub.name.startswith(entry.name):
                        problems.append(f"file not named by 32 hex chars in its shard: {entry.name}/{sub.name!r}")
            else:
                problems.append(f"special file in the store: {entry.name!r}")
        sizes = sorted((self.root / name).stat().st_size for name in top_files)
        if sizes != sorted([KEY_FILE_SIZE, INBOX_KEY_SIZE]):
            problems.append(f"expected one key file of {KEY_FILE_SIZE} bytes and one inbox public key file of "
                            f"{INBOX_KEY_SIZE} at the top, found {top_files!r} of {sizes} bytes")
        return problems

    def key_file(self) -> Path:
        tops = [p for p in self.root.iterdir() if p.is_file() and p.stat().st_size != INBOX_KEY_SIZE]
        assert len(tops) == 1, f"expected exactly one key file at the top of the store, found {tops}"
        return tops[0]

    def inbox_key_file(self) -> Path:
        tops = [p for p in self.root.iterdir() if p.is_file() and p.stat().st_size == INBOX_KEY_SIZE]
        assert len(tops) == 1, f"expected exactly one inbox public key file at the top of the store, found {tops}"
        return tops[0]


def find_object(before: dict[str, int], after: dict[str, int], size: int, what: str) -> str:
    """The relative path of the new store file of exactly `size` bytes."""
    new = [p for p in after if p not in before and after[p] == size]
    assert len(new) == 1, (f"expected exactly one new store file of {size} bytes for {what} "
                           f"(Padmé-padded content object); new files: "
                           f"{ {p: after[p] for p in after if p not in before} }")
    return new[0]


def tree_files(root: Path) -> dict[str, bytes]:
    """relative path -> content of every regular file under root."""
    return {str(p.relative_to(root)): p.read_bytes()
            for p in sorted(Path(root).rglob("*")) if p.is_file() and not p.is_symlink()}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Runs argv[2:] as a grandchild and writes "exit-status peak-RSS-KiB" to the file argv[1].
# The grandchild is forked from this small helper because Linux charges a process's ru_maxrss
# with the RSS of the memory it was forked from at exec time: measured straight from pytest,
# whose memory grows during the suite, the number would say more about pytest than about narnia.
_RSS_HELPER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{os.waitstatus_to_exitcode(status)} {usage.ru_maxrss}")
"""


def run_measuring_rss(argv, env, cwd, timeout=300) -> tuple[int, int, bytes]:
    """Runs argv, reading and dropping its stdout; (exit status, peak RSS in KiB, stderr)."""
    result = Path(cwd) / f".rss-{os.getpid()}-{threading.get_ident()}"
    proc = subprocess.Popen([sys.executable, "-c", _RSS_HELPER, str(result), *map(str, argv)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=cwd)
    err = []
    t = threading.Thread(target=lambda: err.append(proc.stderr.read()), daemon=True)
    t.start()
    while proc.stdout.read(1 << 20):
        pass
    proc.wait(timeout)
    t.join(timeout)
    rc, rss = (int(x) for x in result.read_text().split())
    result.unlink()
    return rc, rss, b"".join(err)


def skip_unless_root_for_strace_paths() -> None:
    """`strace -y` names descriptors by reading /proc/PID/fd, which only root may do for narnia
    (it makes itself not dumpable): tests that need the paths skip as an ordinary user."""
    if os.geteuid() != 0:
        pytest.skip("strace -y cannot name the files of a process that is not dumpable unless run as root")


def started_under_strace(n: "Narnia", command: str, log: Path, strace_options: list[str], until: str, what: str) -> subprocess.Popen:
    """Starts `narnia -c COMMAND` under strace (children too, `strace_options` given, the calls
    traced written to `log`) and returns it, running, once `until` appears in the log: the
    call it waits at, which `strace_options` may delay. `what` says what it never reached."""
    import time
    argv = ["strace", "-f", "-o", str(log)] + strace_options + n.argv(["-c", command])
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=n.env, cwd=n.workdir)
    deadline = time.monotonic() + 30
    while until not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < deadline and p.poll() is None, f"the command never reached {what}"
        time.sleep(0.02)
    return p


def traced_calls(n: "Narnia", command: str, log: Path, calls: list[str]) -> list[str]:
    """Runs `narnia -c COMMAND` (which must succeed) under strace, children too, with the paths
    of descriptors shown; returns the lines of the system calls `calls`, in order."""
    skip_unless_root_for_strace_paths()
    argv = ["strace", "-f", "-y", "-o", str(log), "-e", "trace=" + ",".join(calls)] + n.argv(["-c", command])
    r = subprocess.run(argv, capture_output=True, text=True, env=n.env, cwd=n.workdir)
    assert r.returncode == 0, r.stderr
    pattern = re.compile(r"\b(" + "|".join(calls) + r")\(")
    return [line for line in log.read_text().splitlines() if pattern.search(line)]


def overwrite(path: Path, data: bytes) -> None:
    """Writes `data` over a store file as whoever holds the store's folder may: the file is
    read-only to its owner (objects and journals are 0400; root writes them anyway), so it is
    made writable for the write and then given its mode back (a mode narnia reads)."""
    with writable(path):
        path.write_bytes(data)


class writable:
    """`with writable(path):` the store file `path` may be written by its owner, as in
    `overwrite`; its mode is put back after."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def __enter__(self) -> Path:
        self.mode = self.path.stat().st_mode & 0o7777
        self.path.chmod(self.mode | 0o200)
        return self.path

    def __exit__(self, *exc) -> None:
        self.path.chmod(self.mode)


def mounted_fuse(argv: list[str], mount: Path):
    """Mounts with the FUSE command `argv` (its last word the mount point `mount`), skipping the
    test where FUSE cannot mount; yields the mount point and unmounts it after (a generator for
    a fixture's `yield from`). Some FUSE programs exit 0 when they could not mount (fusefat,
    as an ordinary user without access to /dev/fuse): the mount itself is checked."""
    r = subprocess.run(argv, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.ismount(mount):
        pytest.skip(f"cannot mount FUSE here: {(r.stderr or r.stdout).strip()[-300:]}")
    try:
        yield mount
    finally:
        unmount_fuse(mount)


def unmount_fuse(mount: Path) -> None:
    """Unmounts a FUSE mount, retrying while it is busy (a process of the test ending)."""
    import time
    for _ in range(20):
        if subprocess.run(["fusermount", "-u", str(mount)], capture_output=True).returncode == 0:
            return
        time.sleep(0.2)


def blank_image(path: Path, mebibytes: int = 64) -> Path:
    """A sparse file of that size, for a file system image."""
    with open(path, "wb") as f:
        f.truncate(mebibytes << 20)
    return path

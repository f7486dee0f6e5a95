"""The interactive shell through a pseudo-terminal: what only a terminal shows.

`narnia --vault V enter` runs on the slave side of a pty (its controlling terminal), so it asks
"Passphrase: " on /dev/tty with echo off, then runs libedit. The tests type keys (Tab, Ctrl-C,
Ctrl-D) and read what the terminal would show. They check effects rather than screen layout
where they can (a completed `cd` is checked with `pwd`), use generous timeouts, and assert no
timings. Standard library only (`pty`), no pexpect.

Covered: the prompt (plain and coloured); completion of nested paths, of a path with spaces,
several candidates listed in columns with the line kept, host paths for `import`; Ctrl-C at the
prompt; Ctrl-C during a long import (no partial item, `verify` passes); Ctrl-D, `exit` and
`quit` with status 0; SIGTERM; the passphrase is not echoed; `ls`, `ls -l` and `tree` on a
terminal.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import time
from pathlib import Path

import pytest

from harness import DEFAULT_PASSPHRASE, Narnia

PROMPT = re.compile(rb"narnia:(/[^\r\n>]*)> ")
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


class Shell:
    """`narnia enter` on a pseudo-terminal, driven like a person at the keyboard."""

    def __init__(self, n: Narnia, args=("enter",), cols=100, rows=30, env=None, cwd=None):
        argv = [str(n.binary), "--vault", str(n.vault), *args]
        environment = dict(n.env, TERM="xterm", NO_COLOR="1")
        environment.update(env or {})
        environment = {k: v for k, v in environment.items() if v is not None}
        pid, fd = pty.fork()
        if pid == 0:  # the child: its stdin, stdout, stderr and /dev/tty are the pty
            try:
                os.chdir(str(cwd or n.workdir))
                os.execve(argv[0], argv, environment)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.resize(cols, rows)
        self.output = b""   # everything the terminal received
        self.seen = 0       # how much of it `expect` has consumed
        self.status = None

    def resize(self, cols: int, rows: int):
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def _pump(self, timeout: float) -> bool:
        """Reads what is available within `timeout`; False once the terminal is closed."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not data:
            return False
        self.output += data
        return True

    def expect(self, pattern, timeout: float = 30.0) -> re.Match:
        """Waits for `pattern` (str or bytes, a regular expression) in the output not yet
        consumed; consumes up to the end of the match."""
        if isinstance(pattern, str):
            pattern = re.compile(re.escape(pattern.encode()))
        elif isinstance(pattern, bytes):
            pattern = re.compile(re.escape(pattern))
        deadline = time.monotonic() + timeout
        while True:
            m = pattern.search(self.output, self.seen)
            if m:
                self.seen = m.end()
                return m
            left = deadline - time.monotonic()
            if left <= 0 or not self._pump(min(left, 0.2)):
                m = pattern.search(self.output, self.seen)
                if m:
                    self.seen = m.end()
                    return m
                pytest.fail(f"waited for {pattern.pattern!r}; the terminal showed since:\n"
                            f"{self.output[self.seen:][-3000:]!r}", pytrace=False)

    def settle(self, quiet: float = 0.3, timeout: float = 5.0):
        """Reads until nothing arrives for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            before = len(self.output)
            if not self._pump(quiet) or len(self.output) == before:
                return

    def send(self, text):
        os.write(self.fd, text.encode() if isinstance(text, str) else text)

    def prompt(self, path: str = None, timeout: float = 30.0) -> str:
        """Waits for a prompt (for `path` when given); returns the prompt's path."""
        if path is None:
            return self.expect(PROMPT, timeout).group(1).decode()
        return self.expect(f"narnia:{path}> ", timeout).group(0).decode()

    def start_import(self, keys: str, then: bytes) -> re.Match:
        """Types an `import` line (`keys`, Enter included) and waits for `then` (a regular
        expression). The first import into a vault in a terminal session asks whether to
        remove originals; the answer is no."""
        self.send(keys)
        m = self.expect(re.compile(rb"\[y/N\] |" + then))
        if m.group(0).endswith(b"[y/N] "):
            self.send("n\r")
            m = self.expect(re.compile(then))
        return m

    def login(self, passphrase: str = DEFAULT_PASSPHRASE):
        self.expect("Passphrase: ")
        self.send(passphrase + "\r")
        self.prompt("/")

    def run(self, line: str, timeout: float = 30.0) -> str:
        """Types `line` and Enter; returns what it printed before the next prompt, without
        terminal escapes and with `\\n` line ends."""
        self.send(line + "\r")
        self.expect("\r\n", timeout)   # the echo of the line ends with Enter's new line
        start = self.seen
        m = self.expect(PROMPT, timeout)
        return clean(self.output[start:m.start()])

    def wait(self, timeout: float = 20.0) -> int:
        """Waits for the process to end; returns its exit status (-N when killed by signal N)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid == self.pid:
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
            self._pump(0.1)
        pytest.fail(f"narnia did not exit within {timeout} s; the terminal showed:\n"
                    f"{self.output[-2000:]!r}", pytrace=False)

    def close(self):
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.status = -9
        try:
            os.close(self.fd)
        except OSError:
            pass


GLYPHS = re.compile("[\U0001F4C1\U0001F4F7\U0001F3AC\U0001F4C4\U0001F4E6] ")


def names(listing: str) -> list[str]:
    """The names of an `ls` grid on a terminal, without the type glyphs."""
    return GLYPHS.sub("", listing).split()


def clean(data: bytes) -> str:
    """Terminal output as text: escapes removed, `\\r\\n` as `\\n`."""
    return ANSI.sub(b"", data).replace(b"\r\n", b"\n").decode("utf-8", "replace")


@pytest.fixture
def shell(vault):
    """Opens `narnia enter` on a pty over the test's vault; logs in; closes at the end."""
    shells = []

    def open_shell(**kw) -> Shell:
        s = Shell(vault, **kw)
        shells.append(s)
        s.login()
        return s

    yield open_shell
    for s in shells:
        s.close()
        print(f"terminal output of narnia (pid {s.pid}):\n{s.output[-4000:]!r}")


# ---------------------------------------------------------------------------------------------
# The prompt and the passphrase


def test_prompt_shows_the_current_folder(vault, shell):
    vault.ok("mkdir -p 'photos/2024'")
    s = shell()
    # The prompt is drawn with the terminal already in editing mode (its own echo off), so
    # keys typed the moment it shows are echoed once, by libedit.
    assert termios.tcgetattr(s.fd)[3] & termios.ECHO == 0
    s.send("cd photos/2024\r")
    s.prompt("/photos/2024")
    s.send("cd ..\r")
    s.prompt("/photos")
    assert s.run("pwd").strip() == "/photos"


def test_prompt_is_coloured_unless_NO_COLOR(vault):
    s = Shell(vault, env={"NO_COLOR": None})
    try:
        s.login_output = s.expect("Passphrase: ")
        s.send(DEFAULT_PASSPHRASE + "\r")
        s.expect(b"\x1b[1;34mnarnia:/\x1b[0m> ")
    finally:
        s.close()


def test_passphrase_is_not_echoed(vault):
    secret = "correct horse"
    s = Shell(vault)
    try:
        s.login(secret)
        s.send("exit\r")
        assert s.wait() == 0
        assert secret.encode() not in s.output, "the passphrase appeared on the terminal"
    finally:
        s.close()


def test_wrong_passphrase_on_the_terminal(vault):
    s = Shell(vault)
    try:
        s.expect("Passphrase: ")
        s.send("not the passphrase\r")
        s.expect("wrong passphrase")
        assert s.wait() == 3
    finally:
        s.close()


# ---------------------------------------------------------------------------------------------
# Tab completion


def test_completion_of_nested_paths(vault, shell):
    vault.ok("mkdir -p alpha/beta/gamma/delta; mkdir other")
    s = shell()
    # Each Tab completes one unique folder with its `/` and no space, so typing goes on.
    s.send("cd al\t")
    s.send("be\t")
    s.send("ga\t")
    s.send("de\t")
    s.send("\r")
    s.prompt("/alpha/beta/gamma/delta")
    # Absolute paths, and `..`, complete too.
    s.send("cd /al\tbe\t\r")
    s.prompt("/alpha/beta")
    s.send("cd ../../ot\t\r")
    s.prompt("/other")


def test_completion_of_a_path_with_spaces(vault, shell, tmp_path):
    src = tmp_path / "summer notes.txt"
    src.write_text("sand\n")
    vault.ok(f"mkdir 'my photos'; cd 'my photos'; import '{src}'")
    s = shell()
    s.send("cd my\t\r")
    s.prompt("/my photos")
    # A file: completed with a space after it, the space in its name escaped.
    out = s.run("cat sum\t")
    assert out.rstrip().endswith("sand"), out
    s.send("cd /\r")
    s.prompt("/")
    # Inside quotes the completion keeps the quote open, then closes it after a file.
    out = s.run("cat 'my ph\tsu\t")
    assert out.rstrip().endswith("sand"), out


def test_several_candidates_are_listed_and_the_line_kept(vault, shell):
    vault.ok("mkdir alpha alps alto beta")
    s = shell()
    s.send("cd al\t")
    m = s.expect(re.compile(rb"alpha/ +alps/ +alto/"))
    # After the list, the prompt and the typed text are drawn again; typing goes on.
    s.expect(re.compile(rb"narnia:/> (\x1b\[[0-9;]*[A-Za-z])*cd al"))
    assert b"beta" not in s.output[m.start():m.end()]
    s.send("ph\t\r")
    s.prompt("/alpha")


def test_candidates_fit_the_window_width(vault, shell):
    names = [f"item-{i:02d}-{'x' * 10}" for i in range(24)]
    vault.ok("mkdir " + " ".join(names))
    s = shell(cols=60, rows=40)
    s.send("cd item\t")
    s.expect(re.compile(rb"narnia:/> (\x1b\[[0-9;]*[A-Za-z])*cd item-"))
    listing = clean(s.output[:s.seen]).split("cd item", 1)[1]
    rows = [l for l in listing.split("\n") if "item-" in l and "narnia:" not in l]
    assert rows, listing
    assert len(rows) < len(names), "the candidates were not set in columns"
    assert all(len(r.rstrip()) < 60 for r in rows), rows
    assert sorted(n for r in rows for n in r.split()) == sorted(n + "/" for n in names)


def test_host_path_completion_for_import(vault, shell, tmp_path):
    host = tmp_path / "hostside"
    (host / "holiday pictures").mkdir(parents=True)
    (host / "holiday pictures" / "beach.txt").write_text("waves\n")
    s = shell(cwd=host)
    s.send("import hol\t")
    s.send("be\t")
    s.start_import("\r", re.escape(b"imported holiday pictures/beach.txt -> /beach.txt"))
    s.prompt("/")
    assert s.run("cat beach.txt").strip().endswith("waves")


def test_completion_of_command_names_and_flags(vault, shell):
    s = shell()
    s.send("pw\t\r")
    s.expect(re.compile(rb"\r\n/\r\n"))
    s.prompt("/")
    s.send("mkdir --\t")   # no such flag: nothing changes
    s.send("\x15")         # Ctrl-U clears the line
    s.send("mkdir -\t deep/er\r")
    s.prompt("/")
    assert names(s.run("ls deep")) == ["er/"]


# ---------------------------------------------------------------------------------------------
# Signals and the end of the session


def test_ctrl_c_at_the_prompt_clears_the_line(vault, shell):
    s = shell()
    s.send("mkdir should-not-exist")
    s.settle()
    s.send("\x03")
    s.prompt("/")
    s.send("mkdir made\r")
    s.prompt("/")
    assert names(s.run("ls")) == ["made/"]
    s.send("exit\r")
    assert s.wait() == 0
    assert vault.ok("ls").out_lines == ["made"]


def test_ctrl_c_during_a_long_import_leaves_no_partial_item(vault, shell, tmp_path):
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:     # 1 GiB, sparse: instant to make, long to encrypt
        f.truncate(1 << 30)
    s = shell(cwd=tmp_path)
    # Wait for the progress bar to move, then interrupt.
    s.start_import("import big.bin\r", rb"import .*\d+(\.\d)?M/1\.0G")
    s.send("\x03")
    s.expect("narnia: import: interrupted")
    s.prompt("/")
    assert s.run("ls").strip() == ""
    assert "verified 0 items, all intact" in s.run("verify")
    # The session goes on: a small import works.
    (tmp_path / "small.txt").write_text("ok\n")
    s.run("import small.txt")
    assert names(s.run("ls")) == ["small.txt"]
    s.send("\x04")
    assert s.wait() == 0
    r = vault.ok("ls; verify")
    assert r.out_lines == ["small.txt", "verified 1 items, all intact"]


def test_ctrl_d_exit_and_quit_end_with_status_0(vault):
    for keys in ("\x04", "exit\r", "quit\r"):
        s = Shell(vault)
        try:
            s.login()
            s.send(keys)
            assert s.wait() == 0, f"{keys!r} ended with {s.status}"
        finally:
            s.close()


def test_sigterm_ends_the_session(vault, shell):
    s = shell()
    s.send("mkdir x")   # a half-typed line
    s.settle()
    os.kill(s.pid, signal.SIGTERM)
    assert s.wait() == 128 + signal.SIGTERM
    # The lock was released: the vault opens at once, unchanged.
    assert vault.ok("ls").out == ""


# ---------------------------------------------------------------------------------------------
# Listings on a terminal


def test_listings_on_a_terminal(vault, shell, tmp_path):
    doc = tmp_path / "notes.txt"
    doc.write_text("x" * 3000)
    vault.ok(f"mkdir folder; import '{doc}'; mkdir folder/inner")
    s = shell()
    grid = s.run("ls")
    assert re.search(r"\U0001F4C1 folder/ +\U0001F4C4 notes\.txt", grid), grid
    long = s.run("ls -l")
    assert re.search(r"^document +3\.0K [A-Z][a-z]{2} [ \d]\d ( \d{4}|\d\d:\d\d) notes\.txt$", long, re.M), long
    assert re.search(r"^folder +- .* folder$", long, re.M), long
    tree = s.run("tree")
    assert "├── folder/\n│   └── inner/\n└── notes.txt" in tree, tree

"""A process on a pseudo-terminal, for the tests of what only a terminal shows (the shell, the
cover, viewers). Standard library only (pty, select), no pexpect.

The process is a session leader whose controlling terminal is the pty, so it can open /dev/tty,
turn echo off and get job-control signals, as it would for a person at the keyboard.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time

import pytest


class Terminal:
    """`argv` on a fresh pseudo-terminal of `cols` x `rows`, with a small expect()."""

    def __init__(self, argv, env, cwd, cols=100, rows=30):
        master, slave = os.openpty()
        self.fd = master
        self.resize(cols, rows)
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=str(cwd),
            start_new_session=True, close_fds=True,
            preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.output = b""   # everything the terminal received
        self.seen = 0       # how much of it `expect` has consumed
        self.skipped = b""  # what the last `expect` passed over before its match

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def text(self) -> str:
        """Everything received, as text."""
        return self.output.decode("utf-8", "replace")

    def resize(self, cols: int, rows: int):
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def pump(self, timeout: float) -> bool:
        """Reads what arrives within `timeout`; False once the terminal is closed."""
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
        """Waits for `pattern` in the output not yet consumed and consumes up to the end of the
        match. `pattern` is literal text (str or bytes) or a compiled regular expression (a str
        one is matched against the UTF-8 bytes)."""
        if isinstance(pattern, re.Pattern):
            if isinstance(pattern.pattern, str):
                pattern = re.compile(pattern.pattern.encode(), pattern.flags & ~re.UNICODE)
        else:
            pattern = re.compile(re.escape(pattern.encode() if isinstance(pattern, str) else pattern))
        deadline = time.monotonic() + timeout
        while True:
            m = pattern.search(self.output, self.seen)
            if m:
                self.skipped = self.output[self.seen:m.start()]
                self.seen = m.end()
                return m
            left = deadline - time.monotonic()
            if left <= 0 or not self.pump(min(left, 0.2)):
                if (m := pattern.search(self.output, self.seen)) is None:
                    ended = "" if left <= 0 else " (the terminal closed)"
                    pytest.fail(f"waited for {pattern.pattern!r}{ended}; the terminal showed since:\n"
                                f"{self.output[self.seen:][-3000:]!r}", pytrace=False)

    def read_until(self, predicate, timeout: float = 30.0) -> bytes:
        """Reads until `predicate(output)` holds; fails when the process ends first."""
        deadline = time.monotonic() + timeout
        while not predicate(self.output):
            left = deadline - time.monotonic()
            if left <= 0:
                pytest.fail(f"timed out on the terminal; screen so far: {self.output[-3000:]!r}")
            if not self.pump(min(left, 0.2)) and not predicate(self.output) and self.proc.poll() is not None:
                pytest.fail(f"narnia ended; screen: {self.output[-3000:]!r}")
        return self.output

    def settle(self, quiet: float = 0.3, timeout: float = 5.0):
        """Reads until nothing arrives for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            before = len(self.output)
            if not self.pump(quiet) or len(self.output) == before:
                return

    def forget(self):
        """Consumes everything received so far."""
        self.seen = len(self.output)

    def send(self, text):
        os.write(self.fd, text.encode() if isinstance(text, str) else text)

    def wait(self, timeout: float = 20.0) -> int:
        """Reads until the process ends; returns its exit status (-N when killed by signal N)."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None:
            if time.monotonic() > deadline:
                pytest.fail(f"narnia did not exit within {timeout} s; the terminal showed:\n"
                            f"{self.output[-2000:]!r}", pytrace=False)
            self.pump(0.1)
        while self.pump(0):  # what it wrote last
            if not select.select([self.fd], [], [], 0)[0]:
                break
        return self.proc.returncode

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        try:
            os.close(self.fd)
        except OSError:
            pass

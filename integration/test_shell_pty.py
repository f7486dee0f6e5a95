"""The interactive shell through a pseudo-terminal: what only a terminal shows.

`narnia --vault V enter` runs on the slave side of a pty (its controlling terminal), so it asks
"Passphrase: " on /dev/tty with echo off, then runs libedit. The tests type keys (Tab, Ctrl-C,
Ctrl-D) and read what the terminal would show. They check effects rather than screen layout
where they can (a completed `cd` is checked with `pwd`), use generous timeouts, and assert no
timings. The terminal is driven by `terminal.Terminal` (standard library only).

Covered: the prompt (plain and coloured); completion of nested paths, of a path with spaces,
several candidates listed in columns with the line kept, host paths for `import`; Ctrl-C at the
prompt; Ctrl-C during a long import (no partial item, `verify` passes); Ctrl-D, `exit` and
`quit` with status 0; SIGTERM; the passphrase is not echoed; `ls`, `ls -l` and `tree` on a
terminal.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import termios
from pathlib import Path

import pytest

from harness import DEFAULT_PASSPHRASE, Narnia
from terminal import Terminal

PROMPT = re.compile(rb"narnia:(/[^\r\n>]*)> ")
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


class Shell(Terminal):
    """`narnia enter` on a pseudo-terminal, driven like a person at the keyboard."""

    def __init__(self, n: Narnia, args=("enter",), cols=100, rows=30, env=None, cwd=None):
        environment = dict(n.env, TERM="xterm", NO_COLOR="1")
        environment.update(env or {})
        environment = {k: v for k, v in environment.items() if v is not None}
        super().__init__([str(n.binary), "--vault", str(n.vault), *args], environment, cwd or n.workdir,
                         cols=cols, rows=rows)

    @property
    def status(self):
        """The exit status once the process has ended."""
        return self.proc.returncode

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
        self.expect(PROMPT, timeout)
        return clean(self.skipped)


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
    # A folder completed in a quote, and Enter: the error says how to close it (review AX7).
    out = s.run("cd 'my ph\t")
    assert "unterminated quote" in out and "close it with a ' (Tab leaves the quote open after a folder" in out, out


def test_completion_of_a_name_holding_a_line_feed_keeps_the_line_on_one_line(vault, shell, tmp_path):
    """Review AX7-13: Tab inserted a raw line feed, which libedit showed as a line break. It
    now inserts it as scripts see it, inside `$'…'`, which the shell reads back."""
    src = tmp_path / "new\nline"
    src.write_text("one name\n")
    vault.ok(f"import $'{tmp_path}/new\\nline'")   # a line ends a command in -c: typed as $'…'
    s = shell()
    s.send("cat n\t")
    s.expect("ew$'\\x0a'line ")
    out = s.run("")
    assert out.rstrip().endswith("one name"), out
    out = s.run("cat $'new\\nline'")
    assert out.rstrip().endswith("one name"), out


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
    s.start_import("\r", re.escape(b"imported 1 file (6 bytes) in "))
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


def test_a_pasted_c1_control_stays_in_the_line_and_never_reaches_the_screen_raw(vault, shell):
    """Review BM-5: a C1 control (U+0080-U+009F) pasted at the prompt was dropped with a bell
    and the rest of the line ran: `rm 'a\x9bb'` would name `ab`. It is kept, as pasted, and
    shown as libedit shows what cannot be printed, never as the raw control."""
    s = shell()
    s.forget()
    s.send(b"mkdir \xc2\x9bmade\r")
    s.prompt("/")
    echoed = s.skipped
    assert b"\x9b" not in echoed.replace(b"\xc3\x9b", b""), echoed
    s.send("exit\r")
    assert s.wait() == 0
    assert [json.loads(l)["name"] for l in vault.ok("ls --json").out_lines] == ["\x9bmade"]


def test_names_beyond_ascii_are_typed_whole_in_the_c_locale(vault, shell):
    """Review BN-1: with no locale set (ssh without locale forwarding, cron, a container)
    libedit dropped every character beyond ASCII typed or pasted, and ran the rest: `rm
    résumé.txt` removed `rsum.txt`. Names are UTF-8 whatever the locale."""
    s = shell(env={"LANG": None, "LC_ALL": None, "LC_CTYPE": None})
    s.send("mkdir résumé\r")
    s.prompt("/")
    s.send("exit\r")
    assert s.wait() == 0
    assert vault.ok("ls").out_lines == ["résumé"]


def test_a_latin1_terminal_never_runs_a_line_with_its_accents_dropped(vault, shell, tmp_path):
    """Review BP-3: reading keys as UTF-8 in every locale (BN-1) made a Latin-1 terminal's
    `rm résumé.txt` remove `rsum.txt` (its é, byte E9, is no UTF-8, and libedit dropped it).
    Only the C locale's keys are read as UTF-8; a Latin-1 line is refused whole, as before."""
    locales = tmp_path / "locales"
    locales.mkdir()
    made = subprocess.run(["localedef", "-i", "en_US", "-f", "ISO-8859-1", str(locales / "en_US.ISO-8859-1")],
                          capture_output=True, text=True)
    if made.returncode not in (0, 1) or not (locales / "en_US.ISO-8859-1").exists():
        pytest.skip(f"cannot make a Latin-1 locale here (Debian package locales): {made.stderr.strip()}")
    vault.ok("import - rsum.txt", input=b"not this one")
    s = shell(env={"LOCPATH": str(locales), "LANG": "en_US.ISO-8859-1", "LC_ALL": "en_US.ISO-8859-1"})
    s.send("rm r\xe9sum\xe9.txt\r".encode("latin-1"))
    s.prompt("/")
    s.send("exit\r")
    s.wait()
    assert vault.ok("ls").out_lines == ["rsum.txt"]


def test_the_c_locale_draws_no_glyphs(vault, shell):
    """Review BP-6: keys read as UTF-8 in the C locale (BN-1) made `ls` draw its glyphs there,
    which need a UTF-8 locale: what the terminal can draw is still the user's locale's."""
    vault.ok("mkdir photos")
    s = shell(env={"LANG": None, "LC_ALL": "C", "LC_CTYPE": None})
    assert "\U0001F4C1" not in s.run("ls")
    s.send("exit\r")
    assert s.wait() == 0


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
    assert r.out_lines == ["small.txt", "verified 1 item, all intact"]


@pytest.mark.parametrize("move,change", [(False, "rewrite"), (True, "rewrite"), (False, "chmod")])
def test_a_file_rewritten_while_it_is_imported_is_not_imported(vault, shell, tmp_path, move, change):
    """Review CB-1: a file rewritten in place while `import` read it went into the vault as a
    mix of its two versions, a copy that never existed, with exit 0 and `verify` clean (with
    `--move` the original was kept, but the mixed copy committed too). CD-3: a change only its
    change time shows is said as such."""
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:     # 1 GiB, sparse: instant to make, long to encrypt
        f.truncate(1 << 30)
    s = shell(cwd=tmp_path)
    s.start_import(f"import {'--move ' if move else ''}big.bin\r", rb"import .*\d+(\.\d)?M/1\.0G")
    if change == "chmod":
        os.chmod(big, 0o640)
        s.expect("big.bin: its status changed while it was read (a new mode or link, or a rewrite that kept its times)")
    else:
        with open(big, "r+b") as f:   # rewritten in place, the same size: only its times tell
            f.write(b"new version")
        s.expect("big.bin: changed while it was read; not imported (its copy would mix two versions)")
    s.prompt("/")
    s.send("exit\r")
    assert s.wait() == 0
    assert vault.ok("ls -a /").out == "" and big.exists()
    assert "verified 0 items, all intact" in vault.ok("verify").out


def test_import_from_a_terminal_ends_at_one_ctrl_d_and_takes_nothing_at_ctrl_c(vault):
    """`narnia -c 'import - NAME'` reading the terminal: one Ctrl-D at the start of a line took
    two, and Ctrl-C did nothing until the input ended, then committed what was typed
    (review BG-1)."""
    for key, status, kept in (("\x04", 0, "typed line\n"), ("\x03", 130, None)):
        s = Shell(vault, args=("-c", "import - typed.txt"))
        try:
            s.expect("Passphrase: ")
            s.send(DEFAULT_PASSPHRASE + "\r")
            s.settle()
            s.send("typed line\r")
            s.settle()
            s.send(key)
            assert s.wait(timeout=10) == status, f"{key!r} ended with {s.status}"
        finally:
            s.close()
        if kept is None:
            assert "narnia: import: interrupted" in clean(s.output)
            assert vault.ok("ls -a /").out == ""
        else:
            assert vault.ok("cat /typed.txt; rm /typed.txt").out == kept


def test_a_number_naming_nothing_at_the_prompt_under_hide_names_runs_nothing(vault, shell):
    """Review BI-4: at the prompt with hide-names on, `#2024` is a number, not a comment: a
    pasted `rm -rf scratch  #2024 photos are kept` removed photos (`-f` passed over the number
    that named nothing). A bare number naming no item fails the whole line first."""
    vault.ok("mkdir /photos /scratch; set hide-names on")
    s = shell()
    s.send("rm -rf scratch   #2024 photos are kept\r")
    s.expect("narnia: error: #2024: names no item here")
    s.prompt("/")
    # Review BP-4: a path from a number naming nothing, or no number at all, did not count.
    s.send("rm -rf scratch #2024/old photos\r")
    s.expect("narnia: error: #2024: names no item here")
    s.prompt("/")
    s.send("rm -rf scratch #2nd photos\r")
    s.expect("narnia: error: #2nd: names no item here")
    s.prompt("/")
    s.send("cd '#1'\r")
    s.prompt("/#1")
    s.send("exit\r")
    assert s.wait() == 0
    assert vault.ok("ls /").out_lines == ["photos", "scratch"]


def test_each_commands_numbers_are_judged_in_the_folder_it_runs_in(vault, shell):
    """Review BQ-2: the check that stops a line whose number names nothing looked at the folder
    the line began in: `cd sub; rm -rf scratch #3 photos` ran (the top holds 4 items, sub 2)
    and removed sub's photos; `cd big; ls -d #7` was refused though big holds a #7."""
    vault.ok("mkdir /a /b /sub /sub/photos /sub/scratch /big; set hide-names on")
    vault.ok("cd /big; " + "; ".join(f"mkdir d{i}" for i in range(7)))
    s = shell()
    s.send("cd sub; rm -rf scratch #3 photos\r")
    s.expect("narnia: error: #3: names no item here")
    s.expect("the rest of the line was not run")
    s.prompt()   # the path is masked too
    s.send("cd /big; ls -d #7\r")
    s.prompt()
    assert "names no item" not in s.skipped.decode(errors="replace"), s.skipped
    s.send("exit\r")
    assert s.wait() == 0
    assert vault.ok("ls /sub").out_lines == ["photos", "scratch"]


def test_the_numbers_of_a_line_are_those_in_view_when_it_was_typed(vault, shell):
    """Review BQ-1: each command of a `;` line read numbers from its folder as the commands
    before it left it: `rm -r #1; rm -r #2` removed the items listed as #1 and #3. Numbers are
    read against the folders as they stood when the line was typed; one whose item an earlier
    command took away fails, naming nothing else."""
    vault.ok("mkdir /a /b /c /d /e /sub /sub/x /sub/y; set hide-names on")
    s = shell()
    s.send("rm -r #1; rm -r #2\r")
    s.prompt("/")   # a and b went, as listed: c d e sub
    s.send("rm -r #1; rm -r #1\r")   # the second #1 is the one the first removed
    s.expect("#1: the item it numbered when the line was typed is no longer in its folder")
    s.prompt("/")   # d e sub
    s.send("mv #2 zz; cd #3; rm -r #2\r")   # e renamed; #3 is still sub, and in it #2 is y
    s.prompt()
    s.send("exit\r")
    assert s.wait() == 0
    assert vault.ok("ls /; ls /sub").out_lines == ["d", "sub", "zz", "x"]


def test_rm_i_asks_about_an_item_by_the_number_the_line_was_typed_against(vault, shell):
    """Review CE-3: after `rm #1;` on the line, `rm -i #3` asked `remove /#2?` (c.txt's number
    once a.txt went), which in the listing the user answers from is b.txt's."""
    vault.ok("mkdir /a /b /c /d /sub; set hide-names on")
    s = shell()
    s.send("rm -r #1; rm -r -i #3\r")
    s.expect("remove the folder /#3 and everything in it? [y/N] ")
    s.send("y\r")
    s.prompt("/")
    # Reviews CW-3, CY-2: an item the line made had no number when it was typed; the one it
    # has now is another's in the listing. rm -i does not ask about it there.
    s.send("mkdir new; rm -r -i new\r")
    s.expect("rm: an item a command before it on this line made or moved had no number when the line was typed; nothing was removed")
    s.prompt("/")
    s.send("exit\r")
    assert s.wait() == 0
    assert vault.ok("ls /").out_lines == ["b", "d", "new", "sub"]


def run_on_a_terminal(vault, text):
    """`narnia -c TEXT` on a terminal; returns its exit status and what it showed."""
    s = Shell(vault, args=("-c", text))
    try:
        s.expect("Passphrase: ")
        s.send(DEFAULT_PASSPHRASE + "\r")
        status = s.wait(timeout=30)
        return status, clean(s.output)
    finally:
        s.close()


def test_a_c_text_of_several_lines_reads_numbers_as_typed_and_keeps_them(vault):
    """Review CC-2: each line of a `-c` text read numbers after the lines before it ran
    (`rm -r '#1'` then `rm -r '#2'` removed #1 and #3). CC-3: `set hide-names off; rm #2`
    then removed the item really named `#2`. CC-1: a folder the line made (or a sync merged)
    had no numbers when it was typed."""
    vault.ok("mkdir /a /b /c /d /e /f; set hide-names on")
    status, _ = run_on_a_terminal(vault, "rm -r '#1'\nrm -r '#2'")
    assert status == 0 and vault.ok("ls /").out_lines == ["c", "d", "e", "f"]
    vault.ok("mkdir '/#2'")   # listed as #1
    status, _ = run_on_a_terminal(vault, "set hide-names off; rm -r '#2'")
    assert status == 0 and vault.ok("ls /").out_lines == ["#2", "d", "e", "f"], "the item listed as #2 went"
    vault.ok("set hide-names on")
    # Listings and messages show the numbers as they are now, which the next line reads
    # (review CD-2: with the typed ones an `ls` after a removal showed stale numbers).
    status, shown = run_on_a_terminal(vault, "rm -r '#1'; stat '#3'; ls -1")
    assert status == 0 and "path: /#2" in shown and vault.ok("ls /").out_lines == ["d", "e", "f"], shown
    assert re.findall(r"#\d+", shown.split("path:")[1])[1:] == ["#1", "#2", "#3"], shown
    status, shown = run_on_a_terminal(vault, "mkdir new; cd new; mkdir x; ls '#1'")
    assert status == 1 and "had no numbers when the line was typed" in shown, shown
    # An item that came during the line: no two show one number.
    status, shown = run_on_a_terminal(vault, "mkdir /aa; ls -1 /")
    labels = re.findall(r"#\d+", shown)
    assert status == 0 and sorted(labels) == ["#1", "#2", "#3", "#4", "#5"], shown


def test_mkdir_reads_numbers_and_notes_show_no_names_under_hide_names(vault):
    """Review CC-5: `mkdir -p #1/new` made a folder really named `#1`. CC-6: the note that the
    current folder moved printed its real names."""
    vault.ok("mkdir /alpha /beta; set hide-names on")
    status, shown = run_on_a_terminal(vault, "mkdir -p '#1/new'; cd '#1'; mv /alpha /zzz")
    assert status == 0, shown
    assert "narnia: note: mv: the current folder moved to /#2" in shown, shown
    assert "alpha" not in shown.replace("mv /alpha", "") and "zzz" not in shown.replace("/zzz\r", ""), shown
    assert vault.ok("ls /; ls /zzz").out_lines == ["beta", "zzz", "new"]


def test_tab_after_a_bare_hash_lists_the_numbers_in_order(vault, shell):
    """Review BQ-6: under hide-names Tab right after a bare `#` rang the bell (read as a
    comment), and the numbers were listed as text (#1 #10 #11 #2)."""
    vault.ok("; ".join(f"mkdir /d{i:02}" for i in range(11)) + "; set hide-names on")
    s = shell()
    s.send("cd #\t\t")
    s.expect(re.compile(rb"#9/\s+#10/\s+#11/"))
    s.send("\x15exit\r")
    assert s.wait() == 0


def test_a_line_holding_characters_a_terminal_may_not_show_is_not_run(vault, shell):
    """Review BN-6: libedit echoed a pasted right-to-left override, zero-width space or byte
    order mark as it is: on the screen the line could read otherwise than what ran. Such a
    line is refused, saying how to type the character; joiners (emoji, Persian) still pass."""
    s = shell()
    for char, spelled in (("\u202e", "\\u{202e}"), ("\u200b", "\\u{200b}"), ("\ufeff", "\\u{feff}"),
                          ("\u206a", "\\u{206a}"), ("\ufe0f", "\\u{fe0f}")):   # review CC-7
        s.send(f"mkdir keep{char}txt.exe\r")
        s.expect(f"narnia: error: the line holds {spelled}, which a terminal may show as nothing")
        s.expect(f"narnia: hint: type it as $'{spelled}'")
        s.prompt("/")
    scotland = "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F"   # review CC-8
    s.send(f"mkdir $'a\\u202eb' \U0001F469\u200d\U0001F4BB {scotland}\r")
    s.prompt("/")
    s.send("exit\r")
    assert s.wait() == 0
    assert vault.ok("ls /").out_lines == ["a\\u{202e}b", "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",
                                          "\U0001F469\u200d\U0001F4BB"]


def test_a_number_names_the_item_it_numbers_even_beside_one_really_named_so(vault, shell, tmp_path):
    """Review BP-2: under hide-names an item really named `#2` won over the number: shown as
    `#1`, it was what `rm #2` removed, not the item shown as `#2`."""
    (tmp_path / "plain").write_text("second")
    vault.ok(f"import - '#2' ; import --keep {tmp_path / 'plain'}; set hide-names on", input=b"first")
    s = shell()
    s.send("rm #2\r")
    s.prompt("/")
    s.send("exit\r")
    assert s.wait() == 0
    assert vault.ok("ls /").out_lines == ["#2"], "the second in name order went, as the listing numbers it"


def test_a_run_of_c_on_a_terminal_says_it_never_asks(vault):
    """Review CA-4: `narnia -c passwd` and `narnia -c '!'` on a terminal said there was no
    terminal; a -c run never asks, which is what they say now."""
    for command, said in (("passwd", "passwd: asks for the new passphrase only in the interactive shell"),
                          ("!", "!: '!' alone starts a shell only in the interactive shell")):
        s = Shell(vault, args=("-c", command))
        try:
            s.expect("Passphrase: ")
            s.send(DEFAULT_PASSPHRASE + "\r")
            s.expect(f"narnia: error: {said}")
            assert s.wait() == 1
        finally:
            s.close()


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


def test_cat_on_a_terminal_cannot_drive_it_with_the_files_escape_sequences(vault, tmp_path):
    """A text file (libmagic: text/plain) holding terminal sequences — a title, a screen clear,
    colour — reaches the terminal with its control characters as `.`, as `open` shows text
    without a pager; `--force` writes the bytes as they are."""
    evil = tmp_path / "evil.txt"
    evil.write_bytes(b"hello \x1b]0;PWNED\x07 world \x1b[2J\x1b[31mred\tend\n")
    vault.ok(f"import {evil}")
    s = Shell(vault)
    try:
        s.login()
        s.send("cat /evil.txt\r")
        s.expect("\r\n")
        s.expect(PROMPT)
        shown = s.skipped
        assert b"\x1b]0;" not in shown and b"\x1b[2J" not in shown and b"\x07" not in shown, shown
        assert b"hello .]0;PWNED. world .[2J.[31mred\tend" in shown, shown
        s.send("cat --force /evil.txt\r")
        s.expect("\r\n")
        s.expect(PROMPT)
        assert b"\x1b]0;PWNED\x07" in s.skipped, s.skipped
        s.send("exit\r")
        assert s.wait() == 0
    finally:
        s.close()

"""Hostile names never drive the terminal: every command's output on a pseudo-terminal is
searched for raw control bytes after importing names holding ESC sequences, CR, LF, a C1
control and bidirectional marks. Scripts get the unambiguous form of docs/INTERFACE.md
(`\\xHH`, `\\\\`), and `--json` stays exact."""

from __future__ import annotations

import json
import os
import re

from terminal import Terminal
from harness import q

HOSTILE = [
    "a\x1b]0;PWNED\x07\x1b[2J",
    "cr\rOVER",
    "line1\nline2",
    "csi\u009b31m",
    "rlo\u202eevil.txt",
    "marks\u200e\u200f\u061c",
    "back\\slash",
    "zw\u200bsp\u2060\ufeff\U000e0041.txt",
]

# What must never reach a terminal raw: ESC, BEL, a CR that does not end a line, C0 controls
# but the line endings, DEL, C1 (as UTF-8), the bidirectional marks and overrides, and (in
# names: review AQ) the zero-width space, the word joiner, the byte order mark and the tags.
RAW = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1a\x1b\x1c-\x1f\x7f]|\r(?!\n)|\xc2[\x80-\x9f]"
                 rb"|\xe2\x80[\x8b\x8e\x8f\xaa-\xae]|\xe2\x81[\xa0\xa6-\xa9]|\xd8\x9c|\xef\xbb\xbf|\xf3\xa0[\x80\x81]")


def hostile_vault(narnia, host):
    narnia.init()
    src = host / "evil"
    src.mkdir()
    for name in HOSTILE:
        (src / name).write_bytes(f"content of {name!r}\n".encode())
    (src / (HOSTILE[0] + "-dir")).mkdir()
    (src / (HOSTILE[0] + "-dir") / "inner").write_text("x\n")
    narnia.ok(f"import {q(str(src))}")
    return src


def on_terminal(narnia, commands: str, cwd) -> bytes:
    """`narnia -c COMMANDS` with standard output and error on a pseudo-terminal."""
    t = Terminal(narnia.argv(["-c", commands]), narnia.env, cwd)
    try:
        t.wait(timeout=60)
        return t.output
    finally:
        t.close()


def test_no_command_writes_a_hostile_name_raw_to_a_terminal(narnia, host):
    src = hostile_vault(narnia, host)
    out = host / "out"
    out.mkdir()
    d = HOSTILE[0] + "-dir"
    commands = [
        "ls /evil", "ls -l /evil", "ls -la /evil", "ls -R /", "ls /evil /evil/" + q(d), "ls --json /evil",
        "tree /", "find /", "stat /evil/" + q(HOSTILE[1]), "du /evil", "du /evil/" + q(d),
        "cd /evil/" + q(d) + "; pwd", "verify", f"lls {q(str(src))}", f"lls -l {q(str(src))}",
        f"export /evil/{q(HOSTILE[2])} {q(str(out))}",
        f"mkdir /more; cd /more; import {q(str(src / HOSTILE[4]))}",
        "rmdir /evil/" + q(d),                      # an error naming a hostile folder
        "cat /evil/" + q(d),                        # another: is a folder
        "ls /evil/" + q(HOSTILE[3] + "-missing"),  # a missing hostile name
        "devices",
    ]
    for command in commands:
        shown = on_terminal(narnia, command, host)
        m = RAW.search(shown)
        assert m is None, f"{command!r} wrote {m.group()!r} raw to the terminal: {shown[max(0, m.start() - 60):m.end() + 60]!r}"
    listing = on_terminal(narnia, "ls -l /evil", host)
    assert b"a?]0;PWNED??[2J" in listing and b"cr?OVER" in listing and b"line1?line2" in listing


def test_the_prompt_and_completion_never_show_a_hostile_name_raw(narnia, host):
    hostile_vault(narnia, host)
    t = Terminal(narnia.argv(["enter"]), narnia.env, host)
    try:
        t.expect("> ")
        t.forget()
        t.send("cd /evil/\t\t")          # the candidates, listed
        t.settle()
        listed = t.output[t.seen:]
        t.send("\x15cd /evil/a\t\r")     # completed (libedit shows typed controls as ^X), entered
        t.expect("PWNED")
        t.expect("> ")
        t.settle()
        prompt = t.output[t.output.rfind(b"narnia:"):]
        assert prompt.startswith(b"narnia:/evil/a?]0;PWNED??[2J-dir>"), prompt
        t.send("\x15exit\r")
        t.wait()
        for shown in (listed, prompt):
            assert b"\x1b]0;" not in shown and b"\x1b[2J" not in shown and b"PWNED\x07" not in shown, shown
            assert b"\xc2\x9b" not in shown and b"\xe2\x80\xae" not in shown and b"\n" not in shown.replace(b"\r\n", b""), shown
    finally:
        t.close()


def test_scripts_get_one_unambiguous_line_per_name(narnia, host):
    hostile_vault(narnia, host)
    lines = narnia.ok("ls /evil").out_lines
    assert len(lines) == len(HOSTILE) + 1, lines
    assert "a\\x1b]0;PWNED\\x07\\x1b[2J" in lines
    assert "cr\\x0dOVER" in lines and "line1\\x0aline2" in lines
    assert "csi\\x9b31m" in lines and "rlo\\u{202e}evil.txt" in lines
    assert "back\\\\slash" in lines, "a backslash is doubled, so that every name has one form"
    assert "zw\\u{200b}sp\\u{2060}\\u{feff}\\u{e0041}.txt" in lines, "characters that show as nothing are shown"
    found = narnia.ok("find /evil").out_lines
    assert "/evil/line1\\x0aline2" in found
    # Review DM-4: the hex view's header too (it used the terminal's `?`).
    narnia.ok("cd /evil; import - bin$'\\x1b'.dat", input=b"\xfe\x00\x01\x9b\xff" * 600)
    assert narnia.ok("open /evil/bin$'\\x1b'.dat").out_lines[0] == "/evil/bin\\x1b.dat: data"


def test_json_stays_exact(narnia, host):
    hostile_vault(narnia, host)
    names = {json.loads(l)["name"] for l in narnia.ok("ls --json /evil").out_lines}
    assert set(HOSTILE) <= names
    raw = narnia.ok("ls --json /evil").outb
    assert RAW.search(raw) is None, "JSON escapes every control and bidirectional character"


def test_a_name_with_a_line_feed_cannot_forge_a_message_line(narnia, host):
    """Diagnostics are one line: a line feed in a name put into one raw (here `lcd` and
    `mv … into itself`, and the launcher's "a store already exists") shows as `\\x0a`."""
    narnia.init()
    forged = "fold\nnarnia: note: all items verified"
    (host / forged).mkdir()
    (host / forged / "f").write_text("x\n")
    narnia.ok(f"mkdir /h; cd /h; import {q(str(host))}/fold*; cd /h/fold*; mkdir inner")
    for command in (f"lcd {q(str(host))}/fold*/f", "mv /h/fold* /h/fold*/inner"):
        r = narnia.c(command)
        assert r.rc == 1, r.describe()
        assert not any(l.startswith("narnia: note: all items verified") for l in r.err_lines), r.describe()
        assert sum("\\x0a" in l for l in r.err_lines) == 1, r.describe()
    store = host / "vault\nnarnia: note: ok"
    narnia("init", vault=store)
    r = narnia("init", vault=store)
    assert r.rc != 0 and len(r.err_lines) == 1 and "\\x0a" in r.err, r.describe()


def test_the_first_run_screen_never_shows_the_store_path_raw(narnia, host):
    env = dict(narnia.env, TERM="xterm")
    t = Terminal([str(narnia.binary), "--vault", str(host / "fr\x1b]0;PWNED\x07\x1b[31mRED")], env, narnia.workdir)
    try:
        t.expect("New passphrase: ", timeout=15)
        assert b"\x1b]0;PWNED" not in t.output and b"\x1b[31mRED" not in t.output, t.output
        assert b"fr?]0;PWNED??[31mRED" in t.output, t.output
    finally:
        t.close()


def test_host_paths_and_typed_words_in_messages_show_invisible_characters(narnia, host):
    """A host path in a message kept U+200B raw, so two names differing by it read alike, and
    `mv … into itself` printed the vault path raw — under `hide-names on` too (review BC-1, BC-2)."""
    narnia.init()
    narnia.ok("mkdir '/secret\u200bname'")
    r = narnia.fails("lcd '/nonexist/zw\u200bx'", "lcd")
    assert "/nonexist/zw\\u{200b}x" in r.err and "\u200b" not in r.err, r.describe()
    r = narnia.fails("set 'nosuch\u200bkey' on", "set")
    assert "nosuch\\u{200b}key" in r.err and "\u200b" not in r.err, r.describe()
    r = narnia.fails("mv '/secret\u200bname' '/secret\u200bname/in'", "mv")
    assert "cannot move /secret\\u{200b}name into itself" in r.err, r.describe()
    out = on_terminal(narnia, "set hide-names on; mv /#1 /#1/in", host)
    assert b"cannot move /#1 into itself" in out and b"secret" not in out, out


def test_a_host_name_that_is_not_utf8_shows_on_a_terminal_as_question_marks(narnia, host):
    """Review BC-7: on a terminal, a message spells each byte of a host name that is not UTF-8
    as `?`, as it shows every character it cannot print; as `\\xHH` it read as a real name
    holding a backslash, listed beside it. Scripts still get `\\xHH`."""
    narnia.init()
    folder = host / "h"
    folder.mkdir()
    (folder / "bad\\xff").write_text("a real name with a backslash\n")
    with open(os.path.join(os.fsencode(folder), b"bad\xff"), "w") as f:
        f.write("not UTF-8\n")
    shown = on_terminal(narnia, f"lls {q(str(folder))}", host)
    assert f"lls: {folder}/bad?: the name is not valid UTF-8; not listed".encode() in shown, shown
    assert b"bad\\xff" in shown, "the real name is listed as it is"
    shown = on_terminal(narnia, f"import {q(str(folder))}/bad*", host)
    assert f"matches a name that is not valid UTF-8 ({folder}/bad?)".encode() in shown, shown
    shown = on_terminal(narnia, f"import {q(str(folder))}", host)
    assert f"import: {folder}/bad?: the name is not valid UTF-8; rename it to import it".encode() in shown, shown
    r = narnia.c(f"lls {q(str(folder))}; import {q(str(folder))}")
    assert f"narnia: warning: lls: {folder}/bad\\xff: the name is not valid UTF-8; not listed (rename it to import it)" in r.err_lines, r.describe()
    assert f"narnia: error: import: {folder}/bad\\xff: the name is not valid UTF-8; rename it to import it" in r.err_lines, r.describe()

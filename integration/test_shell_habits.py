"""The shell as sftp, coreutils and zsh hands expect it (shell issue, items 7–15), through `-c`,
`-b` and a pseudo-terminal where only a terminal shows the difference.

Finishing an import or export cut short (`--skip-existing`); a line per file in scripts, a
summary on a terminal; every good source imported beside bad ones; `export` into the host
folder; the flags of ls, du, find, tree, rm, cp, mv, stat and verify; `--help` everywhere;
the sftp aliases, `!COMMAND` and "did you mean"; batch errors that name FILE:LINE and `-v`;
help wrapped at word boundaries; the small ones.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness import q
from test_shell_pty import Shell, clean

ESC = "\x1b"


def tree_of(n, path="/") -> list[str]:
    return n.ok(f"find {q(path)}").out_lines


def make_files(folder, names, size=100):
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(os.urandom(size))


# -- 7. Imports and exports cut short, finished by running them again ------------------------


def test_import_skip_existing_merges_folders_and_leaves_files_of_the_same_size(vault, host):
    src = host / "doc"
    make_files(src, ["a.bin", "b.bin"])
    vault.ok(f"import {q(str(src))}")
    make_files(src, ["c.bin"])
    r = vault.ok(f"import --skip-existing {q(str(src))}")
    assert tree_of(vault) == ["/doc", "/doc/a.bin", "/doc/b.bin", "/doc/c.bin"], r.describe()
    assert [l for l in r.out_lines if l.startswith("imported ")] == [f"imported {src}/c.bin -> /doc/c.bin"], r.describe()
    assert len([l for l in r.out_lines if l.startswith("skipped ")]) == 2, r.describe()
    # Without the flag the old rule holds: a second folder with a number.
    vault.ok(f"import -q {q(str(src))}")
    assert "/doc (2)" in tree_of(vault)


def test_import_move_skip_existing_takes_in_again_what_it_finds_there_and_removes_the_originals(vault, host):
    """Run again with --skip-existing after an `import --move` cut short (a kill after the
    commit, before the removals), the import finishes the move: a file whose copy is there with
    the same bytes is taken in again over that copy, so that this run's record keeps them
    (review FI-1: removed after a comparison alone, their bytes were lost when another device
    removed the copy meanwhile; FD-2: kept, they stayed without a word). One of the same name,
    size and time whose bytes differ is imported beside it (review FF-1)."""
    src = host / "doc"
    make_files(src / "sub", ["a.bin"])
    make_files(src, ["b.bin", "c.bin"])
    vault.ok(f"import --keep -q {q(str(src))}")   # what the cut run committed; no original removed
    (src / "d.bin").write_bytes(os.urandom(100))  # not reached before the cut
    c = src / "c.bin"
    st = c.stat()
    c.write_bytes(os.urandom(100))                # the same size and time, other bytes
    os.utime(c, ns=(st.st_atime_ns, st.st_mtime_ns))
    wanted = {name: (src / name).read_bytes() for name in ("sub/a.bin", "b.bin", "c.bin", "d.bin")}
    before = {name: vault.ok(f"cat /doc/{name}").outb for name in ("sub/a.bin", "b.bin", "c.bin")}
    r = vault.ok(f"import --move --skip-existing {q(str(src))}")
    assert sorted(l for l in r.out_lines if l.startswith("imported ")) == sorted([
        f"imported {src}/b.bin -> /doc/b.bin (again, over the copy an earlier run made)",
        f"imported {src}/sub/a.bin -> /doc/sub/a.bin (again, over the copy an earlier run made)",
        f"imported {src}/c.bin -> /doc/c (2).bin", f"imported {src}/d.bin -> /doc/d.bin"]), r.describe()
    assert not [l for l in r.out_lines if l.startswith("skipped ")] and r.err_lines == [], r.describe()
    assert not src.exists(), "every original removed, and the folders they left empty"
    assert sorted(vault.ok("find /doc").out_lines) == ["/doc/b.bin", "/doc/c (2).bin", "/doc/c.bin",
                                                       "/doc/d.bin", "/doc/sub", "/doc/sub/a.bin"]
    for name, data in wanted.items():
        assert vault.ok(f"cat {q('/doc/' + name.replace('c.bin', 'c (2).bin'))}").outb == data, name
    assert vault.ok("cat /doc/c.bin").outb == before["c.bin"], "the copy whose bytes differ is left as it was"
    assert "all intact" in vault.ok("verify").out


def test_import_move_skip_existing_of_a_link_says_its_file_is_kept(vault, host):
    """A symbolic link named on the command line is followed, and nothing is removed through it:
    a plain `import --move` says so, and so does one that finds its copy there (review FN-4)."""
    target = host / "target.bin"
    target.write_bytes(os.urandom(100))
    (host / "link.bin").symlink_to(target)
    vault.ok(f"import --keep {q(str(host / 'link.bin'))}")
    r = vault.ok(f"import --move --skip-existing {q(str(host / 'link.bin'))}")
    assert r.out_lines == [f"skipped {host}/link.bin -> /link.bin (already there)"], r.describe()
    assert r.err_lines == [f"narnia: warning: import: {host}/link.bin: a symbolic link: the file it points to, {target}, "
                           "is kept, and so is the link (the vault holds its bytes; remove them once you are sure)"], r.describe()
    assert target.exists() and (host / "link.bin").is_symlink()


def imported_and_exported(vault, host) -> tuple[Path, Path]:
    """`host/doc` holding a.bin and b.bin, imported as /doc and exported to `host/out`."""
    src = host / "doc"
    make_files(src, ["a.bin", "b.bin"])
    vault.ok(f"import -q {q(str(src))}")
    out = host / "out"
    out.mkdir()
    vault.ok(f"export /doc {q(str(out))}")
    return src, out


def test_export_skip_existing_leaves_files_already_there(vault, host):
    src, out = imported_and_exported(vault, host)
    (out / "doc" / "a.bin").unlink()
    vault.fails(f"export /doc {q(str(out))}", "export")
    r = vault.ok(f"export --skip-existing /doc {q(str(out))}")
    assert [l for l in r.out_lines if l.startswith("exported ")] == [f"exported /doc/a.bin -> {out}/doc/a.bin"], r.describe()
    assert sorted(p.name for p in (out / "doc").iterdir()) == ["a.bin", "b.bin"]


def test_skip_existing_takes_a_file_of_the_same_size_but_another_time_for_another_file(vault, host):
    """Review AE: `--skip-existing` compared sizes only, so a host file of the same size but
    other content (a document edited in place) was skipped as "already there": export left it
    and said so, exit 0; import, a backup run again, never took the new version. The
    modification time, which both keep, is compared too, as rsync's quick check does."""
    src, out = imported_and_exported(vault, host)
    edited = out / "doc" / "a.bin"
    edited.write_bytes(os.urandom(edited.stat().st_size))
    os.utime(edited, (time.time() + 10, time.time() + 10))   # edited later
    r = vault.fails(f"export --skip-existing /doc {q(str(out))}", "export")
    assert f"narnia: error: export: {edited}: already exists" in r.err_lines, r.describe()
    assert ("narnia: hint: nothing was exported; it is another file than the one exported (its size or modification "
            "time differs): --force replaces it") in r.err_lines, r.describe()
    assert "skipped /doc/b.bin" not in r.out, "nothing is done when one is in the way"
    (src / "b.bin").write_bytes(os.urandom((src / "b.bin").stat().st_size))
    os.utime(src / "b.bin", (time.time() + 10, time.time() + 10))
    r = vault.ok(f"import --skip-existing {q(str(src))}")
    assert [l for l in r.out_lines if l.startswith("skipped ")] == [f"skipped {src}/a.bin -> /doc/a.bin (already there)"], r.describe()
    assert f"imported {src}/b.bin -> /doc/b (2).bin" in r.out_lines, r.describe()
    assert vault.ok("cat '/doc/b (2).bin'").outb == (src / "b.bin").read_bytes()


# -- 8. A line per file in scripts, a summary on a terminal -----------------------------------


def test_scripts_get_a_line_per_file_and_q_silences_them(vault, host):
    src = host / "many"
    make_files(src, [f"f{i:02}.bin" for i in range(12)])
    r = vault.ok(f"import {q(str(src))}")
    assert len([l for l in r.out_lines if l.startswith("imported ")]) == 12, r.describe()
    r = vault.ok(f"import -q {q(str(src))}")
    assert r.out == "", r.describe()
    out = host / "out"
    out.mkdir()
    r = vault.ok(f"export -q /many {q(str(out))}")
    assert r.out == "" and len(list((out / "many").iterdir())) == 12, r.describe()


def test_a_terminal_gets_one_summary_line_and_v_gives_each_file(vault, host):
    src = host / "many"
    make_files(src, [f"f{i:02}.bin" for i in range(30)], size=2048)
    vault.ok("set remove-originals off")
    s = Shell(vault)
    try:
        s.login()
        out = s.run(f"import {q(str(src))}", timeout=60)
        assert "imported " not in out.replace("imported 30 files", ""), out
        assert re.search(r"imported 30 files \(60\.0 KiB\) in \d+\.\d s", out), out
        out = s.run(f"import -v {q(str(src))}", timeout=60)
        assert len(re.findall(r"imported \S+/f\d\d\.bin -> ", out)) == 30, out
        assert "imported 30 files" in out, out
        s.send("exit\r")
        assert s.wait() == 0
    finally:
        s.close()


def test_the_first_import_question_keeps_its_answer_on_its_line(vault, host):
    make_files(host, ["one.bin"])
    s = Shell(vault, cols=80)
    try:
        s.login()
        s.send(f"import {q(str(host / 'one.bin'))}\r")
        s.expect("[y/N] ")
        last_line = clean(s.skipped + b"[y/N] ").split("\n")[-1]
        assert len(last_line) <= 80 and last_line.strip() != "[y/N]", repr(last_line)
        s.send("n\r")
        s.prompt("/")
    finally:
        s.close()


# -- 9. Bad sources among good ones ----------------------------------------------------------


def test_every_good_source_is_imported_and_each_bad_one_reported(vault, host):
    make_files(host, ["a.bin", "b.bin"])
    r = vault.c(f"import {q(str(host / 'a.bin'))} {q(str(host / 'missing.bin'))} {q(str(host / 'b.bin'))}")
    assert r.rc == 1, r.describe()
    assert tree_of(vault) == ["/a.bin", "/b.bin"], r.describe()
    assert any("missing.bin: no such file or folder" in l for l in r.errors), r.describe()


# -- 10. export into the host folder ---------------------------------------------------------


def test_export_without_a_destination_writes_into_the_host_folder(vault, host):
    make_files(host, ["a.bin"])
    vault.ok(f"import -q {q(str(host / 'a.bin'))}")
    out = host / "here"
    out.mkdir()
    vault.ok(f"lcd {q(str(out))}; get /a.bin")
    assert (out / "a.bin").read_bytes() == (host / "a.bin").read_bytes()
    vault.fails(f"lcd {q(str(out))}; export /a.bin", "export")
    vault.ok(f"lcd {q(str(out))}; export -f /a.bin")
    r = vault.fails(f"export /a.bin {q(str(host / 'nowhere' / 'a.bin'))}", "export")
    assert any("no such folder" in l for l in r.errors), r.describe()


# -- 11. The flags coreutils hands type ------------------------------------------------------


def test_ls_orders_by_time_and_size_and_reverses(vault, host):
    for name, size, age in (("old.bin", 300, 3000), ("mid.bin", 100, 2000), ("new.bin", 200, 1000)):
        (host / name).write_bytes(os.urandom(size))
        t = time.time() - age
        os.utime(host / name, (t, t))
    vault.ok(f"import -q {q(str(host / 'old.bin'))} {q(str(host / 'mid.bin'))} {q(str(host / 'new.bin'))}")
    assert vault.ok("ls -1").out_lines == ["mid.bin", "new.bin", "old.bin"]
    assert vault.ok("ls -t").out_lines == ["new.bin", "mid.bin", "old.bin"]
    assert vault.ok("ls -S").out_lines == ["old.bin", "new.bin", "mid.bin"]
    assert vault.ok("ls -tr").out_lines == ["old.bin", "mid.bin", "new.bin"]
    big = vault.ok("ls -lh").out_lines
    assert all(re.match(r"other\s+\d+ ", l) for l in big), big


def test_du_find_tree_stat_and_verify_flags(vault, host):
    make_files(host / "Trip" / "Day1", ["IMG_1.JPG", "note.txt"], size=3000)
    vault.ok(f"import -q {q(str(host / 'Trip'))}")
    assert vault.ok("du -h -s /Trip").out_lines == ["5.9K\t/Trip"]
    assert vault.ok("find / -iname 'img_*.jpg'").out_lines == ["/Trip/Day1/IMG_1.JPG"]
    assert vault.ok("tree -d /").out_lines == ["/", "└── Trip/", "    └── Day1/"]
    assert vault.ok("tree -L 1 /").out_lines == ["/", "└── Trip/"]
    stat = json.loads(vault.ok("stat --json /Trip/Day1/note.txt").out)
    assert stat["path"] == "/Trip/Day1/note.txt" and stat["size"] == 3000 and stat["stored"] >= 3000
    assert vault.ok("verify /Trip/Day1/note.txt").out == "verified 1 item, all intact\n"
    assert vault.ok("verify /Trip").out == "verified 4 items, all intact\n"


def test_rm_i_cp_a_and_mv_n(vault, host):
    make_files(host / "d", ["a.bin", "b.bin"])
    vault.ok(f"import -q {q(str(host / 'd'))}")
    r = vault.fails("rm -i /d/a.bin", "rm")
    assert any("interactive shell" in l for l in r.errors), r.describe()
    vault.ok("cp -a /d /e; mkdir /f; cp /d/a.bin /f/b.bin")
    assert vault.ok("ls /e").out_lines == ["a.bin", "b.bin"]
    vault.ok("mv -n /d/b.bin /f")
    assert vault.ok("ls /d").out_lines == ["a.bin", "b.bin"], "mv -n left the source in place"


@pytest.mark.parametrize("second", ["n", "ctrl-c"])
def test_rm_i_asks_on_a_terminal_every_question_before_any_removal(vault, host, second):
    """`rm -i` asks each question, then removes what was answered yes. Review BG-3: Ctrl-C at a
    question counted as no (the next question came, then the yes answers were carried out); it
    cancels the command, removing nothing."""
    make_files(host / "d", ["a.bin", "b.bin", "c.bin"])
    vault.ok(f"import -q {q(str(host / 'd'))}")
    s = Shell(vault)
    try:
        s.login()
        s.send("rm -i /d/a.bin /d/b.bin /d/c.bin\r")
        s.expect("remove /d/a.bin? [y/N] ")
        s.send("y\r")
        s.expect("remove /d/b.bin? [y/N] ")
        if second == "n":
            s.send("n\r")
            s.expect("remove /d/c.bin? [y/N] ")
            s.send("n\r")
        else:
            s.send("\x03")
            s.expect("narnia: rm: interrupted")
        s.prompt("/")
        assert second == "n" or "remove /d/c.bin" not in clean(s.output)
    finally:
        s.close()
    assert vault.ok("ls /d").out_lines == (["b.bin", "c.bin"] if second == "n" else ["a.bin", "b.bin", "c.bin"])


def test_rm_ri_asks_nothing_of_what_a_folder_answered_yes_takes_with_it(vault, host):
    """Review EV-2: `rm -ri /d /d/a.bin` asked about `/d/a.bin` once `/d` was answered yes, and
    then removed it with `/d` whatever the answer."""
    make_files(host / "d", ["a.bin", "b.bin"])
    make_files(host / "e", ["c.bin"])
    vault.ok(f"import -q {q(str(host / 'd'))} {q(str(host / 'e'))}")
    s = Shell(vault)
    try:
        s.login()
        s.send("rm -ri /d /d/a.bin /e/c.bin\r")
        s.expect("remove the folder /d and everything in it? [y/N] ")
        s.send("y\r")
        s.expect("? [y/N] ")
        assert "remove /d/a.bin" not in clean(s.output) and "remove /e/c.bin" in clean(s.output), clean(s.output)
        s.send("n\r")
        s.prompt("/")
        # Review EW-1: an item two operands name is asked about once (a no, then a yes to the
        # second question, removed it).
        start = len(s.output)
        s.send("rm -ri /e/c.bin /e/./c.bin e/c.bin\r")
        s.expect("remove /e/c.bin? [y/N] ")
        s.send("n\r")
        s.prompt("/")
        assert clean(s.output[start:]).count("[y/N]") == 1, clean(s.output[start:])
    finally:
        s.close()
    assert vault.ok("ls /").out_lines == ["e"] and vault.ok("ls /e").out_lines == ["c.bin"]


def test_help_flag_on_every_command(vault):
    assert vault.ok("ls --help").out == vault.ok("help ls").out
    assert vault.ok("mkdir -h").out == vault.ok("help mkdir").out
    assert vault.ok("ls -h /").rc == 0 and "usage:" not in vault.ok("ls -h /").out


# -- 12. sftp's aliases, !COMMAND, did you mean ------------------------------------------------


def test_sftp_aliases_and_host_commands(vault, host):
    make_files(host, ["a.bin"])
    vault.ok(f"lcd {q(str(host))}; put a.bin; lmkdir {q(str(host / 'got'))}; lcd got; mget /a.bin")
    assert (host / "got" / "a.bin").exists()
    assert vault.ok("?").out == vault.ok("help").out
    r = vault.ok(f"lcd {q(str(host))}; !ls got")
    # Review CV-1: the probe for a here-document, which /bin/sh is to refuse, printed its error.
    assert r.out_lines == ["a.bin"] and r.err_lines == [], r.describe()
    # A host command's text, as typed (quotes, escapes, redirections), goes to /bin/sh; it goes
    # last on its line.
    r = vault.ok("!echo 'a;b' \"c;d\" e\\;f 'one  two' > out.txt", cwd=host)
    assert (host / "out.txt").read_text() == "a;b c;d e;f one  two\n", r.describe()
    # Reviews CN-1, CO-1: a host command followed by ';' and more is refused, nothing run: at the
    # start of a line it took the whole rest, so `!ls; rm -r photos` removed the host's photos,
    # not the vault's; cut at the ';', `!{ true; rm -r photos; }` removed the vault's.
    (host / "photos").mkdir()
    (host / "photos" / "keep.jpg").write_bytes(b"host")
    vault.ok("mkdir /photos")
    refused = "a host command ('!') is followed by ';' and more on its line: whether that ';' is the host's or ends the host command is unclear; nothing was run, nor will the lines after it be"
    unread = "/bin/sh cannot read it as a whole command: not run, nor anything after it (the lines after it may be the host's)"
    # CQ-5, CQ-7: nor do the lines after it run, `--keep-going` and a `-` mark notwithstanding:
    # they may be the rest of a construct of the host's.
    for lines, error in (("!true; rm -r photos", refused), ("!{ true; rm -r photos; }", refused), ("pwd; !true; rm -r photos", refused),
                         ("-!true; rm -r photos", refused), ("!if true; then\nrm -r photos\nfi", refused),
                         ("-!{\nrm -r photos\n}", unread), ("!for d in *\ndo rm -r photos\ndone", unread),
                         # CR-1: a here-document; CR-3: a quote or a backslash the next line would finish.
                         ("!cat > x.sh <<'EOF'\nrm -r photos\nEOF", "it holds a here-document ('<<'), whose lines would be read as the vault's: not run, nor anything after it (the lines after it may be the host's)"),
                         ("-!echo cleaning \\\nrm -r photos", "a backslash at the end of the line escapes nothing; a host command ('!') may go on in the lines after it, which are not run"),
                         ('!echo "tidy up:\nrm -r photos"', "unterminated quote: a \" is never closed; a host command ('!') may go on in the lines after it, which are not run")):
        r = vault.c(lines, "--keep-going", cwd=host)
        assert r.rc == 1 and r.out_lines == [] and any(l.endswith(error) for l in r.err_lines), r.describe()
        assert (host / "photos" / "keep.jpg").read_bytes() == b"host" and "photos" in vault.ok("ls /").out_lines, r.describe()
    # Review CS-3: a shift is no here-document; CS-4: a '!' inside an open quote is no host command.
    vault.ok("!echo $((1<<4)) > shift.txt", cwd=host)
    assert (host / "shift.txt").read_text() == "16\n"
    r = vault.c('-mkdir "Hello!\nmkdir /after', cwd=host)
    assert "after" in vault.ok("ls /").out_lines, r.describe()
    r = vault.c("!exit 3")
    assert r.rc == 1 and any("exited with status 3" in l for l in r.errors), r.describe()
    # The host command inherits nothing of the vault: only descriptors 0-2.
    r = vault.ok("!ls /proc/self/fd")
    assert sorted(int(x) for x in r.out_lines) in ([0, 1, 2], [0, 1, 2, 3]), r.describe()
    # It gets the user's umask, not the 077 narnia keeps for its own files (a review).
    mask = os.umask(0o022)
    os.umask(mask)
    assert vault.ok("!umask").out_lines == [f"{mask:04o}"]
    # What it leaves running in the background ends with the session.
    pid = int(vault.ok("!sleep 311 >/dev/null 2>&1 & echo $!").out)

    def ended():
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True
    deadline = time.monotonic() + 5
    while not ended():
        assert time.monotonic() < deadline, "the background job outlived the session"
        time.sleep(0.05)
    # Nor do the ended ones stay zombies below narnia, their reaper, while the session goes on.
    batch = vault.workdir / "orphans.narnia"
    batch.write_text('!sh -c "sleep 0.1 &"\n' * 3 + "!sleep 0.4\n!ps -o stat= --ppid $PPID\n")
    r = vault("-b", str(batch))
    assert r.rc == 0 and not [l for l in r.out_lines if l.startswith("Z")], r.describe()
    assert vault.ok("bye; ls").out == ""


def test_a_mistyped_command_gets_a_suggestion(vault):
    r = vault.c("exprot /a")
    assert r.rc == 1 and "narnia: hint: did you mean 'export'? ('help' lists the commands)" in r.err_lines, r.describe()
    # Review CA-9: a command run into its argument, and `help` of a typo, got no suggestion.
    for typed, meant in (("cd..", "cd .."), ("ls-l", "ls -l"), ("help exprot", "help export"), ("help ls-l", "help ls")):
        r = vault.c(typed)
        assert r.rc == 1 and f"narnia: hint: did you mean '{meant}'? ('help' lists the commands)" in r.err_lines, r.describe()
    # Review EF-10: a word as near to two commands got no suggestion; both are named.
    for typed, meant in (("lss", "'lls' or 'ls'"), ("help lss", "'help lls' or 'help ls'")):
        r = vault.c(typed)
        assert r.rc == 1 and f"narnia: hint: did you mean {meant}? ('help' lists the commands)" in r.err_lines, r.describe()


# -- 13. Batch files name FILE:LINE, -v echoes -------------------------------------------------


def test_batch_errors_name_the_file_and_line_and_v_echoes(vault, tmp_path):
    batch = tmp_path / "jobs.txt"
    batch.write_text("mkdir /a\n# a comment\nrmdir /missing\n")
    r = vault("-b", str(batch))
    assert r.rc == 1
    assert f"narnia: error: {batch}:3: rmdir: /missing: no such file or folder" in r.err_lines, r.describe()
    r = vault("-v", "-c", "pwd; ls")
    assert r.out_lines[0] == "narnia> pwd; ls" and r.out_lines[1] == "/", r.describe()


# -- 14. help wraps at word boundaries ---------------------------------------------------------


def test_help_wraps_at_word_boundaries(vault):
    text = vault.ok("help ls").out
    words = set(" ".join(text.split("\n")).split())
    for line in text.split("\n"):
        assert len(line) <= 80, line
        for word in line.split():
            assert word in words
    assert "thumbnail grid" in " ".join(text.split()), text


# -- 15. The small ones ------------------------------------------------------------------------


def test_cd_tilde_goes_to_the_root(vault):
    assert vault.ok("mkdir /x; cd /x; cd ~; pwd").out == "/\n"


def test_host_errors_use_the_shells_words(vault, host):
    r = vault.fails(f"lcd {q(str(host / 'nowhere'))}", "lcd")
    assert any("no such file or folder" in l for l in r.errors), r.describe()
    assert "No such file" not in r.err


def test_open_and_grid_write_no_colour_into_a_pipe(vault, host):
    import random
    from corpus import png as make_png
    png = host / "p.png"
    png.write_bytes(make_png(64, 48, random.Random(7), noise=True))
    vault.ok(f"import -q {q(str(png))}")
    for command in ("open /p.png", "ls -g /"):
        r = vault.c(command, timeout=60)
        assert ESC not in r.out, (command, r.out[:200])


def test_set_on_a_terminal_says_which_settings_are_unset(vault):
    s = Shell(vault)
    try:
        s.login()
        out = s.run("set")
        assert "remove-originals off (not set: the default)" in out, out
        assert "viewer.video (not set: narnia's own choice)" in out, out
    finally:
        s.close()


# -- Several operands, one of them wrong ---------------------------------------------------------


def test_reading_commands_and_mkdir_go_on_past_a_wrong_operand_as_coreutils(vault):
    vault.ok("mkdir /a /b")
    r = vault.c("ls /a /nope /b")
    assert r.rc == 1 and r.out == "/a:\n\n/b:\n", "headers stay when an operand is missing" + r.describe()
    assert r.err_lines == ["narnia: error: ls: /nope: no such file or folder"], r.describe()
    r = vault.c("stat /nope /a")
    assert r.rc == 1 and r.out_lines[0] == "path: /a", "stat prints the operands that exist" + r.describe()
    r = vault.c("du /nope /b")
    assert r.rc == 1 and r.out == "0\t/b\n", r.describe()
    r = vault.c("mkdir /x /a /y")
    assert r.rc == 1 and r.err_lines == ["narnia: error: mkdir: /a: already exists"], r.describe()
    assert vault.ok("ls /").out_lines == ["a", "b", "x", "y"], "mkdir made the operands it could"


def test_changing_commands_change_nothing_when_one_operand_is_wrong(vault):
    vault.ok("mkdir /a /b /dest")
    for line in ("rm -r /a /nope /b", "mv /a /nope /dest", "cp -r /a /nope /dest"):
        r = vault.c(line)
        assert r.rc == 1 and r.out == "", line + r.describe()
        assert vault.ok("find /").out_lines == ["/a", "/b", "/dest"], line


def test_export_of_a_folder_prints_its_lines_in_path_order(vault, host):
    src = host / "tree"
    make_files(src, [f"f{i:02}.bin" for i in range(12)])
    make_files(src / "sub", ["a.bin", "z.bin"])
    vault.ok(f"import {q(str(src))}")
    outs = []
    for n in range(3):
        dest = host / f"out{n}"
        dest.mkdir()
        outs.append([l.split(" -> ")[0] for l in vault.ok(f"export /tree {q(str(dest))}").out_lines])
    expected = [f"exported /tree/f{i:02}.bin" for i in range(12)] + ["exported /tree/sub/a.bin", "exported /tree/sub/z.bin"]
    assert outs == [expected] * 3


def test_export_names_every_file_in_the_way_and_writes_none(vault, host):
    src = host / "three"
    make_files(src, ["a.bin", "b.bin", "c.bin"])
    vault.ok(f"import {q(str(src))}")
    dest = host / "dest"
    make_files(dest / "three", ["a.bin", "c.bin"], size=5)
    r = vault.c(f"export /three {q(str(dest))}")
    assert r.rc == 1 and r.out == "", r.describe()
    assert r.errors == [f"narnia: error: export: {dest}/three/{n}: already exists" for n in ("a.bin", "c.bin")], r.describe()
    assert any("--skip-existing" in l for l in r.err_lines), r.describe()
    assert sorted(p.name for p in (dest / "three").iterdir()) == ["a.bin", "c.bin"], "nothing was written"


def test_help_names_values_as_the_usage_line_and_set_lists_its_keys(vault):
    assert "  -L DEPTH  descend at most DEPTH levels" in vault.ok("help tree").out_lines
    assert any(l.startswith("  -name GLOB ") for l in vault.ok("help find").out_lines)
    page = " ".join(vault.ok("help set").out.split())
    assert "remove-originals (on|off)" in page and "hide-names (on|off)" in page and "viewer.TYPE/SUBTYPE" in page
    r = vault.c("set bogus")
    assert r.rc == 1 and "viewer.TYPE/SUBTYPE" in r.err, r.describe()


def test_a_one_letter_flag_takes_its_value_attached(vault):
    vault.ok("mkdir -p /a/b/c")
    assert vault.ok("tree -L1 /").out == vault.ok("tree -L 1 /").out
    assert "c/" not in vault.ok("tree -L2 /").out


def test_rm_rmdir_mv_and_cp_refuse_dot_and_dot_dot(vault):
    """`rm -r ..` once removed a whole folder without a word (the shell issue); GNU rm, rmdir
    and mv refuse a path ending in `.` or `..`."""
    vault.ok("mkdir -p /p/q/r")
    for line, verb in (("rm -r ..", "remove"), ("rm -rf .", "remove"), ("rmdir ../q", None),
                       ("rmdir .", "remove"), ("mv .. /x", "move"), ("mv /p/. /x", "move"), ("cp -r .. /x", "copy")):
        r = vault.c(f"cd /p/q/r; {line}")
        assert r.rc == 1, line + r.describe()
        if verb:
            assert f"refusing to {verb} '.' or '..'" in r.err, line + r.describe()
        assert vault.ok("find /").out_lines == ["/p", "/p/q", "/p/q/r"], line
    r = vault.c("cd /p/q/r; rm -r /p/q; pwd")
    assert r.rc == 0 and r.out_lines[-1] == "/p", "the shell moves to the nearest folder left" + r.describe()


def test_mv_refuses_a_source_inside_another_source(vault):
    """Review BG-5: `mv d d/x dest` moved d, then took x out of it again, exit 0."""
    vault.ok("mkdir -p /d/x/y /dest")
    for line in ("mv /d /d/x /dest", "mv /d/x/y /d /dest"):
        r = vault.c(line)
        assert r.rc == 1 and "inside /d, which moves too; nothing was moved" in r.err, line + r.describe()
    assert vault.ok("find /").out_lines == ["/d", "/d/x", "/d/x/y", "/dest"]
    vault.ok("cp -r /d /d/x /dest")   # copying twice is what was asked
    assert vault.ok("find /dest").out_lines == ["/dest/d", "/dest/d/x", "/dest/d/x/y", "/dest/x", "/dest/x/y"]


def test_a_trailing_slash_after_a_prepend_character_still_asks_for_a_folder(vault, host):
    """Review BI-1: a Prepend character (U+0600) joins the `/` after it in one Character, so
    `mv -f a.txt 'b\u0600/'` replaced the file `b\u0600` instead of refusing (no such folder)."""
    (host / "a.txt").write_text("a")
    (host / "b\u0600").write_text("b")
    vault.ok(f"import --keep {q(str(host / 'a.txt'))} {q(str(host / ('b' + chr(0x600))))}")
    for verb in ("mv -f", "cp -f"):
        r = vault.c(f"{verb} a.txt 'b\u0600/'")
        assert r.rc == 1 and "not a folder" in r.err, verb + r.describe()
    assert vault.ok("cat 'b\u0600'").out == "b"
    # Nor does one hide a `..` from the refusal of `rm -r ..`: the folder above stays.
    vault.ok("mkdir -p /d/e")
    r = vault.c("cd /d/e; rm -r 'x\u0600/..'")
    assert r.rc == 1 and "refusing to remove '.' or '..'" in r.err, r.describe()
    assert "/d/e" in vault.ok("find /d").out_lines


def test_export_refuses_two_items_bound_for_one_host_path(vault, host):
    for folder, data in (("f1", b"one"), ("f2", b"two")):
        (host / folder).mkdir()
        (host / folder / "same.txt").write_bytes(data)
        vault.ok(f"mkdir /{folder}; cd /{folder}; import {q(str(host / folder / 'same.txt'))}")
    out = host / "out"
    out.mkdir()
    r = vault.c(f"export -f /f1/same.txt /f2/same.txt {q(str(out))}")
    assert r.rc == 1 and "more than one item would be exported there (/f1/same.txt and /f2/same.txt)" in r.err, r.describe()
    assert list(out.iterdir()) == [], "nothing was written"


def test_export_of_one_item_named_twice_exports_it_once(vault, host):
    """Review EP-3: refused, "more than one item would be exported there (/x/f and
    another)", the other being the same item. Once, as import does."""
    (host / "f.txt").write_bytes(b"f")
    vault.ok(f"import {q(str(host / 'f.txt'))}")
    out = host / "out"
    out.mkdir()
    r = vault.ok(f"export /f.txt /f.txt {q(str(out))}")
    assert "narnia: warning: export: /f.txt: named before; exported once" in r.err_lines, r.describe()
    assert [p.name for p in out.iterdir()] == ["f.txt"] and (out / "f.txt").read_bytes() == b"f"


def test_export_refuses_a_file_and_a_folder_bound_for_one_host_path(vault, host):
    """Review BG-11: `export /x/d /y/d out` (a folder and a file both named d) exported the
    folder, then failed on the file ("already exists", naming the folder it had just made)."""
    (host / "inner").write_text("i")
    (host / "d").write_text("f")
    vault.ok(f"mkdir -p /x/d /y; cd /x/d; import {q(str(host / 'inner'))}; cd /y; import {q(str(host / 'd'))}")
    for i, order in enumerate(("/x/d /y/d", "/y/d /x/d")):
        out = host / f"out{i}"
        out.mkdir()
        r = vault.c(f"export -f {order} {q(str(out))}")
        assert r.rc == 1 and f"{out / 'd'}: a file and a folder would be exported there" in r.err, r.describe()
        assert list(out.iterdir()) == [], "nothing was written"


def test_set_inbox_refuses_a_file(vault, host):
    (host / "h.txt").write_text("h")
    vault.ok(f"import {q(str(host / 'h.txt'))}")
    r = vault.c("set inbox /h.txt")
    assert r.rc == 1 and "/h.txt is a file, not a folder" in r.err, r.describe()
    assert vault.ok("set inbox").out == "/Inbox\n"


def test_mkdir_over_a_file_says_it_already_exists(vault, host):
    (host / "notes.txt").write_text("n")
    vault.ok(f"import {q(str(host / 'notes.txt'))}")
    r = vault.c("mkdir /notes.txt")
    assert r.rc == 1 and r.err_lines == ["narnia: error: mkdir: /notes.txt: already exists"], r.describe()
    r = vault.c("mkdir -p /notes.txt/sub")
    assert r.rc == 1 and r.err_lines == ["narnia: error: mkdir: /notes.txt: not a folder"], r.describe()


def test_mget_takes_every_operand_as_a_vault_path(vault, host):
    """Review AJ: `mget a b` exported a to the host path b, as `export a b` does; sftp's mget
    fetches both into the current folder."""
    (host / "a.txt").write_text("a\n")
    (host / "b.txt").write_text("b\n")
    out = host / "out"
    out.mkdir()
    vault.ok(f"lcd {q(str(host))}; put a.txt b.txt; lcd out; mget a.txt b.txt")
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "b.txt"]


def test_rm_rmdir_mv_cp_say_that_one_bad_operand_left_every_operand_alone(vault, host):
    """Review CN-2: these do all their operands or none (as git rm and git mv), but said only
    "no such file or folder" of the bad one, which reads, as from coreutils, as if the others
    were done; a script's `rm -r` of the folder they had not left followed."""
    make_files(host, ["one.jpg", "two.jpg"])
    vault.ok(f"mkdir /old /new /empty /full; lcd {q(str(host))}; cd /old; import one.jpg two.jpg; cp /old/one.jpg /full/")
    for command, error in [("mv /old/one.jpg /old/two.jpg /old/three.jpg /new", "mv: /old/three.jpg: no such file or folder; nothing was moved"),
                           ("cp /old/one.jpg /typo /new", "cp: /typo: no such file or folder; nothing was copied"),
                           ("rm /old/one.jpg /old/tow.jpg", "rm: /old/tow.jpg: no such file or folder; nothing was removed"),
                           ("rmdir /empty /full", "rmdir: /full: folder is not empty; nothing was removed")]:
        r = vault.c(command)
        assert r.rc == 1 and r.err_lines[0] == f"narnia: error: {error}", r.describe()
    assert vault.ok("find /").out_lines == ["/empty", "/full", "/full/one.jpg", "/new", "/old", "/old/one.jpg", "/old/two.jpg"]
    # One operand: nothing to add.
    assert vault.c("rm /gone").err_lines[0] == "narnia: error: rm: /gone: no such file or folder"


@pytest.mark.parametrize("force", [False, True], ids=["cp", "cp-f"])
def test_ctrl_c_between_the_sources_of_cp_says_how_many_went_and_cp_n_does_the_rest(vault, host, force):
    """Review CN-3: Ctrl-C part way through a `cp` of several sources said "interrupted" alone,
    and the same command again met the first copy as "already exists". CY-1: after a `cp -f`
    over items all there, `cp -n` skipped every one left: the same command does the rest."""
    count = 60
    for i in range(count):
        (host / f"f{i:02}.bin").write_bytes(os.urandom(1 << 20))
    vault.ok(f"import {q(str(host))}; mkdir /dest")
    if force:
        vault.ok("cp /host/* /dest")

    def store_files() -> set[str]:
        return {p.name for p in vault.vault.rglob("*") if p.is_file()}

    before = store_files()
    command = "cp -f /host/* /dest" if force else "cp /host/* /dest"
    proc = vault.popen("-c", command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    # A second new object: the first copy is done (with -f, the objects it replaces go).
    while len(store_files() - before) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    if proc.returncode == 0:
        pytest.skip(f"all {count} copies were made before the signal arrived")
    assert proc.returncode == 130, (proc.returncode, err)
    again = "the same command" if force else "cp -n with the same operands"
    said = re.search(rf"narnia: note: cp: copied (\d+) of {count} before the interrupt; the rest were not: "
                     rf"{again} does the rest", err.decode())
    assert said, err.decode()
    if force:
        vault.ok(command)
    else:
        assert len(vault.ok("ls /dest").out_lines) == int(said.group(1)) > 0
        vault.ok("cp -n /host/* /dest")
    assert vault.ok("ls /dest").out_lines == [f"f{i:02}.bin" for i in range(count)]
    vault.ok("verify")


def test_sigterm_during_a_host_command_is_no_error_of_the_command(vault):
    """Review CY-4: narnia killed the host command itself on SIGTERM, then called it a failure
    of the command: "!: exited with status 137"."""
    proc = vault.popen("-c", "!sleep 30", stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err.decode()
    assert "exited with status" not in err.decode(), err.decode()


def test_sigint_sent_to_narnia_stops_a_host_command_without_a_terminal(vault):
    """Review CZ-11: without a terminal the host command runs in a process group of its own,
    which no Ctrl-C reaches; a SIGINT sent to narnia (as a supervisor sends it) only raised the
    interrupt flag, and narnia waited the command out, then exited 130 without a word."""
    proc = vault.popen("-b", "-", stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    proc.stdin.write(b"!sleep 30\nmkdir /after\n")
    proc.stdin.flush()
    time.sleep(1)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "narnia: -:1: !: interrupted" in err.decode().splitlines(), err.decode()
    assert time.monotonic() - started < 20, "the host command was waited out"
    assert vault.ok("ls /").out == ""


def test_export_meets_a_host_file_whose_name_is_the_same_in_another_unicode_form(vault, host):
    """Review CN-5: a decomposed (NFD) host name is imported as the NFC name every vault name
    is; an export back into that folder wrote a second `café` beside the first."""
    nfd = "cafe\u0301"
    (host / "d").mkdir()
    (host / "d" / nfd).write_bytes(b"x")
    vault.ok(f"lcd {q(str(host))}; import d")
    r = vault.ok(f"lcd {q(str(host))}; export --skip-existing /d .")
    assert r.out_lines == ["skipped /d/caf\u00e9 -> d/caf\u00e9 (already there)"], r.describe()
    r = vault.c(f"lcd {q(str(host))}; export /d .")
    assert r.rc == 1 and r.err_lines[0] == f"narnia: error: export: d/caf\u00e9: d/{nfd} is there, the same name in another Unicode form (decomposed)", r.describe()
    assert os.listdir(host / "d") == [nfd]


def test_export_goes_into_a_host_folder_whose_name_is_the_same_in_another_unicode_form(vault, host):
    """Review CO-3: the NFD twin of a folder's name did not stand for it: an NFC look-alike
    folder was made beside it, and every file written again there."""
    nfd = "cafe\u0301"
    (host / nfd).mkdir()
    (host / nfd / "a.txt").write_bytes(b"a")
    vault.ok(f"lcd {q(str(host))}; import {q(nfd)}; cd /caf\u00e9; import - b.txt", input=b"b")
    r = vault.ok(f"lcd {q(str(host))}; export --skip-existing /caf\u00e9 .")
    assert r.out_lines == ["skipped /caf\u00e9/a.txt -> caf\u00e9/a.txt (already there)",
                           "exported /caf\u00e9/b.txt -> caf\u00e9/b.txt"], r.describe()
    assert os.listdir(host) == [nfd] and sorted(os.listdir(host / nfd)) == ["a.txt", "b.txt"]

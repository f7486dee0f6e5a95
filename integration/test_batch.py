"""Batch rules (as sftp): `#` comments and blank lines skipped, a `-` prefix lets a command
fail, the first other failure stops the run with exit 1 unless --keep-going, `;` separates
commands outside quotes, -c / -b FILE / -b - / piped stdin, no prompts or progress in batch
output, and the exit codes 0/1/2/3."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from harness import DEFAULT_PASSPHRASE, Narnia, q
from terminal import Terminal


def names(n: Narnia, path="/") -> list[str]:
    return n.ok(f"ls {path}").out_lines


def test_comments_and_blank_lines(vault, tmp_path):
    batch = tmp_path / "b"
    batch.write_text("# a comment\n\n   # an indented comment\nmkdir /a\n   \n\t\nmkdir /b\n# end\n")
    r = vault("-b", str(batch))
    assert r.rc == 0, "comments and blank lines are skipped" + r.describe()
    assert r.out == "" and not r.errors, "nothing printed for comments/blank lines" + r.describe()
    assert names(vault) == ["a", "b"]


def test_a_comment_beginning_with_a_digit_is_a_comment_even_under_hide_names(vault, tmp_path):
    """Review BG-7: `#` before a digit began no comment, so `rm -rf scratch  #2024 photos are
    kept` removed `photos` too, exit 0. Review BG-4: under hide-names a script's `'#2'` named
    the second item, though its listings show names: `cp -f a.txt '#2'` replaced `b.txt`."""
    vault.ok("mkdir /photos /scratch; mkdir /photos/2024")
    batch = tmp_path / "cleanup.nb"
    batch.write_text("# tidy up\nrm -rf scratch   #2024 photos are kept, only scratch goes\nmkdir e  #2nd batch\n")
    r = vault("-b", str(batch))
    assert r.rc == 0, r.describe()
    assert names(vault) == ["e", "photos"]
    (tmp_path / "a.txt").write_text("A")
    (tmp_path / "b.txt").write_text("B")
    vault.ok(f"import --keep {tmp_path / 'a.txt'} {tmp_path / 'b.txt'}; set hide-names on; cp -f a.txt '#2'; ls")
    assert vault.ok("cat b.txt").out == "B" and vault.ok("cat '#2'").out == "A"
    # Review BH-1: the same with the run's output on a terminal, where listings show numbers:
    # a batch file was written without them in view, and `-c` is no prompt either.
    vault.ok("rm '#2'; mkdir /photos/2025")
    batch.write_text("rm -rf scratch   #2025 photos are kept\ncp -f a.txt '#2'\n")
    for argv in (["-b", str(batch)], ["-c", "rm -rf scratch  #2025 photos are kept"]):
        t = Terminal(vault.argv(argv), vault.env, tmp_path)
        try:
            assert t.wait(timeout=60) == 0, t.output
        finally:
            t.close()
        assert names(vault) == ["#2", "a.txt", "b.txt", "e", "photos"] and vault.ok("cat b.txt").out == "B"


def test_dash_prefix_may_fail(vault, tmp_path):
    batch = tmp_path / "b"
    batch.write_text("-rmdir /nope\nmkdir /after\n")
    r = vault("-b", str(batch))
    assert r.rc == 0, "a `-` command may fail without stopping the run or failing it (sftp)" + r.describe()
    assert f"narnia: error: {batch}:1: rmdir: /nope: no such file or folder" in r.err_lines, \
        "the failure of a `-` command is still reported, with its line" + r.describe()
    assert names(vault) == ["after"], "the run went on after the `-` command"
    r = vault.c("-rmdir /nope; mkdir /after2")
    assert r.rc == 0 and names(vault) == ["after", "after2"], "`-` prefix in -c after `;`" + r.describe()


def test_a_failed_import_or_export_marked_dash_goes_on_and_still_fails_the_run(vault, tmp_path):
    """Review DC-4: `-export` that wrote half its files exited 0; BRIEF: never 0 after a
    partial import or export. The run goes on, as the mark says, and ends with status 1."""
    (tmp_path / "x.txt").write_text("x")
    r = vault.c(f"-import {q(str(tmp_path / 'x.txt'))} {q(str(tmp_path / 'nothere'))}; mkdir /after")
    assert r.rc == 1 and names(vault) == ["after", "x.txt"], r.describe()
    out = tmp_path / "out"
    r = vault.c(f"-export /nothere {q(str(out))}; mkdir /after2")
    assert r.rc == 1 and "after2" in names(vault), r.describe()
    batch = tmp_path / "b"
    batch.write_text(f"-get /nothere {q(str(out))}\nmkdir /after3\n")
    r = vault("-b", str(batch))
    assert r.rc == 1 and "after3" in names(vault), r.describe()


def test_dash_prefix_excuses_only_its_own_command(vault, tmp_path):
    r = vault.c("-rmdir /nope; rmdir /nope2; mkdir /not-reached")
    assert r.rc == 1, "the `-` of the first command does not excuse the next one" + r.describe()
    assert names(vault) == [], "the run stopped at the unexcused failure" + r.describe()
    r = vault.c("mkdir /a; -rmdir /nope; mkdir /b")
    assert r.rc == 0 and names(vault) == ["a", "b"], "a `-` after `;` marks that command" + r.describe()
    assert "unknown command" not in r.err, r.describe()
    batch = tmp_path / "b"
    batch.write_text("mkdir /c; -rmdir /nope\n-rmdir /nope; ls /nope\nmkdir /not-reached\n")
    r = vault("-b", str(batch))
    assert r.rc == 1 and names(vault) == ["a", "b", "c"], "in a file too, `-` is per command" + r.describe()
    assert any(l.startswith(f"narnia: error: {batch}:2: ls: /nope") for l in r.err_lines), r.describe()
    r = vault.c("mkdir /d; '-rmdir' /nope")
    assert r.rc == 1 and "unknown command" in r.err, "a quoted '-rmdir' is a command name, not a mark" + r.describe()


def test_dash_prefix_on_success_runs_the_command(vault):
    r = vault.c("-mkdir /made")
    assert r.rc == 0 and names(vault) == ["made"], "a `-` command that succeeds has its effect" + r.describe()


def test_stop_at_first_failure(vault, tmp_path):
    batch = tmp_path / "b"
    batch.write_text("mkdir /a\nrmdir /nope\nmkdir /b\n")
    r = vault("-b", str(batch))
    assert r.rc == 1, "a failing command stops the run with exit 1" + r.describe()
    assert names(vault) == ["a"], "nothing after the failing command may run"
    assert any(l.startswith(f"narnia: error: {batch}:2: rmdir: /nope") for l in r.err_lines), r.describe()


def test_keep_going(vault, tmp_path):
    batch = tmp_path / "b"
    batch.write_text("mkdir /a\nrmdir /nope\nmkdir /b\nls /nope2\nmkdir /c\n")
    r = vault("--keep-going", "-b", str(batch))
    assert r.rc == 1, "with --keep-going the run goes on but still exits 1 at the end" + r.describe()
    assert names(vault) == ["a", "b", "c"], "--keep-going runs every command"
    assert len(r.errors) == 2, "both failures are reported" + r.describe()
    r = vault("--keep-going", "-c", "mkdir /d; pwd")
    assert r.rc == 0 and r.out == "/\n", "--keep-going with no failure exits 0" + r.describe()


def test_keep_going_with_c(vault):
    r = vault("--keep-going", "-c", "mkdir /a; rmdir /nope; mkdir /b")
    assert r.rc == 1 and names(vault) == ["a", "b"], "--keep-going applies to -c too" + r.describe()


def test_c_with_semicolons(vault):
    r = vault.c("mkdir /a; mkdir /b;mkdir /c ;pwd")
    assert r.rc == 0 and r.out == "/\n", r.describe()
    assert names(vault) == ["a", "b", "c"], "`;` separates commands in -c"
    r = vault.c("mkdir '/x;y' \"/p;q\" /r\\;s")
    assert r.rc == 0, r.describe()
    assert names(vault) == ["a", "b", "c", "p;q", "r;s", "x;y"], "`;` inside quotes or escaped is literal"


def test_semicolon_on_a_batch_line(vault, tmp_path):
    batch = tmp_path / "b"
    batch.write_text("mkdir /a; mkdir /b\ncd /a; mkdir inner; pwd\n")
    r = vault("-b", str(batch))
    assert r.rc == 0 and r.out == "/a\n", "`;` separates commands on a batch line" + r.describe()
    assert names(vault, "/a") == ["inner"]


def test_b_stdin(vault):
    r = vault("-b", "-", input="mkdir /s\ncd /s\npwd\n")
    assert r.rc == 0 and r.out == "/s\n", "-b - reads commands from stdin" + r.describe()
    assert names(vault) == ["s"]
    # Review AS F4: its lines are named as a file's are, `-:LINE`.
    r = vault("-b", "-", input="pwd\nls /nope\n")
    assert r.rc == 1 and "narnia: error: -:2: ls: /nope: no such file or folder" in r.err_lines, r.describe()


def test_piped_stdin(vault):
    r = vault(input="# comment\nmkdir /p\n\ncd /p\npwd\nls /\n")
    assert r.rc == 0, "commands piped on stdin run as with -b -" + r.describe()
    assert r.out == "/p\np\n", "no prompt, banner or echo in piped output" + r.describe()
    r = vault(input="rmdir /nope\nmkdir /never\n")
    assert r.rc == 1 and names(vault) == ["p"], "piped stdin stops at the first failure" + r.describe()


def test_piped_stdin_without_trailing_newline(vault):
    r = vault(input="mkdir /a\nmkdir /b")
    assert r.rc == 0 and names(vault) == ["a", "b"], "the last line needs no newline" + r.describe()


def test_output_order_and_failed_command_prints_nothing(vault, tmp_path):
    batch = tmp_path / "b"
    batch.write_text("pwd\nls /nope\nmkdir /z\nls /\n")
    r = vault("--keep-going", "-b", str(batch))
    assert r.rc == 1
    assert r.out == "/\nz\n", "stdout holds only the successful commands' output, in order" + r.describe()


def test_no_progress_or_prompt_in_batch(vault, host):
    f = host / "f.bin"
    f.write_bytes(b"x" * 3_000_000)
    r = vault.c(f"import {f}; verify; export /f.bin {host / 'back.bin'}")
    assert r.rc == 0, r.describe()
    assert "\r" not in r.err and "\x1b" not in r.err and "%" not in r.err, \
        "no progress bar or escape sequences on stderr in batch mode" + r.describe()
    assert "\x1b" not in r.out, "no colour in batch output" + r.describe()
    assert r.err_lines == [], "nothing but the insecure-KDF warning on stderr" + r.describe()


@pytest.mark.parametrize("args", [
    ["--bogus-option"],
    ["-c"],
    ["-b"],
    ["-c", "pwd", "-b", "-"],
    ["--passphrase-file"],
    ["--vault", "", "-c", "pwd"],
    ["--vault=", "init"],
], ids=["unknown-option", "c-without-arg", "b-without-arg", "c-and-b", "passphrase-file-without-arg",
        "empty-vault", "empty-vault-inline-init"])
def test_usage_errors_exit_2(vault, args):
    before = vault.store().snapshot()
    r = vault(*args)
    assert r.rc == 2, f"`narnia {' '.join(args)}` is a usage error: exit 2" + r.describe()
    assert r.out == "", "nothing on stdout for a usage error" + r.describe()
    assert r.err.strip(), "a usage error says what is wrong on stderr" + r.describe()
    assert vault.store().snapshot() == before


def test_a_tilde_after_the_equals_sign_or_in_narnia_vault_is_home(narnia):
    """Review CA-2: no shell expands `~` after `--vault=`: `--vault=~/vault` made a vault in a
    folder named `~` under the current folder (whose obvious clean-up, `rm -rf ~`, takes the
    home folder), and `--passphrase-file=~/pw` was not found."""
    pw = narnia.passphrase_file(DEFAULT_PASSPHRASE)
    shutil.copy(pw, narnia.home / "pw")
    r = narnia("--vault=~/v1", "--passphrase-file=~/pw", "init", passphrase=None, with_vault=False)
    assert r.rc == 0 and (narnia.home / "v1").is_dir(), r.describe()
    r = narnia("-c", "mkdir /x", with_vault=False, env=dict(narnia.env, NARNIA_VAULT="~/v1"))
    assert r.rc == 0 and narnia("--vault", narnia.home / "v1", "-c", "ls /", with_vault=False).out_lines == ["x"]
    assert not (narnia.workdir / "~").exists()
    # Review CC-10: with HOME unset it still made a folder named `~`.
    env = {k: v for k, v in narnia.env.items() if k != "HOME"}
    r = narnia("--vault=~/v2", "init", with_vault=False, env=env)
    assert r.rc == 2 and "HOME is not set" in r.err and not (narnia.workdir / "~").exists(), r.describe()


def test_options_that_would_do_nothing_are_usage_errors(vault):
    """Review CA-8: `--keep-going` and `-v` with init, or a passphrase source with the Wardrobe
    on a terminal, were taken and ignored without a word."""
    for args, said in ((["--keep-going", "init"], "--keep-going goes with -c, -b or commands piped in"),
                       (["-v", "init"], "-v (--verbose) goes with -c, -b or commands piped in"),
                       (["-v", "drop", "x"], "narnia: hint: drop takes its own -v after the word drop")):   # CC-12
        r = vault(*args)
        assert r.rc == 2 and said in r.err, r.describe()
    t = Terminal(vault.argv([]), vault.env, vault.workdir)
    try:
        assert t.wait(timeout=30) == 2
        assert b"--passphrase-file goes with init, enter, -c, -b or commands piped in" in t.output
    finally:
        t.close()
    r = vault("--keep-going", "-v", input="pwd\n")
    assert r.rc == 0 and r.out_lines == ["narnia> pwd", "/"], r.describe()


def test_a_vault_command_given_to_narnia_itself_says_how_to_run_it(vault):
    """Review CA-10: `narnia ls` said only "see narnia --help"."""
    r = vault("ls", "/")
    assert r.rc == 2 and "narnia: hint: vault commands run inside the vault: narnia -c 'ls ...'" in r.err_lines, r.describe()
    r = vault("frobnicate")
    assert r.rc == 2 and "narnia: hint: see narnia --help" in r.err_lines, r.describe()


def test_a_mode_or_option_mistyped_gets_the_nearest(vault):
    """Review EU-7: `narnia entr` got no "did you mean", as a mistyped vault command does."""
    for typed, meant in [("entr", "enter"), ("inti", "init"), ("--vualt=v", "--vault"), ("--keep-goin", "--keep-going")]:
        r = vault(typed)
        assert r.rc == 2 and f"narnia: hint: did you mean '{meant}'?" in r.err_lines, r.describe()


def test_exit_codes_summary(vault):
    assert vault.c("pwd").rc == 0
    assert vault.c("ls /nope").rc == 1
    assert vault("--nope").rc == 2
    assert vault.c("pwd", passphrase="wrong").rc == 3


def test_exit_status_never_0_after_a_failed_import(vault, host):
    (host / "ok.txt").write_bytes(b"ok")
    r = vault.c(f"import {host / 'ok.txt'} {host / 'missing.txt'}")
    assert r.rc == 1, "an import with a missing source must not exit 0" + r.describe()
    assert any(l.startswith("narnia: error: import:") for l in r.err_lines), r.describe()


def test_an_unreadable_batch_file_is_a_usage_error_named_before_the_passphrase_is_used(vault, tmp_path):
    missing = tmp_path / "missing.narnia"
    r = vault("-b", str(missing))
    assert r.rc == 2, r.describe()
    assert r.err_lines == [f"narnia: error: cannot read the batch file: {missing}: no such file or folder"], r.describe()
    r = vault("--passphrase-file", str(tmp_path / "no-passphrase"), "-b", str(missing))
    assert r.rc == 2 and "batch file" in r.err, "the batch file is opened before the passphrase is read" + r.describe()
    r = vault("-b", str(tmp_path))
    assert r.rc == 2 and r.err_lines == [f"narnia: error: cannot read the batch file: {tmp_path}: is a folder"], r.describe()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT])
def test_a_signal_before_the_commands_run_ends_the_run_with_128_plus_n(vault, sig):
    """A signal while the passphrase is read (or the key derived) leaves every command unrun: the
    run must not exit 0 (a cron job or `timeout` would record success). SIGQUIT went to the
    Swift runtime's backtracer, which printed registers and memory and exited 0 (a review)."""
    read_end, write_end = os.pipe()
    argv = [str(vault.binary), "--vault", str(vault.vault), "--passphrase-fd", str(read_end), "-c", "mkdir /after"]
    p = subprocess.Popen(argv, pass_fds=(read_end,), env=vault.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(read_end)
    try:
        for _ in range(500):            # until it waits for the passphrase (its handlers are in place)
            state = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            waiting_in = Path(f"/proc/{p.pid}/wchan").read_text()
            if state == "S" and ("poll" in waiting_in or "pipe" in waiting_in):
                break
            time.sleep(0.01)
        p.send_signal(sig)
        os.write(write_end, (DEFAULT_PASSPHRASE + "\n").encode())
    finally:
        os.close(write_end)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, (p.returncode, err)
    assert b"Registers" not in err and b"Backtrace" not in err and b"Crash" not in err, err
    assert vault.c("ls /after").rc == 1, "no command ran"


def test_a_line_that_is_not_utf8_is_refused_not_repaired(vault, tmp_path):
    """Decoded lossily, `rm -r /keep\\xff` named the item `keep\\u{FFFD}` and removed it."""
    vault.ok("mkdir /keep\ufffd")
    batch = tmp_path / "b"
    batch.write_bytes(b"rm -r /keep\xff\nls /\n")
    r = vault("-b", str(batch))
    assert r.rc == 1 and r.err_lines[-1] == f"narnia: error: {batch}:1: line is not valid UTF-8; not run", r.describe()
    assert vault.ok("ls /").out_lines == ["keep\ufffd"], "nothing was removed"
    r = vault(input=b"rm -r /keep\xff\n")
    assert r.rc == 1 and r.err_lines[-1] == "narnia: error: -:1: line is not valid UTF-8; not run", r.describe()
    assert vault.ok("ls /").out_lines == ["keep\ufffd"]


def test_output_that_cannot_be_written_fails_the_run(narnia):
    """`> /dev/full`: the commands ran, but what they printed was lost, which is said, exit 1
    (a reader gone, `| head`, is not a failure)."""
    narnia.init()
    for args in (narnia.argv(["-c", "ls; pwd"]), narnia.argv(["drop", "--show-key"], passphrase=None)):
        with open("/dev/full", "wb") as full:
            p = subprocess.run(args, stdout=full, stderr=subprocess.PIPE, env=narnia.env, cwd=narnia.workdir, timeout=60)
        assert p.returncode == 1, (args, p.stderr)
        assert b"narnia: error: standard output: the disk is full" in p.stderr, p.stderr
    r = narnia.c("ls")
    assert r.rc == 0


def test_a_reader_that_goes_away_is_no_failure_of_cat(narnia, tmp_path):
    """`narnia -c 'cat big' | head -c 10`: the reader going away is not a failure (man, EXIT
    STATUS), for `cat` as for `ls`; the next command still runs (review AX3)."""
    narnia.init()
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(4 << 20))   # far more than a pipe holds
    narnia.ok(f"import {big}")
    p = subprocess.Popen(narnia.argv(["-c", "cat /big.bin; mkdir /after"]), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=narnia.env, cwd=narnia.workdir)
    assert len(p.stdout.read(10)) == 10
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=60) == 0, err
    assert b"error" not in err, err
    assert "after" in names(narnia), "the command after cat ran"
    with open("/dev/full", "wb") as full:
        p = subprocess.run(narnia.argv(["-c", "cat /big.bin"]), stdout=full, stderr=subprocess.PIPE,
                           env=narnia.env, cwd=narnia.workdir, timeout=60)
    assert p.returncode == 1 and b"the disk is full" in p.stderr, p.stderr


def test_panic_ends_a_run_with_the_status_exit_would_give(vault):
    """`panic` in a -c or -b run ends it at once; a failure before it still fails the run, as
    with `exit` (it gave 0: review AX8)."""
    for args in (["-c", "mkdir /a; panic; mkdir /b"], ["--keep-going", "-c", "ls /nonexist; panic"],
                 ["-c", "-ls /nonexist; panic"], ["--keep-going", "-c", "ls /nonexist; exit"]):
        r = vault(*args)
        failed_before = args[0] == "--keep-going"
        assert r.rc == (1 if failed_before else 0), args + [r.describe()]
    assert names(vault) == ["a"], "nothing after panic ran"

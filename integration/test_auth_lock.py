"""Auth and lock: a wrong passphrase exits 3 and leaves the store byte-identical; passphrase
sources (file, fd, first line, CRLF, empty); passwd re-wraps the key (the old passphrase stops
working, content objects are untouched); init on an existing store; a second process gets a
clear error while the first keeps working; the test key derivation is stored with the vault and
the default one is at least MODERATE; core dumps are off and secrets live in locked memory."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from harness import INSECURE_KDF_WARNING, Narnia, q, run_measuring_rss
from test_device_housekeeping import key_files

WRONG = "incorrect horse"


@pytest.fixture
def filled(vault, host) -> Narnia:
    data = os.urandom(300_000)
    (host / "payload.bin").write_bytes(data)
    vault.ok(f"mkdir /docs; cd /docs; import {q(str(host / 'payload.bin'))}")
    vault.payload = data
    return vault


def assert_auth_failure(r, what):
    assert r.rc == 3, f"{what}: a wrong passphrase must exit 3" + r.describe()
    assert r.out == "", f"{what}: nothing may be printed on stdout" + r.describe()
    assert any(l.startswith("narnia:") for l in r.err_lines), \
        f"{what}: expected a `narnia: …` message on stderr" + r.describe()


def test_wrong_passphrase_exits_3_and_changes_nothing(filled, tmp_path):
    before = filled.store().snapshot()
    batch = tmp_path / "cmds"
    batch.write_text("mkdir /new\nrm -r /docs\n")
    runs = {
        "-c": filled("-c", "mkdir /new; rm -r /docs", passphrase=WRONG),
        "-b FILE": filled("-b", str(batch), passphrase=WRONG),
        "-b -": filled("-b", "-", input="mkdir /new\n", passphrase=WRONG),
        "piped stdin": filled(input="mkdir /new\n", passphrase=WRONG),
        "enter": filled("enter", input="mkdir /new\n", passphrase=WRONG),
    }
    for what, r in runs.items():
        assert_auth_failure(r, what)
        assert filled.store().snapshot() == before, f"{what}: a wrong passphrase changed the store"
        # Read from a file, it says what was read and that passwd changes it (review EF-11).
        assert "narnia: hint: the passphrase is the first line of the passphrase file; after 'passwd' (here or on another device) it is the one chosen then, once that device's new key file is here (a sync engine may still be bringing it)" \
            in r.err_lines, r.describe()
    r = filled.ok("ls /")
    assert r.out_lines == ["docs"], "after wrong passphrases the vault must be as before" + r.describe()


def test_no_vault_exits_3(narnia):
    missing = narnia.workdir / "nothing-here"
    r = narnia.c("ls", vault=missing)
    assert r.rc == 3, "no vault at --vault must exit 3" + r.describe()
    assert not missing.exists(), "opening a missing vault must not create it"
    for args in (["-b", "-"], ["enter"], []):
        r = narnia(*args, input="pwd\n", vault=missing)
        assert r.rc == 3, f"no vault with {args or 'piped stdin'} must exit 3" + r.describe()
        assert not missing.exists(), "opening a missing vault must not create it"
    empty = narnia.workdir / "empty-dir"
    empty.mkdir()
    r = narnia.c("ls", vault=empty)
    assert r.rc == 3, "an empty directory is no vault: exit 3" + r.describe()
    assert list(empty.iterdir()) == [], "opening an empty directory must not write into it"


def test_no_vault_is_said_before_any_passphrase_with_a_hint_that_fits(narnia):
    missing = narnia.workdir / "nothing-here"
    # No passphrase source at all, and no terminal: still "no vault" (3), not "no passphrase" (2).
    r = narnia("enter", input="", vault=missing, passphrase=None)
    assert r.rc == 3 and r.err_lines == [f"narnia: error: no vault at {missing}",
                                         f"narnia: hint: create one with: narnia --vault {missing} init"], r.describe()
    other = narnia.workdir / "holds-other-files"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    r = narnia.c("ls", vault=other)
    assert r.rc == 3 and "holds other files" in r.err and "init" not in r.err.split("hint:")[1].split("give")[0], r.describe()
    r = narnia("init", vault=other)
    assert r.rc == 1 and f"{other} is not an empty folder" in r.err, r.describe()
    # Review DO-2: a folder Syncthing shares empty holds its marker, and is empty to `init`;
    # FM-3: it may also be a new device's, whose store is still arriving.
    shared = narnia.workdir / "shared"
    (shared / ".stfolder").mkdir(parents=True)
    r = narnia.c("ls", vault=shared)
    assert r.rc == 3 and "its store is still arriving" in r.err_lines[-1] \
        and r.err_lines[-1].endswith(f"create one once nothing is arriving: narnia --vault {shared} init"), r.describe()
    assert narnia("init", vault=shared).rc == 0 and narnia.ok("ls /", vault=shared).out == ""
    assert (shared / ".stfolder").is_dir()
    a_file = other / "notes.txt"
    r = narnia.c("ls", vault=a_file)
    assert r.rc == 3 and f"{a_file} is not a folder" in r.err, r.describe()
    r = narnia("init", vault=a_file)
    assert r.rc == 1 and r.errors == [f"narnia: error: {a_file} is not a folder"], r.describe()


def test_vault_from_environment(vault):
    env = dict(vault.env, NARNIA_VAULT=str(vault.vault))
    r = vault("-c", "mkdir /via-env", with_vault=False, env=env)
    assert r.rc == 0, "$NARNIA_VAULT should select the store when --vault is absent" + r.describe()
    assert vault.ok("ls /").out_lines == ["via-env"]


def test_default_vault_location(narnia):
    r = narnia("init", with_vault=False)
    assert r.rc == 0, "init without --vault should use the default location" + r.describe()
    default = narnia.home / ".local/share/lining"
    assert default.is_dir() and any(default.iterdir()), \
        f"the default store should be ${{XDG_DATA_HOME}}/lining ({default})"


def test_empty_passphrase_is_a_usage_error(vault):
    for raw in (b"", b"\n", b"\r\n"):
        f = vault.passphrase_file("", raw=raw)
        r = vault("--passphrase-file", str(f), "-c", "ls", passphrase=None)
        assert r.rc == 2, f"an empty passphrase ({raw!r}) must exit 2" + r.describe()


def test_no_passphrase_source_without_terminal_is_a_usage_error(vault):
    r = vault("-c", "ls", passphrase=None)
    assert r.rc == 2, "no passphrase source and no terminal must exit 2" + r.describe()


def test_passphrase_file_first_line_and_crlf(vault):
    for raw in (b"correct horse\r\n", b"correct horse", b"correct horse\nsecond line\n"):
        f = vault.passphrase_file("", raw=raw)
        r = vault("--passphrase-file", str(f), "-c", "pwd", passphrase=None)
        assert r.rc == 0, f"passphrase file {raw!r} should open the vault" + r.describe()
    f = vault.passphrase_file("", raw=b"correct horse \n")
    r = vault("--passphrase-file", str(f), "-c", "pwd", passphrase=None)
    assert r.rc == 3, "a trailing space is part of the passphrase" + r.describe()


def test_passphrase_fd(vault):
    rfd, wfd = os.pipe()
    os.write(wfd, b"correct horse\n")
    os.close(wfd)
    try:
        r = vault("--passphrase-fd", str(rfd), "-c", "pwd", passphrase=None, pass_fds=(rfd,))
    finally:
        os.close(rfd)
    assert r.rc == 0 and r.out == "/\n" and r.err_lines == [], "--passphrase-fd N should read the passphrase from fd N" + r.describe()


def test_a_passphrase_file_others_may_read_is_used_with_a_warning(vault, tmp_path):
    """Review EU-15: a passphrase file every user (or the group) may read was used without a
    word; ssh refuses such a key file. It is still used — a script relies on it — and the
    warning says how to close it, for --passphrase-file, a file at --passphrase-fd and passwd's
    --new-passphrase-file alike. A file only its owner reads, or a pipe, says nothing."""
    f = tmp_path / "pw.txt"
    f.write_text("correct horse\n")
    for mode, who in ((0o644, "every user"), (0o640, "its group")):
        f.chmod(mode)
        r = vault("--passphrase-file", str(f), "-c", "pwd", passphrase=None)
        assert r.rc == 0 and r.out == "/\n", "the file still opens the vault" + r.describe()
        assert r.err_lines == [f"narnia: warning: {f} holds a passphrase and {who} may read it (mode {mode:o}): chmod 600 it"], \
            "the warning names the file, who may read it and the cure" + r.describe()
    with open(f, "rb") as held:
        fd = held.fileno()
        r = vault("--passphrase-fd", str(fd), "-c", "pwd", passphrase=None, pass_fds=(fd,))
    assert r.rc == 0 and f"the file at descriptor {fd} holds a passphrase and its group may read it" in r.err, \
        "a readable file given as a descriptor is warned of too" + r.describe()
    new = tmp_path / "new.txt"
    new.write_text("a new passphrase\n")
    new.chmod(0o604)
    r = vault.c(f"passwd --new-passphrase-file {q(str(new))}")
    assert r.rc == 0 and f"narnia: warning: passwd: {new} holds a passphrase and every user may read it (mode 604)" in r.err, \
        "passwd warns of its file too" + r.describe()
    assert vault.c("pwd", passphrase="a new passphrase").rc == 0, "and the passphrase was changed" + r.describe()
    new.chmod(0o600)
    r = vault("--passphrase-file", str(new), "-c", "pwd", passphrase=None)
    assert r.rc == 0 and r.err_lines == [], "a file only its owner reads says nothing" + r.describe()


def test_passwd(filled):
    store = filled.store()
    big_before = {rel: h for rel, h in store.snapshot().items()
                  if (store.root / rel).stat().st_size > 100_000}
    assert big_before, "expected a content object over 100 kB"
    new = filled.passphrase_file("a new passphrase")
    r = filled.c(f"passwd --new-passphrase-file {q(str(new))}")
    assert r.rc == 0, "passwd --new-passphrase-file failed" + r.describe()
    assert r.out == "passphrase changed\n", "passwd says what it did" + r.describe()
    old = filled.c("ls /")
    assert old.rc == 3, "the old passphrase must stop working after passwd" + old.describe()
    ok = filled.c("cat /docs/payload.bin", passphrase="a new passphrase")
    assert ok.rc == 0 and ok.outb == filled.payload, "the new passphrase must open the same vault" + ok.describe()
    after = store.snapshot()
    changed = [rel for rel in big_before if after.get(rel) != big_before[rel]]
    assert not changed, f"passwd re-encrypted content objects (it should re-wrap the key only): {changed}"
    v = filled.c("verify", passphrase="a new passphrase")
    assert v.rc == 0, "verify after passwd" + v.describe()


def test_passwd_takes_the_file_after_equals(filled):
    """Both shells parse flags alike: a long flag's value may follow `=`."""
    new = filled.passphrase_file("another new passphrase")
    r = filled.c(f"passwd --new-passphrase-file={q(str(new))}")
    assert r.rc == 0 and r.out == "passphrase changed\n", "passwd --new-passphrase-file=FILE" + r.describe()
    ok = filled.c("cat /docs/payload.bin", passphrase="another new passphrase")
    assert ok.rc == 0 and ok.outb == filled.payload, "the new passphrase opens the vault" + ok.describe()


def test_passwd_rotate(filled, tmp_path):
    """passwd --rotate: the old key file and passphrase, kept in a backup, open nothing
    written afterwards (the vault refuses, naming the rotation, with exit 3); content objects
    keep their keys and bytes; the new passphrase reads everything."""
    store = filled.store()
    objects_before = {rel: h for rel, h in store.snapshot().items() if (store.root / rel).stat().st_size > 100_000}
    old_key_files = {p.name: p.read_bytes() for p in filled.vault.iterdir() if p.is_file() and p.stat().st_size != 72}
    new = filled.passphrase_file("rotated passphrase")
    r = filled.c(f"passwd --rotate --new-passphrase-file {q(str(new))}")
    assert r.rc == 0, "passwd --rotate failed" + r.describe()
    after = store.snapshot()
    assert all(after.get(rel) == h for rel, h in objects_before.items()), "content objects were rewritten"
    key_files = [p for p in filled.vault.iterdir() if p.is_file() and p.stat().st_size != 72]   # not the inbox key
    assert len(key_files) == 1 and key_files[0].name not in old_key_files, [p.name for p in key_files]
    assert filled.c("ls /").rc == 3, "the old passphrase must stop working"
    filled.ok("mkdir /written-after", passphrase="rotated passphrase")
    # The old key file comes back (a backup): its passphrase opens nothing, and says why.
    for name, data in old_key_files.items():
        (filled.vault / name).write_bytes(data)
    old = filled.c("ls /")
    assert old.rc == 3 and any("passwd --rotate" in line for line in old.errors), old.describe()
    ok = filled.c("cat /docs/payload.bin; ls /", passphrase="rotated passphrase")
    assert ok.rc == 0 and filled.payload in ok.outb and b"written-after" in ok.outb, ok.describe()
    assert filled.c("verify", passphrase="rotated passphrase").rc == 0


def test_passwd_refuses_empty_new_passphrase(filled):
    before = filled.store().snapshot()
    empty = filled.passphrase_file("", raw=b"\n")
    r = filled.fails(f"passwd --new-passphrase-file {q(str(empty))}", "passwd")
    assert filled.store().snapshot() == before, "a refused passwd changed the store"
    assert filled.c("pwd").rc == 0, "the old passphrase must still work after a refused passwd"


@pytest.mark.parametrize("raw,why", [
    ("\ufeffnew secret\r\n".encode(), "holds a byte order mark (U+FEFF)"),
    ("cafe\u0301 au lait\n".encode(), "is not in composed form"),
    ("\u304b\u3099\u304f\n".encode(), "is not in composed form"),   # が as macOS spells it (BH-3)
    ("\u0627\u0653\u0628\n".encode(), "is not in composed form"),   # آ decomposed (BI-3)
    (b"caf\xe9 au lait\n", "is not UTF-8 text"),
    (b"new\x1bsecret\n", "holds a control character"),
], ids=["bom", "nfd", "nfd-kana", "nfd-arabic", "latin-1", "escape"])
def test_a_new_passphrase_the_same_words_typed_would_not_give_is_refused(filled, narnia, raw, why):
    """Review BG-10: `passwd --new-passphrase-file` took a file saved "UTF-8 with BOM", or
    spelling `é` as `e` and a combining accent (NFD), as it was: the words typed later gave
    "wrong passphrase". Refused, changing nothing; `init` too (exit 2)."""
    before = filled.store().snapshot()
    new = filled.passphrase_file("", raw=raw)
    r = filled.fails(f"passwd --new-passphrase-file {q(str(new))}", "passwd")
    assert f"the new passphrase from {new} {why}" in r.err and "nothing was changed" in r.err, r.describe()
    assert filled.store().snapshot() == before and filled.c("pwd").rc == 0
    fresh = narnia.workdir / "fresh-vault"
    r = subprocess.run([str(narnia.binary), "--vault", str(fresh), "--passphrase-file", str(new), "init"],
                       capture_output=True, env=narnia.env)
    assert r.returncode == 2 and why.encode() in r.stderr and not fresh.exists(), r


@pytest.mark.parametrize("words", ["café au lait, 한국어", "Ẹ́ káàbọ̀ ọ̀rẹ́", "خانهٔ من", "замо́к", "नमस्ते", "ガラス"])
def test_a_new_passphrase_in_composed_unicode_is_taken(filled, words):
    """Text in NFC is taken, its marks without a composed form too (review BJ-1: Yoruba tones,
    the Persian ezafe and Russian stress marks were refused as decomposed)."""
    new = filled.passphrase_file(words)
    filled.ok(f"passwd --new-passphrase-file {q(str(new))}")
    assert filled.c("pwd", passphrase=words).rc == 0


def test_init_on_existing_store(vault):
    before = vault.store().snapshot()
    r = vault("init", passphrase="another one")
    assert r.rc == 1, "init on an existing store must exit 1" + r.describe()
    assert f"narnia: error: a store already exists at {vault.vault}" in r.err_lines, \
        "expected `narnia: error: a store already exists at DIR`" + r.describe()
    assert vault.store().snapshot() == before, "init on an existing store changed it"
    assert vault.c("pwd", passphrase="another one").rc == 3, "the second init must not change the passphrase"


# ---------------------------------------------------------------------------------------------
# The lock


def pids_holding_locks() -> set[int]:
    pids = set()
    with open("/proc/locks") as f:
        for line in f:
            parts = line.split()
            # "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" ("->" lines are waiters)
            if len(parts) >= 5 and parts[1] != "->" and parts[4].isdigit():
                pids.add(int(parts[4]))
    return pids


def wait_for_lock(proc, what: str):
    """Waits until `proc` holds the store's lock (/proc/locks), 15 s at most; fails when it
    exits first."""
    deadline = time.monotonic() + 15
    while proc.pid not in pids_holding_locks():
        assert proc.poll() is None, f"{what} exited early: {proc.stderr.read()!r}"
        assert time.monotonic() < deadline, f"{what} never took a lock (/proc/locks)"
        time.sleep(0.02)


def reader(stream, q_: queue.Queue):
    for line in iter(stream.readline, b""):
        q_.put(line.decode("utf-8", "surrogateescape"))
    q_.put(None)


def test_second_process_gets_a_clear_error(filled):
    first = filled.popen("-b", "-", stdin=subprocess.PIPE)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=reader, args=(first.stdout, lines), daemon=True).start()
    try:
        first.stdin.write(b"pwd\n")
        first.stdin.flush()
        wait_for_lock(first, "the first process")
        before = filled.store().snapshot()
        t0 = time.monotonic()
        second = filled.c("mkdir /second", timeout=30)
        took = time.monotonic() - t0
        assert second.rc == 1, "a second process on a locked store must exit 1" + second.describe()
        assert second.out == ""
        assert any(re.search(r"lock|in use|busy|another", l, re.I) and l.startswith("narnia: error:")
                   for l in second.err_lines), \
            "the second process should say the store is locked / in use" + second.describe()
        assert took < 10, f"the second process waited {took:.1f} s instead of failing at once"
        assert second.err_lines[-1].startswith("narnia: hint: a session or a script has it open"), second.describe()
        assert filled.store().snapshot() == before, "the refused second process changed the store"

        first.stdin.write(b"mkdir x\nls\n")
        first.stdin.close()
        rc = first.wait(timeout=30)
        out = []
        while (item := lines.get(timeout=10)) is not None:
            out.append(item.rstrip("\n"))
        err = first.stderr.read().decode()
        assert rc == 0, f"the first process should keep working and exit 0 (rc={rc}, stderr={err!r})"
        assert out == ["/", "docs", "x"], f"the first process's output: {out!r} (stderr {err!r})"
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert filled.ok("ls /").out_lines == ["docs", "x"], "the lock must be released on exit"


def test_lock_during_import(filled):
    """A reader gets a clear error while another process is in the middle of an import (here
    `import -`, held open by keeping its stdin open), and the import then completes."""
    data = os.urandom(3_000_000)
    first = filled.popen("-c", "import - streamed.bin", stdin=subprocess.PIPE)
    try:
        first.stdin.write(data[:1_000_000])
        first.stdin.flush()
        wait_for_lock(first, "the import")
        second = filled.c("ls /")
        assert second.rc == 1, "a reader during an import must get a clear error, exit 1" + second.describe()
        assert any(re.search(r"lock|in use|busy|another", l, re.I) for l in second.errors), second.describe()
        out, err = first.communicate(input=data[1_000_000:], timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, f"the import should finish normally: {err!r}"
    assert filled.ok("cat /streamed.bin").outb == data, "the import held open during the refusal is intact"


# ---------------------------------------------------------------------------------------------
# Key derivation settings and process hardening


def test_test_kdf_is_stored_with_the_vault(vault):
    env = {k: v for k, v in vault.env.items() if k != "NARNIA_INSECURE_TEST_KDF"}
    r = vault("-c", "pwd", env=env)
    assert r.rc == 0, "a test-KDF vault opens without the variable (the limits are stored)" + r.describe()
    assert INSECURE_KDF_WARNING in r.err, "a test-KDF vault warns on every open" + r.describe()


def test_default_kdf_is_at_least_moderate(narnia):
    """Without NARNIA_INSECURE_TEST_KDF, init and open use Argon2id with at least libsodium's
    MODERATE limits (256 MiB of memory): the process's peak RSS shows it."""
    env = {k: v for k, v in narnia.env.items() if k != "NARNIA_INSECURE_TEST_KDF"}
    rc, rss, err = run_measuring_rss(narnia.argv(["init"]), env, narnia.workdir)
    assert rc == 0, f"init with the default key derivation failed: {err!r}"
    assert INSECURE_KDF_WARNING.encode() not in err, "a default vault must not warn about the test KDF"
    assert rss >= 200 * 1024, f"init peaked at {rss // 1024} MiB: Argon2id below MODERATE (256 MiB)?"
    rc, rss, err = run_measuring_rss(narnia.argv(["-c", "pwd"]), dict(narnia.env), narnia.workdir)
    assert rc == 0, f"opening a default vault failed: {err!r}"
    assert INSECURE_KDF_WARNING.encode() not in err, \
        "the variable at open time must not turn a default vault into a test-KDF one"
    assert rss >= 200 * 1024, f"opening peaked at {rss // 1024} MiB: the stored limits were not used?"


def test_process_hardening(filled):
    """Brief §3.8: core dumps disabled; secrets in locked (mlock'ed) memory."""
    first = filled.popen("-b", "-", stdin=subprocess.PIPE)
    try:
        first.stdin.write(b"pwd\n")
        first.stdin.flush()
        wait_for_lock(first, "the process opening the vault")
        limits = Path(f"/proc/{first.pid}/limits").read_text()
        core = next(l for l in limits.splitlines() if l.startswith("Max core file size"))
        assert core.split()[4] == "0", f"core dumps are not disabled: {core!r}"
        status = Path(f"/proc/{first.pid}/status").read_text()
        vmlck = int(re.search(r"VmLck:\s+(\d+) kB", status).group(1))
        assert vmlck > 0, "no locked memory: keys are not in sodium_malloc (mlock'ed) memory"
    finally:
        first.stdin.close()
        first.wait(timeout=30)


@pytest.mark.serial
def test_an_init_that_finds_a_vault_made_while_it_waited_for_the_lock_makes_nothing(narnia):
    """The second of two `init`s checks the folder, then (its lock slowed by strace) takes the
    lock only after the first has made the whole vault and exited: it found the folder empty
    before, and went on to write a second key file under another master key, both runs exiting
    0 (seen once in a loaded run of `test_two_inits_at_once`). It checks again under the lock."""
    late = subprocess.Popen(["strace", "-f", "-o", "/dev/null", "-e", "trace=flock", "-e", "inject=flock:delay_enter=3000000"]
                            + narnia.argv(["init"], passphrase="second one"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=narnia.env, cwd=narnia.workdir)
    time.sleep(1.5)  # the late one has checked the folder and waits in flock
    assert narnia("init", passphrase="first one").rc == 0
    assert late.wait(timeout=60) == 1, late.stderr.read().decode()
    late.stdout.close()
    assert "already" in late.stderr.read().decode()
    late.stderr.close()
    assert narnia.c("pwd", passphrase="first one").rc == 0
    assert narnia.c("pwd", passphrase="second one").rc == 3
    assert len(key_files(narnia.vault)) == 1


def test_init_refuses_a_non_empty_directory(narnia):
    target = narnia.workdir / "not-a-store"
    target.mkdir()
    (target / "mine.txt").write_bytes(b"someone's file")
    r = narnia("init", vault=target)
    assert r.rc == 1, "init into a non-empty directory that holds no store must be refused" + r.describe()
    assert sorted(p.name for p in target.iterdir()) == ["mine.txt"], "init wrote into a foreign directory"


def test_two_inits_at_once(narnia):
    """Two `init`s racing for one path: exactly one wins, and the vault opens with its passphrase."""
    procs = [subprocess.Popen(narnia.argv(["init"], passphrase=p), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=narnia.env, cwd=narnia.workdir)
             for p in ("first one", "second one")]
    rcs = [p.wait(timeout=60) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert sorted(rcs) == [0, 1], f"exactly one init must succeed, the other exit 1: {rcs}"
    winner = ("first one", "second one")[rcs.index(0)]
    loser = ("first one", "second one")[rcs.index(1)]
    assert narnia.c("pwd", passphrase=winner).rc == 0, "the winning passphrase must open the vault"
    assert narnia.c("pwd", passphrase=loser).rc == 3, "the losing passphrase must not"
    assert not narnia.store().layout_problems(), narnia.store().layout_problems()


def test_passwd_rotate_gives_the_inbox_a_new_key_too(filled, host, tmp_path):
    """Review AH: the inbox key pair outlived the rotation, its secret half in records the old
    key file reads, so an old key file and its passphrase (a backup) read every file dropped
    afterwards. The rotation makes a new pair; drops made before it are still adopted."""
    fingerprint = filled.ok("inbox-key").out
    (host / "before.txt").write_bytes(b"dropped before")
    assert filled("drop", str(host / "before.txt")).rc == 0
    backup = tmp_path / "backup"
    shutil.copytree(filled.vault, backup, symlinks=True)
    new = filled.passphrase_file("rotated passphrase")
    filled.ok(f"passwd --rotate --new-passphrase-file {q(str(new))}")
    assert filled.ok("inbox-key", passphrase="rotated passphrase").out != fingerprint
    (host / "after.txt").write_bytes(b"dropped after the rotation")
    assert filled("drop", str(host / "after.txt")).rc == 0
    r = filled.ok("cat /Inbox/before.txt /Inbox/after.txt", passphrase="rotated passphrase")
    assert r.outb == b"dropped beforedropped after the rotation", r.describe()
    # Whoever holds the backup and the old passphrase, given every store file written since
    # but the journals, reads nothing dropped after the rotation.
    for f in filled.vault.glob("??/*"):
        if not (backup / f.parent.name / f.name).exists() and f.stat().st_size > 4096:
            (backup / f.parent.name).mkdir(exist_ok=True)
            shutil.copy(f, backup / f.parent.name / f.name)
    old = filled.c("ls /Inbox", vault=backup)
    assert old.rc == 0 and old.out_lines == ["before.txt"], old.describe()

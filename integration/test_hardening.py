"""Hardening: findings of a security review, each pinned by a test that failed before its fix.

Store files through links and special files; cost parameters as a weapon; damage that must
never be quiet; passphrases and command lines beyond their limits; crashes that must not print
memory; trees deeper than any stack."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from harness import Narnia, overwrite, q


def store_journal(n: Narnia) -> Path:
    """The device's journal: the store file that grows with every change."""
    before = n.store().sizes()
    n.ok("mkdir /.probe")
    after = n.store().sizes()
    grown = [p for p in after if p in before and after[p] > before[p] and "/" in p]
    new = [p for p in after if p not in before and "/" in p]
    return n.vault / (grown or new)[0]


# -- 1. Store files through links and special files --------------------------------------


def test_a_journal_replaced_by_a_link_to_a_users_file_truncates_nothing(narnia, host):
    narnia.init()
    journal = store_journal(narnia)
    victim = host / "precious.txt"
    victim.write_text("my thesis\n" * 100)
    journal.unlink()
    journal.symlink_to(victim)
    r = narnia.c("ls /")
    assert r.rc == 1 and r.errors, "a linked journal must be refused" + r.describe()
    assert victim.read_text() == "my thesis\n" * 100, "the link's target was changed"


def test_an_object_replaced_by_a_fifo_does_not_hang_verify(narnia, host):
    narnia.init()
    (host / "f.bin").write_bytes(os.urandom(3000))
    before = set(narnia.store().sizes())
    narnia.ok(f"import {q(str(host / 'f.bin'))}")
    journal = store_journal(narnia)
    obj = [narnia.vault / p for p in narnia.store().sizes() if p not in before and narnia.vault / p != journal][0]
    obj.unlink()
    os.mkfifo(obj, 0o600)
    r = narnia.c("verify", timeout=20)
    assert r.rc == 1 and any("/f.bin" in l and "not a regular file" in l for l in r.errors), r.describe()
    r = narnia.c("cat /f.bin", timeout=20)
    assert r.rc == 1, r.describe()


def test_a_link_planted_among_the_key_files_is_never_written_through(narnia, host):
    """1b: passwd wrote `<keyid>.new` without O_EXCL|O_NOFOLLOW. Key files are now written
    unnamed and linked in under a fresh random name; a link planted where a key file would be
    is never read nor written through (it is named at open: refusing it made a sync engine's
    link lock the vault, review AH) and its target never touched."""
    narnia.init()
    victim = host / "precious.txt"
    victim.write_text("my thesis\n")
    new = narnia.passphrase_file("another passphrase")
    narnia.ok(f"passwd --new-passphrase-file {q(str(new))}")
    planted = narnia.vault / ("ab" * 16)
    planted.symlink_to(victim)
    r = narnia.c(f"passwd --new-passphrase-file {q(str(new))}", passphrase="another passphrase")
    assert r.rc == 0 and any("named as a key file, is not a regular file" in l for l in r.err_lines), r.describe()
    assert victim.read_text() == "my thesis\n", "the link's target was changed"
    assert planted.is_symlink(), "the planted link was replaced by a key file"


def test_init_makes_an_existing_empty_folder_private(narnia):
    narnia.vault.mkdir(mode=0o777)
    os.chmod(narnia.vault, 0o777)
    narnia.init()
    assert stat.S_IMODE(narnia.vault.stat().st_mode) == 0o700


def test_a_store_others_may_write_to_is_refused(narnia):
    narnia.init()
    os.chmod(narnia.vault, 0o777)
    r = narnia.c("ls /")
    assert r.rc == 1 and any("other users may write to the folder" in l for l in r.errors), r.describe()
    assert any(l.startswith("narnia: hint:") or "chmod 700" in l for l in r.err_lines), r.describe()
    os.chmod(narnia.vault, 0o700)
    narnia.ok("ls /")


def test_hints_and_messages_about_the_store_path_are_safe_to_paste_and_to_show(narnia, tmp_path):
    """A store path with a quote and shell text in it: the chmod hint, pasted into sh, makes that
    folder private and runs nothing else; a path with ESC is shown escaped, never raw."""
    narnia.vault = tmp_path / "q'; touch INJECTED; '"
    narnia.init()
    os.chmod(narnia.vault, 0o777)
    r = narnia.c("ls /")
    hint = next(l for l in r.errors if "chmod 700" in l).split("make it private with: ", 1)[1]
    subprocess.run(["sh", "-c", hint], cwd=tmp_path, check=True)
    assert not (tmp_path / "INJECTED").exists(), hint
    assert stat.S_IMODE(narnia.vault.stat().st_mode) == 0o700
    narnia.vault = tmp_path / "esc\x1b[31mRED"
    r = narnia.init()
    assert r.out == f"created a vault at {tmp_path}/esc\\x1b[31mRED\n", r.describe()
    r = narnia("init")
    assert "\x1b" not in r.err and f"{tmp_path}/esc\\x1b[31mRED" in r.err, r.describe()
    r = narnia.c("ls", vault=tmp_path / "none\x1b[2J")
    assert r.rc == 3 and "\x1b" not in r.err, r.describe()


# -- 2. Cost parameters as a weapon -------------------------------------------------------


def set_limits(key: Path, ops: int, mem_kib: int):
    data = bytearray(key.read_bytes())
    salt = bytes(data[:16])
    mask = hashlib.blake2b(salt, digest_size=8).digest()
    raw = ops.to_bytes(4, "little") + mem_kib.to_bytes(4, "little")
    data[16:24] = bytes(a ^ b for a, b in zip(raw, mask))
    overwrite(key, bytes(data))


def test_limits_beyond_sensitive_are_refused_before_deriving(narnia):
    narnia.init()
    set_limits(narnia.store().key_file(), 64, 8 * 1024 * 1024)
    start = time.monotonic()
    r = narnia.c("ls /", timeout=30)
    assert r.rc == 3, r.describe()
    assert any("more than narnia accepts" in l for l in r.errors), r.describe()
    assert time.monotonic() - start < 10, "the refused derivation must not run"


def test_limits_beyond_moderate_are_announced_before_deriving(narnia):
    narnia.init()
    set_limits(narnia.store().key_file(), 4, 8192)   # 4 passes: more than MODERATE's 3
    r = narnia.c("ls /", timeout=60)
    assert r.rc == 3, "the passphrase no longer derives the key" + r.describe()
    assert any(l.startswith("narnia: note:") and "slower than usual" in l for l in r.err_lines), r.describe()


def forge_key_files(key: Path, count: int, newer: bool) -> None:
    """Puts `count` key files beside `key`, with salts of their own and its limits, as anyone
    who can write to the store may: each would cost a key derivation."""
    data = key.read_bytes()
    mask = hashlib.blake2b(data[:16], digest_size=8).digest()
    limits = bytes(a ^ b for a, b in zip(data[16:24], mask))
    when = key.stat().st_mtime + (3600 if newer else -3600)
    for _ in range(count):
        salt = os.urandom(16)
        masked = bytes(a ^ b for a, b in zip(limits, hashlib.blake2b(salt, digest_size=8).digest()))
        forged = key.parent / os.urandom(16).hex()
        forged.write_bytes(salt + masked + os.urandom(len(data) - 24))
        os.utime(forged, (when, when))


def test_forged_key_files_are_said_and_never_lock_the_vault(narnia):
    """Key files put at the store's top each cost a key derivation at every unlock, silently;
    capping the derivations instead let eight newer forged files lock every device out
    (review AL). All are still tried, but past the eight newest the user is told, an open
    warns of more key files than passwd leaves, and a passwd retires them."""
    narnia.init()
    key = narnia.store().key_file()
    forge_key_files(key, 6, newer=True)
    forge_key_files(key, 30, newer=False)
    r = narnia.ok("ls /")   # the real key file is among the eight newest
    assert not any("trying those of" in l for l in r.err_lines), r.describe()
    assert any(l.startswith("narnia: warning: the store holds 37 key files that no passwd retired") for l in r.err_lines), r.describe()
    r = narnia.c("ls /", passphrase="not the passphrase")
    assert r.rc == 3 and r.errors == ["narnia: error: wrong passphrase"], r.describe()
    assert any(l.startswith("narnia: note: the passphrase opens none of the key files of the 8 newest salts; trying those of the 29 others")
               for l in r.err_lines), r.describe()
    forge_key_files(key, 3, newer=True)   # the real one is the ninth newest now
    r = narnia.ok("ls /")
    assert any("trying those of the 32 others" in l for l in r.err_lines), r.describe()
    new = narnia.passphrase_file("a new passphrase")
    narnia.ok(f"passwd --new-passphrase-file {q(str(new))}")
    r = narnia.ok("ls /", passphrase="a new passphrase")
    assert not any("key files" in l for l in r.err_lines), r.describe()
    assert len([p for p in narnia.vault.iterdir() if p.is_file()]) == 2, "the forged key files were retired and deleted"


def test_a_file_named_as_a_key_file_that_cannot_be_one_locks_nobody_out(narnia):
    """Review AN: a file at the top named as a key file but too long to be one (or unreadable)
    made every unlock fail, whatever the passphrase."""
    narnia.init()
    (narnia.vault / os.urandom(16).hex()).write_bytes(os.urandom(5000))
    if os.geteuid() != 0:
        unreadable = narnia.vault / os.urandom(16).hex()
        unreadable.write_bytes(os.urandom(98))
        unreadable.chmod(0)
    narnia.ok("ls /")


# -- 7. Damage is never quiet ------------------------------------------------------------


@pytest.mark.parametrize("command", ["-cat /f.bin", "-verify", "-export /f.bin OUT"])
def test_a_dash_line_may_go_on_but_damage_fails_the_run(narnia, host, command):
    narnia.init()
    (host / "f.bin").write_bytes(os.urandom(5000))
    before = set(narnia.store().sizes())
    narnia.ok(f"import {q(str(host / 'f.bin'))}")
    journal = store_journal(narnia)
    obj = [narnia.vault / p for p in narnia.store().sizes() if p not in before and narnia.vault / p != journal][0]
    data = bytearray(obj.read_bytes())
    data[100] ^= 1
    overwrite(obj, bytes(data))
    batch = host / "batch"
    batch.write_text(command.replace("OUT", q(str(host / "out.bin"))) + "\npwd\n")
    r = narnia("-b", str(batch))
    assert r.rc == 1, f"a batch that met damage must exit 1, even with a '-' line" + r.describe()
    assert r.out_lines[-1:] == ["/"], "the '-' line let the batch go on" + r.describe()
    assert any("/f.bin" in l for l in r.errors), "the error names the item" + r.describe()


# -- 9. Passphrases and command lines beyond their limits --------------------------------


def test_a_passphrase_over_4096_bytes_is_refused_not_cut(narnia):
    long = "x" * 5000
    r = narnia("init", passphrase=long)
    assert r.rc == 2 and any("longer than 4096 bytes" in l for l in r.errors), r.describe()
    narnia.init(passphrase="x" * 4096)
    r = narnia.c("pwd", passphrase="x" * 4096 + "tail")
    assert r.rc == 2, "a prefix must never open the vault" + r.describe()
    # Review EY-3: a source with no line end (/dev/zero) was read for good.
    r = narnia("--passphrase-file", "/dev/zero", "-c", "pwd", passphrase=None, timeout=20)
    assert r.rc == 2 and any("/dev/zero is longer than 4096 bytes" in l for l in r.errors), r.describe()


def test_the_passphrase_and_the_commands_never_share_a_stream(narnia):
    narnia.init()
    r = narnia("--passphrase-fd", "0", passphrase=None, input=f"correct horse\npwd\n")
    assert r.rc == 2 and any("both come from standard input" in l for l in r.errors), r.describe()
    assert "SECRET" not in r.err


@pytest.mark.parametrize("length", [3 << 20, (1 << 20) - 2])
def test_a_command_line_over_1_mib_is_refused(narnia, length):
    """Also a line only just over (1 MiB + 1 byte), whose newline comes in the read that
    passes the limit: it ran."""
    narnia.init()
    r = narnia("-b", "-", input="ls " + "a" * length + "\npwd\n")
    assert r.rc == 1 and any(re.match(rf"narnia: error: -:1: line has {length + 3} bytes, more than a command line may", l)
                             for l in r.err_lines), r.describe()


# -- 10. Crashes print no memory; trees deeper than any stack ----------------------------


def test_a_fatal_signal_prints_no_memory(narnia):
    narnia.init()
    p = narnia.popen("-b", "-", stdin=subprocess.PIPE)
    time.sleep(0.5)
    p.send_signal(signal.SIGSEGV)
    out, err = p.communicate(timeout=20)
    p.stdin.close() if p.stdin else None
    assert p.returncode == 70, (p.returncode, err)
    text = err.decode(errors="replace")
    assert "nothing of its memory is printed" in text
    for leak in ("Backtrace", "rax", "rip", "Thread 0", "0x0000"):
        assert leak not in text, f"the crash printed {leak!r}: {text}"


def test_deep_trees_do_not_overflow_the_stack(narnia):
    narnia.init()
    depth = 20_000
    path = "/" + "/".join(["d"] * depth)
    narnia.ok(f"mkdir -p {path}; mkdir {path}/leaf")
    r = narnia.ok("find / -name leaf")
    assert r.out_lines == [path + "/leaf"]
    assert narnia.ok("du /").out.startswith("0")
    assert narnia.ok("verify").rc == 0
    narnia.ok("cp -r /d /copy")
    assert narnia.ok("find /copy -name leaf").out_lines == ["/copy" + path[2:] + "/leaf"]


# -- 4, 8. Export never writes through a link, and leaves nothing when killed -------------


def test_export_refuses_a_symlinked_folder_inside_the_destination(narnia, host):
    narnia.init()
    src = host / "src"
    src.mkdir()
    for i in range(3):
        (src / f"f{i}.txt").write_text(f"file {i}\n")
    narnia.ok(f"mkdir /src; cd /src; import {q(str(src / 'f0.txt'))}; mkdir sub; cd sub; "
              f"import {q(str(src / 'f1.txt'))}; import {q(str(src / 'f2.txt'))}")
    victim = host / "victimdir"
    victim.mkdir()
    dest = host / "ex2"
    (dest / "src").mkdir(parents=True)
    (dest / "src" / "sub").symlink_to("../../victimdir")
    r = narnia.c(f"export /src {q(str(dest))}")
    assert r.rc == 1 and any("is a symbolic link" in l for l in r.errors), r.describe()
    assert list(victim.iterdir()) == [], "export wrote through the link"


def test_a_killed_export_leaves_no_plaintext(narnia, host):
    narnia.init()
    (host / "big.bin").write_bytes(os.urandom(64 << 20))
    narnia.ok(f"import {q(str(host / 'big.bin'))}")
    out = host / "out"
    out.mkdir()
    p = narnia.popen("-c", f"export /big.bin {q(str(out))}")
    time.sleep(0.15)
    p.kill()
    p.wait()
    left = [x.name for x in out.iterdir()]
    assert left in ([], ["big.bin"]), f"a killed export left {left}"
    if left:
        assert (out / "big.bin").read_bytes() == (host / "big.bin").read_bytes(), "a partial file under the final name"


# -- 5. Import takes only regular files, and follows no link inside a folder --------------


def test_import_skips_links_and_special_files_inside_a_folder(narnia, host):
    narnia.init()
    src = host / "src"
    src.mkdir()
    (src / "real.txt").write_text("real\n")
    (src / "link.txt").symlink_to("/etc/hostname")
    (src / "linked-dir").symlink_to("/etc")
    os.mkfifo(src / "fifo")
    r = narnia.c(f"import {q(str(src))}", timeout=20)
    assert r.rc == 0, r.describe()
    assert sorted(narnia.ok("ls /src").out_lines) == ["real.txt"]
    warnings = [l for l in r.err_lines if l.startswith("narnia: warning: import:")]
    assert len(warnings) == 3, r.describe()


def test_import_of_a_device_is_refused(narnia):
    narnia.init()
    r = narnia.c("import /dev/zero", timeout=20)
    assert r.rc == 1 and any("/dev/zero" in l and "not a regular file" in l for l in r.errors), r.describe()
    assert narnia.ok("ls /").out == ""


def test_a_link_or_fifo_named_as_a_key_file_is_said_and_the_vault_still_opens(narnia, host):
    """A symbolic link or FIFO at the store's top named as a key file (a sync engine carries
    links; review AH) made every unlock fail: "is a symbolic link", "the store was altered",
    with nothing to say what to do. It is not read, and it is named at open and by verify."""
    narnia.init()
    narnia.ok("mkdir /kept")
    link, fifo = narnia.vault / ("ab" * 16), narnia.vault / ("cd" * 16)
    link.symlink_to("/dev/zero")
    os.mkfifo(fifo)
    r = narnia.c("ls /; verify", timeout=30)
    said = (f"{link.name}, {fifo.name} at the store's top, named as key files, are not regular files (symbolic "
            "links?): they are not read; remove them, or put the files themselves there")
    assert r.rc == 1 and r.out_lines[0] == "kept", r.describe()
    assert f"narnia: warning: {said}" in r.err_lines and f"narnia: error: verify: {said}" in r.err_lines, r.describe()
    link.unlink()
    fifo.unlink()
    narnia.ok("verify")


def test_the_command_line_is_wiped_from_what_other_users_see(vault):
    """Review AQ F5: a `-c` script and the names in it sat in /proc/PID/cmdline, which every
    user of the machine reads (`ps`). They are wiped once read; the program's name stays."""
    p = vault.popen("-c", "mkdir /letters-to-aslan; !sleep 3")
    try:
        deadline = time.monotonic() + 30
        while not any(comm in ("sh", "sleep") for comm in child_names(p.pid)) and time.monotonic() < deadline:
            time.sleep(0.05)
        cmdline = Path(f"/proc/{p.pid}/cmdline").read_bytes()
    finally:
        p.communicate(timeout=30)
    assert p.returncode == 0
    assert cmdline.split(b"\0")[0] == os.fsencode(str(vault.binary)), cmdline
    assert b"letters" not in cmdline and os.fsencode(str(vault.vault)) not in cmdline, cmdline
    assert vault.ok("ls /").out_lines == ["letters-to-aslan"]


def child_names(pid: int) -> list[str]:
    """The command names of the children of `pid`."""
    names = []
    for entry in os.listdir("/proc"):
        try:
            stat_line = Path(f"/proc/{entry}/stat").read_text()
            if entry.isdigit() and int(stat_line[stat_line.rindex(")") + 2:].split()[1]) == pid:
                names.append(stat_line[stat_line.index("(") + 1:stat_line.rindex(")")])
        except (OSError, ValueError):
            pass
    return names

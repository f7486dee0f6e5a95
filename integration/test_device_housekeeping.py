"""Housekeeping never costs a device its change, and a vault always keeps a way in.

Three losses an independent review found (2026-12-02), as regression tests:

1. A `passwd` cut short after its retirement record (or a retirement that arrived before the key
   file replacing it) left the retired key file as the only way in, and the next `sync` deleted
   it here and on the remote: nothing could open the vault again, exit 0.
2. Two devices adopted one drop; one replaced it at once (`cp -f`). The other's later adoption
   won the merge, the drop object was deleted anyway (it was retired) and the replacement too
   (it had lost): neither version survived.
3. A repack (housekeeping after an `rm` of other files in a pack) stamped the content it
   re-encrypted anew, so it beat another device's earlier `cp -f` of a file in that pack, whose
   new content was then deleted everywhere, `verify` "all intact".
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

from harness import DEFAULT_PASSPHRASE, Narnia, q
from test_devices import device, device_not_yet_written


INBOX_PUBLIC_FILE_SIZE = 72


def carry(src: Path, dst: Path, only=lambda rel: True):
    """A grow-only sync engine: copies every file `dst` lacks, or holds shorter, from `src`."""
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src)
        if p.is_file() and only(rel):
            target = dst / rel
            if not target.exists() or target.stat().st_size < p.stat().st_size:
                target.parent.mkdir(exist_ok=True)
                shutil.copy2(p, target)


def exchange(a: Narnia, b: Narnia, **kw):
    """Two rounds of carrying each device's files to the other, each device opening after."""
    for _ in range(2):
        carry(a.vault, b.vault)
        carry(b.vault, a.vault)
        a.ok("ls", **kw)
        b.ok("ls", **kw)


def know_each_other(a: Narnia, b: Narnia):
    """`b`'s first record reaches `a`, and `a`'s acknowledgement reaches `b`."""
    carry(b.vault, a.vault)
    a.ok("ls")
    carry(a.vault, b.vault)


def drop_to_both(a: Narnia, b: Narnia, path: Path):
    """`narnia drop` into `a`'s copy, carried to `b`'s."""
    r = a("drop", path, passphrase=None)
    assert r.rc == 0, r.describe()
    carry(a.vault, b.vault)


def rotate(n: Narnia, new: str, **kw):
    """`passwd --rotate` to the passphrase `new`, which compacts `n`'s journals: the session
    that wrote the snapshot must go on showing what a fresh open shows, and verify (review
    EZ-1: it removed again a file a move elsewhere had shown again, and deleted its object)."""
    r = n.ok(f"passwd --rotate --new-passphrase-file {q(str(n.passphrase_file(new)))}; ls -alR --json /; verify", **kw)
    assert r.out_lines[0] == "passphrase changed; new master key" and "all intact" in r.out_lines[-1], r.describe()
    assert r.out_lines[1:-1] == n.ok("ls -alR --json /", passphrase=new).out_lines, r.describe()


def compact_and_exchange(a: Narnia, b: Narnia):
    """`a` compacts its journals (`passwd --rotate`), `b` takes the passphrase 'rotated' too,
    then two rounds of carrying files both ways."""
    rotate(a, "rotated")
    b.ok(f"passwd --new-passphrase-file {q(str(b.passphrase_file('rotated')))}")
    for _ in range(2):
        carry(a.vault, b.vault)
        carry(b.vault, a.vault)


def key_files(store: Path) -> set[str]:
    """The store's top-level key-file names that are not the inbox key (72 bytes)."""
    return {p.name for p in store.iterdir() if p.is_file() and len(p.name) == 32 and p.stat().st_size != 72}


def test_sync_never_deletes_the_last_key_file_of_a_passphrase_change_not_here_yet(narnia, host, tmp_path):
    narnia.init()
    (host / "a.txt").write_text("kept\n")
    narnia.ok(f"import {q(str(host / 'a.txt'))}")
    other = device(narnia, tmp_path / "laptop")
    carry(other.vault, narnia.vault)
    narnia.ok("ls")
    remote = tmp_path / "remote"
    remote.mkdir()
    old_keys = key_files(other.vault)
    narnia.ok(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('a new passphrase')))}")
    # The laptop gets the retirement (the journals), not yet the new key file.
    carry(narnia.vault, other.vault, only=lambda rel: len(rel.parts) == 2)
    r = other.ok(f"sync {q(str(remote))}")
    assert "the new key file is not here" in r.err, r.describe()
    assert key_files(other.vault) == old_keys, "the only key file here was deleted" + r.describe()
    assert key_files(remote) == old_keys, "the remote's only key file was deleted" + r.describe()
    assert other.ok("cat /a.txt").out == "kept\n"
    assert other.ok("cat /a.txt", vault=remote).out == "kept\n"
    # Once the new key file is here, the old one goes on both sides, after the new one is sent.
    carry(narnia.vault, other.vault)
    other.ok(f"sync {q(str(remote))}", passphrase="a new passphrase")
    assert other.ok("cat /a.txt", vault=remote, passphrase="a new passphrase").out == "kept\n"
    assert not key_files(remote) & old_keys
    assert other.c("ls", vault=remote).rc == 3


def test_a_passwd_retires_again_the_key_files_it_deleted_for_a_device_it_did_not_know(narnia, host, tmp_path):
    """test_model seed 621: the phone changed the passphrase ("three"); the desk, which knew only
    the phone, deleted the key file the phone replaced once the phone had read its own
    retirement, then changed the passphrase again ("four"), retiring only the key file it still
    held. A laptop the desk did not know yet, holding the desk's records but not the phone's,
    took the deleted key file for live: the first passphrase opened it, and "three" was refused,
    blaming the first key file."""
    narnia.init()
    (host / "a.txt").write_text("kept\n")
    narnia.ok(f"import {q(str(host / 'a.txt'))}")
    first = key_files(narnia.vault)
    laptop = device_not_yet_written(narnia, tmp_path / "laptop")
    phone = device(narnia, tmp_path / "phone")
    phone.ok(f"passwd --new-passphrase-file {q(str(phone.passphrase_file('three')))}")
    three = key_files(phone.vault) - first
    phones_journal = {p.relative_to(phone.vault) for p in phone.vault.glob("*/*")} - {
        p.relative_to(narnia.vault) for p in narnia.vault.glob("*/*")}
    carry(phone.vault, narnia.vault)
    narnia.ok("ls", passphrase="three")
    assert key_files(narnia.vault) == three, "the desk kept the key file the phone replaced"
    narnia.ok(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('four')))}", passphrase="three")
    # The laptop gets the desk's journal and the phone's key file, not the phone's journal.
    carry(narnia.vault, laptop.vault, only=lambda rel: len(rel.parts) == 2 and rel not in phones_journal)
    shutil.copy2(phone.vault / next(iter(three)), laptop.vault / next(iter(three)))
    assert key_files(laptop.vault) == first | three
    r = laptop.ok("cat /a.txt", passphrase="three")
    assert r.out == "kept\n"
    assert "the new key file is not here" in r.err, r.describe()
    assert "the new key file is not here" in laptop.ok("ls").err
    # Once the desk's key file arrives, only its passphrase opens the laptop's copy.
    carry(narnia.vault, laptop.vault)
    assert laptop.ok("cat /a.txt", passphrase="four").out == "kept\n"
    for old in (DEFAULT_PASSPHRASE, "three"):
        assert laptop.c("ls", passphrase=old).rc == 3


def test_a_passwd_cut_short_keeps_the_old_passphrase_and_says_to_run_it_again(narnia, host, tmp_path):
    """The state a kill between passwd's two steps leaves, made by hand: the retirement of the
    old key file recorded, the new key file never written."""
    narnia.init()
    (host / "a.txt").write_text("kept\n")
    narnia.ok(f"import {q(str(host / 'a.txt'))}")
    saved = tmp_path / "saved-keys"
    saved.mkdir()
    for name in key_files(narnia.vault):
        shutil.copy2(narnia.vault / name, saved / name)
    narnia.ok(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('never written')))}")
    for name in key_files(narnia.vault):
        os.unlink(narnia.vault / name)
    for p in saved.iterdir():
        shutil.copy2(p, narnia.vault / p.name)
    remote = tmp_path / "remote"
    remote.mkdir()
    r = narnia.ok(f"sync {q(str(remote))}")
    # Review AG2: the hint named plain passwd even after a rotation cut short, which left the
    # master key an old key file opens.
    assert "did not finish" in r.err and "run it again ('passwd --rotate' if it was a rotation" in r.err, r.describe()
    assert key_files(narnia.vault) == {p.name for p in saved.iterdir()}, "the only key file was deleted" + r.describe()
    assert narnia.ok("cat /a.txt", vault=remote).out == "kept\n"
    narnia.ok(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('second try')))}")
    assert narnia.ok("cat /a.txt", passphrase="second try").out == "kept\n"
    assert narnia.c("ls").rc == 3


def test_a_rotation_killed_after_its_key_file_says_the_master_key_was_rotated(narnia, tmp_path):
    """Review FD-1: `passwd --rotate` killed once its new key file was written: the old
    passphrase was refused as replaced "by 'passwd' on another device or here … if the
    passphrase was changed", and the new one warned of an inbox key "a device made before it
    heard" of the rotation. Both now name the rotation, cut short here."""
    said = 0
    for when in range(1, 10):
        store = tmp_path / f"killed-at-fsync-{when}"
        assert narnia("init", vault=store).rc == 0
        narnia.ok("mkdir /x", vault=store)
        narnia("-c", f"passwd --rotate --new-passphrase-file {q(str(narnia.passphrase_file('rotated')))}", vault=store,
               wrapper=["strace", "-f", "-o", "/dev/null", "-e", "trace=fsync", "-e", f"inject=fsync:signal=SIGKILL:when={when}"])
        old, new = narnia.c("pwd", vault=store), narnia.c("pwd", vault=store, passphrase="rotated")
        assert (old.rc, new.rc) in ((0, 3), (3, 0)), f"killed at fsync {when}" + old.describe() + new.describe()
        assert "was replaced (by 'passwd' on another device or here" not in old.err, f"killed at fsync {when}" + old.describe()
        if "replaced by one holding a newer master key ('passwd --rotate' here or on another device" in old.err:
            said += 1
        if "the inbox key in force was recorded under the master key 'passwd --rotate' replaced" in new.err:
            assert "or it was cut short before it made a new one" in new.err, new.describe()
            assert "before it heard of the rotation" not in new.err, new.describe()
    assert said > 0, "no kill point left the new key file written and the old one there"


def a_rotation_whose_key_files_came_alone(narnia: Narnia, tmp_path: Path) -> Narnia:
    """A laptop (holding /l) that the desk knows ran `passwd --rotate` to 'rotated'; only the
    files at the store's top — its new key file and inbox public key file — reached the desk."""
    narnia.init()
    laptop = device(narnia, tmp_path / "laptop")
    laptop.ok("mkdir /l")
    know_each_other(narnia, laptop)
    rotate(laptop, "rotated")
    carry(laptop.vault, narnia.vault, only=lambda rel: len(rel.parts) == 1)
    return laptop


def test_passwd_is_refused_while_another_devices_rotation_key_file_is_here_without_its_records(narnia, host, tmp_path):
    """Review FH-1: the laptop's `passwd --rotate` sent its new key file ahead of its journals;
    a plain `passwd` on the desk retired it with every key file present, and the rotation's
    passphrase then opened the vault only as during a sync under way, every open warning of a
    key file "still arriving". Now the desk's `passwd` changes nothing, and says why."""
    laptop = a_rotation_whose_key_files_came_alone(narnia, tmp_path)
    before = narnia.store().sizes()
    r = narnia.c(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('desk')))}")
    assert r.rc == 1 and "holds a newer master key than this session knows: another device's 'passwd --rotate', whose " \
        "records have not arrived yet; nothing was changed" in r.err, r.describe()
    assert narnia.store().sizes() == before, "nothing was written"
    carry(laptop.vault, narnia.vault)
    r = narnia.ok("ls /; verify", passphrase="rotated")
    assert "narnia: warning" not in r.err.replace("narnia: warning: this vault uses the insecure test key derivation", ""), r.describe()
    narnia.ok(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('desk')))}", passphrase="rotated")
    exchange(narnia, laptop, passphrase="desk")
    for n in (narnia, laptop):
        assert n.ok("ls /", passphrase="desk").out_lines == ["l"]
        assert n.c("ls /", passphrase="rotated").rc == 3


def test_a_rotations_key_file_ahead_of_its_records_says_so_when_the_inbox_key_is_replaced(narnia, host, tmp_path):
    """Review FI-4: the laptop's rotation sent its key file and its new inbox public file ahead
    of its journals; the desk, opened with the rotation's passphrase, replaced the inbox key —
    rightly, the only pair it knew being one an old key file reads — but gave as causes a
    device that had not heard of the rotation, or a rotation cut short: neither was so. Once
    everything has arrived, both devices hand droppers one key, and nothing is left to say."""
    laptop = a_rotation_whose_key_files_came_alone(narnia, tmp_path)
    r = narnia.ok("ls /", passphrase="rotated")
    assert "the inbox key in force was recorded under the master key 'passwd --rotate' replaced (the rotation's " \
        "records, with the new one it made, have not arrived here yet" in r.err, r.describe()
    assert "before it heard of the rotation" not in r.err, r.describe()
    exchange(narnia, laptop, passphrase="rotated")
    keys = [n.ok("inbox-key", passphrase="rotated").out for n in (narnia, laptop)]
    assert keys[0] == keys[1], keys
    for n in (narnia, laptop):
        r = n.ok("ls /; verify", passphrase="rotated")
        assert r.out_lines[0] == "l" and "narnia: warning" not in \
            r.err.replace("narnia: warning: this vault uses the insecure test key derivation", ""), r.describe()


def test_a_device_behind_a_rotation_leaves_its_new_inbox_public_file_and_says_why(narnia, host, tmp_path):
    """Review FM-1: a device still on the passphrase before another device's second rotation
    got that rotation's key file and inbox public file ahead of its journals, and deleted the
    inbox file as one an old key file's holder planted; a sync engine carried the deletion to
    every device, and droppers sealed to the inbox key the rotation replaced, which the old key
    file reads. Now the file is left while a key file holds a newer master key than the
    session knows, and the warning says what to do should no device have rotated."""
    narnia.init()
    laptop = device(narnia, tmp_path / "laptop")
    laptop.ok("mkdir /l")
    know_each_other(narnia, laptop)
    rotate(narnia, "second")
    exchange(narnia, laptop, passphrase="second")
    rotate(laptop, "third", passphrase="second")
    inbox_files = {p.name for p in laptop.vault.iterdir() if p.is_file() and p.stat().st_size == INBOX_PUBLIC_FILE_SIZE}
    carry(laptop.vault, narnia.vault, only=lambda rel: len(rel.parts) == 1)
    r = narnia.ok("ls /", passphrase="second")
    assert "has the length of one holding a newer master key than this passphrase opens: most likely another device's 'passwd --rotate', whose " \
        "records have not arrived yet; both are left for it" in r.err and "it was deleted" not in r.err, r.describe()
    assert inbox_files <= {p.name for p in narnia.vault.iterdir()}, "the rotation's inbox public file is left"
    exchange(narnia, laptop, passphrase="third")
    key = laptop.ok("inbox-key", passphrase="third").out
    assert narnia.ok("inbox-key", passphrase="third").out == key
    shown = narnia("drop", "--show-key", passphrase=None)
    assert shown.rc == 0 and key.splitlines()[0] in shown.out, shown.describe() + key


def test_a_file_of_a_rotation_key_files_length_that_no_device_wrote_is_retired_by_passwd_rotate(narnia):
    """Review FI-2: FH-1's refusal takes a file at the store's top of a two-key key file's
    length for a rotation's key file ahead of its records; one that no device wrote (put there,
    or cut short for good) refused `passwd` with no way out. The refusal says one: `passwd
    --rotate`, which retires it."""
    narnia.init()
    stray = narnia.vault / ("ab" * 16)
    stray.write_bytes(os.urandom(131))
    r = narnia.c(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('new')))}")
    assert r.rc == 1 and f"the key file {stray.name} holds a newer master key" in r.err \
        and "should no device have run it, that file is not the vault's: 'passwd --rotate' retires it" in r.err, r.describe()
    rotate(narnia, "rotated")
    assert not stray.exists(), "retired, and deleted: this device is the only one"
    narnia.ok(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('new')))}", passphrase="rotated")


def test_a_drop_two_devices_adopt_keeps_the_replacement_made_on_one(narnia, host, tmp_path):
    narnia.init()
    other = device(narnia, tmp_path / "laptop")
    know_each_other(narnia, other)
    (host / "d.txt").write_text("dropped content\n")
    (host / "new.txt").write_text("the replacement\n")
    drop_to_both(narnia, other, host / "d.txt")
    narnia.ok(f"import {q(str(host / 'new.txt'))}; cp -f /new.txt /Inbox/d.txt")
    time.sleep(0.05)
    assert other.ok("cat /Inbox/d.txt").out == "dropped content\n"   # adopted later, on the laptop
    exchange(narnia, other)
    for d in (narnia, other):
        assert d.ok("cat /Inbox/d.txt").out == "the replacement\n"
        d.ok("verify")


def test_a_repack_never_wins_over_a_change_made_elsewhere(narnia, host, tmp_path):
    narnia.init()
    folder = host / "s"
    folder.mkdir()
    for i in range(1, 5):
        (folder / f"x{i}").write_bytes(os.urandom(600_000))
    narnia.ok(f"import {q(str(folder))}")       # one pack of 2.4 MB
    other = device(narnia, tmp_path / "laptop")
    (host / "new.txt").write_text("the laptop's version of x1\n")
    other.ok(f"import {q(str(host / 'new.txt'))}; cp -f /new.txt /s/x1; rm /new.txt")
    time.sleep(0.05)
    narnia.ok("rm /s/x2 /s/x3 /s/x4")           # the pack is mostly dead now: x1 is repacked
    exchange(narnia, other)
    for d in (narnia, other):
        assert d.ok("cat /s/x1").out == "the laptop's version of x1\n"
        assert d.ok("ls /s").out == "x1\n"
        d.ok("verify")


def test_a_compaction_keeps_a_double_adoption_a_creation(narnia, host, tmp_path):
    """Compaction rewrote this device's adoption of a drop another device adopted first as a
    `set content`, which then beat the other device's `cp -f` of it everywhere."""
    narnia.init()
    other = device(narnia, tmp_path / "laptop")
    (host / "edit.txt").write_text("the laptop's edit\n")
    other.ok(f"import {q(str(host / 'edit.txt'))}")
    know_each_other(narnia, other)
    (host / "drop.txt").write_text("dropped\n")
    drop_to_both(narnia, other, host / "drop.txt")
    other.ok("ls /Inbox")                                   # the laptop adopts it first
    before_edit = tmp_path / "laptop-before-edit"
    shutil.copytree(other.vault, before_edit)
    time.sleep(0.05)
    other.ok("cp -f /edit.txt /Inbox/drop.txt; rm /edit.txt")
    time.sleep(0.05)
    narnia.ok("ls /Inbox")                                  # this device adopts it too, later
    carry(before_edit, narnia.vault)                        # the laptop's records before its edit
    compact_and_exchange(narnia, other)
    for d in (narnia, other):
        assert d.ok("cat /Inbox/drop.txt", passphrase="rotated").out == "the laptop's edit\n"
        d.ok("verify", passphrase="rotated")


def test_a_cut_key_file_of_another_key_files_length_is_not_taken_for_a_whole_one(narnia, host, tmp_path):
    """After a rotation key files are 131 bytes; a copy of one cut at 98 bytes (a one-key
    file's length) was taken for a live key file: the old passphrase's key file, the only
    whole one, was deleted, and neither passphrase opened the copy."""
    narnia.init()
    (host / "a.txt").write_text("kept\n")
    narnia.ok(f"import {q(str(host / 'a.txt'))}")
    narnia.ok(f"passwd --rotate --new-passphrase-file {q(str(narnia.passphrase_file(DEFAULT_PASSPHRASE)))}")
    other = device(narnia, tmp_path / "laptop")
    carry(other.vault, narnia.vault)
    narnia.ok("ls")
    old = key_files(narnia.vault)
    narnia.ok(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('new one')))}")
    (new,) = key_files(narnia.vault) - old
    carry(narnia.vault, other.vault, only=lambda rel: rel.name != new)
    other.ok("mkdir /fromLaptop")                            # the old passphrase, with a warning
    carry(other.vault, narnia.vault)
    narnia.ok("ls", passphrase="new one")
    (other.vault / new).write_bytes((narnia.vault / new).read_bytes()[:98])   # arriving in place
    r = other.ok("cat /a.txt")
    assert r.out == "kept\n" and "the new key file is not here" in r.err, r.describe()
    assert old <= key_files(other.vault)
    shutil.copy2(narnia.vault / new, other.vault / new)      # the rest arrives
    assert other.ok("cat /a.txt", passphrase="new one").out == "kept\n"
    assert other.c("ls").rc == 3


def test_a_second_adoption_of_a_drop_never_undoes_a_move_made_after_the_first(narnia, host, tmp_path):
    """The later of two adoptions of one drop won the item's place: a file the first device
    had filed away (`mv`, a new name) came back to the inbox on every device, in silence."""
    narnia.init()
    narnia.ok("mkdir /Docs")
    other = device(narnia, tmp_path / "laptop")
    know_each_other(narnia, other)
    (host / "rep.txt").write_text("report\n")
    drop_to_both(narnia, other, host / "rep.txt")
    narnia.ok("mv /Inbox/rep.txt /Docs/rep-2026.txt")       # adopted here, and filed away
    time.sleep(0.05)
    other.ok("ls /Inbox")                                   # adopted there too, later
    for _ in range(2):
        carry(narnia.vault, other.vault)
        carry(other.vault, narnia.vault)
    compact_and_exchange(narnia, other)
    for d in (narnia, other):
        assert d.ok("cat /Docs/rep-2026.txt", passphrase="rotated").out == "report\n"
        assert d.ok("ls /Inbox", passphrase="rotated").out == ""


def test_sync_carries_a_rotated_inbox_key_so_drops_go_on(narnia, host, tmp_path):
    """`sync` threw away every inbox public key file it received (not a key file's length) and
    deleted the retired one: after `inbox-key --rotate` elsewhere, drops failed on this copy."""
    narnia.init()
    other = device(narnia, tmp_path / "laptop")
    know_each_other(narnia, other)
    remote = tmp_path / "remote"
    remote.mkdir()
    narnia.ok(f"sync {q(str(remote))}")
    narnia.ok(f"inbox-key --rotate; sync {q(str(remote))}")
    other.ok(f"sync {q(str(remote))}")
    (host / "a.txt").write_text("dropped after the rotation\n")
    r = other("drop", host / "a.txt", passphrase=None)
    assert r.rc == 0, r.describe()
    assert other.ok("cat /Inbox/a.txt").out == "dropped after the rotation\n"


def a_laptop_synced_through_a_remote(narnia: Narnia, tmp_path: Path) -> tuple[Narnia, Path]:
    """Another device of narnia's vault, and a folder remote both have synced with."""
    laptop = device(narnia, tmp_path / "laptop")
    remote = tmp_path / "remote"
    remote.mkdir()
    laptop.ok(f"sync {q(str(remote))}")
    narnia.ok(f"sync {q(str(remote))}")
    return laptop, remote


def test_a_sync_that_brings_another_devices_new_master_key_leaves_the_session_whole(narnia, host, tmp_path):
    """Another device ran `passwd --rotate`: its journals are sealed under a master key this
    session does not hold. The sync used to fail with the merge half done (the session's item
    keys wiped, some journals read, some not) and the session went on with that. Now it says what
    happened and the session goes on with the vault as it was: listing, reading and writing work,
    and the next unlock with the new passphrase reads everything."""
    narnia.init()
    (host / "a.txt").write_text("kept\n")
    narnia.ok(f"import {q(str(host / 'a.txt'))}")
    laptop, remote = a_laptop_synced_through_a_remote(narnia, tmp_path)
    narnia.ok(f"passwd --rotate --new-passphrase-file {q(str(narnia.passphrase_file('rotated')))}")
    narnia.ok(f"sync {q(str(remote))}", passphrase="rotated")
    laptop.ok(f"passwd --new-passphrase-file {q(str(laptop.passphrase_file('rotated')))}")
    (host / "b.txt").write_text("written after the failed sync\n")
    chosen = q(str(laptop.passphrase_file("chosen in that session")))
    r = laptop.c(f"-sync {q(str(remote))}; -passwd --new-passphrase-file {chosen}; -passwd --rotate --new-passphrase-file {chosen}; "
                 f"ls; cat /a.txt; import {q(str(host / 'b.txt'))}; cat /b.txt", passphrase="rotated")
    assert r.rc == 0, r.describe()
    assert "new master key arrived" in r.err and "goes on with the vault as it was" in r.err, r.describe()
    # Review DH-2: nor does it change keys: the new passphrase opened only the replaced master
    # key, and --rotate began a second rotation at once.
    refused = "narnia: error: passwd: another device changed the vault's master key ('passwd --rotate'), which this session cannot read; nothing was changed: open the vault again, with the passphrase chosen then, and change it there"
    assert r.err_lines.count(refused) == 2 and "passphrase changed" not in r.out, r.describe()
    assert r.out.splitlines()[:2] == ["a.txt", "kept"], r.describe()
    assert r.out.endswith("written after the failed sync\n"), r.describe()
    laptop.ok(f"sync {q(str(remote))}", passphrase="rotated")
    narnia.ok(f"sync {q(str(remote))}", passphrase="rotated")
    for n in (narnia, laptop):
        assert n.ok("ls -1 /", passphrase="rotated").out == "a.txt\nb.txt\n"
        assert "all intact" in n.ok("verify", passphrase="rotated").out


def test_a_sync_that_brings_another_devices_passwd_says_so(narnia, tmp_path):
    """Review DH-4: a `sync` that brought another device's `passwd` said nothing, and the next
    open with the passphrase the session was opened with was refused, "wrong passphrase"."""
    narnia.init()
    laptop, remote = a_laptop_synced_through_a_remote(narnia, tmp_path)
    narnia.ok(f"passwd --new-passphrase-file {q(str(narnia.passphrase_file('changed')))}; sync {q(str(remote))}")
    before = {p.name for p in laptop.vault.iterdir()}
    r = laptop.ok(f"sync {q(str(remote))}; pwd")
    assert "narnia: warning: sync: the passphrase was changed on another device ('passwd', or 'passwd --rotate'): this session goes on, and from the next open only the new passphrase opens the vault" in r.err_lines, r.describe()
    assert r.out_lines[-1] == "/", r.describe()
    # Review DN-1: the old passphrase is refused, saying why and what to do should the new one
    # be refused too (a forged copy of the new key file locked the device out, without a word).
    [new_name] = [p.name for p in laptop.vault.iterdir() if p.name not in before and p.is_file() and p.stat().st_size == 98]
    real = (laptop.vault / new_name).read_bytes()
    (laptop.vault / new_name).unlink()
    (laptop.vault / new_name).write_bytes(os.urandom(98))      # altered on the way
    assert laptop.c("pwd", passphrase="changed").rc == 3
    r = laptop.c("pwd")
    assert r.rc == 3 and r.err_lines[-1] == (
        "narnia: error: the key file this passphrase opens was replaced (by 'passwd' on another device or here, or by a merge "
        "of key files after two rotations at once): if the passphrase was changed, open the vault with the new one; should that "
        f"be refused too, or if it was not changed, the key file that replaced it ({new_name}) may be damaged or altered: put a "
        "copy of it from another device in its place"), r.describe()
    (laptop.vault / new_name).unlink()
    (laptop.vault / new_name).write_bytes(real)
    assert laptop.c("pwd").rc == 3 and laptop.ok("pwd", passphrase="changed").out == "/\n"
    r = laptop.ok(f"sync {q(str(remote))}", passphrase="changed")
    assert "passphrase was changed" not in r.err, "said once" + r.describe()


def journal_files(store: Path) -> set[str]:
    """Files in the shard folders still writable by their owner: journals (objects are 0400
    once named)."""
    return {str(p.relative_to(store)) for p in store.glob("??/*") if p.stat().st_mode & 0o200}


def test_after_a_rotation_elsewhere_a_device_reseals_its_records_once(narnia, host, tmp_path):
    """After another device's `passwd --rotate` a device writes its records anew under the new
    master key, once: it compacted again at every open (a new snapshot of the whole vault's
    metadata each time) until every device had read the first, since its retired journals were
    still under the old key."""
    narnia.init()
    laptop = device(narnia, tmp_path / "laptop")
    exchange(narnia, laptop)
    narnia.ok(f"passwd --rotate --new-passphrase-file {q(str(narnia.passphrase_file('rotated')))}")
    laptop.ok(f"passwd --new-passphrase-file {q(str(laptop.passphrase_file('rotated')))}")
    carry(narnia.vault, laptop.vault)
    laptop.ok("ls", passphrase="rotated")
    resealed = journal_files(laptop.vault)
    for _ in range(3):
        laptop.ok("ls", passphrase="rotated")
        laptop.ok("mkdir /more", passphrase="rotated")
        laptop.ok("rmdir /more", passphrase="rotated")
    assert journal_files(laptop.vault) == resealed, "a new journal for each session"
    carry(laptop.vault, narnia.vault)
    assert narnia.ok("ls -1 /", passphrase="rotated").out == laptop.ok("ls -1 /", passphrase="rotated").out


def a_thousand_small_files(narnia: Narnia, host: Path):
    """A new vault holding /src, a folder of 1,000 small files."""
    narnia.init()
    src = host / "src"
    src.mkdir()
    for i in range(1000):
        (src / f"f{i:04}-with-a-longer-name-to-weigh-more.txt").write_text("x")
    narnia.ok(f"import {q(str(src))}")


def churn(narnia: Narnia, host: Path, pairs: int, wrapper=()):
    """Runs `pairs` times `cp -r /src /c; rm -r /c` in one batch: about 200 KB of records each."""
    batch = host / "batch"
    batch.write_text("cp -r /src /c\nrm -r /c\n" * pairs)
    return narnia("-b", str(batch), wrapper=wrapper)


def test_a_device_away_does_not_make_another_compact_at_every_change(narnia, host, tmp_path):
    """Review DL-1: the journals a compaction retired, kept until a device away reads of it,
    still counted toward the 8 MiB past which a device compacts: after one compaction every
    few kilobytes of changes compacted again, each snapshot retiring every journal before it
    anew (1 MB of renames made 490 MB of journals while the other device was away)."""
    a_thousand_small_files(narnia, host)
    away = device(narnia, tmp_path / "away")
    carry(away.vault, narnia.vault)        # known, so its reading is waited for
    assert churn(narnia, host, 45).rc == 0   # about 10 MB of records: one compaction
    after_one = journal_files(narnia.vault)
    assert churn(narnia, host, 15).rc == 0   # about 3 MB more
    after_more = journal_files(narnia.vault)
    # One compaction: its snapshot, beside the journal it retired and the other device's.
    assert len(after_one) == 3 and after_more == after_one, (sorted(after_one), sorted(after_more))
    assert narnia.ok("ls /; verify").out_lines == ["src", "verified 1001 items, all intact"]


def test_a_compaction_the_disk_has_no_room_for_is_said_and_the_journal_goes_on(narnia, host):
    """Review DR-3: a compaction that failed for lack of space said nothing, and left the device
    without a journal: every change after it began a new one (here, where no file can be
    made, the next change failed, "the disk holding the vault is full"), and tried the
    snapshot again, megabytes written in vain each time. (ENOSPC injected into every linkat:
    no new file of the store can be named.)"""
    a_thousand_small_files(narnia, host)
    before = journal_files(narnia.vault)
    full = ["strace", "-f", "--seccomp-bpf", "-o", "/dev/null", "-e", "trace=linkat", "-e", "inject=linkat:error=ENOSPC"]
    r = churn(narnia, host, 45, wrapper=full)
    assert r.rc == 0, r.describe()
    said = [l for l in r.err_lines if "could not be compacted" in l]
    assert len(said) == 1 and said[0].endswith("could not be compacted (the disk holding the vault is full); nothing is lost, they grow on, and a later change tries again"), r.describe()
    assert journal_files(narnia.vault) == before
    assert narnia.ok("ls /; verify").out_lines == ["src", "verified 1001 items, all intact"]
    assert churn(narnia, host, 1).rc == 0 and len(journal_files(narnia.vault)) == 1, "compacted once there is room"


def test_a_retired_journal_deleted_while_the_vault_opens_is_read_as_gone(narnia, host, tmp_path):
    """Review FM-5, FM-6: Syncthing carried another device's deletion of a retired journal
    here between an open's listing of the store and its reading of that journal (or a
    compaction's reading of it again): the open failed, naming the file, or the compaction did,
    with a false alarm of another copy writing as this device. A file gone since the listing is
    read as if the listing had come after. (strace makes every open of the journal's file fail
    as a file deleted then does.)"""
    narnia.init()
    laptop = device(narnia, tmp_path / "laptop")
    narnia.ok("mkdir /d")
    before = journal_files(narnia.vault)                     # the desk's own: the laptop's come next
    know_each_other(narnia, laptop)
    rotate(narnia, "rotated")
    retired = sorted(before & journal_files(narnia.vault))   # kept until the laptop has read the rotation
    assert retired, "the journals the rotation retired wait for the laptop"
    gone = ["strace", "-f", "-o", "/dev/null", *(a for path in retired for a in ("-P", str(narnia.vault / path))),
            "-e", "inject=openat:error=ENOENT"]
    for command in ("ls /", f"passwd --rotate --new-passphrase-file {q(str(narnia.passphrase_file('again')))}"):
        r = narnia.c(command, passphrase="rotated", wrapper=gone)
        assert r.rc == 0 and "no such file" not in r.err and "another copy of this store" not in r.err, r.describe()
    assert narnia.ok("ls /; verify", passphrase="again").out_lines[0] == "d"
    # Gone after the open read them, before it looked whether they may go: the laptop has
    # read the rotations, so they are due for deletion at this open.
    exchange(narnia, laptop, passphrase="again")
    narnia.ok("mkdir /e", passphrase="again")
    before = journal_files(narnia.vault)
    rotate(narnia, "third", passphrase="again")
    retired = sorted(before & journal_files(narnia.vault))
    carry(narnia.vault, laptop.vault)
    laptop.ok("ls /", passphrase="third")
    carry(laptop.vault, narnia.vault)
    later = ["strace", "-f", "-o", "/dev/null", *(a for path in retired for a in ("-P", str(narnia.vault / path))),
             "-e", "inject=openat:error=ENOENT:when=2+"]
    r = narnia.c("ls /", passphrase="third", wrapper=later)
    assert r.rc == 0 and r.out_lines == ["d", "e"] and "no such file" not in r.err and "another copy of this store" not in r.err, r.describe()
    # A sync engine's copy of a journal in use, gone as the open reads (review FP-1: the open
    # failed, though the journal itself was read whole).
    live = sorted(p for p in journal_files(narnia.vault) if (narnia.vault / p).exists())[0]
    copy = narnia.vault / (live + ".sync-conflict-20261208-101010-ABCDEFG")
    shutil.copy2(narnia.vault / live, copy)
    r = narnia.c("ls /", passphrase="third", wrapper=["strace", "-f", "-o", "/dev/null", "-P", str(copy), "-e", "inject=openat:error=ENOENT"])
    assert r.rc == 0 and r.out_lines == ["d", "e"] and "no such file" not in r.err, r.describe()


def test_a_rotations_journals_ahead_of_its_key_file_say_to_wait_for_the_sync(narnia, host, tmp_path):
    """Review FM-2: Syncthing brought a rotation's journals before its key file; for that
    moment every passphrase is refused, and the messages spoke of a wrong passphrase, an
    altered store and key files to copy by hand, not of the sync still under way."""
    narnia.init()
    laptop = device(narnia, tmp_path / "laptop")
    narnia.ok("mkdir /d")
    know_each_other(narnia, laptop)
    rotate(laptop, "rotated")
    carry(laptop.vault, narnia.vault, only=lambda rel: len(rel.parts) > 1)   # not the key files
    old = narnia.c("ls /")
    assert old.rc == 3 and "that rotation's key file is not here yet: a sync engine bringing the store may not have " \
        "brought it (wait for it to finish, and try again); if nothing is arriving, copy the key files" in old.err, old.describe()
    new = narnia.c("ls /", passphrase="rotated")
    assert new.rc == 3 and "once that device's new key file is here (a sync engine may still be bringing it)" in new.err, new.describe()
    carry(laptop.vault, narnia.vault)
    assert narnia.ok("ls /", passphrase="rotated").out_lines == ["d"]


def store_paths(store: Path) -> set[str]:
    return {str(p.relative_to(store)) for p in store.rglob("*") if p.is_file()}


def test_a_snapshot_carries_another_devices_content_of_a_file_its_device_created(narnia, host, tmp_path):
    """Review FL: the desk's snapshot wrote the laptop's `cp -f` content of a file the desk had
    imported as the desk's creation, under the creation's stamp; the phone, holding the desk's
    old journals too but not the laptop's, then had two creations of one stamp and showed
    either content as the object identifiers fell. The snapshot writes the laptop's change
    beside the creation, under its own stamp: the phone shows it (not here yet), every time."""
    for attempt in range(4):
        (host / "a.txt").write_text("first\n")
        (host / "b.txt").write_text("from the laptop\n")
        desk = Narnia(narnia.binary, tmp_path / f"desk-{attempt}")
        desk.init()
        desk.ok(f"import {q(str(host / 'a.txt'))}")
        laptop, phone = device(desk, tmp_path / f"laptop-{attempt}"), device(desk, tmp_path / f"phone-{attempt}")
        laptop.ok(f"import {q(str(host / 'b.txt'))}; cp -f /b.txt /a.txt")
        carry(phone.vault, desk.vault)
        from_laptop = store_paths(laptop.vault) - store_paths(desk.vault)
        carry(laptop.vault, desk.vault)
        rotate(desk, "rotated")
        carry(desk.vault, phone.vault, only=lambda rel: str(rel) not in from_laptop)
        shown = [json.loads(line) for line in phone.ok("ls -l --json /a.txt", passphrase="rotated").out_lines]
        assert shown[0]["size"] == len("from the laptop\n") and shown[0]["here"] is False, shown
        carry(laptop.vault, phone.vault)
        assert phone.ok("cat /a.txt", passphrase="rotated").out == "from the laptop\n"

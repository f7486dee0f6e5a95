"""A removal takes what its device showed, as it showed it (FORMAT.md "Merging", rule 3): a
move made meanwhile on another device, which had not read the removal, takes the item — and
whatever the same removal listed under it — out of that removal (review DB-2: a `mv -f` swap on
two devices at once lost both files, and a file or folder moved out of a folder another device
removed meanwhile was lost with it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time

import pytest

from harness import DEFAULT_PASSPHRASE, Narnia, q
from test_concurrent_contents import exchange_all, objects, two_devices
from test_device_housekeeping import carry, exchange, journal_files, rotate
from test_devices import device, own_journal


def files(n: Narnia, **kw) -> dict[str, str]:
    """Every file shown, with its content."""
    shown = (json.loads(line) for line in n.ok("ls -alR --json /", **kw).out_lines if line.startswith("{"))
    return {d["path"]: n.ok(f"cat {q(d['path'])}", **kw).out for d in shown if d["type"] == "file"}


def both_show(desk: Narnia, laptop: Narnia, expected: dict[str, str], **kw):
    for n in (desk, laptop):
        assert files(n, **kw) == expected, n.ok("find /", **kw).describe()
        assert "all intact" in n.ok("verify", **kw).out


def trip(desk: Narnia, host) -> None:
    """/trip/x.jpg, /trip/sub/y.jpg and /trip/sub/z.jpg on the desk."""
    for name in ("x.jpg", "y.jpg", "z.jpg"):
        (host / name).write_text(f"{name}\n")
    desk.ok(f"mkdir -p /trip/sub; cd /trip; import {q(str(host / 'x.jpg'))}; "
            f"cd sub; import {q(str(host / 'y.jpg'))} {q(str(host / 'z.jpg'))}")


# What two_devices imports, with its content.
TOP = {"/a.txt": "first\n", "/b.txt": "from the desk\n", "/c.txt": "from the laptop\n"}


def journey(path: str) -> dict[str, str]:
    """/trip's files, in the folder `path`."""
    return {f"{path}/x.jpg": "x.jpg\n", f"{path}/sub/y.jpg": "y.jpg\n", f"{path}/sub/z.jpg": "z.jpg\n"}


def compact_and_exchange(desk: Narnia, laptop: Narnia, old: str | None, new: str):
    """The desk compacts its journals (`passwd --rotate`), the laptop takes the passphrase
    `new` too, then three rounds of carrying files both ways, each device opening after."""
    kw = {"passphrase": old} if old else {}
    rotate(desk, new, **kw)
    laptop.ok(f"passwd --new-passphrase-file {q(str(laptop.passphrase_file(new)))}", **kw)
    for _ in range(3):
        carry(desk.vault, laptop.vault)
        carry(laptop.vault, desk.vault)
        desk.ok("ls", passphrase=new)
        laptop.ok("ls", passphrase=new)


def third_device(desk: Narnia, laptop: Narnia, tmp_path) -> Narnia:
    """A third device, a copy of the laptop's store, that the desk and the laptop know and
    that has read all they wrote."""
    third = device(laptop, tmp_path / "third")
    for n in (desk, laptop):
        carry(third.vault, n.vault)
    exchange(desk, laptop)
    carry(desk.vault, third.vault)
    third.ok("ls")
    return third


def at_once(narnia: Narnia, host, tmp_path, on_desk: str, on_laptop: str, laptop_first=False) -> Narnia:
    """Two devices that both hold /trip (see `trip`); the desk runs `on_desk` while the laptop,
    not knowing, runs `on_laptop` (before it, with `laptop_first`); then they exchange. Returns
    the laptop."""
    laptop = two_devices(narnia, host, tmp_path)
    trip(narnia, host)
    exchange(narnia, laptop)
    for n, command in ((laptop, on_laptop), (narnia, on_desk))[::1 if laptop_first else -1]:
        n.ok(command)
    exchange(narnia, laptop)
    return laptop


def test_a_mv_f_swap_on_two_devices_at_once_keeps_both_files(narnia, host, tmp_path):
    laptop = two_devices(narnia, host, tmp_path)
    narnia.ok("mv -f /a.txt /b.txt")
    laptop.ok("mv -f /b.txt /a.txt")
    exchange(narnia, laptop)
    # Each device gave one file the other's name: both files stay, each where a device put it.
    both_show(narnia, laptop, {**TOP, "/b.txt": "first\n", "/a.txt": "from the desk\n"})


def test_a_file_moved_out_of_a_folder_removed_meanwhile_stays(narnia, host, tmp_path):
    laptop = at_once(narnia, host, tmp_path, "rm -r /trip", "mv /trip/x.jpg /")
    both_show(narnia, laptop, {**TOP, "/x.jpg": "x.jpg\n"})


def test_a_folder_moved_out_of_one_removed_meanwhile_keeps_what_it_holds(narnia, host, tmp_path):
    laptop = at_once(narnia, host, tmp_path, "rm /trip/sub/z.jpg; rm -r /trip", "mv /trip/sub /kept")
    # z.jpg was removed on its own before: moving its folder does not bring it back.
    both_show(narnia, laptop, {**TOP, "/kept/y.jpg": "y.jpg\n"})


def test_a_folder_renamed_while_another_device_removed_it_stays_whole(narnia, host, tmp_path):
    laptop = at_once(narnia, host, tmp_path, "rm -r /trip", "mv /trip /journey")
    both_show(narnia, laptop, {**TOP, **journey("/journey")})


def test_a_renamed_folder_carries_only_what_it_held_when_it_was_renamed(narnia, host, tmp_path):
    """The laptop renames /trip; later, not knowing, the desk puts a file in it and removes the
    whole folder: the rename keeps what the folder held then, not the file it never held."""
    (host / "late.jpg").write_text("late\n")
    laptop = at_once(narnia, host, tmp_path, f"cd /trip/sub; import {q(str(host / 'late.jpg'))}; rm -r /trip",
                     "mv /trip /journey", laptop_first=True)
    both_show(narnia, laptop, {**TOP, **journey("/journey")})


def test_a_folder_taken_out_of_a_removal_and_moved_again_brings_back_nothing_removed(narnia, host, tmp_path):
    """As above; then the folder is moved again: now stamped after the file the desk put in it,
    the move lists that file as removed anew rather than carry it back."""
    (host / "late.jpg").write_text("late\n")
    laptop = at_once(narnia, host, tmp_path, f"cd /trip/sub; import {q(str(host / 'late.jpg'))}; rm -r /trip",
                     "mv /trip /journey", laptop_first=True)
    for n, move in ((narnia, "mkdir /older; mv /journey /older/"), (laptop, "mkdir /elder; mv /older/journey /elder/")):
        n.ok(move)
        r = n.ok("find /")
        assert not any("late" in line for line in r.out_lines), r.describe()
        exchange(narnia, laptop)
        assert not any("late" in line for line in n.ok("find /").out_lines)
    both_show(narnia, laptop, {**TOP, **journey("/elder/journey")})


def test_what_the_remover_saw_moved_is_removed(narnia, host, tmp_path):
    """A move the removing device had read is one it removed: the item goes, wherever it was."""
    laptop = two_devices(narnia, host, tmp_path)
    trip(narnia, host)
    exchange(narnia, laptop)
    laptop.ok("mv /trip/x.jpg /; mv /trip /journey")
    exchange(narnia, laptop)
    narnia.ok("rm /x.jpg; rm -r /journey")
    exchange(narnia, laptop)
    both_show(narnia, laptop, TOP)


def test_a_move_kept_after_the_remover_compacted_has_its_content(narnia, host, tmp_path):
    """The remover compacts before the move arrives: its snapshot keeps the removed file whole
    while its object is here, and the object stays until every device has read the removal."""
    laptop = two_devices(narnia, host, tmp_path)
    trip(narnia, host)
    exchange(narnia, laptop)
    narnia.ok("rm -r /trip")
    laptop.ok("mv /trip/x.jpg /")
    compact_and_exchange(narnia, laptop, None, "rotated")
    expected = {**TOP, "/x.jpg": "x.jpg\n"}
    both_show(narnia, laptop, expected, passphrase="rotated")
    # Compacted again, now that the move is read, nothing changes.
    compact_and_exchange(narnia, laptop, "rotated", "again")
    both_show(narnia, laptop, expected, passphrase="again")


def test_a_file_moved_out_of_a_removed_folder_keeps_its_object_when_the_remover_compacts_after_reading_the_move(narnia, host, tmp_path):
    """Review EZ-1: the remover read the move (the file shown again on both devices, its
    removal's retirement of the object read everywhere), then compacted — here at its
    `passwd --rotate`, as it does when it follows another device's. The snapshot wrote its
    removal again, which removed the file again for the rest of the session: its object,
    counted unused, was deleted here (and by `sync` from the remote), while the file lived."""
    laptop = two_devices(narnia, host, tmp_path)
    trip(narnia, host)
    exchange(narnia, laptop)
    laptop.ok("mv /trip/x.jpg /")
    narnia.ok("rm -r /trip")
    for _ in range(2):
        exchange(narnia, laptop)
    expected = {**TOP, "/x.jpg": "x.jpg\n"}
    both_show(narnia, laptop, expected)
    rotate(narnia, "rotated")
    laptop.ok(f"passwd --new-passphrase-file {q(str(laptop.passphrase_file('rotated')))}")
    for _ in range(2):
        carry(narnia.vault, laptop.vault)
        carry(laptop.vault, narnia.vault)
        narnia.ok("ls", passphrase="rotated")
        laptop.ok("ls", passphrase="rotated")
    both_show(narnia, laptop, expected, passphrase="rotated")


def journals_only(store):
    """For `carry`: the files a sync engine may send first — journals (0600) and the top's key
    files — and no content object (0400)."""
    return lambda rel: len(rel.parts) == 1 or (store / rel).stat().st_mode & 0o777 == 0o600


@pytest.mark.parametrize("compactor", ["remover", "follower"])
def test_a_removed_file_whose_new_content_has_not_arrived_is_kept_whole_by_a_compaction(narnia, host, tmp_path, compactor):
    """Review FE-1: the laptop gave /a.txt new content; another device had its record but not
    yet its object, and either removed the file (the desk) or read its removal (the desk, the
    file's creator, with the phone removing it); the laptop, not knowing, moved it to /keep
    (rule 3 shows it again). That device's compaction before the move arrived — the remover's
    `passwd --rotate`, or the creator's following of the phone's — took the object not arrived
    for one deleted and kept only the file's place: once the old journals were deleted, no
    record created the file, and every device showed /keep empty, `verify` passing."""
    laptop = two_devices(narnia, host, tmp_path)
    devices = [narnia, laptop]
    remover = narnia
    if compactor == "follower":
        remover = device(narnia, tmp_path / "phone")
        remover.ok("ls")
        devices.append(remover)
        exchange_all(devices, DEFAULT_PASSPHRASE, rounds=2)
    (host / "new.txt").write_text("new content\n")
    laptop.ok(f"import {q(str(host / 'new.txt'))}; cp -f /new.txt /a.txt; rm /new.txt")
    for n in devices:
        if n is not laptop:
            carry(laptop.vault, n.vault, only=journals_only(laptop.vault))
    remover.ok("rm /a.txt")
    laptop.ok("mkdir /keep; mv /a.txt /keep/a.txt")
    if compactor == "follower":
        carry(remover.vault, narnia.vault)
        narnia.ok("ls")
    rotate(remover, "rotated")
    if compactor == "follower":
        carry(remover.vault, narnia.vault)
        narnia.ok("ls", passphrase="rotated")   # follows: its own snapshot, before the move arrives
    exchange_all(devices, "rotated", rounds=4)
    for n in devices:
        r = n.ok("find /; cat /keep/a.txt; verify", passphrase="rotated")
        assert r.out_lines[:-1] == ["/b.txt", "/c.txt", "/keep", "/keep/a.txt", "new content"], r.describe()


def test_a_file_removed_after_a_snapshot_showed_another_devices_move_stays_removed(narnia, host, tmp_path):
    """Review FJ-3: the desk's snapshot wrote its creation of a file under the place another
    device's move gave it (the creation's own place is not kept), and nothing more; the phone,
    which read the snapshot but not yet the laptop's move, removed the file there. When the move
    arrived, rule 3 took it for a move the removal had not seen (another stamp than the one the
    removal saw), and the file came back on every device. The snapshot now writes that move too,
    under its stamp."""
    laptop = two_devices(narnia, host, tmp_path)
    phone = device(narnia, tmp_path / "phone")
    phone.ok("ls")
    devices = [narnia, laptop, phone]
    exchange_all(devices, DEFAULT_PASSPHRASE, rounds=2)
    before = laptop.store().sizes()
    laptop.ok("mv /a.txt /g.txt")
    moved = {p for p, size in laptop.store().sizes().items() if p in before and size > before[p]}
    carry(laptop.vault, narnia.vault)
    narnia.ok("ls")
    rotate(narnia, "rotated")
    carry(narnia.vault, phone.vault, only=lambda rel: str(rel) not in moved)
    phone.ok("rm /g.txt", passphrase="rotated")
    exchange_all(devices, "rotated", rounds=4)
    for n in devices:
        assert n.ok("ls /", passphrase="rotated").out_lines == ["b.txt", "c.txt"]


def test_a_file_moved_out_of_a_removed_folder_keeps_its_object_when_the_journals_grow_past_compaction(narnia, host, tmp_path):
    """Review FA (EZ-1 by the other road): the remover's journals grew past 8 MiB in one
    batch, which compacted mid-session, and the same session deleted the object of the file
    the laptop had moved out."""
    laptop = at_once(narnia, host, tmp_path, "rm -r /trip", "mv /trip/x.jpg /")
    exchange(narnia, laptop)
    src = host / "src"
    src.mkdir()
    for i in range(1000):
        (src / f"f{i:04}-with-a-longer-name-to-weigh-more.txt").write_text("x")
    narnia.ok(f"import -q {q(str(src))}")
    journals = journal_files(narnia.vault)
    batch = host / "batch"
    batch.write_text("cp -r /src /c\nrm -r /c\n" * 45 + "cat /x.jpg\nverify\n")
    r = narnia("-b", str(batch))
    assert r.rc == 0 and r.out_lines[-2:] == ["x.jpg", "verified 1005 items, all intact"], r.describe()
    assert len(journal_files(narnia.vault) - journals) == 1, "the batch compacted: a snapshot journal began"
    exchange(narnia, laptop)
    for n in (narnia, laptop):
        assert n.ok("cat /x.jpg; verify").out_lines == ["x.jpg", "verified 1005 items, all intact"]


def test_a_file_shown_again_and_removed_again_keeps_its_object_until_that_removal_is_read(narnia, host, tmp_path):
    """The first removal's retirement of the object was read everywhere long ago; the second
    one's must be too before the object goes: a device that has not read it may have moved the
    file again."""
    laptop = two_devices(narnia, host, tmp_path)
    trip(narnia, host)
    exchange(narnia, laptop)
    third = third_device(narnia, laptop, tmp_path)
    narnia.ok("rm -r /trip")
    laptop.ok("mv /trip/x.jpg /")
    exchange(narnia, laptop)
    for n in (narnia, laptop):
        carry(n.vault, third.vault)
        carry(third.vault, n.vault)
    exchange(narnia, laptop)
    assert narnia.ok("cat /x.jpg").out == "x.jpg\n"
    # Every device has read the first removal, and said so. The desk removes the file again
    # while the third device, not knowing, moves it.
    carry(narnia.vault, third.vault)
    third.ok("mkdir /t3")
    for n in (narnia, laptop):
        carry(third.vault, n.vault)
    exchange(narnia, laptop)
    held = objects(narnia.vault)
    narnia.ok("rm /x.jpg; mkdir /t1")
    third.ok("mv /x.jpg /saved.jpg")
    exchange(narnia, laptop)
    assert objects(narnia.vault) == held and objects(laptop.vault) >= held
    for n in (narnia, laptop):
        carry(third.vault, n.vault)
        carry(n.vault, third.vault)
    for n in (narnia, laptop, third):
        n.ok("ls")
    for n in (narnia, laptop, third):
        assert n.ok("cat /saved.jpg").out == "x.jpg\n"
        assert "all intact" in n.ok("verify").out


def copy_missing(src, dst, also=()):
    """Copies the files `dst` lacks (and the files `also`, relative paths) from `src`: a sync
    engine that has carried some files and not yet others."""
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src)
        target = dst / rel
        if p.is_dir():
            target.mkdir(exist_ok=True)
        elif not target.exists() or str(rel) in also:
            shutil.copy2(p, target.with_name(target.name + ".carrying"))
            os.replace(target.with_name(target.name + ".carrying"), target)


def test_an_object_waits_while_records_of_a_device_that_acknowledged_it_are_missing(narnia, host, tmp_path):
    """The laptop moved the file out of the folder the desk removed, then, in a new journal,
    acknowledged the removal. Only that new journal has reached the desk: the acknowledgement
    is no proof that the desk read the laptop's move, and the object must stay (review DV)."""
    laptop = two_devices(narnia, host, tmp_path)
    trip(narnia, host)
    exchange(narnia, laptop)
    held = objects(narnia.vault)
    desk_journal, _ = own_journal(narnia, "rm -r /trip")
    laptop_journal, _ = own_journal(laptop, "mv /trip/x.jpg /")
    with open(laptop_journal, "ab") as f:   # a torn tail: the laptop goes on in a new journal
        f.write(b"\x07\x07\x07")
    copy_missing(narnia.vault, laptop.vault, also={str(desk_journal.relative_to(narnia.vault))})
    laptop.ok("ls")      # reads the removal, and acknowledges it in its new journal
    copy_missing(laptop.vault, narnia.vault)
    r = narnia.ok("ls /")
    assert "x.jpg" not in r.out_lines, "the move has not arrived yet" + r.describe()
    assert held <= objects(narnia.vault), "x.jpg's object was deleted before the move that keeps it was read"
    # Review DW-1: verify says why, and `devices` puts the object on the laptop's account.
    r = narnia.c("verify")   # fails: the laptop's records it noted are missing here
    assert any(re.search(r"records? [0-9–]+ of device laptop \(\w{8}\) (is|are) not here yet \(an older journal of it has not "
                         r"arrived\): no retired object is deleted until", line) for line in r.err_lines), r.describe()
    r = narnia.ok("devices")
    assert [re.search(r"holds (\S+)", line)[1] != "0" for line in r.out_lines if " laptop " in line] == [True], r.describe()
    exchange(narnia, laptop)
    both_show(narnia, laptop, {**TOP, "/x.jpg": "x.jpg\n"})


def test_devices_names_the_device_an_object_removed_twice_waits_for(narnia, host, tmp_path):
    """Review DW-2: the desk and the laptop both removed /solo.txt; the third device has read
    the desk's removal only. The object waits for it to read the laptop's, and `devices` says
    so (it said every device held nothing)."""
    laptop = two_devices(narnia, host, tmp_path)
    (host / "solo.txt").write_text("an object of its own\n")
    narnia.ok(f"import {q(str(host / 'solo.txt'))}")
    exchange(narnia, laptop)
    third = third_device(narnia, laptop, tmp_path)
    narnia.ok("rm /solo.txt")
    laptop.ok("rm /solo.txt")
    carry(narnia.vault, third.vault)
    third.ok("mkdir /seen")          # has read the desk's removal, not the laptop's
    carry(third.vault, narnia.vault)
    carry(third.vault, laptop.vault)
    exchange(narnia, laptop)
    r = narnia.ok("devices")
    holds = {line.split()[1]: re.search(r"holds (\S+)", line)[1] for line in r.out_lines}
    assert holds["third"] != "0" and holds["laptop"] == "0", r.describe()


def removed_cycle(narnia: Narnia, host, merged: bool = False, under: str = "") -> tuple[Narnia, Narnia]:
    """A device, "A", showing /x/y/r/keep where /x stands where it fell back (FORMAT.md rule 2)
    and is removed, shown again only for what survived its removal (rule 3): A moved /r into
    /x/y while B moved /x into /r (the later move, skipped), then A removed /x while C made
    /r/keep. With `merged`, /x is merged with another device's earlier /x holding /x/other
    (rule 4), so the removed /x is the second folder it stands for; with `under`, a folder,
    /x is in it. Returns A and C."""
    narnia.init()
    d = device(narnia, host / "D")
    if merged:
        d.ok("mkdir /x /x/other")
    time.sleep(0.05)
    a = device(narnia, host / "A")
    x = f"{under}/x"
    a.ok(f"mkdir -p {x}/y {x}/gone /r")
    b, c = device(a, host / "B"), device(a, host / "C")
    a.ok(f"mv /r {x}/y/r")
    time.sleep(0.05)
    b.ok(f"mv {x} /r/x")
    c.ok("mkdir /r/keep")
    carry(b.vault, a.vault)
    a.ok(f"rm -r {x}")
    carry(c.vault, a.vault)
    carry(d.vault, a.vault)
    other = ["/x/other"] if merged else []
    assert a.ok("find /").out_lines == sorted([under] * bool(under) + [x, f"{x}/y", f"{x}/y/r", f"{x}/y/r/keep"] + other)
    return a, c


@pytest.mark.parametrize("merged, command, shown", [
    (False, "mv /x/y /x/renamed", ["/x", "/x/renamed", "/x/renamed/r", "/x/renamed/r/keep"]),
    (True, "mv /x/y/r /x/y/r2", ["/x", "/x/other", "/x/y", "/x/y/r2", "/x/y/r2/keep"]),
])
def test_a_move_in_the_cycle_of_a_removed_folder_shown_where_it_fell_back_stays(narnia, host, merged, command, shown):
    """test_model seed 2242, review DZ-1: renaming /x/y, or /x/y/r, made the move the latest of
    the cycle that /x's skipped move closed: the session showed it, the next open skipped it
    instead (and showed /x's removed folder `gone` again, or /r at the root). The move now
    records /x where it is shown, a merged folder's second member too."""
    a, _ = removed_cycle(narnia, host, merged)
    assert a.ok(f"{command}; find /").out_lines == shown
    assert a.ok("find /").out_lines == shown, "the next open"
    assert "all intact" in a.ok("verify").out


@pytest.mark.parametrize("under, command, shown", [("", "mkdir /u; mv /u /u2", ["/u2"]), ("/p", "mv /p /p2", ["/p2"])])
def test_a_move_outside_its_cycle_leaves_a_removed_folder_shown_where_it_fell_back_removed(narnia, host, under, command, shown):
    """Reviews DZ-2 and EA-1: a move elsewhere, and (until EA-1) one of a folder above /x, recorded /x
    where it fell back, which took it out of its removal for good: once what survived in it
    was removed too, /x stayed, empty. Neither can change where /x falls back."""
    a, c = removed_cycle(narnia, host, under=under)
    a.ok(command)
    c.ok("rm -r /r/keep")
    carry(c.vault, a.vault)
    assert a.ok("find /").out_lines == shown


def test_a_move_finished_with_skip_existing_keeps_what_another_device_removed_or_replaced_meanwhile(narnia, host, tmp_path):
    """Review FI-1: an `import --move` cut short, finished with `--skip-existing` on the desk
    while the laptop, not knowing, removed one copy the cut run had made and replaced another:
    the finishing run removed the originals, having written no record of them, and once the
    laptop's changes arrived their bytes were nowhere, `verify` passing. Taken in again over
    their copies, they outlive both, as conflict copies (FORMAT rule 7)."""
    laptop = two_devices(narnia, host, tmp_path)        # /a.txt, /b.txt, /c.txt, imported --keep
    laptop.ok("rm /a.txt; cp -f /c.txt /b.txt")
    originals = [host / "a.txt", host / "b.txt"]
    r = narnia.ok("import --move --skip-existing " + " ".join(q(str(p)) for p in originals))
    assert r.out_lines == [f"imported {p} -> /{p.name} (again, over the copy an earlier run made)" for p in originals], r.describe()
    assert not any(p.exists() for p in originals)
    exchange_all([narnia, laptop], DEFAULT_PASSPHRASE)
    shown = files(narnia)
    copies = {path: text for path, text in shown.items() if re.fullmatch(r"/[ab] \(conflict \d{4}-\d\d-\d\d [^)]+\)\.txt", path)}
    assert sorted(copies.values()) == ["first\n", "from the laptop\n"], shown
    # The bytes taken in again are the later change: they keep the name, the laptop's
    # replacement is the copy (review FN-1; the other way round, FO-1).
    assert {p: t for p, t in shown.items() if p not in copies} == {"/b.txt": "from the desk\n", "/c.txt": "from the laptop\n"}, shown
    both_show(narnia, laptop, shown)

"""Model-based test of format 2: several devices change copies of one store independently, a
simulated file-sync engine carries files between them in random order (journals cut short or
delivered as Syncthing/Dropbox conflict copies), and an independent oracle (merge_oracle.py,
written from docs/FORMAT.md) says what every device must show.

Per scenario (seeded):

1. `init` one store (dev1), a few items, `cp -a` it to one or two more device directories; each
   device's first write names it (`devices name devN`, before or after a `set`).
2. Rounds: each device runs random commands that are valid in what it shows now (import, import
   -, mkdir -p, mv: rename, into a folder, -f onto a file; cp, cp -r, cp -f, rm -r, set, and in
   some scenarios passwd), one or two invocations a turn; between turns the engine delivers
   files one by one: objects (whole, now and then cut short or only as a conflict copy), key
   files (now and then as a conflict copy), and other devices' journals (whole, or cut at a
   record boundary or inside a record; under the real name, or as a conflict copy that keeps
   the older or the newer version). A device never receives anything of its own journal.
   Every invocation lists the vault (`ls -alR --json /`, `set`) before its commands and again
   after them, in the same session; both listings must equal the oracle's merge of exactly the
   records the device holds then: paths, types, kinds, sizes, the listing order, and `here`
   (false for a file whose object has not wholly arrived). The passphrase used is one the
   oracle says opens this copy (FORMAT.md "Key files", with its exception for a copy whose new
   key file has not arrived, which must warn); now and then one that must not is tried (exit
   3). Every invocation's effect on the device's files is checked: only its journal grows, new
   objects only from a command that writes content, a key file only from passwd, deletions only
   of files no record it holds still needs.
3. Full delivery; then every device shows the same listing byte for byte, equal to the oracle's
   merge of all records; `cat` of every file gives the bytes the oracle tracked through
   import/cp/cp -f; `verify` passes; `devices --json` names every device; no file that no device
   removed has lost its object; the sync engine's own files (.stfolder, temporaries) are intact.

How the oracle follows the journals without reading them: every changing command is one record;
the test notes the journal's length after each invocation (its records, preceded perhaps by an
acknowledgement), and a journal delivered with at least that many bytes brings that invocation's
records. Cuts are made only at those lengths or within the first 105 bytes after one (inside the
first record of the next invocation: every record is at least 106 bytes), so a cut never splits
an invocation's records. The objects one invocation writes are found by listing the store
before and after; an invocation runs at most one command that writes objects, so every object
belongs to one known command. Stamps: devices run one after another on one machine, so the
hybrid clock orders records as they were run.

Where FORMAT.md leaves the outcome to random identifiers, the generator stays away: it puts
nothing into a merged folder (FORMAT.md rule 4) whose first member is decided by identifier
(members placed by one record, as after a device moved the merged folder).

NARNIA_MODEL_SCENARIOS (default 200) sets how many scenarios run, seeds NARNIA_MODEL_FIRST_SEED
(default 1) onwards, and the seeds in REGRESSION_SEEDS, each of which once found a bug;
NARNIA_MODEL_SEED=N runs only scenario N (and prints its log);
NARNIA_MODEL_WEIGHTS ("move-folder=30,rm=15") changes how often each kind of command is chosen;
NARNIA_MODEL_JOBS (default: the number of CPUs, at most 4) runs scenarios in parallel. A failed
scenario's device directories are kept under pytest's tmp_path (seed-N/devM).
"""

from __future__ import annotations

import collections
import concurrent.futures
import datetime
import json
import os
import random
import re
import shutil
import struct
import subprocess
import time
import traceback
import zlib
from pathlib import Path

import pytest

import merge_oracle as mo
from harness import Narnia, q

SCENARIOS = int(os.environ.get("NARNIA_MODEL_SCENARIOS", "200"))
FIRST_SEED = int(os.environ.get("NARNIA_MODEL_FIRST_SEED", "1"))
ONLY_SEED = os.environ.get("NARNIA_MODEL_SEED")
# Seeds past the default range that once found a bug, run with every range: 621 (a key file
# deleted for a device not known yet), 1050 and 1092 (rule 2's fallback to the root), 1315 (a
# move from where a folder fell back), 1506 (an object deleted though a device known only from
# another's records had moved its file), 1560 and 1680 (a folder recorded where it fell back
# freed, at the next open only, what a removal had taken under it), 2242 (a move made while a
# removed folder stood where it fell back was skipped at the next open).
REGRESSION_SEEDS = [621, 1050, 1092, 1315, 1506, 1560, 1680, 2242]
JOBS = int(os.environ.get("NARNIA_MODEL_JOBS", str(min(4, os.cpu_count() or 1))))
# Command weights that override `gen_command`'s, as "move-folder=30,rm=15": a sweep aimed at
# one part of the merge (the same seed then makes another scenario).
WEIGHTS = {k: int(v) for k, v in (w.split("=") for w in os.environ.get("NARNIA_MODEL_WEIGHTS", "").split(",") if w)}

HEX32 = re.compile(r"^([0-9a-f]{32})(.*)$", re.S)
HEX2 = re.compile(r"^[0-9a-f]{2}$")
IMPORTED = re.compile(r"^imported (.*) -> (/.*)$")
# a record is at least nonce 24 + header 20 + body (seq 8, wall 8, counter 4, knowledge 2 + 24,
# tag 16) = 106 bytes, so a cut less than 106 bytes after a record starts ends inside it
MIN_RECORD = 106

DEFAULT_SETTINGS = {"remove-originals": "off", "inbox": "/Inbox", "viewer.photo": "", "viewer.video": "",
                    "viewer.document": "", "viewer.other": "", "hide-names": "off",
                    "grid": "off"}
SETTING_CHOICES = [("hide-names", "on"), ("hide-names", "off"), ("grid", "on"),
                   ("grid", "off"), ("viewer.photo", "chafa %s"), ("viewer.photo", ""),
                   ("viewer.other", "xxd")]
FILE_NAMES = ["a.txt", "a.txt", "b.txt", "IMG_1.jpg", "notes", "data.tar.gz", ".hidden",
              "café.txt", "x"]
FOLDER_NAMES = ["x", "x", "y", "photos", "2024", "trip", "a.txt"]
RENAME_NAMES = FILE_NAMES + FOLDER_NAMES + ["z", "renamed.txt", "Z.bin"]
# the engine: how often an object arrives cut short (to be completed later), or only as a
# conflict copy; how often a journal is cut short
P_PARTIAL_OBJECT = 0.08
P_OBJECT_COPY = 0.08
P_JOURNAL_CUT = 0.5


class ModelFailure(AssertionError):
    pass


# ---------------------------------------------------------------------------------------------
# Contents


def _png(rng: random.Random) -> bytes:
    ihdr = struct.pack(">IIBBBBB", rng.randrange(1, 64), rng.randrange(1, 64), 8, 2, 0, 0, 0)
    chunk = struct.pack(">I", len(ihdr)) + b"IHDR" + ihdr + struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return b"\x89PNG\r\n\x1a\n" + chunk + rng.randbytes(rng.randrange(0, 3000))


def make_content(rng: random.Random) -> tuple[bytes, str]:
    """Bytes whose kind libmagic decides for sure: text (document), PNG (photo), data or
    empty (other)."""
    r = rng.random()
    if r < 0.45:
        words = ["alpha", "beta", "gamma", "delta", "omega", "narnia", "lamp", "post"]
        n = rng.randrange(1, 300)
        text = " ".join(rng.choice(words) for _ in range(n)) + "\n"
        return text.encode(), "document"
    if r < 0.65:
        return _png(rng), "photo"
    if r < 0.95:
        return b"NRNDAT\x00\xff" + rng.randbytes(rng.randrange(0, 6000)), "other"
    return b"", "other"


# ---------------------------------------------------------------------------------------------
# Files of a device directory


def split_name(rel: str) -> tuple[str, str] | None:
    """("xx/<32 hex>" or "<32 hex>", suffix) of a store file or a copy of one; None for
    anything else (sync engines' temporaries, .stfolder)."""
    parts = rel.split("/")
    m = HEX32.match(parts[-1])
    if not m or m.group(2) and "conflict" not in m.group(2):
        return None
    if len(parts) == 1:
        return m.group(1), m.group(2)
    if len(parts) == 2 and HEX2.match(parts[0]) and m.group(1).startswith(parts[0]):
        return f"{parts[0]}/{m.group(1)}", m.group(2)
    return None


# The inbox public key file at the top of the store is not a key file (FORMAT.md, "The inbox").
INBOX_KEY_SIZE = 72


def scan(root: Path) -> dict[str, int]:
    """rel path -> size of every store file (and copy) in a device directory."""
    out = {}
    with os.scandir(root) as it:
        for e in it:
            if e.is_file(follow_symlinks=False):
                if split_name(e.name):
                    out[e.name] = e.stat().st_size
            elif e.is_dir(follow_symlinks=False) and HEX2.match(e.name):
                with os.scandir(e.path) as it2:
                    for f in it2:
                        rel = f"{e.name}/{f.name}"
                        if f.is_file(follow_symlinks=False) and split_name(rel):
                            out[rel] = f.stat().st_size
    return out


def copies(files: dict[str, int], base: str) -> dict[str, int]:
    """The files (rel path -> size) that are `base` or a copy of it."""
    return {rel: size for rel, size in files.items() if split_name(rel)[0] == base}


# ---------------------------------------------------------------------------------------------
# One scenario


class Invocation:
    def __init__(self, start: int):
        self.start = start
        self.end: int | None = None
        self.records: list[mo.Record] = []


class Device:
    def __init__(self, label: str, path: Path):
        self.label = label
        self.path = path
        self.journal: str | None = None        # base rel path of its journal
        self.invs: list[Invocation] = []
        self.whole: set[str] = set()           # objects whole here (written or delivered)
        self.deleted: set[str] = set()         # objects the last invocation deleted


class Unit:
    """The content objects one command wrote."""

    def __init__(self, uid: int, device: str):
        self.uid = uid
        self.device = device
        self.objects: list[str] = []
        self.sizes: dict[str, int] = {}
        # written and deleted by the command that wrote them (its item removed in the same
        # invocation; a move elsewhere may show it again, FORMAT.md rule 3)
        self.vanished = False


class Scenario:
    def __init__(self, seed: int, workdir: Path, binary: Path):
        self.seed = seed
        self.rng = random.Random(seed)
        self.workdir = workdir
        self.n = Narnia(binary, workdir)
        self.host = workdir / "hostfiles"
        self.host.mkdir()
        self.log: list[str] = []
        self.seq = 0
        self.new_id = mo.IdSource()
        self.units: dict[int, Unit] = {}
        self.next_unit = 1
        self.journal_owner: dict[str, str] = {}   # base -> device label
        self.object_unit: dict[str, int] = {}
        self.keyfiles: dict[str, str] = {}        # base -> passphrase
        self.recv: dict[tuple[str, str], int] = {}
        self.devices: list[Device] = []
        self.conflict_counter = 0
        self.host_counter = 0
        self.passwd_scenario = self.rng.random() < 0.4
        self.pass_counter = 0
        self.junk: dict[Path, bytes] = {}
        self.stats: collections.Counter = collections.Counter()

    # -- logging and failing

    def note(self, line: str):
        self.log.append(line)

    def fail(self, what: str):
        raise ModelFailure(what)

    # -- the oracle's records

    def dev(self, label: str) -> Device:
        return next(d for d in self.devices if d.label == label)

    def received_invocations(self, d: Device, o: Device) -> list[Invocation]:
        if d is o:
            return o.invs
        limit = self.recv.get((d.label, o.label), 0)
        return [inv for inv in o.invs if inv.end is not None and inv.end <= limit]

    def records_of(self, d: Device) -> list[mo.Record]:
        out = []
        for o in self.devices:
            for inv in self.received_invocations(d, o):
                out.extend(inv.records)
        return out

    def view(self, d: Device) -> mo.View:
        return mo.merge(self.records_of(d))

    def all_records(self) -> list[mo.Record]:
        return [r for o in self.devices for inv in o.invs for r in inv.records]

    def stamp(self, d: Device, date: str) -> mo.Stamp:
        self.seq += 1
        return mo.Stamp(self.seq, d.label, date)

    # -- key files and passphrases

    def present_keys(self, d: Device, files=None) -> set[str]:
        files = scan(d.path) if files is None else files
        return {split_name(rel)[0] for rel, size in files.items() if "/" not in rel and size != INBOX_KEY_SIZE}

    def usable_passphrases(self, d: Device, view: mo.View | None = None) -> list[str]:
        view = view or self.view(d)
        keys = mo.key_files_usable(self.present_keys(d), view.retired_keys)
        return sorted({self.keyfiles[k] for k in keys})

    def fresh_passphrase(self) -> str:
        self.pass_counter += 1
        return f"passphrase {self.seed}-{self.pass_counter}"

    # -- running narnia

    def utc_date(self) -> str:
        """Today's UTC date, waiting out the last seconds of a day so that a command's records
        are stamped on the date read here."""
        while True:
            now = datetime.datetime.now(datetime.timezone.utc)
            left = 86400 - (now.hour * 3600 + now.minute * 60 + now.second)
            if left > 30:
                return now.strftime("%Y-%m-%d")
            time.sleep(left + 1)

    def narnia(self, d: Device, commands: list[str], passphrase: str, stdin: bytes | None = None):
        return self.n.c("; ".join(commands), vault=d.path, passphrase=passphrase,
                        input=stdin, timeout=120)

    # -- the device's own files around one invocation

    def account(self, d: Device, before: dict[str, int], after: dict[str, int], inv: Invocation | None,
                unit: Unit | None, passwd: bool, what: str):
        """Checks what one invocation did to the device's files and records it: its journal
        grew (or was created), new objects belong to `unit`, a new key file after passwd,
        deletions only of what FORMAT.md lets a device delete."""
        grown = [r for r in after if r in before and after[r] > before[r]]
        shrunk = [r for r in after if r in before and after[r] < before[r]]
        new = [r for r in after if r not in before]
        gone = [r for r in before if r not in after]
        if shrunk:
            self.fail(f"{what}: files shrank: {shrunk}")
        new_top = [r for r in new if "/" not in r]
        new_shard = [r for r in new if "/" in r]
        if d.journal is None:
            if len(new_shard) != 1 or unit is not None:
                self.fail(f"{what}: the first write of {d.label} should create exactly its journal; "
                          f"new files: {new_shard}")
            d.journal = new_shard[0]
            self.journal_owner[d.journal] = d.label
            new_shard = []
            if inv is not None:
                inv.start = 0
        for r in grown:
            if r != d.journal:
                self.fail(f"{what}: a file other than {d.label}'s journal {d.journal} grew: {r} "
                          f"({before[r]} -> {after[r]} bytes)")
        if inv is not None:
            inv.end = after.get(d.journal, 0)
            if inv.records and inv.end <= inv.start:
                self.fail(f"{what}: {d.label} committed changes but its journal {d.journal} did not "
                          f"grow (did it start a new journal? new files: {new_shard})")
        if new_shard:
            if unit is None:
                self.fail(f"{what}: unexpected new files in the store: {new_shard}")
            for r in new_shard:
                if split_name(r)[1]:
                    self.fail(f"{what}: narnia wrote a file with a conflict name: {r}")
                unit.objects.append(r)
                unit.sizes[r] = after[r]
                self.object_unit[r] = unit.uid
                d.whole.add(r)
        if unit is not None and not unit.objects:
            unit.vanished = True
        if passwd:
            if len(new_top) != 1:
                self.fail(f"{what}: passwd should write exactly one new key file; new: {new_top}")
        elif new_top:
            self.fail(f"{what}: new key files without passwd: {new_top}")
        self.check_deletions(d, before, after, self.view(d), what)
        return new_top

    def check_deletions(self, d: Device, before, after, view: mo.View, what: str):
        """A device deletes only retired files: never a journal, never a key file that no
        record it holds retires (nor the last key file), never an object that a file it shows
        needs."""
        needed = {o for f in view.files() for o in self.units[f.content.unit].objects}
        for r in before:
            if r in after:
                continue
            base = split_name(r)[0]
            if base in self.journal_owner:
                self.fail(f"{what}: narnia deleted a journal (or a copy of one): {r} "
                          f"(journal of {self.journal_owner[base]})")
            if "/" not in r and base not in view.retired_keys:
                self.fail(f"{what}: narnia deleted the key file {r}, which no record it holds "
                          f"retires")
            if base in needed:
                self.fail(f"{what}: narnia deleted {r}, the object of a file it shows: "
                          f"{[f.path for f in view.files() if base in self.units[f.content.unit].objects]}")
        if not self.present_keys(d, after):
            self.fail(f"{what}: no key file is left in {d.label}")
        # An object deleted is not here any more: a move made on a copy this device did not know
        # yet may show its file again (FORMAT.md rule 3), "not on this device".
        left = {split_name(r)[0] for r in after}
        d.deleted = {split_name(r)[0] for r in before if r not in after and split_name(r)[0] not in left}
        d.whole -= d.deleted
        if d.deleted:
            self.note(f"  {d.label} deleted {[o[:11] for o in sorted(d.deleted)]}")

    # -- delivering files between devices (the sync engine)

    def conflict_copy_name(self, rel: str, style: str) -> str:
        self.conflict_counter += 1
        k = self.conflict_counter
        if style == "syncthing":
            ident = "".join(self.rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(7))
            return f"{rel}.sync-conflict-20261201-{73500 + k:06d}-{ident}"
        return f"{rel} (dev{k}'s conflicted copy 2026-12-01)"

    def write(self, d: Device, rel: str, data: bytes):
        path = d.path / rel
        if "/" in rel:
            path.parent.mkdir(mode=0o700, exist_ok=True)
        tmp = d.path / f".narnia-model-{os.getpid()}.tmp"   # outside the store's names
        with open(tmp, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o600)
        os.replace(tmp, path)

    def cut_points(self, o: Device, base: str, lo: int, hi: int) -> tuple[list[int], list[int]]:
        """Lengths in (lo, hi] at which o's journal `base` may be cut: invocation boundaries,
        and points inside the first record of an invocation."""
        bounds, inside = [], []
        for inv in o.invs:
            if inv.end is None:
                continue
            if lo < inv.end <= hi:
                bounds.append(inv.end)
            for r in range(1, min(MIN_RECORD, inv.end - inv.start)):
                p = inv.start + r
                if lo < p <= hi and p < inv.end:
                    inside.append(p)
        return bounds, inside

    def logical(self, base: str) -> tuple:
        """A name for a store file that does not depend on narnia's random names, so that a
        seed replays the same deliveries."""
        if base in self.journal_owner:
            return (0, self.journal_owner[base], 0)
        if base in self.object_unit:
            unit = self.units[self.object_unit[base]]
            return (1, f"{unit.uid:06d}", unit.objects.index(base))
        if base in self.keyfiles:
            return (2, f"{list(self.keyfiles).index(base):06d}", 0)
        return (3, base, 0)

    def candidates(self, files: dict[Device, dict[str, int]]):
        out = []
        for s in self.devices:
            sf = files[s]
            bases = {}
            for rel, size in sf.items():
                base = split_name(rel)[0]
                bases.setdefault(base, []).append((rel, size))
            for d in self.devices:
                if d is s:
                    continue
                df = files[d]
                for base in sorted(bases, key=self.logical):
                    dcopies = copies(df, base)
                    if base in self.journal_owner:
                        owner = self.journal_owner[base]
                        if owner == d.label:
                            continue
                        ls = max(size for _, size in bases[base])
                        if ls > max(dcopies.values(), default=0):
                            out.append(("journal", s, d, base))
                    elif "/" not in base:
                        if not dcopies:
                            out.append(("key", s, d, base))
                    else:
                        full = self.units[self.object_unit[base]].sizes[base] if base in self.object_unit else None
                        if full is None:
                            continue
                        if any(size == full for _, size in bases[base]) and \
                                not any(size == full for size in dcopies.values()):
                            out.append(("object", s, d, base))
        return out

    def received_key(self, d: Device, owner: Device, base: str) -> tuple[str, str]:
        """The key of `recv` under which the bytes of `owner`'s journal `base` that `d` holds
        are counted: one journal a device."""
        return (d.label, owner.label)

    def deliver_journal(self, s: Device, d: Device, base: str, whole: bool):
        """Delivers `s`'s copy of a journal to `d`: whole, or (unless `whole`) cut at a point
        `cut_points` allows, under its name or as a sync engine's conflict copy."""
        sf, df = scan(s.path), scan(d.path)
        rng = self.rng
        owner = self.dev(self.journal_owner[base])
        src_rel, ls = max(copies(sf, base).items(), key=lambda t: (t[1], t[0]))
        data = (s.path / src_rel).read_bytes()
        if s is not owner and (owner.path / base).is_file() and (owner.path / base).read_bytes()[:ls] != data:
            self.fail(f"{s.label}'s copy {src_rel} of {owner.label}'s journal is not a prefix "
                      f"of it (only its owner writes a journal)")
        dcopies = copies(df, base)
        have = max(dcopies.values(), default=0)
        p = ls
        if not whole and rng.random() < P_JOURNAL_CUT:
            bounds, inside = self.cut_points(owner, base, have, ls)
            if inside and (rng.random() < 0.5 or not bounds):
                p = rng.choice(inside)
            elif bounds:
                p = rng.choice(bounds)
        data = data[:p]
        real = base
        mode = "plain" if whole else rng.choices(
            ["plain", "syncthing-old", "syncthing-new", "dropbox-old", "dropbox-new"],
            [50, 15, 15, 10, 10])[0]
        if mode == "plain" or (mode.endswith("-old") and real not in df):
            self.write(d, real, data)
            how = f"as {real}"
        elif mode.endswith("-old"):
            cname = self.conflict_copy_name(real, mode.split("-")[0])
            os.rename(d.path / real, d.path / cname)
            self.write(d, real, data)
            how = f"as {real}, the older {df[real]} bytes kept as {cname}"
        else:
            cname = self.conflict_copy_name(real, mode.split("-")[0])
            self.write(d, cname, data)
            how = f"as {cname}" + (f" ({real} keeps {df[real]} bytes)" if real in df else "")
        key = self.received_key(d, owner, base)
        self.recv[key] = max(self.recv.get(key, 0), p)
        self.stats["journals delivered"] += 1
        self.stats["journals cut inside a record"] += p < ls and p not in {i.end for i in owner.invs}
        self.stats["journals cut at a boundary"] += p < ls and p in {i.end for i in owner.invs}
        self.stats["journal conflict copies"] += mode != "plain"
        self.note(f"  deliver {owner.label}'s journal {base[:11]}… {s.label} -> {d.label}: {p} of {ls} bytes"
                  f"{' (cut)' if p < ls else ''} {how}")

    def deliver_one(self, kind: str, s: Device, d: Device, base: str, whole: bool = False):
        sf, df = scan(s.path), scan(d.path)
        rng = self.rng
        if kind == "journal":
            self.deliver_journal(s, d, base, whole)
        elif kind == "key":
            src_rel = sorted(copies(sf, base), key=len)[0]
            data = (s.path / src_rel).read_bytes()
            rel = base if whole or rng.random() < 0.85 else self.conflict_copy_name(
                base, rng.choice(["syncthing", "dropbox"]))
            self.write(d, rel, data)
            self.note(f"  deliver key file {base[:8]}… ({self.keyfiles.get(base)!r}) "
                      f"{s.label} -> {d.label} as {rel}")
        else:
            unit = self.units[self.object_unit[base]]
            full = unit.sizes[base]
            src_rel = sorted((r for r, size in copies(sf, base).items() if size == full), key=len)[0]
            data = (s.path / src_rel).read_bytes()
            r = 1.0 if whole else rng.random()
            if r < P_PARTIAL_OBJECT and full > 1:
                cut = rng.randrange(1, full)
                if df.get(base, 0) < cut:
                    self.write(d, base, data[:cut])
                self.note(f"  deliver object {base[:11]}… (unit {unit.uid}) {s.label} -> {d.label}: "
                          f"cut at {cut} of {full} bytes")
                self.stats["objects delivered cut"] += 1
                return
            rel = base if r >= P_PARTIAL_OBJECT + P_OBJECT_COPY else self.conflict_copy_name(base, rng.choice(["syncthing", "dropbox"]))
            self.write(d, rel, data)
            d.whole.add(base)
            self.stats["objects delivered"] += 1
            self.stats["object conflict copies"] += rel != base
            self.note(f"  deliver object {base[:11]}… (unit {unit.uid}) {s.label} -> {d.label} as "
                      f"{'the original' if rel == base else rel}")

    def deliveries(self, count: int):
        for _ in range(count):
            files = {d: scan(d.path) for d in self.devices}
            cands = self.candidates(files)
            if not cands:
                return
            self.deliver_one(*self.rng.choice(cands))

    full_delivery_passes = 4

    def needs_delivery(self, kind: str, s: Device, d: Device, base: str) -> bool:
        """True when `d` lacks what a whole delivery of `s`'s file `base` brings (another
        delivery of the same pass may have brought it already)."""
        now = copies(scan(d.path), base)
        if kind == "key":
            return not now
        if kind == "object":
            return not any(size == self.units[self.object_unit[base]].sizes[base] for size in now.values())
        return max(now.values(), default=0) < max(copies(scan(s.path), base).values())

    def deliver_everything(self):
        self.note("full delivery")
        for _ in range(self.full_delivery_passes):
            files = {d: scan(d.path) for d in self.devices}
            cands = self.candidates(files)
            if not cands:
                return
            for kind, s, d, base in cands:
                if self.needs_delivery(kind, s, d, base):
                    self.deliver_one(kind, s, d, base, whole=True)

    # -- checking what a device shows

    def expected_listing(self, d: Device, view: mo.View) -> list[tuple]:
        out = []
        for node in view.listing():
            if node.is_folder:
                out.append((node.path, "folder", "folder", None, None))
            else:
                c = node.content
                unit = self.units[c.unit]
                here = not unit.vanished and all(o in d.whole for o in unit.objects)
                out.append((node.path, "file", c.kind, c.size, here))
        return out

    def compare_listing(self, d: Device, view: mo.View, lines: list[str], what: str):
        got = []
        for line in lines:
            try:
                o = json.loads(line)
            except ValueError:
                self.fail(f"{what}: a line of ls --json is not JSON: {line!r}")
            if o.get("name") != o["path"].rsplit("/", 1)[-1]:
                self.fail(f"{what}: name {o.get('name')!r} does not end path {o['path']!r}")
            got.append((mo.nfc(o["path"]), o["type"], o["kind"], o.get("size"), o.get("here")))
        want = self.expected_listing(d, view)
        self.count(view, want)
        if got != want:
            gs, ws = set(got), set(want)
            diff = [f"    narnia only: {g}" for g in got if g not in ws]
            diff += [f"    oracle only: {w}" for w in want if w not in gs]
            if not diff:
                diff = ["    same entries, different order:"] + [f"      {g}" for g in got]
            self.fail(f"{what}: {d.label} shows something else than the oracle's merge of the "
                      f"records it holds:\n" + "\n".join(diff) + self.describe_received(d))

    def count(self, view: mo.View, listing):
        """What the scenario exercised (reported by the test)."""
        st = self.stats
        st["listings checked"] += 1
        st["conflict names shown"] += sum(1 for f in view.files() if f.name != f.stored_name)
        st["merged folders shown"] += sum(1 for f in view.folders() if len(f.ids) > 1)
        st["removed folders shown again"] += len(view.revived)
        st["items held"] += len(view.held)
        st["moves skipped (cycles)"] += view.skipped
        st["files not here"] += sum(1 for e in listing if e[4] is False)

    def describe_received(self, d: Device) -> str:
        parts = []
        for o in self.devices:
            if o is d:
                continue
            n = len(self.received_invocations(d, o))
            parts.append(f"{o.label}: {self.recv.get((d.label, o.label), 0)} bytes, "
                         f"{n}/{len(o.invs)} invocations")
        return f"\n  {d.label} holds of the other journals: " + "; ".join(parts)

    def compare_settings(self, d: Device, view: mo.View, lines: list[str], what: str):
        got = {}
        for line in lines:
            key, _, value = line.partition(" ")
            got[key] = value
        want = dict(DEFAULT_SETTINGS)
        want.update(view.settings)
        if got != want:
            self.fail(f"{what}: {d.label}'s settings are {got}, the oracle says {want}")

    # -- generating commands

    def host_file(self, name: str, data: bytes) -> Path:
        self.host_counter += 1
        p = self.host / f"h{self.host_counter}" / name
        p.parent.mkdir()
        p.write_bytes(data)
        return p

    def new_unit(self, d: Device) -> Unit:
        u = Unit(self.next_unit, d.label)
        self.units[u.uid] = u
        self.next_unit += 1
        return u

    def gen_command(self, d: Device, view: mo.View, allow_content: bool, allow_stdin: bool,
                    allow_passwd: bool):
        """One random command valid in `view`: (command, ops, expected import lines, unit,
        stdin, kind)."""
        rng = self.rng
        folders = [f for f in view.folders() if not f.ambiguous]
        nodes = view.nodes()
        files = view.files()
        here_files = [f for f in files if self.expected_here(d, f)]
        choices = [("mkdir", 12), ("rename", 10), ("move", 10), ("move-folder", 6), ("mv-f", 5),
                   ("rm", 9), ("set", 4)]
        if allow_content:
            choices += [("import", 18), ("import-tree", 5), ("cp", 6), ("cp-r", 4), ("cp-f", 5)]
            if allow_stdin:
                choices.append(("import-stdin", 6))
        if allow_passwd:
            choices.append(("passwd", 6))
        choices = [(c, WEIGHTS.get(c, w)) for c, w in choices]
        for _ in range(50):
            kind = rng.choices([c for c, _ in choices], [w for _, w in choices])[0]
            r = self.try_command(kind, d, view, folders, nodes, files, here_files)
            if r is not None:
                return r
        return None

    def expected_here(self, d: Device, f: mo.Node) -> bool:
        unit = self.units[f.content.unit]
        return not unit.vanished and all(o in d.whole for o in unit.objects)

    def try_command(self, kind, d, view, folders, nodes, files, here_files):
        rng = self.rng

        def taken(folder):
            return {c.name for c in folder.children}

        def inside(node, folder):
            """folder is node or under it"""
            f = folder
            while f is not None:
                if f is node:
                    return True
                f = f.parent
            return False

        if kind == "mkdir":
            base = rng.choice(folders)
            comps = [rng.choice(FOLDER_NAMES) for _ in range(rng.choice([1, 1, 2]))]
            node = base
            for c in comps:
                node = node.child(c) if node is not None else None
                if node is not None and (not node.is_folder or node.ambiguous):
                    return None
            path = (base.path.rstrip("/") + "/" + "/".join(comps))
            comps_abs = [c for c in path.split("/") if c]
            ops = mo.ops_mkdir_p(view, comps_abs, self.new_id)
            return (f"mkdir -p {q(path)}", ops, [], None, None, kind)
        if kind == "rename":
            if not nodes:
                return None
            node = rng.choice(nodes)
            if node.parent.ambiguous:
                return None
            name = rng.choice(RENAME_NAMES)
            if name in taken(node.parent):
                return None
            dest = node.parent.path.rstrip("/") + "/" + name
            ops = mo.ops_move(view, node, node.parent, name, device=d.label)
            return (f"mv {q(node.path)} {q(dest)}", ops, [], None, None, kind)
        if kind in ("move", "move-folder"):
            # folders into folders make concurrent moves close cycles (FORMAT.md rule 2)
            cands = nodes if kind == "move" else [n for n in nodes if n.is_folder]
            if not cands:
                return None
            node = rng.choice(cands)
            dest = rng.choice(folders)
            if dest is node.parent or (node.is_folder and inside(node, dest)) or node.name in taken(dest):
                return None
            ops = mo.ops_move(view, node, dest, node.name, device=d.label)
            return (f"mv {q(node.path)} {q(dest.path)}", ops, [], None, None, kind)
        if kind == "mv-f":
            if len(files) < 2:
                return None
            src, dst = rng.sample(files, 2)
            if dst.parent.ambiguous:
                return None
            ops = mo.ops_move(view, src, dst.parent, dst.name, replace=dst, device=d.label)
            return (f"mv -f {q(src.path)} {q(dst.path)}", ops, [], None, None, kind)
        if kind == "rm":
            if not nodes:
                return None
            node = rng.choice(nodes)
            ops = mo.ops_remove(view, node)
            return (f"rm {'-r ' if node.is_folder else ''}{q(node.path)}", ops, [], None, None, kind)
        if kind == "set":
            key, value = rng.choice(SETTING_CHOICES)
            return (f"set {key} {q(value)}", [("set", key, value)], [], None, None, kind)
        if kind == "passwd":
            return ("passwd", [], [], None, None, kind)   # filled in by the caller
        if kind == "import":
            folder = rng.choice(folders)
            name = rng.choice(FILE_NAMES)
            data, k = make_content(rng)
            unit = self.new_unit(d)
            hp = self.host_file(name, data)
            content = mo.Content(unit.uid, len(data), k, data)
            ops, final = mo.ops_import_file(folder, name, content, self.new_id)
            vpath = folder.path.rstrip("/") + "/" + final
            return (f"cd {q(folder.path)}; import {q(str(hp))}", ops, [(str(hp), vpath)], unit, None, kind)
        if kind == "import-stdin":
            folder = rng.choice(folders)
            name = rng.choice(FILE_NAMES)
            data, k = make_content(rng)
            unit = self.new_unit(d)
            content = mo.Content(unit.uid, len(data), k, data)
            ops, final = mo.ops_import_file(folder, name, content, self.new_id)
            vpath = folder.path.rstrip("/") + "/" + final
            return (f"cd {q(folder.path)}; import - {q(name)}", ops, [("-", vpath)], unit, data, kind)
        if kind == "import-tree":
            folder = rng.choice(folders)
            dirname = rng.choice(FOLDER_NAMES)
            self.host_counter += 1
            hd = self.host / f"h{self.host_counter}" / dirname
            hd.mkdir(parents=True)
            unit = self.new_unit(d)
            entries = []
            for name in rng.sample(["a.txt", "b.txt", "IMG_1.jpg", "notes", "c.bin"], rng.randrange(1, 4)):
                data, k = make_content(rng)
                (hd / name).write_bytes(data)
                entries.append((name, mo.Content(unit.uid, len(data), k, data)))
            ops, final = mo.ops_import_tree(folder, dirname, entries, self.new_id)
            vdir = folder.path.rstrip("/") + "/" + final
            expect = sorted((str(hd / n), vdir + "/" + n) for n, _ in entries)
            return (f"cd {q(folder.path)}; import {q(str(hd))}", ops, expect, unit, None, kind)
        if kind == "cp":
            if not here_files:
                return None
            src = rng.choice(here_files)
            dest = rng.choice(folders)
            if rng.random() < 0.5 and src.name not in taken(dest):
                name, target = src.name, dest.path
            else:
                name = rng.choice(FILE_NAMES + ["copy.txt"])
                if name in taken(dest):
                    return None
                target = dest.path.rstrip("/") + "/" + name
            unit = self.new_unit(d)
            ops = mo.ops_copy(src, dest, name, unit.uid, self.new_id)
            return (f"cp {q(src.path)} {q(target)}", ops, [], unit, None, kind)
        if kind == "cp-r":
            cands = [f for f in view.folders() if f.path != "/"]
            if not cands:
                return None
            src = rng.choice(cands)
            sub = list(src.descendants())
            if len(sub) > 10 or any(not n.is_folder and not self.expected_here(d, n) for n in sub):
                return None
            dest = rng.choice(folders)
            if inside(src, dest):
                return None
            name = rng.choice(FOLDER_NAMES + ["copy"])
            if name in taken(dest):
                return None
            unit = self.new_unit(d)
            ops = mo.ops_copy(src, dest, name, unit.uid, self.new_id)
            return (f"cp -r {q(src.path)} {q(dest.path.rstrip('/') + '/' + name)}", ops, [], unit, None, kind)
        if kind == "cp-f":
            if not here_files or len(files) < 2:
                return None
            src = rng.choice(here_files)
            dst = rng.choice([f for f in files if f is not src])
            unit = self.new_unit(d)
            ops = mo.ops_copy_onto(src, dst, unit.uid, d.label)
            return (f"cp -f {q(src.path)} {q(dst.path)}", ops, [], unit, None, kind)
        raise AssertionError(kind)

    # -- one invocation of a device's turn

    def act(self, d: Device, n_commands: int, register: bool = False):
        """One invocation: list what the device shows, then `n_commands` random commands. With
        `register`, first the device's name and a setting, in either order (so the name is
        sometimes the device's first write, see test_first_write_names_the_device), and no
        command that writes objects (so that the one new file is its journal)."""
        rng = self.rng
        pre_view = self.view(d)
        passphrases = self.usable_passphrases(d, pre_view)
        passphrase = rng.choice(passphrases)
        exception = not self.present_keys(d) - pre_view.retired_keys
        if exception:
            self.stats["opened with a retired key file (no live one here yet)"] += 1
        date = self.utc_date()
        before = scan(d.path)
        inv = Invocation(start=before.get(d.journal, 0) if d.journal else 0)
        d.invs.append(inv)
        commands = ["ls -alR --json /", "set"]
        if register:
            key, value = rng.choice(SETTING_CHOICES)
            regs = [(f"set {key} {q(value)}", ("set", key, value)),
                    (f"devices name {d.label}", ("devname", d.label))]
            rng.shuffle(regs)
            for cmd, op in regs:
                inv.records.append(mo.Record(self.stamp(d, date), (op,), cmd))
                commands.append(cmd)
        expect_imports = []
        unit = None
        stdin = None
        passwd_pass = None
        retire = None
        for _ in range(n_commands):
            view = self.view(d)
            g = self.gen_command(d, view, allow_content=unit is None and not register,
                                 allow_stdin=stdin is None,
                                 allow_passwd=self.passwd_scenario and passwd_pass is None)
            if g is None:
                continue
            cmd, ops, imports, u, data, kind = g
            if kind == "passwd":
                passwd_pass = self.fresh_passphrase()
                pf = self.n.passphrase_file(passwd_pass)
                cmd = f"passwd --new-passphrase-file {q(str(pf))}"
                # every key file present, and those its records retired that are gone (deleted
                # once every device it knew of had read of them: a device it did not know yet
                # must not take one for live on reading this record, seed 621)
                retire = frozenset(self.present_keys(d, before) | view.retired_keys)
                ops = [("retire_keys", retire)]
            if u is not None:
                unit = u
            if data is not None:
                stdin = data
            commands.append(cmd)
            self.stats[f"command {kind}"] += 1
            expect_imports.extend(imports)
            if ops:
                inv.records.append(mo.Record(self.stamp(d, date), tuple(ops), cmd))
        # and what it shows after them, in the same session: the merge of the records it then
        # holds (FORMAT.md: the vault is a function of the records present, however it got them)
        commands.append("ls -alR --json /")
        what = f"{d.label} invocation {len(d.invs)}"
        self.note(f"{what} (passphrase {passphrase!r}): " + "; ".join(commands))
        res = self.narnia(d, commands, passphrase, stdin)
        after = scan(d.path)
        # The engine never makes a journal shorter than a copy already held: no record this
        # device has read can be missing, and saying so would be a false alarm.
        if any("which this device has read here, " in l and " missing from this copy" in l for l in res.err_lines):
            self.fail(f"{what}: records it read are said to be missing, though no journal shrank" + res.describe())
        if res.rc == 3:
            self.fail(f"{what}: the passphrase {passphrase!r} was refused; FORMAT.md \"Key files\" "
                      f"says it opens this copy: key files present (passphrase) "
                      f"{ {k[:8]: self.keyfiles[k] for k in sorted(self.present_keys(d, before))} }, "
                      f"retired by the records it holds {sorted(k[:8] for k in pre_view.retired_keys)}"
                      + res.describe())
        if res.rc != 0:
            # a command the oracle thought valid failed: first see whether the device showed
            # something else than the oracle thought
            ls_lines = [l for l in res.out_lines if l.startswith("{")]
            if ls_lines:
                self.compare_listing(d, pre_view, ls_lines, what)
            self.fail(f"{what} failed" + res.describe())
        new_keys = self.account(d, before, after, inv, unit, passwd_pass is not None, what)
        if passwd_pass is not None:
            self.keyfiles[new_keys[0]] = passwd_pass
            self.note(f"  passwd: new key file {new_keys[0][:8]}… for {passwd_pass!r}, retires "
                      f"{sorted(k[:8] for k in retire)}")
        if unit is not None:
            self.note(f"  unit {unit.uid}: objects {[o[:11] for o in unit.objects]}")
        self.note(f"  journal {d.journal[:11]}…: {inv.start} -> {inv.end} bytes, "
                  f"{len(inv.records)} records")
        # the listing before the commands, the settings, what the commands said, the listing
        # after them
        lines = res.out_lines
        first = next((i for i, l in enumerate(lines) if not l.startswith("{")), len(lines))
        ls_lines = lines[:first]
        imported = [l for l in lines[first:] if l.startswith("imported ")]
        named = [l for l in lines[first:] if l.startswith("this device is now called ")]
        changed = [l for l in lines[first:] if l == "passphrase changed"]
        set_lines = [l for l in lines[first:] if l[:1] != "{" and l not in imported and l not in named + changed]
        post_lines = [l for l in lines[first:] if l.startswith("{")]
        if register and named != [f"this device is now called {d.label}"]:
            self.fail(f"{what}: naming the device said {named}" + res.describe())
        # the objects its commands deleted were here when it listed
        after_commands, d.whole = d.whole, d.whole | d.deleted
        self.compare_listing(d, pre_view, ls_lines, what)
        d.whole = after_commands
        self.compare_settings(d, pre_view, set_lines, what)
        self.compare_listing(d, self.view(d), post_lines,
                             f"{what}, after its commands (in the same session)")
        warned = [l for l in res.err_lines if l.startswith("narnia: warning:") and "key file" in l]
        if exception and not warned:
            self.fail(f"{what}: opened with the passphrase of a retired key file (no key file that "
                      f"is not retired has arrived) without a warning" + res.describe())
        if not exception and warned:
            self.fail(f"{what}: a warning about key files, though a key file that is not retired "
                      f"is here: {warned}")
        got_imports = sorted((h, mo.nfc(p)) for h, p in (IMPORTED.match(l).groups() for l in imported))
        want_imports = sorted((h, mo.nfc(p)) for h, p in expect_imports)
        if got_imports != want_imports:
            self.fail(f"{what}: import reported {got_imports}, the oracle expected {want_imports}")

    def passphrases_to_refuse(self, d: Device) -> list[str]:
        """The passphrases that must not open `d`'s copy."""
        return sorted(set(self.keyfiles.values()) - set(self.usable_passphrases(d)))

    def key_state(self, d: Device, files: dict[str, int]) -> str:
        """The key files of `files` (`d`'s store) and their retirements, for a failure's text."""
        return (f"the key files present are {sorted(k[:8] for k in self.present_keys(d, files))}, retired in its "
                f"records {sorted(k[:8] for k in self.view(d).retired_keys)}")

    def check_wrong_passphrase(self, d: Device):
        others = self.passphrases_to_refuse(d)
        if others:
            p = self.rng.choice(others)
            self.check_refused(d, p, f"{d.label} (usable: {self.usable_passphrases(d)})")

    def check_refused(self, d: Device, passphrase: str, what: str):
        """`passphrase` must not open d (exit 3), and writes nothing to the store."""
        before = scan(d.path)
        res = self.n.c("ls /", vault=d.path, passphrase=passphrase)
        self.note(f"{what}: passphrase {passphrase!r} must not open it")
        self.stats["passphrases refused"] += 1
        if res.rc != 3:
            self.fail(f"{what}: the passphrase {passphrase!r} should be refused (exit 3): {self.key_state(d, before)}"
                      + res.describe())
        after = scan(d.path)
        changed = [r for r in after if before.get(r) != after[r]]
        if changed:
            self.fail(f"{what}: a refused passphrase wrote to the store: {changed}")
        # Opening reads the journals with the master key before it can tell that the key file
        # is retired, and deletes retired files it finds at open (FORMAT.md "Retirement"):
        # only files no record it holds needs may go.
        self.check_deletions(d, before, after, self.view(d), f"{what} refused open")

    # -- the scenario

    def setup(self):
        rng = self.rng
        n_dev = rng.choice([2, 3, 3])
        d1 = Device("dev1", self.workdir / "dev1")
        self.devices.append(d1)
        p0 = self.fresh_passphrase()
        r = self.n("init", vault=d1.path, passphrase=p0)
        if r.rc != 0:
            self.fail("init failed" + r.describe())
        files = scan(d1.path)
        keys = [f for f in files if "/" not in f and files[f] != INBOX_KEY_SIZE]
        shards = [f for f in files if "/" in f]
        if len(keys) != 1 or len(shards) != 1:
            self.fail(f"init should write one key file and one journal: {files}")
        self.keyfiles[keys[0]] = p0
        d1.journal = shards[0]
        self.journal_owner[d1.journal] = "dev1"
        init_inv = Invocation(0)
        init_inv.end = files[d1.journal]
        d1.invs.append(init_inv)
        self.note(f"dev1: init (passphrase {p0!r}); journal {d1.journal[:11]}… {init_inv.end} bytes")
        self.act(d1, rng.randrange(0, 3), register=True)
        for _ in range(rng.randrange(0, 2)):
            self.act(d1, rng.randrange(1, 4))
        for i in range(2, n_dev + 1):
            d = Device(f"dev{i}", self.workdir / f"dev{i}")
            subprocess.run(["cp", "-a", str(d1.path), str(d.path)], check=True)
            os.chmod(d.path, 0o700)
            d.whole = set(d1.whole)
            self.note_copied(d, d1)
            self.devices.append(d)
            self.note(f"{d.label}: cp -a of dev1")
        for d in self.devices[1:]:
            self.act(d, rng.randrange(0, 3), register=True)
        # what sync engines leave in a store, which narnia must leave alone
        for d in self.devices:
            (d.path / ".stfolder").mkdir()
            junk = {d.path / ".stfolder" / ".stignore": b"",
                    d.path / f".syncthing.{'ab' * 16}.tmp": rng.randbytes(70),
                    d.path / d.journal.split("/")[0] / f"~syncthing~{d.journal.split('/')[1]}.tmp": rng.randbytes(50)}
            for p, data in junk.items():
                p.write_bytes(data)
                self.junk[p] = data

    def play_rounds(self, count: int, check_passphrases: bool):
        """`count` rounds: each device, in a random order, receives some deliveries, is tried
        now and then (`check_passphrases`) with a passphrase that must not open it, and takes
        one or two turns; more deliveries end each round."""
        rng = self.rng
        for rnd in range(count):
            self.note(f"round {rnd + 1}")
            order = list(self.devices)
            rng.shuffle(order)
            for d in order:
                self.deliveries(rng.randrange(0, 5))
                if check_passphrases and rng.random() < 0.25:
                    self.check_wrong_passphrase(d)
                for _ in range(rng.choice([1, 1, 2])):
                    self.turn(d)
            self.deliveries(rng.randrange(0, 7))

    def turn(self, d: Device):
        """One invocation of `d`: a few random commands."""
        self.act(d, self.rng.randrange(1, 5))

    def note_copied(self, d: Device, src: Device):
        """`d` is a `cp -a` of `src`: it holds src's journal as it is now."""
        self.recv[(d.label, src.label)] = scan(src.path)[src.journal]

    def run(self):
        rng = self.rng
        self.note(f"scenario seed {self.seed}: passwd {'on' if self.passwd_scenario else 'off'}")
        self.setup()
        self.play_rounds(rng.randrange(3, 7), check_passphrases=self.passwd_scenario)
        self.deliver_everything()
        self.final_checks()

    def check_full_delivery(self):
        """Everything arrived: every journal whole."""
        for d in self.devices:
            for o in self.devices:
                if o is not d:
                    have = self.recv.get((d.label, o.label), 0)
                    if have < o.invs[-1].end:
                        self.fail(f"full delivery left {d.label} with {have} of {o.invs[-1].end} bytes "
                                  f"of {o.label}'s journal")

    def final_checks(self):
        view = mo.merge(self.all_records())
        listings = {}
        self.check_full_delivery()
        for d in self.devices:
            passphrase = self.rng.choice(self.usable_passphrases(d))
            before = scan(d.path)
            inv = Invocation(before[d.journal])
            d.invs.append(inv)
            what = f"{d.label} after full delivery"
            # every file's content too, last, so that its bytes end the output
            files = [n for n in view.listing() if not n.is_folder]
            lost = [f"{f.path} (unit {f.content.unit})" for f in files if not self.expected_here(d, f)]
            if lost:
                self.fail(f"{what}: files that no device removed have no object on any device "
                          f"(deleted everywhere, or never written): {lost}")
            want_bytes = b"".join(f.content.data for f in files)
            commands = "ls -alR --json /; set; devices --json; verify"
            batch = self.workdir / f"final-{d.label}"
            batch.write_text(commands.replace("; ", "\n") + "\n" +
                             ("cat " + " ".join(q(f.path) for f in files) + "\n" if files else ""))
            self.note(f"{what} (passphrase {passphrase!r}): {commands}; cat every file")
            res = self.n("-b", str(batch), vault=d.path, passphrase=passphrase)
            self.account(d, before, scan(d.path), inv, None, False, what)
            text = res.outb[:len(res.outb) - len(want_bytes)] if res.rc == 0 else res.outb
            lines = text.decode("utf-8", "surrogateescape").splitlines()
            ls_lines = [l for l in lines if l.startswith('{"name"')]
            dev_lines = [json.loads(l) for l in lines if l.startswith('{"id"')]
            verified = [l for l in lines if l.startswith("verified ")]
            set_lines = [l for l in lines if not l.startswith("{") and not l.startswith("verified ")]
            if res.rc != 0 and ls_lines:
                self.compare_listing(d, view, ls_lines, what)
            if res.rc != 0:
                self.fail(f"{what}: failed" + res.describe())
            self.compare_listing(d, view, ls_lines, what)
            self.compare_settings(d, view, set_lines, what)
            if len(verified) != 1 or not verified[0].endswith("all intact"):
                self.fail(f"{what}: verify said {verified}" + res.describe())
            names = sorted((x["name"], x["this_device"]) for x in dev_lines)
            want = sorted((o.label, o is d) for o in self.devices)
            if names != want:
                self.fail(f"{what}: devices --json lists {names}, expected {want}")
            listings[d.label] = "\n".join(ls_lines)
            got_bytes = res.outb[len(res.outb) - len(want_bytes):]
            if got_bytes != want_bytes:
                pos = 0
                for f in files:
                    got = got_bytes[pos:pos + f.content.size]
                    if got != f.content.data:
                        self.fail(f"{what}: cat {f.path} gave other bytes than the oracle "
                                  f"tracked ({len(got)} bytes, expected {f.content.size})")
                    pos += f.content.size
        first = self.devices[0].label
        for label, text in listings.items():
            if text != listings[first]:
                self.fail(f"after full delivery {label} and {first} list different trees:\n"
                          f"{first}:\n{listings[first]}\n{label}:\n{text}")
        for p, data in self.junk.items():
            if not p.is_file() or p.read_bytes() != data:
                self.fail(f"narnia touched a sync engine's file it must leave alone: {p}")


def run_scenario(seed: int, root: Path, binary: Path, scenario=None, rerun="NARNIA_MODEL_SEED",
                 only=None) -> tuple[str | None, collections.Counter]:
    """Runs one scenario (of class `scenario`, by default `Scenario`): (None if it passed, else
    a report with its log, naming the variable `rerun` that runs it alone; what it
    exercised). With `only` (the scenario run alone), its log is printed."""
    workdir = root / f"seed-{seed}"
    if workdir.exists():
        shutil.rmtree(workdir)
    workdir.mkdir(parents=True)
    sc = (scenario or Scenario)(seed, workdir, binary)
    try:
        sc.run()
    except Exception as e:  # noqa: BLE001 - every failure is reported with the log
        detail = str(e) if isinstance(e, ModelFailure) else traceback.format_exc()
        return (f"scenario seed {seed} failed (rerun: {rerun}={seed}):\n{detail}\n"
                f"operation log:\n" + "\n".join(sc.log)), sc.stats
    if ONLY_SEED if only is None else only:
        print("\n".join(sc.log))
    else:
        shutil.rmtree(workdir, ignore_errors=True)   # a failed scenario's directory is kept
    return None, sc.stats


def run_scenarios(seeds: list[int], jobs: int, run) -> collections.Counter:
    """Runs `run(seed)` (`run_scenario`) for every seed, `jobs` at a time; prints what they
    exercised, and fails with the first failure's log. Returns what they exercised."""
    failures = []
    total = collections.Counter()
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for report, stats in pool.map(run, seeds):
            total.update(stats)
            if report is not None:
                failures.append(report)
    elapsed = time.monotonic() - started
    print(f"{len(seeds)} scenarios in {elapsed:.1f} s, {len(failures)} failed; exercised:")
    for key in sorted(total):
        print(f"  {key}: {total[key]}")
    if failures:
        summary = "\n".join(f"  seed {f.split()[2]}: {' '.join(f.splitlines()[1:3])[:220]}"
                            for f in failures)
        pytest.fail(f"{len(failures)} of {len(seeds)} scenarios failed:\n{summary}\n\n"
                    f"the first, with its log:\n\n{failures[0]}", pytrace=False)
    return total


def test_model_scenarios(narnia_bin, tmp_path):
    seeds = [int(ONLY_SEED)] if ONLY_SEED else list(range(FIRST_SEED, FIRST_SEED + SCENARIOS)) + [
        s for s in REGRESSION_SEEDS if not FIRST_SEED <= s < FIRST_SEED + SCENARIOS]
    run_scenarios(seeds, JOBS, lambda s: run_scenario(s, tmp_path, narnia_bin))


def test_first_write_names_the_device(narnia):
    """`devices name NAME` as a copy's very first write names it NAME. (That record also starts
    the device's journal, whose first record names the device by default; both names must not
    carry one stamp, where the byte order of the names would pick the default.)"""
    narnia.init()
    copy = narnia.workdir / "copy"
    subprocess.run(["cp", "-a", str(narnia.vault), str(copy)], check=True)
    r = narnia.ok("devices name aaa-laptop", vault=copy)
    assert "this device is now called aaa-laptop" in r.out, \
        "the first write of a copy, `devices name`, did not name it" + r.describe()
    r = narnia.ok("devices --json", vault=copy)
    mine = [json.loads(l) for l in r.out_lines if json.loads(l)["this_device"]]
    assert [m["name"] for m in mine] == ["aaa-laptop"], \
        "devices --json does not show the name given by the device's first write" + r.describe()


def test_oracle_follows_the_worked_examples():
    """The oracle itself, on the worked examples of FORMAT.md "Merging" (no binary involved)."""
    ids = mo.IdSource()
    seq = iter(range(1, 1000))

    def rec(device, *ops, date="2026-12-01"):
        return mo.Record(mo.Stamp(next(seq), device, date), tuple(ops))

    def paths(records):
        return sorted(n.path for n in mo.merge(records).nodes())

    names = [rec("A", ("devname", "A")), rec("B", ("devname", "laptop-3f2a"))]
    text = {k: mo.Content(i, len(k), "document", k.encode()) for i, k in enumerate("abc")}

    # rule 1: A renames /a.txt to /b.txt while B runs cp -f /c.txt /a.txt
    a, c = ids(), ids()
    base = names + [rec("A", ("mkfile", a, mo.ROOT, "a.txt", text["a"]),
                        ("mkfile", c, mo.ROOT, "c.txt", text["c"]))]
    v = mo.merge(base)
    ra = rec("A", *mo.ops_move(v, v.by_path["/a.txt"], v.root, "b.txt"))
    rb = rec("B", *mo.ops_copy_onto(v.by_path["/c.txt"], v.by_path["/a.txt"], 9))
    merged = mo.merge(base + [rb, ra])
    assert sorted(merged.by_path) == ["/", "/b.txt", "/c.txt"]
    assert merged.by_path["/b.txt"].content.data == b"c"

    # rule 2: A moves /x into /y while B (later) moves /y into /x
    x, y = ids(), ids()
    base = names + [rec("A", ("mkdir", x, mo.ROOT, "x"), ("mkdir", y, mo.ROOT, "y"))]
    v = mo.merge(base)
    ra = rec("A", *mo.ops_move(v, v.by_path["/x"], v.by_path["/y"], "x"))
    rb = rec("B", *mo.ops_move(v, v.by_path["/y"], v.by_path["/x"], "y"))
    assert paths(base + [ra, rb]) == ["/y", "/y/x"]
    assert mo.merge(base + [ra, rb]).skipped == 1

    # rule 3: A runs rm -r /trip while B imports /trip/new.jpg
    trip, old = ids(), ids()
    base = names + [rec("A", ("mkdir", trip, mo.ROOT, "trip"),
                        ("mkfile", old, trip, "old.jpg", text["a"]))]
    v = mo.merge(base)
    ra = rec("A", *mo.ops_remove(v, v.by_path["/trip"]))
    ops, _ = mo.ops_import_file(v.by_path["/trip"], "new.jpg", text["b"], ids)
    rb = rec("B", *ops)
    assert paths(base + [ra, rb]) == ["/trip", "/trip/new.jpg"]
    assert paths(base + [ra]) == []

    # rule 4: both run mkdir -p /photos/2024 and put a file in it
    v = mo.merge(names)
    ra = rec("A", *mo.ops_mkdir_p(v, ["photos", "2024"], ids))
    rb = rec("B", *mo.ops_mkdir_p(v, ["photos", "2024"], ids))
    va, vb = mo.merge(names + [ra]), mo.merge(names + [rb])
    fa = rec("A", *mo.ops_import_file(va.by_path["/photos/2024"], "a.jpg", text["a"], ids)[0])
    fb = rec("B", *mo.ops_import_file(vb.by_path["/photos/2024"], "b.jpg", text["b"], ids)[0])
    merged = mo.merge(names + [ra, rb, fa, fb])
    assert paths(names + [ra, rb, fa, fb]) == ["/photos", "/photos/2024", "/photos/2024/a.jpg",
                                               "/photos/2024/b.jpg"]
    assert len(merged.by_path["/photos/2024"].ids) == 2

    # rule 5: A and B both import IMG_1.jpg into /photos, B a minute later
    photos = ids()
    base = names + [rec("A", ("mkdir", photos, mo.ROOT, "photos"))]
    v = mo.merge(base)
    ra = rec("A", *mo.ops_import_file(v.by_path["/photos"], "IMG_1.jpg", text["a"], ids)[0])
    rb = rec("B", *mo.ops_import_file(v.by_path["/photos"], "IMG_1.jpg", text["b"], ids)[0])
    merged = mo.merge(base + [rb, ra])
    assert paths(base + [ra, rb]) == ["/photos", "/photos/IMG_1 (conflict 2026-12-01 laptop-3f2a).jpg",
                                      "/photos/IMG_1.jpg"]
    assert merged.by_path["/photos/IMG_1.jpg"].content.data == b"a"
    # the names are derived: removing the first gives the next its name back
    v = mo.merge(base + [ra, rb])
    gone = rec("A", *mo.ops_remove(v, v.by_path["/photos/IMG_1.jpg"]))
    assert paths(base + [ra, rb, gone]) == ["/photos", "/photos/IMG_1.jpg"]

    # rule 7: A runs cp -f /b.txt /a.txt and B, later, cp -f /c.txt /a.txt, neither seeing the other
    a, b, c = ids(), ids(), ids()
    base = names + [rec("A", ("mkfile", a, mo.ROOT, "a.txt", text["a"]),
                        ("mkfile", b, mo.ROOT, "b.txt", text["b"]),
                        ("mkfile", c, mo.ROOT, "c.txt", text["c"]))]
    v = mo.merge(base)
    ra = rec("A", *mo.ops_copy_onto(v.by_path["/b.txt"], v.by_path["/a.txt"], 10))
    rb = rec("B", *mo.ops_copy_onto(v.by_path["/c.txt"], v.by_path["/a.txt"], 11))
    merged = mo.merge(base + [rb, ra])
    assert paths(base + [ra, rb]) == ["/a (conflict 2026-12-01 A).txt", "/a.txt", "/b.txt", "/c.txt"]
    assert merged.by_path["/a.txt"].content.data == b"c"
    assert merged.by_path["/a (conflict 2026-12-01 A).txt"].content.data == b"b"
    # a change made after seeing the other replaces it: no copy
    seen = rec("B", *mo.ops_copy_onto(v.by_path["/c.txt"], mo.merge(base + [ra]).by_path["/a.txt"], 12))
    assert paths(base + [ra, seen]) == ["/a.txt", "/b.txt", "/c.txt"]
    # a removal takes what its device saw; new content given meanwhile stays, as a copy
    gone = rec("B", *mo.ops_remove(v, v.by_path["/a.txt"]))
    assert paths(base + [ra, gone]) == ["/a (conflict 2026-12-01 A).txt", "/b.txt", "/c.txt"]
    assert paths(base + [ra, rec("B", *mo.ops_remove(mo.merge(base + [ra]), mo.merge(base + [ra]).by_path["/a.txt"]))]) == ["/b.txt", "/c.txt"]

    # names: extensions, keep-both numbering
    assert mo.split_extension("a.tar.gz") == ("a", ".tar.gz")
    assert mo.split_extension(".profile") == (".profile", "")
    assert mo.conflict_name("notes", "2026-12-01", "d") == "notes (conflict 2026-12-01 d)"
    assert mo.keep_both("a.jpg", {"a.jpg", "a (2).jpg"}) == "a (3).jpg"

"""Model-based test of compaction through `passwd --rotate` (FORMAT.md "Compaction", "Rotating the
master key", "Key files", "Retirement and acknowledgement", "Reading journals"), built on
test_model.py's scenarios (devices, the simulated sync engine, per-invocation checks against
merge_oracle.py).

What it adds to test_model.py:

- A device may run `passwd --rotate --new-passphrase-file F` as the only command of an invocation
  (between a listing before and a listing after, in the same session). Rotations are serialised:
  one is made only once every device has followed the one before and every device holds records
  of every other (so no device is "not known yet" to a compactor: FORMAT.md rule 3's FB-3
  exception, and "two rotations at once", are kept out). Plain `passwd` is not used here.
- A compaction (the rotation, or a device *following* one: its first open with the new
  passphrase) writes new journals, found as the new files in shard folders of a content-free
  invocation (rotating and following invocations run no content command; a following one runs
  only listings). Those new journals form a *group*. Its snapshot holds, as FORMAT.md
  "Compaction" lists it, its device's records, but of its moves and settings only those that
  still win, and beside an item the device created whose place another device's move gave,
  that move under its stamp; plus the rotation's retirement of the key files present. Merged
  with what the compactor had read it gives what its old records did ("Merging the snapshot
  with anything gives what merging the old journals did"). The newest of the new journals (by
  modification time) is the journal the device appends to afterwards.
- Holding records: a device holds every record a device wrote up to a compaction once it holds
  that group's journals or a later group's of the same device (a snapshot stands for every
  record number before it). What a device has read of another (its knowledge) is the number of
  that device's invocations it holds without a gap; each invocation notes what its device had
  read, each group what its compactor had read.
- The engine keeps received lengths per (device, journal). A group is delivered whole and at
  once (its appended journal up to an invocation boundary at or after the compaction's end), and
  only to a device that holds a key file at least as new as the group's key (a journal sealed
  under a key the device's key files lack cannot be read; FORMAT.md "Rotating the master key").
  Later appends to the snapshot journal are delivered as any journal (cut, conflict copies). Now
  and then a delivery takes a compaction first (the newest of them half the time), ahead of the
  journals it stands for and of other devices' records its compactor had read (in some
  scenarios every full delivery does), so later groups of a device arrive before earlier ones
  (and ahead of another device's `cp -f` of a file the compactor created, which the snapshot
  carries: see `snapshot_records`). And now
  and then a retired journal or key file a device deleted is put back (as a restore or a sync
  engine would): its passphrase must be refused, and the next open must delete it again.
- Passphrases: a device opens with the newest key file that FORMAT.md "Key files" says opens it
  (not retired, or the exception) and that holds the key of every journal present; one whose key
  file is absent, retired while a live one is here, or older than a journal present must be
  refused (exit 3). A passphrase of an older live key file beside a newer one (review EK-1's
  reading) is neither used nor required to fail.
- Deletions: a journal may go only when the deleting device holds a retirement of it (a
  compaction of its device retires every journal the device had before, and the group's
  journals but the one appended to; each later snapshot writes every earlier retirement again)
  and, of every device (itself and the compactor included), a record whose knowledge covers
  that retirement's, device by device (its acknowledgement, `Knowledge.covers`); a key file only
  when it holds a rotation that retires it, acknowledged so; an inbox public key file only once
  the device holds a later rotation; objects as in test_model.py. Deletions are counted and
  logged.
- After the full delivery every device that has not followed the last rotation follows it, the
  stores are delivered again, and every device opens once more (acknowledging, deleting what is
  due) before test_model.py's final checks; after them no device may still hold a journal or key
  file that it holds a retirement of and every device has acknowledged.
- The run as a whole (not one seed alone) must have rotated, followed, delivered snapshots,
  among them some that brought records their receiver lacked, deleted journals, and checked
  listings on devices that had deleted another device's journals.

NARNIA_ROTATION_SCENARIOS (default 50) sets how many scenarios run, from
NARNIA_ROTATION_FIRST_SEED (default 1); NARNIA_ROTATION_SEED=N runs only scenario N and prints its
log; NARNIA_ROTATION_JOBS (default 2) runs scenarios in parallel; NARNIA_ROTATION_P (0.2), how
often a device that may rotate does; NARNIA_ROTATION_GROUPS_FIRST (0.3), how often a delivery
takes a compaction first.
"""

from __future__ import annotations

import os
from pathlib import Path

import merge_oracle as mo
import test_model as tm
from harness import q
from test_model import INBOX_KEY_SIZE, Device, Invocation, copies, scan, split_name

SCENARIOS = int(os.environ.get("NARNIA_ROTATION_SCENARIOS", "50"))
FIRST_SEED = int(os.environ.get("NARNIA_ROTATION_FIRST_SEED", "1"))
ONLY_SEED = os.environ.get("NARNIA_ROTATION_SEED")
JOBS = int(os.environ.get("NARNIA_ROTATION_JOBS", "2"))
P_ROTATE = float(os.environ.get("NARNIA_ROTATION_P", "0.2"))
MAX_ROTATIONS = 3
# the engine's tilts: how often a delivery takes a compaction ahead of everything else (and in
# how many scenarios full deliveries do), how often a retired file is put back after one
P_GROUPS_FIRST = float(os.environ.get("NARNIA_ROTATION_GROUPS_FIRST", "0.3"))
P_PUT_BACK = 0.1
# bring a snapshot ahead of the `cp -f` of another device whose content it wrote as its own
# creation's (review FL's product failure): off by default


class Group:
    """The journals one compaction wrote."""

    def __init__(self, gid: int, owner: str, level: int, rotation: bool, sizes: dict[str, int],
                 appended: str, retires: set[str], known: dict[str, int], index: int):
        self.gid = gid
        self.owner = owner
        self.level = level
        self.rotation = rotation
        self.sizes = sizes            # base -> length when written
        self.appended = appended      # the journal its device appends to afterwards
        self.end = sizes[appended]
        self.retires = retires        # journals its last record retires
        # what its device had read when it compacted: of every other device, how many of its
        # invocations (a prefix); of itself, every invocation up to this compaction's (the
        # knowledge of its retirements, FORMAT.md "Retirement and acknowledgement")
        self.known = known
        self.index = index            # the compaction's invocation among its device's
        self.retire_keys: frozenset = frozenset()   # key files a rotation's first record retires
        # every retirement of a journal its device made up to this compaction, with the
        # knowledge it was made with: a snapshot writes each own retirement again
        # (`MergeState.ownSnapshot`), so holding this group is holding all of them
        self.retirements: dict[str, list[dict[str, int]]] = {b: [known] for b in retires}

    @property
    def retires_all(self) -> set[str]:
        """The journals this group's records retire: its own, and every earlier group's of the
        same device."""
        return set(self.retirements)

    def inherit(self, earlier: "Group"):
        for base, ks in earlier.retirements.items():
            self.retirements.setdefault(base, []).extend(k for k in ks if k not in self.retirements.get(base, []))


class RotationScenario(tm.Scenario):
    def __init__(self, seed: int, workdir: Path, binary: Path):
        super().__init__(seed, workdir, binary)
        self.passwd_scenario = False
        self.level = 0                            # rotations made
        self.key_level: dict[str, int] = {}       # key file base -> rotation that wrote it
        self.inbox_level: dict[str, int] = {}     # inbox public key file base -> rotation
        self.journal_level: dict[str, int] = {}   # journal base -> key it is sealed under
        self.jidx: dict[str, int] = {}            # journal base -> index among its device's
        self.group_of: dict[str, Group] = {}      # journal base -> the group that wrote it
        self.groups: list[Group] = []
        self.forced: str | None = None
        self.pending_inbox: list[str] = []
        self.retired_size: dict[str, int] = {}    # journal base -> its length when retired
        self.groups_first = self.rng.random() < P_GROUPS_FIRST   # in full deliveries
        self.inbox_group: dict[str, Group] = {}   # inbox public key file -> group naming its pair
        self.stats["rotation scenarios"] += 1

    # -- device state kept beside test_model's Device

    @staticmethod
    def lv(d: Device) -> int:
        return d.__dict__.setdefault("level", 0)

    @staticmethod
    def gone(d: Device) -> set:
        return d.__dict__.setdefault("gone", set())

    def register_journal(self, d: Device, base: str, level: int):
        self.journal_owner[base] = d.label
        self.journal_level.setdefault(base, level)
        if base not in self.jidx:
            self.jidx[base] = sum(1 for b, o in self.journal_owner.items() if o == d.label and b in self.jidx)

    # -- which records a device holds

    def groups_of(self, owner: str) -> list[Group]:
        return [g for g in self.groups if g.owner == owner]

    def group_files_held(self, d: Device, g: Group) -> bool:
        """d has received every journal g wrote, as long as it was written."""
        return all(self.recv.get((d.label, b), 0) >= size for b, size in g.sizes.items())

    def latest_group_held(self, d: Device, owner: str) -> Group | None:
        """The latest compaction of `owner` whose records d holds: a snapshot stands for every
        record its device wrote before it (FORMAT.md "Compaction"), so holding a group is a
        matter of records, not of files (review FJ-1)."""
        gs = self.groups_of(owner)
        if d.label == owner:
            return gs[-1] if gs else None
        return next((g for g in reversed(gs) if self.group_files_held(d, g)), None)

    def group_held(self, d: Device, g: Group) -> bool:
        """d holds every record g.owner wrote up to g: g's journals, or a later group's."""
        top = self.latest_group_held(d, g.owner)
        return top is not None and top.gid >= g.gid

    def note_copied(self, d: Device, src: Device):
        self.recv[(d.label, src.journal)] = scan(src.path)[src.journal]

    def held_mask(self, d: Device, o: Device) -> list[bool]:
        """For each invocation of o, whether d holds its records: every one up to the latest
        group of o d holds, and after it those whose journal d has received far enough."""
        if d is o:
            return [True] * len(o.invs)
        top = self.latest_group_held(d, o.label)
        upto = top.index if top is not None else -1
        out = []
        for i, inv in enumerate(o.invs):
            if i <= upto:
                out.append(True)
            elif getattr(inv, "group", None) is not None:
                out.append(False)       # a group d does not hold (else `top` would be it)
            else:
                j = getattr(inv, "journal", None) or o.journal
                out.append(inv.end is not None and self.recv.get((d.label, j), 0) >= inv.end)
        return out

    def received_invocations(self, d: Device, o: Device) -> list[Invocation]:
        return [inv for inv, held in zip(o.invs, self.held_mask(d, o)) if held]

    def known_prefix(self, d: Device, o: Device) -> int:
        """How many of o's invocations d has read without a gap: the model's image of narnia's
        knowledge (`Knowledge`: for each device, the highest record number reached without a
        gap). Cuts fall only at invocation boundaries or inside an invocation's first record,
        so a record number falls between two invocations' the same way on both sides."""
        n = 0
        for held in self.held_mask(d, o):
            if not held:
                break
            n += 1
        return n

    def knowledge(self, d: Device) -> dict[str, int]:
        """What d's next record will say it has read of every other device."""
        return {o.label: self.known_prefix(d, o) for o in self.devices if o is not d}

    def records_of(self, d: Device) -> list[mo.Record]:
        """The records d holds: of each other device, those of the journals it received, and
        the snapshots of the compactions whose journals it received (a snapshot is not its
        device's old records word for word: `snapshot_records`)."""
        seen, out = set(), []
        for o in self.devices:
            for inv in self.files_read(d, o):
                for r in list(inv.records) + list(getattr(inv, "snapshot", None) or []):
                    if id(r) not in seen:
                        seen.add(id(r))
                        out.append(r)
        return out

    def files_read(self, d: Device, o: Device) -> list[Invocation]:
        """o's invocations whose own journal bytes d holds (a group's: all its journals)."""
        if d is o:
            return o.invs
        out = []
        for inv in o.invs:
            g = getattr(inv, "group", None)
            if g is not None:
                ok = self.group_files_held(d, g)
            else:
                j = getattr(inv, "journal", None) or o.journal
                ok = inv.end is not None and self.recv.get((d.label, j), 0) >= inv.end
            if ok:
                out.append(inv)
        return out

    def foreign_contents(self, d: Device, view: mo.View, created: dict) -> list[mo.Record]:
        """The `set content` records of other devices that gave the content in force of a file
        d created: its snapshot writes each beside the creation, under its stamp (review FL:
        it wrote the content as the creation's, under the creation's stamp, and a device
        holding both that and the old journals' creation showed either, as object identifiers
        fell)."""
        out = []
        for node in view.files():
            unit = self.units[node.content.unit]
            if unit.device == d.label or not any(i in created for i in node.ids):
                continue
            for r in (r for inv in self.dev(unit.device).invs for r in inv.records):
                ops = tuple(op for op in r.ops if op[0] == "setcontent" and op[1] in node.ids and op[2].unit == unit.uid)
                if ops:
                    out.append(mo.Record(r.stamp, ops, "(another device's content, carried by the snapshot)"))
                    self.stats["contents of another device carried by a snapshot"] += 1
        return out

    def snapshot_records(self, d: Device, view: mo.View, held: list[mo.Record]) -> list[mo.Record]:
        """What d's snapshot holds, as FORMAT.md "Compaction" lists it: d's records, but of its
        moves and settings only those that still win (a `move` of an item whose place in force
        another device gave, a `set` another device's replaced, is dropped), and, beside an
        item d created whose place in force another device's move gave, that move under its
        stamp (review FJ-3), and beside a file d created whose content in force another device's
        `cp -f` gave, that `set content` under its stamp (review FL). Merged with what d had
        read, it gives what d's records did; a device that reads it ahead of what d had read
        sees the places d saw, and those contents."""
        own = [r for inv in d.invs for r in inv.records]
        winning_set: dict[str, mo.Stamp] = {}
        for r in held:
            for op in r.ops:
                if op[0] == "set" and (op[1] not in winning_set or winning_set[op[1]] < r.stamp):
                    winning_set[op[1]] = r.stamp

        def still_wins(op, stamp) -> bool:
            if op[0] == "move":
                p = view.registers.get(op[1])
                return p is None or p.stamp == stamp
            if op[0] == "set":
                return winning_set.get(op[1]) == stamp
            return True

        out, created = [], {}
        for r in own:
            ops = tuple(op for op in r.ops if still_wins(op, r.stamp))
            if ops:
                out.append(r if len(ops) == len(r.ops) else mo.Record(r.stamp, ops, r.command))
            for op in r.ops:
                if op[0] in ("mkdir", "mkfile"):
                    created.setdefault(op[1], (r.stamp, op[0]))
        out += self.foreign_contents(d, view, created)
        for i, (stamp, kind) in sorted(created.items()):
            p = view.registers.get(i)
            if p is None or p.stamp == stamp or p.stamp.device == d.label:
                continue
            if kind == "mkfile" and i in view.removed:
                continue    # a removed file keeps only its own place once its object may go
            out.append(mo.Record(p.stamp, (("move", i, p.parent, p.name, p.from_parent, p.from_name),),
                                 "(another device's move, carried by the snapshot)"))
            self.stats["moves of another device carried by a snapshot"] += 1
        return out

    def describe_received(self, d: Device) -> str:
        parts = []
        for o in self.devices:
            if o is d:
                continue
            js = [f"{b[:11]} {self.recv.get((d.label, b), 0)}" for b in sorted(self.jidx, key=self.jidx.get)
                  if self.journal_owner[b] == o.label]
            parts.append(f"{o.label}: {len(self.received_invocations(d, o))}/{len(o.invs)} invocations "
                         f"(journals {', '.join(js)})")
        return f"\n  {d.label} holds of the other journals: " + "; ".join(parts)

    # -- passphrases

    def journal_level_here(self, files: dict[str, int]) -> int:
        return max((self.journal_level.get(split_name(r)[0], 0) for r in files
                    if "/" in r and split_name(r)[0] in self.journal_owner), default=0)

    def policy(self, d: Device, files=None, view=None) -> list[str]:
        """The passphrases this copy must open with: the newest usable key file that holds the
        key of every journal present."""
        files = scan(d.path) if files is None else files
        view = view or self.view(d)
        usable = mo.key_files_usable(self.present_keys(d, files), view.retired_keys)
        need = self.journal_level_here(files)
        cands = [k for k in usable if self.key_level.get(k, 0) >= need]
        if not cands:
            return []
        top = max(self.key_level.get(k, 0) for k in cands)
        return sorted({self.keyfiles[k] for k in cands if self.key_level.get(k, 0) == top})

    def passphrases_to_refuse(self, d: Device) -> list[str]:
        files = scan(d.path)
        view = self.view(d)
        present = self.present_keys(d, files)
        live = present - view.retired_keys
        need = self.journal_level_here(files)
        out = set()
        for k, p in self.keyfiles.items():
            if k not in present or (k in view.retired_keys and live) or self.key_level.get(k, 0) < need:
                out.add(p)
        return sorted(out - set(self.policy(d, files, view)))

    def usable_passphrases(self, d: Device, view: mo.View | None = None) -> list[str]:
        if self.forced is not None:
            return [self.forced]
        return self.policy(d, None, view)

    def key_state(self, d: Device, files: dict[str, int]) -> str:
        return (f"key files present {({k[:8]: (self.keyfiles.get(k), self.key_level.get(k)) for k in sorted(self.present_keys(d, files))})}, "
                f"retired in its records {sorted(k[:8] for k in self.view(d).retired_keys)}, "
                f"journals need key {self.journal_level_here(files)}")

    # -- deletions

    @staticmethod
    def covers(read: dict[str, int], known: dict[str, int], writer: str) -> bool:
        """A record of `writer` that had read `read` covers a retirement made knowing `known`,
        device by device (`Knowledge.covers`); of itself a device has read every record."""
        return all(read.get(o, 0) >= n for o, n in known.items() if o != writer)

    def acked(self, d: Device, f: Device, known: dict[str, int]) -> bool:
        """d holds a record of f that covers a retirement made knowing `known` (f's
        acknowledgement of it; d's own is its next record, written at this open). An
        invocation with bytes wrote a record; a compaction's (start 0) always did, and its
        snapshot's records carry what its device had read (review FJ-9)."""
        if f is d:
            return self.covers(self.knowledge(d), known, d.label)
        return any(inv.end is not None and inv.end > inv.start and self.covers(inv.known, known, f.label)
                   for inv in self.received_invocations(d, f))

    def unacknowledged(self, d: Device, known: dict[str, int]) -> list[str]:
        """The devices whose acknowledgement of a retirement made knowing `known` d lacks."""
        return [f.label for f in self.devices if not self.acked(d, f, known)]

    def journal_deletion_refused(self, d: Device, base: str) -> str | None:
        """Why d may not delete the journal `base` yet, or None when it may: d holds a
        retirement of it (one of the latest group of its device that d holds: each snapshot
        writes every earlier retirement again) that every device has acknowledged."""
        owner = self.journal_owner[base]
        top = self.latest_group_held(d, owner)
        if top is None or base not in top.retires_all:
            later = [g.gid for g in self.groups_of(owner) if base in g.retires_all]
            return (f"{d.label} holds no compaction that retires it" +
                    (f" (groups {later} do, up to group {top.gid if top else None} held)" if later else ""))
        why = []
        for known in top.retirements[base]:
            missing = self.unacknowledged(d, known)
            if not missing:
                return None
            why.append(f"no acknowledgement from {missing} of its retirement knowing {known}")
        return f"{d.label} holds group {top.gid} of {owner}, but " + "; ".join(why)

    def key_deletion_refused(self, d: Device, key: str) -> str | None:
        """Why d may not delete the key file `key` yet, or None when it may: a rotation d holds
        retires it and every device has acknowledged that (FORMAT.md "Key files": "deleted
        once every device has heard"). The retirement is the rotation's first record, made
        knowing what the compaction that follows it knew, and delivered with it."""
        rotations = [g for g in self.groups if key in g.retire_keys and self.group_held(d, g)]
        if not rotations:
            return f"{d.label} holds no rotation that retires it"
        why = []
        for g in rotations:
            missing = self.unacknowledged(d, g.known)
            if not missing:
                return None
            why.append(f"no acknowledgement of rotation {g.level} (group {g.gid}) from {missing}")
        return "; ".join(why)

    @staticmethod
    def restored(d: Device) -> dict[str, str]:
        """Retired files put back into d (rel path -> journal or key file) since its last open."""
        return d.__dict__.setdefault("restored", {})

    def check_deletions(self, d: Device, before, after, view: mo.View, what: str):
        allowed = set()
        journals, keys = set(), set()
        for r in before:
            if r in after:
                continue
            base = split_name(r)[0]
            if base in self.journal_owner:
                why = self.journal_deletion_refused(d, base)
                if why:
                    self.fail(f"{what}: narnia deleted a journal (or a copy of one) not due for deletion: "
                              f"{r} (journal of {self.journal_owner[base]}): {why}" + self.describe_received(d))
                allowed.add(r)
                journals.add(base)
            elif "/" not in r and before[r] == INBOX_KEY_SIZE:
                lvl = self.inbox_level.get(base, 0)
                if not any(g.level >= max(1, lvl) and self.group_held(d, g) for g in self.groups):
                    self.fail(f"{what}: narnia deleted the inbox public key file {r} (of key {lvl}), "
                              f"though it holds no compaction under that key or a later one")
                allowed.add(r)
                self.gone(d).add(base)
            elif "/" not in r:
                why = self.key_deletion_refused(d, base)
                if why:
                    self.fail(f"{what}: narnia deleted the key file {r} ({self.keyfiles.get(base)!r}) before "
                              f"every device had heard of its retirement: {why}" + self.describe_received(d))
                keys.add(base)
        self.note_deleted(d, journals, "journals", "journals deleted")
        self.note_deleted(d, keys, "retired key files", "retired key files deleted")
        super().check_deletions(d, {r: s for r, s in before.items() if r not in allowed}, after, view, what)
        self.check_restored_deleted_again(d, after, what)

    def note_deleted(self, d: Device, bases: set[str], what: str, stat: str):
        """Counts and logs deletions (review FJ-4); a file put back and deleted again apart."""
        again = {b for b in bases if b in self.gone(d)}
        first = bases - again
        self.gone(d).update(bases)
        if first:
            self.stats[stat] += len(first)
            self.note(f"  {d.label} deleted {what} {[b[:11] for b in sorted(first, key=self.logical)]}")
        if again:
            self.stats["retired files put back and deleted again"] += len(again)
            self.note(f"  {d.label} deleted again {what} {[b[:11] for b in sorted(again)]}")

    def check_restored_deleted_again(self, d: Device, after, what: str):
        """A retired file that reappears is deleted again (FORMAT.md "Retirement and
        acknowledgement"): at the next open, which a refused passphrase is not."""
        if what.endswith("refused open"):
            return
        left = [r for r in self.restored(d) if r in after]
        self.restored(d).clear()
        if left:
            self.fail(f"{what}: a retired file put back (as a restore or a sync engine would) was not "
                      f"deleted again at the next open: {left}")

    def check_due_deletions(self):
        """After the last opens: no journal or key file is left that a record every device has
        acknowledged retires (review FJ-4: a product that never deleted passed)."""
        for d in self.devices:
            files = scan(d.path)
            for r in sorted(files):
                base = split_name(r)[0]
                if base in self.journal_owner and base != d.journal and not self.journal_deletion_refused(d, base):
                    self.fail(f"{d.label}: the journal {r} of {self.journal_owner[base]} is left, though "
                              f"every device has acknowledged a retirement of it that {d.label} holds"
                              + self.describe_received(d))
            for k in sorted(self.present_keys(d, files)):
                if not self.key_deletion_refused(d, k):
                    self.fail(f"{d.label}: the key file {k} ({self.keyfiles.get(k)!r}) is left, though "
                              f"every device has acknowledged its retirement: {self.key_state(d, files)}")

    # -- the engine

    def logical(self, base: str) -> tuple:
        if base in self.journal_owner:
            return (0, self.journal_owner[base], self.jidx.get(base, 0))
        if base in self.inbox_level:
            return (4, f"{list(self.inbox_level).index(base):06d}", 0)
        return super().logical(base)

    def holds_key(self, files: dict[str, int], d: Device, level: int) -> bool:
        return any(self.key_level.get(k, 0) >= level for k in self.present_keys(d, files))

    def candidates(self, files):
        out = []
        for c in super().candidates(files):
            kind, s, d, base = c
            if base in self.gone(d):
                continue       # the engine carries no file back to a device that deleted it
            if kind == "key" and base in self.inbox_group and not self.group_held(d, self.inbox_group[base]):
                # FORMAT.md "The inbox": a public file that arrives before the record of its pair
                # is reported and deleted as planted (the device that made it writes it again);
                # the engine here brings it after that record
                continue
            if kind == "journal":
                if not self.holds_key(files[d], d, self.journal_level.get(base, 0)):
                    continue
                g = self.group_of.get(base)
                if g is not None and not self.group_held(d, g):
                    if not all(max(copies(files[s], b).values(), default=0) >= size for b, size in g.sizes.items()):
                        continue
            out.append(c)
        return out

    full_delivery_passes = 12

    def needs_delivery(self, kind: str, s: Device, d: Device, base: str) -> bool:
        g = self.group_of.get(base) if kind == "journal" else None
        if g is not None and not self.group_held(d, g):
            return self.holds_key(scan(d.path), d, g.level)
        return super().needs_delivery(kind, s, d, base)

    def cut_points(self, o: Device, base: str, lo: int, hi: int) -> tuple[list[int], list[int]]:
        bounds, inside = [], []
        for inv in o.invs:
            if inv.end is None or getattr(inv, "group", None) is not None or \
                    (getattr(inv, "journal", None) or o.journal) != base:
                continue
            if lo < inv.end <= hi:
                bounds.append(inv.end)
            for r in range(1, min(tm.MIN_RECORD, inv.end - inv.start)):
                p = inv.start + r
                if lo < p <= hi and p < inv.end:
                    inside.append(p)
        return bounds, inside

    def received_key(self, d: Device, owner: Device, base: str) -> tuple[str, str]:
        return (d.label, base)

    def deliver_one(self, kind: str, s: Device, d: Device, base: str, whole: bool = False):
        g = self.group_of.get(base) if kind == "journal" else None
        if g is not None and not self.group_held(d, g):
            return self.deliver_group(s, d, g, whole)
        return super().deliver_one(kind, s, d, base, whole)

    def deliver_group(self, s: Device, d: Device, g: Group, whole: bool):
        owner = self.dev(g.owner)
        had = self.held_mask(d, owner)
        sf = scan(s.path)
        for b in sorted(g.sizes, key=self.jidx.get):
            src_rel, ls = max(copies(sf, b).items(), key=lambda t: (t[1], t[0]))
            p = g.sizes[b]
            if b == g.appended:
                ends = [g.end] + [inv.end for inv in owner.invs if getattr(inv, "journal", None) == b
                                  and getattr(inv, "group", None) is None and inv.end is not None
                                  and g.end < inv.end <= ls]
                p = max(ends) if whole else self.rng.choice(ends)
            data = (s.path / src_rel).read_bytes()[:p]
            self.write(d, b, data)
            self.recv[(d.label, b)] = max(self.recv.get((d.label, b), 0), p)
        self.stats["compactions delivered"] += 1
        # the snapshot's equivalence is exercised only where it brings records of its device
        # that d did not hold (its old journals cut, late, or deleted), review FJ-5
        brought = [r for inv, held in zip(owner.invs[:g.index], had) if not held for r in inv.records]
        self.stats["compactions delivered that brought records not held"] += bool(brought)
        self.note(f"  deliver {g.owner}'s compaction (group {g.gid}, {len(g.sizes)} journals) "
                  f"{s.label} -> {d.label}" + (f", bringing {len(brought)} records of {g.owner} it lacked"
                                                 if brought else ""))

    def deliveries(self, count: int):
        """test_model's deliveries, tilted: now and then a compaction goes first, ahead of
        journals (of its device, or of others it had read) that it depends on, the newest
        first half of the time, so a later group of a device often arrives before an earlier
        one (reviews FJ-1, FJ-13); and now and then a retired file a device deleted is put back
        (review FJ-14)."""
        rng = self.rng
        for _ in range(count):
            files = {d: scan(d.path) for d in self.devices}
            cands = self.candidates(files)
            if not cands:
                return
            groups = [c for c in cands if self.group_candidate(c) is not None]
            if groups and rng.random() < P_GROUPS_FIRST:
                if rng.random() < 0.5:
                    newest = max(self.group_candidate(c).gid for c in groups)
                    groups = [c for c in groups if self.group_candidate(c).gid == newest]
                self.stats["compactions delivered first"] += 1
                self.deliver_one(*rng.choice(groups))
            else:
                self.deliver_one(*rng.choice(cands))
            if rng.random() < P_PUT_BACK:
                self.put_back_retired(files)

    def group_candidate(self, c) -> Group | None:
        """The compaction a candidate delivery brings whole (a group its receiver lacks)."""
        kind, s, d, base = c
        g = self.group_of.get(base) if kind == "journal" else None
        return g if g is not None and not self.group_held(d, g) else None

    def deliver_everything(self):
        """test_model's full delivery; in some scenarios compactions go first in each pass."""
        self.note("full delivery" + (" (compactions first)" if self.groups_first else ""))
        for _ in range(self.full_delivery_passes):
            files = {d: scan(d.path) for d in self.devices}
            cands = self.candidates(files)
            if not cands:
                return
            if self.groups_first:
                cands.sort(key=lambda c: self.group_candidate(c) is None)
            for kind, s, d, base in cands:
                if self.needs_delivery(kind, s, d, base):
                    self.deliver_one(kind, s, d, base, whole=True)

    def put_back_retired(self, files):
        """Puts a retired journal or key file that a device deleted back into it, from another
        device that still holds it, as a restore or a sync engine would. A journal only as
        long as the compaction that retired it read it (a longer or other version holds
        records no retirement read, and is kept); checked at the device's next open."""
        cands = []
        for d in self.devices:
            for base in sorted(self.gone(d), key=self.logical):
                if base in self.journal_owner:
                    want = self.retired_size.get(base)
                elif base in self.keyfiles:
                    want = None
                else:
                    continue
                for s in self.devices:
                    size = files[s].get(base)
                    if s is not d and size is not None and (want is None or size == want) and base not in files[d]:
                        cands.append((s, d, base))
                        break
        if not cands:
            return
        s, d, base = self.rng.choice(cands)
        self.write(d, base, (s.path / base).read_bytes())
        self.restored(d)[base] = "journal" if base in self.journal_owner else "key file"
        self.stats["retired files put back"] += 1
        self.note(f"  put back {self.restored(d)[base]} {base[:11]}… (deleted there) {s.label} -> {d.label}")
        if base in self.keyfiles:
            self.check_refused(d, self.keyfiles[base], f"{d.label} with its retired key file {base[:8]}… put back")

    def account(self, d, before, after, inv, unit, passwd, what):
        """test_model's check, but an inbox public key file may appear at any open: the public
        file of the pair in force written again where it is missing, or a pair that only records
        under a replaced key hold replaced (FORMAT.md "The inbox", "Rotating the master key")."""
        inbox = [r for r in after if r not in before and "/" not in r and after[r] == INBOX_KEY_SIZE]
        for r in inbox:
            base = split_name(r)[0]
            if base in self.inbox_level:
                self.stats["inbox public files written again"] += 1
            else:
                self.inbox_level[base] = self.lv(d)
                self.stats["inbox pairs replaced at an ordinary open"] += 1
                self.note(f"  {d.label} wrote a new inbox public key file {base[:8]}…")
        view_after = {r: s for r, s in after.items() if r not in inbox}
        if inv is not None and not hasattr(inv, "known"):
            inv.known = self.knowledge(d)      # nothing arrives during an invocation
        return super().account(d, before, view_after, inv, unit, passwd, what)

    # -- invocations

    def pass_level(self, p: str) -> int:
        return max(self.key_level.get(k, 0) for k, v in self.keyfiles.items() if v == p)

    def act(self, d: Device, n_commands: int, register: bool = False):
        pol = self.policy(d)
        if not pol:
            self.fail(f"{d.label}: the model finds no passphrase that opens it: key files "
                      f"{ {k[:8]: self.keyfiles.get(k) for k in sorted(self.present_keys(d))} }")
        p = self.rng.choice(pol)
        level = self.pass_level(p)
        if level > self.lv(d):
            return self.compact_act(d, p, rotate=False)
        self.forced = p
        try:
            super().act(d, n_commands, register)
        finally:
            self.forced = None
        inv = d.invs[-1]
        inv.journal = d.journal
        self.register_journal(d, d.journal, self.lv(d))

    def everyone_knows_everyone(self) -> bool:
        return all(self.received_invocations(a, b) for a in self.devices for b in self.devices if a is not b)

    def can_rotate(self, d: Device) -> bool:
        return (self.level < MAX_ROTATIONS and all(self.lv(o) == self.level for o in self.devices)
                and self.everyone_knows_everyone())

    def turn(self, d: Device):
        if self.can_rotate(d) and self.rng.random() < P_ROTATE:
            pol = self.policy(d)
            if pol and self.pass_level(pol[0]) == self.lv(d):
                return self.compact_act(d, self.rng.choice(pol), rotate=True)
        self.act(d, self.rng.randrange(1, 5))

    def compact_act(self, d: Device, passphrase: str, rotate: bool):
        """A rotation (`passwd --rotate` as the only command), or the first open with a newer
        rotation's passphrase (following it): listings only besides."""
        rng = self.rng
        pre_view = self.view(d)
        level = self.level + 1 if rotate else self.pass_level(passphrase)
        known = self.knowledge(d)
        held_records = self.records_of(d)
        date = self.utc_date()
        before = scan(d.path)
        inv = Invocation(start=0)
        inv.known = known
        d.invs.append(inv)
        commands = ["ls -alR --json /", "set"]
        new_pass = retire = None
        if rotate:
            new_pass = self.fresh_passphrase()
            pf = self.n.passphrase_file(new_pass)
            cmd = f"passwd --rotate --new-passphrase-file {q(str(pf))}"
            commands.append(cmd)
            retire = frozenset(self.present_keys(d, before) | pre_view.retired_keys)
            inv.records.append(mo.Record(self.stamp(d, date), (("retire_keys", retire),), cmd))
            self.stats["rotations"] += 1
        else:
            self.stats["followings"] += 1
        commands.append("ls -alR --json /")
        what = f"{d.label} invocation {len(d.invs)} ({'rotation' if rotate else f'following rotation {level}'})"
        self.note(f"{what} (passphrase {passphrase!r}): " + "; ".join(commands))
        res = self.narnia(d, commands, passphrase)
        after = scan(d.path)
        if any("which this device has read here, " in l and " missing from this copy" in l for l in res.err_lines):
            self.fail(f"{what}: records it read are said to be missing, though no journal shrank" + res.describe())
        if res.rc != 0:
            ls_lines = [l for l in res.out_lines if l.startswith("{")]
            if ls_lines:
                self.compare_listing(d, pre_view, ls_lines, what)
            self.fail(f"{what} failed" + res.describe())
        # the new files: journals (shard folders), and for a rotation its key and inbox files
        shrunk = [r for r in after if r in before and after[r] < before[r]]
        if shrunk:
            self.fail(f"{what}: files shrank: {shrunk}")
        mine = {b for b, o in self.journal_owner.items() if o == d.label}
        grown = [r for r in after if r in before and after[r] > before[r] and split_name(r)[0] not in mine]
        if grown:
            self.fail(f"{what}: files other than {d.label}'s journals grew: {grown}")
        # an acknowledgement (or the rotation's first record) appended to the journal it then
        # retires, before the snapshot: an invocation of its own in that journal, without records
        for r in sorted(r for r in after if r in before and after[r] > before[r]):
            ack = Invocation(start=before[r])
            ack.end = after[r]
            ack.journal = split_name(r)[0]
            ack.known = known
            d.invs.insert(len(d.invs) - 1, ack)
            self.note(f"  {d.label}'s journal {r[:11]}… grew first: {before[r]} -> {after[r]} bytes")
        new_top = [r for r in after if r not in before and "/" not in r]
        new_shard = [r for r in after if r not in before and "/" in r]
        if any(split_name(r)[1] for r in new_shard + new_top):
            self.fail(f"{what}: narnia wrote a file with a conflict name: {new_shard + new_top}")
        if not new_shard:
            self.fail(f"{what}: no new journal (FORMAT.md: the device writes its records anew, as a "
                      f"snapshot journal)")
        keys = [r for r in new_top if after[r] != INBOX_KEY_SIZE]
        # an inbox public file of a pair in force written again where it was missing is no new pair
        inboxes = [r for r in new_top if after[r] == INBOX_KEY_SIZE and split_name(r)[0] not in self.inbox_level]
        if len(inboxes) < len([r for r in new_top if after[r] == INBOX_KEY_SIZE]):
            self.stats["inbox public files written again"] += 1
        if rotate and (len(keys) != 1 or len(inboxes) != 1):
            self.fail(f"{what}: passwd --rotate should write one key file and one inbox public key "
                      f"file; new: {new_top}")
        if not rotate and keys:
            self.fail(f"{what}: following a rotation wrote a key file: {keys}")
        if not rotate and inboxes:
            # the inbox pair in force is only in records under the replaced key (the rotation's
            # new pair has not arrived): replaced at open (FORMAT.md "Rotating the master key")
            if len(inboxes) != 1:
                self.fail(f"{what}: following wrote several inbox public key files: {inboxes}")
            self.inbox_level[inboxes[0]] = level
            self.pending_inbox.append(inboxes[0])
            self.stats["inbox pairs replaced by a following"] += 1
        if rotate:
            self.level = level
            self.keyfiles[keys[0]] = new_pass
            self.key_level[keys[0]] = level
            self.inbox_level[inboxes[0]] = level
            self.pending_inbox.append(inboxes[0])
            self.note(f"  rotation {level}: key file {keys[0][:8]}… for {new_pass!r}, inbox "
                      f"{inboxes[0][:8]}…, retires key files {sorted(k[:8] for k in retire)}")
        newest = max(new_shard, key=lambda r: ((d.path / r).stat().st_mtime_ns, after[r], r))
        retires = {b for b in mine if b not in self.gone(d)} | (set(new_shard) - {newest})
        for r in sorted(new_shard, key=lambda r: ((d.path / r).stat().st_mtime_ns, r)):
            self.register_journal(d, r, level)
        index = d.invs.index(inv)
        earlier = self.groups_of(d.label)
        g = Group(len(self.groups) + 1, d.label, level, rotate, {r: after[r] for r in new_shard}, newest, retires,
                  dict(known, **{d.label: index + 1}), index)
        if earlier:
            g.inherit(earlier[-1])
        if rotate:
            g.retire_keys = retire
        for b in retires & set(after):
            self.retired_size.setdefault(b, after[b])
        self.groups.append(g)
        for r in new_shard:
            self.group_of[r] = g
        for b in self.pending_inbox:
            self.inbox_group[split_name(b)[0]] = g
        self.pending_inbox = []
        d.journal = newest
        inv.journal = newest
        inv.end = after[newest]
        inv.group = g
        inv.snapshot = self.snapshot_records(d, pre_view, held_records)
        d.__dict__["level"] = level
        self.note(f"  compaction (group {g.gid}): new journals {[(r[:11], after[r]) for r in new_shard]}, "
                  f"appends to {newest[:11]}…; retires {sorted(b[:11] for b in retires)}")
        self.check_deletions(d, before, after, self.view(d), what)
        # the listing before, the settings, the listing after (in the same session)
        lines = res.out_lines
        first = next((i for i, l in enumerate(lines) if not l.startswith("{")), len(lines))
        ls_lines = lines[:first]
        rest = lines[first:]
        changed = [l for l in rest if l.startswith("passphrase changed")]
        set_lines = [l for l in rest if l[:1] != "{" and l not in changed]
        post_lines = [l for l in rest if l.startswith("{")]
        if rotate and changed != ["passphrase changed; new master key"]:
            self.fail(f"{what}: passwd --rotate said {changed}" + res.describe())
        after_commands, d.whole = d.whole, d.whole | d.deleted
        self.compare_listing(d, pre_view, ls_lines, what)
        d.whole = after_commands
        self.compare_settings(d, pre_view, set_lines, what)
        self.compare_listing(d, self.view(d), post_lines, f"{what}, after it (in the same session)")

    # -- the scenario

    def setup(self):
        super().setup()
        for d in self.devices:
            for inv in d.invs:
                if getattr(inv, "journal", None) is None:
                    inv.journal = d.journal
                if not hasattr(inv, "known"):
                    inv.known = {}
            self.register_journal(d, d.journal, 0)
        for k in self.keyfiles:
            self.key_level.setdefault(k, 0)
        for r, size in scan(self.devices[0].path).items():
            if "/" not in r and size == INBOX_KEY_SIZE:
                self.inbox_level.setdefault(split_name(r)[0], 0)

    def run(self):
        rng = self.rng
        self.note(f"scenario seed {self.seed} (rotations)")
        self.setup()
        self.play_rounds(rng.randrange(4, 8), check_passphrases=True)
        self.deliver_everything()
        for d in self.devices:
            if self.lv(d) < self.level:
                self.act(d, 0)        # follows
        self.deliver_everything()
        for d in self.devices:
            self.act(d, 0)            # acknowledges, deletes what is due
        self.deliver_everything()
        for d in self.devices:
            self.check_wrong_passphrase(d)
        self.final_checks()
        self.check_due_deletions()

    def compare_listing(self, d: Device, view: mo.View, lines: list[str], what: str):
        super().compare_listing(d, view, lines, what)
        if any(self.journal_owner.get(b) not in (None, d.label) for b in self.gone(d)):
            # the old journals' records now reach it only through snapshots (review FJ-5)
            self.stats["listings checked after deleting another device's journals"] += 1

    def check_full_delivery(self):
        for d in self.devices:
            for o in self.devices:
                missing = [i for i, held in enumerate(self.held_mask(d, o)) if not held]
                if o is not d and missing:
                    self.fail(f"full delivery left {d.label} without {len(missing)} invocations of {o.label}"
                              + self.describe_received(d))


def test_model_rotation_scenarios(narnia_bin, tmp_path):
    seeds = [int(ONLY_SEED)] if ONLY_SEED else list(range(FIRST_SEED, FIRST_SEED + SCENARIOS))
    total = tm.run_scenarios(seeds, JOBS, lambda s: tm.run_scenario(s, tmp_path, narnia_bin, RotationScenario,
                                                                    "NARNIA_ROTATION_SEED", bool(ONLY_SEED)))
    if not ONLY_SEED:
        # Not a pass by default (review FJ-6: a quarter of the scenarios rotate nothing): the run
        # as a whole rotated, followed, and took snapshots to other devices.
        assert min(total["rotations"], total["followings"], total["compactions delivered"]) >= len(seeds) // 5, total
        # ... and snapshots brought records their receivers lacked, listings were checked where
        # another device's old journals were deleted, and retired journals were deleted (FJ-4, FJ-5)
        assert min(total["compactions delivered that brought records not held"], total["journals deleted"],
                   total["listings checked after deleting another device's journals"]) >= len(seeds) // 5, total

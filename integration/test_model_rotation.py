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
  only listings). Those new journals form a *group*: the oracle takes the group as holding every
  record its device wrote so far (FORMAT.md: "Merging the snapshot with anything gives what
  merging the old journals did"), plus the rotation's retirement of the key files present. The
  newest of them (by modification time) is the journal the device appends to afterwards.
- The engine keeps received lengths per (device, journal). A group is delivered whole and at
  once (its appended journal up to an invocation boundary at or after the compaction's end), and
  only to a device that holds a key file at least as new as the group's key (a journal sealed
  under a key the device's key files lack cannot be read; FORMAT.md "Rotating the master key").
  Later appends to the snapshot journal are delivered as any journal (cut, conflict copies).
- Passphrases: a device opens with the newest key file that FORMAT.md "Key files" says opens it
  (not retired, or the exception) and that holds the key of every journal present; one whose key
  file is absent, retired while a live one is here, or older than a journal present must be
  refused (exit 3). A passphrase of an older live key file beside a newer one (review EK-1's
  reading) is neither used nor required to fail.
- Deletions: a journal may go only when a group of its device retires it (every journal the
  device had before the group, and the group's journals but the one appended to), the deleting
  device holds that group, and it holds, of every other device, a record written after that
  device held the group (its acknowledgement); an inbox public key file only once the device
  holds a later rotation; key files and objects as in test_model.py.
- After the full delivery every device that has not followed the last rotation follows it, the
  stores are delivered again, and every device opens once more (acknowledging, deleting what is
  due) before test_model.py's final checks.

NARNIA_ROTATION_SCENARIOS (default 50) sets how many scenarios run, from
NARNIA_ROTATION_FIRST_SEED (default 1); NARNIA_ROTATION_SEED=N runs only scenario N and prints its
log; NARNIA_ROTATION_JOBS (default 2) runs scenarios in parallel.
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


class Group:
    """The journals one compaction wrote."""

    def __init__(self, gid: int, owner: str, level: int, rotation: bool, sizes: dict[str, int],
                 appended: str, retires: set[str]):
        self.gid = gid
        self.owner = owner
        self.level = level
        self.rotation = rotation
        self.sizes = sizes            # base -> length when written
        self.appended = appended      # the journal its device appends to afterwards
        self.end = sizes[appended]
        self.retires = retires        # journals its last record retires


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

    def group_held(self, d: Device, g: Group) -> bool:
        if d.label == g.owner:
            return True
        return all(self.recv.get((d.label, b), 0) >= size for b, size in g.sizes.items())

    def note_copied(self, d: Device, src: Device):
        self.recv[(d.label, src.journal)] = scan(src.path)[src.journal]

    def received_invocations(self, d: Device, o: Device) -> list[Invocation]:
        if d is o:
            return o.invs
        out = []
        for inv in o.invs:
            g = getattr(inv, "group", None)
            if g is not None:
                ok = self.group_held(d, g)
            else:
                j = getattr(inv, "journal", None) or o.journal
                ok = inv.end is not None and self.recv.get((d.label, j), 0) >= inv.end
            if ok:
                out.append(inv)
        return out

    def records_of(self, d: Device) -> list[mo.Record]:
        seen, out = set(), []
        for o in self.devices:
            for inv in self.received_invocations(d, o):
                for r in list(inv.records) + list(getattr(inv, "snapshot", None) or []):
                    if id(r) not in seen:
                        seen.add(id(r))
                        out.append(r)
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

    def acked(self, d: Device, f: Device, g: Group) -> bool:
        """d holds a record f wrote after it held g (its acknowledgement of g's retirement)."""
        if f is d:
            return self.group_held(d, g)
        return any(g.gid in getattr(inv, "held_groups", ()) and inv.end is not None and inv.end > inv.start
                   for inv in self.received_invocations(d, f))

    def journal_deletion_refused(self, d: Device, base: str) -> str | None:
        owner = self.journal_owner[base]
        gs = [g for g in self.groups if g.owner == owner and base in g.retires]
        if not gs:
            return "no compaction retired it"
        why = []
        for g in gs:
            if not self.group_held(d, g):
                why.append(f"{d.label} does not hold the compaction (group {g.gid}) that retires it")
                continue
            missing = [f.label for f in self.devices if f.label != owner and not self.acked(d, f, g)]
            if not missing:
                return None
            why.append(f"{d.label} holds no acknowledgement of group {g.gid}'s retirement from {missing}")
        return "; ".join(why)

    def check_deletions(self, d: Device, before, after, view: mo.View, what: str):
        allowed = set()
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
                self.gone(d).add(base)
            elif "/" not in r and before[r] == INBOX_KEY_SIZE:
                lvl = self.inbox_level.get(base, 0)
                if not any(g.level >= max(1, lvl) and self.group_held(d, g) for g in self.groups):
                    self.fail(f"{what}: narnia deleted the inbox public key file {r} (of key {lvl}), "
                              f"though it holds no compaction under that key or a later one")
                allowed.add(r)
                self.gone(d).add(base)
            elif "/" not in r:
                self.gone(d).add(base)
        super().check_deletions(d, {r: s for r, s in before.items() if r not in allowed}, after, view, what)

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
        self.note(f"  deliver {g.owner}'s compaction (group {g.gid}, {len(g.sizes)} journals) "
                  f"{s.label} -> {d.label}")

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
        return super().account(d, before, view_after, inv, unit, passwd, what)

    # -- invocations

    def pass_level(self, p: str) -> int:
        return max(self.key_level.get(k, 0) for k, v in self.keyfiles.items() if v == p)

    def held_groups(self, d: Device) -> set[int]:
        return {g.gid for g in self.groups if self.group_held(d, g)}

    def act(self, d: Device, n_commands: int, register: bool = False):
        pol = self.policy(d)
        if not pol:
            self.fail(f"{d.label}: the model finds no passphrase that opens it: key files "
                      f"{ {k[:8]: self.keyfiles.get(k) for k in sorted(self.present_keys(d))} }")
        p = self.rng.choice(pol)
        level = self.pass_level(p)
        if level > self.lv(d):
            return self.compact_act(d, p, rotate=False)
        held = self.held_groups(d)
        self.forced = p
        try:
            super().act(d, n_commands, register)
        finally:
            self.forced = None
        inv = d.invs[-1]
        inv.journal = d.journal
        inv.held_groups = held
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
        held = self.held_groups(d)
        date = self.utc_date()
        before = scan(d.path)
        inv = Invocation(start=0)
        inv.held_groups = held
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
            ack.held_groups = held
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
        g = Group(len(self.groups) + 1, d.label, level, rotate, {r: after[r] for r in new_shard}, newest, retires)
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
        inv.snapshot = [r for i in d.invs for r in i.records]
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
                if not hasattr(inv, "held_groups"):
                    inv.held_groups = set()
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

    def check_full_delivery(self):
        for d in self.devices:
            have = {id(r) for r in self.records_of(d)}
            for o in self.devices:
                missing = [r for inv in o.invs for r in inv.records if id(r) not in have]
                if o is not d and missing:
                    self.fail(f"full delivery left {d.label} without {len(missing)} records of {o.label}"
                              + self.describe_received(d))


def test_model_rotation_scenarios(narnia_bin, tmp_path):
    seeds = [int(ONLY_SEED)] if ONLY_SEED else list(range(FIRST_SEED, FIRST_SEED + SCENARIOS))
    total = tm.run_scenarios(seeds, JOBS, lambda s: tm.run_scenario(s, tmp_path, narnia_bin, RotationScenario,
                                                                    "NARNIA_ROTATION_SEED", bool(ONLY_SEED)))
    if not ONLY_SEED:
        # Not a pass by default (review FJ-6: a quarter of the scenarios rotate nothing): the run
        # as a whole rotated, followed, and took snapshots to other devices.
        assert min(total["rotations"], total["followings"], total["compactions delivered"]) >= len(seeds) // 5, total

"""An independent model of Narnia's format-2 merge, written from docs/FORMAT.md only.

It knows nothing of the bytes on disk: a *record* here is what one changing command of one
device writes (one journal record), as a list of operations on abstract item identifiers, with a
stamp. The vault a device shows is `merge(records it holds)`: a deterministic function of a set
of records (FORMAT.md "Merging"). `test_model.py` drives the real binary and uses this module to
say what every device must show.

The rules modelled (FORMAT.md section in brackets):

- Stamps ["The clock"]: every record carries one stamp. All devices of a test run on one machine
  and one after another, so the hybrid clock orders stamps exactly as the commands were run; a
  stamp here is a global sequence number, with the UTC date of the command and the device that
  wrote it (for conflict names).
- Registers ["Merging", the table]: an item exists from its `create`; its place (folder, name)
  is the `create`/`move` with the greatest stamp; a file's content is the `set content` with the
  greatest stamp, else the `create file` with the greatest stamp; a setting is
  the `set` with the greatest stamp; a device's name its `device name` with the greatest stamp;
  retired key files a union.
- Cycles [rule 2]: while the places form cycles, the latest move in each cycle is skipped: the
  folder falls back to its move's `from` place, or to the root when that closes a cycle too.
- Removal [rule 3]: a `remove` lists each item with the stamp of the place its device showed.
  An item a `remove` lists is removed unless it, or a folder holding it (by the places in
  force) through folders the same `remove` lists, has a place given by a `move` other than the
  place that `remove` saw of it (stamped later; or earlier, made without reading it by a device
  that saw another creation of the item — never in these scenarios, which adopt no drop on two
  devices) — a folder's only when every place between it and the
  item is stamped before that move (what the move carried). A removed item is gone; a removed folder that still holds an
  item that is not removed is shown again, with its name.
- Held items [rule 6]: an item whose folder (or an ancestor) has no `create` here is not shown.
- Folders of one name [rule 4] are one folder, under the identifier of the one placed first;
  what a device then does to it applies to all of them (a move moves every one, a removal
  lists every one), and what it puts into it goes into the first.
- Files of one name [rule 5]: the one placed first keeps the name, a folder always does; every
  other is shown as `STEM (conflict YYYY-MM-DD DEVICE).EXT` (date and device of its placing),
  ` (2)`, ` (3)`… when that is still taken.
- Concurrent contents [rule 7]: a `set content` names the version it replaced (the one its device
  showed); versions no `set content` replaced are heads; every head but the file's content — of a
  removed file, every head — is a conflict copy: an item of its own (a derived identifier) in the
  file's folder, named as in rule 5 after the version's stamp, placed and holding the version as
  a `create file` under that stamp would. A removal lists, with each file, the copy of the
  version it showed.

And the commands' records, as documented (FORMAT.md, INTERFACE.md, narnia(1)): `mkdir -p` is
one record creating the missing folders; `import` creates the items (keep-both numbering, `name
(2).ext`, against the names the folder shows); `mv` writes a `move` (with `from`, the place the
device saw) for each identifier of what it moves, keeping the shown name when moving into a
folder, and of a derived conflict copy the device did not create itself, after it `mkcopy`; `mv -f` onto a file also removes that file; `cp` creates new items (new content object)
under the shown names; `cp -f` onto a file writes `set content` (naming the version it replaced)
and keeps its identity, and onto a derived conflict copy the device did not create itself, after
it the copy's creation and a move to its place under its version's stamp (`mkcopy`); `rm -r` lists every item the device shows under what it removes (and each
file's copy-to-be, rule 7); `passwd` retires every other key file
present.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

ROOT = 0  # the root folder's identifier (it has no record)


# ---------------------------------------------------------------------------------------------
# Names


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def name_key(name: str) -> bytes:
    """Listings sort names by the byte order of their NFC UTF-8 form."""
    return nfc(name).encode("utf-8")


def split_extension(name: str) -> tuple[str, str]:
    """Stem and extension (with its dot), as `ItemName.splitExtension`: a leading dot starts no
    extension, `.tar.gz`-style double extensions stay together, a trailing dot is no extension."""
    last = name.rfind(".")
    if last <= 0:
        return name, ""
    dot = last
    if name[last + 1:].lower() in ("gz", "bz2", "xz", "zst"):
        prev = name.rfind(".", 0, last)
        if prev > 0 and name[prev + 1:last].lower() == "tar":
            dot = prev
    if dot == len(name) - 1:
        return name, ""
    return name[:dot], name[dot:]


def _fit(stem: str, suffix: str, ext: str) -> str:
    """Within 255 bytes: the longer of stem and extension loses its last character until it fits."""
    while len((stem + suffix + ext).encode()) > 255:
        if len(stem.encode()) >= len(ext.encode()):
            stem = stem[:-1]
        else:
            ext = ext[:-1]
    return stem + suffix + ext


def numbered(name: str, n: int) -> str:
    """Keep-both numbering: `a.jpg` -> `a (2).jpg`, `notes` -> `notes (2)`."""
    stem, ext = split_extension(name)
    return _fit(stem, f" ({n})", ext)


def conflict_name(name: str, date: str, device: str) -> str:
    """`STEM (conflict YYYY-MM-DD DEVICE).EXT` (FORMAT.md, Merging rule 5)."""
    stem, ext = split_extension(name)
    return _fit(stem, f" (conflict {date} {device})", ext)


def keep_both(name: str, taken) -> str:
    """The first of `name`, `name (2)`, `name (3)`… that is not in `taken`."""
    if name not in taken:
        return name
    n = 2
    while numbered(name, n) in taken:
        n += 1
    return numbered(name, n)


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class Content:
    """A file's content value. `unit` names the content object(s) that hold it (the objects one
    command wrote); `data` is what `cat` must give."""
    unit: int
    size: int
    kind: str
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class Stamp:
    seq: int        # global order of the commands (the hybrid clock, see module doc)
    device: str     # the writing device (its test label)
    date: str       # UTC date YYYY-MM-DD of the command

    def __lt__(self, other):
        return self.seq < other.seq


# Operations (tuples):
#   ("mkdir", id, parent, name)
#   ("mkfile", id, parent, name, Content)
#   ("move", id, parent, name, from_parent, from_name)
#   ("setcontent", id, Content, version replaced)   (a content's version is its unit)
#   ("mkcopy", id, parent, name, Content, Stamp)  a changed or moved conflict copy's own
#                                                 creation and a move to its place, under its
#                                                 version's stamp (rule 7)
#   ("remove", frozenset((id, stamp of the place the device showed))
#   ("set", key, value)
#   ("retire_keys", frozenset(key file names))
#   ("devname", name)


@dataclass(frozen=True)
class Record:
    stamp: Stamp
    ops: tuple
    command: str = ""  # the narnia command that wrote it (for failure reports)


# ---------------------------------------------------------------------------------------------
# The merged vault


@dataclass
class Place:
    stamp: Stamp
    parent: int
    name: str
    from_parent: int | None
    from_name: str | None


@dataclass
class Node:
    """One thing a device shows: a file, or a folder (possibly several merged folders)."""
    path: str
    name: str
    type: str                       # "file" | "folder"
    ids: tuple                      # identifiers, the first one placed first
    parent: "Node | None" = None
    children: list = field(default_factory=list)   # sorted by name bytes
    content: Content | None = None  # files
    ambiguous: bool = False         # folders: which identifier is first depends on identifiers
    stored_name: str = ""           # files: the name in the records (before conflict naming)
    # conflict copies shown because their version is a head: (the version's stamp, the place
    # in the records as (parent, name), the devices whose records create the copy themselves)
    derived: tuple | None = None

    @property
    def is_folder(self) -> bool:
        return self.type == "folder"

    def child(self, name: str) -> "Node | None":
        for c in self.children:
            if c.name == name:
                return c
        return None

    def descendants(self):
        for c in self.children:
            yield c
            if c.is_folder:
                yield from c.descendants()


@dataclass
class View:
    root: Node
    by_path: dict
    settings: dict
    retired_keys: set
    device_names: dict
    place: dict                     # id -> Place (effective, after cycle breaking)
    held: set                       # ids held (folder not arrived)
    skipped: int = 0                # moves skipped to break cycles
    fallen: dict = field(default_factory=dict)  # id -> Place shown instead of a skipped move
    revived: set = field(default_factory=set)   # removed folders shown again (rule 3)
    removed: set = field(default_factory=set)   # removed items (rule 3)
    registers: dict = field(default_factory=dict)  # id -> Place in force (before rule 2)
    removals: dict = field(default_factory=dict)   # id -> {removal's stamp: place it saw}

    def listing(self):
        """`ls -alR --json /` order: each folder's entries (sorted by name), then its
        sub-folders' listings in the same order."""
        out = []

        def rec(folder: Node):
            out.extend(folder.children)
            for c in folder.children:
                if c.is_folder:
                    rec(c)
        rec(self.root)
        return out

    def nodes(self):
        return [n for n in self.by_path.values() if n.path != "/"]

    def folders(self):
        return [n for n in self.by_path.values() if n.is_folder]

    def files(self):
        return [n for n in self.by_path.values() if not n.is_folder]


_copy_ids: dict[tuple[int, int], int] = {}


def conflict_copy_id(item: int, version: int) -> int:
    """The identifier of the conflict copy showing `version` of file `item`: derived, the same in
    every merge (narnia derives it by hashing the two identifiers)."""
    return _copy_ids.setdefault((item, version), 1_000_000_000 + len(_copy_ids))


def merge(records) -> View:
    """The vault that a device holding exactly `records` shows (FORMAT.md "Merging")."""
    created: dict[int, tuple[Stamp, str]] = {}
    place: dict[int, Place] = {}
    # (is a `set content`, stamp): a change of a file wins over the content its creation gave.
    content: dict[int, tuple[tuple[bool, Stamp], Content]] = {}
    removals: dict[int, dict[Stamp, Stamp]] = {}  # id -> {removal's stamp: place it saw}
    settings: dict[str, tuple[Stamp, str]] = {}
    retired_keys: set[str] = set()
    devnames: dict[str, tuple[Stamp, str]] = {}
    copy_creators: dict[int, set[str]] = {}     # copies a `mkcopy` creates, and whose records
    derived: dict[int, Stamp] = {}              # copies shown because their version is a head

    # (is a `move`, stamp): a move wins over the place a creation gave.
    place_key: dict[int, tuple[bool, Stamp]] = {}
    # Per file, the versions `set content` gave that no other replaced (heads), and the
    # versions replaced ["Concurrent contents"].
    versions: dict[int, tuple[dict[int, tuple[Stamp, Content]], set[int]]] = {}

    def set_place(i, p: Place, is_move: bool):
        if i not in place or place_key[i] < (is_move, p.stamp):
            place[i] = p
            place_key[i] = (is_move, p.stamp)

    for r in records:
        s = r.stamp
        for op in r.ops:
            kind = op[0]
            if kind in ("mkdir", "mkfile"):
                _, i, parent, name = op[:4]
                if i not in created or s < created[i][0]:
                    created[i] = (s, "folder" if kind == "mkdir" else "file")
                set_place(i, Place(s, parent, name, None, None), False)
                if kind == "mkfile":
                    if i not in content or content[i][0] < (False, s):
                        content[i] = ((False, s), op[4])
            elif kind == "move":
                _, i, parent, name, fp, fn = op
                set_place(i, Place(s, parent, name, fp, fn), True)
            elif kind == "mkcopy":
                _, i, parent, name, c, cs = op
                if i not in created or cs < created[i][0]:
                    created[i] = (cs, "file")
                set_place(i, Place(cs, parent, name, None, None), False)
                set_place(i, Place(cs, parent, name, None, None), True)
                if i not in content or content[i][0] < (False, cs):
                    content[i] = ((False, cs), c)
                copy_creators.setdefault(i, set()).add(s.device)
            elif kind == "setcontent":
                _, i, c, replaced = op
                if i not in content or content[i][0] < (True, s):
                    content[i] = ((True, s), c)
                heads, gone = versions.setdefault(i, ({}, set()))
                gone.add(replaced)
                heads.pop(replaced, None)
                if c.unit not in gone:
                    heads[c.unit] = (s, c)
            elif kind == "remove":
                for i, seen in op[1]:
                    saw = removals.setdefault(i, {})
                    saw[s] = max(saw.get(s, seen), seen)
            elif kind == "set":
                _, key, value = op
                if key not in settings or settings[key][0] < s:
                    settings[key] = (s, value)
            elif kind == "retire_keys":
                retired_keys |= set(op[1])
            elif kind == "devname":
                if s.device not in devnames or devnames[s.device][0] < s:
                    devnames[s.device] = (s, op[1])
            else:
                raise ValueError(f"unknown operation {op!r}")

    # -- rule 3: which listed items are removed
    def takes(by: Stamp, i: int) -> bool:
        j = i
        latest = None   # the latest place stamp below j on the way up: a move carries what it held
        for _ in range(len(place) + 1):
            seen = removals.get(j, {}).get(by)
            if j == ROOT or j not in place or seen is None:
                return True
            moved = place_key[j][0] and place_key[j][1] != seen
            if moved and (latest is None or latest < place_key[j][1]):
                return False
            latest = place_key[j][1] if latest is None else max(latest, place_key[j][1])
            j = place[j].parent
        return True

    def is_removed(i: int) -> bool:
        return any(takes(by, i) for by in removals.get(i, {}))

    removed = {i for i in removals if is_removed(i)}

    # -- concurrent contents: every head but the file's content is a conflict copy beside it;
    # of a removed file, every head (the remover listed the copy of the version it showed)
    names = {d: v[1] for d, v in devnames.items()}
    for i, (heads, _) in sorted(versions.items()):
        if i not in created or created[i][1] != "file" or i not in place:
            continue
        in_force = None if i in removed else max(heads, key=lambda v: heads[v][0].seq)
        for version, (s, c) in sorted(heads.items()):
            if version == in_force:
                continue
            j = conflict_copy_id(i, version)
            if j not in created or s < created[j][0]:
                created[j] = (s, "file")
            p = place[i]
            set_place(j, Place(s, p.parent, conflict_name(p.name, s.date, names.get(s.device, "?")),
                               None, None), False)
            if j not in content or content[j][0] < (False, s):
                content[j] = ((False, s), c)
            # placed beside its file, a listed copy follows the folders holding it
            if is_removed(j):
                removed.add(j)
            else:
                removed.discard(j)
                derived[j] = s

    items = set(created)
    eff = {i: Place(place[i].stamp, place[i].parent, place[i].name,
                    place[i].from_parent, place[i].from_name) for i in items}

    # -- rule 2: cycles. A cycle can only run through items that exist here.
    def cycles():
        state: dict[int, int] = {}   # 1 on the current path, 2 done
        found = []
        for start in sorted(items):
            path = []
            i = start
            while i in items and state.get(i, 0) == 0:
                state[i] = 1
                path.append(i)
                i = eff[i].parent
            if i in items and state.get(i) == 1:
                found.append(path[path.index(i):])
            for j in path:
                state[j] = 2
        return found

    def leads_to(start: int, target: int) -> bool:
        seen = set()
        i = start
        while i in items and i not in seen:
            if i == target:
                return True
            seen.add(i)
            i = eff[i].parent
        return False

    skipped = 0
    fallen: dict[int, Place] = {}
    for _ in range(len(items) + 1):
        found = cycles()
        if not found:
            break
        for cyc in sorted(found, key=lambda c: max(eff[i].stamp.seq for i in c), reverse=True):
            j = max(cyc, key=lambda i: (eff[i].stamp.seq, i))
            p = eff[j]
            fp = p.from_parent if p.from_parent is not None else ROOT
            fn = p.from_name if p.from_name is not None else p.name
            if fp != ROOT and leads_to(fp, j):
                fp = ROOT
            eff[j] = Place(p.stamp, fp, fn, p.from_parent, p.from_name)
            fallen[j] = eff[j]
            skipped += 1

    # -- rule 6: held items (an ancestor has no create here)
    chain_ok: dict[int, bool] = {}

    def ok(i: int) -> bool:
        path = []
        while i != ROOT and i not in chain_ok:
            if i not in items:
                for j in path:
                    chain_ok[j] = False
                return False
            path.append(i)
            i = eff[i].parent
        result = True if i == ROOT else chain_ok[i]
        for j in path:
            chain_ok[j] = result
        return result

    held = {i for i in items if not ok(i)}

    # -- rule 3: removed items are gone; their folders come back to hold what survives
    visible = set()
    for i in items:
        if i in held or i in removed:
            continue
        j = i
        while j != ROOT and j not in visible:
            visible.add(j)
            j = eff[j].parent

    kids: dict[int, list[int]] = {}
    for i in visible:
        kids.setdefault(eff[i].parent, []).append(i)

    by_path: dict[str, Node] = {}
    root = Node(path="/", name="", type="folder", ids=(ROOT,))
    by_path["/"] = root

    def order_key(i):
        return (eff[i].stamp.seq, i)

    def copy_info(i):
        if i not in derived:
            return None
        return (derived[i], (place[i].parent, place[i].name), frozenset(copy_creators.get(i, ())))

    def build(node: Node):
        members = [c for g in node.ids for c in kids.get(g, [])]
        by_name: dict[str, list[int]] = {}
        for c in members:
            by_name.setdefault(eff[c].name, []).append(c)
        shown: list[Node] = []
        conflicted: list[tuple[int, str]] = []
        for name, group in by_name.items():
            folders = sorted((c for c in group if created[c][1] == "folder"), key=order_key)
            files = sorted((c for c in group if created[c][1] == "file"), key=order_key)
            if folders:
                amb = len(folders) > 1 and eff[folders[0]].stamp.seq == eff[folders[1]].stamp.seq
                shown.append(Node(path="", name=name, type="folder", ids=tuple(folders),
                                  ambiguous=amb))
                conflicted.extend((f, name) for f in files)
            else:
                first, rest = files[0], files[1:]
                shown.append(Node(path="", name=name, type="file", ids=(first,),
                                  content=content[first][1], stored_name=name, derived=copy_info(first)))
                conflicted.extend((f, name) for f in rest)
        taken = {n.name for n in shown}
        for f, name in sorted(conflicted, key=lambda t: order_key(t[0])):
            p = eff[f]
            cname = conflict_name(name, p.stamp.date, names.get(p.stamp.device, "?"))
            cname = keep_both(cname, taken)
            taken.add(cname)
            shown.append(Node(path="", name=cname, type="file", ids=(f,),
                              content=content[f][1], stored_name=name, derived=copy_info(f)))
        shown.sort(key=lambda n: name_key(n.name))
        for n in shown:
            n.parent = node
            n.path = ("" if node.path == "/" else node.path) + "/" + n.name
            by_path[n.path] = n
        node.children = shown
        for n in shown:
            if n.is_folder:
                build(n)

    build(root)
    return View(root=root, by_path=by_path,
                settings={k: v[1] for k, v in settings.items()},
                retired_keys=retired_keys, device_names=names, place=eff, held=held,
                skipped=skipped, revived=visible & removed, fallen=fallen, removed=removed,
                registers=dict(place), removals=removals)


# ---------------------------------------------------------------------------------------------
# What a command writes, given what the device shows


class IdSource:
    """Fresh item identifiers (the oracle's own; narnia's are random 16-byte values)."""

    def __init__(self):
        self.next = 1

    def __call__(self) -> int:
        i = self.next
        self.next += 1
        return i


def first_id(folder: Node) -> int:
    """Where new items of a (possibly merged) folder go: the one placed first."""
    return folder.ids[0]


def ops_mkdir_p(view: View, components: list[str], new_id) -> list:
    """`mkdir -p /c1/c2/…`: one record creating the missing folders."""
    ops = []
    node = view.root
    parent_id = ROOT
    missing = False
    for comp in components:
        child = None if missing else node.child(comp)
        if child is not None:
            if not child.is_folder:
                raise ValueError(f"mkdir -p through a file: {child.path}")
            node = child
            parent_id = first_id(child)
            continue
        missing = True
        i = new_id()
        ops.append(("mkdir", i, parent_id, comp))
        parent_id = i
    return ops


def ops_import_file(folder: Node, name: str, content: Content, new_id) -> tuple[list, str]:
    final = keep_both(name, {c.name for c in folder.children})
    return [("mkfile", new_id(), first_id(folder), final, content)], final


def ops_import_tree(folder: Node, dirname: str, files: list[tuple[str, Content]],
                    new_id) -> tuple[list, str]:
    """`import HOSTDIR` of a folder holding files only."""
    final = keep_both(dirname, {c.name for c in folder.children})
    d = new_id()
    ops = [("mkdir", d, first_id(folder), final)]
    for name, content in files:
        ops.append(("mkfile", new_id(), d, name, content))
    return ops, final


def can_move_the_fallback(view: View, moved: set, folder: int) -> bool:
    """True when a move of one of `moved` can change where `folder`, shown where it fell back,
    is shown: one of them lies in the cycle its skipped move closes, or, when it fell back to
    the root because its `from` led back into it, on the way from its `from` to it — by the
    registers, and the fallbacks of the folders on the way (rule 2)."""
    reg = view.registers.get(folder)
    if reg is None:
        return False
    pending = [reg.parent]
    if view.fallen[folder].parent == ROOT:
        pending.append(reg.from_parent)
    seen = {folder}
    while pending:
        k = pending.pop()
        if k is None or k == ROOT:
            continue
        if k in moved:
            return True
        if k in seen:
            continue
        seen.add(k)
        pending += [p.parent for p in (view.registers.get(k), view.fallen.get(k)) if p is not None]
    return False


def ops_move(view: View, node: Node, dest_folder: Node, dest_name: str,
             replace: Node | None = None, device: str = "") -> list:
    """`mv` (with `-f` onto the file `replace`): a move of every identifier of the node, and,
    first, a move of every item whose move the view skipped to the place shown instead
    (FORMAT.md "Merging", rule 2: a device that moves records what it was shown); of a
    conflict copy only derived (`device` wrote no creation of it), last its creation under its
    version's stamp, as `cp -f` writes it (rule 7)."""
    # (a removed folder shown again to hold what survived it only when the move can change
    # where it falls back, which takes it out of its removal; a removed folder not shown never)
    ids = set(node.ids)
    recorded = [(j, p) for j, p in sorted(view.fallen.items())
                if j not in ids and (j not in view.removed or j in view.revived and can_move_the_fallback(view, ids, j))]
    ops = [("move", j, p.parent, p.name, p.parent, p.name) for j, p in recorded]
    if replace is not None:
        ops.append(("remove", removal_list(view, [replace])))
    for i in node.ids:
        p = view.place[i]
        ops.append(("move", i, first_id(dest_folder), dest_name, p.parent, p.name))
    # a folder a removal listed (shown again to hold what survived it, or taken out of it by a
    # move made elsewhere) carries nothing out of it as it moves: what that removal took under
    # it, through folders it listed, is removed anew; so too under a folder recorded where it
    # fell back
    moved = ids | {j for j, _ in recorded}
    listing = {by for i in moved for by in view.removals.get(i, {})}

    def under(j, by):
        k = view.registers[j].parent
        for _ in range(len(view.registers) + 1):
            if k == ROOT or k not in view.registers or by not in view.removals.get(k, {}):
                return False
            if k in moved:
                return True
            k = view.registers[k].parent
        return False
    # (not the moved folders themselves, though by the registers one may lie under another: a
    # cycle, rule 2; listed with their old places, their moves would take the rest back out)
    again = frozenset((j, view.registers[j].stamp) for j in view.removed - moved
                      if j in view.registers and any(under(j, by) for by in view.removals.get(j, {}) if by in listing))
    if again:
        ops.append(("remove", again))
    if node.derived is not None and device not in node.derived[2]:
        stamp, (parent, name), _ = node.derived
        ops.append(("mkcopy", node.ids[0], parent, name, node.content, stamp))
    return ops


def ops_copy(node: Node, dest_folder: Node, dest_name: str, unit: int, new_id) -> list:
    """`cp [-r]`: new items, under the names the device shows, with copied content."""
    ops = []

    def rec(n: Node, parent_id: int, name: str):
        i = new_id()
        if n.is_folder:
            ops.append(("mkdir", i, parent_id, name))
            for c in n.children:
                rec(c, i, c.name)
        else:
            c = n.content
            ops.append(("mkfile", i, parent_id, name, Content(unit, c.size, c.kind, c.data)))
    rec(node, first_id(dest_folder), dest_name)
    return ops


def ops_copy_onto(src: Node, dest: Node, unit: int, device: str = "") -> list:
    """`cp -f FILE EXISTINGFILE`: the target keeps its identity and takes new content, a new
    version that replaces the one the device shows (a content's version is its unit). A
    conflict copy only derived (`device` wrote no creation of it) is also made a file of its
    own: its creation and a move to its place, under its version's stamp (rule 7)."""
    c = src.content
    change = ("setcontent", dest.ids[0], Content(unit, c.size, c.kind, c.data), dest.content.unit)
    if dest.derived is None or device in dest.derived[2]:
        return [change]
    stamp, (parent, name), _ = dest.derived
    return [change, ("mkcopy", dest.ids[0], parent, name, dest.content, stamp)]


def removal_list(view: View, nodes) -> frozenset:
    """What a removal of `nodes` lists: their identifiers, and for each file the conflict copy of
    the version it shows (FORMAT.md "Concurrent contents"), each with the stamp of the place in
    force (rule 3); a copy not derived here, with its file's."""
    listed = set()
    for n in nodes:
        listed |= {(i, view.place[i].stamp) for i in n.ids}
        if not n.is_folder:
            for i in n.ids:
                j = conflict_copy_id(i, n.content.unit)
                listed.add((j, view.place[j].stamp if j in view.place else view.place[i].stamp))
    return frozenset(listed)


def ops_remove(view: View, node: Node) -> list:
    """`rm [-r]`: every item the device shows under what it removes (FORMAT.md rule 3)."""
    return [("remove", removal_list(view, [node, *node.descendants()]))]


def key_files_usable(present: set[str], retired: set[str]) -> set[str]:
    """The key files whose passphrases open a copy holding the key files `present` and whose
    records retire `retired` (FORMAT.md "Key files"): the ones not retired; when none of those
    has arrived, the retired ones present (the exception that keeps a device from being locked
    out while a sync is under way)."""
    live = present - retired
    return live if live else set(present)

"""The power-loss persistence models (FAULT-MODEL.md §3).

A power cut loses whatever the kernel had not yet written: the page cache and
the uncommitted part of the journal. :func:`power_crash_points` derives, for each
crash point of a trace, every disk image such a cut may leave under two models.

``power-loss`` (ext4 ``data=ordered`` with delayed allocation; LazyFS's
unsynced-data loss, Ramos et al., VLDB 2024; ALICE's torn appends, Pillai et
al., OSDI 2014 "All File Systems Are Not Created Equal"):

* **Metadata and size changes** (mkdir, create, truncate, rename, unlink, and the
  size a write gives its file) persist as an in-order prefix, the way a journal
  replays a prefix of its transactions: every metadata operation before the last
  barrier (a successful ``fsync`` or ``fsync_dir``) is durable; any number of the
  later ones may be. ``fsync(file)`` commits all earlier metadata because ext4's
  journal commit is global; ``fsync_dir`` does too in this model (a
  simplification: on ext4 it forces the same journal commit). A write issued after
  the first lost metadata operation is lost whole: its size change would be
  journaled after that operation, and its pages are not written back before the
  journal commit that holds it (commit every 5 s, dirty pages expire after 30 s).
  So a later write's size never survives an earlier truncate, unlink or rename
  that was lost (issue 9: no ``OLD`` followed by zeros up to a new size).
* **Data belongs to the inode** and moves with renames. An inode's writes since
  its last successful ``fsync`` (and before the first lost metadata operation) are
  pending: at the cut they survive whole, not at all (the content as of that
  fsync; a file created since reads back *empty*: ext4 delayed allocation's
  zero-length file), or torn: the first blocks of the final content (whole blocks
  of ``block_size`` bytes) in two forms, (a) with the size advanced only as far
  as the persisted blocks (ext4 delayed allocation: the file ends at a block
  boundary, or keeps its old size when the cut falls inside it) and (b) with the
  final size kept and the rest reading back as the old bytes where the file had
  synced data and as zero bytes beyond (*zero-filled*: XFS, ext4
  ``data=writeback``; a file smaller than a block tears to all zeros).
* **Size changes by metadata** (``truncate``, ``create`` over an existing file)
  are journaled with the metadata prefix: they apply to the surviving content
  exactly when the prefix holds them, whether or not the data survives.
* **fsyncgate** (an fsync recorded with ``label == "fsync-lost"``, see
  :class:`~crashpoint.faultfs.FaultKind`): the fsync failed and Linux ≤ 4.13
  marked the dirty pages clean without writing them, so that data is dropped: it
  never reaches disk, not even through a later successful fsync, unless the
  program writes it again. It is not a barrier.

``power-loss-reorder`` (ALICE's default abstract persistence model; the POSIX
minimum) adds: a metadata operation is *pending* until it is made durable, a
*directory operation* (mkdir, create of a new file, rename, unlink) by an fsync of
its parent directory after it (both parents for a rename across directories), a
*truncation* (``truncate``, ``create`` over an existing file) by an fsync of its
file; an ``fsync`` of a file does not make its directory entry durable, as in
ALICE. A pending operation may be lost while later operations persist, as long as
every kept operation on a name keeps the operation that created that name (and
the ``mkdir`` of its parent): dropping one drops its dependants. Truncations and
size changes reorder like other metadata (ALICE), except that a write issued after
a lost truncation of its own file is lost with it. Besides every in-order prefix
(the ``power-loss`` states), a *combination* is a set of pending operations
omitted while all the others persist; with ``p`` pending operations there are
``2**p``. They are enumerated exhaustively (fewest omitted first) while
``2**p <= REORDER_COMBINATIONS``; beyond, or with ``model.reorder_bound = N``, only
the sets of at most ``N`` operations (and the in-order prefixes), and the rest is
counted in ``cut``.

Enumeration: each metadata choice (prefix length, omitted operations) fixes the
names; each reachable inode with pending data has a few contents. Their product
is enumerated fairly: first every metadata choice with all data surviving, then
with all pending data lost, then with one inode deviating, then the rest; equal
crash states are kept once, in first-seen order. At ``max_states`` distinct
states the enumeration stops. ``cut`` counts what was not generated: the data
combinations of the metadata choices enumerated, plus, for each combination of
omitted operations a bound left out (or not reached), an upper bound on its data
combinations (the product over inodes with pending data of their possible
contents). It is therefore an upper bound on the distinct crash states left out,
and 0 exactly when the enumeration was exhaustive. The trace is replayed once,
incrementally; crash states share their byte strings. Each in-order prefix is built
once, and its frame (with the crash states made from it) serves every crash point
until the content of one of its inodes changes.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import posixpath
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from . import _dirops
from ._family import REORDER_COMBINATIONS, CrashPoint, PersistenceModel, effective, new_crash_point
from ._image import CrashState, Image, new_crash_state, parent_dir
from ._trace import Op, OpKind

__all__ = [
    "JOURNALED",
    "JOURNALED_REORDER",
    "POWER_FAMILY",
    "PowerLossFamily",
    "durable_state",
    "power_crash_points",
    "reorder_bound",
    "reorder_cut",
]

# Operation kinds as module constants (an enum member looked up on its class costs a
# descriptor call, and ``step`` runs once per operation).
_OP_WRITE, _OP_CREATE, _OP_RENAME, _OP_MKDIR, _OP_TRUNCATE, _OP_FSYNC, _OP_FSYNC_DIR = (
    OpKind.WRITE,
    OpKind.CREATE,
    OpKind.RENAME,
    OpKind.MKDIR,
    OpKind.TRUNCATE,
    OpKind.FSYNC,
    OpKind.FSYNC_DIR,
)
_OP_FDATASYNC, _OP_RMDIR, _OP_LINK = OpKind.FDATASYNC, OpKind.RMDIR, OpKind.LINK
_OP_SYMLINK = OpKind.SYMLINK
_MUTATING = frozenset(kind for kind in OpKind if kind.mutating)

# Kinds of metadata records: every one but _TRUNC is a directory operation. _MOVE is
# the rename of a directory with its subtree.
_MKDIR, _NEW, _RENAME, _UNLINK, _TRUNC, _LINK, _RMDIR, _MOVE = (
    _dirops.MKDIR,
    _dirops.NEW,
    _dirops.RENAME,
    _dirops.UNLINK,
    _dirops.TRUNC,
    _dirops.LINK,
    _dirops.RMDIR,
    _dirops.MOVE,
)
_DIR_CHANGES = frozenset({_MKDIR, _RMDIR, _MOVE})  # the kinds that change directories

_Names = dict[str, int]
_Items = tuple[tuple[str, int], ...]


def _write(content: bytes, offset: int, data: bytes) -> bytes:
    size = len(content)
    if not data:
        return content
    if offset == size:
        return content + data
    if offset > size:
        return content + bytes(offset - size) + data
    return content[:offset] + data + content[offset + len(data) :]


def _resize(content: bytes, size: int) -> bytes:
    if size <= len(content):
        return content[:size]
    return content + bytes(size - len(content))


class _Meta:
    """A metadata operation with the inode it acts on resolved (on the full trace)."""

    __slots__ = ("deps", "dst", "inode", "kind", "path", "size")

    def __init__(self, kind: int, path: str, inode: int, *, dst: str = "", size: int = 0) -> None:
        self.kind = kind
        self.path = path
        self.dst = dst
        self.inode = inode
        self.size = size
        self.deps: tuple[int, ...] = ()  # positions of the operations that created its names

    def replay(self, names: dict[str, int], dirs: set[str]) -> None:
        """Apply this operation's directory effect (:func:`._dirops.apply`)."""
        _dirops.apply(self.kind, self.path, self.dst, self.inode, names, dirs)


class _Options:
    """The contents an inode with pending data may have after a power cut.

    Index 0 is the whole content (every pending write survived), 1 the content with
    none of them, then (if different) the zero-filled extension, then the torn block
    prefixes with the final size kept (zero-filled form, XFS), then the torn block
    prefixes with the size advanced only as far as the persisted blocks (ext4
    delayed allocation). Torn contents are built on demand; some may repeat others
    (equal crash states are kept once).
    """

    __slots__ = ("_bare", "_fixed", "_padded", "_sized", "_torn", "_whole", "_zeroed")

    def __init__(self, whole: bytes, bare: bytes, block_size: int) -> None:
        size = len(whole)
        old = len(bare)
        padded = bare if old == size else _resize(bare, size)
        starts = [
            b
            for b in range(0, size, block_size)
            if whole[b : b + block_size] != padded[b : b + block_size]
        ]
        fixed = [whole, bare]
        if padded != bare and padded != whole:
            fixed.append(padded)
        self._fixed = fixed
        self._whole = whole
        self._bare = bare
        self._padded = padded
        self._zeroed = starts[1:]  # the first differing block torn away is `padded`
        sized: list[int] = []
        if size > old:
            sized = [p for p in starts[1:] if p <= old]
            sized += range((old // block_size + 1) * block_size, size, block_size)
        self._sized = sized
        self._torn: dict[int, bytes] = {}

    def __len__(self) -> int:
        return len(self._fixed) + len(self._zeroed) + len(self._sized)

    def __getitem__(self, i: int) -> bytes:
        fixed = self._fixed
        if i < len(fixed):
            return fixed[i]
        content = self._torn.get(i)
        if content is None:
            j = i - len(fixed)
            if j < len(self._zeroed):
                p = self._zeroed[j]
                content = self._whole[:p] + self._padded[p:]
            else:
                p = self._sized[j - len(self._zeroed)]
                content = self._whole[:p] + self._bare[p:]
            self._torn[i] = content
        return content


def _options_bound(size: int, block_size: int) -> int:
    """At most how many contents an inode whose contents stay within ``size`` bytes
    can have (whole, bare, padded and two torn forms per block)."""
    return 3 + 2 * -(-size // block_size)


class _Inode:
    """What the disk (not the page cache) may hold for one inode.

    ``durable`` is the content as of its last successful fsync; ``pending`` the
    writes ``(None, offset, data)`` and metadata truncations ``(position, size, b"")``
    since, in program order; ``gates[i]`` is the shortest metadata prefix that keeps
    ``pending[i]`` (a truncation at position t: t + 1; a write: the number of
    metadata operations issued before it). ``whole`` is durable with all of them,
    ``bare`` with only the truncations.
    """

    __slots__ = ("bare", "durable", "gates", "opts", "pending", "reach", "stale", "truncs", "whole")

    def __init__(self, content: bytes) -> None:
        self.durable = content
        self.whole = content
        self.bare = content
        self.pending: list[tuple[int | None, int, bytes]] = []
        self.gates: list[int] = []
        self.truncs: list[int] = []  # metadata positions of pending truncations
        self.reach = len(content)  # no replay of the pending entries exceeds this size
        self.opts: _Options | None = None
        self.stale = True  # opts must be recomputed

    def write(self, offset: int, data: bytes, gate: int) -> None:
        self.pending.append((None, offset, data))
        self.gates.append(gate)
        self.whole = _write(self.whole, offset, data)
        self.reach = max(self.reach, len(self.whole), offset + len(data))
        self._changed()

    def trunc(self, position: int, size: int) -> None:
        self.pending.append((position, size, b""))
        self.gates.append(position + 1)
        self.truncs.append(position)
        self.whole = _resize(self.whole, size)
        self.bare = _resize(self.bare, size)
        self.reach = max(self.reach, size)
        self._changed()

    def sync(self) -> None:
        self.durable = self.bare = self.whole
        self.pending = []
        self.gates = []
        self.truncs = []
        self.reach = len(self.whole)
        self._changed()

    def lose(self) -> None:
        """fsyncgate: the pending writes are dropped for good."""
        kept = [i for i, p in enumerate(self.pending) if p[0] is not None]
        self.pending = [self.pending[i] for i in kept]
        self.gates = [self.gates[i] for i in kept]
        self.whole = self.bare
        self._changed()

    def _changed(self) -> None:
        """The options are recomputed when next asked for, and not kept meanwhile
        (their torn contents are large, and a frame may never ask again)."""
        self.stale = True
        self.opts = None

    def options(self, block_size: int) -> _Options | None:
        """Options with every pending entry kept; None if the content is settled."""
        if self.stale:
            self.stale = False
            self.opts = (
                None if self.whole == self.bare else _Options(self.whole, self.bare, block_size)
            )
        return self.opts

    def variant(self, cut: int, dropped: frozenset[int]) -> tuple[int, frozenset[int]] | None:
        """The key of the content when metadata prefix ``cut`` persisted less the
        positions in ``dropped``; None when every pending entry is kept."""
        gates = self.gates
        if not gates:
            return None
        lost = dropped.intersection(self.truncs) if dropped else frozenset()
        if gates[-1] <= cut and not lost:
            return None
        return bisect.bisect_right(gates, cut), lost

    def replay(self, upto: int, lost: frozenset[int]) -> tuple[bytes, bytes]:
        """(whole, bare) with the first ``upto`` pending entries, less the truncations
        at positions in ``lost`` and every write after the first of them."""
        whole = bare = self.durable
        broken = False
        for position, arg, data in self.pending[:upto]:
            if position is None:
                if not broken:
                    whole = _write(whole, arg, data)
            elif position in lost:
                broken = True
            else:
                whole = _resize(whole, arg)
                bare = _resize(bare, arg)
        return whole, bare


class _Choice(NamedTuple):
    """A metadata choice: the names and directories it leaves, and which metadata
    positions persisted (``< cut`` and not in ``dropped``)."""

    items: _Items
    dirs: tuple[str, ...]
    cut: int
    dropped: frozenset[int]


class _Frame:
    """One metadata choice with its inodes' contents: a family of crash states.

    ``key`` is its identity (names, directories, and which variant of each inode's
    content); the states are built once each (a frame may serve several crash points).
    """

    __slots__ = (
        "contents",
        "count",
        "dirs",
        "followers",
        "items",
        "key",
        "made",
        "paths",
        "slots",
    )

    def __init__(
        self,
        items: _Items,
        contents: list[bytes],
        slots: list[tuple[int, _Options]],
        dirs: tuple[str, ...],
        key: tuple[object, ...],
        followers: tuple[tuple[int, int], ...] = (),
    ) -> None:
        self.items = items
        # (item, leader item): a second name of an inode reads what its first name
        # (the one holding the inode's slot) reads (hard links)
        self.followers = followers
        self.paths = tuple(map(_first, items))
        self.contents = contents
        self.slots = slots
        self.dirs = dirs
        self.key = key
        self.made: dict[tuple[int, ...] | None, CrashState] = {}
        count = 1
        for _, opts in slots:
            count *= len(opts)
        self.count = count

    def state(self, combo: tuple[int, ...] | None) -> CrashState:
        """The crash state with option ``combo[i]`` for slot ``i`` (None: all whole)."""
        made = self.made.get(combo)
        if made is not None:
            return made
        if combo is None:
            contents = self.contents
        else:
            contents = list(self.contents)
            for (i, opts), c in zip(self.slots, combo, strict=True):
                if c:
                    contents[i] = opts[c]
            for i, leader in self.followers:
                contents[i] = contents[leader]
        made = self.made[combo] = new_crash_state(
            tuple(zip(self.paths, contents, strict=True)), self.dirs
        )
        return made


class _Kept:
    """The items an iterator gave, kept to be given again (then it goes on): one
    reader at a time."""

    __slots__ = ("items", "key", "source")

    def __init__(self, key: tuple[int, ...], source: Iterator[_Choice | None]) -> None:
        self.key = key
        self.items: list[_Choice | None] = []
        self.source = source

    def __iter__(self) -> Iterator[_Choice | None]:
        items = self.items
        yield from items
        for item in self.source:
            items.append(item)
            yield item


def _combos(frames: list[_Frame]) -> Iterator[tuple[_Frame, tuple[int, ...]]]:
    """Every (frame, combination) but the all-whole ones exactly once, fairest first:
    all pending data lost, one inode deviating, then the rest of each product."""
    for f in frames:
        if f.slots:
            yield f, (1,) * len(f.slots)
    for f in frames:
        r = len(f.slots)
        for i, (_, opts) in enumerate(f.slots):
            for o in range(1, len(opts)):
                if r == 1 and o == 1:
                    continue  # that is the all-lost combination
                single = [0] * r
                single[i] = o
                yield f, tuple(single)
    for f in frames:
        r = len(f.slots)
        if r < 2:
            continue
        for combo in itertools.product(*(range(len(opts)) for _, opts in f.slots)):
            deviating = r - combo.count(0)
            if deviating <= 1 or (deviating == r and combo.count(1) == r):
                continue
            yield f, combo


def reorder_bound(model: PersistenceModel, pending: int) -> int:
    """The largest number of the ``pending`` operations omitted together: the model's
    ``reorder_bound`` if set, else all of them while ``2**pending`` is at most
    :data:`~crashpoint.faultfs.REORDER_COMBINATIONS`, else the largest ``N`` with
    ``sum(C(pending, i) for i <= N)`` within that many."""
    if model.reorder_bound is not None:
        return min(model.reorder_bound, pending)
    if 1 << pending <= REORDER_COMBINATIONS:
        return pending
    total = 0
    for size in range(pending + 1):
        total += math.comb(pending, size)
        if total > REORDER_COMBINATIONS:
            return size - 1
    return pending  # pragma: no cover - 2**pending > the limit


def reorder_cut(pending: int, bound: int) -> int:
    """Combinations of omitted pending operations a bound leaves out: of the
    ``2**pending`` sets, those of at most ``bound`` operations are enumerated. An
    in-order prefix does not stand for the omission of the same operations: it also
    loses the writes issued after them, an omission keeps them."""
    covered = sum(math.comb(pending, i) for i in range(bound + 1))
    return (1 << pending) - covered


class _Explorer:
    """Replays a trace once and knows, after each operation, what a power cut may leave."""

    def __init__(self, model: PersistenceModel, initial: CrashState) -> None:
        bound = model.reorder_bound
        if model.block_size < 1 or model.max_states < 1 or (bound is not None and bound < 0):
            raise ValueError(
                f"model {model.name!r} needs block_size >= 1, max_states >= 1, "
                "reorder_bound >= 0 or None"
            )
        self.model = model
        self.reorder = model.reorder
        self.volatile = model.volatile_data
        vol = Image.from_crash_state(initial)
        self.vol = vol  # the page cache: validates the trace and resolves inodes
        self.nodes = {inode: _Inode(data) for inode, data in vol.data.items()}
        self.meta: list[_Meta] = []
        self.committed = 0  # metadata positions < committed are before the last barrier
        self.cp = 0  # base_* hold the image after meta[:cp]; cp <= committed
        self.base_names: _Names = dict(vol.names)
        self.base_dirs: set[str] = set(vol.dirs)
        # reorder: name -> positions of the ops that made it (its creation, and the
        # renames of directories that moved it there)
        self.creator: dict[str, tuple[int, ...]] = {}
        # reorder: position -> what must still be fsynced (parent directories, or
        # "\0<inode>" for a truncation), in position order
        self.pending: dict[int, set[str]] = {}
        self.trunc_pending: dict[int, list[int]] = {}  # reorder: inode -> positions
        self.truncs: set[int] = set()  # positions of every truncation
        # the names and directories after every metadata operation so far, and the
        # in-order prefixes reaching the last barrier, shortest first (one per
        # metadata operation after it, each built once)
        self.tip_names: _Names = dict(vol.names)
        self.tip_dirs: set[str] = set(vol.dirs)
        self.chain = [_Choice(tuple(sorted(vol.names.items())), _dirs_tuple(vol.dirs), 0, _NONE)]
        # the frame of each prefix, built when first needed, dropped when the content
        # of one of its inodes changes
        self.frames: list[_Frame | None] = [None]
        self._omitted: _Kept | None = None  # the omissions generated (reorder)
        self._result: tuple[tuple[CrashState, ...], int] | None = None

    # --- the trace ----------------------------------------------------------------
    def step(self, op: Op) -> None:
        kind = op.kind
        if kind not in _MUTATING:
            return
        if not effective(op):
            if (kind is _OP_FSYNC or kind is _OP_FDATASYNC) and op.label == "fsync-lost":
                inode = self.vol.names.get(op.path)
                if inode is not None:
                    self.nodes[inode].lose()
                    self._touch(inode)
                    self._result = None
            return
        self._result = None
        vol = self.vol
        if kind is _OP_WRITE:
            inode = vol.names.get(op.path)
            self._apply(op)
            assert inode is not None
            self.nodes[inode].write(op.offset, op.data, len(self.meta))
            self._touch(inode)
        elif kind is _OP_FSYNC or kind is _OP_FDATASYNC:
            # this family's journal commit is global: fdatasync commits as fsync does
            inode = vol.names.get(op.path)
            if inode is not None:
                self.nodes[inode].sync()
                self._touch(inode)
                if self.reorder:
                    mark = f"\0{inode}"
                    for position in self.trunc_pending.pop(inode, ()):
                        self._settle(position, mark)
            self._barrier()
        elif kind is _OP_FSYNC_DIR:
            if self.reorder:
                for position in list(self.pending):
                    self._settle(position, op.path)
            self._barrier()
        else:
            self._metadata(op)

    def _settle(self, position: int, what: str) -> None:
        parents = self.pending.get(position)
        if parents is not None:
            parents.discard(what)
            if not parents:
                del self.pending[position]

    def _apply(self, op: Op) -> None:
        try:
            self.vol.apply(op)
        except OSError as exc:
            raise ValueError(
                f"operation {op.index} {op.render()} does not replay onto the initial state: {exc}"
            ) from exc

    def _metadata(self, op: Op) -> None:
        vol = self.vol
        kind = op.kind
        path = op.path
        position = len(self.meta)
        names_used: tuple[str, ...]
        if kind is _OP_MKDIR:
            rec = _Meta(_MKDIR, path, 0)
            names_used = (parent_dir(path),)
        elif kind is _OP_CREATE:
            inode = vol.names.get(path)
            if inode is None:
                rec = _Meta(_NEW, path, vol.next_inode)
                names_used = (parent_dir(path),)
            else:
                rec = _Meta(_TRUNC, path, inode, size=0)
                names_used = (path,)
        elif kind is _OP_SYMLINK:
            # a new name and an inode holding the target, in one step: the target is
            # the inode's content from its creation on, never a pending write
            rec = _Meta(_NEW, path, vol.next_inode)
            names_used = (parent_dir(path),)
        elif kind is _OP_TRUNCATE:
            rec = _Meta(_TRUNC, path, vol.names.get(path, 0), size=op.size)
            names_used = (path,)
        elif kind is _OP_RENAME:
            dst = op.dst or ""
            if path in vol.dirs:
                if dst == path:
                    self._apply(op)  # a directory renamed onto itself: nothing happens
                    return
                rec = _Meta(_MOVE, path, 0, dst=dst)
                names_used = (path, parent_dir(dst))
            else:
                inode = vol.names.get(path, 0)
                if inode and dst != path and vol.names.get(dst) == inode:
                    self._apply(op)  # two names of one inode: rename(2) does nothing
                    return
                rec = _Meta(_RENAME, path, inode, dst=dst)
                names_used = (path, parent_dir(dst))
        elif kind is _OP_LINK:
            dst = op.dst or ""
            rec = _Meta(_LINK, path, vol.names.get(path, 0), dst=dst)
            names_used = (path, parent_dir(dst))
        elif kind is _OP_RMDIR:
            rec = _Meta(_RMDIR, path, 0)
            names_used = (path,)
        else:
            rec = _Meta(_UNLINK, path, vol.names.get(path, 0))
            names_used = (path,)
        if self.reorder:
            creator = self.creator
            deps = [c for n in names_used for c in creator.get(n, ())]
            if rec.kind == _RMDIR or (rec.kind == _MOVE and rec.dst in vol.dirs):
                # a directory goes only once the removals of its entries persisted
                emptied = rec.path if rec.kind == _RMDIR else rec.dst
                deps += [
                    q
                    for q in range(self.cp, position)
                    if self.meta[q].kind in (_UNLINK, _RENAME, _RMDIR, _MOVE)
                    and parent_dir(self.meta[q].path) == emptied
                ]
            rec.deps = tuple(deps)
        if rec.kind == _MOVE and self.reorder:
            # what the directory holds now lives under dst, only if the move persisted
            prefix = path + "/"
            cut = len(path)
            moved = [p for p in (*vol.dirs, *vol.names) if p == path or p.startswith(prefix)]
            for p in moved:
                self.creator[rec.dst + p[cut:]] = (*self.creator.pop(p, ()), position)
        self._apply(op)
        if rec.kind == _NEW:
            self.nodes[rec.inode] = _Inode(vol.data[rec.inode])  # b"", or a link's target
        elif rec.kind == _TRUNC:
            self.nodes[rec.inode].trunc(position, rec.size)
            self._touch(rec.inode)
            self.truncs.add(position)
        if self.reorder:
            if rec.kind == _RENAME:
                creator.pop(path, None)
                creator[rec.dst] = (position,)
                self.pending[position] = {parent_dir(path), parent_dir(rec.dst)}
            elif rec.kind == _MOVE:
                self.pending[position] = {parent_dir(path), parent_dir(rec.dst)}
            elif rec.kind == _LINK:
                creator[rec.dst] = (position,)
                self.pending[position] = {parent_dir(rec.dst)}
            elif rec.kind == _UNLINK or rec.kind == _RMDIR:
                creator.pop(path, None)
                self.pending[position] = {parent_dir(path)}
            elif rec.kind == _TRUNC:
                self.pending[position] = {f"\0{rec.inode}"}
                self.trunc_pending.setdefault(rec.inode, []).append(position)
            else:
                creator[path] = (position,)
                self.pending[position] = {parent_dir(path)}
        self.meta.append(rec)
        rec.replay(self.tip_names, self.tip_dirs)
        dirs_t = _dirs_tuple(self.tip_dirs) if rec.kind in _DIR_CHANGES else self.chain[-1].dirs
        self.chain.append(
            _Choice(tuple(sorted(self.tip_names.items())), dirs_t, position + 1, _NONE)
        )
        self.frames.append(None)

    def _barrier(self) -> None:
        self.committed = len(self.meta)
        target = self.committed
        if self.pending:
            target = min(target, next(iter(self.pending)))
        for position in range(self.cp, target):
            self.meta[position].replay(self.base_names, self.base_dirs)
        self.cp = max(self.cp, target)
        del self.chain[:-1]  # the one prefix reaching this barrier: every operation
        del self.frames[:-1]

    def _touch(self, inode: int) -> None:
        """The content of ``inode`` changed: forget the frames holding it."""
        frames = self.frames
        for j, frame in enumerate(frames):
            if frame is not None:
                for _, held in frame.items:
                    if held == inode:
                        frames[j] = None
                        break

    # --- metadata choices ---------------------------------------------------------------
    def omissions(self, bound: int) -> Iterator[_Choice | None]:
        """Reorder: for every set of at most ``bound`` pending operations, fewest
        first, the choice where they (and their dependants) are lost and every other
        operation persists, or None when it repeats an earlier one (the same names,
        directories and lost truncations: the same contents). A set holding a
        dependant of another member repeats the smaller set without it, so only sets
        free of such pairs are generated.

        The choices depend on the metadata operations, the last barrier's base and
        the pending operations only: those generated are kept while these stay (a
        write changes none of them)."""
        key = (len(self.meta), self.cp, bound, *self.pending)
        kept = self._omitted
        if kept is None or kept.key != key:
            kept = self._omitted = _Kept(key, self._omissions(bound))
        return iter(kept)

    def _omissions(self, bound: int) -> Iterator[_Choice | None]:
        meta = self.meta
        truncs = self.truncs
        seen: set[tuple[object, ...]] = set()
        n = len(meta)
        cp = self.cp
        pending = list(self.pending)  # in position order, the first at cp or later
        count = len(pending)
        bit = {position: 1 << i for i, position in enumerate(pending)}
        # lost_with[position - cp]: omitting any of these loses ``position`` (itself
        # if pending, and the pending operations it depends on, transitively), a bit mask
        lost_with: list[int] = []
        for position in range(cp, n):
            mask = bit.get(position, 0)
            for d in meta[position].deps:
                if d >= cp:
                    mask |= lost_with[d - cp]
            lost_with.append(mask)
        # the names before each pending operation when nothing is omitted: a set's
        # replay starts at its first member
        snaps: list[tuple[_Names, set[str]]] = []
        names = dict(self.base_names)
        dirs = set(self.base_dirs)
        for position in range(cp, pending[-1] + 1):
            if position in bit:
                snaps.append((dict(names), set(dirs)))
            meta[position].replay(names, dirs)
        all_dirs = self.chain[-1].dirs  # every operation persisted

        def sets(start: int, size: int, chosen: int) -> Iterator[int]:
            if size == 1:
                for i in range(start, count):
                    if not above[i] & chosen:
                        yield chosen | 1 << i
                return
            for i in range(start, count - size + 1):
                if not above[i] & chosen:
                    yield from sets(i + 1, size - 1, chosen | 1 << i)

        # above[i]: the pending operations that pending operation i depends on
        above = [lost_with[position - cp] & ~(1 << i) for i, position in enumerate(pending)]
        for size in range(1, bound + 1):
            for chosen in sets(0, size, 0):
                first = (chosen & -chosen).bit_length() - 1
                names = dict(snaps[first][0])
                dirs = set(snaps[first][1])
                dropped: list[int] = []
                lost_dir = False
                for position in range(pending[first], n):
                    rec = meta[position]
                    if lost_with[position - cp] & chosen:
                        dropped.append(position)
                        lost_dir = lost_dir or rec.kind in _DIR_CHANGES
                    else:
                        rec.replay(names, dirs)
                items = tuple(sorted(names.items()))
                dirs_t = _dirs_tuple(dirs) if lost_dir else all_dirs
                lost = frozenset(dropped)
                same = (items, dirs_t, lost & truncs)
                if same in seen:
                    yield None
                    continue
                seen.add(same)
                yield _Choice(items, dirs_t, n, lost)

    # --- crash states ---------------------------------------------------------------------
    def frame(
        self,
        choice: _Choice,
        special: dict[tuple[int, int, frozenset[int]], _Options | bytes],
        known: set[tuple[object, ...]] | None = None,
    ) -> _Frame | None:
        """The frame of ``choice``; None if a frame with its key (its names, and
        which variant of each inode's content) is in ``known`` (it is added)."""
        nodes = self.nodes
        items = choice.items
        contents: list[bytes] = []  # every content whole, to start with
        live: list[int] = []  # the items whose inode has pending entries
        for i, (_, inode) in enumerate(items):
            node = nodes[inode]
            contents.append(node.whole)
            if node.gates:
                live.append(i)
        cut = choice.cut
        dropped = choice.dropped
        # an inode without pending entries has one content (its variant is None)
        variants = tuple([nodes[items[i][1]].variant(cut, dropped) for i in live])
        key = (items, choice.dirs, variants)
        if known is not None:
            if key in known:
                return None
            known.add(key)
        block_size = self.model.block_size
        volatile = self.volatile
        slots: list[tuple[int, _Options]] = []
        followers: list[tuple[int, int]] = []
        slotted: dict[int, int] = {}  # inode -> the item holding its slot
        for i, variant in zip(live, variants, strict=True):
            inode = items[i][1]
            leader = slotted.get(inode)
            if leader is not None:
                contents[i] = contents[leader]
                followers.append((i, leader))
                continue
            if variant is None:
                opts = nodes[inode].options(block_size) if volatile else None
                if opts is not None:  # its whole content is option 0
                    slots.append((i, opts))
                    slotted[inode] = i
                continue
            vkey = (inode, *variant)
            found = special.get(vkey)
            if found is None:
                whole, bare = nodes[inode].replay(*variant)
                if not volatile or whole == bare:
                    found = whole
                else:
                    found = _Options(whole, bare, block_size)
                special[vkey] = found
            if isinstance(found, bytes):
                contents[i] = found
            else:
                contents[i] = found[0]
                slots.append((i, found))
                slotted[inode] = i
        return _Frame(items, contents, slots, choice.dirs, key, tuple(followers))

    def data_bound(self) -> int:
        """At most how many data combinations one metadata choice can have."""
        if not self.volatile:
            return 1
        bound = 1
        block_size = self.model.block_size
        for node in self.nodes.values():
            if node.pending:
                bound *= _options_bound(node.reach, block_size)
        return bound

    def states(self) -> tuple[tuple[CrashState, ...], int]:
        """The distinct crash states after the operations so far, and the cut count."""
        if self._result is None:
            self._result = self._states()
        return self._result

    def _states(self) -> tuple[tuple[CrashState, ...], int]:
        limit = self.model.max_states
        frames: list[_Frame] = []
        keys: set[tuple[object, ...]] = set()
        special: dict[tuple[int, int, frozenset[int]], _Options | bytes] = {}
        seen: dict[CrashState, None] = {}
        chain = self.chain
        cached = self.frames
        reached = 0  # metadata choices reached
        full = False
        # the in-order prefixes, most persisted first; their frames are kept
        for j in range(len(chain) - 1, -1, -1):
            reached += 1
            frame = cached[j]
            if frame is None:
                frame = cached[j] = self.frame(chain[j], special)
                assert frame is not None
            if frame.key in keys:
                continue
            keys.add(frame.key)
            frames.append(frame)
            seen[frame.state(None)] = None
            if len(seen) >= limit:
                full = True
                break
        p = len(self.pending) if self.reorder else 0
        bound = reorder_bound(self.model, p) if p else 0
        if bound and not full:
            for choice in self.omissions(bound):
                reached += 1
                if choice is None:
                    continue  # the same names and contents as an omission before
                frame = self.frame(choice, special, keys)
                if frame is None:
                    continue
                frames.append(frame)
                seen[frame.state(None)] = None
                if len(seen) >= limit:
                    full = True
                    break
        cut = 0  # the data combinations of the frames, less the all-whole ones
        slotted: list[_Frame] = []  # the frames with data combinations
        for frame in frames:
            if frame.slots:
                cut += frame.count - 1
                slotted.append(frame)
        # combinations of omitted operations the bound left out, and (max_states)
        # the metadata choices not reached
        left = reorder_cut(p, bound) if bound < p else 0
        if full:
            left += len(chain) + sum(math.comb(p, i) for i in range(1, bound + 1)) - reached
        elif slotted:
            for frame, combo in _combos(slotted):
                cut -= 1
                seen[frame.state(combo)] = None
                if len(seen) >= limit:
                    break
        if left:
            cut += left * self.data_bound()
        return tuple(seen), cut

    def pessimistic(self) -> CrashState:
        """Metadata after the last barrier lost and every pending write lost."""
        frame = self.frame(self.chain[0], {}, set())  # the prefix reaching the last barrier
        assert frame is not None
        return frame.state((1,) * len(frame.slots))


_NONE: frozenset[int] = frozenset()
_first = operator.itemgetter(0)


def _dirs_tuple(dirs: set[str]) -> tuple[str, ...]:
    return tuple(sorted(d for d in dirs if d != "/"))


def power_crash_points(
    model: PersistenceModel,
    initial: CrashState,
    ops: Sequence[Op],
    *,
    points: Container[int] | None = None,
) -> Iterator[CrashPoint]:
    """Every crash point ``k = 0 .. len(ops)`` of a trace under a power-loss model.

    Args:
        model: ``power-loss``, ``power-loss-reorder`` or a variant of them (block
            size, ``max_states``, ``reorder_bound``). With ``volatile_data`` False the
            data of every inode survives whole and only metadata is at risk.
        initial: the durable disk the run started from.
        ops: the trace's mutating operations in program order (failed ones are
            skipped, a short write's stored prefix counts, an ``fsync-lost`` fsync
            drops its inode's pending data).
        points: only the crash points ``k`` in it (the others' states are never
            enumerated; the operations are still replayed).

    Yields:
        One :class:`~crashpoint.faultfs.CrashPoint` per ``k``: distinct crash states
        in a deterministic order, at most ``model.max_states`` of them, and in
        ``cut`` an upper bound on the distinct crash states not generated (the
        combinations a bound left out; 0 when the enumeration was exhaustive).

    Raises:
        ValueError: an operation does not replay onto ``initial`` (a trace recorded
            from another disk), or the model's bounds are not positive.
    """
    if model.hypothetical:
        raise ValueError(
            f"model {model.name!r}: the journaled family has no device options "
            "(atomic_write below the block, drive_ignores_flush): use a file-system family"
        )
    explorer = _Explorer(model, initial)
    n = len(ops)
    for k in range(n + 1):
        if points is None or k in points:
            states, cut = explorer.states()
            yield new_crash_point(k, ops[k] if k < n else None, states, cut)
        if k < n:
            explorer.step(ops[k])


def durable_state(initial: CrashState, ops: Sequence[Op]) -> CrashState:
    """The most pessimistic ``power-loss`` crash state after ``ops``: every metadata
    operation after the last barrier lost and every write not made durable by an
    fsync of its file lost (files created since read back empty)."""
    explorer = _Explorer(_PESSIMIST, initial)
    for op in ops:
        explorer.step(op)
    return explorer.pessimistic()


_PESSIMIST = PersistenceModel("journaled", volatile_data=True, family="journaled")


@dataclass(frozen=True, slots=True)
class PowerLossFamily:
    """The journaled power-loss family, the engine of ``power-loss`` and
    ``power-loss-reorder`` until they became aliases of ``ext4`` and ``posix`` (issue 20);
    kept, registered as ``journaled``, as the model the reality suite validated first: the
    families are tested never to be stronger (this module's docstring states its rules;
    FAULT-MODEL.md §3). The model's
    ``volatile_data`` (un-fsynced data may be lost or torn) and ``reorder`` (ALICE:
    pending metadata may be lost while later operations persist) select its variant.

    Attributes:
        name: ``"journaled"``.
        source: where the rules come from.
    """

    name: str = "journaled"
    source: str = (
        "ext4 data=ordered with delayed allocation; LazyFS (Ramos et al., VLDB 2024); "
        "ALICE (Pillai et al., OSDI 2014) (FAULT-MODEL.md §3)"
    )

    def crash_points(
        self,
        model: PersistenceModel,
        initial: CrashState,
        ops: Sequence[Op],
        points: Container[int] | None,
    ) -> Iterator[CrashPoint]:
        """:func:`power_crash_points`."""
        return power_crash_points(model, initial, ops, points=points)

    def durable(self, model: PersistenceModel, ops: Sequence[Op], k: int) -> list[bool]:
        """For each of ``ops[:k]``, whether it is durable at crash point ``k``: a barrier
        when it succeeded; a write once a later successful ``fsync`` of its inode
        (followed across renames) ran; other metadata, in order (``reorder`` False),
        once any later successful barrier ran; with ``reorder``, a directory
        operation once an fsync of each parent directory ran after it, a truncation
        once an fsync of its file ran. Without ``volatile_data`` and ``reorder``
        every completed operation is durable."""
        done = ops[:k]
        if not model.volatile_data and not model.reorder:
            return [True] * len(done)
        out: list[bool] = []
        for i, op in enumerate(done):
            later = done[i + 1 :]
            if op.kind.barrier:
                out.append(op.errno is None)
                continue
            if op.kind is _OP_WRITE:
                path = op.path
                durable = False
                for nxt in later:
                    if (
                        (nxt.kind is _OP_FSYNC or nxt.kind is _OP_FDATASYNC)
                        and nxt.path == path
                        and nxt.errno is None
                    ):
                        durable = True
                        break
                    if nxt.kind is _OP_RENAME and nxt.path == path and nxt.dst:
                        path = nxt.dst  # data belongs to the inode and moves with it
                out.append(durable)
                continue
            if model.reorder:
                parents = {posixpath.dirname(op.path)}
                if op.dst:
                    parents.add(posixpath.dirname(op.dst))
                if op.kind is _OP_TRUNCATE:
                    durable = any(
                        (n.kind is _OP_FSYNC or n.kind is _OP_FDATASYNC) and n.path == op.path
                        for n in later
                    )
                else:
                    durable = all(
                        any(n.kind is _OP_FSYNC_DIR and n.path == p for n in later) for p in parents
                    )
                out.append(durable)
            else:
                out.append(any(n.kind.barrier and n.errno is None for n in later))
        return out


POWER_FAMILY = PowerLossFamily()
"""The journaled power-loss family (registered as ``journaled``)."""

JOURNALED = PersistenceModel(
    "journaled", volatile_data=True, source=POWER_FAMILY.source, family=POWER_FAMILY.name
)
"""The journaled engine's in-order model: what ``power-loss`` named before issue 20 (no
``--model`` name; the property tests compare the families with it)."""

JOURNALED_REORDER = PersistenceModel(
    "journaled-reorder",
    volatile_data=True,
    reorder=True,
    source=POWER_FAMILY.source,
    family=POWER_FAMILY.name,
)
"""The journaled engine with ALICE's reordering: what ``power-loss-reorder`` named before
issue 20."""

"""Persistence model families per file system: ``ext4``, ``xfs``, ``btrfs``, ``posix``
(FAULT-MODEL.md §3, families decided 2026-12-02; issue 20).

A family is data: a few rules (:class:`FileSystemFamily`), each with its source in
``docs/models.md``. One enumerator (:func:`family_crash_points`) derives the crash
states of a trace from them. What a power cut may leave is split in two, as the
measurements of issue 20 show the kernels do:

**Metadata** (mkdir, create, truncate, rename, unlink, link, rmdir: positions in the
trace's metadata order) persists as the set ``F ∪ R`` where ``F`` is what barriers
*forced* and ``R`` what reached the disk anyway:

* a journaled family (``ext4``, ``xfs``, ``btrfs``): ``R`` is an in-order prefix of
  the metadata (the journal, or btrfs's transactions, commit in order), reaching at
  least the last commit a barrier caused;
* ``posix``: ``R`` is any set closed under dependencies (an operation on a name keeps
  the operation that made the name; an rmdir keeps the removals of the directory's
  entries): POSIX orders nothing it does not promise (ALICE's default model). An
  operation a barrier settled (a directory's entries after its fsync) is in ``R``
  whenever what it depends on is: lost only with a dependency (a new directory whose
  parent was never synced), never alone.

What a barrier forces is the family's rule (:class:`FileSystemFamily`):
``fsync_commits`` (of a file whose inode is dirty), ``datasync_commits`` (``fdatasync``
of a file whose size changed since its last sync; otherwise nothing) and
``dir_fsync_commits``. An inode is dirty after a size change, a truncation or its
creation; after only same-size overwrites it *may* be (the model has no clock: the
timestamp may or may not have ticked), and both outcomes are explored (*worlds*). An
fsync of a clean inode commits nothing beyond its data (measured: fsync of an
unchanged file after ``rename(A, B)`` lost the rename on ext4, XFS and btrfs).

**Data** belongs to the inode and is independent of the metadata (measured: an
overwrite survived while an earlier rename was lost). An inode's blocks (of
``model.block_size`` bytes) written since its last ``fsync``/``fdatasync`` are
*dirty*; at the cut each reached the disk or did not: in any order
(``block_order="any"``: ext4, XFS, posix; measured ``[old, old, new]``), or only as
a prefix in offset order (``"offset"``: btrfs, copy-on-write). The size is the
durable one (with the truncations the metadata choice keeps) or the final one, or,
for a prefix of the dirty blocks, the end of that prefix (ext4 delayed allocation).
With more than ``model.writeback_bound`` dirty blocks in an inode only the
offset-order prefixes are enumerated and the other orders are counted in ``cut``.

Enumeration: metadata choices (each world's prefixes, or posix's sets of omitted
operations, exhaustive while ``2**pending <= REORDER_COMBINATIONS`` else bounded by
``reorder_bound`` and counted), and for each the product of the reachable inodes'
data options, fairly: every choice with all data whole, then all pending data lost,
then one inode deviating, then the rest, up to ``model.max_states`` distinct states.
``cut`` is an upper bound on the distinct crash states not generated: 0 exactly when
the enumeration was exhaustive.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass

from . import _dirops
from ._family import REORDER_COMBINATIONS, CrashPoint, PersistenceModel, effective, new_crash_point
from ._image import CrashState, Image, new_crash_state, parent_dir
from ._trace import Op, OpKind

__all__ = ["BTRFS", "EXT4", "FS_FAMILIES", "POSIX", "XFS", "FileSystemFamily"]

_W, _CREATE, _RENAME, _MKDIR, _TRUNCATE, _UNLINK, _LINK, _RMDIR = (
    OpKind.WRITE,
    OpKind.CREATE,
    OpKind.RENAME,
    OpKind.MKDIR,
    OpKind.TRUNCATE,
    OpKind.UNLINK,
    OpKind.LINK,
    OpKind.RMDIR,
)
_FSYNC, _FDATASYNC, _FSYNC_DIR = OpKind.FSYNC, OpKind.FDATASYNC, OpKind.FSYNC_DIR
_SYMLINK = OpKind.SYMLINK
_DIR_OPS = frozenset({_FSYNC_DIR, _RMDIR})

# metadata record kinds
_K_MKDIR, _K_NEW, _K_RENAME, _K_UNLINK, _K_TRUNC, _K_LINK, _K_RMDIR, _K_MOVE = (
    _dirops.MKDIR,
    _dirops.NEW,
    _dirops.RENAME,
    _dirops.UNLINK,
    _dirops.TRUNC,
    _dirops.LINK,
    _dirops.RMDIR,
    _dirops.MOVE,
)

_MAX_PICKS = 4096
"""At most this many choices of block contents per inode are built; the rest are
counted in ``cut``."""

_MAX_SNAPSHOTS = 16
"""The delayed-allocation forms are built from the page cache after at most this many of
an inode's last writes; the others are counted in ``cut``."""

_MAX_WORLDS = 32
"""At most this many worlds (outcomes of fsyncs that may or may not commit) are kept;
the states of those dropped are counted in ``cut``."""


@dataclass(frozen=True, slots=True)
class FileSystemFamily:
    """The rules of one file system's behaviour under a power cut, as data.

    Attributes:
        name: ``ext4``, ``xfs``, ``btrfs`` or ``posix``.
        journal: metadata not forced by a barrier persists as an in-order prefix (a
            journal or ordered transactions); False: any dependency-closed set.
        block_order: ``"any"``: dirty blocks of a file reach the disk in any order;
            ``"offset"``: only a prefix in offset order (copy-on-write).
        fsync_commits: what ``fsync`` of a file with a dirty inode forces besides its
            data and size: ``"journal"`` every earlier metadata operation (one global
            journal), ``"inode"`` the operations on that inode (its names, its
            truncations: a per-inode log), ``"size"`` only its truncations.
        datasync_commits: the same for ``fdatasync`` of a file whose size changed since
            its last sync (otherwise ``fdatasync`` forces nothing but data).
        dir_fsync_commits: what ``fsync`` of a directory forces: ``"journal"`` every
            earlier metadata operation, whether or not the directory changed;
            ``"changed"`` every metadata operation up to the directory's last change
            (none if it did not change: a log forced up to the directory's sequence);
            ``"entries"`` the operations that changed its entries; ``"all-parents"``
            those of them whose every parent directory was fsynced since.
        source: where the rules come from (``docs/models.md`` details each).
    """

    name: str
    journal: bool
    block_order: str
    fsync_commits: str
    datasync_commits: str
    dir_fsync_commits: str
    source: str

    def crash_points(
        self,
        model: PersistenceModel,
        initial: CrashState,
        ops: Sequence[Op],
        points: Container[int] | None,
    ) -> Iterator[CrashPoint]:
        """:func:`family_crash_points` under this family."""
        return family_crash_points(self, model, initial, ops, points)

    def durable(self, model: PersistenceModel, ops: Sequence[Op], k: int) -> list[bool]:
        """For each of ``ops[:k]``, whether every crash state at ``k`` keeps it: a
        successful barrier; a write once a later successful ``fsync``/``fdatasync`` of
        its file ran (followed across renames); a metadata operation once every world
        forced it or committed past it; a failed operation (it changed nothing)."""
        done = list(ops[:k])
        if model.drive_ignores_flush:  # nothing forced: only what changed nothing is kept
            return [op.errno is None if op.kind.barrier else not effective(op) for op in done]
        replay = _Replay(self, model, _guess_initial(done))
        for op in done:
            replay.step(op, strict=False)
        forced = replay.surely_forced()
        out: list[bool] = []
        for i, op in enumerate(done):
            if op.kind.barrier:
                out.append(op.errno is None)
            elif not effective(op):
                out.append(True)
            elif op.kind is _W:
                path = op.path
                durable = False
                for nxt in done[i + 1 :]:
                    if nxt.errno is not None:
                        continue
                    if (nxt.kind is _FSYNC or nxt.kind is _FDATASYNC) and nxt.path == path:
                        durable = True
                        break
                    if nxt.kind is _RENAME and nxt.path == path and nxt.dst:
                        path = nxt.dst
                out.append(durable)
            else:
                position = replay.op_of.get(op.index)
                out.append(position is None or position in forced)
        return out


EXT4 = FileSystemFamily(
    "ext4",
    journal=True,
    block_order="any",
    fsync_commits="journal",
    datasync_commits="journal",
    dir_fsync_commits="journal",
    source=(
        "ext4 data=ordered, delayed allocation (jbd2: one running transaction; "
        "ext4_sync_file commits it when the inode's i_sync_tid/i_datasync_tid is in it); "
        "measured on loop images (issue 20); docs/models.md"
    ),
)
XFS = FileSystemFamily(
    "xfs",
    journal=True,
    block_order="any",
    fsync_commits="journal",
    datasync_commits="journal",
    dir_fsync_commits="changed",
    source=(
        "XFS (xfs_file_fsync forces the log up to the inode's last commit sequence, "
        "none when the inode is clean); measured on loop images (issue 20); docs/models.md"
    ),
)
BTRFS = FileSystemFamily(
    "btrfs",
    journal=True,
    block_order="offset",
    fsync_commits="inode",
    datasync_commits="inode",
    dir_fsync_commits="entries",
    source=(
        "btrfs (copy-on-write; btrfs_sync_file logs the inode in the log tree, not the "
        "transaction); measured on loop images (issue 20); docs/models.md"
    ),
)
POSIX = FileSystemFamily(
    "posix",
    journal=False,
    block_order="any",
    fsync_commits="size",
    datasync_commits="size",
    dir_fsync_commits="all-parents",
    source=(
        "POSIX fsync/fdatasync (IEEE 1003.1: data and the file's size, nothing about its "
        "names); ALICE's default abstract persistence model (Pillai et al., OSDI 2014)"
    ),
)
FS_FAMILIES: tuple[FileSystemFamily, ...] = (EXT4, XFS, BTRFS, POSIX)
"""The file-system families, weakest last (``posix`` has every state of the others)."""


def _guess_initial(ops: Sequence[Op]) -> CrashState:
    """A disk the operations replay onto: the directories their paths lie in that no
    operation creates, and the files they use before creating them (empty)."""
    made: set[str] = set()
    dirs: set[str] = set()
    files: dict[str, bytes] = {}
    for op in ops:
        if not effective(op):
            continue
        for path in (op.path, op.dst or ""):
            parent = parent_dir(path) if path else "/"
            while parent not in ("/", "") and parent not in made:
                dirs.add(parent)
                parent = parent_dir(parent)
        if op.kind is _MKDIR:
            made.add(op.path)
        elif op.kind is _CREATE or op.kind is _LINK or op.kind is _SYMLINK:
            made.add(op.dst if op.kind is _LINK and op.dst else op.path)
        elif op.path not in made and op.path not in dirs and op.kind not in _DIR_OPS:
            files[op.path] = b""
        if op.kind is _RENAME and op.dst:
            made.add(op.dst)
    return CrashState(tuple(sorted(files.items())), tuple(sorted(dirs - made)))


# --- replay -----------------------------------------------------------------------------


class _Rec:
    """A metadata operation with its inode resolved on the page-cache image."""

    __slots__ = ("deps", "dst", "inode", "kind", "parents", "path", "size")

    def __init__(
        self,
        kind: int,
        path: str,
        inode: int,
        parents: tuple[str, ...],
        dst: str = "",
        size: int = 0,
    ) -> None:
        self.kind = kind
        self.path = path
        self.dst = dst
        self.inode = inode
        self.size = size
        self.parents = parents  # directories whose entries it changes
        self.deps: frozenset[int] = frozenset()

    def replay(self, names: dict[str, int], dirs: set[str]) -> None:
        """Apply this operation's directory effect (:func:`._dirops.apply`)."""
        _dirops.apply(self.kind, self.path, self.dst, self.inode, names, dirs)


class _Data:
    """What the disk may hold for one inode: its content as of its last data sync
    (``durable``), the pending writes ``(None, offset, data)`` and truncations
    ``(position, size, b"")`` since, the page-cache content ``whole``, and the dirty
    blocks."""

    __slots__ = ("dirty", "durable", "pending", "state", "whole")

    def __init__(self, content: bytes) -> None:
        self.durable = content
        self.whole = content
        self.pending: list[tuple[int | None, int, bytes]] = []
        self.dirty: set[int] = set()
        self.state = 0  # inode dirtiness since its last fsync: 0 clean, 1 maybe, 2 dirty

    def size_changed(self) -> bool:
        return len(self.whole) != len(self.durable) or any(p[0] is not None for p in self.pending)

    def sync(self) -> None:
        self.durable = self.whole
        self.pending = []
        self.dirty = set()


class _Replay:
    """The trace replayed once under one family: metadata records, forced sets, data."""

    def __init__(self, family: FileSystemFamily, model: PersistenceModel, initial: CrashState):
        self.family = family
        self.model = model
        vol = Image.from_crash_state(initial)
        self.vol = vol
        self.initial_names = dict(vol.names)
        self.initial_dirs = set(vol.dirs)
        self.data = {inode: _Data(content) for inode, content in vol.data.items()}
        self.meta: list[_Rec] = []
        self.op_of: dict[int, int] = {}  # trace index -> metadata position
        self.creator: dict[str, frozenset[int]] = {}
        # worlds: (forced positions, committed prefix length); several when an fsync may
        # or may not have committed
        self.worlds: list[tuple[frozenset[int], int]] = [(frozenset(), 0)]
        self.worlds_cut = 0
        # posix: position -> parent directories not yet fsynced since it, and the
        # operations their barriers settled
        self.awaiting: dict[int, set[str]] = {}
        self.settled: set[int] = set()
        # dirty data tears at this many bytes: the block, or the device's smaller atomic
        # write (FAULT-MODEL.md §3: 512 adds sub-block tears)
        self.unit = min(model.block_size, model.atomic_write)

    # --- the trace ------------------------------------------------------------------
    def step(self, op: Op, *, strict: bool = True) -> None:
        kind = op.kind
        if not kind.mutating:
            return
        if not effective(op):
            if (kind is _FSYNC or kind is _FDATASYNC) and op.label == "fsync-lost":
                inode = self.vol.names.get(op.path)
                if inode is not None:
                    node = self.data[inode]
                    node.whole = self._bare(node)
                    node.pending = [p for p in node.pending if p[0] is not None]
                    node.dirty = set()
            return
        vol = self.vol
        if kind is _W:
            inode = vol.names.get(op.path)
            if not self._apply(op, strict) or inode is None:
                return
            node = self.data[inode]
            before = len(node.whole)
            # applied to what the disk may hold (data an fsync-lost dropped stays lost)
            node.whole = _write(node.whole, op.offset, op.data)
            node.pending.append((None, op.offset, op.data))
            bs = self.unit
            node.dirty.update(range(op.offset // bs, (op.offset + len(op.data) - 1) // bs + 1))
            node.state = max(node.state, 2 if len(node.whole) != before else 1)
        elif self.model.drive_ignores_flush and kind.barrier:
            return  # the drive acknowledged the flush and kept its cache: nothing forced
        elif kind is _FSYNC or kind is _FDATASYNC:
            inode = vol.names.get(op.path)
            if inode is None:
                return
            node = self.data[inode]
            if kind is _FSYNC:
                rule, state = self.family.fsync_commits, node.state
                node.state = 0
            else:
                rule, state = self.family.datasync_commits, 2 if node.size_changed() else 0
            node.sync()
            if state:
                self._commit(rule, inode, maybe=state == 1)
        elif kind is _FSYNC_DIR:
            if vol.is_dir(op.path):
                self._commit_dir(op.path)
        else:
            self._metadata(op, strict)

    def _apply(self, op: Op, strict: bool) -> bool:
        try:
            self.vol.apply(op)
        except OSError as exc:
            if strict:
                raise ValueError(
                    f"operation {op.index} {op.render()} does not replay onto the initial "
                    f"state: {exc}"
                ) from exc
            return False
        return True

    def _bare(self, node: _Data) -> bytes:
        content = node.durable
        for position, size, _ in node.pending:
            if position is not None:
                content = _resize(content, size)
        return content

    def _metadata(self, op: Op, strict: bool) -> None:
        vol = self.vol
        kind = op.kind
        path = op.path
        dst = op.dst or ""
        position = len(self.meta)
        used: tuple[str, ...]
        if kind is _MKDIR:
            rec, used = _Rec(_K_MKDIR, path, 0, (parent_dir(path),)), (parent_dir(path),)
        elif kind is _CREATE:
            inode = vol.names.get(path)
            if inode is None:
                rec = _Rec(_K_NEW, path, vol.next_inode, (parent_dir(path),))
                used = (parent_dir(path),)
            else:
                rec, used = _Rec(_K_TRUNC, path, inode, (), size=0), (path,)
        elif kind is _SYMLINK:
            # a new name and an inode holding the target, in one step (no data to lose)
            rec = _Rec(_K_NEW, path, vol.next_inode, (parent_dir(path),))
            used = (parent_dir(path),)
        elif kind is _TRUNCATE:
            rec, used = _Rec(_K_TRUNC, path, vol.names.get(path, 0), (), size=op.size), (path,)
        elif kind is _RENAME:
            parents = (parent_dir(path), parent_dir(dst))
            if path in vol.dirs:
                if dst == path:
                    self._apply(op, strict)
                    return
                rec = _Rec(_K_MOVE, path, 0, parents, dst=dst)
            else:
                inode = vol.names.get(path, 0)
                if inode and dst != path and vol.names.get(dst) == inode:
                    self._apply(op, strict)
                    return
                rec = _Rec(_K_RENAME, path, inode, parents, dst=dst)
            used = (path, parent_dir(dst))
        elif kind is _LINK:
            rec = _Rec(_K_LINK, path, vol.names.get(path, 0), (parent_dir(dst),), dst=dst)
            used = (path, parent_dir(dst))
        elif kind is _RMDIR:
            rec, used = _Rec(_K_RMDIR, path, 0, (parent_dir(path),)), (path,)
        else:
            rec = _Rec(_K_UNLINK, path, vol.names.get(path, 0), (parent_dir(path),))
            used = (path,)
        deps = {c for n in used for c in self.creator.get(n, ())}
        if rec.kind == _K_RMDIR or (rec.kind == _K_MOVE and dst in vol.dirs):
            emptied = path if rec.kind == _K_RMDIR else dst
            deps.update(
                q
                for q, r in enumerate(self.meta)
                if r.kind in (_K_UNLINK, _K_RENAME, _K_RMDIR, _K_MOVE)
                and parent_dir(r.path) == emptied
            )
        closed: set[int] = set(deps)
        for d in deps:
            closed |= self.meta[d].deps
        rec.deps = frozenset(closed)
        moved: list[str] = []
        if rec.kind == _K_MOVE:
            prefix = path + "/"
            moved = [p for p in (*vol.dirs, *vol.names) if p == path or p.startswith(prefix)]
        if not self._apply(op, strict):
            return
        for p in moved:  # what the directory held lives under dst if the move persisted
            self.creator[dst + p[len(path) :]] = self.creator.pop(p, frozenset()) | {position}
        if rec.kind == _K_NEW:
            self.data[rec.inode] = _Data(vol.data[rec.inode])  # b"", or a link's target
            self.data[rec.inode].state = 2
        elif rec.kind == _K_TRUNC:
            node = self.data[rec.inode]
            node.pending.append((position, rec.size, b""))
            node.whole = _resize(node.whole, rec.size)
            node.state = 2
        if rec.kind == _K_RENAME or rec.kind == _K_LINK:
            if rec.kind == _K_RENAME:
                self.creator.pop(path, None)
            self.creator[dst] = frozenset({position})
        elif rec.kind in (_K_UNLINK, _K_RMDIR):
            self.creator.pop(path, None)
        elif rec.kind in (_K_NEW, _K_MKDIR):
            self.creator[path] = frozenset({position})
        self.op_of[op.index] = position
        self.meta.append(rec)
        if rec.parents:
            self.awaiting[position] = set(rec.parents)

    # --- barriers --------------------------------------------------------------------
    def _closure(self, positions: set[int]) -> frozenset[int]:
        out = set(positions)
        for q in positions:
            out |= self.meta[q].deps
        return frozenset(out)

    def _force(
        self, forced: frozenset[int], base: int, rule: str, inode: int
    ) -> tuple[frozenset[int], int]:
        n = len(self.meta)
        if rule == "journal":
            return forced, n
        own = {
            q
            for q, r in enumerate(self.meta)
            if r.inode == inode
            and (rule == "inode" or r.kind == _K_TRUNC)
            and r.kind in (_K_NEW, _K_RENAME, _K_LINK, _K_UNLINK, _K_TRUNC)
        }
        if rule == "size":  # posix: durable only once what it depends on is (ALICE)
            self.settled |= own
            return forced | self._settled_closed(), base
        return forced | self._closure(own), base

    def _settled_closed(self) -> frozenset[int]:
        """posix: the settled operations (made durable by their barrier) whose every
        dependency is durable too; a settled operation whose dependency may be lost may be
        lost with it."""
        durable: set[int] = set()
        for q in sorted(self.settled):
            if self.meta[q].deps <= durable:
                durable.add(q)
        return frozenset(durable)

    def _commit(self, rule: str, inode: int, *, maybe: bool) -> None:
        worlds: list[tuple[frozenset[int], int]] = []
        for forced, base in self.worlds:
            if maybe:
                worlds.append((forced, base))
            worlds.append(self._force(forced, base, rule, inode))
        self._set_worlds(worlds)

    def _commit_dir(self, path: str) -> None:
        rule = self.family.dir_fsync_commits
        n = len(self.meta)
        changed = [q for q, r in enumerate(self.meta) if path in r.parents]
        if rule == "all-parents":
            settled: set[int] = set()
            for q in changed:
                waiting = self.awaiting.get(q)
                if waiting is not None:
                    waiting.discard(path)
                    if not waiting:
                        del self.awaiting[q]
                        settled.add(q)
            self.settled |= settled
            forced_now = self._settled_closed()
        else:
            forced_now = self._closure(set(changed))
        worlds = []
        for forced, base in self.worlds:
            if rule == "journal":
                worlds.append((forced, n))
            elif rule == "changed":
                pending = [q for q in changed if q >= base and q not in forced]
                worlds.append((forced, max(base, pending[-1] + 1) if pending else base))
            else:
                worlds.append((forced | forced_now, base))
        self._set_worlds(worlds)

    def _set_worlds(self, worlds: list[tuple[frozenset[int], int]]) -> None:
        distinct = list(dict.fromkeys(worlds))
        if len(distinct) > _MAX_WORLDS:
            self.worlds_cut += len(distinct) - _MAX_WORLDS
            distinct = distinct[:_MAX_WORLDS]
        self.worlds = distinct

    def surely_forced(self) -> set[int]:
        """Metadata positions every world keeps."""
        out: set[int] | None = None
        for forced, base in self.worlds:
            kept = set(forced) | set(range(base))
            out = kept if out is None else out & kept
        return out or set()

    # --- crash states -------------------------------------------------------------------
    def data_bound(self) -> int:
        """At most how many contents the inodes' data can combine into under one metadata
        choice (each inode with ``d`` dirty blocks: ``2**d`` subsets at two sizes and
        ``d + 1`` prefixes at their own size)."""
        bound = 1
        for node in self.data.values():
            if node.pending:
                d = len(node.dirty)
                bound *= 2 ** (d + 1) + d + 1
        return bound

    def choices(self) -> tuple[list[frozenset[int]], int]:
        """The distinct persisted metadata sets, and how many sets a bound left out
        (``posix``'s omissions over its bound, the worlds dropped over
        :data:`_MAX_WORLDS`: each a prefix per metadata position)."""
        n = len(self.meta)
        seen: dict[frozenset[int], None] = {}
        cut = 0
        settled = sorted(self.settled)

        def kept(persisted: frozenset[int]) -> frozenset[int]:
            # posix: an operation its barrier settled persists whenever what it depends
            # on does (fsync of a directory makes its entries durable; whether the
            # directory itself survives is its own parent's business): lost only with a
            # dependency, never alone
            if not settled:
                return persisted
            out = set(persisted)
            for q in settled:
                if self.meta[q].deps <= out:
                    out.add(q)
            return frozenset(out)

        for forced, base in self.worlds:
            for c in range(n, base - 1, -1):  # most persisted first
                seen.setdefault(kept(forced | frozenset(range(c))), None)
            if not self.family.journal:
                pending = [
                    q for q in range(n) if q not in forced and q >= base and q not in self.settled
                ]
                p = len(pending)
                bound = _bound(self.model, p)
                everything = frozenset(range(n))
                for size in range(1, bound + 1):
                    for omitted in itertools.combinations(pending, size):
                        lost = set(omitted)
                        for q in range(omitted[0], n):
                            if self.meta[q].deps & lost:
                                lost.add(q)
                        seen.setdefault(kept((everything - lost) | forced), None)
                if bound < p:
                    cut += sum(math.comb(p, i) for i in range(bound + 1, p + 1))
        if self.worlds_cut:
            cut += self.worlds_cut * (n + 1) * (1 << n if not self.family.journal else 1)
        return list(seen), cut

    def replay_names(self, kept: frozenset[int]) -> tuple[dict[str, int], set[str]]:
        names = dict(self.initial_names)
        dirs = set(self.initial_dirs)
        for q, rec in enumerate(self.meta):
            if q in kept:
                rec.replay(names, dirs)
        return names, dirs

    def options(
        self,
        inode: int,
        kept: frozenset[int],
        memo: dict[tuple[int, tuple[int, ...]], tuple[list[bytes], int]] | None = None,
    ) -> tuple[list[bytes], int]:
        """:meth:`_options`, memoized in ``memo`` (one crash point's) by what of ``kept``
        it reads: the positions of the inode's own pending truncations. The metadata
        choices of a point share them (a file rewritten in place shares one list)."""
        if memo is None:
            return self._options(inode, kept)
        key = (
            inode,
            tuple(q for q, _, _ in self.data[inode].pending if q is not None and q in kept),
        )
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = self._options(inode, kept)
        return hit

    def _options(self, inode: int, kept: frozenset[int]) -> tuple[list[bytes], int]:
        """The contents ``inode`` may have when the metadata ``kept`` persisted (the first
        the page cache's, the second with no dirty block written back), and an upper
        bound on the contents the bounds left out.

        Each block written since the last data sync holds on disk the durable bytes (with
        the truncations ``kept`` holds) or its content at one of the writes that touched it
        (writeback may have run between any two operations: a block written, then cut off
        the page cache by a truncation that is lost, keeps what was written). The chosen
        blocks are any set (``block_order="any"``) or an offset-order prefix
        (``"offset"``). The size is the durable one or one the page cache had after the last
        truncation ``kept`` holds, or (delayed allocation) the end of a prefix of the
        chosen blocks."""
        node = self.data[inode]
        bs = self.unit
        bare = node.durable
        content = node.durable
        versions: dict[int, list[bytes]] = {}
        sizes: dict[int, None] = {}
        snapshots: list[bytes] = []  # the page cache after each write (since a kept truncation)
        for position, arg, data in node.pending:
            if position is not None:  # a truncation
                content = _resize(content, arg)
                if position in kept:
                    bare = _resize(bare, arg)
                    sizes.clear()  # the sizes before a kept truncation are superseded
                    snapshots.clear()
                    for block in [b for b in versions if b * bs >= arg]:
                        del versions[block]  # freed: a later extension reads zeros
                sizes[len(content)] = None
                continue
            content = _write(content, arg, data)
            sizes[len(content)] = None
            snapshots.append(content)
            for block in range(arg // bs, (arg + len(data) - 1) // bs + 1):
                chunk = content[block * bs : (block + 1) * bs]
                chunk += bytes(bs - len(chunk))
                seen = versions.setdefault(block, [])
                if chunk in seen:
                    seen.remove(chunk)
                seen.append(chunk)  # the latest last
        whole = node.whole
        if not versions and bare == whole:
            return [whole], 0
        sizes[len(bare)] = None
        sizes[len(whole)] = None
        blocks = sorted(versions)
        counts = [len(versions[b]) for b in blocks]
        total = math.prod(c + 1 for c in counts)
        every: Iterable[tuple[int, ...]]
        prefixes = sum(math.prod(counts[:j]) for j in range(len(blocks) + 1))
        if self.family.block_order == "offset" or len(blocks) > self.model.writeback_bound:
            # offset-order prefixes, each chosen block at any of its contents (generated
            # lazily: a block rewritten 16 times in 17 blocks has 16**17 of them)
            every = (
                (*combo, *([0] * (len(blocks) - j)))
                for j in range(len(blocks), -1, -1)
                for combo in itertools.product(*(range(1, c + 1) for c in counts[:j]))
            )
        else:
            every = itertools.product(*(range(c + 1) for c in counts))
        # the choices the rule allows: every one ("any"), or the prefixes ("offset")
        allowed = prefixes if self.family.block_order == "offset" else total
        picks = list(itertools.islice(every, _MAX_PICKS))
        left = (allowed - len(picks)) * len(sizes)
        latest = tuple(counts)
        none = (0,) * len(blocks)
        out: dict[bytes, None] = {}
        # No crash point takes more than max_states states, and the fair order
        # (:func:`_fair`) takes an inode's contents in this list's order: past the first
        # ``cap`` the contents are never used, so they are not built (a 64 KiB file
        # rewritten in place without an fsync has thousands), only counted in ``left``.
        cap = self.model.max_states + 4
        tried = 0
        candidates = (2 + len(picks)) * len(sizes)
        for pick in (latest, none, *picks):
            if len(out) >= cap:
                break
            chosen = {b: versions[b][c - 1] for b, c in zip(blocks, pick, strict=True) if c}
            for size in sizes:
                tried += 1
                out.setdefault(_overlay(bare, chosen, size, bs), None)
        left += candidates - tried
        # ext4 delayed allocation: the size advanced only as far as a written prefix, to
        # any block boundary between the smallest and the largest size
        # (each write's page cache in turn: what writeback found then)
        low, high = min(sizes), max(sizes)
        ends = sorted({(b + 1) * bs for b in blocks} | set(range((low // bs + 1) * bs, high, bs)))
        for snapshot in snapshots[-_MAX_SNAPSHOTS:]:
            if len(out) >= cap:
                left += len(ends)
                continue
            for end in ends:
                size = min(high, max(low, end))
                chosen = {}
                for b in blocks:
                    if b * bs < size:
                        chunk = snapshot[b * bs : (b + 1) * bs]
                        chosen[b] = chunk + bytes(bs - len(chunk))
                out.setdefault(_overlay(bare, chosen, size, bs), None)
        if len(snapshots) > _MAX_SNAPSHOTS:
            left += (len(snapshots) - _MAX_SNAPSHOTS) * len(ends)
        first = [whole, _overlay(bare, {}, len(bare), bs)]
        return list(dict.fromkeys([*first, *out])), left


def _write(content: bytes, offset: int, data: bytes) -> bytes:
    if not data:
        return content
    if offset > len(content):
        content += bytes(offset - len(content))
    return content[:offset] + data + content[offset + len(data) :]


def _resize(content: bytes, size: int) -> bytes:
    if size <= len(content):
        return content[:size]
    return content + bytes(size - len(content))


def _overlay(bare: bytes, chosen: dict[int, bytes], size: int, bs: int) -> bytes:
    """``size`` bytes: block ``i`` is ``chosen[i]`` where chosen, else ``bare``'s; zero
    bytes where that is shorter."""
    parts: list[bytes] = []
    for start in range(0, size, bs):
        want = min(bs, size - start)
        chunk = chosen.get(start // bs)
        chunk = bare[start : start + want] if chunk is None else chunk[:want]
        if len(chunk) < want:
            chunk += bytes(want - len(chunk))
        parts.append(chunk)
    return b"".join(parts)


def _bound(model: PersistenceModel, pending: int) -> int:
    if model.reorder_bound is not None:
        return min(model.reorder_bound, pending)
    if 1 << pending <= REORDER_COMBINATIONS:
        return pending
    total = 0
    for size in range(pending + 1):
        total += math.comb(pending, size)
        if total > REORDER_COMBINATIONS:
            return size - 1
    return pending  # pragma: no cover


class _Frame:
    """One metadata choice: its names, directories, and the options of its inodes
    with more than one possible content (its *slots*)."""

    __slots__ = ("dirs", "fixed", "inodes", "left", "paths", "slot_opts", "slots")

    def __init__(
        self,
        replay: _Replay,
        kept: frozenset[int],
        memo: dict[tuple[int, tuple[int, ...]], tuple[list[bytes], int]] | None = None,
    ) -> None:
        names, dirs = replay.replay_names(kept)
        self.paths = tuple(sorted(names))
        self.inodes = [names[p] for p in self.paths]
        self.dirs = tuple(sorted(d for d in dirs if d != "/"))
        self.fixed: dict[int, bytes] = {}
        self.slots: list[int] = []
        self.slot_opts: list[list[bytes]] = []
        self.left = 0
        for inode in dict.fromkeys(self.inodes):
            contents, left = replay.options(inode, kept, memo)
            self.fixed[inode] = contents[0]
            if len(contents) > 1:
                self.slots.append(inode)
                self.slot_opts.append(contents)
            self.left += left

    def count(self) -> int:
        return math.prod(len(o) for o in self.slot_opts)

    def state(self, combo: tuple[int, ...]) -> CrashState:
        chosen = dict(self.fixed)
        for inode, opts, c in zip(self.slots, self.slot_opts, combo, strict=True):
            chosen[inode] = opts[c]
        files = tuple(zip(self.paths, map(chosen.__getitem__, self.inodes), strict=True))
        return new_crash_state(files, self.dirs)


def _states(replay: _Replay) -> tuple[tuple[CrashState, ...], int]:
    choices, left = replay.choices()
    # every metadata choice a bound left out, with every data combination it may have
    bound = replay.data_bound()
    cut = left * bound if left else 0
    memo: dict[tuple[int, tuple[int, ...]], tuple[list[bytes], int]] = {}
    limit = replay.model.max_states
    seen: dict[CrashState, None] = {}
    made = 0
    # The fair order (:func:`_fair`) takes every frame with all its data whole first:
    # frames are built in that order, and those past the one that filled ``max_states``
    # are never built (a Mercurial commit under posix has thousands per crash point,
    # minutes of CPU), each counted in the cut at ``data_bound()``, an upper bound of
    # what one metadata choice combines into.
    frames: list[_Frame] = []
    for kept in choices:
        if len(seen) >= limit:
            break
        frame = _Frame(replay, kept, memo)
        frames.append(frame)
        made += 1
        seen.setdefault(frame.state((0,) * len(frame.slots)), None)
    cut += (len(choices) - len(frames)) * bound
    # contents the writeback bound left out, each combined with the frame's others
    for frame in frames:
        if frame.left:
            cut += frame.left * max(1, frame.count())
    total = sum(frame.count() for frame in frames)
    fair = _fair([len(o) for o in frame.slot_opts] for frame in frames)
    for f, combo in itertools.islice(fair, len(frames), None):  # past the first round
        if len(seen) >= limit:
            break
        made += 1
        seen.setdefault(frames[f].state(combo), None)
    return tuple(seen), cut + (total - made)


def _fair(shapes: Iterable[list[int]]) -> Iterator[tuple[int, tuple[int, ...]]]:
    """Every (frame, combination) once, fairest first: every frame with all its data
    whole, then with all pending data lost, then one inode deviating, then the rest.
    ``shapes[f]``: the number of options of each slot of frame ``f``."""
    frames = list(shapes)
    for f, shape in enumerate(frames):
        yield f, (0,) * len(shape)
    for f, shape in enumerate(frames):
        if shape:
            yield f, (1,) * len(shape)
    for f, shape in enumerate(frames):
        r = len(shape)
        for i, size in enumerate(shape):
            for c in range(1, size):
                if r == 1 and c == 1:
                    continue  # the all-lost combination
                single = [0] * r
                single[i] = c
                yield f, tuple(single)
    for f, shape in enumerate(frames):
        r = len(shape)
        if r < 2:
            continue
        for combo in itertools.product(*(range(size) for size in shape)):
            deviating = r - combo.count(0)
            if deviating <= 1 or combo.count(1) == r:
                continue
            yield f, combo


def family_crash_points(
    family: FileSystemFamily,
    model: PersistenceModel,
    initial: CrashState,
    ops: Sequence[Op],
    points: Container[int] | None,
) -> Iterator[CrashPoint]:
    """Every crash point ``k = 0 .. len(ops)`` of a trace under ``family`` (this module's
    docstring states the rules), with ``model``'s block size and bounds.

    Raises:
        ValueError: (when iterated) a bound is not positive, or an operation does not
            replay onto ``initial``.
    """
    if (
        model.block_size < 1
        or model.max_states < 1
        or model.writeback_bound < 0
        or model.atomic_write < 1
    ):
        raise ValueError(
            f"model {model.name!r} needs block_size >= 1, max_states >= 1, "
            "writeback_bound >= 0, atomic_write >= 1"
        )
    replay = _Replay(family, model, initial)
    n = len(ops)
    for k in range(n + 1):
        if points is None or k in points:
            states, cut = _states(replay)
            yield new_crash_point(k, ops[k] if k < n else None, states, cut)
        if k < n:
            replay.step(ops[k])

"""The power-loss persistence models (FAULT-MODEL.md §3).

A power cut loses whatever the kernel had not yet written: the page cache and
the uncommitted part of the journal. :func:`power_crash_points` derives, for each
crash point of a trace, every disk image such a cut may leave under two models.

``power-loss`` (ext4 ``data=ordered`` with delayed allocation; LazyFS's
unsynced-data loss, Ramos et al., VLDB 2024; ALICE's torn appends, Pillai et
al., OSDI 2014 "All File Systems Are Not Created Equal"):

* **Metadata** (mkdir, create, truncate, rename, unlink) persists as an in-order
  prefix of the metadata operations, the way a journal commits: every metadata
  operation before the last barrier (a successful ``fsync`` or ``fsync_dir``) is
  durable; any number of the later ones may be. ``fsync(file)`` commits all
  earlier metadata because ext4's journal commit is global; ``fsync_dir`` does too
  in this model (a simplification: on ext4 it forces the same journal commit).
* **Data belongs to the inode** and moves with renames. An inode's writes since
  its last successful ``fsync`` are pending: at the cut they survive whole, not at
  all (the content as of that fsync; a file created since reads back *empty*:
  ext4 delayed allocation's zero-length file), or torn: the first blocks of the
  final content (whole blocks of ``block_size`` bytes), the file's final size
  kept, and the rest reading back as the old bytes where the file had synced
  data and as zero bytes beyond (*zero-filled*; a file smaller than a block tears
  to all zeros).
* **Size changes by metadata** (``truncate``, ``create`` over an existing file)
  are journaled with the metadata prefix: they apply to the surviving content
  exactly when the prefix holds them, whether or not the data survives.
* **fsyncgate** (an fsync recorded with ``label == "fsync-lost"``, see
  :class:`~crashpoint.faultfs.FaultKind`): the fsync failed and Linux ≤ 4.13
  marked the dirty pages clean without writing them, so that data is dropped: it
  never reaches disk, not even through a later successful fsync, unless the
  program writes it again. It is not a barrier.

``power-loss-reorder`` (ALICE's default abstract persistence model; the POSIX
minimum) adds: a *directory operation* (mkdir, create of a new file, rename,
unlink) is durable only once its parent directory has been fsynced after it
(both parents for a rename across directories); an ``fsync`` of the file itself
does not make its directory entry durable, as in ALICE. Until then it may be
lost while later operations persist, as long as every kept operation on a name
keeps the operation that created that name (and the ``mkdir`` of its parent):
dropping one drops its dependants. Explored as ALICE does: with at most
:data:`FEW_PENDING` operations pending, every set of up to ``max_omit`` of them
is omitted from every allowed metadata prefix (exhaustive when ``max_omit``
covers them all); with more, one at a time from the whole metadata prefix of
the crash point (ALICE's pairs of crash point and omitted operation), which keeps
the cost linear in the pending operations.

Enumeration: each metadata choice (prefix length, omitted operations) fixes the
names; each reachable inode with pending data has a few contents. Their product
is enumerated fairly: first every metadata choice with all data surviving, then
with all pending data lost, then with one inode deviating, then the rest; equal
crash states are kept once, in first-seen order. At ``max_states`` distinct
states the enumeration stops and ``cut`` counts the combinations not generated
(an upper bound on the distinct states left out). The trace is replayed once,
incrementally; crash states share their byte strings.
"""

from __future__ import annotations

import bisect
import itertools
import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ._image import CrashState, Image
from ._models import CrashPoint, PersistenceModel, effective
from ._trace import Op, OpKind

__all__ = ["FEW_PENDING", "durable_state", "power_crash_points"]

FEW_PENDING = 8
"""With at most this many pending directory operations, ``power-loss-reorder`` omits
every set of up to ``max_omit`` of them from every allowed metadata prefix; with
more, one at a time from the crash point's whole metadata prefix."""

# Kinds of metadata records. Directory operations are the first four.
_MKDIR, _NEW, _RENAME, _UNLINK, _TRUNC = range(5)

_Names = dict[str, int]
_Items = tuple[tuple[str, int], ...]


def _parent(path: str) -> str:
    return posixpath.dirname(path) or "/"


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

    def replay(self, names: _Names, dirs: set[str]) -> None:
        """Apply this operation's directory effect (contents are tracked per inode)."""
        kind = self.kind
        if kind == _NEW:
            names[self.path] = self.inode
        elif kind == _RENAME:
            if names.get(self.path) == self.inode:
                del names[self.path]
            names[self.dst] = self.inode
        elif kind == _UNLINK:
            if names.get(self.path) == self.inode:
                del names[self.path]
        elif kind == _MKDIR:
            dirs.add(self.path)


class _Options:
    """The contents an inode with pending data may have after a power cut.

    Index 0 is the whole content (every pending write survived), 1 the content with
    none of them, then (if different) the zero-filled extension, then the torn
    block prefixes that differ from all of these. Torn contents are built on demand.
    """

    __slots__ = ("_fixed", "_padded", "_starts", "_torn", "_whole")

    def __init__(self, whole: bytes, bare: bytes, block_size: int) -> None:
        size = len(whole)
        padded = bare if len(bare) == size else _resize(bare, size)
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
        self._padded = padded
        self._starts = starts[1:]  # the first differing block torn away is `padded`
        self._torn: dict[int, bytes] = {}

    def __len__(self) -> int:
        return len(self._fixed) + len(self._starts)

    def __getitem__(self, i: int) -> bytes:
        fixed = self._fixed
        if i < len(fixed):
            return fixed[i]
        content = self._torn.get(i)
        if content is None:
            p = self._starts[i - len(fixed)]
            content = self._whole[:p] + self._padded[p:]
            self._torn[i] = content
        return content


class _Inode:
    """What the disk (not the page cache) may hold for one inode.

    ``durable`` is the content as of its last successful fsync; ``pending`` the
    writes ``(None, offset, data)`` and metadata truncations ``(position, size, b"")``
    since; ``whole`` is durable with all of them, ``bare`` with only the truncations.
    """

    __slots__ = ("bare", "durable", "opts", "pending", "stale", "truncs", "whole")

    def __init__(self, content: bytes) -> None:
        self.durable = content
        self.whole = content
        self.bare = content
        self.pending: list[tuple[int | None, int, bytes]] = []
        self.truncs: list[int] = []  # metadata positions of pending truncations
        self.opts: _Options | None = None
        self.stale = True  # opts must be recomputed

    def write(self, offset: int, data: bytes) -> None:
        self.pending.append((None, offset, data))
        self.whole = _write(self.whole, offset, data)
        self.stale = True

    def trunc(self, position: int, size: int) -> None:
        self.pending.append((position, size, b""))
        self.truncs.append(position)
        self.whole = _resize(self.whole, size)
        self.bare = _resize(self.bare, size)
        self.stale = True

    def sync(self) -> None:
        self.durable = self.bare = self.whole
        self.pending = []
        self.truncs = []
        self.stale = True

    def lose(self) -> None:
        """fsyncgate: the pending writes are dropped for good."""
        self.pending = [p for p in self.pending if p[0] is not None]
        self.whole = self.bare
        self.stale = True

    def options(self, block_size: int) -> _Options | None:
        """Options with every pending truncation kept; None if the content is settled."""
        if self.stale:
            self.stale = False
            self.opts = (
                None if self.whole == self.bare else _Options(self.whole, self.bare, block_size)
            )
        return self.opts

    def replay(self, kept: frozenset[int]) -> tuple[bytes, bytes]:
        """(whole, bare) when only the truncations at positions in ``kept`` persisted."""
        whole = bare = self.durable
        for position, arg, data in self.pending:
            if position is None:
                whole = _write(whole, arg, data)
            elif position in kept:
                whole = _resize(whole, arg)
                bare = _resize(bare, arg)
        return whole, bare


class _Omission:
    """The names when pending directory operation ``position`` (and everything that
    depends on it) is lost and every later metadata operation persists; kept up to
    date operation by operation."""

    __slots__ = ("dirs", "dropped", "end", "names")

    def __init__(self, position: int, names: _Names, dirs: set[str]) -> None:
        self.names = dict(names)
        self.dirs = set(dirs)
        self.dropped = {position}
        self.end = position  # one past the last kept position

    def add(self, position: int, rec: _Meta) -> None:
        deps = rec.deps
        if deps and any(d in self.dropped for d in deps):
            self.dropped.add(position)
        else:
            rec.replay(self.names, self.dirs)
            self.end = position + 1


@dataclass(frozen=True, slots=True)
class _Choice:
    """A metadata choice: the names and directories it leaves, and which metadata
    positions persisted (``< cut`` and not in ``dropped``)."""

    items: _Items
    dirs: tuple[str, ...]
    cut: int
    dropped: frozenset[int]


class _Frame:
    """One metadata choice with its inodes' contents: a family of crash states."""

    __slots__ = ("contents", "count", "dirs", "paths", "slots")

    def __init__(
        self,
        paths: tuple[str, ...],
        contents: list[bytes],
        slots: list[tuple[int, _Options]],
        dirs: tuple[str, ...],
    ) -> None:
        self.paths = paths
        self.contents = contents
        self.slots = slots
        self.dirs = dirs
        count = 1
        for _, opts in slots:
            count *= len(opts)
        self.count = count

    def state(self, combo: tuple[int, ...] | None) -> CrashState:
        """The crash state with option ``combo[i]`` for slot ``i`` (None: all whole)."""
        if combo is None:
            return CrashState(tuple(zip(self.paths, self.contents, strict=True)), self.dirs)
        contents = list(self.contents)
        for (i, opts), c in zip(self.slots, combo, strict=True):
            if c:
                contents[i] = opts[c]
        return CrashState(tuple(zip(self.paths, contents, strict=True)), self.dirs)


def _combos(frames: list[_Frame]) -> Iterator[tuple[_Frame, tuple[int, ...] | None]]:
    """Every (frame, combination) exactly once, fairest first: all data whole, all
    pending data lost, one inode deviating, then the rest of each product."""
    for f in frames:
        yield f, None
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


def _enumerate(frames: list[_Frame], limit: int) -> tuple[tuple[CrashState, ...], int]:
    total = sum(f.count for f in frames)
    seen: dict[CrashState, None] = {}
    generated = 0
    for frame, combo in _combos(frames):
        generated += 1
        seen[frame.state(combo)] = None
        if len(seen) >= limit:
            break
    return tuple(seen), total - generated


class _Explorer:
    """Replays a trace once and knows, after each operation, what a power cut may leave."""

    def __init__(self, model: PersistenceModel, initial: CrashState) -> None:
        if model.block_size < 1 or model.max_states < 1 or model.max_omit < 0:
            raise ValueError(
                f"model {model.name!r} needs block_size >= 1, max_states >= 1, max_omit >= 0"
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
        self.creator: dict[str, int] = {}  # name -> position of the op that created it
        self.pending: dict[int, set[str]] = {}  # reorder: position -> parents not yet fsynced
        self.omissions: dict[int, _Omission] = {}  # reorder: position -> all but it persisted
        self._choices: list[_Choice] | None = None
        self._result: tuple[tuple[CrashState, ...], int] | None = None

    # --- the trace ----------------------------------------------------------------
    def step(self, op: Op) -> None:
        kind = op.kind
        if not kind.mutating:
            return
        if not effective(op):
            if kind is OpKind.FSYNC and op.label == "fsync-lost":
                inode = self.vol.names.get(op.path)
                if inode is not None:
                    self.nodes[inode].lose()
                    self._result = None
            return
        self._result = None
        vol = self.vol
        if kind is OpKind.WRITE:
            inode = vol.names.get(op.path)
            self._apply(op)
            assert inode is not None
            self.nodes[inode].write(op.offset, op.data)
        elif kind is OpKind.FSYNC:
            inode = vol.names.get(op.path)
            if inode is not None:
                self.nodes[inode].sync()
            self._barrier()
        elif kind is OpKind.FSYNC_DIR:
            if self.reorder:
                for position, parents in list(self.pending.items()):
                    parents.discard(op.path)
                    if not parents:
                        del self.pending[position]
                        del self.omissions[position]
            self._barrier()
        else:
            self._metadata(op)

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
        if kind is OpKind.MKDIR:
            rec = _Meta(_MKDIR, path, 0)
            names_used = (_parent(path),)
        elif kind is OpKind.CREATE:
            inode = vol.names.get(path)
            if inode is None:
                rec = _Meta(_NEW, path, vol.next_inode)
                names_used = (_parent(path),)
            else:
                rec = _Meta(_TRUNC, path, inode, size=0)
                names_used = (path,)
        elif kind is OpKind.TRUNCATE:
            rec = _Meta(_TRUNC, path, vol.names.get(path, 0), size=op.size)
            names_used = (path,)
        elif kind is OpKind.RENAME:
            dst = op.dst or ""
            rec = _Meta(_RENAME, path, vol.names.get(path, 0), dst=dst)
            names_used = (path, _parent(dst))
        else:
            rec = _Meta(_UNLINK, path, vol.names.get(path, 0))
            names_used = (path,)
        if self.reorder:
            creator = self.creator
            rec.deps = tuple(c for c in (creator.get(n) for n in names_used) if c is not None)
            for omission in self.omissions.values():
                omission.add(position, rec)
            if rec.kind != _TRUNC:
                self.omissions[position] = _Omission(position, vol.names, vol.dirs)
        self._apply(op)
        if rec.kind == _NEW:
            self.nodes[rec.inode] = _Inode(b"")
        elif rec.kind == _TRUNC:
            self.nodes[rec.inode].trunc(position, rec.size)
        if self.reorder:
            if rec.kind == _RENAME:
                creator.pop(path, None)
                creator[rec.dst] = position
                self.pending[position] = {_parent(path), _parent(rec.dst)}
            elif rec.kind == _UNLINK:
                creator.pop(path, None)
                self.pending[position] = {_parent(path)}
            elif rec.kind != _TRUNC:
                creator[path] = position
                self.pending[position] = {_parent(path)}
        self.meta.append(rec)
        self._choices = None

    def _barrier(self) -> None:
        self.committed = len(self.meta)
        target = self.committed
        if self.pending:
            target = min(target, next(iter(self.pending)))
        for position in range(self.cp, target):
            self.meta[position].replay(self.base_names, self.base_dirs)
        self.cp = max(self.cp, target)
        self._choices = None

    # --- metadata choices ---------------------------------------------------------------
    def choices(self) -> list[_Choice]:
        if self._choices is None:
            self._choices = self._compute_choices()
        return self._choices

    def _compute_choices(self) -> list[_Choice]:
        meta = self.meta
        n = len(meta)
        lo = self.committed
        names = dict(self.base_names)
        dirs = set(self.base_dirs)
        for position in range(self.cp, lo):
            meta[position].replay(names, dirs)
        dirs_t = _dirs_tuple(dirs)
        prefixes = [_Choice(tuple(sorted(names.items())), dirs_t, lo, frozenset())]
        for position in range(lo, n):
            rec = meta[position]
            rec.replay(names, dirs)
            if rec.kind == _MKDIR:
                dirs_t = _dirs_tuple(dirs)
            prefixes.append(
                _Choice(tuple(sorted(names.items())), dirs_t, position + 1, frozenset())
            )
        prefixes.reverse()  # most persisted first
        if not self.reorder or not self.pending or self.model.max_omit < 1:
            return prefixes
        out = list(prefixes)
        seen: set[tuple[int, tuple[int, ...]]] = {(c.cut, ()) for c in prefixes}
        pending = list(self.pending)
        if len(pending) > FEW_PENDING:
            # Many pending: one omitted at a time, against the whole metadata prefix.
            for position in pending:
                omission = self.omissions[position]
                kept_out = sorted(d for d in omission.dropped if d < omission.end)
                key = (omission.end, tuple(kept_out))
                if key not in seen:
                    seen.add(key)
                    out.append(
                        _Choice(
                            tuple(sorted(omission.names.items())),
                            _dirs_tuple(omission.dirs),
                            omission.end,
                            frozenset(kept_out),
                        )
                    )
            return out
        for size in range(1, self.model.max_omit + 1):
            for omitted in itertools.combinations(pending, size):
                dropped = self._closure(omitted, n)
                ordered = sorted(dropped)
                names = dict(self.base_names)
                dirs = set(self.base_dirs)
                omit_dirs: tuple[str, ...] | None = None
                end = self.cp  # one past the last kept position
                for position in range(self.cp, n):
                    if position not in dropped:
                        rec = meta[position]
                        rec.replay(names, dirs)
                        if rec.kind == _MKDIR:
                            omit_dirs = None
                        end = position + 1
                    if position < lo - 1 or position < omitted[-1]:
                        continue  # not a persisted prefix, or not all of `omitted` reached
                    key = (end, tuple(ordered[: bisect.bisect_left(ordered, end)]))
                    if key in seen:
                        continue
                    seen.add(key)
                    if omit_dirs is None:
                        omit_dirs = _dirs_tuple(dirs)
                    out.append(
                        _Choice(tuple(sorted(names.items())), omit_dirs, end, frozenset(key[1]))
                    )
        return out

    def _closure(self, omitted: tuple[int, ...], cut: int) -> set[int]:
        """``omitted`` and every operation before ``cut`` that depends on a dropped one."""
        dropped = set(omitted)
        meta = self.meta
        for position in range(omitted[0] + 1, cut):
            deps = meta[position].deps
            if deps and position not in dropped and any(d in dropped for d in deps):
                dropped.add(position)
        return dropped

    # --- crash states ---------------------------------------------------------------------
    def frame(
        self, choice: _Choice, special: dict[tuple[int, frozenset[int]], _Options | bytes]
    ) -> tuple[_Frame, tuple[object, ...]]:
        """The frame of ``choice`` and a key identifying it (equal keys, equal frames)."""
        nodes = self.nodes
        block_size = self.model.block_size
        cut = choice.cut
        dropped = choice.dropped
        contents: list[bytes] = []
        slots: list[tuple[int, _Options]] = []
        keys: list[tuple[int, frozenset[int]]] = []
        for i, (_, inode) in enumerate(choice.items):
            node = nodes[inode]
            truncs = node.truncs
            if truncs and (truncs[-1] >= cut or (dropped and not dropped.isdisjoint(truncs))):
                kept = frozenset(t for t in truncs if t < cut and t not in dropped)
                key = (inode, kept)
                keys.append(key)
                found = special.get(key)
                if found is None:
                    whole, bare = node.replay(kept)
                    if not self.volatile or whole == bare:
                        found = whole
                    else:
                        found = _Options(whole, bare, block_size)
                    special[key] = found
                if isinstance(found, bytes):
                    contents.append(found)
                else:
                    contents.append(found[0])
                    slots.append((i, found))
                continue
            opts = node.options(block_size) if self.volatile else None
            if opts is None:
                contents.append(node.whole)
            else:
                contents.append(opts[0])
                slots.append((i, opts))
        paths = tuple(p for p, _ in choice.items)
        frame = _Frame(paths, contents, slots, choice.dirs)
        return frame, (choice.items, choice.dirs, tuple(keys))

    def states(self) -> tuple[tuple[CrashState, ...], int]:
        """The distinct crash states after the operations so far, and the cut count."""
        if self._result is None:
            frames: list[_Frame] = []
            keys: set[tuple[object, ...]] = set()
            special: dict[tuple[int, frozenset[int]], _Options | bytes] = {}
            for choice in self.choices():
                frame, key = self.frame(choice, special)
                if key not in keys:
                    keys.add(key)
                    frames.append(frame)
            self._result = _enumerate(frames, self.model.max_states)
        return self._result

    def pessimistic(self) -> CrashState:
        """Metadata after the last barrier lost and every pending write lost."""
        names = dict(self.base_names)
        dirs = set(self.base_dirs)
        for position in range(self.cp, self.committed):
            self.meta[position].replay(names, dirs)
        choice = _Choice(
            tuple(sorted(names.items())), _dirs_tuple(dirs), self.committed, frozenset()
        )
        frame, _ = self.frame(choice, {})
        return frame.state((1,) * len(frame.slots))


def _dirs_tuple(dirs: set[str]) -> tuple[str, ...]:
    return tuple(sorted(d for d in dirs if d != "/"))


def power_crash_points(
    model: PersistenceModel, initial: CrashState, ops: Sequence[Op]
) -> Iterator[CrashPoint]:
    """Every crash point ``k = 0 .. len(ops)`` of a trace under a power-loss model.

    Args:
        model: ``power-loss``, ``power-loss-reorder`` or a variant of them (block
            size, ``max_states``, ``max_omit``). With ``volatile_data`` False the
            data of every inode survives whole and only metadata is at risk.
        initial: the durable disk the run started from.
        ops: the trace's mutating operations in program order (failed ones are
            skipped, a short write's stored prefix counts, an ``fsync-lost`` fsync
            drops its inode's pending data).

    Yields:
        One :class:`~crashpoint.faultfs.CrashPoint` per ``k``: distinct crash states
        in a deterministic order, at most ``model.max_states`` of them, and in
        ``cut`` the number of combinations not generated.

    Raises:
        ValueError: an operation does not replay onto ``initial`` (a trace recorded
            from another disk), or the model's bounds are not positive.
    """
    explorer = _Explorer(model, initial)
    n = len(ops)
    for k in range(n + 1):
        states, cut = explorer.states()
        yield CrashPoint(k, ops[k] if k < n else None, states, cut)
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


_PESSIMIST = PersistenceModel("power-loss", volatile_data=True)

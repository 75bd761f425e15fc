"""Persistence models: which disk images a crash may leave (FAULT-MODEL.md §3).

A model is data, not a subclass: a name, whether un-fsynced file data may be lost
or torn, whether un-synced directory operations may be reordered, a block size and
an enumeration bound. :func:`crash_points` maps an operation trace to the crash
states of each crash point ``k`` (the first ``k`` operations issued).

* ``process-crash`` (kill -9): every completed operation survives, in order; the
  page cache outlives the process. One crash state per crash point, plus, when the
  operation that did not run is a write spanning more than one page, the states
  where only its first pages landed (see :func:`crash_points`).
* ``power-loss`` (ext4 ``data=ordered`` with delayed allocation, LazyFS): metadata
  and size changes persist as an in-order prefix reaching at least the last barrier;
  file data not yet fsynced survives whole, not at all, or torn in whole blocks.
* ``power-loss-reorder`` (ALICE's default abstract persistence model, Pillai et al.,
  OSDI 2014): as ``power-loss``, and a metadata operation not yet made durable (a
  directory operation by an fsync of its parent directory, a truncation by an fsync
  of its file) may be lost while later ones persist.

The power-loss family lives in :mod:`crashpoint.faultfs._power`.
"""

from __future__ import annotations

import random
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass

from ._image import CrashState, Image, new_crash_state
from ._trace import Op, OpKind

__all__ = [
    "MODELS",
    "POWER_LOSS",
    "POWER_LOSS_REORDER",
    "PROCESS_CRASH",
    "REORDER_COMBINATIONS",
    "CrashPoint",
    "PersistenceModel",
    "crash_points",
    "effective",
    "get_model",
]


@dataclass(frozen=True, slots=True)
class PersistenceModel:
    """What survives a crash.

    Attributes:
        name: the model's name as the CLI and reports spell it.
        volatile_data: file data written since the file's last fsync may be lost
            or torn (power loss); False means the page cache survives (process crash).
        reorder: directory operations not yet made durable by an fsync of their
            parent directory may be lost while later ones persist (ALICE).
        block_size: torn writes persist whole blocks of this many bytes; a write
            killed part-way (``process-crash``) lands in whole pages of this size.
        max_states: at most this many crash states per crash point; more are cut
            and the cut is counted (never silently).
        reorder_bound: ``power-loss-reorder``: the largest number of pending
            operations omitted together (``crashpoint explore --reorder-bound N``).
            None: exhaustive while a crash point has at most
            :data:`REORDER_COMBINATIONS` combinations, the largest bound that fits
            that many beyond. Combinations a bound leaves out are counted in ``cut``.
        max_partial_writes: ``process-crash``: at most this many partial-write
            states per crash point (a write of more pages than this offers its first
            page, its last page and a seeded sample; the rest is counted in ``cut``).
        source: where the rules come from.
    """

    name: str
    volatile_data: bool = False
    reorder: bool = False
    block_size: int = 4096
    max_states: int = 256
    reorder_bound: int | None = None
    max_partial_writes: int = 64
    source: str = ""


PROCESS_CRASH = PersistenceModel(
    "process-crash",
    source="kill -9: completed operations survive in order (FAULT-MODEL.md §3)",
)

POWER_LOSS = PersistenceModel(
    "power-loss",
    volatile_data=True,
    source=(
        "ext4 data=ordered with delayed allocation; LazyFS (Ramos et al., VLDB 2024); "
        "ALICE torn appends (Pillai et al., OSDI 2014) (FAULT-MODEL.md §3)"
    ),
)

POWER_LOSS_REORDER = PersistenceModel(
    "power-loss-reorder",
    volatile_data=True,
    reorder=True,
    source=(
        "ALICE default abstract persistence model (Pillai et al., OSDI 2014); "
        "POSIX minimum (FAULT-MODEL.md §3)"
    ),
)

REORDER_COMBINATIONS = 2**16
"""``power-loss-reorder`` enumerates every combination of omitted pending operations
while there are at most this many (16 pending operations); beyond, a bound."""

MODELS: dict[str, PersistenceModel] = {
    m.name: m for m in (PROCESS_CRASH, POWER_LOSS, POWER_LOSS_REORDER)
}
"""The named models, by name."""


def get_model(name: str) -> PersistenceModel:
    """The model called ``name``. Raises ``KeyError`` naming the known models."""
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown persistence model {name!r}; known: {', '.join(MODELS)}") from None


@dataclass(frozen=True, slots=True)
class CrashPoint:
    """The crash states possible when the machine stops after ``index`` operations.

    Attributes:
        index: ``k``, the number of operations done (0 ≤ k ≤ n).
        op: the operation that did not run (None when ``k == n``: the run completed).
        states: distinct crash states possible at this point.
        cut: how many combinations the model's bounds left out (0: the states are
            exhaustive). An upper bound on the distinct crash states missed: each
            left-out combination counts once for every data variant it may have.
    """

    index: int
    op: Op | None
    states: tuple[CrashState, ...]
    cut: int = 0


_CHANGES = frozenset(kind for kind in OpKind if kind.mutating and not kind.barrier)
"""The kinds of operations that change an image (barriers do not)."""
_WRITE = OpKind.WRITE  # a module constant: an enum member looked up on its class is a call


_new = object.__new__
_set_point = tuple(CrashPoint.__dict__[name].__set__ for name in ("index", "op", "states", "cut"))


def new_crash_point(
    index: int, op: Op | None, states: tuple[CrashState, ...], cut: int = 0
) -> CrashPoint:
    """``CrashPoint(index, op, states, cut)``, built without the frozen dataclass's
    ``__init__`` (see :func:`~crashpoint.faultfs._image.new_crash_state`)."""
    point = _new(CrashPoint)
    set_index, set_op, set_states, set_cut = _set_point
    set_index(point, index)
    set_op(point, op)
    set_states(point, states)
    set_cut(point, cut)
    return point


def effective(op: Op) -> bool:
    """Whether a recorded operation changed the disk (failed ones did not, except the
    prefix a short write stored)."""
    return op.errno is None or (op.kind is _WRITE and bool(op.data))


def crash_points(
    model: PersistenceModel,
    initial: CrashState,
    ops: Sequence[Op],
    *,
    points: Container[int] | None = None,
) -> Iterator[CrashPoint]:
    """Every crash point of a trace, ``k = 0 .. len(ops)``, with its crash states.

    Crash point ``k`` is the machine stopped after ``ops[:k]``; ``ops[k]`` (the
    operation *k+1* of FAULT-MODEL.md §3, counting from one) did not complete.
    Under ``process-crash`` its states are the prefix state, then, when ``ops[k]`` is
    a write spanning more than one page (pages of ``model.block_size`` bytes,
    aligned on file offsets), the states where only its first ``j`` pages landed,
    ``j = 1 .. pages - 1``: the write cut at the ``j``-th page boundary after its
    offset (FAULT-MODEL.md §2: the kernel checks for a fatal signal between
    page-cache chunks; seen with real SIGKILLs at 16 KiB, 1 MiB and 2–8 MiB). With
    more than ``model.max_partial_writes`` such states, the first, the last and a
    sample seeded by ``(k, offset, length)`` are offered and the rest counted in
    ``cut``. The partial states are built only when their crash point is reached.

    Args:
        model: the persistence model.
        initial: the durable disk the run started from.
        ops: the trace's mutating operations, ``ops[i].index == i``.
        points: only the crash points ``k`` in it (the others' states are never
            built; the same states as the whole enumeration gives at those points).

    Raises:
        ValueError: a bound of ``model`` is not positive, or (power-loss models) an
            operation does not replay onto ``initial``.
    """
    if model.volatile_data or model.reorder:
        from ._power import power_crash_points  # the power-loss family

        return power_crash_points(model, initial, ops, points=points)
    return _process_crash_points(model, initial, ops, points)


def _process_crash_points(
    model: PersistenceModel, initial: CrashState, ops: Sequence[Op], points: Container[int] | None
) -> Iterator[CrashPoint]:
    """:func:`crash_points` under ``process-crash`` (its errors raised when iterated)."""
    if model.block_size < 1 or model.max_partial_writes < 2:
        raise ValueError(f"model {model.name!r} needs block_size >= 1 and max_partial_writes >= 2")
    image = Image.from_crash_state(initial)
    state: CrashState | None = None  # image.crash_state(), built when first needed
    n = len(ops)
    for k in range(n + 1):
        op = ops[k] if k < n else None
        if points is None or k in points:
            if state is None:
                state = image.crash_state()
            if op is not None and op.kind is _WRITE and effective(op):
                partial, cut = _partial_writes(model, image, state, op, k)
                yield new_crash_point(k, op, partial, cut)
            else:
                yield new_crash_point(k, op, (state,))
        if op is not None and op.kind in _CHANGES and effective(op):
            image.apply(op)
            state = None


def _partial_writes(
    model: PersistenceModel, image: Image, state: CrashState, op: Op, k: int
) -> tuple[tuple[CrashState, ...], int]:
    """``state`` and the states where only the first pages of write ``op`` landed."""
    page = model.block_size
    offset = op.offset
    end = offset + len(op.data)
    first = (offset // page + 1) * page  # the first page boundary after the offset
    if first >= end or op.path not in image.names:
        return (state,), 0
    lengths = [b - offset for b in range(first, end, page)]
    cut = 0
    limit = model.max_partial_writes
    if len(lengths) > limit:
        middle = random.Random(f"{k}:{offset}:{len(op.data)}").sample(lengths[1:-1], limit - 2)
        cut = len(lengths) - limit
        lengths = [lengths[0], *sorted(middle), lengths[-1]]
    old = image.data[image.names[op.path]]
    if offset > len(old):
        old = old + bytes(offset - len(old))
    files = state.files
    at = next(i for i, (p, _) in enumerate(files) if p == op.path)
    seen: dict[CrashState, None] = {state: None}
    for m in lengths:
        content = old[:offset] + op.data[:m] + old[offset + m :]
        partial = (*files[:at], (op.path, content), *files[at + 1 :])
        seen[new_crash_state(partial, state.dirs)] = None
    return tuple(seen), cut

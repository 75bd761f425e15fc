"""Persistence models: which disk images a crash may leave (FAULT-MODEL.md §3).

A model is data, not a subclass: a name, whether un-fsynced file data may be lost
or torn, whether un-synced directory operations may be reordered, a block size and
an enumeration bound. :func:`crash_points` maps an operation trace to the crash
states of each crash point ``k`` (the first ``k`` operations issued).

* ``process-crash`` (kill -9): every completed operation survives, in order; the
  page cache outlives the process. One crash state per crash point.
* ``power-loss`` (ext4 ``data=ordered`` with delayed allocation, LazyFS): metadata
  persists as an in-order prefix reaching at least the last barrier; file data not
  yet fsynced survives whole, not at all, or torn in whole blocks.
* ``power-loss-reorder`` (ALICE's default abstract persistence model, Pillai et al.,
  OSDI 2014): as ``power-loss``, and a directory operation not yet made durable by
  an fsync of its parent directory may be lost while later ones persist.

The power-loss family lives in :mod:`crashpoint.faultfs._power`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ._image import CrashState, Image
from ._trace import Op, OpKind

__all__ = [
    "MODELS",
    "POWER_LOSS",
    "POWER_LOSS_REORDER",
    "PROCESS_CRASH",
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
        block_size: torn writes persist whole blocks of this many bytes.
        max_states: at most this many crash states per crash point; more are cut
            and the cut is counted (never silently).
        max_omit: how many pending directory operations a reordering may drop at once.
        source: where the rules come from.
    """

    name: str
    volatile_data: bool = False
    reorder: bool = False
    block_size: int = 4096
    max_states: int = 256
    max_omit: int = 2
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
        cut: how many further states the model's bound left out.
    """

    index: int
    op: Op | None
    states: tuple[CrashState, ...]
    cut: int = 0


def effective(op: Op) -> bool:
    """Whether a recorded operation changed the disk (failed ones did not, except the
    prefix a short write stored)."""
    return op.errno is None or (op.kind is OpKind.WRITE and bool(op.data))


def crash_points(
    model: PersistenceModel, initial: CrashState, ops: Sequence[Op]
) -> Iterator[CrashPoint]:
    """Every crash point of a trace, ``k = 0 .. len(ops)``, with its crash states.

    Args:
        model: the persistence model.
        initial: the durable disk the run started from.
        ops: the trace's mutating operations, ``ops[i].index == i``.
    """
    if model.volatile_data or model.reorder:
        from ._power import power_crash_points  # the power-loss family

        yield from power_crash_points(model, initial, ops)
        return
    image = Image.from_crash_state(initial)
    state = image.crash_state()
    for k in range(len(ops) + 1):
        yield CrashPoint(k, ops[k] if k < len(ops) else None, (state,))
        if k < len(ops):
            op = ops[k]
            if effective(op) and op.kind.mutating and not op.kind.barrier:
                image.apply(op)
                state = image.crash_state()

"""What a persistence model is, and what a model family must provide (FAULT-MODEL.md §3).

The bottom of the models' stack: :mod:`._process` and :mod:`._power` implement
families on these types, :mod:`._models` registers them and dispatches through
them; nothing here imports a family, so no family imports the registry.

* :class:`PersistenceModel`: a named, frozen set of parameters (block size, bounds,
  the data and reorder rules of its family) naming its :class:`Family`.
* :class:`Family`: the rules of one kind of crash (process crash, power loss on a
  given file system) as a registered value: for a trace, the crash points and their
  states, and which operations are durable at crash point ``k``.
* :class:`CrashPoint`: the crash states at one point of a trace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from ._image import CrashState
from ._trace import Op, OpKind

__all__ = [
    "REORDER_COMBINATIONS",
    "CrashPoint",
    "Family",
    "PersistenceModel",
    "device_default",
    "effective",
    "new_crash_point",
    "with_device",
    "with_sample",
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
        writeback_bound: file-system families (``ext4``, ``xfs``, ``posix``): an inode
            with at most this many dirty blocks has them reach the disk in every order
            (``2**N`` subsets); with more, only in offset order, and the other orders
            are counted in ``cut`` (``--writeback-bound N``).
        family: the name of the :class:`Family` whose rules derive this model's
            crash states (a key of :data:`crashpoint.faultfs.FAMILIES`); a family
            refuses, with ``ValueError``, parameters it does not implement.
        atomic_write: the device's atomic write size in bytes (``--atomic-write``,
            FAULT-MODEL.md §3): file-system families tear dirty data at multiples of
            ``min(block_size, atomic_write)``; 512 adds sub-block tears. The default
            (the block) adds none.
        drive_ignores_flush: the drive acknowledges a flush without writing its cache
            (``--drive-ignores-flush``): no ``fsync``, ``fdatasync`` or directory fsync
            forces anything (SQLite's crash VFS; macOS ``fsync`` without
            ``F_FULLFSYNC``).
        sample: the fraction of the distinct crash states the engine examines
            (``--sample RATE``, 0 < RATE <= 1; 1: every one). A state is examined when
            a keyed hash of its digest and ``sample_seed`` falls below the rate
            (:meth:`examines`): the same state gets the same answer at every crash point,
            in every model and faulted run, so one image is still loaded once. The
            states left out are counted (``not_examined``), never silently: a sampled
            run is never exhaustive (issue 24).
        sample_seed: the seed of the sample (``--sample-seed N``): the report states it,
            and the same seed examines the same states.

    A state reachable only through ``atomic_write`` below the block or
    ``drive_ignores_flush`` is *hypothetical* (FAULT-MODEL.md §3): the engine judges it,
    and lists its findings apart (:func:`device_default`).
    """

    name: str
    volatile_data: bool = False
    reorder: bool = False
    block_size: int = 4096
    max_states: int = 256
    reorder_bound: int | None = None
    max_partial_writes: int = 64
    source: str = ""
    writeback_bound: int = 6
    family: str = "process-crash"
    atomic_write: int = 4096
    drive_ignores_flush: bool = False
    sample: float = 1.0
    sample_seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 < self.sample <= 1.0:
            raise ValueError(f"model {self.name!r}: a sample rate is in (0, 1], not {self.sample}")

    def examines(self, digest: str) -> bool:
        """Whether the crash state of ``digest`` (its hex identity) is in this model's
        sample (always, without one): the first 8 bytes of BLAKE2b over the seed and the
        digest, read as a fraction of 2**64, below :attr:`sample`."""
        if self.sample >= 1.0:
            return True
        key = hashlib.blake2b(f"{self.sample_seed}:{digest}".encode(), digest_size=8).digest()
        return int.from_bytes(key, "big") < self.sample * 2**64

    @property
    def hypothetical(self) -> bool:
        """Whether this model assumes less of the device than the default (an atomic
        write below the block, a drive that ignores flushes): its states beyond those of
        :func:`device_default` are hypothetical (FAULT-MODEL.md §3)."""
        return self.atomic_write < self.block_size or self.drive_ignores_flush

    def options(self) -> dict[str, float | None]:
        """The parameters a verdict under this model assumed, as a report names them
        (issue 20: "the verdict names what it assumed"): ``block_size`` (bytes),
        ``max_states``, and the bound its family uses (``writeback_bound`` for a
        file-system family, ``reorder_bound`` where metadata reorders,
        ``max_partial_writes`` for ``process-crash``)."""
        out: dict[str, float | None] = {
            "block_size": self.block_size,
            "max_states": self.max_states,
        }
        if self.family == "process-crash":
            out["max_partial_writes"] = self.max_partial_writes
        else:
            out["writeback_bound"] = self.writeback_bound
        if self.reorder:
            out["reorder_bound"] = self.reorder_bound
        if self.family != "process-crash":  # the device matters only when power is lost
            out["atomic_write"] = self.atomic_write
            out["drive_ignores_flush"] = self.drive_ignores_flush
        if self.sample < 1.0:  # named only when sampling: a full run's options unchanged
            out["sample"] = self.sample
            out["sample_seed"] = self.sample_seed
        return out


def device_default(model: PersistenceModel) -> PersistenceModel:
    """``model`` with the default device guarantees (writes atomic per block, flushes
    honoured): the model whose states are not hypothetical. ``model`` itself when it has
    them."""
    if not model.hypothetical:
        return model
    return replace(model, atomic_write=model.block_size, drive_ignores_flush=False)


def with_device(
    model: PersistenceModel, *, atomic_write: int | None = None, drive_ignores_flush: bool = False
) -> PersistenceModel:
    """``model`` with the device options of ``--atomic-write BYTES`` and
    ``--drive-ignores-flush``. ``process-crash`` is returned unchanged: the page cache
    survives a process crash, so what the drive does with it does not matter.

    Raises:
        ValueError: ``atomic_write`` is not a power of two between 512 and the block.
    """
    if model.family == "process-crash":
        return model
    if atomic_write is not None:
        if (
            atomic_write < 512
            or atomic_write > model.block_size
            or atomic_write & (atomic_write - 1)
        ):
            raise ValueError(
                f"--atomic-write {atomic_write}: a power of two from 512 to the block size "
                f"({model.block_size} bytes)"
            )
    else:
        atomic_write = model.atomic_write
    if atomic_write == model.atomic_write and drive_ignores_flush == model.drive_ignores_flush:
        return model
    return replace(model, atomic_write=atomic_write, drive_ignores_flush=drive_ignores_flush)


def with_sample(model: PersistenceModel, rate: float | None, seed: int = 0) -> PersistenceModel:
    """``model`` examining the fraction ``rate`` of its distinct crash states, chosen by
    ``seed`` (``--sample RATE --sample-seed N``; :attr:`PersistenceModel.sample`);
    ``model`` itself for None. Raises ValueError for a rate outside (0, 1]."""
    if rate is None:
        return model
    return replace(model, sample=rate, sample_seed=seed)


REORDER_COMBINATIONS = 2**16
"""``power-loss-reorder`` enumerates every combination of omitted pending operations
while there are at most this many (16 pending operations); beyond, a bound."""


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


class Family(Protocol):
    """The rules of one kind of crash, as a registered value (issue 19).

    A family is looked up by name (:attr:`PersistenceModel.family`) in
    :data:`crashpoint.faultfs.FAMILIES`; :func:`crashpoint.faultfs.crash_points` and
    :func:`crashpoint.faultfs.durable_at` ask it, and nothing else knows its rules.
    """

    @property
    def name(self) -> str:
        """The family's name, as :attr:`PersistenceModel.family` spells it."""
        ...

    def crash_points(
        self,
        model: PersistenceModel,
        initial: CrashState,
        ops: Sequence[Op],
        points: Container[int] | None,
    ) -> Iterator[CrashPoint]:
        """Every crash point ``k = 0 .. len(ops)`` with its distinct crash states (see
        :func:`crashpoint.faultfs.crash_points`). Raises ``ValueError`` (when called
        or when iterated) for parameters of ``model`` the family does not accept."""
        ...

    def durable(self, model: PersistenceModel, ops: Sequence[Op], k: int) -> list[bool]:
        """For each of ``ops[:k]``, whether it is durable at crash point ``k`` (in every
        crash state of that point). See :func:`crashpoint.faultfs.durable_at`."""
        ...


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

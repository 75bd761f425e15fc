"""The ``process-crash`` family: kill -9 (FAULT-MODEL.md §2, §3).

Every completed operation survives, in order; the page cache outlives the process.
One crash state per crash point, plus, when the operation that did not run is a
write spanning more than one page, the states where only its first pages landed.
"""

from __future__ import annotations

import random
from collections.abc import Container, Iterator, Sequence
from dataclasses import dataclass

from ._family import CrashPoint, PersistenceModel, effective, new_crash_point
from ._image import CrashState, Image, new_crash_state
from ._trace import Op, OpKind

__all__ = ["PROCESS_FAMILY", "ProcessCrashFamily"]

_CHANGES = frozenset(kind for kind in OpKind if kind.mutating and not kind.barrier)
"""The kinds of operations that change an image (barriers do not)."""
_WRITE = OpKind.WRITE  # a module constant: an enum member looked up on its class is a call


@dataclass(frozen=True, slots=True)
class ProcessCrashFamily:
    """Kill -9: completed operations survive in order, a write spanning pages may
    have landed only in its first pages (seen with real SIGKILLs at 16 KiB, 1 MiB and
    2–8 MiB: the kernel checks for a fatal signal between page-cache chunks).

    Attributes:
        name: ``"process-crash"``.
        source: where the rules come from.
    """

    name: str = "process-crash"
    source: str = "kill -9: completed operations survive in order (FAULT-MODEL.md §2, §3)"

    def crash_points(
        self,
        model: PersistenceModel,
        initial: CrashState,
        ops: Sequence[Op],
        points: Container[int] | None,
    ) -> Iterator[CrashPoint]:
        """Under ``process-crash`` the states of crash point ``k`` are the prefix
        state, then, when ``ops[k]`` is a write spanning more than one page (pages of
        ``model.block_size`` bytes, aligned on file offsets), the states where only
        its first ``j`` pages landed, ``j = 1 .. pages - 1``. With more than
        ``model.max_partial_writes`` such states, the first, the last and a sample
        seeded by ``(k, offset, length)`` are offered and the rest counted in ``cut``.

        Raises:
            ValueError: (when iterated) ``block_size < 1``, ``max_partial_writes < 2``,
                or the model asks for volatile data or reordering, which a process
                crash does not lose.
        """
        return _process_crash_points(model, initial, ops, points)

    def durable(self, model: PersistenceModel, ops: Sequence[Op], k: int) -> list[bool]:
        """Every completed operation is durable: ``[True] * min(k, len(ops))``."""
        return [True] * len(ops[:k])


PROCESS_FAMILY = ProcessCrashFamily()
"""The one ``process-crash`` family."""


def _process_crash_points(
    model: PersistenceModel, initial: CrashState, ops: Sequence[Op], points: Container[int] | None
) -> Iterator[CrashPoint]:
    """:func:`ProcessCrashFamily.crash_points` (its errors raised when iterated)."""
    if model.block_size < 1 or model.max_partial_writes < 2:
        raise ValueError(f"model {model.name!r} needs block_size >= 1 and max_partial_writes >= 2")
    if model.volatile_data or model.reorder or model.hypothetical:
        raise ValueError(
            f"model {model.name!r}: family 'process-crash' keeps the page cache; "
            "volatile data, reordering or device options need a power-loss family"
        )
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

"""Fault injection: re-run a workload with a fault armed at each operation (FAULT-MODEL.md §2).

For every operation ``k`` of the crash-free run and every fault that operation can
suffer, the workload runs again with that fault armed. Checker F1 (SPEC.md §8):
the call that hit the fault raises ``state_save_failed`` with retryability
``conditional``, and afterwards (no crash) load still gives the last acknowledged
state (or the failed call's own state, if the failure came after its commit
point). Every crash point after the fault is then explored too, so a crash right
after the failure must still satisfy R1 and the rest.

A *short count* (a write stores a prefix and returns its length, no error) is not a
failure: F1 does not apply to it, and a save acknowledged over a cut file shows as R1
at the end of the run (or at any crash point after the acknowledgement).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Iterable, Sequence

from ..core._codec import decode_memo
from ..faultfs import PROCESS_CRASH, Fault, FaultKind, Op, OpKind, PersistenceModel
from ._checkers import Invariant
from ._explore import (
    Checker,
    ExplorationResult,
    _state_after,
    _wanted,
    new_result,
    record,
    resolve,
)
from ._targets import Target
from ._workload import Workload

__all__ = [
    "FAULTS_BY_OP",
    "FAULT_ERRNOS",
    "explore_faults",
    "explore_faults_models",
    "fault_plan",
    "fault_spec",
    "parse_fault",
]

_E = FaultKind.ERROR
FAULTS_BY_OP: dict[OpKind, tuple[tuple[int, FaultKind], ...]] = {
    OpKind.MKDIR: ((errno.ENOSPC, _E), (errno.EACCES, _E), (errno.EROFS, _E)),
    OpKind.CREATE: (
        (errno.ENOSPC, _E),
        (errno.EDQUOT, _E),
        (errno.EACCES, _E),
        (errno.EROFS, _E),
        (errno.EIO, _E),
    ),
    OpKind.WRITE: (
        (errno.ENOSPC, _E),
        (errno.EDQUOT, _E),
        (errno.EIO, _E),
        (errno.ENOSPC, FaultKind.SHORT_WRITE),
        (errno.ENOSPC, FaultKind.SHORT_COUNT),
    ),
    OpKind.TRUNCATE: ((errno.EIO, _E),),
    OpKind.RENAME: (
        (errno.EXDEV, _E),
        (errno.EIO, _E),
        (errno.EACCES, _E),
        (errno.EROFS, _E),
        (errno.ENOSPC, _E),
    ),
    OpKind.UNLINK: ((errno.EACCES, _E), (errno.EIO, _E), (errno.EROFS, _E), (errno.ENOENT, _E)),
    OpKind.FSYNC: ((errno.EIO, _E), (errno.EIO, FaultKind.FSYNC_LOST)),
    OpKind.FSYNC_DIR: ((errno.EIO, _E),),
    OpKind.FDATASYNC: ((errno.EIO, _E), (errno.EIO, FaultKind.FSYNC_LOST)),
    OpKind.RMDIR: ((errno.EACCES, _E), (errno.EIO, _E), (errno.EROFS, _E)),
    OpKind.LINK: ((errno.EXDEV, _E), (errno.EIO, _E), (errno.ENOSPC, _E), (errno.EROFS, _E)),
}
"""The faults each kind of operation can suffer (FAULT-MODEL.md §2)."""


def fault_plan(ops: Sequence[Op]) -> list[Fault]:
    """Every fault to arm, operation by operation, for a crash-free trace.

    A short count is armed only on writes of at least 2 bytes: a full disk that takes
    no byte of a write fails it with ENOSPC, which the plan already has."""
    return [
        Fault(op.index, code, kind)
        for op in ops
        for code, kind in FAULTS_BY_OP.get(op.kind, ())
        if kind is not FaultKind.SHORT_COUNT or len(op.data) > 1
    ]


def fault_spec(fault: Fault) -> str:
    """``AT:NAME``, as ``--fault`` takes it: ``3:ENOSPC``, ``5:short-write``,
    ``5:short-count``, ``7:fsync-lost``."""
    if fault.kind is FaultKind.ERROR:
        return f"{fault.at}:{errno.errorcode[fault.errno]}"
    return f"{fault.at}:{fault.kind.value}"


FAULT_ERRNOS = ("ENOSPC", "EDQUOT", "EIO", "EACCES", "EROFS", "EXDEV", "ENOENT")
"""The errnos a fault can carry (FAULT-MODEL.md §2)."""

_KIND_ALIASES = {
    "short-write": FaultKind.SHORT_WRITE,
    "short-count": FaultKind.SHORT_COUNT,
    "fsync-lost": FaultKind.FSYNC_LOST,
    "fsyncgate": FaultKind.FSYNC_LOST,
    "lost-fsync": FaultKind.FSYNC_LOST,
}


def parse_fault(text: str) -> Fault:
    """Parse ``AT:NAME`` (see :func:`fault_spec`): NAME is an errno of
    :data:`FAULT_ERRNOS` (any case), ``short-write``, ``short-count`` or
    ``fsync-lost`` (alias ``fsyncgate``). Raises ValueError naming the valid forms."""
    at_text, sep, name = text.strip().partition(":")
    valid = f"{', '.join(FAULT_ERRNOS)}, short-write, short-count, fsync-lost"
    if not sep or not (at_text.isascii() and at_text.isdigit()):
        raise ValueError(
            f"a fault looks like AT:NAME (e.g. 3:ENOSPC; NAME one of {valid}), not {text!r}"
        )
    at = int(at_text)
    kind = _KIND_ALIASES.get(name.lower())
    if kind in (FaultKind.SHORT_WRITE, FaultKind.SHORT_COUNT):
        return Fault(at, errno.ENOSPC, kind)
    if kind is FaultKind.FSYNC_LOST:
        return Fault(at, errno.EIO, kind)
    if name.upper() not in FAULT_ERRNOS:
        raise ValueError(f"unknown fault {name!r} in {text!r}; NAME is one of {valid}")
    return Fault(at, getattr(errno, name.upper()))


def explore_faults(
    workload: Workload,
    *,
    model: PersistenceModel | str = PROCESS_CRASH,
    target: Target | str | None = None,
    checker: Iterable[Invariant | str] | None = None,
    faults: Sequence[Fault] | None = None,
    shard: tuple[int, int] | None = None,
    crash_window: int | None = 1,
) -> ExplorationResult:
    """Run ``workload`` once per fault of :func:`fault_plan` (or ``faults``) and check
    F1, then every invariant at the crash points after the fault.

    ``crash_window``: how many crash points right after the failed operation are
    explored (default 1: a crash right after the failure), plus the end of the run
    (no crash: F1); None explores every crash point from the fault on.

    Returns an :class:`ExplorationResult` whose ``faults`` counts the faulted runs.
    """
    (result,) = explore_faults_models(
        workload,
        models=(model,),
        target=target,
        checker=checker,
        faults=faults,
        shard=shard,
        crash_window=crash_window,
    )
    return result


@decode_memo()  # one content-addressed decode memo per exploration (issue 11)
def explore_faults_models(
    workload: Workload,
    *,
    models: Sequence[PersistenceModel | str],
    target: Target | str | None = None,
    checker: Iterable[Invariant | str] | None = None,
    faults: Sequence[Fault] | None = None,
    shard: tuple[int, int] | None = None,
    crash_window: int | None = 1,
) -> list[ExplorationResult]:
    """:func:`explore_faults` under each of ``models``, recording each faulted run
    once (a recording does not depend on the model): one result per model, in order,
    each the same as ``explore_faults`` gives for that model."""
    started = time.perf_counter()
    resolved = [resolve(m, target) for m in models]
    target = resolved[0][1]
    wanted = _wanted(checker, faults=True)
    base = record(workload, target)
    plan = list(faults) if faults is not None else fault_plan(base.ops)
    runs = [
        (
            new_result(workload, m, target, wanted, operations=len(base.ops), faults=len(plan)),
            Checker(workload, m, target, wanted),
        )
        for m, _ in resolved
    ]
    for fault in plan:
        rec = record(workload, target, fault=fault)
        extra = f" --fault {fault_spec(fault)}"
        hit = next(
            (c for c in rec.calls if c.begin <= fault.at and (c.end is None or fault.at < c.end)),
            None,
        )
        # A short count is no failure: the call must finish the write and return
        # normally, so F1 does not apply; a save acknowledged over a cut file is R1.
        short_count = (
            fault.kind is FaultKind.SHORT_COUNT
            and fault.at < len(rec.ops)
            and rec.ops[fault.at].errno is None
        )
        f1_hit = (
            hit is not None
            and not short_count
            and Invariant.F1 in wanted
            and (hit.error != "state_save_failed" or hit.retryability != "conditional")
        )
        end = len(rec.ops)
        only = (
            None
            if crash_window is None
            else {*range(fault.at + 1, min(fault.at + 1 + crash_window, end + 1)), end}
        )
        for result, chk in runs:
            if f1_hit:
                assert hit is not None
                got = (
                    f"{hit.label} returned normally"
                    if hit.error is None
                    else f"{hit.label} raised {hit.error}"
                    + (f" ({hit.retryability})" if hit.retryability else "")
                )
                k = fault.at + 1
                result.violations.append(
                    chk.violation(
                        rec,
                        Invariant.F1,
                        k,
                        _state_after(rec, k),
                        hit.session_id,
                        f"{hit.kind.value} raises state_save_failed (conditional) after "
                        f"{fault.render()}",
                        got,
                        extra=extra,
                    )
                )
            chk.check(
                rec,
                result,
                from_point=fault.at + 1,
                only=only,
                shard=shard,
                extra=extra,
                end_invariant=None if short_count else Invariant.F1,
            )
    seconds = time.perf_counter() - started
    for result, chk in runs:
        chk.finish(result)
        result.seconds = seconds / len(runs)
    return [result for result, _ in runs]

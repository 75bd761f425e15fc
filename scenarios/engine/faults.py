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
from collections.abc import Sequence

from ...faultfs import Fault, FaultKind, Op, OpKind
from .explore import fault_spec

__all__ = [
    "FAULTS_BY_OP",
    "FAULT_ERRNOS",
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
    OpKind.SYMLINK: ((errno.ENOSPC, _E), (errno.EIO, _E), (errno.EACCES, _E), (errno.EROFS, _E)),
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

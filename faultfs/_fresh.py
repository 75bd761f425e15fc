"""Fresh names matched by the order of their creation (FAULT-MODEL.md §4; issue 22).

A re-run of a workload (a faulted run compared with its recording) must issue the
recording's operations up to its fault. Names a program makes up afresh on each run
(Python's ``tempfile`` names, a pid, a clock in a name) differ from run to run although
nothing else does: :func:`match_fresh_names` maps a name the re-run *created* onto the
name the recording created at the same position (the same kind of operation, in the
same directory, neither name present before), and applies that mapping to every later
operation of the re-run (a renaming, shown in reports). It knows no runner: the
in-process interception, ``--exec`` and any other trace importer share it.

:func:`tempfile_probe` recognises Python's ``tempfile._get_default_tempdir``: once per
process, to find a writable temporary directory, it creates a random 8-character name
(``O_CREAT|O_EXCL``), writes ``b"blat"`` to it and deletes it. That file is not the
target's data, and a probe outside the target's directory is not an escape.
"""

from __future__ import annotations

import dataclasses
import hashlib
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ._image import CrashState
from ._trace import Op, OpKind

__all__ = [
    "TEMPFILE_PROBE_DATA",
    "Renaming",
    "match_fresh_names",
    "op_difference",
    "tempfile_probe",
]

TEMPFILE_PROBE_DATA = b"blat"
"""What ``tempfile._get_default_tempdir`` writes into its probe file (CPython 3.8–3.13)."""

_PROBE_NAME = re.compile(r"[a-z0-9_]{8}")
"""``tempfile._RandomNameSequence``: 8 characters of ``abcdefghijklmnopqrstuvwxyz0123456789_``."""

_CREATED = {
    OpKind.CREATE: "path",
    OpKind.MKDIR: "path",
    OpKind.RENAME: "dst",
    OpKind.LINK: "dst",
    OpKind.SYMLINK: "path",
}
"""Operations that give a name to something, and the field holding that name."""


def tempfile_probe(events: Iterable[tuple[str, str, bytes]]) -> set[str]:
    """The paths of ``tempfile``'s writability probes among ``events``.

    Args:
        events: ``(what, path, data)`` in the order they happened, ``what`` one of
            ``"create"`` (an exclusive create), ``"write"`` (``data`` written),
            ``"unlink"``; other events may be given and are skipped.

    Returns:
        each path created, written exactly :data:`TEMPFILE_PROBE_DATA` and unlinked,
        whose name is 8 characters of ``tempfile``'s alphabet."""
    state: dict[str, bytes | None] = {}  # created path -> what was written (None: nothing)
    probes: set[str] = set()
    for what, path, data in events:
        if what == "create":
            if _PROBE_NAME.fullmatch(posixpath.basename(path)):
                state[path] = None
        elif what == "write" and path in state:
            state[path] = (state[path] or b"") + data
        elif what == "unlink" and path in state and state.pop(path) == TEMPFILE_PROBE_DATA:
            probes.add(path)
    return probes


@dataclass(slots=True)
class Renaming:
    """Names of a re-run mapped onto its recording's.

    Attributes:
        names: re-run name → recording name, in the order they were matched.
    """

    names: dict[str, str] = field(default_factory=dict)

    def path(self, path: str | None) -> str | None:
        """``path`` with a renamed name (or a renamed directory above it) replaced."""
        if not path or not self.names:
            return path
        found = self.names.get(path)
        if found is not None:
            return found
        head = path
        while True:
            head = posixpath.dirname(head)
            if not head or head == "/":
                return path
            found = self.names.get(head)
            if found is not None:
                return found + path[len(head) :]

    def op(self, op: Op) -> Op:
        """``op`` with its names renamed."""
        path, dst = self.path(op.path), self.path(op.dst)
        if path == op.path and dst == op.dst:
            return op
        return dataclasses.replace(op, path=path or "", dst=dst)

    def as_list(self) -> list[dict[str, str]]:
        """``[{"from": re-run name, "to": recording name}, ...]`` (report key ``renamed``)."""
        return [{"from": a, "to": b} for a, b in self.names.items()]


def _key(op: Op) -> tuple[object, ...]:
    return (op.kind, op.path, op.dst, op.offset, op.data, op.size)


def _names(state: CrashState) -> set[str]:
    return {p for p, _ in state.files} | set(state.dirs)


def match_fresh_names(
    recorded: Sequence[Op],
    rerun: Sequence[Op],
    *,
    recorded_initial: CrashState | None = None,
    rerun_initial: CrashState | None = None,
) -> tuple[Renaming, int | None]:
    """Compare ``rerun`` with ``recorded`` operation by operation, matching fresh names.

    At each position, an operation of the re-run that differs from the recording's only
    by the name it creates (``create``/``mkdir`` path, ``rename``/``link`` destination),
    both names in the same directory and neither existing before (not in the initial
    state, not named by an earlier operation of its run), maps the re-run's name onto
    the recording's for every later operation. Compares ``min(len)`` operations.

    Returns:
        the renaming, and the index of the first operation that still differs (None
        when none does)."""
    ren = Renaming()
    seen_rec = _names(recorded_initial) if recorded_initial is not None else set()
    seen_re = _names(rerun_initial) if rerun_initial is not None else set()
    taken: set[str] = set()
    for mine, theirs in zip(recorded, rerun, strict=False):
        t = ren.op(theirs)
        if _key(mine) != _key(t):
            attr = _CREATED.get(mine.kind)
            if attr is None or mine.kind is not t.kind:
                return ren, mine.index
            want, got = getattr(mine, attr), getattr(t, attr)
            raw = getattr(theirs, attr)
            fresh = (
                want != got
                and want is not None
                and got is not None
                and posixpath.dirname(want) == posixpath.dirname(got)
                and want not in seen_rec
                and raw not in seen_re
                and raw not in ren.names
                and want not in taken
            )
            if not fresh:
                return ren, mine.index
            ren.names[raw] = want
            taken.add(want)
            t = ren.op(theirs)
            if _key(mine) != _key(t):
                return ren, mine.index
        for op, seen in ((mine, seen_rec), (theirs, seen_re)):
            seen.add(op.path)
            if op.dst is not None:
                seen.add(op.dst)
    return ren, None


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:12]


def op_difference(recorded: Op, rerun: Op) -> str:
    """What differs between two operations that render alike or not, in words: the
    fields that differ and, for written bytes, their sha256 prefixes and the first
    offset (in the write, and in the file) at which they differ."""
    parts = []
    if recorded.kind is not rerun.kind:
        parts.append(f"the operation ({rerun.kind.value} instead of {recorded.kind.value})")
    if recorded.path != rerun.path:
        parts.append(f"the path ({rerun.path!r} instead of {recorded.path!r})")
    if recorded.dst != rerun.dst:
        parts.append(f"the destination ({rerun.dst!r} instead of {recorded.dst!r})")
    if recorded.offset != rerun.offset:
        parts.append(f"the offset ({rerun.offset} instead of {recorded.offset})")
    if recorded.size != rerun.size:
        parts.append(f"the size ({rerun.size} instead of {recorded.size})")
    a, b = recorded.data, rerun.data
    if a != b:
        first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
        if first is None:
            first = min(len(a), len(b))
        parts.append(
            f"the bytes (sha256 {_sha(b)} instead of {_sha(a)}; {len(b)} instead of "
            f"{len(a)} bytes; first difference at byte {first} of the write, file offset "
            f"{recorded.offset + first})"
            if len(a) != len(b)
            else f"the bytes (sha256 {_sha(b)} instead of {_sha(a)}; first difference at "
            f"byte {first} of the write, file offset {recorded.offset + first})"
        )
    return ", ".join(parts) if parts else "nothing recorded"

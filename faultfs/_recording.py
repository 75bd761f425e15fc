"""Recording, crashing and faulting any filesystem (FAULT-MODEL.md §2, §4).

:class:`RecordingFileSystem` wraps a :class:`~crashpoint.faultfs.FileSystem`,
records every call as an :class:`~crashpoint.faultfs.Op` and can

* **crash at point k**: the ``k``-th mutating call (0-based) raises
  :class:`SimulatedCrash` instead of running, so exactly ``k`` operations were done;
  afterwards every call raises it again and changes nothing (a dead machine has no
  ``finally:``);
* **fault at operation k**: that call fails with ``OSError(errno, strerror, path)``
  and the code keeps running (see :class:`Fault`), or, for a *short count*, stores
  a prefix of its data and returns that prefix's length with no error.

Error tree::

    BaseException
     └── SimulatedCrash      the machine stopped; never caught by ``except Exception``
"""

from __future__ import annotations

import dataclasses
import enum
import errno as _errno
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn, TypeVar

from ._image import os_error
from ._protocol import FileSystem
from ._trace import Op, OpKind, Trace

__all__ = ["Fault", "FaultKind", "RecordingFileSystem", "SimulatedCrash"]

T = TypeVar("T")


class SimulatedCrash(BaseException):
    """The simulated machine stopped at operation ``op_index``.

    Derives from ``BaseException`` (like hypothesis's ``StopTest``) so that
    ``except Exception`` in the system under test cannot swallow it. Once raised,
    every later call on the same filesystem raises it again.

    Attributes:
        op_index: index of the operation that did not run (the crash point ``k``).
        path: the path that operation would have touched.
    """

    def __init__(self, op_index: int, path: str = "") -> None:
        super().__init__(op_index, path)
        self.op_index = op_index
        self.path = path

    def __str__(self) -> str:
        return f"simulated crash before operation {self.op_index} ({self.path})"


class FaultKind(str, enum.Enum):
    """How an armed operation fails."""

    ERROR = "error"
    """The call fails with ``errno`` and changes nothing."""
    SHORT_WRITE = "short-write"
    """A write stores a prefix (half the bytes, rounded down) then fails with ENOSPC."""
    SHORT_COUNT = "short-count"
    """A write of ``n`` >= 2 bytes stores its first ``n // 2`` bytes and returns that
    count with no error: what Linux's ``write(2)`` does when it reaches a full disk
    after some bytes (FAULT-MODEL.md §2). The trace records the prefix, as a plain
    successful write. A write of fewer than 2 bytes, or any other operation, fails
    with the fault's errno (ENOSPC) instead: a full disk that takes no byte says so."""
    FSYNC_LOST = "fsync-lost"
    """An fsync fails with EIO and the file's dirty data is dropped (Linux ≤ 4.13
    "fsyncgate"): a retried fsync reports success but the data is not durable."""


@dataclass(frozen=True, slots=True)
class Fault:
    """A fault armed at mutating operation ``at`` (0-based).

    Attributes:
        at: index of the operation that fails.
        errno: the errno raised (ENOSPC, EDQUOT, EIO, EACCES, EROFS, EXDEV, ENOENT).
        kind: plain error, short write, short count, or fsyncgate-style lost fsync.
    """

    at: int
    errno: int = _errno.EIO
    kind: FaultKind = FaultKind.ERROR

    def render(self) -> str:
        name = _errno.errorcode.get(self.errno, str(self.errno))
        if self.kind is FaultKind.ERROR:
            return f"{name} at operation {self.at}"
        if self.kind is FaultKind.SHORT_COUNT:
            return f"{self.kind.value} at operation {self.at}"
        return f"{self.kind.value} ({name}) at operation {self.at}"


class RecordingFileSystem:
    """Wraps ``inner``, records the operation trace, crashes or faults on demand.

    Args:
        inner: the filesystem that really performs the calls.
        crash_at: crash point ``k``: the call that would be operation ``k`` raises
            :class:`SimulatedCrash`; None for no crash.
        fault: a :class:`Fault` to inject; None for none.
        record_reads: also record reads as events (off saves time in hot loops).

    Attributes:
        trace: the recorded :class:`~crashpoint.faultfs.Trace`.
        crashed: the :class:`SimulatedCrash` once it happened, else None.
    """

    def __init__(
        self,
        inner: FileSystem,
        *,
        crash_at: int | None = None,
        fault: Fault | None = None,
        record_reads: bool = True,
    ) -> None:
        self.inner = inner
        self.trace = Trace()
        self.crash_at = crash_at
        self.fault = fault
        self.record_reads = record_reads
        self.crashed: SimulatedCrash | None = None

    # --- helpers ---------------------------------------------------------------
    @property
    def op_count(self) -> int:
        """Number of mutating operations recorded so far."""
        return len(self.trace.ops)

    def mark(self, label: str) -> None:
        """Record a workload mark, e.g. ``"ack:save#2"`` (not an operation)."""
        if self.crashed is not None:
            raise self.crashed
        self.trace.events.append(_shared_op(len(self.trace.ops), OpKind.MARK, "", None, label))

    def _mutate(
        self,
        kind: OpKind,
        path: str,
        call: Callable[..., T],
        *args: object,
        dst: str | None = None,
        offset: int = 0,
        data: bytes = b"",
        size: int = 0,
        inject: bool = True,
    ) -> T:
        """Run ``call(*args)`` as operation ``len(trace.ops)`` on ``path`` (and ``dst``),
        unless the machine crashes there or a fault is armed there."""
        if self.crashed is not None:
            raise self.crashed
        index = len(self.trace.ops)
        # The trace holds normalised paths: what the operation really touched.
        path = _normpath(path)
        if dst is not None:
            dst = _normpath(dst)
        if self.crash_at is not None and index >= self.crash_at:
            self.crashed = SimulatedCrash(index, path)
            raise self.crashed
        fault = self.fault
        if inject and fault is not None and fault.at == index:
            op = Op(index, kind, path, dst=dst, offset=offset, data=data, size=size)
            return self._inject(op, fault)
        try:
            result = call(*args)
        except OSError as exc:
            self._record(Op(index, kind, path, dst=dst, offset=offset, size=size, errno=exc.errno))
            raise
        if kind is OpKind.WRITE or kind is OpKind.SYMLINK or size:
            self._record(Op(index, kind, path, dst=dst, offset=offset, data=data, size=size))
        else:
            self._record(_shared_op(index, kind, path, dst, ""))
        return result

    def _inject(self, op: Op, fault: Fault) -> NoReturn:
        index = op_index = len(self.trace.ops)
        if fault.kind is FaultKind.SHORT_WRITE and op.kind is OpKind.WRITE:
            prefix = op.data[: len(op.data) // 2]
            if prefix:
                try:
                    self.inner.write(op.path, op.offset, prefix)
                except OSError as exc:  # nothing was stored: an ordinary failure
                    self._record(dataclasses.replace(op, data=b"", errno=exc.errno))
                    raise
            self._record(
                Op(index, OpKind.WRITE, op.path, offset=op.offset, data=prefix, errno=_errno.ENOSPC)
            )
            raise os_error(_errno.ENOSPC, op.path)
        code = fault.errno
        lost = fault.kind is FaultKind.FSYNC_LOST and op.kind in (OpKind.FSYNC, OpKind.FDATASYNC)
        self._record(
            Op(
                op_index,
                op.kind,
                op.path,
                dst=op.dst,
                size=op.size,
                offset=op.offset,
                label="fsync-lost" if lost else "",
                errno=code,
            )
        )
        raise os_error(code, op.path)

    def _record(self, op: Op) -> None:
        self.trace.ops.append(op)
        self.trace.events.append(op)

    def _read(self, kind: OpKind, call: Callable[[str], T], path: str) -> T:
        if self.crashed is not None:
            raise self.crashed
        if self.record_reads:
            self.trace.events.append(Op(len(self.trace.ops), kind, path))
        return call(path)

    # --- FileSystem: mutating --------------------------------------------------
    def mkdir(self, path: str) -> None:
        self._mutate(OpKind.MKDIR, path, self.inner.mkdir, path)

    def create(self, path: str, *, exclusive: bool = False) -> None:
        if exclusive:
            self._mutate(OpKind.CREATE, path, _create_new, self.inner, path)
        else:
            self._mutate(OpKind.CREATE, path, self.inner.create, path)

    def write(self, path: str, offset: int, data: bytes) -> int:
        data = bytes(data)
        fault = self.fault
        short = (
            fault is not None
            and fault.kind is FaultKind.SHORT_COUNT
            and fault.at == len(self.trace.ops)
            and len(data) > 1
        )
        if short:
            # A short count (FAULT-MODEL.md §2): only a prefix reaches the disk and
            # its length is returned, no error. The trace holds what was stored.
            data = data[: len(data) // 2]
        return self._mutate(
            OpKind.WRITE,
            path,
            self.inner.write,
            path,
            offset,
            data,
            offset=offset,
            data=data,
            inject=not short,
        )

    def truncate(self, path: str, size: int) -> None:
        self._mutate(OpKind.TRUNCATE, path, self.inner.truncate, path, size, size=size)

    def rename(self, src: str, dst: str) -> None:
        self._mutate(OpKind.RENAME, src, self.inner.rename, src, dst, dst=dst)

    def unlink(self, path: str) -> None:
        self._mutate(OpKind.UNLINK, path, self.inner.unlink, path)

    def rmdir(self, path: str) -> None:
        self._mutate(OpKind.RMDIR, path, self.inner.rmdir, path)

    def link(self, src: str, dst: str) -> None:
        self._mutate(OpKind.LINK, src, self.inner.link, src, dst, dst=dst)

    def symlink(self, target: bytes, path: str) -> None:
        """``symlink(2)``: see :meth:`~crashpoint.faultfs.SymlinkFileSystem.symlink`.
        Raises AttributeError when the wrapped filesystem has no ``symlink``."""
        inner = self.inner.symlink  # type: ignore[attr-defined]
        target = bytes(target)
        self._mutate(OpKind.SYMLINK, path, inner, target, path, data=target)

    def fsync(self, path: str) -> None:
        self._mutate(OpKind.FSYNC, path, self.inner.fsync, path)

    def fdatasync(self, path: str) -> None:
        self._mutate(OpKind.FDATASYNC, path, self.inner.fdatasync, path)

    def fsync_dir(self, path: str) -> None:
        self._mutate(OpKind.FSYNC_DIR, path, self.inner.fsync_dir, path)

    # --- FileSystem: locks (non-mutating events) -------------------------------
    def lock(self, path: str, timeout: float) -> int:
        """Take the inner filesystem's lock; recorded as a ``lock`` event, which no
        persistence model reads (SPEC.md §6). Creating an absent lock file is a
        ``create`` operation (crash point, fault site) done by the lock call itself."""
        if self.crashed is not None:
            raise self.crashed
        norm = _normpath(path)
        try:
            if self.inner.exists(norm):
                handle = self.inner.lock(norm, timeout)
            else:
                handle = self._mutate(OpKind.CREATE, norm, self.inner.lock, norm, timeout)
        except OSError as exc:
            self.trace.events.append(Op(len(self.trace.ops), OpKind.LOCK, norm, errno=exc.errno))
            raise
        self.trace.events.append(Op(len(self.trace.ops), OpKind.LOCK, norm))
        return handle

    def unlock(self, path: str, handle: int) -> None:
        """Release the inner lock (also after a crash, as the kernel does for a dead
        process, then raise the crash again); recorded as an ``unlock`` event."""
        norm = _normpath(path)
        self.inner.unlock(norm, handle)
        if self.crashed is not None:
            raise self.crashed
        self.trace.events.append(Op(len(self.trace.ops), OpKind.UNLOCK, norm))

    # --- FileSystem: reads -----------------------------------------------------
    def read(self, path: str) -> bytes:
        return self._read(OpKind.READ, self.inner.read, path)

    def exists(self, path: str) -> bool:
        return self._read(OpKind.EXISTS, self.inner.exists, path)

    def is_dir(self, path: str) -> bool:
        return self._read(OpKind.STAT, self.inner.is_dir, path)

    def listdir(self, path: str) -> list[str]:
        return self._read(OpKind.LISTDIR, self.inner.listdir, path)

    def size(self, path: str) -> int:
        return self._read(OpKind.STAT, self.inner.size, path)


def _create_new(fs: FileSystem, path: str) -> None:
    fs.create(path, exclusive=True)


_SHARED_OPS: dict[tuple[object, ...], Op] = {}
_SHARED_OPS_MAX = 8192


def _shared_op(index: int, kind: OpKind, path: str, dst: str | None, label: str) -> Op:
    """``Op(index, kind, path, dst=dst, label=label)``, one object for equal ones (issue
    11: a workload recorded once per fault records the same marks and metadata
    operations each time; an :class:`Op` is frozen, so sharing it changes nothing)."""
    if type(path) is not str or type(label) is not str or not (dst is None or type(dst) is str):
        return Op(index, kind, path, dst=dst, label=label)  # a subclass may equal a str
    key = (index, kind, path, dst, label)
    op = _SHARED_OPS.get(key)
    if op is None:
        if len(_SHARED_OPS) >= _SHARED_OPS_MAX:
            _SHARED_OPS.clear()
        op = _SHARED_OPS[key] = Op(index, kind, path, dst=dst, label=label)
    return op


_NORMPATHS: dict[str, str] = {}
_NORMPATHS_MAX = 4096


def _normpath(path: str) -> str:
    """``posixpath.normpath(path)``, remembered (a workload touches a few paths over and
    over; issue 11)."""
    normal = _NORMPATHS.get(path)
    if normal is None:
        normal = posixpath.normpath(path)
        if type(path) is str:  # a subclass may compare equal to a plain str
            if len(_NORMPATHS) >= _NORMPATHS_MAX:
                _NORMPATHS.clear()
            _NORMPATHS[path] = normal
    return normal

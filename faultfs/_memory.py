"""The model filesystem: an in-memory disk that knows what is durable.

:class:`MemoryFileSystem` holds the *volatile* image (what running code sees: the
page cache), the image it booted from, which is durable by definition
(FAULT-MODEL.md §1: the base directory exists before the workload), and the log of
operations applied since boot, barriers included. Which of those operations would
survive a crash is the business of a persistence model
(:mod:`crashpoint.faultfs._models`), which derives it from the log;
:meth:`MemoryFileSystem.durable_state` asks the ``power-loss`` model for the worst case.
"""

from __future__ import annotations

import dataclasses
import errno
import posixpath

from ._image import CrashState, Image, os_error
from ._power import durable_state
from ._trace import Op, OpKind

__all__ = ["MemoryFileSystem"]


def _norm(path: str) -> str:
    if not path.startswith("/"):
        raise os_error(errno.EINVAL, path)
    return posixpath.normpath(path) if path != "/" else "/"


class MemoryFileSystem:
    """An in-memory :class:`~crashpoint.faultfs.FileSystem`: fast and deterministic.

    Args:
        state: the crash state to boot from (a "reboot"); empty disk if None.
        dirs: directories to create before anything else (durable), e.g. ``["/data"]``.

    Attributes:
        mutations: number of mutating calls that changed the image (a cheap way for a
            checker to see whether code wrote anything); barriers are not counted.

    Paths must be absolute POSIX paths; a relative path raises ``OSError(EINVAL)``.
    """

    __slots__ = ("_boot", "_image", "_log", "mutations")

    def __init__(self, state: CrashState | None = None, *, dirs: tuple[str, ...] = ()) -> None:
        self._image = Image.from_crash_state(state) if state is not None else Image()
        self.mutations = 0
        for d in dirs:
            parts = _norm(d).strip("/").split("/")
            for i in range(1, len(parts) + 1):
                self._image.dirs.add("/" + "/".join(parts[:i]))
        self._boot = self._image.crash_state()
        self._log: list[Op] = []

    # --- whole-disk views ------------------------------------------------------
    def image(self) -> Image:
        """A copy of the current (volatile) image."""
        return self._image.copy()

    def crash_state(self) -> CrashState:
        """The current volatile image, frozen (what a process crash leaves)."""
        return self._image.crash_state()

    @property
    def boot_state(self) -> CrashState:
        """The disk this filesystem booted from (durable by definition)."""
        return self._boot

    @property
    def log(self) -> tuple[Op, ...]:
        """The operations applied since boot, barriers included, numbered from 0."""
        return tuple(self._log)

    def durable_state(self) -> CrashState:
        """The most pessimistic ``power-loss`` crash state right now.

        Every metadata operation after the last barrier (``fsync``/``fsync_dir``) is
        lost, and so is every write not made durable by an ``fsync`` of its file:
        a file created since reads back empty (ext4 delayed allocation). Other
        crash states of the moment keep more; see
        :func:`~crashpoint.faultfs.crash_points` with
        :data:`~crashpoint.faultfs.POWER_LOSS` for all of them.
        """
        return durable_state(self._boot, self._log)

    def apply(self, op: Op) -> None:
        """Perform a recorded mutating operation (replay) and log it.

        Raises ``OSError`` as the OS would; a failed operation changes and logs nothing.
        """
        self._image.apply(op)
        log = self._log
        log.append(op if op.index == len(log) else dataclasses.replace(op, index=len(log)))
        if not op.kind.barrier:
            self.mutations += 1

    # --- FileSystem ------------------------------------------------------------
    def mkdir(self, path: str) -> None:
        self.apply(Op(len(self._log), OpKind.MKDIR, _norm(path)))

    def create(self, path: str) -> None:
        self.apply(Op(len(self._log), OpKind.CREATE, _norm(path)))

    def write(self, path: str, offset: int, data: bytes) -> int:
        if offset < 0:
            raise os_error(errno.EINVAL, path)
        self.apply(Op(len(self._log), OpKind.WRITE, _norm(path), offset=offset, data=bytes(data)))
        return len(data)

    def truncate(self, path: str, size: int) -> None:
        if size < 0:
            raise os_error(errno.EINVAL, path)
        self.apply(Op(len(self._log), OpKind.TRUNCATE, _norm(path), size=size))

    def rename(self, src: str, dst: str) -> None:
        self.apply(Op(len(self._log), OpKind.RENAME, _norm(src), dst=_norm(dst)))

    def unlink(self, path: str) -> None:
        self.apply(Op(len(self._log), OpKind.UNLINK, _norm(path)))

    def fsync(self, path: str) -> None:
        path = _norm(path)
        if not self._image.is_file(path):
            if self._image.is_dir(path):
                raise os_error(errno.EISDIR, path)
            raise os_error(self._image.absent(path), path)
        self._log.append(Op(len(self._log), OpKind.FSYNC, path))

    def fsync_dir(self, path: str) -> None:
        path = _norm(path)
        if not self._image.is_dir(path):
            if self._image.is_file(path):
                raise os_error(errno.ENOTDIR, path)
            raise os_error(self._image.absent(path), path)
        self._log.append(Op(len(self._log), OpKind.FSYNC_DIR, path))

    def read(self, path: str) -> bytes:
        return self._image.read(_norm(path))

    def exists(self, path: str) -> bool:
        return self._image.exists(_norm(path))

    def is_dir(self, path: str) -> bool:
        return self._image.is_dir(_norm(path))

    def listdir(self, path: str) -> list[str]:
        return self._image.listdir(_norm(path))

    def size(self, path: str) -> int:
        return len(self._image.read(_norm(path)))

"""The model filesystem: an in-memory disk that knows what is durable.

:class:`MemoryFileSystem` holds the *volatile* image (what running code sees: the
page cache) and the image the run started from, which is durable by definition
(FAULT-MODEL.md §1: the base directory exists before the workload). Which of the
operations since then would survive a crash is the business of a persistence
model (:mod:`crashpoint.faultfs._models`), which derives it from the operation log.
"""

from __future__ import annotations

import errno
import posixpath

from ._image import CrashState, Image, os_error
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
            checker to see whether code wrote anything).

    Paths must be absolute POSIX paths; a relative path raises ``OSError(EINVAL)``.
    """

    __slots__ = ("_image", "mutations")

    def __init__(self, state: CrashState | None = None, *, dirs: tuple[str, ...] = ()) -> None:
        self._image = Image.from_crash_state(state) if state is not None else Image()
        self.mutations = 0
        for d in dirs:
            parts = _norm(d).strip("/").split("/")
            for i in range(1, len(parts) + 1):
                self._image.dirs.add("/" + "/".join(parts[:i]))

    # --- whole-disk views ------------------------------------------------------
    def image(self) -> Image:
        """A copy of the current (volatile) image."""
        return self._image.copy()

    def crash_state(self) -> CrashState:
        """The current volatile image, frozen (what a process crash leaves)."""
        return self._image.crash_state()

    def apply(self, op: Op) -> None:
        """Perform a recorded mutating operation (replay)."""
        self._image.apply(op)
        self.mutations += 1

    # --- FileSystem ------------------------------------------------------------
    def mkdir(self, path: str) -> None:
        self.apply(Op(0, OpKind.MKDIR, _norm(path)))

    def create(self, path: str) -> None:
        self.apply(Op(0, OpKind.CREATE, _norm(path)))

    def write(self, path: str, offset: int, data: bytes) -> int:
        if offset < 0:
            raise os_error(errno.EINVAL, path)
        self.apply(Op(0, OpKind.WRITE, _norm(path), offset=offset, data=bytes(data)))
        return len(data)

    def truncate(self, path: str, size: int) -> None:
        if size < 0:
            raise os_error(errno.EINVAL, path)
        self.apply(Op(0, OpKind.TRUNCATE, _norm(path), size=size))

    def rename(self, src: str, dst: str) -> None:
        self.apply(Op(0, OpKind.RENAME, _norm(src), dst=_norm(dst)))

    def unlink(self, path: str) -> None:
        self.apply(Op(0, OpKind.UNLINK, _norm(path)))

    def fsync(self, path: str) -> None:
        path = _norm(path)
        if not self._image.is_file(path):
            raise os_error(errno.EISDIR if self._image.is_dir(path) else errno.ENOENT, path)

    def fsync_dir(self, path: str) -> None:
        path = _norm(path)
        if not self._image.is_dir(path):
            raise os_error(errno.ENOTDIR if self._image.is_file(path) else errno.ENOENT, path)

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

"""The real operating system behind the :class:`~crashpoint.faultfs.FileSystem` protocol."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable

from ._image import os_error

__all__ = ["OsFileSystem"]


class OsFileSystem:
    """The operating system's filesystem: ``os``, ``open``, ``os.replace``, ``os.fsync``,
    ``os.fdatasync``, ``os.link``, ``os.rmdir``.

    Directory fsync opens the directory ``O_RDONLY`` and fsyncs the descriptor
    (Linux; where the platform refuses it with EINVAL/EBADF/EACCES the call is a
    no-op, as SQLite does). ``write`` loops over ``os.pwrite`` until every byte is
    written or an error is raised, so a short count never reaches the caller
    (SPEC.md §6). Errors are the OS's own ``OSError`` subclasses.
    """

    __slots__ = ()

    def mkdir(self, path: str) -> None:
        os.mkdir(path)

    def create(self, path: str) -> None:
        with open(path, "wb"):
            pass

    def write(self, path: str, offset: int, data: bytes) -> int:
        if offset < 0:
            raise os_error(errno.EINVAL, path)
        if os.path.isdir(path):
            raise os_error(errno.EISDIR, path)
        fd = os.open(path, os.O_WRONLY)
        try:
            # pwrite(2) may store fewer bytes than asked with no error (a full disk, a
            # signal): go on from where it stopped until every byte is written or it
            # raises (SPEC.md §6). A count of 0 for a non-empty buffer would loop for
            # ever; the OS reports it as ENOSPC, and so does this.
            view = memoryview(data)
            done = 0
            while done < len(view):
                n = os.pwrite(fd, view[done:], offset + done)
                if n <= 0:
                    raise os_error(errno.ENOSPC, path)
                done += n
            return done
        finally:
            os.close(fd)

    def truncate(self, path: str, size: int) -> None:
        if size < 0:
            raise os_error(errno.EINVAL, path)
        if os.path.isdir(path):
            raise os_error(errno.EISDIR, path)
        os.truncate(path, size)

    def rename(self, src: str, dst: str) -> None:
        os.replace(src, dst)  # EISDIR, ENOTDIR, ENOTEMPTY, EINVAL from the OS

    def unlink(self, path: str) -> None:
        if os.path.isdir(path):
            raise os_error(errno.EISDIR, path)
        os.unlink(path)

    def rmdir(self, path: str) -> None:
        os.rmdir(path)

    def link(self, src: str, dst: str) -> None:
        os.link(src, dst, follow_symlinks=False)

    def fsync(self, path: str) -> None:
        self._sync(os.fsync, path)

    def fdatasync(self, path: str) -> None:
        self._sync(os.fdatasync, path)

    @staticmethod
    def _sync(sync: Callable[[int], None], path: str) -> None:
        if os.path.isdir(path):
            raise os_error(errno.EISDIR, path)
        fd = os.open(path, os.O_RDONLY)
        try:
            sync(fd)
        finally:
            os.close(fd)

    def fsync_dir(self, path: str) -> None:
        if os.path.exists(path) and not os.path.isdir(path):
            raise os_error(errno.ENOTDIR, path)
        fd = os.open(path, os.O_RDONLY)  # ENOENT/ENOTDIR from the OS for a missing path
        try:
            os.fsync(fd)
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.EBADF, errno.EACCES):
                raise
        finally:
            os.close(fd)

    def read(self, path: str) -> bytes:
        if os.path.isdir(path):
            raise os_error(errno.EISDIR, path)
        with open(path, "rb") as f:
            return f.read()

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(path))

    def size(self, path: str) -> int:
        if os.path.isdir(path):
            raise os_error(errno.EISDIR, path)
        return os.stat(path).st_size

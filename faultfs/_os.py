"""The real operating system behind the :class:`~crashpoint.faultfs.FileSystem` protocol."""

from __future__ import annotations

import errno
import fcntl
import os
import sys
from collections.abc import Callable
from typing import Any

from ._image import os_error
from ._lock import Clock, SystemClock, check_timeout, wait_for

__all__ = ["OsFileSystem"]


class OsFileSystem:
    """The operating system's filesystem: ``os``, ``open``, ``os.replace``, ``os.fsync``,
    ``os.fdatasync``, ``os.link``, ``os.rmdir``.

    Directory fsync opens the directory ``O_RDONLY`` and fsyncs the descriptor
    (Linux; where the platform refuses it with EINVAL/EBADF/EACCES the call is a
    no-op, as SQLite does). ``write`` never writes through a symlink (ELOOP), and
    ``create(path, exclusive=True)`` is ``O_CREAT|O_EXCL|O_NOFOLLOW``. ``write`` loops
    over ``os.pwrite`` until every byte is written or an error is raised, so a short
    count never reaches the caller
    (SPEC.md §6). Errors are the OS's own ``OSError`` subclasses.

    ``lock`` is ``fcntl.flock(LOCK_EX)`` on the file opened ``O_RDWR|O_CREAT|
    O_NOFOLLOW`` (created empty if absent, never truncated, a symlink refused with
    ELOOP); a held lock is retried on ``clock`` (default: the real one) until the
    timeout. A lock is held by its open file description: two handles of one process
    exclude each other as two processes do, and a dead process's locks are released by
    the kernel.

    Args:
        clock: what lock timeouts are measured and waited on; a
            :class:`~crashpoint.faultfs._lock.SystemClock` when None.
    """

    __slots__ = ("clock",)

    def __init__(self, *, clock: Clock | None = None) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()

    def mkdir(self, path: str) -> None:
        os.mkdir(path)

    def create(self, path: str, *, exclusive: bool = False) -> None:
        if exclusive:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            os.close(os.open(path, flags, 0o644))  # EEXIST for anything there, symlinks too
            return
        with open(path, "wb"):
            pass

    def write(self, path: str, offset: int, data: bytes) -> int:
        if offset < 0:
            raise os_error(errno.EINVAL, path)
        if os.path.isdir(path):
            raise os_error(errno.EISDIR, path)
        fd = os.open(path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)  # ELOOP: a symlink
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

    def symlink(self, target: bytes, path: str) -> None:
        """``os.symlink(target, path)``."""
        os.symlink(target, path)

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

    def lock(self, path: str, timeout: float) -> int:
        timeout = check_timeout(timeout)
        model = _intercepting()
        if model is not None:
            # Run intercepted (``crashpoint verify`` of a storage on this backend): the
            # model's lock, so the trace is the protocol backend's (a create of an absent
            # lock file, then a lock event), not an unsupported ``fcntl.flock``.
            return int(model.lock(path, timeout))
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(path, flags, 0o644)  # EISDIR, ELOOP, ENOENT from the OS

        def take() -> bool:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
            return True

        try:
            wait_for(take, path, timeout, self.clock)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def unlock(self, path: str, handle: int) -> None:
        model = _intercepting()
        if model is not None:
            model.unlock(path, handle)
            return
        os.close(handle)  # closing the last descriptor of the description releases it


def _intercepting() -> Any:
    """The model filesystem of the active interception (``faultfs._intercept``), or None:
    one lookup in ``sys.modules`` when interception was never imported."""
    module = sys.modules.get("crashpoint.faultfs._intercept")
    active = getattr(module, "_ACTIVE", None)
    return active[-1].fs if active else None

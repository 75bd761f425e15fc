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
import os
import posixpath

from ._image import CrashState, Image, os_error
from ._lock import Clock, VirtualClock, check_timeout, wait_for
from ._power import durable_state
from ._trace import Op, OpKind

__all__ = ["MemoryFileSystem"]


NAME_MAX = 255
"""Longest name of one path component, in bytes (Linux ``NAME_MAX``; ext4, XFS, tmpfs)."""
PATH_MAX = 4096
"""Size of the longest path, in bytes, terminating NUL included (Linux ``PATH_MAX``)."""


_SHORT_NORMS: dict[str, str] = {}
"""Normalised forms of absolute paths too short to break a length limit (a pure
function of the path; the same few paths are looked up thousands of times)."""


def _norm(path: str, image: Image | None = None, *, last: bool = True) -> str:
    """``path`` normalised, with the kernel's length limits when ``image`` is given.

    Raises ``OSError``: EINVAL for a relative path; ENAMETOOLONG when the path takes
    ``PATH_MAX`` bytes or more with its NUL (checked first, as ``getname`` does), or
    when the lookup reaches a component longer than ``NAME_MAX`` bytes. A lookup
    that fails earlier reports that failure instead (ENOENT for a missing directory,
    ENOTDIR for a file on the way), as Linux does; with ``last=False`` the final
    component is not checked (the caller looks it up itself, e.g. ``rename``).
    Lengths are those of ``os.fsencode``.
    """
    short = len(path) * 4 <= NAME_MAX  # too short to break either limit
    if short:
        known = _SHORT_NORMS.get(path)
        if known is not None:
            return known
    if not path.startswith("/"):
        raise os_error(errno.EINVAL, path)
    norm = posixpath.normpath(path) if path != "/" else "/"
    if short:
        if len(_SHORT_NORMS) >= 8192:
            _SHORT_NORMS.clear()
        _SHORT_NORMS[path] = norm
        return norm
    if image is None:
        return norm
    if len(os.fsencode(path)) >= PATH_MAX:
        raise os_error(errno.ENAMETOOLONG, path)
    parts = norm.split("/")[1:] if last else norm.split("/")[1:-1]
    where = ""
    for part in parts:
        if len(os.fsencode(part)) > NAME_MAX:
            if where and where not in image.dirs:
                code = errno.ENOTDIR if where in image.names else image.absent(where)
                raise os_error(code, path)
            raise os_error(errno.ENAMETOOLONG, path)
        where += "/" + part
    return norm


def _boot_image(state: CrashState | None, dirs: tuple[str, ...]) -> Image:
    """The image booted from ``state`` (an empty disk if None) with ``dirs`` and their
    ancestors created."""
    image = Image.from_crash_state(state) if state is not None else Image()
    for d in dirs:
        parts = _norm(d).strip("/").split("/")
        for i in range(1, len(parts) + 1):
            image.dirs.add("/" + "/".join(parts[:i]))
    return image


def _too_long(path: str) -> bool:
    """True if the last component of ``path`` is longer than ``NAME_MAX`` bytes."""
    if len(path) * 4 <= NAME_MAX:  # at most 4 bytes a character
        return False
    return len(os.fsencode(posixpath.basename(path))) > NAME_MAX


class MemoryFileSystem:
    """An in-memory :class:`~crashpoint.faultfs.FileSystem`: fast and deterministic.

    Args:
        state: the crash state to boot from (a "reboot"); empty disk if None.
        dirs: directories to create before anything else (durable), e.g. ``["/data"]``.

        clock: what lock timeouts are measured and waited on; a fresh
            :class:`~crashpoint.faultfs._lock.VirtualClock` when None (the model has no
            real time: a wait advances the clock and returns, SPEC.md §6 and §10.1).

    Attributes:
        mutations: number of mutating calls that changed the image (a cheap way for a
            checker to see whether code wrote anything); barriers are not counted.
        clock: the clock of lock timeouts.

    Paths must be absolute POSIX paths; a relative path raises ``OSError(EINVAL)``.

    Locks (SPEC.md §6) live in a lock table of this model, apart from the image: a
    lock changes no crash state (a reboot starts with no lock held, as a kernel does).
    ``lock`` of an absent file creates it empty first (a logged ``create``), as
    ``open(O_CREAT)`` does on a real disk.
    """

    __slots__ = ("_boot", "_handles", "_image", "_locks", "_log", "_origin", "clock", "mutations")

    def __init__(
        self,
        state: CrashState | None = None,
        *,
        dirs: tuple[str, ...] = (),
        clock: Clock | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else VirtualClock()
        self._locks: dict[str, int] = {}  # locked path -> the handle holding it
        self._handles = 0
        self._image = _boot_image(state, dirs)
        self.mutations = 0
        # The boot state is frozen on first use (most reboots never ask for it): from
        # the image while nothing was applied, else again from what it booted from.
        self._boot: CrashState | None = None
        self._origin = (state, dirs)
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
        boot = self._boot
        if boot is None:
            image = self._image if not self._log else _boot_image(*self._origin)
            boot = self._boot = image.crash_state()
        return boot

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
        return durable_state(self.boot_state, self._log)

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
        self.apply(Op(len(self._log), OpKind.MKDIR, _norm(path, self._image)))

    def create(self, path: str, *, exclusive: bool = False) -> None:
        path = _norm(path, self._image)
        if exclusive and self._image.exists(path):
            raise os_error(errno.EEXIST, path)
        self.apply(Op(len(self._log), OpKind.CREATE, path))

    def write(self, path: str, offset: int, data: bytes) -> int:
        if offset < 0:
            raise os_error(errno.EINVAL, path)
        path = _norm(path, self._image)
        self.apply(Op(len(self._log), OpKind.WRITE, path, offset=offset, data=bytes(data)))
        return len(data)

    def truncate(self, path: str, size: int) -> None:
        if size < 0:
            raise os_error(errno.EINVAL, path)
        self.apply(Op(len(self._log), OpKind.TRUNCATE, _norm(path, self._image), size=size))

    def rename(self, src: str, dst: str) -> None:
        image = self._image
        src, dst = _norm(src, image, last=False), _norm(dst, image, last=False)
        if _too_long(src) or (_too_long(dst) and image.exists(src)):
            # Linux looks up both parents, then the source, then the target; a name
            # longer than NAME_MAX fails its lookup (a missing source is ENOENT first).
            image._parent_ok(src)
            image._parent_ok(dst)
            raise os_error(errno.ENAMETOOLONG, src if _too_long(src) else dst)
        self.apply(Op(len(self._log), OpKind.RENAME, src, dst=dst))

    def unlink(self, path: str) -> None:
        self.apply(Op(len(self._log), OpKind.UNLINK, _norm(path, self._image)))

    def rmdir(self, path: str) -> None:
        self.apply(Op(len(self._log), OpKind.RMDIR, _norm(path, self._image)))

    def link(self, src: str, dst: str) -> None:
        image = self._image
        src, dst = _norm(src, image), _norm(dst, image, last=False)
        if _too_long(dst):
            # Linux looks up the source, then the target's parent, then the target
            if src not in image.dirs:
                image._file_inode(src)
            image._parent_ok(dst)
            raise os_error(errno.ENAMETOOLONG, dst)
        self.apply(Op(len(self._log), OpKind.LINK, src, dst=dst))

    def symlink(self, target: bytes, path: str) -> None:
        """See :meth:`~crashpoint.faultfs.SymlinkFileSystem.symlink`: the link is a file
        whose content is :func:`~crashpoint.faultfs.symlink_content` of ``target``."""
        if b"\0" in target or not target:
            raise os_error(errno.ENOENT if not target else errno.EINVAL, path)
        self.apply(Op(len(self._log), OpKind.SYMLINK, _norm(path, self._image), data=bytes(target)))

    def fsync(self, path: str) -> None:
        self._sync(OpKind.FSYNC, path)

    def fdatasync(self, path: str) -> None:
        self._sync(OpKind.FDATASYNC, path)

    def _sync(self, kind: OpKind, path: str) -> None:
        path = _norm(path, self._image)
        if not self._image.is_file(path):
            if self._image.is_dir(path):
                raise os_error(errno.EISDIR, path)
            raise os_error(self._image.absent(path), path)
        self._log.append(Op(len(self._log), kind, path))

    def fsync_dir(self, path: str) -> None:
        path = _norm(path, self._image)
        if not self._image.is_dir(path):
            if self._image.is_file(path):
                raise os_error(errno.ENOTDIR, path)
            raise os_error(self._image.absent(path), path)
        self._log.append(Op(len(self._log), OpKind.FSYNC_DIR, path))

    def read(self, path: str) -> bytes:
        return self._image.read(_norm(path, self._image))

    def exists(self, path: str) -> bool:
        return self._image.exists(_norm(path))

    def is_dir(self, path: str) -> bool:
        return self._image.is_dir(_norm(path))

    def listdir(self, path: str) -> list[str]:
        return self._image.listdir(_norm(path, self._image))

    def size(self, path: str) -> int:
        return len(self._image.read(_norm(path, self._image)))

    def lock(self, path: str, timeout: float) -> int:
        """See :meth:`~crashpoint.faultfs.FileSystem.lock`: an exclusive lock in this
        model's lock table; a second holder waits on :attr:`clock`, then raises
        TimeoutError (ETIMEDOUT)."""
        timeout = check_timeout(timeout)
        path = _norm(path, self._image)
        image = self._image
        if image.is_dir(path):
            raise os_error(errno.EISDIR, path)
        if not image.is_file(path):
            self.create(path)  # ENOENT/ENOTDIR for a missing parent, as open(O_CREAT)
        locks = self._locks
        wait_for(lambda: path not in locks, path, timeout, self.clock)
        self._handles += 1
        locks[path] = self._handles
        return self._handles

    def unlock(self, path: str, handle: int) -> None:
        """Release ``handle``; a handle that does not hold ``path``'s lock changes nothing."""
        path = _norm(path)
        if self._locks.get(path) == handle:
            del self._locks[path]

    def links(self, path: str) -> int:
        """The link count of a file (``st_nlink``). Raises ENOENT, EISDIR."""
        return self._image.links(_norm(path, self._image))

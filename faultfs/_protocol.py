"""The filesystem protocol that storage code is written against.

About a dozen syscall-named methods (FAULT-MODEL.md §1). Paths are POSIX-style
absolute strings (``"/base/s.json"``). Every failure is a builtin ``OSError``
carrying an ``errno``, exactly as the operating system reports it, so code under
test cannot tell a fake from the real thing.

Implementations: :class:`~crashpoint.faultfs.OsFileSystem` (the real OS),
:class:`~crashpoint.faultfs.MemoryFileSystem` (the model: volatile and durable
layers) and :class:`~crashpoint.faultfs.RecordingFileSystem` (a wrapper that
records the operation trace and injects crashes and faults).
"""

from __future__ import annotations

import errno
import posixpath
from typing import Protocol, runtime_checkable

from ._image import os_error

__all__ = ["FileSystem", "SymlinkFileSystem", "makedirs", "write_bytes"]


@runtime_checkable
class FileSystem(Protocol):
    """What a storage may do to a disk: mutating calls, barriers, and reads.

    Mutating calls (recorded as operations in a trace): ``mkdir``, ``create``,
    ``write``, ``truncate``, ``rename``, ``unlink``, ``rmdir``, ``link``. Barriers:
    ``fsync``, ``fdatasync``, ``fsync_dir``. Reads (recorded as non-mutating events):
    ``read``, ``exists``, ``listdir``, ``size``, ``is_dir``. Locks (recorded as
    non-mutating events, no effect on crash states): ``lock``, ``unlock``.
    """

    def mkdir(self, path: str) -> None:
        """Create one directory. Raises FileExistsError (EEXIST) if ``path`` exists,
        FileNotFoundError (ENOENT) if its parent does not."""

    def create(self, path: str, *, exclusive: bool = False) -> None:
        """Create an empty file, or truncate an existing one to 0 bytes (``open(p, "w")``).
        With ``exclusive``, only create (``O_CREAT|O_EXCL|O_NOFOLLOW``: a safe temporary,
        SPEC.md §6): anything at ``path``, a symlink included, raises FileExistsError
        (EEXIST) and is left untouched; recorded as the same ``create`` operation.
        Raises ENOENT if the parent is missing, EISDIR if ``path`` is a directory."""

    def write(self, path: str, offset: int, data: bytes) -> int:
        """Write ``data`` at byte ``offset`` of an existing file, extending it (gaps read
        as zero bytes). Returns the number of bytes written, which may be fewer than
        ``len(data)`` with no error (a *short count*, as ``write(2)`` returns on a full
        disk): the caller continues at ``offset + n`` (see :func:`write_bytes`).
        Raises ENOENT if absent."""

    def truncate(self, path: str, size: int) -> None:
        """Set the file's size in bytes (extension reads back as zero bytes)."""

    def rename(self, src: str, dst: str) -> None:
        """Atomically replace ``dst`` by ``src`` (POSIX ``rename``/``os.replace``), a file
        or a directory with its subtree. Raises ENOENT if ``src`` is absent; EISDIR (a
        file onto a directory), ENOTDIR (a directory onto a file), ENOTEMPTY (onto a
        non-empty directory), EINVAL (a directory into itself)."""

    def unlink(self, path: str) -> None:
        """Remove a name of a file (its inode goes with its last name). Raises ENOENT
        if absent, EISDIR/EPERM on a directory."""

    def rmdir(self, path: str) -> None:
        """Remove an empty directory. Raises ENOENT if absent, ENOTDIR on a file,
        ENOTEMPTY if it has entries, EBUSY for ``/``."""

    def link(self, src: str, dst: str) -> None:
        """Give file ``src``'s inode the new name ``dst`` (a hard link: both names
        read and write one content). Raises ENOENT (``src`` or ``dst``'s parent
        absent), EEXIST (``dst`` exists), EPERM (``src`` is a directory)."""

    def fsync(self, path: str) -> None:
        """Make the file's data, size and inode durable; what else it commits is the
        persistence model family's rule (FAULT-MODEL.md §3)."""

    def fdatasync(self, path: str) -> None:
        """Make the file's data and a grown size durable, and no other metadata
        (``fdatasync(2)``). Raises as ``fsync``."""

    def fsync_dir(self, path: str) -> None:
        """Make the directory's entries durable."""

    def read(self, path: str) -> bytes:
        """The file's whole content. Raises ENOENT if absent, EISDIR on a directory."""

    def exists(self, path: str) -> bool:
        """True if a file or directory is at ``path``."""

    def is_dir(self, path: str) -> bool:
        """True if a directory is at ``path``."""

    def listdir(self, path: str) -> list[str]:
        """Sorted entry names of a directory. Raises ENOENT/ENOTDIR."""

    def size(self, path: str) -> int:
        """The file's size in bytes. Raises ENOENT if absent."""

    def lock(self, path: str, timeout: float) -> int:
        """Take an advisory exclusive lock on the file ``path`` (``fcntl.flock``,
        ``LOCK_EX``), creating it empty if absent (never truncated, never following a
        symlink). While another holder has it, wait up to ``timeout`` seconds on the
        filesystem's clock. Returns a handle for :meth:`unlock` (SPEC.md §6).

        Raises TimeoutError (ETIMEDOUT) when still held after ``timeout``; ELOOP for a
        symlink at ``path``; ENOENT if the parent is missing; EISDIR on a directory;
        ValueError for a negative or non-finite ``timeout``."""

    def unlock(self, path: str, handle: int) -> None:
        """Release the lock ``handle`` (from :meth:`lock` on ``path``). The file stays."""


@runtime_checkable
class SymlinkFileSystem(FileSystem, Protocol):
    """A :class:`FileSystem` that can also make symbolic links (the strace runner
    replays ``symlink(2)`` onto one; the storage protocol has no links to follow)."""

    def symlink(self, target: bytes, path: str) -> None:
        """Create the symbolic link ``path`` to ``target`` (bytes, no NUL), name and
        target in one step (``symlink(2)``; FAULT-MODEL.md §1 has it as a directory
        operation). Raises EEXIST (``path`` exists), ENOENT (its parent is absent, or
        ``target`` is empty), ENOTDIR, EINVAL (a NUL in ``target``)."""


def makedirs(fs: FileSystem, path: str) -> list[str]:
    """``mkdir -p``: create ``path`` and any missing parents; existing ones are kept.

    Returns the directories created, outermost first (a caller that needs them
    durable fsyncs each one's parent directory). A directory that appears between the
    look and the ``mkdir`` (EEXIST from a concurrent writer) is kept, not an error;
    EEXIST for a file there is raised."""
    missing: list[str] = []
    current = posixpath.normpath(path)
    while current not in ("/", "") and not fs.exists(current):
        missing.append(current)
        current = posixpath.dirname(current)
    missing.reverse()
    created: list[str] = []
    for directory in missing:
        try:
            fs.mkdir(directory)
        except FileExistsError:
            # another writer made it between our look and our mkdir (SPEC.md §6,
            # concurrent writers): a directory there is what was asked for
            if not fs.is_dir(directory):
                raise
            continue
        created.append(directory)
    return created


def write_bytes(fs: FileSystem, path: str, data: bytes, *, exclusive: bool = False) -> None:
    """``create(path)`` then ``write(path, 0, data)`` (FAULT-MODEL.md §1).

    A write that returns fewer bytes than asked is continued at the offset it reached
    until every byte is written or an error is raised (SPEC.md §6), so a short count
    is never taken for a whole file. A count of 0 (or less) for bytes still to write
    raises ``OSError(ENOSPC)`` rather than loop for ever. ``exclusive`` creates with
    ``create(path, exclusive=True)`` (EEXIST if anything is there)."""
    if exclusive:
        fs.create(path, exclusive=True)
    else:
        fs.create(path)
    done = 0
    while done < len(data):
        n = fs.write(path, done, data[done:])
        if n <= 0:
            raise os_error(errno.ENOSPC, path)
        done += n

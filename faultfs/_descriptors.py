"""File descriptors over the path-based protocol (FAULT-MODEL.md §4).

The :class:`~crashpoint.faultfs.FileSystem` protocol names files by path; a
program (and the kernel) names them by descriptor. :class:`DescriptorTable`
keeps the open file descriptions of one process over any ``FileSystem`` and
turns descriptor calls into protocol operations, with Linux semantics:

* ``open`` flags: ``O_CREAT`` creates a missing file (``create``),
  ``O_CREAT|O_TRUNC`` is ``create`` (new or cut to 0 bytes, as ``open(p, "wb")``),
  ``O_TRUNC`` alone on an existing file is ``truncate(p, 0)``, ``O_EXCL`` fails
  with EEXIST, ``O_APPEND`` writes every ``write`` at the current end of file,
  ``O_DIRECTORY`` fails with ENOTDIR on a file; opening a directory for writing
  fails with EISDIR.
* a descriptor follows its inode: after ``rename(src, dst)`` through the table a
  descriptor opened on ``src`` writes and fsyncs ``dst`` (a directory's rename moves
  the descriptors of everything under it); after ``link(a, b)`` and ``unlink(a)`` a
  descriptor opened on ``a`` uses ``b``; a descriptor whose file lost its last name
  (unlinked or replaced) keeps its content privately (an inode with no name:
  nothing written to it can survive a crash, so nothing is recorded). The table
  knows the hard links made through it (a crash state keeps no links).
* ``write``/``pwrite`` become ``write(path, offset, data)`` at the descriptor's
  position; ``fsync`` becomes ``fsync(path)`` and ``fdatasync`` ``fdatasync(path)``
  for a file, both ``fsync_dir(path)`` for a directory descriptor.

Used by the interception layer (:func:`~crashpoint.faultfs.intercept`) and meant
for a syscall-trace importer: both give the same operation trace for the same
program. Errors are builtin ``OSError`` with the errno Linux gives (EBADF for a
descriptor not open, or not open for the access asked).
"""

from __future__ import annotations

import errno
import os
import posixpath
from dataclasses import dataclass

from ._image import os_error
from ._protocol import FileSystem

__all__ = ["FIRST_FD", "Description", "DescriptorTable"]

FIRST_FD = 1 << 24
"""The first descriptor number handed out: above any real descriptor (Linux caps
descriptors at ``fs.nr_open``, 2**20 by default), so a model descriptor passed to
a real system call by mistake fails with EBADF instead of touching a real file."""


@dataclass(slots=True)
class Description:
    """One open file description (what ``open(2)`` creates; ``dup`` shares it).

    Attributes:
        path: the file's current path (follows renames made through the table).
        readable: opened with read access.
        writable: opened with write access.
        append: ``O_APPEND``: every write goes to the end of file.
        is_dir: a directory opened ``O_RDONLY`` (for a directory fsync).
        pos: the file offset in bytes.
        orphan: the content of the file once it lost its last name (unlinked or
            replaced by a rename); None while it has a name.
        refs: descriptors sharing this description.
    """

    path: str
    readable: bool
    writable: bool
    append: bool = False
    is_dir: bool = False
    pos: int = 0
    orphan: bytearray | None = None
    refs: int = 1


class DescriptorTable:
    """Descriptors of one process over ``fs`` (Linux semantics, see module docstring).

    Args:
        fs: the filesystem the calls go to (a :class:`RecordingFileSystem` records them).
        first_fd: the first descriptor number handed out.

    Paths given to the table must be absolute and normalised.
    """

    __slots__ = ("_descriptions", "_links", "_next", "fs")

    def __init__(self, fs: FileSystem, *, first_fd: int = FIRST_FD) -> None:
        self.fs = fs
        self._descriptions: dict[int, Description] = {}
        self._next = first_fd
        # path -> every name of its inode (one list shared by them), for the inodes
        # given a second name through this table
        self._links: dict[str, list[str]] = {}

    # --- queries -----------------------------------------------------------------
    def __contains__(self, fd: object) -> bool:
        return fd in self._descriptions

    def get(self, fd: int) -> Description:
        """The description behind ``fd``. Raises EBADF if ``fd`` is not open."""
        try:
            return self._descriptions[fd]
        except (KeyError, TypeError):
            raise os_error(errno.EBADF, str(fd)) from None

    def path(self, fd: int) -> str:
        """The current path of ``fd``'s file ("" once it has no name). Raises EBADF."""
        d = self.get(fd)
        return "" if d.orphan is not None else d.path

    def open_fds(self) -> list[int]:
        """The open descriptors, in the order they were opened."""
        return list(self._descriptions)

    def size(self, fd: int) -> int:
        """The size in bytes of ``fd``'s file. Raises EBADF, EISDIR on a directory."""
        d = self.get(fd)
        if d.orphan is not None:
            return len(d.orphan)
        if d.is_dir:
            raise os_error(errno.EISDIR, d.path)
        return self.fs.size(d.path)

    # --- open / close ------------------------------------------------------------
    def open(self, path: str, flags: int) -> int:
        """``open(2)``: returns a new descriptor.

        Raises ENOENT (missing and no ``O_CREAT``, or a missing parent), EEXIST
        (``O_CREAT|O_EXCL`` on an existing path), EISDIR (a directory opened for
        writing or with ``O_CREAT``), ENOTDIR (``O_DIRECTORY`` on a file, or a file
        on the way), and whatever ``fs.create``/``fs.truncate`` raise (faults).
        """
        fs = self.fs
        access = flags & os.O_ACCMODE
        readable = access in (os.O_RDONLY, os.O_RDWR)
        writable = access in (os.O_WRONLY, os.O_RDWR)
        creat = bool(flags & os.O_CREAT)
        if fs.is_dir(path):
            if creat and flags & os.O_EXCL:
                raise os_error(errno.EEXIST, path)
            if writable or creat:
                raise os_error(errno.EISDIR, path)
            return self._add(Description(path, readable=True, writable=False, is_dir=True))
        if flags & os.O_DIRECTORY:
            raise os_error(errno.ENOTDIR if fs.exists(path) else errno.ENOENT, path)
        if fs.exists(path):
            if creat and flags & os.O_EXCL:
                raise os_error(errno.EEXIST, path)
            if flags & os.O_TRUNC and writable:
                if creat:
                    fs.create(path)
                else:
                    fs.truncate(path, 0)
        elif creat:
            fs.create(path)  # ENOENT/ENOTDIR for a missing parent, from the model
        else:
            fs.size(path)  # raises the model's errno (ENOENT or ENOTDIR)
            raise os_error(errno.ENOENT, path)  # pragma: no cover - size raised
        return self._add(Description(path, readable, writable, append=bool(flags & os.O_APPEND)))

    def open_tmpfile(self, directory: str, flags: int) -> int:
        """``open(directory, O_TMPFILE)``: a new descriptor on a file with no name in
        ``directory`` (``open(2)``): what is written to it stays private (nothing of it can
        survive a crash) until :meth:`link_fd` names it. Raises ENOENT/ENOTDIR when
        ``directory`` is not a directory of ``fs``."""
        if not self.fs.is_dir(directory):
            code = errno.ENOTDIR if self.fs.exists(directory) else errno.ENOENT
            raise os_error(code, directory)
        access = flags & os.O_ACCMODE
        d = Description(
            directory,
            readable=access in (os.O_RDONLY, os.O_RDWR),
            writable=access in (os.O_WRONLY, os.O_RDWR),
            orphan=bytearray(),
        )
        return self._add(d)

    def link_fd(self, fd: int, dst: str) -> None:
        """``linkat(fd, "", ..., dst, AT_EMPTY_PATH)`` (or through ``/proc/self/fd/N``):
        give ``fd``'s file the name ``dst``. A file with no name (:meth:`open_tmpfile`, or
        unlinked) becomes ``create(dst)`` and a ``write`` of its content, the operations
        that put the same bytes under that name; a named file is :meth:`link`. Raises
        EEXIST, ENOENT as ``fs.create``/``fs.link``."""
        d = self.get(fd)
        if d.orphan is None:
            self.link(d.path, dst)
            return
        if self.fs.exists(dst):
            raise os_error(errno.EEXIST, dst)
        content = bytes(d.orphan)
        self.fs.create(dst, exclusive=True)
        if content:
            write_all(self.fs, dst, content)
        d.path, d.orphan = dst, None

    def _add(self, description: Description) -> int:
        fd = self._next
        self._next += 1
        self._descriptions[fd] = description
        return fd

    def dup(self, fd: int) -> int:
        """``dup(2)``: a new descriptor sharing ``fd``'s description (offset included)."""
        d = self.get(fd)
        d.refs += 1
        new = self._next
        self._next += 1
        self._descriptions[new] = d
        return new

    def close(self, fd: int) -> None:
        """``close(2)``: changes nothing on disk. Raises EBADF."""
        d = self.get(fd)
        del self._descriptions[fd]
        d.refs -= 1

    # --- data --------------------------------------------------------------------
    def write(self, fd: int, data: bytes) -> int:
        """``write(2)`` at the descriptor's offset (the end of file with ``O_APPEND``);
        advances the offset. Returns the bytes written (the protocol may store fewer:
        a short count)."""
        d = self._for_write(fd)
        offset = self.size(fd) if d.append else d.pos
        n = self._pwrite(d, data, offset)
        d.pos = offset + n
        return n

    def pwrite(self, fd: int, data: bytes, offset: int) -> int:
        """``pwrite(2)``: write at ``offset`` without moving the descriptor's offset.
        (Linux quirk kept: with ``O_APPEND`` the data goes to the end of file.)"""
        d = self._for_write(fd)
        if offset < 0:
            raise os_error(errno.EINVAL, d.path)
        if d.append:
            offset = self.size(fd)
        return self._pwrite(d, data, offset)

    def zero_range(self, fd: int, offset: int, n: int) -> int:
        """``n`` zero bytes at ``offset`` (``fallocate`` punching a hole or zeroing a
        range: the bytes read back as zeros), ``O_APPEND`` or not; the offset stays.
        Returns the bytes written."""
        d = self._for_write(fd)
        if offset < 0 or n < 0:
            raise os_error(errno.EINVAL, d.path)
        return self._pwrite(d, bytes(n), offset)

    def _for_write(self, fd: int) -> Description:
        d = self.get(fd)
        if not d.writable:
            raise os_error(errno.EBADF, d.path)
        return d

    def _pwrite(self, d: Description, data: bytes, offset: int) -> int:
        if not data:
            return 0
        if d.orphan is not None:
            buf = d.orphan
            if offset > len(buf):
                buf.extend(bytes(offset - len(buf)))
            buf[offset : offset + len(data)] = data
            return len(data)
        return self.fs.write(d.path, offset, bytes(data))

    def read(self, fd: int, n: int = -1) -> bytes:
        """``read(2)`` of up to ``n`` bytes (all when negative) from the offset."""
        d = self.get(fd)
        data = self.pread(fd, n, d.pos)
        d.pos += len(data)
        return data

    def pread(self, fd: int, n: int, offset: int) -> bytes:
        """``pread(2)``: up to ``n`` bytes (all when negative) at ``offset``."""
        d = self.get(fd)
        if not d.readable:
            raise os_error(errno.EBADF, d.path)
        if d.is_dir:
            raise os_error(errno.EISDIR, d.path)
        if offset < 0:
            raise os_error(errno.EINVAL, d.path)
        content = bytes(d.orphan) if d.orphan is not None else self.fs.read(d.path)
        end = len(content) if n < 0 else offset + n
        return content[offset:end]

    def lseek(self, fd: int, pos: int, how: int) -> int:
        """``lseek(2)``: returns the new offset. Raises EINVAL for a negative result."""
        d = self.get(fd)
        if how == os.SEEK_SET:
            new = pos
        elif how == os.SEEK_CUR:
            new = d.pos + pos
        elif how == os.SEEK_END:
            new = (0 if d.is_dir else self.size(fd)) + pos
        else:
            raise os_error(errno.EINVAL, d.path)
        if new < 0:
            raise os_error(errno.EINVAL, d.path)
        d.pos = new
        return new

    def ftruncate(self, fd: int, size: int) -> None:
        """``ftruncate(2)`` → ``truncate(path, size)``. Raises EINVAL (read-only
        descriptor or negative size), as Linux does."""
        d = self.get(fd)
        if not d.writable or size < 0:
            raise os_error(errno.EINVAL, d.path)
        if d.orphan is not None:
            del d.orphan[size:]
            d.orphan.extend(bytes(max(0, size - len(d.orphan))))
            return
        self.fs.truncate(d.path, size)

    def fsync(self, fd: int) -> None:
        """``fsync(2)`` → ``fsync(path)``, or ``fsync_dir(path)`` for a directory
        descriptor. A file with no name left has nothing to make durable."""
        d = self.get(fd)
        if d.orphan is not None:
            return
        if d.is_dir:
            self.fs.fsync_dir(d.path)
        else:
            self.fs.fsync(d.path)

    def fdatasync(self, fd: int) -> None:
        """``fdatasync(2)`` → ``fdatasync(path)``, or ``fsync_dir(path)`` for a directory
        descriptor. A file with no name left has nothing to make durable."""
        d = self.get(fd)
        if d.orphan is not None:
            return
        if d.is_dir:
            self.fs.fsync_dir(d.path)
        else:
            self.fs.fdatasync(d.path)

    # --- namespace calls that move or drop inodes ---------------------------------
    def rename(self, src: str, dst: str) -> None:
        """``rename(2)`` through ``fs``; descriptors on ``src`` follow it to ``dst`` (on a
        directory, the descriptors of everything under it follow), descriptors on a
        replaced ``dst`` keep its old content privately, or use its inode's other name.
        Two names of one inode: nothing happens, as in Linux."""
        fs = self.fs
        if fs.is_dir(src):
            fs.rename(src, dst)
            if src != dst:
                self._move_tree(src, dst)
            return
        group = self._links.get(src)
        if src == dst or (group is not None and dst in group):
            fs.rename(src, dst)
            return
        replaced = [d for d in self._live() if d.path == dst and not d.is_dir]
        snapshot = fs.read(dst) if replaced and fs.exists(dst) else None
        fs.rename(src, dst)
        self._drop_name(dst, replaced, snapshot or b"")
        for d in self._live():
            if d.path == src:
                d.path = dst
        if group is not None:
            group[group.index(src)] = dst
            del self._links[src]
            self._links[dst] = group

    def unlink(self, path: str) -> None:
        """``unlink(2)`` through ``fs``; descriptors on ``path`` use another name of its
        inode, or keep its content once it has none."""
        holders = [d for d in self._live() if d.path == path and not d.is_dir]
        snapshot = self.fs.read(path) if holders and self.fs.exists(path) else b""
        self.fs.unlink(path)
        self._drop_name(path, holders, snapshot)

    def link(self, src: str, dst: str) -> None:
        """``link(2)`` through ``fs``: ``dst`` becomes a second name of ``src``'s inode."""
        self.fs.link(src, dst)
        group = self._links.get(src)
        if group is None:
            group = self._links[src] = [src]
        group.append(dst)
        self._links[dst] = group

    def rmdir(self, path: str) -> None:
        """``rmdir(2)`` through ``fs``; a descriptor on the directory has nothing left
        to make durable (its fsync does nothing)."""
        self.fs.rmdir(path)
        for d in self._live():
            if d.is_dir and d.path == path:
                d.orphan = bytearray()

    def _drop_name(self, path: str, holders: list[Description], snapshot: bytes) -> None:
        """``path`` lost its name: ``holders`` (descriptors on it) move to another name
        of its inode, or keep ``snapshot`` privately."""
        group = self._links.pop(path, None)
        if group is not None:
            group.remove(path)
            if len(group) == 1:
                del self._links[group[0]]
            for d in holders:
                d.path = group[0]
            return
        for d in holders:
            d.orphan = bytearray(snapshot)

    def _move_tree(self, src: str, dst: str) -> None:
        prefix = src + "/"
        cut = len(src)
        for d in self._live():
            if d.path == src or d.path.startswith(prefix):
                d.path = dst + d.path[cut:]
        for old in [p for p in self._links if p.startswith(prefix)]:
            group = self._links.pop(old)
            new = dst + old[cut:]
            group[group.index(old)] = new
            self._links[new] = group

    def _live(self) -> list[Description]:
        return [d for d in self._descriptions.values() if d.orphan is None]


def write_all(fs: FileSystem, path: str, data: bytes) -> None:
    """``data`` written at offset 0 of ``path``, continued after short counts (ENOSPC
    for a count of 0)."""
    done = 0
    while done < len(data):
        n = fs.write(path, done, data[done:])
        if n <= 0:
            raise os_error(errno.ENOSPC, path)
        done += n


def normalise(path: str) -> str:
    """``posixpath.normpath`` that keeps ``/`` (the table's path form)."""
    return posixpath.normpath(path) if path != "/" else "/"

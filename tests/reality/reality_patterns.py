"""The reality suite's I/O patterns (issue 20): database- and log-style writes, their
reverse controls, and the patterns real stores use (hard links, rmdir, directory
renames), each a small deterministic program on the :class:`FileSystem` protocol.

A :class:`Pattern`'s setup runs on the real directory and is made durable (a syncfs on
an image; nothing to do for a kill); its ``run`` is what is cut: emulated power cuts on
ext4, XFS and btrfs images (``test_reality_families.py``), and real SIGKILLs under
``process-crash`` in a plain directory (``test_reality_kill.py``, through the fork
server of ``reality_driver.py``, which finds a pattern here by name).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable
from dataclasses import dataclass

from crashpoint.faultfs import (
    CrashState,
    FileSystem,
    MemoryFileSystem,
    Op,
    RecordingFileSystem,
    write_bytes,
)
from reality_driver import RootedFileSystem

PAGE = 4096
OLD, NEW = b"o" * PAGE, b"n" * PAGE
Script = Callable[[FileSystem], None]


@dataclass(frozen=True)
class Pattern:
    """A setup made durable, the operations cut, the ranges ``(path, offset, length)``
    written back before the copy in mode ``range``, and the ``open(2)`` flags the real
    run's writes use (``O_APPEND``, ``O_DIRECT``; the model records the same write)."""

    name: str
    setup: Script
    run: Script
    writeback: tuple[tuple[str, int, int], ...] = ()
    flags: int = 0


class FlaggedFileSystem(RootedFileSystem):
    """:class:`RootedFileSystem` whose writes open the file with extra ``flags``:
    ``O_APPEND`` (the write goes to the end, whatever the offset: a pattern passes the
    file's size, so the model's write is the one the kernel made) or ``O_DIRECT`` (the
    data from a page-aligned buffer, bypassing the page cache; offsets and lengths must
    be multiples of the page)."""

    def __init__(self, root: str, flags: int) -> None:
        super().__init__(root)
        self.flags = flags

    def write(self, path: str, offset: int, data: bytes) -> int:
        if not self.flags:
            return super().write(path, offset, data)
        fd = os.open(self._p(path), os.O_WRONLY | os.O_CLOEXEC | self.flags)
        try:
            if self.flags & os.O_APPEND:
                assert offset == os.fstat(fd).st_size, "an append pattern writes at the end"
                return os.write(fd, data)
            buffer = mmap.mmap(-1, len(data))  # page-aligned, as O_DIRECT needs
            try:
                buffer.write(data)
                return os.pwritev(fd, [buffer], offset)
            finally:
                buffer.close()
        finally:
            os.close(fd)


def _base(fs: FileSystem) -> None:
    fs.mkdir("/base")


def _file(path: str, data: bytes) -> Script:
    def setup(fs: FileSystem) -> None:
        _base(fs)
        write_bytes(fs, path, data)

    return setup


def _files(*items: tuple[str, bytes]) -> Script:
    def setup(fs: FileSystem) -> None:
        _base(fs)
        for path, data in items:
            if path.endswith("/"):
                fs.mkdir(path.rstrip("/"))
            else:
                write_bytes(fs, path, data)

    return setup


def _overwrite_0_2(fs: FileSystem) -> None:
    fs.write("/base/f", 0, NEW)
    fs.write("/base/f", 2 * PAGE, NEW)


def _page_run(fs: FileSystem) -> None:
    for page in range(4):
        fs.write("/base/f", page * PAGE, NEW)


def _truncate_overwrite(fs: FileSystem) -> None:
    fs.truncate("/base/f", 0)
    fs.write("/base/f", 0, NEW * 3)


def _fdatasync_store(fs: FileSystem) -> None:
    write_bytes(fs, "/base/main.tmp", b"new")
    fs.fdatasync("/base/main.tmp")
    fs.rename("/base/main.tmp", "/base/main")
    fs.fdatasync("/base/main")


def _fsync_store(fs: FileSystem) -> None:
    write_bytes(fs, "/base/main.tmp", b"new")
    fs.fsync("/base/main.tmp")
    fs.rename("/base/main.tmp", "/base/main")
    fs.fsync_dir("/base")


def _rename_fsync_unchanged(fs: FileSystem) -> None:
    fs.rename("/base/a", "/base/b")
    fs.fsync("/base/f")


def _rename_fsync_other_dir(fs: FileSystem) -> None:
    fs.rename("/base/a", "/base/b")
    fs.fsync_dir("/base/other")


def _overwrite_after_rename(fs: FileSystem) -> None:
    fs.rename("/base/a", "/base/b")
    fs.write("/base/f", 0, NEW)


def _fdatasync_after_overwrite(fs: FileSystem) -> None:
    fs.rename("/base/a", "/base/b")
    fs.write("/base/f", 0, NEW)
    fs.fdatasync("/base/f")


def _rename_over_no_dirsync(fs: FileSystem) -> None:
    write_bytes(fs, "/base/main.tmp", b"new")
    fs.fsync("/base/main.tmp")
    fs.rename("/base/main.tmp", "/base/main")


def _ftruncate_rewrite(fs: FileSystem) -> None:
    fs.truncate("/base/main", 0)
    fs.write("/base/main", 0, b"new")
    fs.fsync("/base/main")


def _append(fs: FileSystem) -> None:
    """A log's appends (O_APPEND), the first fsynced, the second not."""
    fs.write("/base/log", PAGE, NEW)
    fs.fsync("/base/log")
    fs.write("/base/log", 2 * PAGE, b"tail")


def _direct(fs: FileSystem) -> None:
    """O_DIRECT page writes: an overwrite of page 1 and an extension, then fsync."""
    fs.write("/base/f", PAGE, NEW)
    fs.write("/base/f", 3 * PAGE, NEW)
    fs.fsync("/base/f")


def _maildir(fs: FileSystem) -> None:
    write_bytes(fs, "/base/tmp/m", b"mail")
    fs.fsync("/base/tmp/m")
    fs.link("/base/tmp/m", "/base/new/m")
    fs.unlink("/base/tmp/m")
    fs.fsync_dir("/base/new")


def _rmdir_mkdir(fs: FileSystem) -> None:
    fs.unlink("/base/d/x")
    fs.rmdir("/base/d")
    fs.mkdir("/base/d")
    fs.fsync_dir("/base")


def _directory_rename(fs: FileSystem) -> None:
    write_bytes(fs, "/base/staging/v", b"v2")
    fs.fsync("/base/staging/v")
    fs.fsync_dir("/base/staging")
    fs.rename("/base/staging", "/base/current")
    fs.fsync_dir("/base")


PATTERNS = [
    Pattern(
        "overwrite-blocks-0-and-2",
        _file("/base/f", OLD * 3),
        _overwrite_0_2,
        (("/base/f", 2 * PAGE, PAGE),),
    ),
    Pattern(
        "sqlite-page-run", _file("/base/f", OLD * 4), _page_run, (("/base/f", 3 * PAGE, PAGE),)
    ),
    Pattern(
        "truncate-then-overwrite",
        _file("/base/f", OLD * 3),
        _truncate_overwrite,
        (("/base/f", 0, PAGE),),
    ),
    Pattern("tmp-fdatasync-rename-fdatasync", _file("/base/main", b"old"), _fdatasync_store),
    Pattern("control:tmp-fsync-rename-dirfsync", _file("/base/main", b"old"), _fsync_store),
    Pattern(
        "rename-then-fsync-unchanged",
        _files(("/base/a", b"A"), ("/base/f", b"F")),
        _rename_fsync_unchanged,
    ),
    Pattern(
        "rename-then-fsync-unrelated-dir",
        _files(("/base/a", b"A"), ("/base/other/", b"")),
        _rename_fsync_other_dir,
    ),
    Pattern(
        "overwrite-after-rename",
        _files(("/base/a", b"A"), ("/base/f", OLD)),
        _overwrite_after_rename,
        (("/base/f", 0, PAGE),),
    ),
    Pattern(
        "fdatasync-after-overwrite",
        _files(("/base/a", b"A"), ("/base/f", OLD)),
        _fdatasync_after_overwrite,
    ),
    Pattern(
        "control:rename-over-without-dirsync", _file("/base/main", b"old"), _rename_over_no_dirsync
    ),
    Pattern("control:ftruncate-0-and-rewrite", _file("/base/main", b"old"), _ftruncate_rewrite),
    Pattern(
        "control:o-append",
        _file("/base/log", OLD),
        _append,
        (("/base/log", 2 * PAGE, PAGE),),
        flags=os.O_APPEND,
    ),
    Pattern("control:o-direct", _file("/base/f", OLD * 3), _direct, flags=os.O_DIRECT),
    Pattern("maildir-link-unlink", _files(("/base/tmp/", b""), ("/base/new/", b"")), _maildir),
    Pattern("rmdir-then-mkdir", _files(("/base/d/", b""), ("/base/d/x", b"x")), _rmdir_mkdir),
    Pattern(
        "directory-rename",
        _files(("/base/staging/", b""), ("/base/current/", b"")),
        _directory_rename,
    ),
]


# --- the patterns added to reach the list (about 33 in all) ------------------------


def _fallocated(path: str, size: int) -> Script:
    """A file of ``size`` bytes reserved with ``posix_fallocate`` (unwritten extents that
    read as zeros): the setup runs on the real directory only."""

    def setup(fs: FileSystem) -> None:
        _base(fs)
        assert isinstance(fs, RootedFileSystem), "fallocate needs the real directory"
        fs.create(path)
        fd = os.open(fs.root + path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.posix_fallocate(fd, 0, size)
            os.fsync(fd)
        finally:
            os.close(fd)

    return setup


def _same_tick_overwrite(fs: FileSystem) -> None:
    """An overwrite fsynced, a rename, then a second overwrite of the same file in the
    same timestamp tick (on ext4 the inode is not dirtied again) and its fsync. The same
    tick is likely, not certain: the first fsync and the rename must take less than a
    tick of the coarse clock (a jiffy); a later tick makes this the plain overwrite case."""
    fs.write("/base/f", 0, NEW)
    fs.fsync("/base/f")
    fs.rename("/base/a", "/base/b")
    fs.write("/base/f", 0, b"m" * PAGE)
    fs.fsync("/base/f")


def _rename_fdatasync_main(fs: FileSystem) -> None:
    fs.rename("/base/main.tmp", "/base/main")
    fs.fdatasync("/base/main")


def _fsync_one_other_pending(fs: FileSystem) -> None:
    write_bytes(fs, "/base/x", b"x")
    write_bytes(fs, "/base/y", b"y")
    fs.fsync("/base/y")


def _wal_checkpoint(fs: FileSystem) -> None:
    """A WAL append and fdatasync, the checkpoint's in-place page overwrite of the
    database and its fdatasync, then the WAL reset (truncate to 0)."""
    fs.write("/base/wal", 0, NEW)
    fs.fdatasync("/base/wal")
    fs.write("/base/db", PAGE, NEW)
    fs.fdatasync("/base/db")
    fs.truncate("/base/wal", 0)


def _delete_journal(fs: FileSystem) -> None:
    """SQLite DELETE mode: the rollback journal holds the old page, fsynced; the page is
    overwritten and fsynced; the journal is unlinked (no directory fsync)."""
    write_bytes(fs, "/base/db-journal", OLD)
    fs.fsync("/base/db-journal")
    fs.write("/base/db", 0, NEW)
    fs.fsync("/base/db")
    fs.unlink("/base/db-journal")


def _shrink_grow(fs: FileSystem) -> None:
    fs.truncate("/base/f", PAGE)
    fs.truncate("/base/f", 3 * PAGE)
    fs.fsync("/base/f")


def _fallocate_overwrite(fs: FileSystem) -> None:
    fs.write("/base/f", 0, NEW)
    fs.write("/base/f", 2 * PAGE, NEW)
    fs.fdatasync("/base/f")


def _append_fdatasync(fs: FileSystem) -> None:
    """An O_APPEND log: a record, fdatasync, a second record left unsynced."""
    fs.write("/base/log", PAGE, b"record-1" * 64)
    fs.fdatasync("/base/log")
    fs.write("/base/log", PAGE + 512, b"record-2" * 64)


def _write_past_eof(fs: FileSystem) -> None:
    """pwrite past the end (pages 1 and 2 a hole), then fdatasync."""
    fs.write("/base/f", 3 * PAGE, NEW)
    fs.fdatasync("/base/f")


def _link_unlink_original(fs: FileSystem) -> None:
    fs.link("/base/a", "/base/b")
    fs.unlink("/base/a")
    fs.fsync("/base/b")


def _directory_rename_fresh(fs: FileSystem) -> None:
    """A directory renamed to a fresh name, its parent never fsynced."""
    write_bytes(fs, "/base/staging/v", b"v2")
    fs.fsync("/base/staging/v")
    fs.rename("/base/staging", "/base/release")


def _rename_within_then_across(fs: FileSystem) -> None:
    write_bytes(fs, "/base/tmp/a.part", b"a")
    fs.fsync("/base/tmp/a.part")
    fs.rename("/base/tmp/a.part", "/base/tmp/a")
    fs.rename("/base/tmp/a", "/base/dst/a")
    fs.fsync_dir("/base/dst")


def _two_files_in_order(fs: FileSystem) -> None:
    fs.write("/base/a", 0, NEW)
    fs.fsync("/base/a")
    fs.write("/base/b", 0, NEW)
    fs.fsync("/base/b")


def _unlink_create_same_name(fs: FileSystem) -> None:
    fs.unlink("/base/f")
    write_bytes(fs, "/base/f", b"new")
    fs.fsync("/base/f")


def _mkdir_tree(fs: FileSystem) -> None:
    """mkdir -p of a three-level tree, a file in the leaf fsynced, then each parent."""
    fs.mkdir("/base/x")
    fs.mkdir("/base/x/y")
    fs.mkdir("/base/x/y/z")
    write_bytes(fs, "/base/x/y/z/f", b"f")
    fs.fsync("/base/x/y/z/f")
    fs.fsync_dir("/base/x/y/z")
    fs.fsync_dir("/base/x/y")
    fs.fsync_dir("/base/x")
    fs.fsync_dir("/base")


def _truncate_unsynced(fs: FileSystem) -> None:
    write_bytes(fs, "/base/f", b"data")
    fs.fsync("/base/f")
    fs.truncate("/base/f", 0)


def _small_appends(fs: FileSystem) -> None:
    """Small appends across the first block boundary, the last fdatasynced."""
    size = PAGE - 100
    for i in range(4):
        fs.write("/base/log", size, bytes([0x61 + i]) * 60)
        size += 60
    fs.fdatasync("/base/log")


PATTERNS += [
    Pattern(
        "overwrite-fsync-same-tick-after-rename",
        _files(("/base/a", b"A"), ("/base/f", OLD)),
        _same_tick_overwrite,
    ),
    Pattern(
        "rename-then-fdatasync-main",
        _files(("/base/main", b"old"), ("/base/main.tmp", b"new")),
        _rename_fdatasync_main,
    ),
    Pattern("fsync-one-file-other-create-pending", _files(), _fsync_one_other_pending),
    Pattern(
        "wal-append-fdatasync-checkpoint",
        _files(("/base/db", OLD * 2), ("/base/wal", b"")),
        _wal_checkpoint,
        (("/base/db", PAGE, PAGE),),
    ),
    Pattern("sqlite-delete-journal", _file("/base/db", OLD * 2), _delete_journal),
    Pattern("ftruncate-shrink-then-grow", _file("/base/f", OLD * 3), _shrink_grow),
    Pattern(
        "fallocate-then-overwrite",
        _fallocated("/base/f", 3 * PAGE),
        _fallocate_overwrite,
        (("/base/f", 2 * PAGE, PAGE),),
    ),
    Pattern(
        "o-append-log-fdatasync",
        _file("/base/log", OLD),
        _append_fdatasync,
        (("/base/log", PAGE, PAGE),),
        flags=os.O_APPEND,
    ),
    Pattern(
        "pwrite-past-eof-hole",
        _file("/base/f", OLD),
        _write_past_eof,
        (("/base/f", 3 * PAGE, PAGE),),
    ),
    Pattern("link-then-unlink-original", _files(("/base/a", b"A")), _link_unlink_original),
    Pattern(
        "directory-rename-without-dirsync",
        _files(("/base/staging/", b"")),
        _directory_rename_fresh,
    ),
    Pattern(
        "rename-within-tmp-dir-then-across",
        _files(("/base/tmp/", b""), ("/base/dst/", b"")),
        _rename_within_then_across,
    ),
    Pattern(
        "two-files-fsynced-in-order",
        _files(("/base/a", OLD), ("/base/b", OLD)),
        _two_files_in_order,
    ),
    Pattern("unlink-then-create-same-name", _file("/base/f", b"old"), _unlink_create_same_name),
    Pattern("mkdir-p-tree-fsync-parents", _files(), _mkdir_tree),
    Pattern("write-fsync-truncate-0-unsynced", _files(), _truncate_unsynced),
    Pattern(
        "small-appends-across-a-block",
        _file("/base/log", b"l" * (PAGE - 100)),
        _small_appends,
        (("/base/log", 0, 2 * PAGE),),
    ),
]

BY_NAME: dict[str, Pattern] = {p.name: p for p in PATTERNS}
"""The patterns by name (the fork server's ``pattern`` jobs)."""


def trace(pattern: Pattern, initial: CrashState) -> list[Op]:
    """The operations ``pattern.run`` issues from ``initial``, recorded on the model."""
    fs = RecordingFileSystem(MemoryFileSystem(initial))
    pattern.run(fs)
    return fs.trace.ops

"""The strace replay against the real kernel (issue 23, item 2): each call pattern a
database uses is run for real under strace by a small Python program, and the files the
replay leaves in the model are compared byte for byte with the real directory's.

One test per call of the issue's list (``lseek``, ``read``/``readv``, ``pwrite64``,
``pwritev``/``pwritev2``, ``O_APPEND``, ``ftruncate``, ``fallocate``'s modes,
``fdatasync`` vs ``fsync``, ``sync_file_range``, ``rename``/``renameat2``, ``link``/
``linkat``, ``rmdir``, ``dup``/``dup2``/``dup3``/``fcntl(F_DUPFD)``, ``O_TMPFILE`` +
``linkat``, ``mmap``, ``flock``/``fcntl`` locks). Calls the programs cannot reach from
Python's ``os`` go through ``ctypes`` to the C library (no C is compiled). Marker
``exec``: they need strace (skipped with the reason where it cannot trace)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from crashpoint.faultfs import (
    MemoryFileSystem,
    OpKind,
    RecordingFileSystem,
    crash_points,
    get_model,
    symlink_content,
    symlink_target,
)
from crashpoint.faultfs._strace import StraceReplay, parse_log, strace_argv, strace_available

pytestmark = pytest.mark.exec

MODEL = "/m"

PRELUDE = """\
import ctypes, fcntl, mmap, os, sys
D = sys.argv[1]
libc = ctypes.CDLL(None, use_errno=True)
def p(name):
    return os.path.join(D, name)
def check(rc):
    if rc != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
def fallocate(fd, mode, offset, length):
    check(libc.fallocate(fd, mode, ctypes.c_long(offset), ctypes.c_long(length)))
"""


@dataclass
class Replayed:
    real: tuple[dict[str, bytes], set[str]]
    model: tuple[dict[str, bytes], set[str]]
    replay: StraceReplay
    fs: RecordingFileSystem

    def kinds(self) -> list[OpKind]:
        return [o.kind for o in self.fs.trace.ops]


def _real_tree(root: str) -> tuple[dict[str, bytes], set[str]]:
    files: dict[str, bytes] = {}
    dirs: set[str] = set()
    for here, subdirs, names in os.walk(root):
        rel = os.path.relpath(here, root)
        for d in subdirs:
            dirs.add(os.path.normpath(os.path.join(rel, d)))
        for n in names:
            full = os.path.join(here, n)
            if os.path.islink(full):  # as the model holds one
                files[os.path.normpath(os.path.join(rel, n))] = symlink_content(
                    os.fsencode(os.readlink(full))
                )
                continue
            with open(full, "rb") as f:
                files[os.path.normpath(os.path.join(rel, n))] = f.read()
    return files, dirs


def _model_tree(fs: MemoryFileSystem) -> tuple[dict[str, bytes], set[str]]:
    files: dict[str, bytes] = {}
    dirs: set[str] = set()
    todo = [MODEL]
    while todo:
        here = todo.pop()
        for n in fs.listdir(here):
            path = f"{here}/{n}"
            rel = path[len(MODEL) + 1 :]
            if fs.is_dir(path):
                dirs.add(rel)
                todo.append(path)
            else:
                files[rel] = fs.read(path)
    return files, dirs


def run_replayed(tmp_path: Path, body: str) -> Replayed:
    """Run PRELUDE + ``body`` under strace on a fresh real directory; replay the log
    into a model directory; both trees."""
    reason = strace_available()
    if reason is not None:
        pytest.skip(reason)
    real = tmp_path / "dir"
    real.mkdir()
    script = tmp_path / "prog.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    log = str(tmp_path / "strace.log")
    root = os.path.realpath(real)
    done = subprocess.run(
        strace_argv([sys.executable, str(script), root], log),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    inner = MemoryFileSystem(dirs=("/", MODEL))
    fs = RecordingFileSystem(inner)
    replay = StraceReplay(fs, root, MODEL, cwd=str(tmp_path))
    with open(log, encoding="utf-8", errors="surrogateescape") as f:
        replay.feed(parse_log(f))
    assert replay.mismatched == []
    return Replayed(_real_tree(root), _model_tree(inner), replay, fs)


def same(tmp_path: Path, body: str) -> Replayed:
    """The program's real files equal the replay's, byte for byte, and nothing was
    unsupported or an escape."""
    r = run_replayed(tmp_path, body)
    assert r.replay.unsupported == []
    assert r.replay.escapes == []
    assert r.model == r.real
    assert r.real[0], "the program wrote no file: nothing was compared"
    return r


def test_lseek_set_cur_end_moves_the_next_write(tmp_path: Path) -> None:
    same(
        tmp_path,
        """
        fd = os.open(p("db"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"0123456789")
        os.lseek(fd, 2, os.SEEK_SET); os.write(fd, b"AB")
        os.lseek(fd, 3, os.SEEK_CUR); os.write(fd, b"C")
        os.lseek(fd, -1, os.SEEK_END); os.write(fd, b"D")
        os.lseek(fd, 4, os.SEEK_END); os.write(fd, b"E")
        """,
    )


def test_read_and_readv_advance_the_offset(tmp_path: Path) -> None:
    same(
        tmp_path,
        """
        fd = os.open(p("db"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"0123456789")
        os.lseek(fd, 0, os.SEEK_SET)
        os.read(fd, 3); os.write(fd, b"R")
        os.readv(fd, [bytearray(2), bytearray(1)]); os.write(fd, b"V")
        with open(p("f"), "w+b") as f:
            f.write(b"hello"); f.seek(0); f.read(1); f.write(b"J")
        """,
    )


def test_pwrite64_leaves_the_offset(tmp_path: Path) -> None:
    same(
        tmp_path,
        """
        fd = os.open(p("db"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"abc")
        os.pwrite(fd, b"Z", 0)
        os.pwrite(fd, b"far", 10)
        os.write(fd, b"d")
        """,
    )


def test_pwritev_and_pwritev2_append(tmp_path: Path) -> None:
    r = same(
        tmp_path,
        """
        fd = os.open(p("db"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"0123456789")
        os.pwritev(fd, [b"ab", b"cd"], 1)
        os.pwritev(fd, [b"XY"], 0, os.RWF_APPEND)
        os.write(fd, b"!")
        """,
    )
    # RWF_APPEND wrote at the end and left the offset at 10, where "!" went
    assert r.real[0]["db"] == b"0abcd56789!Y"


def test_o_append_writes_at_the_end_whatever_the_offset(tmp_path: Path) -> None:
    same(
        tmp_path,
        """
        fd = os.open(p("log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, b"one ")
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, b"two ")
        g = os.open(p("log2"), os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(g, b"xxxx"); os.lseek(g, 0, os.SEEK_SET)
        fcntl.fcntl(g, fcntl.F_SETFL, os.O_APPEND)
        os.write(g, b"end")
        """,
    )


def test_ftruncate_and_truncate_cut_and_grow(tmp_path: Path) -> None:
    r = same(
        tmp_path,
        """
        fd = os.open(p("db"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"0123456789")
        os.ftruncate(fd, 4)
        os.write(fd, b"W")
        os.ftruncate(fd, 16)
        with open(p("t"), "wb") as f:
            f.write(b"abcdef")
        os.truncate(p("t"), 2)
        """,
    )
    assert OpKind.TRUNCATE in r.kinds()


def test_fallocate_modes_that_change_bytes_or_size(tmp_path: Path) -> None:
    same(
        tmp_path,
        """
        KEEP, PUNCH, ZERO = 0x1, 0x2, 0x10
        for name, mode, off, n in [
            ("grow", 0, 0, 9000),
            ("keep", KEEP, 0, 9000),
            ("punch", PUNCH | KEEP, 4096, 4096),
            ("zero", ZERO, 100, 20000),
            ("zerokeep", ZERO | KEEP, 100, 20000),
        ]:
            fd = os.open(p(name), os.O_RDWR | os.O_CREAT, 0o644)
            os.write(fd, bytes(range(256)) * 48)
            fallocate(fd, mode, off, n)
            os.write(fd, b"after")
            os.close(fd)
        fd = os.open(p("posix"), os.O_RDWR | os.O_CREAT, 0o644)
        os.posix_fallocate(fd, 0, 5000)
        """,
    )


def test_fallocate_collapse_and_insert_range_are_named(tmp_path: Path) -> None:
    r = run_replayed(
        tmp_path,
        """
        fd = os.open(p("db"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"x" * 16384)
        os.fsync(fd)
        try:
            fallocate(fd, 0x8, 0, 4096)  # FALLOC_FL_COLLAPSE_RANGE
        except OSError:
            fallocate(fd, 0x20, 0, 4096)  # or INSERT_RANGE
        """,
    )
    assert any(u.startswith("fallocate (FALLOC_FL_") for u in r.replay.unsupported)


def test_fdatasync_and_fsync_are_distinct_barriers(tmp_path: Path) -> None:
    r = same(
        tmp_path,
        """
        fd = os.open(p("db"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"data")
        os.fdatasync(fd)
        os.write(fd, b"more")
        os.fsync(fd)
        """,
    )
    assert [k for k in r.kinds() if k in (OpKind.FSYNC, OpKind.FDATASYNC)] == [
        OpKind.FDATASYNC,
        OpKind.FSYNC,
    ]


def test_writes_through_o_dsync_and_o_sync_descriptors_are_durable_on_return(
    tmp_path: Path,
) -> None:
    # open(2): with O_DSYNC a write returns once its data is durable (as fdatasync),
    # with O_SYNC as fsync; liblmdb writes its meta page through such a descriptor
    r = same(
        tmp_path,
        """
        fd = os.open(p("meta"), os.O_RDWR | os.O_CREAT | os.O_DSYNC, 0o644)
        os.pwrite(fd, b"meta page", 0)
        os.close(fd)
        fd = os.open(p("log"), os.O_WRONLY | os.O_CREAT | os.O_SYNC, 0o644)
        os.write(fd, b"record")
        os.close(fd)
        """,
    )
    kinds = [k for k in r.kinds() if k in (OpKind.WRITE, OpKind.FSYNC, OpKind.FDATASYNC)]
    assert kinds == [OpKind.WRITE, OpKind.FDATASYNC, OpKind.WRITE, OpKind.FSYNC]


def test_sync_file_range_is_no_barrier(tmp_path: Path) -> None:
    r = same(
        tmp_path,
        """
        fd = os.open(p("db"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"data")
        check(libc.sync_file_range(fd, ctypes.c_long(0), ctypes.c_long(0), 2))
        """,
    )
    assert r.kinds() == [OpKind.CREATE, OpKind.WRITE]


def test_rename_and_renameat2_noreplace(tmp_path: Path) -> None:
    r = same(
        tmp_path,
        """
        with open(p("a.tmp"), "wb") as f:
            f.write(b"A")
        os.rename(p("a.tmp"), p("a"))
        with open(p("b.tmp"), "wb") as f:
            f.write(b"B")
        check(libc.renameat2(-100, p("b.tmp").encode(), -100, p("b").encode(), 1))
        os.replace(p("b"), p("a"))
        """,
    )
    assert r.kinds().count(OpKind.RENAME) == 3


def test_renameat2_exchange_is_named(tmp_path: Path) -> None:
    r = run_replayed(
        tmp_path,
        """
        for n in "xy":
            with open(p(n), "wb") as f:
                f.write(n.encode())
        check(libc.renameat2(-100, p("x").encode(), -100, p("y").encode(), 2))
        """,
    )
    assert r.replay.unsupported == ["renameat2 (RENAME_EXCHANGE)"]


def test_link_and_linkat_share_one_inode(tmp_path: Path) -> None:
    r = same(
        tmp_path,
        """
        fd = os.open(p("a"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"first")
        os.link(p("a"), p("b"))
        dirfd = os.open(D, os.O_RDONLY)
        os.link("a", "c", src_dir_fd=dirfd, dst_dir_fd=dirfd)
        os.unlink(p("a"))
        os.write(fd, b" more")
        """,
    )
    assert r.kinds().count(OpKind.LINK) == 2


def test_rmdir_and_unlinkat_removedir(tmp_path: Path) -> None:
    r = same(
        tmp_path,
        """
        os.mkdir(p("x")); os.mkdir(p("y")); os.mkdir(p("keep"))
        os.rmdir(p("x"))
        dirfd = os.open(D, os.O_RDONLY)
        os.rmdir("y", dir_fd=dirfd)
        with open(p("keep/f"), "wb") as f:
            f.write(b"k")
        """,
    )
    assert r.kinds().count(OpKind.RMDIR) == 2


def test_dup_dup2_dup3_and_f_dupfd_share_the_offset(tmp_path: Path) -> None:
    same(
        tmp_path,
        """
        fd = os.open(p("db"), os.O_RDWR | os.O_CREAT, 0o644)
        os.write(fd, b"1")
        a = os.dup(fd); os.write(a, b"2")
        os.dup2(fd, 40); os.write(40, b"3")
        os.dup2(fd, 41, inheritable=False); os.write(41, b"4")
        b = fcntl.fcntl(fd, fcntl.F_DUPFD, 50); os.write(b, b"5")
        c = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 60); os.lseek(c, 0, os.SEEK_SET)
        os.write(fd, b"6")
        """,
    )


def test_o_tmpfile_named_by_linkat(tmp_path: Path) -> None:
    r = same(
        tmp_path,
        """
        t = os.open(D, os.O_TMPFILE | os.O_RDWR, 0o644)
        os.write(t, b"through proc")
        dirfd = os.open(D, os.O_RDONLY)
        os.link(f"/proc/self/fd/{t}", p("one"), src_dir_fd=dirfd)  # linkat(..., AT_SYMLINK_FOLLOW)
        os.write(t, b"!")
        u = os.open(D, os.O_TMPFILE | os.O_WRONLY, 0o644)
        os.write(u, b"by descriptor")
        check(libc.linkat(u, b"", -100, p("two").encode(), 0x1000))  # AT_EMPTY_PATH
        os.fsync(u)
        """,
    )
    assert r.kinds()[:2] == [OpKind.CREATE, OpKind.WRITE]
    assert r.fs.trace.ops[1].data == b"through proc"


def test_read_only_mmap_is_harmless(tmp_path: Path) -> None:
    same(
        tmp_path,
        """
        with open(p("db"), "w+b") as f:
            f.write(b"mapped bytes")
            f.flush()
            m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            assert m[:6] == b"mapped"
            m.close()
            pm = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE)
            pm[0:1] = b"M"  # a private copy: the file keeps its bytes
            pm.close()
        """,
    )


def test_shared_writable_mmap_is_named_with_its_file(tmp_path: Path) -> None:
    r = run_replayed(
        tmp_path,
        """
        with open(p("db"), "w+b") as f:
            f.write(b"0" * 64)
            f.flush()
            m = mmap.mmap(f.fileno(), 0)
            m[0:4] = b"MMAP"
            m.flush()
            m.close()
        """,
    )
    assert r.replay.mapped == [f"{MODEL}/db"]
    assert r.replay.unsupported[0] == f"mmap (a shared writable mapping of {MODEL}/db)"


def test_flock_and_fcntl_locks_are_lock_events_only(tmp_path: Path) -> None:
    r = same(
        tmp_path,
        """
        fd = os.open(p("db"), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"locked")
        fcntl.flock(fd, fcntl.LOCK_UN)
        fcntl.lockf(fd, fcntl.LOCK_EX)
        os.write(fd, b" again")
        fcntl.lockf(fd, fcntl.LOCK_UN)
        g = os.open(p("other"), os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(g, fcntl.LOCK_SH)
        os.close(g)  # the last close releases it
        """,
    )
    events = [e.kind for e in r.fs.trace.events if e.kind in (OpKind.LOCK, OpKind.UNLOCK)]
    assert events == [OpKind.LOCK, OpKind.UNLOCK] * 3
    assert r.kinds() == [OpKind.CREATE, OpKind.WRITE, OpKind.WRITE, OpKind.CREATE]


def test_a_symlink_is_one_operation_holding_its_target(tmp_path: Path) -> None:
    """Mercurial's lock (``symlink("host:pid", ".hg/store/lock")``, then unlink) and git's
    core.symlinks probe: ``symlink(2)`` is one operation, name and target together, and
    a link still there at the end is in the model as the kernel left it."""
    r = same(
        tmp_path,
        """
        with open(p("data"), "wb") as f:
            f.write(b"kept")
        os.symlink("host/4026531836:12345", p("lock"))
        assert os.path.islink(p("lock"))
        os.unlink(p("lock"))
        os.symlink("data", p("kept-link"))
        """,
    )
    assert r.kinds() == [
        OpKind.CREATE,
        OpKind.WRITE,
        OpKind.SYMLINK,
        OpKind.UNLINK,
        OpKind.SYMLINK,
    ]
    ops = r.fs.trace.ops
    assert (ops[2].path, ops[2].data) == ("/m/lock", b"host/4026531836:12345")
    assert symlink_target(r.model[0]["kept-link"]) == b"data"


def test_every_crash_state_holds_a_symlink_whole_or_not_at_all(tmp_path: Path) -> None:
    """The link is never empty nor torn: at each crash point of each family the lock is
    absent or holds its whole target (a journaled ``symlink(2)``; FAULT-MODEL.md §1),
    while the data written under it may be lost."""
    r = same(
        tmp_path,
        """
        os.symlink("host/4026531836:12345", p("lock"))
        with open(p("data"), "wb") as f:
            f.write(b"kept")
        os.unlink(p("lock"))
        """,
    )
    lock = symlink_content(b"host/4026531836:12345")
    initial = MemoryFileSystem(dirs=("/", MODEL)).crash_state()
    for name in ("process-crash", "ext4", "posix"):
        seen: set[bytes | None] = set()
        for point in crash_points(get_model(name), initial, r.fs.trace.ops):
            for state in point.states:
                held = state.file("/m/lock")
                assert held in (None, lock), (name, point.index, held)
                seen.add(held)
        assert seen == {None, lock}, (name, "no crash state held the lock: nothing checked")


def test_an_open_that_follows_a_symlink_is_unsupported(tmp_path: Path) -> None:
    r = run_replayed(
        tmp_path,
        """
        with open(p("data"), "wb") as f:
            f.write(b"kept")
        os.symlink("data", p("followed"))
        with open(p("followed"), "rb") as f:
            f.read()
        os.unlink(p("followed"))
        """,
    )
    assert any("follows the symbolic link /m/followed" in u for u in r.replay.unsupported), (
        r.replay.unsupported
    )

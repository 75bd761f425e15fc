"""Interception: unmodified standard-library file calls go into the model (FAULT-MODEL.md §4).

While :func:`intercept` is active, code that knows nothing of crashpoint — ``open``,
``os``, ``os.path``, ``pathlib``, ``shutil``, ``tempfile`` — writes into a
:class:`~crashpoint.faultfs.FileSystem` (typically a
:class:`~crashpoint.faultfs.RecordingFileSystem` over a
:class:`~crashpoint.faultfs.MemoryFileSystem`), so its calls are recorded as the
operation trace and crashed and faulted like the protocol backends. Nothing touches
the real disk.

How (see ``docs/decisions.md``, "Interception (issue 8)"):

* pyfakefs's :class:`~pyfakefs.fake_filesystem_unittest.Patcher` does the module
  scanning: every loaded module's references to ``os``, ``os.path``, ``io``,
  ``time``, ``fcntl``, ``mmap``, ``sqlite3`` and ``subprocess``, names bound before
  the patch (``from os import fsync``), ``builtins.open``, modules imported during
  the patch, and tempfile's closer. Its fake modules are replaced by crashpoint's
  own, which delegate to one :class:`Interception` (STYLE.md 16).
* what pyfakefs does not reach, :class:`_Reach` does (issue 21): real functions and
  modules held in a dict, a class attribute (``dbm.dumb``'s ``_Database._os``), a
  closure's cells or a :func:`functools.partial`, in every module but the harness's;
  ``open(opener=os.open)`` with the real ``os.open`` opens through the model. What lies
  deeper (a list, an instance made before the patch) is refused by the audit layer
  (``faultfs/_audit.py``) and named in the verdict.
* packages both the harness and a target use (:data:`SHARED_PACKAGES`: pytest,
  hypothesis, attrs, rich, jinja2, setuptools ...) are patched too; who called decides
  (:func:`_from_harness`), so a target's ``_pytest.cacheprovider.Cache`` writes into the
  model while crashpoint's own calls into the same package keep the real disk.
* the fake ``os`` keeps a :class:`~crashpoint.faultfs.DescriptorTable` over the
  model: a descriptor follows its inode, ``O_EXCL``/``O_APPEND``/``O_TRUNC`` as on
  Linux, ``os.fsync`` of a directory descriptor is ``fsync_dir``.
* ``open`` builds a raw file over a model descriptor and wraps it in CPython's own
  C ``BufferedWriter``/``BufferedReader``/``BufferedRandom`` and ``TextIOWrapper``
  with the 4096-byte buffer a Linux filesystem reports (``st_blksize``): a buffered
  write becomes exactly the ``write(2)`` calls CPython makes.

A call the model cannot represent is listed in :attr:`Interception.unsupported`
(the verdict is then incomplete); a mutating call on a path outside ``root`` is
listed in :attr:`Interception.escapes` (confinement, SPEC S1) and still goes to the
model.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import io
import os
import posixpath
import random
import stat
import sys
import sysconfig
import tempfile
import threading
import time
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, TypeVar

from ._actors import ActorHooks
from ._clock import VirtualClock
from ._descriptors import DescriptorTable, normalise
from ._image import os_error
from ._protocol import FileSystem
from ._recording import SimulatedCrash

__all__ = ["Interception", "intercept"]

_T = TypeVar("_T")

# ``io.text_encoding`` (3.10+): the encoding ``open()`` uses when none is given.
_text_encoding: Callable[[str | None], str] = getattr(io, "text_encoding")  # noqa: B009

_REAL_OPEN = io.open
_BLKSIZE = 4096

_DEV = 0x6370  # st_dev of every model file ("cp")

#: Top-level packages of the harness alone: never patched (their own ``os`` stays real),
#: and a call whose nearest deciding frame is theirs is the harness's (:func:`_from_harness`).
HARNESS_PACKAGES = (
    "crashpoint",
    "pluggy",
    "xdist",
    "execnet",
    "_hypothesis_pytestplugin",
    "_hypothesis_ftz_detector",
    "_hypothesis_globals",
    "coverage",
    "pytest_cov",
    # import machinery installed into site-packages: it must find real source files
    "_virtualenv",
    "_distutils_hack",
)
#: Packages both the harness and a target may use (issue 21): patched like the target's
#: own modules, and transparent to :func:`_from_harness` as the standard library is, so
#: a target's ``_pytest.cacheprovider.Cache`` or hypothesis's
#: ``DirectoryBasedExampleDatabase`` writes into the model while crashpoint's own calls
#: into them keep the real disk. Kept loaded across interceptions (one copy of each class).
SHARED_PACKAGES = (
    "_pytest",
    "pytest",
    "py",
    "hypothesis",
    "rich",
    "pygments",
    "markdown_it",
    "mdurl",
    "jinja2",
    "markupsafe",
    "attr",
    "attrs",
    "sortedcontainers",
    "iniconfig",
    "exceptiongroup",
    "setuptools",
    "pkg_resources",
)
#: Modules of shared packages that are the harness's machinery, never a target's library:
#: pytest's assertion rewriter (it compiles test modules imported during a run).
HARNESS_MODULES = ("_pytest.assertion",)
#: Import hooks of editable installs (``__editable___<dist>_finder``) are harness too.
EDITABLE_PREFIX = "__editable__"
#: Modules of the harness that *are* target code: the OS backend runs the user's storage.
TARGET_MODULES = ("crashpoint.faultfs._os",)


class _SkipName(str):
    """A pyfakefs skip name matching a package and its submodules, not mere prefixes.

    pyfakefs skips module ``m`` when ``any(name.startswith(m.__name__))``; a plain
    string would also skip a user module called ``py`` or ``x`` (prefixes of
    ``pytest``, ``xdist``). This ``startswith`` answers exactly "``m`` is this
    package or inside it, and not a target module".
    """

    def startswith(self, prefix: Any, *args: Any) -> bool:
        if args or not isinstance(prefix, str):
            return str.startswith(self, prefix, *args)
        inside = prefix == self or prefix.startswith(str(self) + ".")
        return inside and prefix not in TARGET_MODULES


_OWN = frozenset({"crashpoint.faultfs._intercept", "crashpoint.faultfs._descriptors"})
_STDLIB_DIR = sysconfig.get_paths()["stdlib"]
_transparent: dict[tuple[str, str], bool] = {}
_harness: dict[str, bool] = {}


def _from_harness() -> bool:
    """True when the code that made this call is the harness, not the target.

    Walks the stack past the interception's own frames, the standard library's
    (``shutil``, ``pathlib``, ``tempfile`` ... call the fakes on behalf of whoever
    called them) and the shared packages' (:data:`SHARED_PACKAGES`: pytest, hypothesis
    ... do the same) to the first other frame, and asks whether its module belongs to
    :data:`HARNESS_PACKAGES`. So harness code inside an ``intercept()`` block (a
    report, hypothesis's database under crashpoint's state machine) keeps the real
    disk, while the target, and any library the target calls (pytest's cache provider,
    hypothesis's example database, ``dbm.dumb``), is intercepted (issue 21). A stack
    with no deciding frame (a callback the interpreter starts) is the target's."""
    frame = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        filename = frame.f_code.co_filename
        skip = _transparent.get((filename, name))
        if skip is None:
            skip = _transparent[filename, name] = (
                name in _OWN
                or name.startswith("pyfakefs.")
                or (
                    filename.startswith("<frozen")
                    or (filename.startswith(_STDLIB_DIR) and "-packages" not in filename)
                )
                or _is_shared_module(name)
            )
        if not skip:
            found = _harness.get(name)
            if found is None:
                found = _harness[name] = _is_harness_module(name)
            return found
        frame = frame.f_back  # type: ignore[assignment]
    return False


def _inside(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def _is_harness_module(name: str) -> bool:
    """``name`` is crashpoint's (or its test runner's) own module: never patched."""
    top = name.partition(".")[0]
    harness = top in HARNESS_PACKAGES or top.startswith(EDITABLE_PREFIX)
    harness = harness or _inside(name, HARNESS_MODULES)
    return harness and name not in TARGET_MODULES


def _is_shared_module(name: str) -> bool:
    """``name`` belongs to a package both the harness and a target use (patched)."""
    return name.partition(".")[0] in SHARED_PACKAGES and not _inside(name, HARNESS_MODULES)


def _route(cls: type, names: tuple[str, ...], real: Callable[[Any], Any] | Any) -> None:
    """Make each named method of fake ``cls`` call the real one when the harness calls.

    ``real`` is the real module (its functions are looked up now, before any patch), or
    a function of the fake instance returning it."""
    for name in names:
        found = getattr(real, name, None) if isinstance(real, types.ModuleType) else None
        setattr(cls, name, _routed(cls.__dict__[name], name, real, found))


def _routed(method: Callable[..., Any], name: str, real: Any, found: Any) -> Any:
    @functools.wraps(method)
    def routed(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _from_harness():
            call = found if found is not None else getattr(real(self), name)
            return call(*args, **kwargs)
        return method(self, *args, **kwargs)

    return routed


class Interception:
    """The state of one interception: the filesystem, descriptors, clock and findings.

    Created by :func:`intercept`; use :meth:`switch` to run the target again on
    another filesystem under the same patch.

    Attributes:
        fs: the filesystem calls go to now.
        root: the base directory (absolute); mutating calls outside it are escapes.
        seed: seeds tempfile's names, ``os.urandom``, ``random``, the clock.
        table: the :class:`~crashpoint.faultfs.DescriptorTable` of the current run.
        unsupported: names of calls the model cannot represent that the target made,
            in order, without repeats (e.g. ``"os.symlink"``, ``"fcntl.flock"``,
            ``"threading: concurrent file calls"``). Non-empty means incomplete.
        escapes: paths outside ``root`` the target tried to create, write, rename or
            delete (SPEC S1), in order, without repeats.
        outside_reads: paths outside ``root``, absent from the model, that the target
            read from the real disk (read-only: ``open`` for reading, ``stat``,
            ``listdir``, ``exists``), in order, without repeats.
        pid: the process id the target sees (``os.getpid``).
    """

    def __init__(self, fs: FileSystem, *, root: str, seed: int = 0) -> None:
        if not root.startswith("/"):
            raise ValueError(f"root must be an absolute path, not {root!r}")
        self.root = normalise(root)
        self.seed = seed
        self.unsupported: list[str] = []
        self.escapes: list[str] = []
        self.outside_reads: list[str] = []
        self.guard = _Guard(self)
        self.os = _FakeOs(self)
        self.io = _FakeIo(self)
        self.time = _FakeTime(self)
        self.fs = fs
        self.table = DescriptorTable(fs)
        self.cwd = self.root
        self.pid = 0
        self.clock = VirtualClock(seed)
        self.thread = threading.get_ident()  # the thread the target's calls run on
        self.actors: ActorHooks | None = None
        """Set by a scheduler of concurrent actors (faultfs/_actors.py): file calls,
        ``fcntl`` locks, sleeps and the monotonic clocks go through it."""
        self._rng = random.Random(seed)
        self._modes: dict[str, int] = {}
        self._times: dict[str, tuple[int, int]] = {}
        self._names: Any = None
        self._reach: _Reach | None = None
        self._reset(fs, seed)

    # --- runs ------------------------------------------------------------------
    def switch(self, fs: FileSystem, *, seed: int | None = None) -> None:
        """Run the next target on ``fs``: a fresh descriptor table, the clock, pid,
        tempfile names and ``random`` seeded again (``seed`` or the same as before),
        so the same code issues the same trace. Descriptors left open by the previous
        run are retired: later calls on them change nothing."""
        self._reset(fs, self.seed if seed is None else seed)

    def _reset(self, fs: FileSystem, seed: int) -> None:
        self.seed = seed
        self.fs = fs
        self.table = DescriptorTable(fs)
        self.cwd = self.root
        self.pid = 1000 + seed % 30000
        self.clock.reset(seed)
        self._rng = random.Random(seed)
        self._modes = {}
        self._times = {}
        names = tempfile._RandomNameSequence()  # type: ignore[attr-defined]
        names._rng = random.Random(seed)
        names._rng_pid = self.pid
        self._names = names
        if _ACTIVE and _ACTIVE[-1] is self:
            random.seed(seed)
            tempfile._name_sequence = names  # type: ignore[attr-defined]

    # --- findings ----------------------------------------------------------------
    def report(self, name: str) -> None:
        """Record a call the model cannot represent (once per name)."""
        if name not in self.unsupported:
            self.unsupported.append(name)

    def inside(self, path: str) -> bool:
        """``path`` is ``root`` or lies under it."""
        root = self.root
        return path == root or path.startswith(root + "/") or root == "/"

    def confine(self, path: str) -> str:
        """Note ``path`` as an escape if it lies outside ``root``; return it."""
        if not self.inside(path) and path not in self.escapes:
            self.escapes.append(path)
        return path

    def real_outside(self, path: str) -> bool:
        """True when a read of ``path`` is served by the real disk, read-only: it lies
        outside ``root``, the model has nothing there and the real disk has (package
        data, a config file). Listed in :attr:`outside_reads`."""
        if self.inside(path) or self.fs.exists(path) or not os.path.exists(path):
            return False
        if path not in self.outside_reads:
            self.outside_reads.append(path)
        return True

    # --- helpers used by the fakes ---------------------------------------------------
    def resolve(self, path: Any, dir_fd: int | None = None) -> str:
        """An absolute, normalised model path for ``path`` (str, bytes, PathLike)."""
        p = os.fspath(path)
        if isinstance(p, bytes):
            p = os.fsdecode(p)
        if not p:
            raise os_error(errno.ENOENT, p)
        if not p.startswith("/"):
            base = self.cwd if dir_fd is None else self.table.path(dir_fd)
            p = base.rstrip("/") + "/" + p
        return normalise(p)

    def now_ns(self, *, advance: bool = True) -> int:
        """The seeded wall clock in nanoseconds; each reading advances it by 1 ms
        (:class:`~crashpoint.faultfs._clock.VirtualClock`)."""
        return self.clock.wall_ns(advance=advance)


class _Guard:
    """Serialises file calls; a call that overlaps another thread's is reported
    (``threading: concurrent file calls``): the order of such calls is the
    scheduler's, so a re-run may not issue the same trace."""

    __slots__ = ("_depth", "_i", "_lock")

    def __init__(self, icpt: Interception) -> None:
        self._i = icpt
        self._lock = threading.RLock()
        self._depth = threading.local()

    def __enter__(self) -> None:
        actors = self._i.actors
        if actors is not None:
            depth = getattr(self._depth, "n", 0)
            if depth == 0:  # an outermost call: a point where the scheduler may switch
                actors.before_call()
            self._depth.n = depth + 1
        if not self._lock.acquire(blocking=False):
            self._i.report("threading: concurrent file calls")
            self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        if self._i.actors is not None:
            self._depth.n = max(getattr(self._depth, "n", 1) - 1, 0)
        self._lock.release()


# =============================================================================
# fake os
# =============================================================================


def _stat_result(mode: int, ino: int, size: int, atime_ns: int, mtime_ns: int) -> os.stat_result:
    return os.stat_result(
        (
            mode,
            ino,
            _DEV,
            1,
            _UID,
            _GID,
            size,
            atime_ns // 10**9,
            mtime_ns // 10**9,
            mtime_ns // 10**9,
            atime_ns / 1e9,
            mtime_ns / 1e9,
            mtime_ns / 1e9,
            atime_ns,
            mtime_ns,
            mtime_ns,
            _BLKSIZE,
            (size + 511) // 512,
            0,
        )
    )


_O_TMPFILE = getattr(os, "O_TMPFILE", 1 << 40)
_UID = os.getuid() if hasattr(os, "getuid") else 0
_GID = os.getgid() if hasattr(os, "getgid") else 0

#: os functions that would change the disk in ways the model does not represent:
#: reported, and refused with ENOTSUP (nothing happened).
_REFUSED_OS = (
    "symlink",
    "mkfifo",
    "mknod",
    "chroot",
    "fchdir",
    "posix_fallocate",
    "setxattr",
    "removexattr",
    "copy_file_range",
    "splice",
    "fwalk",
    "truncate64",
    "memfd_create",
)
#: process creation: a child would run outside the interception.
_REFUSED_PROC = (
    "system",
    "popen",
    "fork",
    "forkpty",
    "posix_spawn",
    "posix_spawnp",
    "execv",
    "execve",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "execvp",
    "execvpe",
    "spawnl",
    "spawnle",
    "spawnlp",
    "spawnlpe",
    "spawnv",
    "spawnve",
    "spawnvp",
    "spawnvpe",
)


class _FakeOs:
    """The ``os`` module a target sees: file calls on the model, the rest real."""

    path: _FakePath

    def __init__(self, icpt: Interception) -> None:
        self._i = icpt
        self.path = _FakePath(icpt, self)

    @staticmethod
    def dir() -> list[str]:
        """Names patched where bound before the patch (``from os import fsync``)."""
        return [
            n
            for n in _FakeOs.__dict__
            if not n.startswith("_") and n not in ("dir", "path") and n in os.__dict__
        ]

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    # --- descriptors -------------------------------------------------------------
    def open(self, path: Any, flags: int, mode: int = 0o777, *, dir_fd: int | None = None) -> int:
        i = self._i
        with i.guard:
            p = i.resolve(path, dir_fd)
            if flags & (os.O_CREAT | os.O_TRUNC) or flags & os.O_ACCMODE != os.O_RDONLY:
                i.confine(p)
            if flags & _O_TMPFILE == _O_TMPFILE:
                # an unnamed file: the model is a filesystem without O_TMPFILE, as some
                # are; callers (tempfile.TemporaryFile) fall back to a named file
                raise os_error(errno.EOPNOTSUPP, p)
            existed = flags & os.O_CREAT and i.fs.exists(p)
            fd = i.table.open(p, flags)
            if flags & os.O_CREAT and not existed:
                i._modes[p] = stat.S_IFREG | (mode & 0o777 & ~0o022)
            return fd

    def close(self, fd: int) -> None:
        i = self._i
        if fd not in i.table:
            return _real_fd(i, "os.close", os.close, fd)
        with i.guard:
            i.table.close(fd)

    def closerange(self, low: int, high: int) -> None:
        for fd in self._i.table.open_fds():
            if low <= fd < high:
                self._i.table.close(fd)

    def dup(self, fd: int) -> int:
        if fd not in self._i.table:
            return _real_fd(self._i, "os.dup", os.dup, fd)
        return self._i.table.dup(fd)

    def write(self, fd: int, data: Any) -> int:
        i = self._i
        if fd not in i.table:
            return _real_fd(i, "os.write", os.write, fd, data)
        with i.guard:
            n = i.table.write(fd, bytes(data))
            self._touch(i.table.path(fd))
            return n

    def writev(self, fd: int, buffers: Any) -> int:
        return self.write(fd, b"".join(bytes(b) for b in buffers))

    def pwrite(self, fd: int, data: Any, offset: int) -> int:
        i = self._i
        if fd not in i.table:
            return _real_fd(i, "os.pwrite", os.pwrite, fd, data, offset)
        with i.guard:
            n = i.table.pwrite(fd, bytes(data), offset)
            self._touch(i.table.path(fd))
            return n

    def read(self, fd: int, n: int) -> bytes:
        i = self._i
        if fd not in i.table:
            return _real_fd(i, "os.read", os.read, fd, n)
        with i.guard:
            return i.table.read(fd, n)

    def pread(self, fd: int, n: int, offset: int) -> bytes:
        i = self._i
        if fd not in i.table:
            return _real_fd(i, "os.pread", os.pread, fd, n, offset)
        with i.guard:
            return i.table.pread(fd, n, offset)

    def lseek(self, fd: int, pos: int, how: int) -> int:
        i = self._i
        if fd not in i.table:
            return _real_fd(i, "os.lseek", os.lseek, fd, pos, how)
        return i.table.lseek(fd, pos, how)

    def fsync(self, fd: Any) -> None:
        i = self._i
        if not isinstance(fd, int):
            fd = fd.fileno()
        if fd not in i.table:
            return _real_fd(i, "os.fsync", os.fsync, fd)
        with i.guard:
            i.table.fsync(fd)

    def fdatasync(self, fd: Any) -> None:
        i = self._i
        if not isinstance(fd, int):
            fd = fd.fileno()
        if fd not in i.table:
            return _real_fd(i, "os.fdatasync", os.fdatasync, fd)
        with i.guard:
            i.table.fdatasync(fd)

    def ftruncate(self, fd: int, length: int) -> None:
        i = self._i
        if fd not in i.table:
            return _real_fd(i, "os.ftruncate", os.ftruncate, fd, length)
        with i.guard:
            i.table.ftruncate(fd, length)
            self._touch(i.table.path(fd))

    def fstat(self, fd: int) -> os.stat_result:
        i = self._i
        if fd not in i.table:
            return _real_fd(i, "os.fstat", os.fstat, fd)
        d = i.table.get(fd)
        if d.orphan is not None:
            return _stat_result(stat.S_IFREG | 0o644, 0, len(d.orphan), 0, 0)
        return self.stat(d.path)

    def isatty(self, fd: int) -> bool:
        return False if fd in self._i.table else os.isatty(fd)

    def sendfile(self, out_fd: int, in_fd: int, offset: int | None, count: int) -> int:
        """``sendfile(2)`` between model descriptors: one write of what was read."""
        i = self._i
        if out_fd not in i.table or in_fd not in i.table:
            return _real_fd(i, "os.sendfile", os.sendfile, out_fd, in_fd, offset, count)
        with i.guard:
            if offset is None:
                data = i.table.read(in_fd, count)
            else:
                data = i.table.pread(in_fd, count, offset)
            return i.table.write(out_fd, data) if data else 0

    def fchmod(self, fd: int, mode: int) -> None:
        if fd not in self._i.table:
            return _real_fd(self._i, "os.fchmod", os.fchmod, fd, mode)
        self.chmod(self._i.table.get(fd).path, mode)

    def fchown(self, fd: int, uid: int, gid: int) -> None:
        if fd not in self._i.table:
            return _real_fd(self._i, "os.fchown", os.fchown, fd, uid, gid)

    def get_inheritable(self, fd: int) -> bool:
        return False if fd in self._i.table else os.get_inheritable(fd)

    def set_inheritable(self, fd: int, inheritable: bool) -> None:
        if fd not in self._i.table:
            os.set_inheritable(fd, inheritable)

    def get_blocking(self, fd: int) -> bool:
        return True if fd in self._i.table else os.get_blocking(fd)

    def set_blocking(self, fd: int, blocking: bool) -> None:
        if fd not in self._i.table:
            os.set_blocking(fd, blocking)

    def fdopen(self, fd: int, mode: str = "r", buffering: int = -1, *args: Any, **kw: Any) -> Any:
        return self._i.io.open(fd, mode, buffering, *args, **kw)

    def posix_fadvise(self, fd: int, offset: int, length: int, advice: int) -> None:
        if fd not in self._i.table:
            os.posix_fadvise(fd, offset, length, advice)

    # --- namespace ---------------------------------------------------------------
    def stat(
        self, path: Any, *, dir_fd: int | None = None, follow_symlinks: bool = True
    ) -> os.stat_result:
        i = self._i
        if isinstance(path, int):
            return self.fstat(path)
        p = i.resolve(path, dir_fd)
        if i.real_outside(p):
            return os.stat(p)
        fs = i.fs
        now = i.now_ns(advance=False)
        atime, mtime = i._times.get(p, (now, now))
        if fs.is_dir(p):
            mode = i._modes.get(p, stat.S_IFDIR | 0o755)
            return _stat_result(mode, _ino(p), _BLKSIZE, atime, mtime)
        size = fs.size(p)  # raises ENOENT/ENOTDIR as the model says
        mode = i._modes.get(p, stat.S_IFREG | 0o644)
        return _stat_result(mode, _ino(p), size, atime, mtime)

    def lstat(self, path: Any, *, dir_fd: int | None = None) -> os.stat_result:
        return self.stat(path, dir_fd=dir_fd)

    def access(self, path: Any, mode: int, **_: Any) -> bool:
        try:
            self.stat(path)
        except OSError:
            return False
        return True

    def listdir(self, path: Any = ".") -> list[str]:
        i = self._i
        if isinstance(path, int):
            path = i.table.path(path)
        p = i.resolve(path)
        if i.real_outside(p):
            return os.listdir(path)
        names = i.fs.listdir(p)
        return [os.fsencode(n) for n in names] if isinstance(path, bytes) else names  # type: ignore[misc]

    def scandir(self, path: Any = ".") -> _ScandirIterator:
        i = self._i
        given = path
        if isinstance(path, int):
            path = i.table.path(path)
            given = None
        p = i.resolve(path)
        if given is not None and i.real_outside(p):
            return os.scandir(given)  # type: ignore[return-value]
        names = i.fs.listdir(p)
        shown = None if given is None else os.fspath(given)
        return _ScandirIterator([_DirEntry(self, p, n, shown) for n in names])

    def walk(
        self, top: Any, topdown: bool = True, onerror: Any = None, followlinks: bool = False
    ) -> Iterator[tuple[Any, list[Any], list[Any]]]:
        top = os.fspath(top)
        try:
            entries = list(self.scandir(top))
        except OSError as exc:
            if onerror is not None:
                onerror(exc)
            return
        dirs = [e.name for e in entries if e.is_dir()]
        files = [e.name for e in entries if not e.is_dir()]
        if topdown:
            yield top, dirs, files
        for name in dirs:
            yield from self.walk(posixpath.join(top, name), topdown, onerror, followlinks)
        if not topdown:
            yield top, dirs, files

    def mkdir(self, path: Any, mode: int = 0o777, *, dir_fd: int | None = None) -> None:
        i = self._i
        with i.guard:
            p = i.confine(i.resolve(path, dir_fd))
            i.fs.mkdir(p)

    def makedirs(self, name: Any, mode: int = 0o777, exist_ok: bool = False) -> None:
        i = self._i
        p = i.resolve(name)
        head = posixpath.dirname(p)
        if head and head != p and not i.fs.exists(head):
            with contextlib.suppress(FileExistsError):
                self.makedirs(head, exist_ok=exist_ok)
        try:
            self.mkdir(p, mode)
        except OSError:
            if not exist_ok or not i.fs.is_dir(p):
                raise

    def rmdir(self, path: Any, *, dir_fd: int | None = None) -> None:
        i = self._i
        with i.guard:
            p = i.confine(i.resolve(path, dir_fd))
            i.table.rmdir(p)
            i._modes.pop(p, None)
            i._times.pop(p, None)

    def removedirs(self, name: Any) -> None:
        """``os.removedirs``: ``name``, then each parent while it is empty, stopping at
        the first that is not (as the standard library does) or at the base
        directory (its parent is outside the model: never removed)."""
        self.rmdir(name)
        i = self._i
        head = posixpath.dirname(i.resolve(name))
        while head and i.inside(head) and head != i.root:
            try:
                self.rmdir(head)
            except OSError:
                break
            head = posixpath.dirname(head)

    def link(
        self,
        src: Any,
        dst: Any,
        *,
        src_dir_fd: int | None = None,
        dst_dir_fd: int | None = None,
        follow_symlinks: bool = True,
    ) -> None:
        """``os.link``: a hard link (the model has no symbolic links to follow)."""
        i = self._i
        with i.guard:
            s = i.resolve(src, src_dir_fd)
            d = i.confine(i.resolve(dst, dst_dir_fd))
            i.table.link(s, d)
            if s in i._modes:
                i._modes[d] = i._modes[s]

    def unlink(self, path: Any, *, dir_fd: int | None = None) -> None:
        i = self._i
        with i.guard:
            p = i.confine(i.resolve(path, dir_fd))
            i.table.unlink(p)
            i._modes.pop(p, None)
            i._times.pop(p, None)

    def remove(self, path: Any, *, dir_fd: int | None = None) -> None:
        self.unlink(path, dir_fd=dir_fd)

    def rename(
        self,
        src: Any,
        dst: Any,
        *,
        src_dir_fd: int | None = None,
        dst_dir_fd: int | None = None,
    ) -> None:
        i = self._i
        with i.guard:
            s = i.confine(i.resolve(src, src_dir_fd))
            d = i.confine(i.resolve(dst, dst_dir_fd))
            tree = i.fs.is_dir(s)
            i.table.rename(s, d)
            if s != d:
                for attrs in (i._modes, i._times):
                    _move(attrs, s, d)
                    if tree:
                        _move_tree(attrs, s, d)

    def replace(self, src: Any, dst: Any, **kw: Any) -> None:
        self.rename(src, dst, **kw)

    def renames(self, old: Any, new: Any) -> None:
        head = posixpath.dirname(self._i.resolve(new))
        if head and not self._i.fs.exists(head):
            self.makedirs(head)
        self.rename(old, new)

    def truncate(self, path: Any, length: int) -> None:
        i = self._i
        if isinstance(path, int):
            return self.ftruncate(path, length)
        with i.guard:
            p = i.confine(i.resolve(path))
            if i.fs.is_dir(p):
                raise os_error(errno.EISDIR, p)
            if length < 0:
                raise os_error(errno.EINVAL, p)
            i.fs.truncate(p, length)
            self._touch(p)

    # --- attributes: kept in the interception's view, not in the trace ------------------
    def chmod(
        self, path: Any, mode: int, *, dir_fd: int | None = None, follow_symlinks: bool = True
    ) -> None:
        i = self._i
        if isinstance(path, int):
            return self.fchmod(path, mode)
        p = i.confine(i.resolve(path, dir_fd))
        kind = stat.S_IFMT(self.stat(p).st_mode)  # ENOENT as the OS would
        i._modes[p] = kind | (mode & 0o7777)

    def lchmod(self, path: Any, mode: int) -> None:
        self.chmod(path, mode)

    def chown(self, path: Any, uid: int, gid: int, **_: Any) -> None:
        p = self._i.confine(self._i.resolve(path)) if not isinstance(path, int) else path
        self.stat(p)

    def lchown(self, path: Any, uid: int, gid: int) -> None:
        self.chown(path, uid, gid)

    def utime(
        self,
        path: Any,
        times: tuple[float, float] | None = None,
        *,
        ns: tuple[int, int] | None = None,
        dir_fd: int | None = None,
        follow_symlinks: bool = True,
    ) -> None:
        i = self._i
        if isinstance(path, int):
            path = i.table.path(path)
        p = i.confine(i.resolve(path, dir_fd))
        self.stat(p)  # ENOENT as the OS would
        if ns is not None:
            i._times[p] = (int(ns[0]), int(ns[1]))
        elif times is not None:
            i._times[p] = (int(times[0] * 1e9), int(times[1] * 1e9))
        else:
            now = i.now_ns()
            i._times[p] = (now, now)

    def listxattr(self, path: Any = None, **_: Any) -> list[str]:
        return []

    def getxattr(self, path: Any, attribute: Any, **_: Any) -> bytes:
        raise os_error(errno.ENODATA, str(path))

    def _touch(self, path: str) -> None:
        if path:
            now = self._i.now_ns(advance=False)
            self._i._times[path] = (now, now)

    # --- process and determinism -----------------------------------------------------
    def getcwd(self) -> str:
        return self._i.cwd

    def getcwdb(self) -> bytes:
        return os.fsencode(self._i.cwd)

    def chdir(self, path: Any) -> None:
        p = self._i.resolve(path)
        if not self._i.fs.is_dir(p):
            raise os_error(errno.ENOTDIR if self._i.fs.exists(p) else errno.ENOENT, p)
        self._i.cwd = p

    def getpid(self) -> int:
        actors = self._i.actors
        pid = actors.pid() if actors is not None else None
        if pid is not None:
            return pid
        return self._i.pid

    def urandom(self, size: int) -> bytes:
        return self._i._rng.randbytes(size)

    def sync(self) -> None:
        self._i.report("os.sync")

    def syncfs(self, fd: int) -> None:
        self._i.report("os.syncfs")

    def readlink(self, path: Any, *, dir_fd: int | None = None) -> str:
        p = self._i.resolve(path, dir_fd)
        self.stat(p)
        raise os_error(errno.EINVAL, p)  # the model has no symbolic links


def _move(attrs: dict[str, Any], src: str, dst: str) -> None:
    if src in attrs:
        attrs[dst] = attrs.pop(src)
    else:
        attrs.pop(dst, None)


def _move_tree(attrs: dict[str, Any], src: str, dst: str) -> None:
    """The attributes of what lies under directory ``src`` move to ``dst``."""
    prefix = src + "/"
    for p in [p for p in attrs if p.startswith(prefix)]:
        attrs[dst + p[len(src) :]] = attrs.pop(p)


def _ino(path: str) -> int:
    return (hash(path) & 0x7FFF_FFFF) | 1


def _refused(name: str) -> Callable[..., Any]:
    def refused(self: _FakeOs, *args: Any, **kwargs: Any) -> Any:
        self._i.report(f"os.{name}")
        raise OSError(errno.ENOTSUP, f"os.{name} is not modelled by crashpoint's interception")

    refused.__name__ = name
    return refused


for _name in (*_REFUSED_OS, *_REFUSED_PROC):
    if hasattr(os, _name):
        setattr(_FakeOs, _name, _refused(_name))


def _real_fd(icpt: Interception, name: str, call: Callable[..., _T], fd: Any, *args: Any) -> _T:
    """A descriptor the model did not hand out: standard streams pass through; any
    other real descriptor (a file opened before the patch) is refused with EBADF."""
    if fd in (0, 1, 2) or _from_harness():
        return call(fd, *args)
    icpt.report(f"{name}(real descriptor)")
    raise os_error(errno.EBADF, str(fd))


class _DirEntry:
    """``os.DirEntry`` over the model."""

    __slots__ = ("_dir", "_os", "name", "path")

    def __init__(self, fake_os: _FakeOs, directory: str, name: str, shown: str | None) -> None:
        self._os = fake_os
        self._dir = directory
        self.name = name
        self.path = posixpath.join(shown if shown is not None else directory, name)

    def _full(self) -> str:
        return posixpath.join(self._dir, self.name)

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._os._i.fs.is_dir(self._full())

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        p = self._full()
        fs = self._os._i.fs
        return fs.exists(p) and not fs.is_dir(p)

    def is_symlink(self) -> bool:
        return False

    def is_junction(self) -> bool:
        return False

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._os.stat(self._full())

    def inode(self) -> int:
        return _ino(self._full())

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"<DirEntry {self.name!r}>"


class _ScandirIterator:
    def __init__(self, entries: list[_DirEntry]) -> None:
        self._it = iter(entries)

    def __iter__(self) -> _ScandirIterator:
        return self

    def __next__(self) -> _DirEntry:
        return next(self._it)

    def __enter__(self) -> _ScandirIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def close(self) -> None:
        return None


class _FakePath:
    """``os.path`` over the model: queries ask the model, pure functions are posixpath's."""

    def __init__(self, icpt: Interception, fake_os: _FakeOs) -> None:
        self._i = icpt
        self._os = fake_os

    @staticmethod
    def dir() -> list[str]:
        return [n for n in _FakePath.__dict__ if not n.startswith("_") and n != "dir"]

    def __getattr__(self, name: str) -> Any:
        return getattr(posixpath, name)

    def exists(self, path: Any) -> bool:
        if isinstance(path, int):
            return path in self._i.table
        try:
            p = self._i.resolve(path)
            return self._i.fs.exists(p) or self._i.real_outside(p)
        except (OSError, ValueError):
            return False

    def lexists(self, path: Any) -> bool:
        return self.exists(path)

    def isfile(self, path: Any) -> bool:
        try:
            return stat.S_ISREG(self._os.stat(path).st_mode)
        except (OSError, ValueError):
            return False

    def isdir(self, path: Any) -> bool:
        try:
            return stat.S_ISDIR(self._os.stat(path).st_mode)
        except (OSError, ValueError):
            return False

    def islink(self, path: Any) -> bool:
        return False

    def ismount(self, path: Any) -> bool:
        return self._i.resolve(path) == "/"

    def getsize(self, path: Any) -> int:
        return self._os.stat(path).st_size

    def getmtime(self, path: Any) -> float:
        return self._os.stat(path).st_mtime

    def getatime(self, path: Any) -> float:
        return self._os.stat(path).st_atime

    def getctime(self, path: Any) -> float:
        return self._os.stat(path).st_ctime

    def samefile(self, a: Any, b: Any) -> bool:
        self._os.stat(a)
        self._os.stat(b)
        return self._i.resolve(a) == self._i.resolve(b)

    def abspath(self, path: Any) -> Any:
        p = os.fspath(path)
        if isinstance(p, bytes):
            return os.fsencode(self._i.resolve(p))
        return self._i.resolve(p) if p else self._i.cwd

    def realpath(self, path: Any, *, strict: bool = False) -> Any:
        if strict:
            self._os.stat(path)
        return self.abspath(path)

    def relpath(self, path: Any, start: Any = None) -> str:
        relative: str = posixpath.relpath(self.abspath(path), self.abspath(start or self._i.cwd))
        return relative


# =============================================================================
# fake io: CPython's own buffering over a model descriptor
# =============================================================================


class _FakeFileIO(io.RawIOBase):
    """``io.FileIO`` over a model descriptor (what the C buffered classes wrap)."""

    def __init__(
        self,
        icpt: Interception,
        file: Any,
        mode: str = "r",
        closefd: bool = True,
        opener: Callable[[Any, int], int] | None = None,
    ) -> None:
        super().__init__()
        self._i = icpt
        self._fd = -1
        modes = set(mode)
        if modes - set("xrwab+") or len(mode) > len(modes):
            raise ValueError(f"invalid mode: {mode}")
        self._readable = "r" in modes or "+" in modes
        self._writable = bool(modes & set("xwa+"))
        self._appending = "a" in modes
        if self._readable and self._writable:
            flags = os.O_RDWR
        elif self._writable:
            flags = os.O_WRONLY
        else:
            flags = os.O_RDONLY
        if "x" in modes:
            flags |= os.O_EXCL | os.O_CREAT
        elif "w" in modes:
            flags |= os.O_CREAT | os.O_TRUNC
        elif "a" in modes:
            flags |= os.O_APPEND | os.O_CREAT
        flags |= getattr(os, "O_CLOEXEC", 0)
        self.name = file
        self._closefd = closefd
        if isinstance(file, int):
            if file not in icpt.table:
                raise os_error(errno.EBADF, str(file))
            fd = file
        else:
            if not closefd:
                raise ValueError("Cannot use closefd=False with file name")
            if opener is not None and icpt._reach is not None:
                # open(path, opener=os.open) with the real os.open: the model's instead
                opener = icpt._reach.fake_of(opener) or opener
            fd = opener(file, flags) if opener is not None else icpt.os.open(file, flags, 0o666)
            if not isinstance(fd, int) or fd < 0:
                raise ValueError(f"opener returned {fd}")
        self._fd = fd
        self._table = icpt.table
        if icpt.table.get(fd).is_dir:
            if closefd:
                icpt.os.close(fd)
                self._fd = -1
            raise os_error(errno.EISDIR, str(file))
        self._blksize = _BLKSIZE
        if self._appending:
            icpt.os.lseek(fd, 0, os.SEEK_END)
        if "x" in modes:
            self.mode = "xb+" if self._readable else "xb"
        elif "a" in modes:
            self.mode = "ab+" if self._readable else "ab"
        elif "w" in modes:
            self.mode = "rb+" if self._readable else "wb"
        else:
            self.mode = "rb+" if self._writable else "rb"

    @property
    def closefd(self) -> bool:
        return self._closefd

    def fileno(self) -> int:
        self._checkClosed()
        return self._fd

    def readable(self) -> bool:
        self._checkClosed()
        return self._readable

    def writable(self) -> bool:
        self._checkClosed()
        return self._writable

    def seekable(self) -> bool:
        self._checkClosed()
        return True

    def isatty(self) -> bool:
        self._checkClosed()
        return False

    @property
    def _retired(self) -> bool:
        """The run this file belongs to is over (``switch`` or the block's end):
        a late flush or close changes nothing."""
        return self._table is not self._i.table

    def readinto(self, b: Any) -> int:
        if self._retired:
            return 0
        data = self._i.os.read(self._fd, len(b))
        n = len(data)
        memoryview(b).cast("B")[:n] = data
        return n

    def readall(self) -> bytes:
        return b"" if self._retired else self._i.os.read(self._fd, -1)

    def write(self, b: Any) -> int:
        if not self._writable:
            raise io.UnsupportedOperation("File not open for writing")
        if self._retired:
            return len(b)
        return self._i.os.write(self._fd, b)

    def seek(self, pos: int, whence: int = 0) -> int:
        self._checkClosed()
        return self._i.os.lseek(self._fd, pos, whence)

    def tell(self) -> int:
        self._checkClosed()
        return self._i.os.lseek(self._fd, 0, os.SEEK_CUR)

    def truncate(self, size: int | None = None) -> int:
        self._checkClosed()
        if not self._writable:
            raise io.UnsupportedOperation("File not open for writing")
        if size is None:
            size = self.tell()
        self._i.os.ftruncate(self._fd, size)
        return size

    def close(self) -> None:
        if not self.closed:
            try:
                if self._closefd and self._fd >= 0 and not self._retired:
                    self._i.os.close(self._fd)
            finally:
                super().close()

    def __repr__(self) -> str:
        return f"<crashpoint FileIO name={self.name!r} mode={self.mode!r}>"


def _fake_open(
    icpt: Interception,
    file: Any,
    mode: str = "r",
    buffering: int = -1,
    encoding: str | None = None,
    errors: str | None = None,
    newline: str | None = None,
    closefd: bool = True,
    opener: Callable[[Any, int], int] | None = None,
) -> Any:
    """``open()`` as CPython's ``_io.open`` builds it, over :class:`_FakeFileIO`."""
    if isinstance(file, int) and file not in icpt.table:
        if file in (0, 1, 2):
            return _REAL_OPEN(file, mode, buffering, encoding, errors, newline, closefd, opener)
        icpt.report("open(real descriptor)")
        raise os_error(errno.EBADF, str(file))
    if not isinstance(file, int):
        file = os.fspath(file)
    if not isinstance(file, (str, bytes, int)):
        raise TypeError(f"invalid file: {file!r}")
    if not isinstance(mode, str):
        raise TypeError(f"invalid mode: {mode!r}")
    modes = set(mode)
    if modes - set("axrwb+t") or len(mode) > len(modes):
        raise ValueError(f"invalid mode: {mode!r}")
    creating, reading, writing, appending = ("x" in modes, "r" in modes, "w" in modes, "a" in modes)
    updating, text, binary = "+" in modes, "t" in modes, "b" in modes
    if text and binary:
        raise ValueError("can't have text and binary mode at once")
    if creating + reading + writing + appending > 1:
        raise ValueError("must have exactly one of create/read/write/append mode")
    if not (creating or reading or writing or appending):
        raise ValueError(
            "Must have exactly one of create/read/write/append mode and at most one plus"
        )
    if binary and encoding is not None:
        raise ValueError("binary mode doesn't take an encoding argument")
    if binary and errors is not None:
        raise ValueError("binary mode doesn't take an errors argument")
    if binary and newline is not None:
        raise ValueError("binary mode doesn't take a newline argument")
    if binary and buffering == 1:
        warnings.warn(
            "line buffering (buffering=1) isn't supported in binary mode, "
            "the default buffer size will be used",
            RuntimeWarning,
            3,
        )
    if not isinstance(file, int) and reading and not updating:
        p = icpt.resolve(file)
        if icpt.real_outside(p):
            return _REAL_OPEN(p, mode, buffering, encoding, errors, newline, closefd, opener)
    rawmode = (
        ("x" if creating else "")
        + ("r" if reading else "")
        + ("w" if writing else "")
        + ("a" if appending else "")
        + ("+" if updating else "")
    )
    raw = _FakeFileIO(icpt, file, rawmode, closefd, opener)
    result: Any = raw
    try:
        line_buffering = False
        if buffering == 1 or (buffering < 0 and raw.isatty()):
            buffering = -1
            line_buffering = True
        if buffering < 0:
            buffering = raw._blksize
        if buffering == 0:
            if binary:
                return result
            raise ValueError("can't have unbuffered text I/O")
        if updating:
            buffer: Any = io.BufferedRandom(raw, buffering)
        elif creating or writing or appending:
            buffer = io.BufferedWriter(raw, buffering)
        else:
            buffer = io.BufferedReader(raw, buffering)
        result = buffer
        if binary:
            return result
        wrapper = io.TextIOWrapper(
            buffer, _text_encoding(encoding), errors, newline, line_buffering
        )
        result = wrapper
        wrapper.mode = mode  # type: ignore[misc]
        return result
    except BaseException:
        result.close()
        raise


class _FakeIo:
    """The ``io`` module a target sees: ``open``/``FileIO`` on the model, the rest real."""

    def __init__(self, icpt: Interception) -> None:
        self._i = icpt

        class FileIO(_FakeFileIO):
            def __init__(
                self,
                file: Any,
                mode: str = "r",
                closefd: bool = True,
                opener: Callable[[Any, int], int] | None = None,
            ) -> None:
                super().__init__(icpt, file, mode, closefd, opener)

        self.FileIO = FileIO

    @staticmethod
    def dir() -> list[str]:
        return ["open"]

    def __getattr__(self, name: str) -> Any:
        return getattr(io, name)

    def open(self, file: Any, *args: Any, **kwargs: Any) -> Any:
        if not (isinstance(file, int) and file in self._i.table) and _from_harness():
            return _REAL_OPEN(file, *args, **kwargs)
        return _fake_open(self._i, file, *args, **kwargs)


# =============================================================================
# fake time, and modules whose calls are reported
# =============================================================================


_StructTime = time.struct_time


class _FakeTime:
    """The ``time`` module a target sees: the run's virtual clock (faultfs/_clock.py):
    the wall clock, the monotonic and performance counters seeded, each reading one
    tick later; ``sleep`` advances the clock and returns at once. A thread the target
    started sleeps for real (a polling loop must not spin) without moving the clock."""

    def __init__(self, icpt: Interception) -> None:
        self._i = icpt

    @staticmethod
    def dir() -> list[str]:
        return [
            "time",
            "time_ns",
            "monotonic",
            "monotonic_ns",
            "perf_counter",
            "perf_counter_ns",
            "sleep",
        ]

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)

    def _outsider(self) -> bool:
        """A thread that is neither the target's nor an actor's (pytest-xdist's, a
        progress line's): it reads the real clocks, so it never advances the seeded one
        and a re-run reads the same times (FAULT-MODEL.md §4)."""
        return self._i.actors is None and threading.get_ident() != self._i.thread

    def time(self) -> float:
        return time.time() if self._outsider() else self._i.now_ns() / 1e9

    def time_ns(self) -> int:
        return time.time_ns() if self._outsider() else self._i.now_ns()

    # The monotonic clocks are seeded and virtual (issue 22); under a scheduler of actors
    # (faultfs/_actors.py, issue 25) they and sleeping are the scheduler's: a poll loop
    # advances a clock, it does not wait.
    def monotonic_ns(self) -> int:
        actors = self._i.actors
        if actors is not None:
            return int(actors.monotonic() * 1e9)
        if threading.get_ident() != self._i.thread:
            return time.monotonic_ns()
        return self._i.clock.monotonic_ns()

    def monotonic(self) -> float:
        return self.monotonic_ns() / 1e9

    def perf_counter_ns(self) -> int:
        return self.monotonic_ns()

    def perf_counter(self) -> float:
        return self.monotonic()

    def sleep(self, seconds: float) -> None:
        actors = self._i.actors
        if actors is not None:
            actors.sleep(seconds)
            return
        if threading.get_ident() != self._i.thread:
            time.sleep(seconds)
            return
        self._i.clock.sleep(seconds)

    def localtime(self, secs: float | None = None) -> _StructTime:
        return time.localtime(self.time() if secs is None else secs)

    def gmtime(self, secs: float | None = None) -> _StructTime:
        return time.gmtime(self.time() if secs is None else secs)

    def ctime(self, secs: float | None = None) -> str:
        return time.ctime(self.time() if secs is None else secs)

    def strftime(self, fmt: str, t: Any = None) -> str:
        return time.strftime(fmt, self.localtime() if t is None else t)


class _Reporting:
    """A module a target sees where some calls are reported; the rest is the real one."""

    module_name: ClassVar[str] = ""

    def __init__(self, icpt: Interception, real: Any) -> None:
        self._i = icpt
        self._real = real

    @classmethod
    def dir(cls) -> list[str]:
        skip = ("dir", "module_name")
        return [n for n in cls.__dict__ if not n.startswith("_") and n not in skip]

    def __getattr__(self, name: str) -> Any:
        if self._real is None:
            raise AttributeError(name)
        return getattr(self._real, name)

    def _refuse(self, name: str, code: int = errno.ENOTSUP) -> OSError:
        self._i.report(f"{self.module_name}.{name}")
        return OSError(code, f"{self.module_name}.{name} is not modelled by crashpoint")


class _FakeFcntl(_Reporting):
    """``fcntl``: locks are reported (and granted: one process holds them all)."""

    module_name = "fcntl"

    def flock(self, fd: Any, operation: int) -> None:
        if not self._actor_lock(fd, operation, self._real.LOCK_UN, self._real.LOCK_NB):
            self._i.report("fcntl.flock")

    def lockf(self, fd: Any, cmd: int, *args: Any) -> None:
        """Python's ``fcntl.lockf(fd, cmd, len=0, start=0, whence=0)`` takes ``flock``'s
        constants (``LOCK_UN``, ``LOCK_SH``, ``LOCK_EX``, ``| LOCK_NB``; the docs of
        the fcntl module), not C's ``F_LOCK``/``F_TLOCK``: one whole-file lock, as
        :meth:`flock` (a byte range is taken as the whole file, a shared lock as an
        exclusive one: never less exclusion than asked for)."""
        real = self._real
        nonblocking = cmd & real.LOCK_NB
        op = real.LOCK_UN if cmd & ~real.LOCK_NB == real.LOCK_UN else real.LOCK_EX | nonblocking
        if not self._actor_lock(fd, op, real.LOCK_UN, real.LOCK_NB):
            self._i.report("fcntl.lockf")

    def _actor_lock(self, fd: Any, operation: int, unlock: int, nonblocking: int) -> bool:
        """A whole-file lock between actors (faultfs/_actors.py); False when no
        scheduler is installed or ``fd`` is not a modelled descriptor."""
        actors = self._i.actors
        if not isinstance(fd, int):
            fd = fd.fileno()
        if actors is None or fd not in self._i.table:
            return False
        path = self._i.table.path(fd)
        actors.flock(
            path,
            exclusive=True,
            blocking=not operation & nonblocking,
            unlock=operation & ~nonblocking == unlock,
        )
        return True

    def fcntl(self, fd: Any, cmd: int, arg: Any = 0) -> Any:
        if not isinstance(fd, int):
            fd = fd.fileno()
        if fd not in self._i.table:
            return _real_fd(self._i, "fcntl.fcntl", self._real.fcntl, fd, cmd, arg)
        real = self._real
        if cmd in (real.F_GETFD, real.F_SETFD, real.F_SETFL):
            return 0
        if cmd == real.F_GETFL:
            d = self._i.table.get(fd)
            acc = os.O_RDWR if d.readable and d.writable else os.O_WRONLY if d.writable else 0
            return acc | (os.O_APPEND if d.append else 0)
        self._i.report("fcntl.fcntl")
        return 0

    def ioctl(self, fd: Any, *args: Any) -> Any:
        raise self._refuse("ioctl", errno.ENOTTY)


class _FakeMmap(_Reporting):
    """``mmap``: a mapping's writes reach a file without a system call: refused."""

    module_name = "mmap"

    def mmap(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("mmap", errno.ENODEV)


class _FakeSqlite3(_Reporting):
    module_name = "sqlite3"

    def connect(self, database: Any, *args: Any, **kwargs: Any) -> Any:
        """Reported; the connection is an in-memory database (nothing reaches a disk)."""
        self._i.report("sqlite3.connect")
        return self._real.connect(":memory:", *args, **kwargs)


class _FakeSubprocess(_Reporting):
    """``subprocess``: a child process would run outside the interception: refused."""

    module_name = "subprocess"

    def Popen(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("Popen", errno.EPERM)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("Popen", errno.EPERM)

    def call(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("Popen", errno.EPERM)

    def check_call(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("Popen", errno.EPERM)

    def check_output(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("Popen", errno.EPERM)

    def getoutput(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("Popen", errno.EPERM)

    def getstatusoutput(self, *args: Any, **kwargs: Any) -> Any:
        raise self._refuse("Popen", errno.EPERM)


def _import_real(name: str) -> Any:
    """The real module (imported on first interception: keeps ``import crashpoint`` light)."""
    try:
        return __import__(name)
    except ImportError:  # pragma: no cover - platform without it
        return None


_route(
    _FakeOs,
    tuple(
        n
        for n in (
            "open",
            "stat",
            "lstat",
            "access",
            "listdir",
            "scandir",
            "walk",
            "mkdir",
            "makedirs",
            "rmdir",
            "removedirs",
            "link",
            "unlink",
            "remove",
            "rename",
            "replace",
            "renames",
            "truncate",
            "chmod",
            "chown",
            "lchown",
            "utime",
            "listxattr",
            "getxattr",
            "getcwd",
            "getcwdb",
            "chdir",
            "getpid",
            "urandom",
            "sync",
            "syncfs",
            "readlink",
            *_REFUSED_OS,
            *_REFUSED_PROC,
        )
        if n in _FakeOs.__dict__
    ),
    os,
)
_route(_FakePath, tuple(_FakePath.dir()), posixpath)
_route(
    _FakeTime,
    (
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "perf_counter",
        "perf_counter_ns",
        "sleep",
        "localtime",
        "gmtime",
        "ctime",
        "strftime",
    ),
    time,
)
for _cls in (_FakeFcntl, _FakeMmap, _FakeSqlite3, _FakeSubprocess):
    _route(_cls, tuple(_cls.dir()), lambda self: self._real)


# =============================================================================
# the patcher
# =============================================================================


def _patcher_class() -> type:
    from pyfakefs.fake_filesystem_unittest import Patcher

    hooks = ("_init_fake_module_classes", "_init_fake_module_functions", "_is_fs_function")
    missing = [h for h in hooks if not hasattr(Patcher, h)]
    if missing:  # pragma: no cover - a pyfakefs outside the pinned range
        from importlib.metadata import version

        raise RuntimeError(
            f"crashpoint interception needs pyfakefs 6 (Patcher.{', '.join(missing)}); "
            f"found pyfakefs {version('pyfakefs')}"
        )

    class InterceptPatcher(Patcher):
        """pyfakefs's Patcher with crashpoint's fake modules instead of its own.

        Own class-level caches (pyfakefs keeps them per class), no known-package
        patches (they target pyfakefs's filesystem), no Path-class replacement
        (the real ``pathlib`` runs over the patched ``os``/``io``)."""

        CACHED_MODULES: ClassVar[set[Any]] = set()
        FS_MODULES: ClassVar[dict[str, Any]] = {}
        FS_FUNCTIONS: ClassVar[dict[Any, Any]] = {}
        FS_DEFARGS: ClassVar[list[Any]] = []
        SKIPPED_FS_MODULES: ClassVar[dict[str, Any]] = {}
        PATCHED_MODULE_NAMES: ClassVar[set[str]] = set()
        ADDITIONAL_SKIP_NAMES: ClassVar[set[str]] = set()
        PATCHER = None
        REF_COUNT = 0
        fakes: ClassVar[dict[str, Any]] = {}
        real_ids: ClassVar[frozenset[int]] = frozenset()

        def _init_fake_module_classes(self) -> None:
            self._fake_module_classes = {
                name: (lambda _fs, fake=fake: fake) for name, fake in self.fakes.items()
            }
            self._class_modules = {}
            self._unfaked_module_classes = {}

        def _init_fake_module_functions(self) -> None:
            keys = {
                "os": ("os", "posix"),
                "io": ("io", "_io"),
                "time": ("time",),
            }
            for name, fake in self.fakes.items():
                for fct_name in type(fake).dir():
                    entry = (getattr(type(fake), fct_name), name)
                    for key in keys.get(name, (name,)):
                        self._fake_module_functions.setdefault(fct_name, {})[key] = entry
            path = self.fakes["os"].path
            for fct_name in type(path).dir():
                entry = (getattr(type(path), fct_name), "posixpath")
                for key in ("posixpath", "genericpath"):
                    self._fake_module_functions.setdefault(fct_name, {})[key] = entry

        def _is_fs_function(self, fct: Any) -> bool:
            # pyfakefs matches by name and __module__, so a wrapper made with
            # functools.wraps (aiofiles.os.replace, a coroutine function) would be
            # swapped for the synchronous fake; only the real function itself is.
            return id(fct) in self.real_ids and bool(super()._is_fs_function(fct))

    return InterceptPatcher


def _real_functions(fakes: dict[str, Any]) -> dict[int, tuple[Any, Any]]:
    """``id(real function) -> (real function, fake bound method)`` for every function
    a fake stands for (``os.replace``, ``posixpath.exists``, ``io.open`` ...)."""
    found: dict[int, tuple[Any, Any]] = {}
    reals: dict[str, tuple[Any, ...]] = {
        "os": (os,),
        "io": (io,),
        "time": (time,),
    }
    for name, fake in fakes.items():
        for module in reals.get(name, (getattr(fake, "_real", None),)):
            if module is None:
                continue
            for fct_name in type(fake).dir():
                real = module.__dict__.get(fct_name)
                if callable(real):
                    found[id(real)] = (real, getattr(fake, fct_name))
    path = fakes["os"].path
    for module in (posixpath, sys.modules.get("genericpath")):
        for fct_name in type(path).dir():
            real = getattr(module, fct_name, None)
            if callable(real):
                found[id(real)] = (real, getattr(path, fct_name))
    return found


def _real_modules(fakes: dict[str, Any]) -> dict[int, tuple[Any, Any]]:
    """``id(real module) -> (real module, fake)``: ``os``, ``os.path``, ``io`` and the
    modules whose calls are reported (``fcntl``, ``mmap``, ``sqlite3``, ``subprocess``)."""
    found: dict[int, tuple[Any, Any]] = {
        id(os): (os, fakes["os"]),
        id(posixpath): (posixpath, fakes["os"].path),
        id(io): (io, fakes["io"]),
    }
    for name in ("fcntl", "mmap", "sqlite3", "subprocess"):
        real = getattr(fakes[name], "_real", None)
        if real is not None:
            found[id(real)] = (real, fakes[name])
    return found


#: Where each module holds real values out of pyfakefs's reach: module name ->
#: (the module, its number of globals when scanned, the sites). A module is scanned again
#: when it is another object or its globals changed in number; a dict that held a real
#: value when scanned is a site as a whole (its values are looked at on every entry).
_SITES: dict[str, tuple[Any, int, list[tuple[Any, ...]]]] = {}


class _Reach:
    """Points functions and modules bound before the patch at the fakes (issue 21): the
    values of a dict, the attributes of a class (``dbm.dumb``'s ``_Database._os``), the
    cells of a closure, the function of a :func:`functools.partial`, in every loaded
    module that is not the harness's (pyfakefs reaches module globals and default
    arguments only). One level of dict inside a module or a class; what lies deeper (a
    list, an instance made before the patch) still reaches the real functions, and the
    audit layer (``faultfs/_audit.py``) refuses what they would change. Each module is
    scanned once (:data:`_SITES`); a later entry only revisits the places found.

    :meth:`undo` puts every real value back."""

    def __init__(self, reals: dict[int, tuple[Any, Any]]) -> None:
        self._reals = reals
        self._undo: list[Callable[[], None]] = []

    def fake_of(self, value: Any) -> Any:
        """The fake standing for ``value`` (a real function or module), or None."""
        entry = self._reals.get(id(value))
        return entry[1] if entry is not None and entry[0] is value else None

    def modules(self, skipped: set[Any]) -> _Reach:
        done: set[int] = set()
        for name, module in list(sys.modules.items()):
            if (
                not isinstance(module, types.ModuleType)
                or module in skipped
                or name in _OWN
                or name.startswith("pyfakefs")
                or _is_harness_module(name)
            ):
                continue
            try:
                count = len(vars(module))
            except TypeError:  # pragma: no cover - a module without a __dict__
                continue
            known = _SITES.get(name)
            if known is None or known[0] is not module or known[1] != count:
                known = _SITES[name] = (module, count, self._scan(module))
            for site in known[2]:
                if site[0] == "dict":  # one dict may be held by many modules
                    if id(site[1]) in done:
                        continue
                    done.add(id(site[1]))
                self._apply(site)
        return self

    def undo(self) -> None:
        for step in reversed(self._undo):
            step()
        self._undo.clear()

    # --- finding the places (once per module) ---------------------------------------
    def _scan(self, module: types.ModuleType) -> list[tuple[Any, ...]]:
        sites: list[tuple[Any, ...]] = []
        seen: set[int] = set()
        for key, value in list(vars(module).items()):
            if key.startswith("__") and key.endswith("__"):  # __builtins__, __loader__ ...
                continue
            if value is sys.modules:
                continue
            if isinstance(value, type):
                if getattr(value, "__module__", None) == module.__name__:
                    self._scan_class(value, sites, seen)
            else:
                self._scan_value(value, sites, seen, in_dict=True)
        return sites

    def _scan_class(self, cls: type, sites: list[tuple[Any, ...]], seen: set[int]) -> None:
        if id(cls) in seen:
            return
        seen.add(id(cls))
        for key, value in list(vars(cls).items()):
            if key.startswith("__") and key.endswith("__"):
                continue
            if self.fake_of(value) is not None:
                sites.append(("attr", cls, key))
            elif isinstance(value, (staticmethod, classmethod)):
                self._scan_value(value.__func__, sites, seen, in_dict=False)
            elif isinstance(value, type):
                self._scan_class(value, sites, seen)
            else:
                self._scan_value(value, sites, seen, in_dict=True)

    def _scan_value(
        self, value: Any, sites: list[tuple[Any, ...]], seen: set[int], *, in_dict: bool
    ) -> None:
        """``value`` held by a module or a class (pyfakefs patched a real module or
        function held directly by a module already: only containers are looked into)."""
        if id(value) in seen:
            return
        if isinstance(value, dict):
            if in_dict:
                seen.add(id(value))
                if any(
                    self.fake_of(v) is not None or isinstance(v, functools.partial)
                    for v in list(value.values())
                ):
                    sites.append(("dict", value))
        elif isinstance(value, functools.partial):
            seen.add(id(value))
            if self.fake_of(value.func) is not None:
                sites.append(("partial", value))
        elif isinstance(value, types.FunctionType) and value.__closure__:
            seen.add(id(value))
            for cell in value.__closure__:
                try:
                    contents = cell.cell_contents
                except ValueError:  # an empty cell
                    continue
                if self.fake_of(contents) is not None:
                    sites.append(("cell", cell))
                elif isinstance(contents, functools.partial):
                    self._scan_value(contents, sites, seen, in_dict=False)

    # --- pointing them at the fakes (every entry) ---------------------------------------
    def _apply(self, site: tuple[Any, ...]) -> None:
        kind = site[0]
        if kind == "attr":
            _, cls, key = site
            value = cls.__dict__.get(key)
            fake = self.fake_of(value)
            if fake is not None:
                try:
                    setattr(cls, key, fake)
                except (TypeError, AttributeError):  # a C type: immutable
                    return
                self._undo.append(functools.partial(setattr, cls, key, value))
        elif kind == "cell":
            cell = site[1]
            try:
                value = cell.cell_contents
            except ValueError:
                return
            fake = self.fake_of(value)
            if fake is not None:
                cell.cell_contents = fake
                self._undo.append(functools.partial(_set_cell, cell, value))
        elif kind == "partial":
            self._partial(site[1])
        else:
            held = site[1]
            for key, value in list(held.items()):
                fake = self.fake_of(value)
                if fake is not None:
                    held[key] = fake
                    self._undo.append(functools.partial(held.__setitem__, key, value))
                elif isinstance(value, functools.partial):
                    self._partial(value)

    def _partial(self, value: Any) -> None:
        fake = self.fake_of(value.func)
        if fake is not None:
            held: Any = value  # partial.func is read-only; __setstate__ sets it
            state = held.__reduce__()[2]
            held.__setstate__((fake, *state[1:]))
            self._undo.append(functools.partial(held.__setstate__, state))


def _set_cell(cell: Any, value: Any) -> None:
    cell.cell_contents = value


_PATCHER: type | None = None
_ACTIVE: list[Interception] = []


@contextlib.contextmanager
def intercept(fs: FileSystem, *, root: str, seed: int = 0) -> Iterator[Interception]:
    """Route the standard library's file calls into ``fs`` while the block runs.

    Example::

        fs = RecordingFileSystem(MemoryFileSystem(dirs=("/base",)))
        with intercept(fs, root="/base", seed=0) as icpt:
            store = make_store("/base")      # unmodified code: open, os, pathlib ...
            store.save({"a": 1})
        fs.trace.ops                         # what the kernel would have seen
        icpt.unsupported, icpt.escapes       # what the model could not follow

    Args:
        fs: any :class:`~crashpoint.faultfs.FileSystem`.
        root: the target's base directory (absolute); also the working directory
            the target sees. Mutating calls outside it are listed in ``escapes``.
        seed: seeds tempfile's random names, ``os.getpid``, ``os.urandom``,
            ``random`` and ``time.time`` (FAULT-MODEL.md §4: a re-run issues the
            same trace).

    Raises:
        RuntimeError: an interception is already active (they do not nest).

    :class:`~crashpoint.faultfs.SimulatedCrash` raised by ``fs`` propagates out of
    the target unchanged. Modules of the harness (``crashpoint``, pluggy, xdist,
    coverage) keep the real ``os``; the packages it shares with targets (pytest,
    hypothesis, rich ...) get the fakes, which call the real functions when the
    harness called; import what the harness needs before entering, since a module
    first imported inside the block sees the fakes.
    """
    global _PATCHER
    if _ACTIVE:
        raise RuntimeError("crashpoint interception does not nest")
    icpt = Interception(fs, root=root, seed=seed)
    if _PATCHER is None:
        _PATCHER = _patcher_class()
    patcher_cls: Any = _PATCHER
    reals = {name: _import_real(name) for name in ("fcntl", "mmap", "sqlite3", "subprocess")}
    # the real modules a fake stands for are never patched themselves (pyfakefs skips
    # os, io, posixpath ...; a patched time.time would also be the harness's clock)
    patcher_cls.SKIPMODULES = patcher_cls.SKIPMODULES | {time, *filter(None, reals.values())}
    patcher_cls.fakes = {
        "os": icpt.os,
        "io": icpt.io,
        "time": icpt.time,
        "fcntl": _FakeFcntl(icpt, reals["fcntl"]),
        "mmap": _FakeMmap(icpt, reals["mmap"]),
        "sqlite3": _FakeSqlite3(icpt, reals["sqlite3"]),
        "subprocess": _FakeSubprocess(icpt, reals["subprocess"]),
    }
    editable = [n for n in list(sys.modules) if n.startswith(EDITABLE_PREFIX)]
    skip = [_SkipName(name) for name in (*HARNESS_PACKAGES, *HARNESS_MODULES, *editable)]
    saved_random = random.getstate()
    saved_tempdir = tempfile.tempdir
    saved_names = tempfile._name_sequence  # type: ignore[attr-defined]
    import shutil

    saved_shutil = (shutil._use_fd_functions, shutil._USE_CP_SENDFILE)  # type: ignore[attr-defined]
    saved_hook = sys.unraisablehook
    patcher = patcher_cls(
        additional_skip_names=skip, use_known_patches=False, use_cache=True, use_dynamic_patch=True
    )
    _ACTIVE.append(icpt)

    def hook(unraisable: Any) -> None:
        # A file object collected after the simulated machine stopped cannot flush.
        if not isinstance(unraisable.exc_value, SimulatedCrash):
            saved_hook(unraisable)

    try:
        random.seed(seed)
        tempfile.tempdir = "/tmp"
        shutil._use_fd_functions = False  # type: ignore[attr-defined]
        sys.unraisablehook = hook
        tempfile._name_sequence = icpt._names  # type: ignore[attr-defined]
        functions = _real_functions(patcher_cls.fakes)
        patcher_cls.real_ids = frozenset(functions)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            patcher.setUp()
        # pyfakefs forgets tempfile's directory (tempdir = None): a first mkstemp would
        # probe the candidates with a file of its own, and only in the first run
        tempfile.tempdir = "/tmp"
        reach = _Reach({**functions, **_real_modules(patcher_cls.fakes)})
        icpt._reach = reach
        reach.modules(patcher_cls.SKIPMODULES)
        try:
            yield icpt
        finally:
            reach.undo()
            dynamic = getattr(patcher, "_dyn_patcher", None)
            if dynamic is not None:
                # pyfakefs forgets modules first imported during the patch (so they are
                # patched afresh next time); the harness's own must stay (one copy of
                # each class). Their fake `os` routes the harness's calls to the real one.
                dynamic._loaded_module_names = {
                    n
                    for n in dynamic._loaded_module_names
                    if not (_is_harness_module(n) or _is_shared_module(n))
                }
            patcher.tearDown()
    finally:
        _ACTIVE.pop()
        random.setstate(saved_random)
        tempfile.tempdir = saved_tempdir
        tempfile._name_sequence = saved_names  # type: ignore[attr-defined]
        shutil._use_fd_functions, shutil._USE_CP_SENDFILE = saved_shutil  # type: ignore[attr-defined]
        sys.unraisablehook = saved_hook
        icpt.table = DescriptorTable(icpt.fs)

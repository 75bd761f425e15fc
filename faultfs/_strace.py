"""An ``strace`` log as an operation trace (FAULT-MODEL.md §1, §4; issue 13).

A program in any language is recorded by running it under stock ``strace``
(:func:`strace_argv`: ``-f`` follows children, ``-y`` decodes descriptors into
paths, ``-X raw`` prints flags as numbers, ``-xx -s`` prints every byte written).
:func:`parse_log` reads the log into :class:`Syscall` records (``<unfinished ...>``
and ``<... resumed>`` halves joined); :class:`StraceReplay` replays them, in the
order they completed, through a :class:`~crashpoint.faultfs.DescriptorTable`
over any :class:`~crashpoint.faultfs.FileSystem` (a ``RecordingFileSystem``
records them), keeping what happens under one real directory and mapping it to a
directory of the model. So the same program gives the same operation trace
intercepted in Python and recorded here.

What is not replayed is never dropped silently:

* a mutating call on a path outside the directory is an *escape* (S1), except
  under the stated ignore rule :data:`IGNORED_RULE` (devices that store nothing such as
  ``/dev/null`` and ``/dev/tty``, multiprocessing's semaphores ``/dev/shm/sem.*``,
  ``/proc``, ``/sys``, and interpreter caches: Python bytecode in ``__pycache__``,
  ``node-compile-cache``); an escape onto memory-backed storage (``/dev/shm``, any
  tmpfs) says so (:func:`memory_backed`);
* a call the model cannot represent on a file of the directory (``mmap`` shared and
  writable: the file is named in :attr:`StraceReplay.mapped`, unless the user declared it
  *volatile* (:func:`volatile_match`: content the program rebuilds after a crash and never
  trusts; every crash state then holds garbage in its place); ``msync``,
  ``copy_file_range``, ``sendfile``, ``splice``, ``fallocate``'s
  ``COLLAPSE_RANGE``/``INSERT_RANGE``/``UNSHARE_RANGE``, ``renameat2``'s
  ``RENAME_EXCHANGE``, ``io_uring_*``, an ``open`` that follows a symbolic link made in
  the directory, ``sync``, ``openat2`` ...) is *unsupported*, by name: the verdict is
  incomplete.

Replayed faithfully (issue 23; ``tests/exec/test_strace_replay.py`` compares each with
the kernel byte for byte): per-descriptor offsets (``lseek``'s answer; ``read``/``readv``
advance by their count, traced raw so no byte read is logged; ``pwrite64``/``pwritev``/
``pwritev2`` leave the offset, ``pwritev2`` at offset -1 moves it, ``RWF_APPEND`` and
``O_APPEND``, also set by ``fcntl(F_SETFL)``, write at the end), descriptors shared by
``dup``/``dup2``/``dup3``/``fcntl(F_DUPFD[_CLOEXEC])`` and by ``fork``, ``ftruncate``/
``truncate``, ``fallocate`` mode 0 (grows), ``KEEP_SIZE`` (nothing readable changes),
``PUNCH_HOLE`` and ``ZERO_RANGE`` (zeros), ``fdatasync`` distinct from ``fsync``,
``sync_file_range`` (no barrier: it promises no durability), ``rename``/``renameat2``
(``RENAME_NOREPLACE``), ``link``/``linkat``, ``rmdir`` (and ``unlinkat`` with
``AT_REMOVEDIR``), ``O_TMPFILE`` named by ``linkat`` (``AT_EMPTY_PATH`` or
``/proc/self/fd/N`` followed: a ``create`` and a ``write`` of its bytes), read-only
and private ``mmap`` (harmless), ``flock`` and ``fcntl`` record locks (lock events, no
effect on a crash state; one holder per file, released by unlock or the last close).
"""

from __future__ import annotations

import errno as _errno
import fnmatch
import os
import posixpath
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ._descriptors import DescriptorTable
from ._protocol import FileSystem, SymlinkFileSystem

__all__ = [
    "IGNORED_RULE",
    "OPEN_SYSCALLS",
    "TRACED_SYSCALLS",
    "StraceReplay",
    "Syscall",
    "check_volatile",
    "parse_log",
    "strace_argv",
    "strace_available",
    "volatile_match",
]

TRACED_SYSCALLS = (
    "open,openat,openat2,creat,write,pwrite64,writev,pwritev,pwritev2,lseek,read,readv,"
    "ftruncate,truncate,"
    "fsync,fdatasync,sync,syncfs,sync_file_range,rename,renameat,renameat2,unlink,unlinkat,"
    "rmdir,mkdir,mkdirat,link,linkat,symlink,symlinkat,close,close_range,dup,dup2,dup3,"
    "fcntl,clone,clone3,fork,vfork,execve,chdir,fchdir,mmap,msync,copy_file_range,sendfile,"
    "splice,fallocate,flock,io_uring_setup,io_uring_enter"
)
"""The system calls recorded (``strace -e trace=``): what the replay needs and nothing
else (``pread64``/``preadv`` move no offset and are not traced)."""

OPEN_SYSCALLS = "open,openat,openat2,creat"
"""The calls a read-only run is traced for (``verify --exec``'s loads): the files it
opened. A run that changed a file is traced again with :data:`TRACED_SYSCALLS`."""

INPUT_SYSCALLS = (
    "stat,lstat,newfstatat,statx,access,faccessat,faccessat2,readlink,readlinkat,"
    "getdents,getdents64"
)
"""The calls besides the opens by which a program learns what a directory holds without
opening a file: a name's existence, type or size, a link's target, a directory's names
(:attr:`StraceReplay.touched`)."""

LIGHT_SYSCALLS = OPEN_SYSCALLS + "," + INPUT_SYSCALLS + ",chdir,fchdir,clone,clone3,fork,vfork"
"""What a read-only load is traced for: its opens (A5), and every path it looked at
(:data:`INPUT_SYSCALLS`, resolved against each process's working directory): from them,
the bytes of a crash image its outcome can depend on (docs/decisions.md, "Loads that read
the same bytes")."""

_INPUT_CALLS = frozenset((*OPEN_SYSCALLS.split(","), *INPUT_SYSCALLS.split(",")))
_AT_CALLS = frozenset(
    ("openat", "openat2", "newfstatat", "statx", "faccessat", "faccessat2", "readlinkat")
)

RAW_SYSCALLS = "read,readv"
"""Calls printed raw (``-e raw=``): the replay needs only their descriptor and the count
returned (an offset moves), never the bytes read, which strace would print in hex."""

IGNORED_RULE = (
    "writes outside the directory to a device that stores nothing (/dev/null, /dev/zero, "
    "/dev/full, /dev/random, /dev/urandom, /dev/tty, /dev/console, /dev/ptmx, /dev/pts/*, "
    "/dev/stdin, /dev/stdout, /dev/stderr, /dev/fd/*), to multiprocessing's semaphores "
    "(/dev/shm/sem.*), under /proc or /sys, to Python bytecode (a .pyc file, or its "
    "temporary .pyc.N, in a __pycache__ directory) or under a node-compile-cache directory "
    "(interpreter caches), are ignored; any other write outside it, /dev/shm and every "
    "tmpfs included, is an escape (S1)"
)
"""The stated rule for what is not an escape (reports list it)."""

_IGNORED_PREFIXES = ("/proc/", "/sys/", "/dev/pts/", "/dev/fd/", "/dev/shm/sem.")
_DEVICE_NAMES = "null zero full random urandom tty console ptmx stdin stdout stderr"
_DEVICES = frozenset(f"/dev/{name}" for name in _DEVICE_NAMES.split(" "))
_MEMORY_FS = frozenset({"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"})


def ignored_path(real: str) -> bool:
    """``real`` (absolute, outside the directory) falls under :data:`IGNORED_RULE`."""
    return real in _DEVICES or real.startswith(_IGNORED_PREFIXES) or _interpreter_cache(real)


def memory_backed(real: str, mounts: str = "/proc/self/mounts") -> str | None:
    """The type of the memory-backed filesystem ``real`` lives on (``tmpfs``, ``ramfs``
    ...: its files are lost at a power loss or reboot), by the longest mount point of
    ``mounts`` (proc_pid_mounts(5)) holding it; None on any other filesystem."""
    best, kind = "", ""
    try:
        with open(mounts, encoding="utf-8", errors="replace") as f:
            rows = [line.split() for line in f]
    except OSError:
        return None
    for row in rows:
        if len(row) < 3:
            continue
        point = row[1].replace("\\040", " ")
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, row[2]
    return kind if kind in _MEMORY_FS else None


_CACHE_DIRS = ("__pycache__", "node-compile-cache")


def _interpreter_cache(real: str) -> bool:
    """``real`` is an interpreter's cache: a ``__pycache__`` or ``node-compile-cache``
    directory itself, Python bytecode in a ``__pycache__`` directory (``*.pyc``, or the
    ``*.pyc.N`` CPython writes first and renames), or anything under a
    ``node-compile-cache`` directory. Any other file under ``__pycache__`` is not (a
    store may not hide its data there)."""
    parts = real.split("/")
    name = parts[-1]
    if name in _CACHE_DIRS or "node-compile-cache" in parts[:-1]:
        return True
    if len(parts) < 2 or parts[-2] != "__pycache__":
        return False
    stem, _, tail = name.rpartition(".")
    return name.endswith(".pyc") or (tail.isdigit() and stem.endswith(".pyc"))


_CLONE_FILES = 0x400
_AT_REMOVEDIR = 0x200
_RENAME_EXCHANGE = 0x2
_F_DUPFD, _F_DUPFD_CLOEXEC = 0, 0x406
_PROT_WRITE, _MAP_SHARED = 0x2, 0x1
_F_SETFL, _F_SETLK, _F_SETLKW, _F_OFD_SETLK, _F_OFD_SETLKW = 4, 6, 7, 37, 38
_F_UNLCK = 2
_LOCK_SH, _LOCK_EX, _LOCK_UN = 1, 2, 8
_AT_SYMLINK_FOLLOW, _AT_EMPTY_PATH = 0x400, 0x1000
_O_TMPFILE = getattr(os, "O_TMPFILE", 0o20200000)

_RWF_APPEND = 0x10
# fallocate(2) modes
_FALLOC_KEEP_SIZE, _FALLOC_PUNCH_HOLE, _FALLOC_COLLAPSE_RANGE = 0x1, 0x2, 0x8
_FALLOC_ZERO_RANGE, _FALLOC_INSERT_RANGE, _FALLOC_UNSHARE_RANGE = 0x10, 0x20, 0x40
_PROC_FD = re.compile(r"^/proc/(?:self|thread-self|\d+)/fd/(\d+)$")


def check_volatile(globs: Sequence[str]) -> tuple[str, ...]:
    """``--volatile``'s globs, checked: each relative to the directory under test, not
    empty, without a ``..`` component. Returns them as a tuple (duplicates dropped).
    Raises ValueError (one line) naming a glob that is not so."""
    out: list[str] = []
    for glob in globs:
        if not glob or glob.startswith("/") or ".." in glob.split("/"):
            raise ValueError(
                f"--volatile {glob!r}: give a glob relative to the directory under test "
                "(db.sqlite-shm, *.lock), without '/' in front or '..'"
            )
        if glob not in out:
            out.append(glob)
    return tuple(out)


def volatile_match(globs: Sequence[str], rel: str) -> bool:
    """``rel`` (a path relative to the directory under test, ``/``-separated) matches one
    of ``globs`` (:func:`fnmatch.fnmatchcase`: ``*`` also matches ``/``; case counts)."""
    return any(fnmatch.fnmatchcase(rel, g) for g in globs)


def strace_available() -> str | None:
    """None when ``strace`` can trace here, else the reason (one line)."""
    if shutil.which("strace") is None:
        return "strace is not installed (apt-get install strace)"
    try:
        probe = subprocess.run(
            ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=close", "true"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"strace cannot run: {exc}"
    if probe.returncode != 0:
        return f"strace cannot trace here: {' '.join(probe.stderr.split())[:200]}"
    return None


def strace_argv(
    argv: Sequence[str],
    log: str,
    *,
    inject: str | None = None,
    trace: str | None = None,
    exits: bool = False,
) -> list[str]:
    """The command line that runs ``argv`` under strace, logging to ``log``.

    ``inject``: an ``-e inject=`` expression (``write:error=ENOSPC:when=3``); ``trace``:
    the calls traced (default :data:`TRACED_SYSCALLS`); ``exits``: log each tracee's end
    (``PID +++ exited with N +++``, which :func:`parse_log` skips: a reader of a live log
    knows a tracee's lines are all there). ``--seccomp-bpf`` stops the tracee only at the
    calls traced (the others run at full speed)."""
    cmd = [
        "strace",
        "-f",
        "-q" if exits else "-qq",
        "--seccomp-bpf",
        "-y",
        "-X",
        "raw",
        "-xx",
        "-s",
        "1000000000",
    ]
    cmd += ["-e", f"trace={trace or TRACED_SYSCALLS}", "-e", f"raw={RAW_SYSCALLS}"]
    if inject is not None:
        cmd += ["-e", f"inject={inject}"]
    return [*cmd, "-o", log, "--", *argv]


# --- parsing -----------------------------------------------------------------------


@dataclass(slots=True)
class Syscall:
    """One completed system call of the log.

    Attributes:
        pid: the tracee that made it.
        name: the system call (``openat``, ``pwrite64`` ...).
        args: the arguments as strace printed them (``-xx``: strings in hex).
        result: the return value (-1 when it failed; a descriptor, a pid, a count ...).
        result_path: ``-y``'s decoding of a returned descriptor, else "".
        error: the errno name it failed with ("" when it returned).
        injected: the failure was injected by ``-e inject`` (the kernel did nothing).
    """

    pid: int
    name: str
    args: str
    result: int
    result_path: str = ""
    error: str = ""
    injected: bool = False


_FORKS = ("clone", "clone3", "fork", "vfork")
_LOCK_CMDS = (_F_SETLK, _F_SETLKW, _F_OFD_SETLK, _F_OFD_SETLKW)
_HEAD = re.compile(r"^(\d+)\s+(.*)$")
_CALL = re.compile(r"^([a-z_0-9]+)\((.*)$", re.S)
_RESUMED = re.compile(r"^<\.\.\. ([a-z_0-9]+) resumed>(.*)$", re.S)
_RESULT = re.compile(r"\)\s+= (0x[0-9a-f]+|-?\d+|\?)(?:<([^>]*)>)?(?: ([A-Z0-9_]+))?(.*)$")


def parse_log(text: str | Iterable[str]) -> list[Syscall]:
    """The completed calls of an ``strace -f -y -X raw -xx`` log, in completion order.

    ``text``: the log, or its lines (an open file: read a line at a time, so a large log
    is never held twice)."""
    pending: dict[int, tuple[str, str]] = {}
    seen: set[int] = set()
    out: list[Syscall] = []
    lines = text.splitlines() if isinstance(text, str) else text
    for line in lines:
        line = line.rstrip("\n")
        m = _HEAD.match(line)
        if not m:
            continue
        pid, body = int(m.group(1)), m.group(2)
        if body.startswith(("+++", "---")):
            continue
        if pid not in seen:
            if seen:
                # a child printed before its parent's clone returned: say whose it is
                forks = [(p, a) for p, (n, a) in pending.items() if n in _FORKS]
                if forks:
                    parent, args = forks[-1]
                    out.append(Syscall(pid, "fork-of", args, parent))
            seen.add(pid)
        if body.endswith("<unfinished ...>"):
            c = _CALL.match(body)
            if c:
                pending[pid] = (c.group(1), c.group(2)[: -len("<unfinished ...>")].rstrip())
            continue
        r = _RESUMED.match(body)
        if r:
            name, rest = r.group(1), r.group(2)
            head = pending.pop(pid, (name, ""))[1]
            joined = head + (", " if head and not rest.startswith(")") else "") + rest.lstrip()
            body = f"{name}({joined}"
        c = _CALL.match(body)
        if not c:
            continue
        name, rest = c.group(1), c.group(2)
        cut = _last_result(rest)
        if cut is None:
            continue
        args, tail = rest[:cut], rest[cut:]
        res = _RESULT.match(tail)
        if res is None or res.group(1) == "?":
            continue
        value = int(res.group(1), 0)
        out.append(
            Syscall(
                pid,
                name,
                args,
                value,
                _hex(res.group(2)) if res.group(2) else "",
                res.group(3) or "",
                "(INJECTED)" in (res.group(4) or ""),
            )
        )
    return out


def _last_result(rest: str) -> int | None:
    i = rest.rfind(") = ")
    if i < 0:
        m = list(re.finditer(r"\)\s+= ", rest))
        return m[-1].start() if m else None
    return i


def _hex(text: str) -> str:
    """``\\x2f\\x74`` → ``/t`` (undecodable bytes kept as surrogates)."""
    if "\\x" not in text:
        return text
    try:
        return os.fsdecode(bytes.fromhex(text.replace("\\x", "")))
    except ValueError:
        return text


def split_args(args: str) -> list[str]:
    """Top-level comma-separated arguments (brackets, braces and quotes respected).

    Jumps from one bracket, comma or quote to the next; a quoted string (``-xx`` prints
    every byte as ``\\xNN``: no quote inside) is skipped whole, so a write's data is never
    walked a character at a time."""
    out: list[str] = []
    depth, start, pos = 0, 0, 0
    search = _SPECIAL.search
    while (m := search(args, pos)) is not None:
        i = m.start()
        ch = args[i]
        if ch == '"':
            end = args.find('"', i + 1)
            if end < 0:
                break  # unterminated: the rest is quoted
            pos = end + 1
            continue
        if ch in "[{<(":
            depth += 1
        elif ch in "]}>)":
            depth -= 1
        elif depth == 0:
            out.append(args[start:i].strip())
            start = i + 1
        pos = i + 1
    tail = args[start:].strip()
    if tail:
        out.append(tail)
    return out


_SPECIAL = re.compile(r'["\[\]{}<>(),]')


_FD = re.compile(r"^(-?\d+)(?:<(.*)>)?(?:\s*\(deleted\))?$", re.S)
_STR = re.compile(r'"((?:\\x[0-9a-f]{2})*)"')


def _fd(arg: str) -> tuple[int, str]:
    """``3<\\x2f..>`` → (3, path); the path is "" when not decoded."""
    m = _FD.match(arg)
    if m is None:
        return -1, ""
    return int(m.group(1)), _hex(m.group(2)) if m.group(2) else ""


def _bytes(arg: str) -> bytes:
    return b"".join(bytes.fromhex(s.replace("\\x", "")) for s in _STR.findall(arg))


def _int(arg: str) -> int:
    try:
        return int(arg.split("<", 1)[0], 0)
    except ValueError:
        return 0


def _str(arg: str) -> str:
    m = _STR.search(arg)
    return os.fsdecode(bytes.fromhex(m.group(1).replace("\\x", ""))) if m else ""


# --- replay ------------------------------------------------------------------------


@dataclass(slots=True)
class _Fd:
    tfd: int | None  # the table's descriptor, None for a file outside the directory
    cloexec: bool = False


@dataclass(slots=True)
class _Proc:
    fds: dict[int, _Fd]
    cwd: str


@dataclass(slots=True)
class Source:
    """The system call an operation came from: ``pid``'s ``nth`` call (1-based) of ``name``."""

    pid: int
    name: str
    nth: int


@dataclass(slots=True)
class StraceReplay:
    """Replays system calls of one run into ``fs`` (see the module docstring).

    Args:
        fs: where the operations go (a ``RecordingFileSystem`` records them).
        real_root: the real directory the program was given (absolute, resolved).
        model_root: the directory of ``fs`` it stands for.
        cwd: the working directory the program started in.

    Attributes:
        escapes: mutating calls outside the directory (S1), rendered.
        unsupported: calls the model cannot represent, by name (``copy_file_range``).
        ignored: paths left alone by :data:`IGNORED_RULE`.
        reads: model paths opened for reading.
        sources: for each operation recorded, the call it came from (fault targeting).
        counts: ``(pid, name)`` → calls of ``name`` made by ``pid`` so far.
        mismatched: calls the model refused although the kernel did them (the model
            and the real directory disagree: the trace after them is not exact).
        mapped: model paths of files mapped shared and writable (``mmap``): stores to
            them reach the file with no system call (the report marks them).
        volatile: globs, relative to ``model_root``, of the files the user declared
            volatile (:func:`volatile_match`): a shared writable mapping of one is not
            unsupported (the caller puts garbage in its place in every crash state).
        volatile_mapped: the model paths of :attr:`mapped` that are volatile.
        touched: model paths the program opened or looked at (:data:`INPUT_SYSCALLS`),
            whether or not they existed, each True when it listed the directory there
            (``getdents``): with the bytes of each file and the names of each listed
            directory, all a deterministic read-only run's outcome can depend on in the
            directory. Complete only when the trace had :data:`LIGHT_SYSCALLS` (or more).
    """

    fs: FileSystem
    real_root: str
    model_root: str
    cwd: str
    escapes: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    sources: list[Source] = field(default_factory=list)
    counts: dict[tuple[int, str], int] = field(default_factory=dict)
    mismatched: list[str] = field(default_factory=list)
    mapped: list[str] = field(default_factory=list)
    volatile: tuple[str, ...] = ()
    volatile_mapped: list[str] = field(default_factory=list)
    touched: dict[str, bool] = field(default_factory=dict)
    _locks: dict[str, int] = field(default_factory=dict)
    _symlinks: dict[str, str] = field(default_factory=dict)  # model path -> real path
    _synced: dict[int, str] = field(default_factory=dict)  # tfd -> "fsync"/"fdatasync"
    _procs: dict[int, _Proc] = field(default_factory=dict)
    _table: DescriptorTable | None = None

    def __post_init__(self) -> None:
        self._table = DescriptorTable(self.fs)

    # --- paths -------------------------------------------------------------------
    def model_path(self, real: str) -> str | None:
        """The model path of a real path under the directory, else None."""
        root = self.real_root
        if real == root:
            return self.model_root
        if real.startswith(root + "/"):
            return self.model_root + real[len(root) :]
        return None

    def is_volatile(self, mpath: str) -> bool:
        """The model path ``mpath`` is a file declared volatile (:attr:`volatile`)."""
        root = self.model_root.rstrip("/") + "/"
        return bool(self.volatile) and (
            mpath.startswith(root) and volatile_match(self.volatile, mpath[len(root) :])
        )

    def _resolve(self, proc: _Proc, base: str, path: str) -> str:
        if not path.startswith("/"):
            path = posixpath.join(base or proc.cwd, path)
        return posixpath.normpath(path)

    def _outside(self, call: str, real: str) -> None:
        if ignored_path(real):
            if real not in self.ignored:
                self.ignored.append(real)
            return
        what = f"{call}({real})"
        memory = memory_backed(real)
        if memory is not None:
            what += f" (memory-backed storage, {memory}: lost at a power loss or reboot)"
        if what not in self.escapes:
            self.escapes.append(what)

    def _unsupported(self, name: str, detail: str = "") -> None:
        text = f"{name} ({detail})" if detail else name
        if text not in self.unsupported:
            self.unsupported.append(text)

    def _proc(self, pid: int) -> _Proc:
        proc = self._procs.get(pid)
        if proc is None:
            proc = self._procs[pid] = _Proc({}, self.cwd)
        return proc

    def _fork(self, parent: _Proc, *, share: bool) -> _Proc:
        if share:
            return _Proc(parent.fds, parent.cwd)
        table = self._tab
        fds = {
            fd: _Fd(table.dup(e.tfd) if e.tfd is not None else None, e.cloexec)
            for fd, e in parent.fds.items()
        }
        return _Proc(fds, parent.cwd)

    @property
    def _tab(self) -> DescriptorTable:
        assert self._table is not None
        return self._table

    # --- feeding -----------------------------------------------------------------
    def feed(self, calls: Iterable[Syscall]) -> None:
        """Replay ``calls`` in order."""
        for call in calls:
            key = (call.pid, call.name)
            self.counts[key] = self.counts.get(key, 0) + 1
            if call.name in _FORKS:
                self._clone(call.pid, call.result, call.args)
                continue
            if call.name == "fork-of":
                self._clone(call.result, call.pid, call.args)
                continue
            if call.name in _INPUT_CALLS:
                self._touch(call)
            if call.result < 0 and not call.injected:
                continue
            before = self._ops()
            try:
                self._one(call)
            except OSError as exc:
                if not call.injected:
                    self.mismatched.append(f"{call.name} by pid {call.pid}: the model raised {exc}")
            for _ in range(self._ops() - before):
                self.sources.append(Source(call.pid, call.name, self.counts[key]))

    def _touch(self, c: Syscall) -> None:
        """Note the path ``c`` opened or looked at in :attr:`touched` (failed or not)."""
        a = split_args(c.args)
        if not a:
            return
        proc = self._proc(c.pid)
        if c.name in ("getdents", "getdents64"):
            mpath = self.model_path(_fd(a[0])[1])
            if mpath is not None:
                self.touched[mpath] = True
            return
        if c.name in _AT_CALLS:
            if len(a) < 2:
                return
            base, path = _fd(a[0])[1], _str(a[1])
        else:
            base, path = "", _str(a[0])
        mpath = self.model_path(self._resolve(proc, base, path))
        if mpath is not None:
            self.touched.setdefault(mpath, False)

    def _ops(self) -> int:
        count = getattr(self.fs, "op_count", None)
        return int(count) if count is not None else 0

    def _clone(self, parent_pid: int, child: int, args: str) -> None:
        parent = self._proc(parent_pid)
        if child <= 0 or child in self._procs:
            return  # failed, or the child already appeared (its lines came first)
        m = re.search(r"flags=(0x[0-9a-f]+|\d+)", args)
        flags = int(m.group(1), 0) if m else 0
        self._procs[child] = self._fork(parent, share=bool(flags & _CLONE_FILES))

    def _one(self, c: Syscall) -> None:
        proc = self._proc(c.pid)
        a = split_args(c.args)
        name = c.name
        tab = self._tab
        if name in ("open", "openat", "creat"):
            if name == "openat":
                base, path, flags = _fd(a[0])[1], _str(a[1]), _int(a[2])
            elif name == "open":
                base, path, flags = "", _str(a[0]), _int(a[1])
            else:
                base, path, flags = "", _str(a[0]), os.O_CREAT | os.O_WRONLY | os.O_TRUNC
            if base == "" and name == "openat":
                base = proc.cwd
            real = c.result_path or self._resolve(proc, base, path)
            if not c.result_path:
                real = self._resolve(proc, base, path)
            cloexec = bool(flags & os.O_CLOEXEC)
            if flags & _O_TMPFILE == _O_TMPFILE:
                self._tmpfile(proc, c, self._resolve(proc, base, path), flags, cloexec)
                return
            mpath = self.model_path(real)
            if self._symlinks:
                asked = self.model_path(self._resolve(proc, base, path))
                if asked in self._symlinks:  # (strace's -y shows the file it resolved to)
                    self._unsupported(name, f"it follows the symbolic link {asked}")
                    return
            if mpath is None:
                if flags & (os.O_CREAT | os.O_TRUNC):
                    self._outside(name, real)
                if c.result >= 0:
                    self._set(proc, c.result, _Fd(None, cloexec))
                return
            if flags & os.O_ACCMODE in (os.O_RDONLY, os.O_RDWR) and mpath not in self.reads:
                self.reads.append(mpath)
            if flags & os.O_ACCMODE == os.O_RDONLY and not flags & (os.O_CREAT | os.O_TRUNC):
                # a read-only open changes nothing; the table tracks it for fsync
                tfd = tab.open(mpath, flags) if self.fs.exists(mpath) else None
            else:
                tfd = tab.open(mpath, flags)
            if tfd is not None:
                # O_SYNC / O_DSYNC: each write is durable on return, as if followed by
                # fsync / fdatasync (open(2); liblmdb writes its meta page so)
                self._synced.pop(tfd, None)
                if flags & os.O_SYNC == os.O_SYNC:
                    self._synced[tfd] = "fsync"
                elif flags & os.O_DSYNC:
                    self._synced[tfd] = "fdatasync"
            if c.result >= 0:
                self._set(proc, c.result, _Fd(tfd, cloexec))
            return
        if name == "openat2":
            fd_dir, path = _fd(a[0])[1], _str(a[1])
            real = c.result_path or self._resolve(proc, fd_dir, path)
            if self.model_path(real) is not None:
                self._unsupported("openat2", real)
            return
        if name in ("write", "pwrite64", "writev", "pwritev", "pwritev2"):
            fd, real = _fd(a[0])
            entry = proc.fds.get(fd)
            data = _bytes(a[1])[: max(c.result, 0)] if not c.injected else _bytes(a[1])
            if entry is None or entry.tfd is None:
                self._untracked(name, real)
                return
            if name == "pwritev2" and _int(a[4]) & _RWF_APPEND:
                tab.pwrite(entry.tfd, data, tab.size(entry.tfd))
            elif name in ("write", "writev") or (name == "pwritev2" and _int(a[3]) == -1):
                tab.write(entry.tfd, data)  # (pwritev2 at offset -1: the file offset, moved)
            else:
                tab.pwrite(entry.tfd, data, _int(a[3]))
            synced = self._synced.get(entry.tfd)
            if synced == "fsync":
                tab.fsync(entry.tfd)
            elif synced == "fdatasync":
                tab.fdatasync(entry.tfd)
            return
        if name in ("lseek", "read", "readv"):
            # the kernel's answer is the offset (lseek) or how far it moved (reads)
            entry = proc.fds.get(_int(a[0]) if name != "lseek" else _fd(a[0])[0])
            if entry is not None and entry.tfd is not None and entry.tfd in tab:
                d = tab.get(entry.tfd)
                d.pos = c.result if name == "lseek" else d.pos + c.result
            return
        if name == "flock" or (name == "fcntl" and _int(a[1]) in _LOCK_CMDS):
            self._lock(proc, c, a)
            return
        if name == "ftruncate":
            fd, real = _fd(a[0])
            entry = proc.fds.get(fd)
            if entry is None or entry.tfd is None:
                self._untracked(name, real)
                return
            tab.ftruncate(entry.tfd, _int(a[1]))
            return
        if name in ("fsync", "fdatasync"):
            fd, real = _fd(a[0])
            entry = proc.fds.get(fd)
            if entry is None or entry.tfd is None:
                if self.model_path(real) is not None:
                    self._unsupported(name, "on a descriptor not opened in the trace")
                return
            if name == "fsync":
                tab.fsync(entry.tfd)
            else:
                tab.fdatasync(entry.tfd)
            return
        if name == "close":
            self._close(proc, _fd(a[0])[0])
            return
        if name == "close_range":
            first, last = _int(a[0]), _int(a[1])
            if _int(a[2]) & 0x4:  # CLOSE_RANGE_CLOEXEC
                for fd, e in proc.fds.items():
                    if first <= fd <= last:
                        e.cloexec = True
                return
            for fd in [fd for fd in proc.fds if first <= fd <= last]:
                self._close(proc, fd)
            return
        if name in ("dup", "dup2", "dup3", "fcntl"):
            old = _fd(a[0])[0]
            if name == "fcntl":
                cmd = _int(a[1])
                if cmd == _F_SETFL:
                    entry = proc.fds.get(old)
                    if entry is not None and entry.tfd is not None and entry.tfd in tab:
                        tab.get(entry.tfd).append = bool(_int(a[2]) & os.O_APPEND)
                    return
                if cmd not in (_F_DUPFD, _F_DUPFD_CLOEXEC):
                    return
                cloexec = cmd == _F_DUPFD_CLOEXEC
            else:
                cloexec = name == "dup3" and bool(_int(a[2]) & os.O_CLOEXEC)
            new = c.result
            if old == new:
                return
            self._close(proc, new)
            entry = proc.fds.get(old)
            if entry is not None:
                tfd = tab.dup(entry.tfd) if entry.tfd is not None else None
                self._set(proc, new, _Fd(tfd, cloexec))
            return
        if name == "execve":
            for fd in [fd for fd, e in proc.fds.items() if e.cloexec]:
                self._close(proc, fd)
            return
        if name == "chdir":
            proc.cwd = self._resolve(proc, "", _str(a[0]))
            return
        if name == "fchdir":
            proc.cwd = _fd(a[0])[1] or proc.cwd
            return
        if name in ("rename", "renameat", "renameat2"):
            if name == "rename":
                src = self._resolve(proc, "", _str(a[0]))
                dst = self._resolve(proc, "", _str(a[1]))
            else:
                src = self._resolve(proc, _fd(a[0])[1], _str(a[1]))
                dst = self._resolve(proc, _fd(a[2])[1], _str(a[3]))
                if name == "renameat2" and _int(a[4]) & _RENAME_EXCHANGE:
                    # two names swapped in one step: the model has no such operation (three
                    # renames through a third name would show crash states no disk has)
                    if self.model_path(src) or self.model_path(dst):
                        self._unsupported("renameat2", "RENAME_EXCHANGE")
                    return
                # RENAME_NOREPLACE: the call succeeded, so nothing was at dst: a rename
            msrc, mdst = self.model_path(src), self.model_path(dst)
            if msrc is None or mdst is None:
                if msrc is None:
                    self._outside(name, src)
                if mdst is None:
                    self._outside(name, dst)
                if msrc is not None or mdst is not None:
                    self._unsupported(name, "across the directory's boundary")
                return
            tab.rename(msrc, mdst)
            self._symlinks.pop(mdst, None)
            if msrc in self._symlinks:
                self._symlinks[mdst] = self._symlinks.pop(msrc)
            return
        if name in ("unlink", "unlinkat", "rmdir"):
            if name == "unlinkat":
                real = self._resolve(proc, _fd(a[0])[1], _str(a[1]))
                rmdir = bool(_int(a[2]) & _AT_REMOVEDIR)
            else:
                real = self._resolve(proc, "", _str(a[0]))
                rmdir = name == "rmdir"
            mpath = self.model_path(real)
            if mpath is None:
                self._outside(name, real)
            elif rmdir:
                tab.rmdir(mpath)
            else:
                tab.unlink(mpath)
                self._symlinks.pop(mpath, None)
            return
        if name in ("mkdir", "mkdirat"):
            if name == "mkdirat":
                real = self._resolve(proc, _fd(a[0])[1], _str(a[1]))
            else:
                real = self._resolve(proc, "", _str(a[0]))
            mpath = self.model_path(real)
            if mpath is None:
                self._outside(name, real)
            else:
                self.fs.mkdir(mpath)
            return
        if name == "truncate":
            real = self._resolve(proc, "", _str(a[0]))
            mpath = self.model_path(real)
            if mpath is None:
                self._outside(name, real)
            else:
                self.fs.truncate(mpath, _int(a[1]))
            return
        if name in ("link", "linkat"):
            if name == "linkat":
                src = self._resolve(proc, _fd(a[0])[1], _str(a[1]))
                dst = self._resolve(proc, _fd(a[2])[1], _str(a[3]))
                at = _int(a[4])
                by_fd = _fd(a[0])[0] if at & _AT_EMPTY_PATH and not _str(a[1]) else None
            else:
                src = self._resolve(proc, "", _str(a[0]))
                dst = self._resolve(proc, "", _str(a[1]))
                at, by_fd = 0, None
            m = _PROC_FD.match(src)
            if m is not None and (at & _AT_SYMLINK_FOLLOW):
                by_fd = int(m.group(1))  # the file behind the descriptor, not the symlink
            if by_fd is not None:
                self._link_fd(proc, name, by_fd, dst)
                return
            msrc, mdst = self.model_path(src), self.model_path(dst)
            if mdst is None:
                self._outside(name, dst)
                if msrc is not None:
                    self._unsupported(name, "across the directory's boundary")
            elif msrc is None:
                self._unsupported(name, "of a file outside the directory")
            else:
                tab.link(msrc, mdst)
            return
        if name in ("symlink", "symlinkat"):
            if name == "symlinkat":
                real = self._resolve(proc, _fd(a[1])[1], _str(a[2]))
            else:
                real = self._resolve(proc, "", _str(a[1]))
            mpath = self.model_path(real)
            if mpath is None:
                self._outside(name, real)
            elif not isinstance(self.fs, SymlinkFileSystem):
                self._unsupported(name, f"the filesystem has no symbolic links: {mpath}")
            else:
                # name and target in one step (Mercurial's lock "host:pid", git's
                # core.symlinks probe); an open that follows it is unsupported (above)
                self.fs.symlink(os.fsencode(_str(a[0])), mpath)
                self._symlinks[mpath] = real
            return
        if name in ("sync", "syncfs"):
            self._unsupported(name, "a whole-filesystem flush")
            return
        if name in ("io_uring_setup", "io_uring_enter"):
            self._unsupported(name, "asynchronous I/O the trace cannot see")
            return
        if name == "mmap":
            prot, flags = _int(a[2]), _int(a[3])
            real = _fd(a[4])[1]
            mpath = self.model_path(real)
            if prot & _PROT_WRITE and flags & _MAP_SHARED and mpath is not None:
                # its stores reach the file with no system call: the trace cannot see them
                if mpath not in self.mapped:
                    self.mapped.append(mpath)
                if self.is_volatile(mpath):
                    # declared volatile: what the stores leave is never read back as data
                    # (the crash states hold garbage in its place), so nothing is lost
                    if mpath not in self.volatile_mapped:
                        self.volatile_mapped.append(mpath)
                    return
                self._unsupported("mmap", f"a shared writable mapping of {mpath}")
            return  # a read-only or private mapping changes no file
        if name == "fallocate":
            self._fallocate(proc, a)
            return
        if name == "sync_file_range":
            return  # starts writeback, promises no durability (sync_file_range(2)): no barrier
        if name == "msync":
            if self._mapped():
                self._unsupported("msync")
            return
        if name in ("copy_file_range", "sendfile", "splice"):
            out_arg = {"copy_file_range": 2, "sendfile": 0, "splice": 2}[name]
            real = _fd(a[out_arg])[1]
            if self.model_path(real) is not None:
                self._unsupported(name, "on a file of the directory")
            elif real.startswith("/"):
                self._outside(name, real)
            return

    def _entry(self, proc: _Proc, fd: int) -> int | None:
        """The table's descriptor behind the program's ``fd`` (None: not in the directory,
        or not opened in the trace)."""
        entry = proc.fds.get(fd)
        if entry is None or entry.tfd is None or entry.tfd not in self._tab:
            return None
        return entry.tfd

    def _tmpfile(self, proc: _Proc, c: Syscall, real_dir: str, flags: int, cloexec: bool) -> None:
        """``open(dir, O_TMPFILE)``: an unnamed file in the directory (named by ``linkat``)."""
        mdir = self.model_path(real_dir)
        if mdir is None:
            self._outside(c.name, real_dir + " (O_TMPFILE)")
            if c.result >= 0:
                self._set(proc, c.result, _Fd(None, cloexec))
            return
        tfd = self._tab.open_tmpfile(mdir, flags)
        if c.result >= 0:
            self._set(proc, c.result, _Fd(tfd, cloexec))

    def _link_fd(self, proc: _Proc, name: str, fd: int, dst: str) -> None:
        """``linkat`` of a descriptor (``AT_EMPTY_PATH``, or ``/proc/self/fd/N`` followed)."""
        mdst = self.model_path(dst)
        tfd = self._entry(proc, fd)
        if mdst is None:
            self._outside(name, dst)
            if tfd is not None:
                self._unsupported(name, "across the directory's boundary")
            return
        if tfd is None:
            self._unsupported(name, "of a descriptor not opened in the trace, or outside it")
            return
        self._tab.link_fd(tfd, mdst)

    def _lock(self, proc: _Proc, c: Syscall, a: list[str]) -> None:
        """``flock`` or an ``fcntl`` record lock: a lock event (no effect on any crash
        state; FAULT-MODEL.md §1), one holder per file in the replay."""
        tfd = self._entry(proc, _fd(a[0])[0])
        if tfd is None or not self._tab.path(tfd):
            return
        path = self._tab.path(tfd)
        if c.name == "flock":
            op = _int(a[1])
            release, take = bool(op & _LOCK_UN), bool(op & (_LOCK_SH | _LOCK_EX))
        else:
            m = re.search(r"l_type=(0x[0-9a-f]+|\d+)", a[2] if len(a) > 2 else "")
            kind = int(m.group(1), 0) if m else _F_UNLCK
            release, take = kind == _F_UNLCK, kind != _F_UNLCK
        held = self._locks.get(path)
        if release and held is not None:
            del self._locks[path]
            self.fs.unlock(path, held)
        elif take and not release and held is None:
            self._locks[path] = self.fs.lock(path, 0.0)

    def _fallocate(self, proc: _Proc, a: list[str]) -> None:
        """``fallocate(fd, mode, offset, len)``: its effect on the file's bytes and size.
        Mode 0 grows the file (zeros); ``KEEP_SIZE`` alone changes nothing readable;
        ``PUNCH_HOLE`` and ``ZERO_RANGE`` read back as zeros (``ZERO_RANGE`` grows the
        file unless ``KEEP_SIZE``); ``COLLAPSE_RANGE``, ``INSERT_RANGE`` and
        ``UNSHARE_RANGE`` are named unsupported."""
        fd, real = _fd(a[0])
        tfd = self._entry(proc, fd)
        if tfd is None:
            self._untracked("fallocate", real)
            return
        mode, offset, length = _int(a[1]), _int(a[2]), _int(a[3])
        tab = self._tab
        odd = mode & (_FALLOC_COLLAPSE_RANGE | _FALLOC_INSERT_RANGE | _FALLOC_UNSHARE_RANGE)
        if odd:
            names = {
                _FALLOC_COLLAPSE_RANGE: "FALLOC_FL_COLLAPSE_RANGE",
                _FALLOC_INSERT_RANGE: "FALLOC_FL_INSERT_RANGE",
                _FALLOC_UNSHARE_RANGE: "FALLOC_FL_UNSHARE_RANGE",
            }
            self._unsupported("fallocate", " ".join(n for b, n in names.items() if odd & b))
            return
        size, end = tab.size(tfd), offset + length
        keep = bool(mode & _FALLOC_KEEP_SIZE)
        if mode & (_FALLOC_PUNCH_HOLE | _FALLOC_ZERO_RANGE):
            stop = min(end, size) if keep or mode & _FALLOC_PUNCH_HOLE else end
            if stop > offset:
                tab.zero_range(tfd, offset, stop - offset)
            return
        if not keep and end > size:
            tab.ftruncate(tfd, end)

    def _mapped(self) -> bool:
        return any(u.startswith("mmap") for u in self.unsupported)

    def _untracked(self, name: str, real: str) -> None:
        if self.model_path(real) is not None:
            self._unsupported(name, "on a descriptor not opened in the trace")
        elif real.startswith("/") and not real.endswith(" (deleted)"):
            self._outside(name, real)

    def _set(self, proc: _Proc, fd: int, entry: _Fd) -> None:
        self._close(proc, fd)
        proc.fds[fd] = entry

    def _close(self, proc: _Proc, fd: int) -> None:
        entry = proc.fds.pop(fd, None)
        if entry is not None and entry.tfd is not None and entry.tfd in self._tab:
            tab = self._tab
            d = tab.get(entry.tfd)
            tab.close(entry.tfd)
            held = self._locks.get(d.path)
            if d.refs == 0 and held is not None and d.orphan is None:
                del self._locks[d.path]  # the last descriptor's close releases its lock
                self.fs.unlock(d.path, held)


def errno_name(code: int) -> str:
    """``28`` → ``ENOSPC``."""
    return _errno.errorcode.get(code, str(code))

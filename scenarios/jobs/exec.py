"""``verify --exec``: a storage in any language, recorded through ``strace`` (issue 13).

The document kind (SPEC.md §10) with commands instead of a Python factory::

    crashpoint verify --exec --save 'node save.js {dir} {value}' --load 'node load.js {dir}'

``--save`` stores the JSON value of the file ``{value}`` into ``{dir}``; ``--load``
prints the value loaded from ``{dir}`` as JSON on standard output, or exits non-zero
when it cannot load. Commands are split like a shell (``shlex``) and run without one;
``{dir}`` and ``{value}`` are replaced inside each word (write ``sh -c '…'`` for
redirections).

Recording: each save runs on a fresh real directory holding the model's current files,
under ``strace`` (:func:`crashpoint.faultfs._strace.strace_argv`); the log is
replayed into the recording filesystem (:class:`~crashpoint.faultfs._strace.StraceReplay`),
so the operation trace, the crash states and the judging are the document kind's own
(:class:`~crashpoint.scenarios.kinds.document.kind.DocumentKind`, not a copy). Checking: every
distinct crash state is written into a fresh real directory and the load command runs
on it, one process per state, ``jobs`` at a time; loads run under strace too, so the
files they read (A5) and write (A3) are known. Faults: the call that made operation
``k`` is found in the clean recording and the save is re-run with
``strace -e inject=CALL:error=E:when=N``; strace counts calls per tracee, so a fault
whose call another tracee also made ``N`` times cannot be targeted and is reported
(verdict incomplete), never guessed.

Containment (issue 21): every command runs in a PID namespace of its own where the
machine allows, else in a process group found again by a reaper (:func:`run_process`):
nothing it starts outlives it, its timeout or crashpoint; its output and strace log are
read with a deadline and capped (``max_output``).

Errors: :class:`~crashpoint.scenarios.targets.user.BadTarget` (no strace, a command
without its placeholders, a clean save that fails: exit 2), :class:`OutputTooLarge` (a
BadTarget: a command printed, or logged, more than ``max_output`` bytes) and
:class:`~crashpoint.scenarios.targets.user.TargetTimeout` (a command ran past
``timeout`` seconds: it is killed, exit 2).
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import dataclasses
import errno
import hashlib
import json
import os
import selectors
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...core import AgentState, ErrorCode, Retryability, StateError, decode, encode
from ...faultfs import (
    CrashPoint,
    CrashState,
    Fault,
    FaultKind,
    MemoryFileSystem,
    PersistenceModel,
    RecordingFileSystem,
    crash_points,
    symlink_content,
    symlink_target,
)
from ...faultfs._fresh import tempfile_probe
from ...faultfs._strace import (
    IGNORED_RULE,
    INPUT_SYSCALLS,
    LIGHT_SYSCALLS,
    OPEN_SYSCALLS,
    TRACED_SYSCALLS,
    Source,
    StraceReplay,
    Syscall,
    _bytes,
    _fd,
    _str,
    check_volatile,
    errno_name,
    parse_log,
    split_args,
    strace_argv,
    strace_available,
    volatile_match,
)
from ..engine.explore import EngineResult, Run, explore_kind, fault_spec
from ..kinds.agent.checkers import observe
from ..kinds.agent.kind import explore_agent, record
from ..kinds.agent.targets import Target
from ..kinds.agent.workload import BASE_DIR
from ..kinds.document.kind import (
    BASIC_WORKLOADS,
    DOC_BASE,
    PROBE_WORKLOAD,
    DocObservation,
    DocumentKind,
    DocWorkload,
    _error,
)
from ..kinds.state_storage.conformance import _preflight as _preflight_storage
from ..kinds.state_storage.conformance import run_conformance, selected_workloads
from ..targets import strace_driver
from ..targets.user import BadTarget, Runner, TargetTimeout
from .verdict import VerifyResult
from .verify import _preflight, _verify_workload

T = TypeVar("T")

__all__ = [
    "EXEC_FAULT_ERRNOS",
    "MAX_OUTPUT",
    "ExecCommands",
    "ExecDocumentKind",
    "ExecRunner",
    "LoadExit",
    "LoadOutput",
    "OutputTooLarge",
    "SaveExit",
    "exec_fault_plan",
    "render_argv",
    "run_process",
    "verify_exec",
]

EXEC_FAULT_ERRNOS = ("ENOSPC", "EIO", "EDQUOT", "EROFS")
"""The errors ``--faults`` injects at each mutating call (``strace -e inject``)."""


class SaveExit(Exception):
    """The save command exited non-zero (``exit status N: <stderr's last line>``)."""


class LoadExit(Exception):
    """The load command exited non-zero: it could not load."""


class LoadOutput(Exception):
    """The load command exited 0 but its output is not one JSON value."""


def render_argv(template: str, **subs: str) -> list[str]:
    """``template`` split like a shell, each ``{name}`` replaced inside every word.

    Raises BadTarget when a placeholder of ``subs`` is missing or the template is
    not splittable."""
    try:
        words = shlex.split(template)
    except ValueError as exc:
        raise BadTarget(f"command {template!r}: {exc}") from None
    if not words:
        raise BadTarget("an empty command")
    for name in subs:
        if not any("{" + name + "}" in w for w in words):
            raise BadTarget(f"command {template!r} has no {{{name}}}")
    out = []
    for w in words:
        for name, value in subs.items():
            w = w.replace("{" + name + "}", value)
        out.append(w)
    return out


MAX_OUTPUT = 128 * 2**20
"""``--max-output``'s default (bytes): the most one command may print on standard output or
standard error, and the most its strace log may hold (128 MiB: a storage engine's save
writing 30 MB of pages logs about 120 MB in strace's hex)."""

GRACE = 2.0
"""Seconds a command's output is still read after its process exited and everything it
left running was killed (the pipes' last bytes); then the pipes are closed."""


class OutputTooLarge(BadTarget):
    """A command printed more than ``limit`` bytes on ``stream`` (``stdout``, ``stderr``,
    or ``strace log``): it is killed, the run stops (exit 2). Attributes: ``label``,
    ``stream``, ``limit``, ``size`` (bytes seen when it was stopped)."""

    def __init__(self, label: str, stream: str, limit: int, size: int) -> None:
        super().__init__(
            f"{label}: its {stream} passed --max-output {limit} bytes ({size} bytes when "
            "it was stopped); raise --max-output if that much is expected"
        )
        self.label, self.stream, self.limit, self.size = label, stream, limit, size


_LIVE: dict[int, str] = {}
"""The commands :func:`run_process` started that are still running: the pid of each
(its process group) and the token in its environment (:func:`_reap`)."""
_LIVE_LOCK = threading.RLock()  # reentrant: a signal handler may run in a thread holding it
_STOPPING = threading.Event()
_TOKEN = "CRASHPOINT_EXEC_TOKEN"
_NAMESPACE: list[bool] = []  # [whether a PID namespace can be made here], once probed


def pid_namespace() -> bool:
    """Whether commands run in a PID namespace of their own here (``unshare --pid --fork
    --kill-child``, util-linux; root or user namespaces): when its first process exits or
    is killed, the kernel kills every other process in it, a ``setsid`` daemon included
    (pid_namespaces(7)). Probed once."""
    if not _NAMESPACE:
        _NAMESPACE.append(shutil.which("unshare") is not None and _runs([*_UNSHARE, "true"]))
    return _NAMESPACE[0]


def _runs(argv: list[str]) -> bool:
    """Whether ``argv`` exits 0 within 10 seconds (a probe: no input, output dropped)."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


_UNSHARE = ("unshare", "--pid", "--fork", "--kill-child", "--")
_MOUNT_PROC: list[bool] = []  # [whether --mount-proc works here], once probed


def own_proc() -> bool:
    """Whether a PID namespace here can have a ``/proc`` of its own (``unshare
    --mount-proc``: a mount namespace too). strace run inside a PID namespace over the
    machine's ``/proc`` translates every new tracee's pid by scanning ``/proc`` (tens of
    milliseconds a fork); with its own ``/proc`` it need not. Probed once."""
    if not _MOUNT_PROC:
        _MOUNT_PROC.append(
            pid_namespace() and _runs([*_UNSHARE[:-1], "--mount-proc", "--", "true"])
        )
    return _MOUNT_PROC[0]


def _kill(pid: int, token: str) -> None:
    """SIGKILL the process group ``pid`` and every process carrying ``token`` (the
    reaper: a process that left the group, a ``setsid`` daemon, still has it)."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    if not pid_namespace():
        _reap(token)


def _reap(token: str) -> None:
    """SIGKILL every process whose environment holds ``CRASHPOINT_EXEC_TOKEN=token``
    (``/proc/PID/environ``; where no PID namespace can be made)."""
    mark = f"{_TOKEN}={token}".encode()
    for _ in range(3):  # a process may fork while the first pass runs
        found = False
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if mark in env:
                found = True
                with contextlib.suppress(OSError):
                    os.kill(int(name), signal.SIGKILL)
        if not found:
            return


def stop_processes() -> None:
    """Interrupted (Ctrl-C, SIGTERM) or exiting: kill every command still running, and
    every process it started, and start no more until :func:`allow_processes` (each runs
    in a session of its own, so the terminal's signal never reaches it: without this,
    strace and the command under test would outlive crashpoint)."""
    _STOPPING.set()
    with _LIVE_LOCK:
        live = list(_LIVE.items())
    for pid, token in live:
        _kill(pid, token)


def allow_processes() -> None:
    """A new run: :func:`run_process` starts processes again."""
    _STOPPING.clear()


atexit.register(stop_processes)  # a daemon of a command never outlives crashpoint


def _program(name: str) -> None:
    """Raise BadTarget when ``name`` cannot be run (as ``execve`` would say): the
    command runs under ``unshare``, which would only print it."""
    found = name if "/" in name else shutil.which(name)
    if found is None or not os.path.exists(found):
        raise BadTarget(f"cannot run {name!r}: {os.strerror(errno.ENOENT)}")
    if os.path.isdir(found) or not os.access(found, os.X_OK):
        raise BadTarget(f"cannot run {name!r}: {os.strerror(errno.EACCES)}")


def run_process(
    argv: Sequence[str],
    *,
    label: str,
    timeout: float | None,
    cwd: str,
    stdin: bytes | None = None,
    max_output: int = MAX_OUTPUT,
    log: str | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` contained: in a PID namespace of its own where the machine allows
    (:func:`pid_namespace`), always in a process group and session of its own, with a
    token in its environment for the reaper (:func:`_reap`) otherwise. Every process it
    starts is killed when its first process exits, at the timeout, on an interrupt and
    when crashpoint exits; its output is read with a deadline (a daemon holding the pipes
    cannot keep it waiting).

    Args:
        timeout: seconds it may run (None: no limit); past it everything is killed and
            TargetTimeout raised.
        max_output: bytes it may print on standard output, and on standard error; and
            the most ``log`` (its strace log, polled) may hold. Past it everything is
            killed and OutputTooLarge raised.

    A missing program is BadTarget. After :func:`stop_processes`, raises
    KeyboardInterrupt instead of starting it; an exception while it runs (an interrupt)
    kills it first."""
    _program(argv[0])
    token = os.urandom(8).hex()
    env = dict(os.environ, **{_TOKEN: token})
    full = [*_UNSHARE, *argv] if pid_namespace() else list(argv)
    with _LIVE_LOCK:
        if _STOPPING.is_set():
            raise KeyboardInterrupt
        try:
            proc = subprocess.Popen(
                full,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise BadTarget(f"cannot run {argv[0]!r}: {exc.strerror}") from None
        _LIVE[proc.pid] = token
    try:
        out, err = _read(proc, token, label, timeout, stdin, max_output, log)
    except BaseException:
        if proc.returncode is None:
            _kill(proc.pid, token)
            proc.wait()
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def _exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether ``proc`` exited, without reaping it (``waitid(WNOWAIT)``): its pid, the id
    of its process group, cannot be reused while :func:`_kill` may still signal it."""
    if proc.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
    except ChildProcessError:
        return True
    return info is not None


def _read(
    proc: subprocess.Popen[bytes],
    token: str,
    label: str,
    timeout: float | None,
    stdin: bytes | None,
    max_output: int,
    log: str | None,
) -> tuple[bytes, bytes]:
    """``proc``'s standard output and error, read until both close (or :data:`GRACE`
    seconds after its first process exited and the rest was killed), with the deadlines
    of :func:`run_process`; ``proc`` is reaped. Raises TargetTimeout, OutputTooLarge."""
    assert proc.stdout is not None and proc.stderr is not None
    out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
    deadline = None if timeout is None else time.monotonic() + timeout
    bufs = {out_fd: bytearray(), err_fd: bytearray()}
    names = {out_fd: "standard output", err_fd: "standard error"}
    pending = memoryview(stdin or b"")
    sel = selectors.DefaultSelector()
    for fd in bufs:
        sel.register(fd, selectors.EVENT_READ)
    if proc.stdin is not None:
        if pending:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
    exited: float | None = None

    def check(now: float) -> None:
        if deadline is not None and now >= deadline:
            _kill(proc.pid, token)
            raise TargetTimeout(label, timeout or 0)
        if log is not None:
            with contextlib.suppress(OSError):
                size = os.path.getsize(log)
                if size > max_output:
                    _kill(proc.pid, token)
                    raise OutputTooLarge(label, "strace log", max_output, size)

    try:
        while sel.get_map():
            now = time.monotonic()
            check(now)
            if exited is None and _exited(proc):
                exited = now  # its first process is done: nothing it started may go on
                _kill(proc.pid, token)
            if exited is not None and now - exited > GRACE:
                break  # the pipes are held by a process that escaped every kill
            for key, _ in sel.select(0.05 if exited is not None else 0.2):
                fd = int(key.fd)
                if fd in bufs:
                    chunk = os.read(fd, PIPE_CHUNK)
                    if not chunk:
                        sel.unregister(fd)
                        continue
                    buf = bufs[fd]
                    buf += chunk
                    if len(buf) > max_output:
                        _kill(proc.pid, token)
                        raise OutputTooLarge(label, names[fd], max_output, len(buf))
                else:
                    try:
                        n = os.write(fd, pending[:PIPE_CHUNK])
                    except BrokenPipeError:
                        n = len(pending)
                    pending = pending[n:]
                    if not pending:
                        sel.unregister(fd)
                        assert proc.stdin is not None
                        with contextlib.suppress(BrokenPipeError):
                            proc.stdin.close()
        # Both pipes closed (or given up): wait for its first process, within the deadline.
        while exited is None and not _exited(proc):
            check(time.monotonic())
            time.sleep(0.02)
        if exited is None:
            _kill(proc.pid, token)  # what it left behind, before its pid is reaped
    finally:
        sel.close()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    proc.wait()
    if log is not None:  # the log is whole now: one that grew past the cap after the last poll
        with contextlib.suppress(OSError):
            size = os.path.getsize(log)
            if size > max_output:
                raise OutputTooLarge(label, "strace log", max_output, size)
    return bytes(bufs[out_fd]), bytes(bufs[err_fd])


PIPE_CHUNK = 1 << 16


def _tail(err: bytes) -> str:
    """The last non-blank line of a command's standard error (200 characters at most), or
    "nothing on stderr": a message never ends in a bare colon."""
    lines = [ln for ln in err.decode("utf-8", "replace").splitlines() if ln.strip()]
    return " ".join(lines[-1].split())[:200] if lines else "nothing on stderr"


VOLATILE_RULE = (
    "a file matching --volatile is content the program rebuilds after a crash and never "
    "trusts: a shared writable mapping of it is not unsupported, and in every crash state a "
    "load starts from it holds garbage of the model's size (SHAKE-256 of its path and the "
    "state's digest) instead of what the model holds; saves start from the model's content"
)
"""The stated rule of ``--volatile`` (reports list it with the globs)."""


def volatile_garbage(path: str, digest: str, size: int) -> bytes:
    """``size`` bytes of deterministic garbage standing for the volatile file ``path`` in
    the crash state of digest ``digest``: SHAKE-256 of both, so the same state gives the
    same bytes in every run and process, and another state or file other bytes."""
    if size <= 0:
        return b""
    return hashlib.shake_256(f"crashpoint-volatile\0{path}\0{digest}".encode()).digest(size)


SCRATCH_ENV = "CRASHPOINT_SCRATCH"
"""The environment variable naming the directory the exec runner makes its scratch
directories in (crash images, the commands' working copies, strace's logs); empty: the
system's temporary directory (``tempfile.gettempdir()``)."""

SHM = "/dev/shm"
SHM_FREE = 1 << 30
"""Bytes free a tmpfs at :data:`SHM` must have to be the default scratch root."""

_SCRATCH: dict[str, str | None] = {}


def scratch_root() -> str | None:
    """The directory scratch directories are made in: ``$CRASHPOINT_SCRATCH`` when set
    (empty: None, the system's temporary directory), else :data:`SHM` when it is a
    writable tmpfs with :data:`SHM_FREE` bytes free, else None. A scratch directory on
    tmpfs makes the commands' real ``fsync`` calls cost nothing and no disk's latency
    enter the figures: the model, not the real disk, says what is durable
    (docs/decisions.md). Raises ValueError (usage, exit 2) when the variable names no
    writable directory."""
    chosen = os.environ.get(SCRATCH_ENV)
    key = "\0" if chosen is None else chosen
    if key in _SCRATCH:
        return _SCRATCH[key]
    root: str | None
    if chosen is not None:
        if chosen and not (os.path.isdir(chosen) and os.access(chosen, os.W_OK | os.X_OK)):
            raise ValueError(f"{SCRATCH_ENV}={chosen!r}: not a writable directory")
        root = chosen or None
    else:
        root = SHM if _roomy_tmpfs(SHM) else None
    _SCRATCH[key] = root
    return root


def _roomy_tmpfs(path: str) -> bool:
    try:
        with open("/proc/self/mounts", encoding="utf-8") as f:
            tmpfs = any(
                len(parts) > 2 and parts[1] == path and parts[2] == "tmpfs"
                for parts in (line.split() for line in f)
            )
        if not tmpfs or not os.access(path, os.W_OK | os.X_OK):
            return False
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize >= SHM_FREE


_Key = tuple[tuple[str, bool], ...]
"""The paths a read-only load looked at, each with whether it listed it (sorted)."""


def _cached_signature(
    state: CrashState, key: _Key, sigs: dict[tuple[int, _Key], tuple[Any, ...]] | None
) -> tuple[Any, ...]:
    """:func:`_signature`, kept in ``sigs`` (when given) by ``key`` and the state object (a
    caller's list holds each one while ``sigs`` lives: its ``id`` stays its own)."""
    if sigs is None:
        return _signature(state, key)
    at = (id(state), key)
    sig = sigs.get(at)
    if sig is None:
        sig = sigs[at] = _signature(state, key)
    return sig


def _signature(state: CrashState, key: _Key) -> tuple[Any, ...]:
    """What ``state`` holds at each path of ``key`` (``(model path, listed)`` pairs, a
    load's :attr:`~crashpoint.faultfs._strace.StraceReplay.touched`): a file's bytes, a
    directory (with its entries' names when it was listed), or None (nothing there)."""
    files = dict(state.files)
    dirs = set(state.dirs)
    out: list[Any] = []
    names: dict[str, tuple[str, ...]] | None = None
    for path, listed in key:
        if path in files:
            out.append(files[path])
        elif path in dirs:
            if not listed:
                out.append(True)
                continue
            if names is None:
                kids: dict[str, set[str]] = {}
                for p in (*files, *dirs):
                    parent = p.rsplit("/", 1)[0] or "/"
                    if p != "/":
                        kids.setdefault(parent, set()).add(p.rsplit("/", 1)[1])
                names = {d: tuple(sorted(n)) for d, n in kids.items()}
            out.append(names.get(path, ()))
        else:
            out.append(None)
    return tuple(out)


def materialize(
    state: CrashState, model_root: str, real_root: str, volatile: Sequence[str] = ()
) -> None:
    """Write the files and directories of ``state`` under ``model_root`` into the
    real directory ``real_root`` (created when ``state`` has ``model_root``).

    ``volatile``: globs relative to ``model_root`` (``--volatile``); a file matching one is
    written as :func:`volatile_garbage` of its size, keyed by its path and ``state``'s
    digest, instead of its content. A symbolic link (content
    :func:`~crashpoint.faultfs.symlink_content`) is made one again."""
    prefix = model_root.rstrip("/") + "/"
    digest = state.digest() if volatile else ""
    if model_root in state.dirs:
        os.makedirs(real_root, exist_ok=True)
    for d in sorted(state.dirs):
        if d.startswith(prefix):
            os.makedirs(real_root + "/" + d[len(prefix) :], exist_ok=True)
    for path, blob in state.files:
        if path.startswith(prefix):
            rel = path[len(prefix) :]
            real = real_root + "/" + rel
            os.makedirs(os.path.dirname(real), exist_ok=True)
            target = symlink_target(blob)
            if target is not None:
                os.symlink(target, real)
                continue
            if volatile and volatile_match(volatile, rel):
                blob = volatile_garbage(path, digest, len(blob))
            with open(real, "wb") as f:
                f.write(blob)


@dataclass(slots=True)
class _Recorded:
    """What one traced process did."""

    proc: subprocess.CompletedProcess[bytes]
    replay: StraceReplay
    calls: list[Any] = field(default_factory=list)
    real_root: str = ""
    forked: bool = False
    """Run by a fork server (:class:`DriverPool`): its calls are numbered from the fork,
    not from an ``execve``, so they cannot aim a fault (``-e inject=...:when=N``)."""
    inputs: bool = False
    """Traced with :data:`LIGHT_SYSCALLS`: :attr:`StraceReplay.touched` is complete."""


class ExecRunner(Runner):
    """Runs the save and load commands (see the module docstring); a
    :class:`~crashpoint.scenarios.targets.user.Runner` so the document kind drives it
    unchanged. No interception: the commands are other processes.

    Args:
        save, load: the command templates.
        timeout: seconds one command may run (None: no limit).
        trace_loads: run loads under strace too (reads for A5, writes for A3).
        max_output: bytes a command may print on each stream, and its strace log
            may hold (:func:`run_process`; past it: OutputTooLarge, exit 2).
        volatile: ``--volatile`` globs, relative to the directory
            (:data:`VOLATILE_RULE`; checked by
            :func:`~crashpoint.faultfs._strace.check_volatile`: ValueError).

    Attributes:
        processes: commands run so far; ignored: paths left alone by the ignore rule;
        untargeted: faults that could not be injected at their call.
    """

    mode = "exec"

    def _contained(self, fn: Callable[[], T]) -> T:
        """``fn()`` as it is: the target is another process, its writes recorded by strace
        into a real scratch directory crashpoint itself makes and removes (the audit
        hook guards Python code running in this process only)."""
        return fn()

    def __init__(
        self,
        save: str,
        load: str,
        *,
        base_dir: str = DOC_BASE,
        timeout: float | None = None,
        trace_loads: bool = True,
        storage: str | None = None,
        max_output: int = MAX_OUTPUT,
        volatile: Sequence[str] = (),
    ) -> None:
        super().__init__(lambda *a: None, base_dir, timeout=None)
        self.max_output = max_output
        self.volatile = check_volatile(volatile)
        scratch_root()  # (a bad $CRASHPOINT_SCRATCH is a ValueError now, not in the run)
        self.volatile_mapped: list[str] = []
        """Model paths of volatile files the commands mapped shared and writable."""
        if storage is None:
            render_argv(save, dir="D", value="V")
            render_argv(load, dir="D")
        else:
            render_argv(storage, dir="D")
        self.storage_cmd = storage or ""
        self._plain: dict[tuple[str, str], tuple[int, bytes, bytes, bool]] = {}
        self._recorded: dict[tuple[str, str], _Recorded] = {}
        """Clean traced calls by (files, request): a re-run of the same call on the same
        files (another model, a shrink, a replay) is replayed from its log."""
        self.save_cmd, self.load_cmd = save, load
        self.exec_timeout = timeout
        self.trace_loads = trace_loads
        self.processes = 0
        self.ignored: list[str] = []
        self.untargeted: list[str] = []
        self._escapes: list[str] = []
        self._unsupported: list[str] = []
        self._sources: dict[tuple[str, str], tuple[list[Source], dict[tuple[int, str], int]]] = {}
        """A call's operations and their system calls, numbered as strace's ``when=N`` counts
        them (from the execve of a one-shot process), by the key of :meth:`ExecDocument.traced`."""
        self._forked_sources: dict[
            tuple[str, str], tuple[list[Source], dict[tuple[int, str], int]]
        ] = {}
        """The same from a fork server's child (numbered from its start mark): a one-shot
        process's numbering for every call its server's start never made (:meth:`estimate`)."""
        self._no_estimate: set[tuple[str, str]] = set()
        """Keys whose estimated injection missed its operation: probed one-shot instead."""
        self.cwd = os.getcwd()
        self._lock = threading.Lock()
        self.batch = False
        """The storage command answers a JSON array of requests (:meth:`detect_batch`)."""
        self.batch_load = ""
        """A command loading a JSON array of directories (the strace driver's
        ``load-batch``; "" for user commands): document loads run in batches."""
        self.counts: dict[str, int] = {}
        """Processes run, by kind: ``load`` (one request run plain), ``load batch``
        (the requests of one crash state), ``batch discarded`` (of those, the ones
        that changed a file: run again), ``probe``/``probe batch`` (C1 probes that
        did not ride in their state's batch), ``traced`` (under strace), ``plain`` (a
        document load not traced), ``batch probe`` (:meth:`detect_batch`); the
        conformance suite's are counted apart (``conformance load``...)."""
        self.last_sources: list[Source] = []
        self.faults_run_again = 0
        """Faulted records run again because the injection missed its operation."""
        self.server: DriverPool | None = None
        """The strace driver's fork servers (``--runner strace`` with a Python TARGET):
        a clean traced call of the driver runs in a forked child of one of them."""
        self.inputs: dict[str, dict[str, bool]] = {}
        """By crash state digest: what its last read-only load (one-shot, traced with
        :data:`LIGHT_SYSCALLS`) opened or looked at (:attr:`StraceReplay.touched`), taken
        by :meth:`ExecDocumentKind.observe`."""
        self.loads_reused = 0
        """Crash states whose load was not run: a load already run had read the same bytes
        (:meth:`ExecDocumentKind.observe`)."""
        self.loads_with_inputs = 0
        """Loads traced with :data:`LIGHT_SYSCALLS` so far (:meth:`_light_trace`)."""
        self.writing_loads: set[str] = set()
        """Digests of crash states whose load overwrote them in a load batch
        (:meth:`ExecDocumentKind._batch_observe`): their own load is traced in full at
        once (a light run first would be run again)."""

    def note_inputs(self, state: CrashState, touched: dict[str, bool]) -> None:
        """Keep what the read-only load of ``state`` looked at (see :attr:`inputs`)."""
        with self._lock:
            self.inputs[state.digest()] = dict(touched)

    def estimate(
        self, key: tuple[str, str], local: int
    ) -> tuple[list[Source], dict[tuple[int, str], int]] | None:
        """How a one-shot process would number the call that made operation ``local`` of
        the call ``key``, from the fork server's child that ran it clean: the same, when
        the server's own start (the interpreter's, the driver's, TARGET's import: what a
        one-shot process does before it) made no call of that name, as for a write, an
        fsync, a rename (an import that wrote keeps the server from being used). None
        when it cannot be told (no forked record; a call the start made, an ``openat``;
        an estimate that missed before): the caller probes the call one-shot."""
        pool = self.server
        with self._lock:
            known = self._forked_sources.get(key)
            if known is None or pool is None or pool.startup is None or key in self._no_estimate:
                return None
        sources, _counts = known
        if local >= len(sources):
            return known  # not in this call: nothing to inject
        src = sources[local]
        if pool.startup.get(src.name, 0) or src.pid != sources[0].pid:
            return None  # (a call of the start, or of another tracee of the child)
        return known

    def _count(self, kind: str, n: int = 1) -> None:
        """Add ``n`` processes of ``kind`` to :attr:`counts` (the caller holds the lock)."""
        self.counts[kind] = self.counts.get(kind, 0) + n

    def sharing(self) -> ExecRunner:
        """A runner of the same commands that shares this one's reply and trace caches
        (and lock) but counts its processes and keeps its notes apart; :meth:`absorb`
        adds them back. Lets a sequence of calls (the conformance suite) run beside
        other work with the report as if it had run after it."""
        other = ExecRunner(
            self.save_cmd,
            self.load_cmd,
            base_dir=self.base_dir,
            timeout=self.exec_timeout,
            trace_loads=self.trace_loads,
            storage=self.storage_cmd or None,
            max_output=self.max_output,
            volatile=self.volatile,
        )
        other._plain, other._recorded, other._sources = self._plain, self._recorded, self._sources
        other._forked_sources, other._no_estimate = self._forked_sources, self._no_estimate
        other._lock, other.batch, other.cwd = self._lock, self.batch, self.cwd
        return other

    def absorb(self, other: ExecRunner, label: str = "") -> None:
        """Add ``other``'s processes, counts (each kind prefixed with ``label``) and
        ignored paths (see :meth:`sharing`) after this runner's own: its unsupported
        calls and escapes are not kept."""
        with self._lock:
            self.processes += other.processes
            for kind, n in other.counts.items():
                self._count(f"{label}{kind}", n)
            self.ignored += [p for p in other.ignored if p not in self.ignored]

    def __enter__(self) -> ExecRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def use(self, fs: Any) -> None:
        return None

    def build(self, fs: Any) -> ExecDocument:
        doc = ExecDocument(self, fs)
        self.last_sources = doc.sources
        return doc

    def escapes(self) -> list[str]:
        return list(self._escapes)

    def unsupported(self) -> list[str]:
        return list(self._unsupported)

    def note_unsupported(self, text: str) -> None:
        with self._lock:
            if text not in self._unsupported:
                self._unsupported.append(text)

    # --- read-only calls, plain and batched -------------------------------------------
    def plain_call(
        self, state: CrashState, body: bytes, kind: str = "load"
    ) -> tuple[int, bytes, bytes, bool]:
        """Run the storage command once on a fresh real copy of ``state`` with the
        request ``body`` on stdin, not traced: ``(exit status, stdout, stderr, wrote)``,
        ``wrote`` when it changed a file or directory (contents, identity or times).
        Cached per (state digest, request): the same image gives the same reply;
        counted as ``kind`` in :attr:`counts`."""
        key = (state.digest(), body.decode())
        with self._lock:
            hit = self._plain.get(key)
        if hit is not None:
            return hit
        out = self._spawn_plain(state, body)
        with self._lock:
            self._plain[key] = out
            self._count(kind)
        return out

    def _spawn_plain(self, state: CrashState, stdin: bytes) -> tuple[int, bytes, bytes, bool]:
        with tempfile.TemporaryDirectory(prefix="crashpoint-exec-", dir=scratch_root()) as tmp:
            tmp = os.path.realpath(tmp)
            root = os.path.join(tmp, "dir")
            materialize(state, self.base_dir, root)
            before = _snapshot(root)
            with self._lock:
                self.processes += 1
            proc = run_process(
                render_argv(self.storage_cmd, dir=root),
                label="load",
                timeout=self.exec_timeout,
                cwd=self.cwd,
                stdin=stdin,
                max_output=self.max_output,
            )
            wrote = _snapshot(root) != before
        return proc.returncode, proc.stdout, proc.stderr, wrote

    def detect_batch(self) -> bool:
        """Whether the storage command answers a JSON array of requests with an array
        of replies (one per request, in order): two loads on an empty directory.
        Sets :attr:`batch`; one process."""
        empty = CrashState((), (self.base_dir,))
        requests = b'[{"op": "load", "sessionId": "a"}, {"op": "load", "sessionId": "b"}]'
        _rc, out, _err, _wrote = self._spawn_plain(empty, requests)
        with self._lock:
            self._count("batch probe")
        self.batch = _replies(out, 2) is not None
        return self.batch

    def prefetch_loads(
        self,
        wanted: dict[CrashState, list[bytes]],
        jobs: int,
        optional: dict[CrashState, list[bytes]] | None = None,
        kind: str = "load",
    ) -> None:
        """Answer the requests ``wanted[state]`` (loads, or the C1 probe's
        ``load_or_create``) now, plain, ``jobs`` processes at a time: one fresh process
        per distinct state when the command takes a batch (:meth:`detect_batch`), else
        one per (state, request). ``optional[state]``: requests added to that state's
        batch when it is one anyway, never run on their own. A batch that changed a
        file, or whose reply is not one reply per request, is not kept: it is run again
        without the optional requests, then its requests one per process
        (:meth:`plain_call`, which notes whether each changed a file). ``kind``: what
        the processes are counted as in :attr:`counts` (``kind``, ``kind batch``)."""
        todo: list[tuple[CrashState, list[bytes], list[bytes]]] = []
        extra = optional or {}
        for state, bodies in wanted.items():
            digest = state.digest()
            with self._lock:
                left = [b for b in dict.fromkeys(bodies) if (digest, b.decode()) not in self._plain]
                more = [
                    b
                    for b in dict.fromkeys(extra.get(state, ()))
                    if (digest, b.decode()) not in self._plain and b not in left
                ]
            if left:
                todo.append((state, left, more))
        if not todo:
            return

        def one(item: tuple[CrashState, list[bytes], list[bytes]]) -> None:
            state, bodies, more = item
            if self.batch and more and self._batch(state, bodies + more, kind):
                return
            if self.batch and len(bodies) > 1 and self._batch(state, bodies, kind):
                return
            for b in bodies:
                self.plain_call(state, b, kind)

        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            list(pool.map(one, todo))

    def _batch(self, state: CrashState, bodies: list[bytes], kind: str) -> bool:
        """One process answering ``bodies`` on ``state``; False (nothing kept) when it
        changed a file or did not give one reply per request."""
        rc, out, err, wrote = self._spawn_plain(state, b"[" + b", ".join(bodies) + b"]")
        with self._lock:
            self._count(f"{kind} batch")
        replies = None if wrote else _replies(out, len(bodies))
        if replies is None:
            with self._lock:
                self._count("batch discarded")
            return False
        digest = state.digest()
        with self._lock:
            for b, reply in zip(bodies, replies, strict=True):
                self._plain.setdefault((digest, b.decode()), (rc, reply, err, False))
        return True

    # --- processes ---------------------------------------------------------------
    def run(
        self,
        argv: list[str],
        fs: RecordingFileSystem,
        *,
        tmp: str,
        real_root: str,
        label: str,
        traced: bool,
        inject: str | None = None,
        stdin: bytes | None = None,
        light: bool = False,
    ) -> _Recorded:
        """Run ``argv`` (under strace when ``traced``; ``light``: its opens and the paths
        it looked at only, :data:`~crashpoint.faultfs._strace.LIGHT_SYSCALLS`), replaying
        its calls into ``fs``.
        A clean traced call of the strace driver runs in a forked child of its server
        (:class:`DriverPool`; counted ``forked``), else as a process of its own."""
        replay = self.replay(fs, real_root)
        if traced and inject is None:
            forked = self._forked(argv, stdin, label, light)
            if forked is not None:
                proc, calls, inputs = forked
                done = self._replayed(proc, replay, calls, real_root, forked=True)
                done.inputs = inputs  # every path the child looked at is in its calls
                return done
        with self._lock:
            self.processes += 1
            kind = "traced" if traced else "plain"
            self._count(kind)
        if not traced:
            proc = run_process(
                argv,
                label=label,
                timeout=self.exec_timeout,
                cwd=self.cwd,
                stdin=stdin,
                max_output=self.max_output,
            )
            return _Recorded(proc, replay)
        log = os.path.join(tmp, "strace.log")
        trace = self._light_trace() if light else None
        proc = run_process(
            strace_argv(argv, log, inject=inject, trace=trace),
            label=label,
            timeout=self.exec_timeout,
            cwd=self.cwd,
            stdin=stdin,
            max_output=self.max_output,
            log=log,
        )
        try:
            with open(log, encoding="utf-8", errors="surrogateescape") as f:
                calls = parse_log(f)
        except OSError:
            raise BadTarget(f"strace wrote no log for {label}: {_tail(proc.stderr)}") from None
        done = self._replayed(proc, replay, calls, real_root)
        done.inputs = trace == LIGHT_SYSCALLS
        return done

    def _light_trace(self) -> str:
        """What a read-only load is traced for: :data:`LIGHT_SYSCALLS` (its inputs, so a
        load of a state holding the same bytes there is not run again) for the first
        :data:`INPUTS_PROBE` loads and for as long as a load was ever answered so; then,
        when none was, its opens only (the other calls cost a Python load about a third
        more, its start-up's stats)."""
        with self._lock:
            if self.loads_with_inputs < INPUTS_PROBE or self.loads_reused:
                self.loads_with_inputs += 1
                return LIGHT_SYSCALLS
        return OPEN_SYSCALLS

    def _replayed(
        self,
        proc: subprocess.CompletedProcess[bytes],
        replay: StraceReplay,
        calls: list[Syscall],
        real_root: str,
        forked: bool = False,
    ) -> _Recorded:
        replay.feed(calls)
        _drop_probes(replay, calls)
        self.note_replay(replay)
        return _Recorded(proc, replay, calls, real_root, forked)

    def replay(self, fs: Any, real_root: str) -> StraceReplay:
        """A replay of this runner's commands run on ``real_root`` into ``fs`` (the
        ``--volatile`` globs given)."""
        return StraceReplay(fs, real_root, self.base_dir, cwd=self.cwd, volatile=self.volatile)

    def note_replay(self, replay: StraceReplay) -> None:
        """Keep what ``replay`` ignored and the volatile files it saw mapped."""
        with self._lock:
            for p in replay.ignored:
                if p not in self.ignored:
                    self.ignored.append(p)
            for p in replay.volatile_mapped:
                if p not in self.volatile_mapped:
                    self.volatile_mapped.append(p)

    def _forked(
        self, argv: list[str], stdin: bytes | None, label: str, light: bool
    ) -> tuple[subprocess.CompletedProcess[bytes], list[Syscall], bool] | None:
        """``argv`` (a driver command line) run by a fork server: the child's exit
        status, output and calls (``light``: its opens and the paths it looked at, as
        ``-e trace=`` :data:`LIGHT_SYSCALLS` would have kept: the server traces
        :data:`SERVER_SYSCALLS`), and whether those paths are all there (as
        :meth:`_light_trace` decides for one-shot loads: after :data:`INPUTS_PROBE` loads
        none of which another's answered, the pool narrows, :meth:`DriverPool.narrow`);
        None when there is no server for it (run it one-shot)."""
        pool = self.server
        head = [sys.executable, "-B", DRIVER]
        if pool is None or _ONE_SHOT.get() or argv[:3] != head or len(argv) < 4:
            return None
        server = pool.take()
        if server is None:
            return None
        inputs = light and server.trace == SERVER_SYSCALLS
        ok = False
        try:
            proc, calls = server.call(argv[3:], stdin, label)
            ok = True
        except ServerGone as exc:
            with pool._cond:
                pool.failed = pool.failed or f"the driver's fork server: {exc}"
            if exc.ran:
                raise BadTarget(f"{label}: the strace driver's fork server failed: {exc}") from None
            return None
        finally:
            pool.give(server, ok)
        with self._lock:
            self.processes += 1
            self._count("forked")
            for p in server.ignored:
                if p not in self.ignored:
                    self.ignored.append(p)
        if light:
            calls = [c for c in calls if c.name in (_LIGHT_KEPT if inputs else _OPENS_KEPT)]
        if inputs:
            with self._lock:
                self.loads_with_inputs += 1
                useless = self.loads_with_inputs >= INPUTS_PROBE and not self.loads_reused
            if useless:
                pool.narrow()
        return proc, calls, inputs


SERVER_SYSCALLS = TRACED_SYSCALLS + "," + INPUT_SYSCALLS
"""What a fork server's strace traces: what a one-shot process is traced for and the calls
by which a program looks at a path (:data:`~crashpoint.faultfs._strace.INPUT_SYSCALLS`), so
a forked load's inputs are known as a one-shot light load's are (its loads can answer a
later state's, and ZODB's lock file stat is seen); the server's own start-up is traced
once, and a forked child has its imports done."""

_LIGHT_KEPT = frozenset((*LIGHT_SYSCALLS.split(","), "fork-of"))
"""The calls of a forked read-only load kept (what ``-e trace=LIGHT_SYSCALLS`` keeps)."""

_OPENS_KEPT = frozenset((*OPEN_SYSCALLS.split(","), "fork-of"))
"""The same once the pool narrowed (:meth:`DriverPool.narrow`): its opens only."""

PROBE_NOTE = " (tempfile's writability probe: not the target's data)"
"""How an ignored ``tempfile`` probe is listed (issue 22)."""


def _probe_events(calls: Iterable[Syscall]) -> Iterator[tuple[str, str, bytes]]:
    """The exclusive creates, writes and unlinks of ``calls``, by real path, for
    :func:`~crashpoint.faultfs._fresh.tempfile_probe`."""
    excl = os.O_CREAT | os.O_EXCL
    for c in calls:
        if c.result < 0 or c.name not in _PROBE_CALLS:
            continue
        a = split_args(c.args)
        if c.name in ("open", "openat") and len(a) >= 2:
            flags = a[2] if c.name == "openat" and len(a) >= 3 else a[1]
            try:
                value = int(flags.split("<", 1)[0], 0)
            except ValueError:
                continue
            if value & excl == excl and c.result_path:
                yield "create", c.result_path, b""
        elif c.name == "write" and len(a) >= 2:
            yield "write", _fd(a[0])[1], _bytes(a[1])[: c.result]
        elif c.name in ("unlink", "unlinkat") and a:
            path = _str(a[1] if c.name == "unlinkat" and len(a) >= 2 else a[0])
            if c.name == "unlinkat" and not path.startswith("/"):
                path = os.path.join(_fd(a[0])[1], path)
            yield "unlink", os.path.normpath(path), b""


_PROBE_CALLS = frozenset(("open", "openat", "write", "unlink", "unlinkat"))


def _drop_probes(replay: StraceReplay, calls: Sequence[Syscall]) -> None:
    """Python's ``tempfile`` probes its temporary directory once per process (an
    8-character file holding ``blat``, created and deleted): outside the directory it is
    not an escape (S1) but an ignored path, listed with :data:`PROBE_NOTE`. Looked for
    only when the replay found an escape: every temporary directory ``tempfile`` tries
    is outside the directory and under no ignore rule, so a probe is always one."""
    if not replay.escapes:
        return
    probes = {p for p in tempfile_probe(_probe_events(calls)) if replay.model_path(p) is None}
    if not probes:
        return
    kept = []
    for e in replay.escapes:
        if any(f"({p})" in e for p in probes):
            continue
        kept.append(e)
    replay.escapes[:] = kept
    for p in sorted(probes):
        if p + PROBE_NOTE not in replay.ignored:
            replay.ignored.append(p + PROBE_NOTE)


class ExecDocument:
    """The document object the document kind builds: ``save(value)`` and ``load()``
    run the commands on a real copy of ``fs``'s files and replay what they did."""

    def __init__(self, runner: ExecRunner, fs: RecordingFileSystem) -> None:
        self.runner = runner
        self.fs = fs
        self.sources: list[Source] = []

    def _state(self) -> CrashState:
        inner = getattr(self.fs, "inner", self.fs)
        if isinstance(inner, MemoryFileSystem):
            return inner.crash_state()
        raise TypeError(f"--exec runs on the model's MemoryFileSystem, not {type(inner).__name__}")

    def save(self, value: Any) -> None:
        runner = self.runner
        text = json.dumps(value)

        def argv(tmp: str, root: str) -> list[str]:
            value_path = os.path.join(tmp, "value.json")
            with open(value_path, "w", encoding="utf-8") as f:
                f.write(text)
            return render_argv(runner.save_cmd, dir=root, value=value_path)

        done = self.traced("save", text, argv)
        if done.proc.returncode != 0:
            raise SaveExit(f"exit status {done.proc.returncode}: {_tail(done.proc.stderr)}")

    def traced(
        self,
        label: str,
        key_text: str,
        argv: Callable[[str, str], list[str]],
        stdin: bytes | None = None,
    ) -> _Recorded:
        """Run the command ``argv(tmp, real_dir)`` under strace on a real copy of the
        model's files and replay it into the model; with a fault armed in its span,
        inject it at the call that made that operation. ``key_text`` identifies the
        call (with the state it starts from) for fault targeting."""
        runner, fs = self.runner, self.fs
        state = self._state()
        key = (state.digest(), label + "\0" + key_text)
        inject = None
        fault: Fault | None = getattr(fs, "fault", None)
        op_count = int(getattr(fs, "op_count", 0))
        estimated = False
        if fault is not None and fault.at >= op_count:
            inject, estimated = self._target(fault, key, state, label, key_text, argv, stdin)
        with runner._lock:
            cached = runner._recorded.get(key) if inject is None and not _ONE_SHOT.get() else None
        if cached is not None:
            again = runner.replay(fs, cached.real_root)
            again.feed(cached.calls)
            done = _Recorded(cached.proc, again, cached.calls, cached.real_root, cached.forked)
        else:
            with tempfile.TemporaryDirectory(prefix="crashpoint-exec-", dir=scratch_root()) as tmp:
                tmp = os.path.realpath(tmp)
                root = os.path.join(tmp, "dir")
                materialize(state, runner.base_dir, root)
                done = runner.run(
                    argv(tmp, root),
                    fs,
                    tmp=tmp,
                    real_root=root,
                    label=label,
                    traced=True,
                    inject=inject,
                    stdin=stdin,
                )
            if inject is None:
                with runner._lock:
                    runner._recorded.setdefault(key, done)
        rep = done.replay
        self.sources += rep.sources
        if inject is None:
            with runner._lock:
                # (a forked child's calls are numbered from its start mark, not its execve)
                known = runner._forked_sources if done.forked else runner._sources
                known.setdefault(key, (list(rep.sources), dict(rep.counts)))
        elif fault is not None:
            missed = [f"trace and model disagree: {m}" for m in rep.mismatched]
            if not any(o.index == fault.at and o.errno is not None for o in fs.trace.ops):
                missed.insert(
                    0,
                    f"fault {fault_spec(fault)}: the injected call ({inject}) did not land on "
                    f"operation {fault.at}",
                )
            retry = _INJECT_MISSES.get()
            if missed and estimated:
                with runner._lock:  # the next try probes the call one-shot
                    runner._no_estimate.add(key)
            if missed and retry is not None:
                retry += missed  # the record is run again (ExecDocumentKind._record)
                return done
            for note in missed:
                runner.note_unsupported(note)
            rep.mismatched = []
        with runner._lock:
            for e in rep.escapes:
                if e not in runner._escapes:
                    runner._escapes.append(e)
        for u in rep.unsupported:
            runner.note_unsupported(u)
        for m in rep.mismatched:
            runner.note_unsupported(f"trace and model disagree: {m}")
        return done

    def _target(
        self,
        fault: Fault,
        key: tuple[str, str],
        state: CrashState,
        label: str,
        key_text: str,
        argv: Callable[[str, str], list[str]],
        stdin: bytes | None,
    ) -> tuple[str | None, bool]:
        """The ``-e inject`` expression hitting operation ``fault.at``, if it falls in
        this call; None otherwise (and the fault disarmed when it cannot be targeted).
        Second: whether its ``when=N`` is :meth:`ExecRunner.estimate`'s (no one-shot
        probe was run: an injection that misses makes the next try probe)."""
        runner, fs = self.runner, self.fs
        local = fault.at - int(getattr(fs, "op_count", 0))
        known = runner._sources.get(key)
        estimated = False
        if known is None:
            known = runner.estimate(key, local)
            estimated = known is not None
        if known is None:
            probe = ExecDocument(runner, RecordingFileSystem(MemoryFileSystem(state)))
            token = _ONE_SHOT.set(True)  # strace's when=N counts from the execve
            try:
                probe.traced(label, key_text, argv, stdin)
            finally:
                _ONE_SHOT.reset(token)
            known = runner._sources[key]
        sources, counts = known
        if local >= len(sources):
            return None, estimated
        src = sources[local]
        why = ""
        if fault.kind is not FaultKind.ERROR:
            why = f"{fault.kind.value} cannot be injected through strace"
        else:
            others = [
                p for (p, n), c in counts.items() if n == src.name and p != src.pid and c >= src.nth
            ]
            if others:
                why = (
                    f"strace counts {src.name} per tracee and {len(others)} other tracee(s) "
                    f"made {src.nth} or more"
                )
        if why:
            note = f"fault {fault_spec(fault)} at {src.name} could not be targeted: {why}"
            runner.note_unsupported(note)
            with runner._lock:
                runner.untargeted.append(note)
            fs.fault = None
            return None, estimated
        return f"{src.name}:error={errno_name(fault.errno)}:when={src.nth}", estimated

    def load(self) -> Any:
        runner, fs = self.runner, self.fs
        # a crash state's volatile files hold garbage (VOLATILE_RULE); a load in the
        # recording (after a failed save, no crash) starts from the model's content
        volatile = runner.volatile if _CRASH_IMAGE.get() else ()
        with tempfile.TemporaryDirectory(prefix="crashpoint-exec-", dir=scratch_root()) as tmp:
            tmp = os.path.realpath(tmp)
            root = os.path.join(tmp, "dir")
            state = self._state()
            materialize(state, runner.base_dir, root, volatile)
            argv = render_argv(runner.load_cmd, dir=root)
            if not runner.trace_loads:
                done = runner.run(argv, fs, tmp=tmp, real_root=root, label="load", traced=False)
            elif state.digest() in runner.writing_loads:  # a batch saw it write: see below
                done = runner.run(argv, fs, tmp=tmp, real_root=root, label="load", traced=True)
            else:
                # Opens only (what it read, for A5), replayed aside; a load that changed
                # or removed a file or directory of the state (:func:`_overwrote`) runs
                # again with every call traced, into fs (A3).
                before = _snapshot(root)
                aside = RecordingFileSystem(MemoryFileSystem(state))
                done = runner.run(
                    argv, aside, tmp=tmp, real_root=root, label="load", traced=True, light=True
                )
                overwrote = _overwrote(before, _snapshot(root))
                if overwrote and not _OUTCOME_ONLY.get():
                    shutil.rmtree(root)
                    materialize(state, runner.base_dir, root, volatile)
                    with runner._lock:
                        runner._count("load traced again")
                    done = runner.run(argv, fs, tmp=tmp, real_root=root, label="load", traced=True)
                elif done.inputs and not overwrote:
                    runner.note_inputs(state, done.replay.touched)
        for r in done.replay.reads:
            if fs.exists(r) and not fs.is_dir(r):  # a directory opened to list or fsync it
                fs.read(r)  # the event the document kind's A5 looks for
        if done.proc.returncode != 0:
            raise LoadExit(f"exit status {done.proc.returncode}: {_tail(done.proc.stderr)}")
        try:
            return json_value(done.proc.stdout)
        except (UnicodeDecodeError, ValueError):
            shown = done.proc.stdout[:60].decode("utf-8", "replace")
            raise LoadOutput(f"not one JSON value: {shown!r}") from None


INPUTS_PROBE = 64
"""Loads traced for their inputs before, none having been answered by another's, the
rest are traced for their opens only (:meth:`ExecRunner._light_trace`)."""

INJECT_TRIES = 3
"""Runs of a faulted record before an injection that missed its operation is told
(as incomplete: "did not land", "trace and model disagree")."""

_CRASH_IMAGE: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "crashpoint_crash_image", default=False
)
"""True while a load runs on a crash state (:meth:`ExecDocumentKind._load_once`): its
directory is materialized with the ``--volatile`` files as garbage."""

_OUTCOME_ONLY: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "crashpoint_outcome_only", default=False
)
"""True while a load runs only for its value or error (:meth:`ExecDocumentKind._reload`):
one that overwrote its directory is not run again traced in full."""

_INJECT_MISSES: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "crashpoint_inject_misses", default=None
)
"""While a faulted record may still be run again: where :meth:`ExecDocument.traced` puts
what an injection that missed its operation would have told."""


def exec_fault_plan(ops: Iterable[Any]) -> list[Fault]:
    """Every exec fault: each errno of :data:`EXEC_FAULT_ERRNOS` at each mutating
    operation (barriers included)."""
    import errno

    return [
        Fault(op.index, getattr(errno, name))
        for op in ops
        if op.kind.mutating
        for name in EXEC_FAULT_ERRNOS
    ]


class ExecDocumentKind(DocumentKind):
    """The document kind over :class:`ExecRunner`: loads of crash states run in
    parallel (``jobs`` processes at a time) as soon as a run is recorded; the
    judging is :class:`DocumentKind`'s."""

    def __init__(
        self,
        runner: ExecRunner,
        *,
        models: Sequence[PersistenceModel],
        jobs: int = 1,
        seed: int = 0,
    ) -> None:
        super().__init__(runner, "--exec", values="json", seed=seed)
        self.exec_runner = runner
        self.models = list(models)
        self.jobs = max(1, jobs)
        self.sources: dict[int, list[Source]] = {}
        self.shown = ""
        """The Python TARGET run by the strace driver (``--runner strace``), else ""."""
        self.recorder = "strace"
        """How runs are recorded (the engine's divergence message names it)."""
        self._derived: dict[tuple[int, PersistenceModel], list[CrashPoint]] = {}
        """Crash points of a recorded run (by ``id(run)``, held in ``_runs``) and model,
        derived by :meth:`_record`, until the engine takes them (:meth:`crash_points_of`)."""
        self._answers: dict[_Key, dict[tuple[Any, ...], DocObservation]] = {}
        """Observations of read-only loads, by the paths each looked at and what the state
        held there (:meth:`_remember`)."""

    def _record(self, workload: DocWorkload, fault: Fault | None) -> Any:
        run = None
        for attempt in range(1 if fault is None else INJECT_TRIES):
            # strace counts a call per thread: which of a program's threads makes the
            # call a fault is aimed at (node's libuv pool) can change from run to run, so
            # an injection that missed its operation is tried again before it is told.
            missed: list[str] = []
            token = _INJECT_MISSES.set(None if attempt == INJECT_TRIES - 1 else missed)
            try:
                run = super()._record(workload, fault)
            finally:
                _INJECT_MISSES.reset(token)
            if not missed:
                break
            with self.exec_runner._lock:
                self.exec_runner.faults_run_again += 1
        assert run is not None  # the loop ran at least once
        self.sources[id(run)] = list(self.exec_runner.last_sources)
        if workload.name == PROBE_WORKLOAD:
            return run  # never explored (DocumentKind._probe): no crash state is loaded
        end = len(run.ops)
        only = None if fault is None else {fault.at + 1, end}
        todo: dict[CrashState, None] = {}
        for model in self.models:
            points = list(crash_points(model, run.initial, run.ops, points=only))
            if fault is None:  # the engine judges every crash point: handed over once
                self._derived[(id(run), model)] = points
            for point in points:
                for s in point.states:
                    digest = s.digest()
                    if digest not in self.observed and model.examines(digest):
                        todo[s] = None  # a state --sample leaves out is never loaded
        self.prefetch(list(todo))
        return run

    def crash_points_of(
        self, run: Run, model: PersistenceModel, points: Collection[int] | None
    ) -> Iterable[CrashPoint]:
        """The crash points of ``run`` under ``model`` (``points``: only those): the ones
        :meth:`_record` derived to load their states ahead, handed over once (the posix
        family's derivation of a Mercurial commit is minutes of CPU); derived afresh
        otherwise (:class:`~crashpoint.scenarios.engine.explore.Kind`)."""
        if points is None:
            derived = self._derived.pop((id(run), model), None)
            if derived is not None:
                return derived
        return crash_points(model, run.initial, run.ops, points=points)

    def _load_once(self, state: CrashState) -> tuple[DocObservation, CrashState]:
        """:meth:`DocumentKind._load_once` on a crash state: the ``--volatile`` files of
        its directory hold garbage (:data:`VOLATILE_RULE`)."""
        token = _CRASH_IMAGE.set(True)
        try:
            return super()._load_once(state)
        finally:
            _CRASH_IMAGE.reset(token)

    def _reload(self, state: CrashState) -> DocObservation:
        """:meth:`DocumentKind._reload`: its value or error is all the judging reads, so a
        reload that overwrote its directory (RocksDB's and LevelDB's every open) is not
        run again traced in full; its ``wrote`` then says nothing."""
        token = _OUTCOME_ONLY.set(True)
        try:
            return super()._reload(state)
        finally:
            _OUTCOME_ONLY.reset(token)

    def prefetch(self, states: list[CrashState]) -> None:
        """Observe ``states`` now, ``jobs`` load processes at a time; with the strace
        driver (``--runner strace``), in batches: one process loads up to
        :data:`BATCH_IMAGES` crash images (:meth:`_batch_observe`), split across ``jobs``
        processes only into batches of :data:`BATCH_SPLIT` or more."""
        if not states:
            return
        if self.exec_runner.batch_load and len(states) > 1:
            size = max(1, min(BATCH_IMAGES, max(-(-len(states) // self.jobs), BATCH_SPLIT)))
            chunks = [states[i : i + size] for i in range(0, len(states), size)]
            alone: list[CrashState] = []  # what a batch could not answer: loaded on its own
            with ThreadPoolExecutor(max_workers=self.jobs) as pool:
                for chunk, got in zip(chunks, pool.map(self._batch_observe, chunks), strict=True):
                    for s, obs in zip(chunk, got, strict=True):
                        if obs is None:
                            alone.append(s)
                        else:
                            self.observed[s.digest()] = obs
            states = alone  # ``jobs`` at a time, below (one by one, it had been)
            if not states:
                return
        if self.jobs == 1 or len(states) == 1:
            for s in states:
                self.observed[s.digest()] = self.observe(s)
            return
        # In waves of ``jobs`` loads: what each wave read decides which of the states left
        # need a load at all (:meth:`_reused`), the same whatever order the loads end in.
        pending = list(states)
        sigs: dict[tuple[int, _Key], tuple[Any, ...]] = {}  # (state, paths) -> bytes there
        with ThreadPoolExecutor(max_workers=self.jobs) as pool:
            while pending:
                left = []
                for s in pending:
                    hit = self._reused(s, sigs)
                    if hit is not None:
                        self.observed[s.digest()] = hit
                    else:
                        left.append(s)
                wave = self._wave(left, sigs)
                for s, obs in zip(wave, pool.map(self.observe, wave), strict=True):
                    self.observed[s.digest()] = obs
                chosen = {id(s) for s in wave}
                pending = [s for s in left if id(s) not in chosen]

    # --- loads that read the same bytes ------------------------------------------------
    def observe(self, state: CrashState) -> DocObservation:
        """:meth:`DocumentKind.observe`, or the observation of a load already run that read
        the same bytes (:meth:`_reused`); a read-only load's inputs are kept for the next."""
        hit = self._reused(state)
        if hit is not None:
            return hit
        obs = super().observe(state)
        self._remember(state, obs)
        return obs

    def _remember(self, state: CrashState, obs: DocObservation) -> None:
        """Keep ``obs`` under what the load of ``state`` looked at (its paths, and for each
        the bytes, the directory's names when it listed one, or its absence), when the load
        was read-only, traced one-shot with :data:`LIGHT_SYSCALLS`, and read no volatile
        file (its garbage is the state's own)."""
        runner = self.exec_runner
        with runner._lock:
            touched = runner.inputs.pop(state.digest(), None)
        if touched is None or obs.wrote or obs.reloaded is not None:
            return
        root = runner.base_dir.rstrip("/") + "/"
        if runner.volatile and any(
            p.startswith(root) and volatile_match(runner.volatile, p[len(root) :]) for p in touched
        ):
            return
        key = tuple(sorted(touched.items()))
        with runner._lock:
            self._answers.setdefault(key, {})[_signature(state, key)] = obs

    def _reused(
        self, state: CrashState, sigs: dict[tuple[int, _Key], tuple[Any, ...]] | None = None
    ) -> DocObservation | None:
        """The observation of a read-only load already run on a state that holds, at every
        path that load looked at, what ``state`` holds (the same bytes, the same names in
        each directory it listed, the same absences): a deterministic load gives the same
        outcome from the same inputs (docs/decisions.md). Counted in
        :attr:`ExecRunner.loads_reused`. ``sigs``: :func:`_signature` results kept across
        :meth:`prefetch`'s waves (each state's is taken once per set of paths)."""
        runner = self.exec_runner
        with runner._lock:
            keys = list(self._answers.items())
        for key, seen in keys:
            obs = seen.get(_cached_signature(state, key, sigs))
            if obs is not None:
                with runner._lock:
                    runner.loads_reused += 1
                return obs
        return None

    def _wave(
        self, states: list[CrashState], sigs: dict[tuple[int, _Key], tuple[Any, ...]]
    ) -> list[CrashState]:
        """Up to ``jobs`` of ``states`` to load now: the first, then each one that differs
        from those chosen at the paths the loads so far looked at (a state like one chosen
        is likely answered by its load), then, while fewer than ``jobs``, the next ones in
        order: a load that writes is never remembered, so states alike at every path
        known would otherwise be loaded one at a time (a core idle: Mercurial's loads
        write caches)."""
        with self.exec_runner._lock:
            keys = list(self._answers)
        if not keys:  # nothing known of what a load looks at: no state is like another
            return states[: self.jobs]
        chosen: list[CrashState] = []
        seen: set[tuple[Any, ...]] = set()
        for s in states:
            sig = tuple(_cached_signature(s, k, sigs) for k in keys)
            if sig in seen:
                continue
            seen.add(sig)
            chosen.append(s)
            if len(chosen) == self.jobs:
                return chosen
        taken = {id(s) for s in chosen}
        for s in states:
            if len(chosen) == self.jobs:
                break
            if id(s) not in taken:
                chosen.append(s)
        return chosen

    def _batch_observe(
        self, chunk: list[CrashState], *, reloads: bool = False
    ) -> list[DocObservation | None]:
        """Load every state of ``chunk`` in one driver process (``load-batch``), each from
        a real directory of its own, traced for its opens (and, forked, the paths it looked
        at): what each load read (A5) is the opens under its directory. Any state gives
        None when the reply is not one result per state: it is loaded on its own
        (:meth:`observe`).

        A state the batch's load overwrote (:func:`_overwrote`: files it only created do
        not count) is answered with ``wrote`` and its ``reloaded``: the disk that load
        left, read back from its directory (:func:`_left_state`), loaded in one more batch
        for every such state of the chunk (``reloads``: that batch, whose writes are not
        followed: only a reload's value or error is judged, ``DocObservation.reloaded``).
        It was loaded again on its own, traced in full to replay what it left into the
        model, then reloaded on its own: two processes a state where Mercurial's loads
        rewrite a cache the crash left torn (docs/decisions.md)."""
        runner = self.exec_runner
        base = runner.base_dir
        with tempfile.TemporaryDirectory(prefix="crashpoint-exec-", dir=scratch_root()) as tmp:
            tmp = os.path.realpath(tmp)
            # one width: no directory's name is a prefix of another's (see ``mine`` below)
            roots = [os.path.join(tmp, f"d{i:04d}") for i in range(len(chunk))]
            for s, root in zip(chunk, roots, strict=True):
                materialize(s, base, root, runner.volatile)
            before = [_snapshot(r) for r in roots]
            aside = RecordingFileSystem(MemoryFileSystem(CrashState((), ("/",))))
            done = runner.run(
                shlex.split(runner.batch_load),
                aside,
                tmp=tmp,
                real_root=roots[0],
                label="load batch",
                traced=True,
                light=True,
                stdin=json.dumps(roots).encode(),
            )
            after = [_snapshot(r) for r in roots]
            changed = [_overwrote(b, a) for b, a in zip(before, after, strict=True)]
            lefts = {
                i: _left_state(chunk[i], base, roots[i], after[i])
                for i, wrote in enumerate(changed)
                if wrote and not reloads
            }
        try:
            replies = json.loads(done.proc.stdout.decode("utf-8"), parse_int=_number)
        except (UnicodeDecodeError, ValueError):
            replies = None
        if done.proc.returncode != 0 or not isinstance(replies, list) or len(replies) != len(chunk):
            return [None] * len(chunk)
        # Each state's replay is fed the calls naming its directory (``-y`` prints every
        # descriptor's path, the working directory's included, so an open under it names
        # it) and the forks: the others' opens are outside it, which its replay skips.
        mine: list[list[Syscall]] = [[] for _ in roots]
        where = {_hexed(r): i for i, r in enumerate(roots)}
        head, width = _hexed(os.path.join(tmp, "d")), len(_hexed(roots[0]))
        for c in done.calls:
            at = c.args.find(head) if c.name != "fork-of" else -1
            i = where.get(c.args[at : at + width]) if at >= 0 else None
            if i is not None:
                mine[i].append(c)
                continue
            for calls in mine:  # (a call naming no directory: every replay sees it)
                calls.append(c)
        out: list[DocObservation | None] = []
        for s, root, reply, wrote, calls in zip(chunk, roots, replies, changed, mine, strict=True):
            if wrote and not reloads:
                with runner._lock:
                    runner.writing_loads.add(s.digest())
            if not isinstance(reply, dict):
                out.append(None)
                continue
            rec = runner.replay(RecordingFileSystem(MemoryFileSystem(s)), root)
            rec.feed(calls)
            files = {p for p, _ in s.files}
            reads = frozenset(r for r in rec.reads if r in files)
            if reply.get("ok") is True:
                out.append(DocObservation(reply.get("value"), None, reads, wrote))
            else:
                error = _error(LoadExit(f"exit status 1: {reply.get('error')}"))
                out.append(DocObservation(None, error, reads, wrote))
        if lefts:
            order = sorted(lefts)
            again = self._batch_observe([lefts[i] for i in order], reloads=True)
            for i, reloaded in zip(order, again, strict=True):
                obs = out[i]
                if obs is None:
                    continue
                if reloaded is None:  # the reload batch failed: reloaded on its own
                    reloaded = self._reload(lefts[i])
                out[i] = dataclasses.replace(obs, reloaded=reloaded)
        return out

    def replay(
        self, workload: DocWorkload, model: PersistenceModel, k: int, fault: Fault | None
    ) -> str:
        r = self.exec_runner
        what = (
            f"{shlex.quote(self.shown)} --runner strace"
            if self.shown
            else f"--exec --save {shlex.quote(r.save_cmd)} --load {shlex.quote(r.load_cmd)}"
        )
        parts = [
            f"crashpoint verify {what} --workload {workload.name}",
            f"--model {model.name} --seed {self.seed}",
        ]
        if fault is not None:
            parts.append(f"--fault {fault_spec(fault)}")
        parts.append(f"--crash-point {k}")
        return " ".join(parts)


@dataclass(slots=True)
class ExecFacts:
    """What a report adds for ``--exec``: the ignore rule and what it ignored,
    processes run (``counts``: by kind, see :attr:`ExecRunner.counts`), whether loads
    were batched per crash state, faults that could not be targeted, faulted records run
    again because their injection missed its operation (``run_again``, :data:`INJECT_TRIES`),
    the ``--volatile`` globs (``volatile``; :data:`VOLATILE_RULE`) and the volatile files
    the commands mapped shared and writable (``volatile_mapped``), and the crash states
    whose load was answered by a load that read the same bytes (``loads_reused``)."""

    ignored_rule: str = IGNORED_RULE
    ignored: list[str] = field(default_factory=list)
    processes: int = 0
    untargeted: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    batch: bool = False
    run_again: int = 0
    volatile: list[str] = field(default_factory=list)
    volatile_mapped: list[str] = field(default_factory=list)
    server: str = ""
    """Why the strace driver's fork server was given up ("" when it was not): the run
    went on one-shot (not a report key)."""
    loads_reused: int = 0
    """Crash states not loaded by a process of their own: a read-only load already run
    looked at the same bytes (report key ``loads_reused``; docs/decisions.md)."""

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ignored_rule": self.ignored_rule,
            "ignored": list(self.ignored[:50]),
            "processes": self.processes,
            "process_kinds": dict(sorted(self.counts.items())),
            "batched_loads": self.batch,
            "untargeted_faults": list(self.untargeted),
            "faults_run_again": self.run_again,
            "loads_reused": self.loads_reused,
        }
        if self.volatile:  # only when given: reports of runs without it are unchanged
            out["volatile"] = {
                "globs": list(self.volatile),
                "rule": VOLATILE_RULE,
                "mapped": list(self.volatile_mapped),
            }
        return out


def verify_exec(
    save: str,
    load: str,
    *,
    models: Sequence[PersistenceModel],
    faults: bool = False,
    workloads: Iterable[str] | None = None,
    seed: int = 0,
    examples: int = 20,
    crash_point: int | None = None,
    fault: Fault | None = None,
    timeout: float | None = None,
    jobs: int = 1,
    shrink: bool = True,
    max_output: int = MAX_OUTPUT,
    shown: str = "",
    volatile: Sequence[str] = (),
    server: bool = True,
) -> tuple[Any, ExecFacts]:
    """Verify a document storage given as commands (see the module docstring).

    ``volatile``: globs relative to ``{dir}`` naming files the program rebuilds after a
    crash and never trusts (``--volatile``, :data:`VOLATILE_RULE`): a shared writable
    ``mmap`` of one leaves the verdict complete, and every crash state holds garbage in
    its place (:func:`volatile_garbage`), so a load that reads it back as data fails.
    Raises ValueError for a glob that is absolute, empty or has ``..``.

    ``max_output``: bytes a command may print on each stream, and its strace log may
    hold (:func:`run_process`). ``shown``: the Python TARGET the commands run
    (``--runner strace``, :func:`driver_commands`): the report and the replay
    commands name it, and (``server``) clean traced calls run in forked children of
    up to ``jobs`` fork servers (:class:`DriverPool`; ``server=False``: a process of
    its own each, as a user's ``--exec`` commands always do).

    Returns ``(VerifyResult, ExecFacts)``. Raises BadTarget (no strace: the reason;
    a bad command; a clean save that fails; OutputTooLarge), TargetTimeout, KeyError
    (an unknown workload)."""

    reason = strace_available()
    if reason is not None:
        raise BadTarget(f"--exec needs strace: {reason}")
    runner = ExecRunner(save, load, timeout=timeout, max_output=max_output, volatile=volatile)
    names = list(dict.fromkeys(workloads)) if workloads is not None else list(BASIC_WORKLOADS)
    doc = ExecDocumentKind(runner, models=models, jobs=jobs, seed=seed)
    doc.examples = examples
    mode = "strace" if shown else "exec"
    result = VerifyResult("--exec", "document", mode, [m.name for m in models], seed=seed)
    result.target = shown or f"--exec --save {save!r} --load {load!r}"
    doc.target = result.target
    doc.shown = shown
    if shown:
        runner.batch_load = driver_batch_load(shown)
        if server:
            runner.server = DriverPool(
                shown, jobs=jobs, cwd=runner.cwd, timeout=timeout, max_output=max_output
            )
    try:
        _verify_exec_runs(
            doc, runner, result, names, models, faults, examples, crash_point, fault, shrink
        )
    finally:
        if runner.server is not None:
            runner.server.close()
            if runner.server.started:
                runner.processes += runner.server.started
                runner.counts["server"] = runner.server.started
    facts = ExecFacts(
        ignored=list(runner.ignored),
        processes=runner.processes,
        untargeted=list(runner.untargeted),
        counts=dict(runner.counts),
        run_again=runner.faults_run_again,
        volatile=list(runner.volatile),
        volatile_mapped=list(runner.volatile_mapped),
        server=runner.server.failed if runner.server is not None else "",
        loads_reused=runner.loads_reused,
    )
    return result, facts


def _verify_exec_runs(
    doc: ExecDocumentKind,
    runner: ExecRunner,
    result: VerifyResult,
    names: list[str],
    models: Sequence[PersistenceModel],
    faults: bool,
    examples: int,
    crash_point: int | None,
    fault: Fault | None,
    shrink: bool,
) -> None:
    """:func:`verify_exec`'s preflight and runs, into ``result``."""
    try:
        _preflight(doc, runner, "--exec")
    except BadTarget as exc:
        raise BadTarget(str(exc).replace("target '--exec'", "the --save/--load commands")) from None
    for wname in names:
        for m in models:
            if fault is not None:
                r = explore_kind(
                    doc,
                    doc.workload(wname),
                    model=m,
                    target=doc.target,
                    faults=[fault],
                    crashes=False,
                    crash_point=crash_point,
                    fault_window=None,
                    observed=doc.observed,
                )
            else:
                r = _verify_workload(
                    doc,
                    wname,
                    m,
                    faults=False,
                    examples=examples,
                    crash_point=crash_point,
                    fault=None,
                    shrink=shrink,
                    shrunk=result.shrunk,
                )
                if faults and wname.split(":", 1)[0] != "random":
                    _merge(r, _faulted(doc, doc.workload(wname), m))
            result.results.append(r)
    result.leftover_ids = set(doc.leftovers)
    result.leftovers = len(result.leftover_ids)


def _faulted(doc: ExecDocumentKind, workload: DocWorkload, model: PersistenceModel) -> EngineResult:
    base = doc.record(workload, None)
    plan = [f for f in exec_fault_plan(base.ops) if f not in doc.armed_faults(workload, base)]
    return explore_kind(
        doc,
        workload,
        model=model,
        target=doc.target,
        faults=plan,
        crashes=False,
        observed=doc.observed,
    )


def _merge(into: EngineResult, extra: EngineResult) -> None:
    into.crash_points += extra.crash_points
    into.raw_states += extra.raw_states
    into.cut += extra.cut
    into.state_ids |= extra.state_ids
    into.faults += extra.faults
    into.seconds += extra.seconds
    into.check_seconds += extra.check_seconds
    into.invariants = tuple(dict.fromkeys(into.invariants + extra.invariants))
    into.counterexamples += extra.counterexamples
    into.warnings += extra.warnings
    for u in extra.unsupported:
        if u not in into.unsupported:
            into.unsupported.append(u)
    for pair in extra.renamed:  # fresh names of the faulted re-runs (issue 22)
        if pair not in into.renamed:
            into.renamed.append(pair)


DRIVER = os.path.abspath(strace_driver.__file__)
"""The driver a Python TARGET runs through under ``--runner strace`` (by path)."""


BATCH_IMAGES = 32
"""The most crash images one batch load process of the strace driver loads."""

BATCH_SPLIT = 16
"""Crash images a batch keeps before it is split across ``jobs`` processes: a process
(a fork, its tracing, its exit) costs more than loading a few small images in another."""


def driver_batch_load(target: str) -> str:
    """The command loading a JSON array of directories with the driver (``load-batch``)."""
    return (
        f"{shlex.quote(sys.executable)} -B {shlex.quote(DRIVER)} document "
        f"{shlex.quote(target)} load-batch"
    )


def driver_commands(target: str, kind: str) -> tuple[str, str, str]:
    """``(save, load, storage)`` command templates running the Python ``target``
    (``module:factory`` or ``file.py:factory``) through the strace driver in a child
    interpreter (this one's): the document form's save and load, or the state-storage
    form's one command (the unused ones are "")."""
    head = f"{shlex.quote(sys.executable)} -B {shlex.quote(DRIVER)}"
    spec = shlex.quote(target)
    if kind == "state-storage":
        return "", "", f"{head} storage {spec} {{dir}}"
    return (
        f"{head} document {spec} save {{dir}} {{value}}",
        f"{head} document {spec} load {{dir}}",
        "",
    )


# --- the fork server of the strace driver (issue 23) ----------------------------------


class ServerGone(Exception):
    """The driver's fork server cannot answer: it did not start, its target's import did
    what a one-shot child's trace would show (a write, an unsupported call), it died or
    broke the protocol. The request runs one-shot instead (:meth:`ExecRunner.run`),
    unless ``ran``: its child had started on the request's directory, which is no longer
    the state it was given (BadTarget, exit 2)."""

    ran = False


_ONE_SHOT: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "crashpoint_one_shot", default=False
)
"""Set while a call must run as a one-shot traced process (the probe recording a faulted
call's sources: strace numbers a call from the tracee's ``execve``, not from a fork)."""

SERVER_START = 60.0
"""Seconds a fork server may take to start (its interpreter and the target's import),
when no ``--timeout`` says otherwise."""

_NO_WRITE = frozenset({"read", "readv", "lseek", "close", "fcntl"})
"""Calls of a server's start-up not replayed to check it (with its read-only opens): a
write's own descriptor path (``-y``) says where it went, the rest moves no byte."""
_WRITABLE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC


def _may_write(c: Syscall) -> bool:
    """Whether ``c`` (a call of a server's start-up) can matter to its import check."""
    if c.name in ("open", "openat"):
        parts = c.args.split(", ")  # (-xx: a string's commas are hex)
        try:
            flags = int(parts[2 if c.name == "openat" else 1], 0)
        except (IndexError, ValueError):
            return True
        return bool(flags & _WRITABLE) or flags & _O_TMPFILE_FLAG == _O_TMPFILE_FLAG
    return c.name not in _NO_WRITE


_O_TMPFILE_FLAG = getattr(os, "O_TMPFILE", 0o20200000)


def _marked(calls: list[Syscall], pid: int, mark: str) -> int | None:
    """The index of ``pid``'s open of the path ``mark`` in ``calls``, or None."""
    text = '"' + _hexed(mark) + '"'
    return next(
        (
            i
            for i, c in enumerate(calls)
            if c.pid == pid and c.name in ("open", "openat") and text in c.args
        ),
        None,
    )


def _hexed(text: str) -> str:
    """``text`` as ``strace -xx`` prints a string's bytes."""
    return "".join(f"\\x{b:02x}" for b in text.encode())


INLINE_VALUE = 256 * 1024
"""Bytes: a request carrying its saved value up to this size goes to the fork server whole
(the child reads no value file; the server takes messages of up to 1 MiB)."""


class DriverServer:
    """One fork server of the strace driver (:func:`strace_driver.serve`): a driver
    interpreter that imported TARGET once, under one ``strace -f`` (the same
    :func:`strace_argv` a one-shot child runs under), contained as :func:`run_process`
    contains a command. :meth:`call` runs one request in a forked child and returns what
    a one-shot driver process gives: its exit status, output and calls (the child's own,
    from the call after :data:`strace_driver.MARK`; the server's are dropped).

    Raises ServerGone (start, protocol), TargetTimeout (past ``timeout`` seconds: the
    server is killed), OutputTooLarge (a stream or the request's log past
    ``max_output`` bytes: killed)."""

    def __init__(
        self,
        target: str,
        *,
        cwd: str,
        timeout: float | None,
        max_output: int,
        trace: str = SERVER_SYSCALLS,
    ) -> None:
        self.target, self.cwd, self.timeout, self.max_output = target, cwd, timeout, max_output
        self.trace = trace
        """What its strace traces (:data:`SERVER_SYSCALLS`, or :data:`TRACED_SYSCALLS`
        once inputs proved of no use: :meth:`DriverPool.narrow`)."""
        self.tmp = os.path.realpath(
            tempfile.mkdtemp(prefix="crashpoint-server-", dir=scratch_root())
        )
        self.log = os.path.join(self.tmp, "strace.log")
        self.offset = 0
        self.pid = 0  # the server's pid as its tracer sees it
        self.proc: subprocess.Popen[bytes] | None = None
        self.token = os.urandom(8).hex()
        self.ignored: list[str] = []
        self.startup: Counter[str] = Counter()
        """The server's calls by name up to its ready mark (its start)."""
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self._start(theirs)
        except BaseException:
            self.close()
            raise
        finally:
            theirs.close()

    def _deadline(self, seconds: float | None) -> float | None:
        return None if seconds is None else time.monotonic() + seconds

    def _start(self, theirs: socket.socket) -> None:
        argv = [sys.executable, "-B", DRIVER, "serve", self.target, str(theirs.fileno())]
        full = strace_argv(argv, self.log, exits=True, trace=self.trace)
        if pid_namespace():
            wrap = [*_UNSHARE[:-1], "--mount-proc", "--"] if own_proc() else list(_UNSHARE)
            full = [*wrap, *full]
        env = dict(os.environ, **{_TOKEN: self.token})
        with _LIVE_LOCK:
            if _STOPPING.is_set():
                raise KeyboardInterrupt
            with open(os.path.join(self.tmp, "stderr"), "wb") as err:
                try:
                    self.proc = subprocess.Popen(
                        full,
                        cwd=self.cwd,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.DEVNULL,
                        stderr=err,
                        start_new_session=True,
                        pass_fds=(theirs.fileno(),),
                    )
                except OSError as exc:
                    raise ServerGone(f"cannot start: {exc.strerror}") from None
            _LIVE[self.proc.pid] = self.token
        theirs.close()
        deadline = self._deadline(SERVER_START if self.timeout is None else self.timeout)
        msg = self._recv(deadline, "start")
        if "error" in msg or not isinstance(msg.get("pid"), int):
            raise ServerGone(f"did not start: {msg.get('error', msg)}")
        self.pid = int(msg["pid"])
        # What the server did before it listened (its interpreter's start-up, TARGET's
        # import) is in no child's trace: a server whose import wrote, or did what the
        # model cannot represent, is not used (a one-shot child's trace would show it).
        lines = self._lines_until(f"{self.pid} ", _hexed(strace_driver.MARK + ".ready"), deadline)
        started = parse_log(lines)
        self.startup = Counter(c.name for c in started)
        calls = [c for c in started if _may_write(c)]
        replay = StraceReplay(
            RecordingFileSystem(MemoryFileSystem(CrashState((), ("/",)))),
            os.path.join(self.tmp, "no-such-dir"),
            "/",
            cwd=self.cwd,
        )
        replay.feed(calls)
        _drop_probes(replay, calls)  # tempfile's probe is no escape
        odd = replay.escapes + replay.unsupported + replay.mapped + replay.mismatched
        if odd:
            raise ServerGone(f"TARGET's import did more than read: {odd[0]}")
        self.ignored = list(replay.ignored)
        self._consumed()

    def _recv(self, deadline: float | None, what: str) -> dict[str, Any]:
        """The server's next message (a JSON object), within ``deadline``."""
        while True:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                self.kill()
                raise TargetTimeout(f"the strace driver's server ({what})", self.timeout or 0)
            self.sock.settimeout(0.2 if left is None else min(left, 0.2))
            try:
                data = self.sock.recv(1 << 16)
            except TimeoutError:
                if _STOPPING.is_set():
                    raise KeyboardInterrupt from None
                continue
            except OSError as exc:
                raise ServerGone(f"{what}: {exc}") from None
            if not data:
                raise ServerGone(f"{what}: the server exited")
            try:
                msg = json.loads(data.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                raise ServerGone(f"{what}: not a message: {data[:60]!r}") from None
            if not isinstance(msg, dict):
                raise ServerGone(f"{what}: not a message: {data[:60]!r}")
            return msg

    def _lines_until(self, head: str, needle: str, deadline: float | None) -> list[str]:
        """The log's lines from :attr:`offset` to the first one starting with ``head``
        and holding ``needle`` (included), waited for; :attr:`offset` moves past it."""
        fd = os.open(self.log, os.O_RDONLY)
        try:
            buf = bytearray()
            scanned = 0  # bytes of buf in whole lines already looked at
            while True:
                chunk = os.pread(fd, 1 << 20, self.offset + len(buf))
                if chunk:
                    buf += chunk
                    if not scanned and buf[:1] == b"\0":
                        # the hole :meth:`_consumed` left where strace's lines went unread
                        hole = len(buf) - len(buf.lstrip(b"\0"))
                        del buf[:hole]
                        self.offset += hole
                    if len(buf) > self.max_output:
                        self.kill()
                        raise OutputTooLarge(
                            "the strace driver's request", "strace log", self.max_output, len(buf)
                        )
                    while True:
                        nl = buf.find(b"\n", scanned)
                        if nl < 0:
                            break
                        line = buf[scanned:nl].decode("utf-8", "surrogateescape")
                        scanned = nl + 1
                        if line.startswith(head) and needle in line:
                            self.offset += scanned
                            text = buf[:scanned].decode("utf-8", "surrogateescape")
                            return text.splitlines()
                    continue
                if deadline is not None and time.monotonic() >= deadline:
                    self.kill()
                    raise TargetTimeout("the strace driver's server (its log)", self.timeout or 0)
                if self.proc is not None and self.proc.poll() is not None:
                    raise ServerGone("the server exited before its log was whole")
                time.sleep(0.0005)
        finally:
            os.close(fd)

    def call(
        self, args: Sequence[str], stdin: bytes | None, label: str
    ) -> tuple[subprocess.CompletedProcess[bytes], list[Syscall]]:
        """Run the driver's command line ``args`` in a forked child (see the class)."""
        deadline = self._deadline(self.timeout)
        in_r, in_w = os.pipe()
        writer = [in_w]
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        message = json.dumps({"argv": list(args)}).encode()
        if len(args) == 5 and args[0] == "document" and args[2] == "save":
            with contextlib.suppress(OSError, UnicodeDecodeError):
                if os.path.getsize(args[4]) <= INLINE_VALUE:
                    with open(args[4], encoding="utf-8") as f:
                        inline = json.dumps({"argv": list(args), "value": f.read()}).encode()
                    if len(inline) <= INLINE_VALUE:
                        message = inline
        try:
            try:
                socket.send_fds(self.sock, [message], [in_r, out_w, err_w])
            except OSError as exc:
                raise ServerGone(f"send: {exc}") from None
        finally:
            for fd in (in_r, out_w, err_w):
                os.close(fd)
        try:
            msg = self._recv(deadline, label)
            if not isinstance(msg.get("pid"), int):
                raise ServerGone(f"{label}: {msg.get('error', msg)}")
            child = int(msg["pid"])
            try:
                out, err, status = self._pump(label, writer, out_r, err_r, stdin or b"", deadline)
            except ServerGone as exc:
                exc.ran = True
                raise
        finally:
            os.close(out_r)
            os.close(err_r)
            if writer:  # (_pump closes it once the request's stdin is written)
                os.close(writer.pop())
        try:
            lines = self._lines_until(f"{child} ", "+++", deadline)
        except ServerGone as exc:
            exc.ran = True
            raise
        mine = [ln for ln in lines if not ln.startswith(f"{self.pid} ")]
        first = next((i for i, ln in enumerate(mine) if ln.startswith(f"{child} ")), 0)
        calls = parse_log(mine[first:])
        start = _marked(calls, child, strace_driver.MARK)
        if start is None:
            gone = ServerGone(f"{label}: the child's trace has no start mark")
            gone.ran = True
            raise gone
        calls = calls[start + 1 :]
        # The exit check's own calls (strace_driver._quiet_exit) are not the target's.
        end = _marked(calls, child, strace_driver.MARK + ".exit")
        if end is not None:
            again = _marked(calls, child, strace_driver.MARK + ".resume")
            calls = calls[:end] + ([] if again is None else calls[again + 1 :])
        self._consumed()
        argv = [sys.executable, "-B", DRIVER, *args]
        return subprocess.CompletedProcess(argv, status, out, err), calls

    def _consumed(self) -> None:
        """Empty the log read so far (strace, which opened it without ``O_APPEND``, goes on
        writing at its own offset, after a hole): a job's requests never pile up their
        lines on disk, as a one-shot process's log is removed after it."""
        os.truncate(self.log, 0)

    def _pump(
        self,
        label: str,
        writer: list[int],
        out_r: int,
        err_r: int,
        stdin: bytes,
        deadline: float | None,
    ) -> tuple[bytes, bytes, int]:
        """The child's output (read until both pipes close, or :data:`GRACE` seconds after
        it ended), its stdin written (``writer``: the pipe's end, closed and taken out
        when written), and its exit status from the server."""
        bufs = {out_r: bytearray(), err_r: bytearray()}
        names = {out_r: "standard output", err_r: "standard error"}
        pending = memoryview(stdin)
        sel = selectors.DefaultSelector()
        for fd in bufs:
            sel.register(fd, selectors.EVENT_READ)
        sel.register(self.sock, selectors.EVENT_READ)
        in_w = writer[0]
        if pending:
            os.set_blocking(in_w, False)
            sel.register(in_w, selectors.EVENT_WRITE)
        else:
            os.close(writer.pop())
        status: int | None = None
        ended = 0.0
        try:
            while len(sel.get_map()) > (1 if status is None else 0) or status is None:
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    self.kill()
                    raise TargetTimeout(label, self.timeout or 0)
                if status is not None and now - ended > GRACE:
                    break
                if _STOPPING.is_set():
                    raise KeyboardInterrupt
                for key, _ in sel.select(0.2):
                    fd = key.fd
                    if fd in bufs:
                        chunk = os.read(fd, PIPE_CHUNK)
                        if not chunk:
                            sel.unregister(fd)
                            continue
                        bufs[fd] += chunk
                        if len(bufs[fd]) > self.max_output:
                            self.kill()
                            raise OutputTooLarge(label, names[fd], self.max_output, len(bufs[fd]))
                    elif fd == in_w:
                        try:
                            n = os.write(fd, pending[:PIPE_CHUNK])
                        except BrokenPipeError:
                            n = len(pending)
                        pending = pending[n:]
                        if not pending:
                            sel.unregister(fd)
                            os.close(writer.pop())
                    else:
                        msg = self._recv(deadline, label)
                        if not isinstance(msg.get("status"), int):
                            raise ServerGone(f"{label}: {msg.get('error', msg)}")
                        status, ended = int(msg["status"]), time.monotonic()
                        sel.unregister(self.sock)
        finally:
            sel.close()
        assert status is not None
        return bytes(bufs[out_r]), bytes(bufs[err_r]), status

    def kill(self) -> None:
        """Kill the server, its tracer and every child (as :func:`_kill` a command)."""
        if self.proc is not None and self.proc.returncode is None:
            _kill(self.proc.pid, self.token)

    def close(self) -> None:
        """Stop the server (its socket closed: it exits; killed after :data:`GRACE`
        seconds), reap it and remove its log."""
        with contextlib.suppress(OSError):
            self.sock.close()
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(GRACE)
            self.kill()
            self.proc.wait()
            with _LIVE_LOCK:
                _LIVE.pop(self.proc.pid, None)
        shutil.rmtree(self.tmp, ignore_errors=True)


ANOTHER_SERVER = 0.25
"""Seconds a request waits for a busy fork server before another is started (up to
``jobs``): quick requests share one server (its start costs more than they do), slow ones
run ``jobs`` at a time."""


class DriverPool:
    """Up to ``jobs`` fork servers of the strace driver for one run (:class:`DriverServer`),
    the first started by the first request, each other when a request waited
    :data:`ANOTHER_SERVER` seconds and none was idle. The first that cannot start ends the
    pool: :attr:`failed` says why (ServerGone) and every later request runs one-shot."""

    def __init__(
        self, target: str, *, jobs: int, cwd: str, timeout: float | None, max_output: int
    ) -> None:
        self.target, self.jobs, self.cwd = target, max(1, jobs), cwd
        self.timeout, self.max_output = timeout, max_output
        self.idle: list[DriverServer] = []
        self.servers: list[DriverServer] = []
        self.starting = 0
        self.started = 0
        """Servers started (each one process: its tracer's and ``unshare``'s aside)."""
        self.failed = ""
        self.trace = SERVER_SYSCALLS
        """What a server started now traces (:meth:`narrow`)."""
        self.startup: dict[str, int] | None = None
        """The first server's start (up to its ready mark): its calls by name
        (:meth:`ExecRunner.estimate`)."""
        self._cond = threading.Condition()

    def take(self) -> DriverServer | None:
        """An idle server, or a new one; None when the pool failed."""
        since = time.monotonic()
        with self._cond:
            while not self.failed:
                if self.idle:
                    return self.idle.pop()
                live = len(self.servers) + self.starting
                if live < self.jobs and (live == 0 or time.monotonic() - since >= ANOTHER_SERVER):
                    self.starting += 1
                    break
                self._cond.wait(ANOTHER_SERVER / 4)
                if _STOPPING.is_set():
                    raise KeyboardInterrupt
            else:
                return None
        server: DriverServer | None = None
        with self._cond:
            self.started += 1
        try:
            server = DriverServer(
                self.target,
                cwd=self.cwd,
                timeout=self.timeout,
                max_output=self.max_output,
                trace=self.trace,
            )
        except ServerGone as exc:
            with self._cond:
                self.failed = self.failed or f"the driver's fork server: {exc}"
        finally:
            with self._cond:
                self.starting -= 1
                if server is not None:
                    self.servers.append(server)
                    if self.startup is None:
                        self.startup = dict(server.startup)
                self._cond.notify_all()
        return server

    def narrow(self) -> None:
        """From now on, servers trace what a one-shot process is traced for
        (:data:`TRACED_SYSCALLS`), not the paths a load looks at: no load was answered
        by another's, and each traced ``stat`` is a stop of the tracer (a forked
        Mercurial load: 126 ms against 157 ms). A server tracing more is retired when it
        is given back; another starts in its place."""
        with self._cond:
            self.trace = TRACED_SYSCALLS

    def give(self, server: DriverServer, ok: bool) -> None:
        """``server`` back after a request; ``ok`` False: it is closed (it broke, or was
        killed at a timeout) and another may start in its place; a server tracing more
        than :meth:`narrow` left is closed the same way."""
        with self._cond:
            ok = ok and server.trace == self.trace
        if not ok:
            server.kill()
            server.close()
        with self._cond:
            if ok:
                self.idle.append(server)
            else:
                self.servers.remove(server)
            self._cond.notify_all()

    def close(self) -> None:
        """Stop every server (each reaped: its CPU time is this process's children's)."""
        with self._cond:
            servers, self.servers, self.idle = list(self.servers), [], []
        for server in servers:
            server.close()


def check_exec_args(args: Any) -> None:
    """The ``--exec`` flags of ``crashpoint verify``, checked. Raises ValueError (one
    line) for a TARGET given with ``--exec``, a missing ``--save``/``--load``, a
    placeholder missing, an option that does not apply, or a ``--volatile`` glob that is
    absolute, empty or has ``..``, or ``$CRASHPOINT_SCRATCH`` naming no writable directory
    (:func:`scratch_root`)."""
    scratch_root()
    if args.target:
        raise ValueError("--exec takes no TARGET: give the commands with --save and --load")
    volatile = getattr(args, "volatile", None) or []
    if volatile:
        if args.kind == "state-storage":
            raise ValueError(
                "--volatile applies to the document kind only: a state storage's read-only "
                "requests run on the model's files both in the recording and in crash states, "
                "so garbage could not be put in crash states alone"
            )
        check_volatile(volatile)
    if args.exec:
        if args.kind != "state-storage":
            raise ValueError("--exec CMD is the state-storage form: add --kind state-storage")
        if args.save or args.load:
            raise ValueError("--save/--load are the document form: --exec CMD takes neither")
        try:
            render_argv(args.exec, dir="D")
        except BadTarget as exc:
            raise ValueError(str(exc)) from None
        return
    if args.kind != "document":
        raise ValueError("--exec --save/--load verifies a document store: drop --kind")
    if not args.save or not args.load:
        raise ValueError("--exec needs --save 'CMD {dir} {value}' and --load 'CMD {dir}'")
    if args.values is not None:
        raise ValueError("--values does not apply to --exec (values are JSON)")
    try:
        render_argv(args.save, dir="D", value="V")
        render_argv(args.load, dir="D")
    except BadTarget as exc:
        raise ValueError(str(exc)) from None


# --- the state-storage kind ----------------------------------------------------------


class ExecStateStorage:
    """The six methods of SPEC.md §6, each one process of the command (a JSON request
    on stdin, a JSON reply on stdout; see ``examples/exec/seed_storage.js``).

    ``save``, ``delete``, ``mark_not_resumable`` and ``load_or_create`` run under
    strace and are replayed into ``fs``. ``load`` and ``exists`` run plain, once per
    distinct (files, request), and are re-run under strace only when they changed a
    file. A reply ``{"ok": false, "code": C}`` raises ``StateError(C)``; a reply that
    is not JSON raises ``StateError("state_corrupt")`` naming the call."""

    def __init__(self, runner: ExecRunner, fs: Any, base_dir: str) -> None:
        self._runner = runner
        self._doc = ExecDocument(runner, fs)

    def _call(self, op: str, session_id: str, state: Any = None) -> dict[str, Any]:
        runner, doc = self._runner, self._doc
        body = _request(op, session_id, state)

        def argv(tmp: str, root: str) -> list[str]:
            return render_argv(runner.storage_cmd, dir=root)

        # load and exists change nothing; load_or_create on a filesystem that keeps no
        # trace (the C1 probe, conformance) is asked how many files it changed: a run
        # that changed none adds no mutation to it. Both run plain first.
        if op in ("load", "exists") or (
            op == "load_or_create" and not isinstance(doc.fs, RecordingFileSystem)
        ):
            rc, out, err, wrote = runner.plain_call(doc._state(), body)
            if wrote:
                done = doc.traced(op, body.decode(), argv, body)
                rc, out, err = done.proc.returncode, done.proc.stdout, done.proc.stderr
        else:
            done = doc.traced(op, body.decode(), argv, body)
            rc, out, err = done.proc.returncode, done.proc.stdout, done.proc.stderr
        return _reply(op, rc, out, err)

    # --- SPEC.md §6 -------------------------------------------------------------
    def save(self, state: Any) -> None:
        self._call("save", state.session_id, state)

    def load(self, session_id: str) -> Any:
        return _decoded(self._call("load", session_id))

    def load_or_create(self, session_id: str, initial_metadata: Any = None) -> Any:
        fresh = AgentState.new(session_id, dict(initial_metadata or {}))
        return _decoded(self._call("load_or_create", session_id, fresh))

    def delete(self, session_id: str) -> None:
        self._call("delete", session_id)

    def exists(self, session_id: str) -> bool:
        return bool(self._call("exists", session_id).get("exists"))

    def mark_not_resumable(self, session_id: str) -> None:
        self._call("mark_not_resumable", session_id)


def _request(op: str, session_id: str, state: Any = None) -> bytes:
    """The protocol request of ``op`` (JSON, sorted keys: a cache key of its reply)."""
    req: dict[str, Any] = {"op": op, "sessionId": session_id}
    if state is not None:
        req["state"] = encode(state)
    return json.dumps(req, sort_keys=True).encode()


def _snapshot(root: str) -> dict[str, tuple[int, ...] | bytes]:
    """Every directory and file under ``root``: identity, size and times (a rewrite of
    the same bytes, a rename over a file, a touch show), and each file's bytes (a
    symbolic link's target, never followed: Mercurial's lock names a process)."""
    out: dict[str, tuple[int, ...] | bytes] = {}
    for dirpath, _dirs, filenames in os.walk(root):
        st = os.stat(dirpath)
        out[dirpath] = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        for name in filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            out[path + "\0stat"] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            if stat.S_ISLNK(st.st_mode):
                out[path] = symlink_content(os.fsencode(os.readlink(path)))
                continue
            with open(path, "rb") as f:
                out[path] = f.read()
    return out


def _left_state(
    state: CrashState, model_root: str, real_root: str, after: dict[str, Any]
) -> CrashState:
    """The disk a load of ``state`` left, from :func:`_snapshot` ``after`` of the real
    directory ``real_root`` it ran in (the inverse of :func:`materialize`): its files
    (a symbolic link as :func:`~crashpoint.faultfs.symlink_content` of its target) and
    directories under ``model_root``, and what ``state`` holds outside it."""
    prefix = model_root.rstrip("/") + "/"
    files = {p: b for p, b in state.files if not p.startswith(prefix)}
    dirs = {d for d in state.dirs if d != model_root and not d.startswith(prefix)}
    cut = len(real_root)
    for key, held in after.items():
        if key.endswith("\0stat"):
            continue
        rel = key[cut:].lstrip("/")
        path = prefix + rel if rel else model_root
        if isinstance(held, bytes):
            files[path] = held
        else:
            dirs.add(path)
    return CrashState(tuple(sorted(files.items())), tuple(sorted(dirs)))


def _overwrote(before: dict[str, tuple[int, ...] | bytes], after: dict[str, Any]) -> bool:
    """Whether a document load changed what the crash state held (:func:`_snapshot`s of
    its directory before and after): a file's bytes or a link's target changed, a file
    or directory removed. Files and directories it only created (Mercurial's caches, a
    lock file) change nothing the document kind judges: "creating a file that was not
    there overwrites nothing" (DocumentKind._load_once), so the load's observation is the
    one its opens give, and it needs no full trace."""
    for key, held in before.items():
        if isinstance(held, bytes):
            if after.get(key) != held:
                return True
        elif not key.endswith("\0stat") and key not in after:
            return True
    return False


def _replies(out: bytes, n: int) -> list[bytes] | None:
    """A batch reply split into ``n`` protocol replies (each as JSON bytes), or None
    when ``out`` is not a JSON array of ``n`` objects with a boolean ``ok``."""
    try:
        replies = json.loads(out.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(replies, list) or len(replies) != n:
        return None
    if not all(isinstance(r, dict) and isinstance(r.get("ok"), bool) for r in replies):
        return None
    return [json.dumps(r).encode() for r in replies]


def _reply(op: str, rc: int, out: bytes, err: bytes) -> dict[str, Any]:
    """A protocol reply as a dict; ``{"ok": false, "code": C}`` raises ``StateError(C)``
    with the reply's ``"retryability"`` (``never``/``conditional``/``always``) or, when it
    gives none, the one SPEC.md §5 gives the code."""

    spec_retry = {
        ErrorCode.STATE_SAVE_FAILED.value: Retryability.CONDITIONAL,
        ErrorCode.STATE_LOAD_FAILED.value: Retryability.CONDITIONAL,
    }
    try:
        reply = json.loads(out.decode("utf-8"))
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            raise ValueError("no boolean ok")
    except (UnicodeDecodeError, ValueError) as exc:
        raise StateError(
            ErrorCode.STATE_CORRUPT,
            f"{op}: the command's reply is not a protocol reply ({exc}); exit status {rc}: "
            f"{_tail(err)}",
        ) from None
    if not reply["ok"]:
        code = str(reply.get("code") or "internal")
        given = reply.get("retryability")
        retry = (
            Retryability(given)
            if given in {r.value for r in Retryability}
            else spec_retry.get(code, Retryability.NEVER)
        )
        raise StateError(code, str(reply.get("message") or op), retryability=retry)
    return reply


def _decoded(reply: dict[str, Any]) -> Any:
    try:
        return decode(reply.get("state"))
    except StateError:
        raise
    except Exception as exc:
        raise StateError(ErrorCode.STATE_CORRUPT, f"undecodable state in reply: {exc}") from None


def verify_exec_state_storage(
    command: str,
    *,
    models: Sequence[PersistenceModel],
    workloads: Iterable[str] | None = None,
    timeout: float | None = None,
    jobs: int = 1,
    reference_format: bool = False,
    crash_point: int | None = None,
    faults: bool = False,
    fault: Fault | None = None,
    max_output: int = MAX_OUTPUT,
    shown: str = "",
) -> tuple[Any, ExecFacts]:
    """Verify a state storage given as one command (:class:`ExecStateStorage`): the
    storage workloads of the catalogue under each model with the agent-state checker,
    and the conformance suite (once). The storage state machine is not run (a
    process per step).

    Each workload is recorded once (its calls traced; every model explores the same
    recording). Before judging, the distinct crash states of every workload under
    every model are loaded ``jobs`` processes at a time, each state once whatever the
    models and workloads that reach it (:meth:`ExecRunner.prefetch_loads`: one fresh
    process per state when the command takes a batch of requests); judging then reads
    those replies, so the findings are the ones a process per (state, call) gives.

    ``faults``: also re-run each workload with each error of
    :data:`EXEC_FAULT_ERRNOS` injected at each mutating call (``strace -e inject``),
    explored under every model from one recording per fault; ``fault``: only that
    fault (a replay; no crash-only exploration). A fault that cannot be aimed at its
    call is listed in ``ExecFacts.untargeted`` and makes the verdict incomplete.

    Returns ``(VerifyResult, ExecFacts)``. Raises BadTarget (no strace, a bad command,
    a clean save that fails), TargetTimeout, KeyError (an unknown workload)."""

    reason = strace_available()
    if reason is not None:
        raise BadTarget(f"--exec needs strace: {reason}")
    runner = ExecRunner(
        "", "", base_dir=BASE_DIR, timeout=timeout, storage=command, max_output=max_output
    )
    name = shown or f"--exec {command!r}"
    tgt = Target(
        name,
        lambda fs, base: ExecStateStorage(runner, fs, base),
        f"state storage run as processes: {command}",
    )
    chosen = selected_workloads(workloads, reference_format=reference_format)
    result = VerifyResult(
        name, "state-storage", "strace" if shown else "exec", [m.name for m in models]
    )
    flags = " --format reference" if reference_format else ""
    _preflight_storage(tgt, runner, name)
    runner.detect_batch()
    jobs = max(1, jobs)

    what = f"{shlex.quote(shown)} --runner strace" if shown else f"--exec {shlex.quote(command)}"
    replay = f"crashpoint verify {what} --kind state-storage{flags} --workload"

    def crashes(task: tuple[Any, PersistenceModel]) -> EngineResult:
        w, m = task
        (r,) = explore_agent(
            w, models=[m], target=tgt, crash_point=crash_point, name=name, command=replay
        )
        return r

    def faulted(w: Any) -> list[EngineResult]:
        plan = [fault] if fault is not None else exec_fault_plan(record(w, tgt).ops)
        return explore_agent(
            w, models=models, target=tgt, faults=plan, crashes=False, name=name, command=replay
        )

    conformance: Future[list[tuple[Any, str | None]]] | None = None
    apart = runner.sharing()

    def suite() -> list[tuple[Any, str | None]]:
        return run_conformance(
            lambda fs: ExecStateStorage(apart, fs, BASE_DIR), reference_format=reference_format
        )

    with ThreadPoolExecutor(max_workers=jobs) as pool, ThreadPoolExecutor(1) as side:
        crash_results: dict[tuple[str, str], EngineResult] = {}
        if fault is None:
            _prefetch(runner, tgt, chosen, models, crash_point, pool, jobs)
            if crash_point is None and jobs > 1:
                # The suite is a chain of single processes: it runs beside the judging
                # (on a runner of its own, so the report is as if it ran after it).
                conformance = side.submit(suite)
            tasks = [(w, m) for w in chosen for m in models]
            for (w, m), r in zip(tasks, pool.map(crashes, tasks), strict=True):
                crash_results[w.name, m.name] = r
        fault_results: dict[tuple[str, str], EngineResult] = {}
        if faults or fault is not None:
            for w, rs in zip(chosen, pool.map(faulted, chosen), strict=True):
                for m, r in zip(models, rs, strict=True):
                    fault_results[w.name, m.name] = r
    for w in chosen:
        for m in models:
            for part in (crash_results, fault_results):
                if (w.name, m.name) in part:
                    result.results.append(part[w.name, m.name])
    unsupported = runner.unsupported()
    for r in result.results:
        r.unsupported += [u for u in unsupported if u not in r.unsupported]
    if crash_point is None and fault is None:
        failed = suite() if conformance is None else conformance.result()
        runner.absorb(apart, "conformance ")
        result.conformance = [
            {"id": c.id, "check": c.name, "passed": why is None, "why": why} for c, why in failed
        ]
    facts = ExecFacts(
        ignored=list(runner.ignored),
        processes=runner.processes,
        untargeted=list(runner.untargeted),
        counts=dict(runner.counts),
        batch=runner.batch,
    )
    return result, facts


def _prefetch(
    runner: ExecRunner,
    tgt: Any,
    chosen: Sequence[Any],
    models: Sequence[PersistenceModel],
    crash_point: int | None,
    pool: ThreadPoolExecutor,
    jobs: int,
) -> None:
    """Record each workload (in ``pool``), then answer, ``jobs`` processes at a time
    and each once, what the checker will ask of every distinct crash state of every
    workload under every model (:meth:`ExecRunner.prefetch_loads`): the load of each
    session of every workload reaching it, and the C1 probe (``load_or_create`` of
    each session whose load failed other than not-found, as the checker does).

    One process per distinct disk image answers all its requests. Images that show
    a session in a file layout not seen before (:func:`_layout`) are loaded first;
    in the others' batches, the probe of each session rides along (an optional
    request) when its layout's load did not say not-found there: a batch a probe
    made change a file is run again without them. The probes still missing then
    run, batched per image. A probe that changed a file is re-run traced when the
    checker asks."""

    points = None if crash_point is None else {crash_point}
    wanted: dict[CrashState, list[bytes]] = {}
    sessions: dict[CrashState, list[str]] = {}
    for rec in pool.map(lambda w: record(w, tgt), chosen):
        bodies = [_load_request(sid) for sid in rec.sessions]
        for m in models:
            for point in crash_points(m, rec.initial, rec.ops, points=points):
                for s in point.states:
                    if not m.examines(s.digest()):
                        continue  # left out by --sample: never loaded
                    wanted.setdefault(s, []).extend(bodies)
                    sessions.setdefault(s, []).extend(rec.sessions)

    def probe(sid: str) -> bytes:
        return _request("load_or_create", sid, AgentState.new(sid, {}))  # as the checker

    def not_found(s: CrashState, sid: str) -> bool:
        obs = observe(tgt(MemoryFileSystem(s), BASE_DIR), sid)
        return obs.state is None and obs.code == ErrorCode.SESSION_NOT_FOUND

    def failing(s: CrashState) -> list[str]:
        out = []
        for sid in dict.fromkeys(sessions[s]):
            obs = observe(tgt(MemoryFileSystem(s), BASE_DIR), sid)
            if obs.state is None and obs.code != ErrorCode.SESSION_NOT_FOUND:
                out.append(sid)
        return out

    layouts = {
        s: {sid: _layout(s, sid, BASE_DIR) for sid in dict.fromkeys(sids)}
        for s, sids in sessions.items()
    }
    first: dict[CrashState, list[bytes]] = {}
    seen: set[tuple[str, tuple[str, ...]]] = set()
    for s, by_sid in layouts.items():
        keys = set(by_sid.items())
        if not keys <= seen:
            first[s] = wanted[s]
            seen |= keys
    runner.prefetch_loads(first, jobs)
    found = {(sid, lay) for s in first for sid, lay in layouts[s].items() if not not_found(s, sid)}
    ride = {
        s: [probe(sid) for sid, lay in layouts[s].items() if (sid, lay) in found]
        for s in wanted
        if s not in first
    }
    runner.prefetch_loads({s: b for s, b in wanted.items() if s not in first}, jobs, optional=ride)
    probes = {s: [probe(sid) for sid in failing(s)] for s in wanted}
    runner.prefetch_loads({s: b for s, b in probes.items() if b}, jobs, kind="probe")


def _layout(state: CrashState, sid: str, base: str) -> tuple[str, ...]:
    """The names of the files and directories under ``base`` in ``state``, sorted,
    with ``sid`` written ``{}``: what mostly decides whether the session's load says
    not-found there (the C1 probe writes only then, for most storages). Directories
    end with ``/``."""
    prefix = base.rstrip("/") + "/"
    names = [p[len(prefix) :] for p, _ in state.files if p.startswith(prefix)]
    names += [d[len(prefix) :] + "/" for d in state.dirs if d.startswith(prefix)]
    return tuple(sorted(n.replace(sid, "{}") if sid else n for n in names))


def _load_request(session_id: str) -> bytes:
    """The request :meth:`ExecStateStorage.load` sends (the cache key of its reply)."""
    return _request("load", session_id)


_EXACT = 2**53


def _number(text: str) -> int | float:
    value = int(text)
    return value if -_EXACT <= value <= _EXACT else float(text)


def json_value(data: bytes) -> Any:
    """A load command's output as a value: JSON read as the other runtime wrote it.

    An integer literal outside +-2**53 is read as the double it stands for (RFC 8259
    §6: such numbers are interoperable only as IEEE 754 doubles), so a float that
    JavaScript prints in integer form (``65921660319814140``) equals the float saved.
    Raises ``UnicodeDecodeError`` or ``ValueError`` when the output is not one JSON value.
    """
    return json.loads(data.decode("utf-8"), parse_int=_number)


@dataclass(frozen=True, slots=True)
class ExecCommands:
    """``--exec`` as a plan's ``transport`` (:class:`~.plan.Transport`; issue 19: the
    strace runner with a program's own commands, not a kind of its own). The CLI builds a
    :class:`~.plan.Plan` of kind ``document`` or ``state-storage`` with one of these in
    its options and hands it to :func:`~.plan.run_plan`, as for a Python target.

    Attributes:
        save, load: the document kind's command templates (``{dir}``, ``{value}``).
        storage: the state-storage kind's command (a request a line on stdin).
        max_output: bytes a command may print on each stream, and its strace log hold.
        shown: the Python TARGET the commands run (``--runner strace``): the report and
            the replay commands name it; empty for a user's own commands.
        volatile: ``--volatile`` globs (document kind only; :func:`verify_exec`).
    """

    save: str = ""
    load: str = ""
    storage: str = ""
    max_output: int = MAX_OUTPUT
    shown: str = ""
    volatile: tuple[str, ...] = ()

    def verify(self, plan: Any) -> VerifyResult:
        """``plan`` run through :func:`verify_exec` (document) or
        :func:`verify_exec_state_storage` (state-storage); the transport's figures are
        the result's ``facts``. Raises BadTarget for another kind, and as those do."""
        if plan.kind == "state-storage":
            if self.volatile:
                raise BadTarget("--volatile applies to the document kind only")
            result, facts = verify_exec_state_storage(
                self.storage,
                models=plan.models,
                workloads=plan.workloads,
                timeout=plan.timeout,
                jobs=plan.jobs,
                reference_format=bool(plan.options.get("reference_format")),
                crash_point=plan.crash_point,
                faults=plan.faults,
                fault=plan.fault,
                max_output=self.max_output,
                shown=self.shown,
            )
        elif plan.kind == "document":
            result, facts = verify_exec(
                self.save,
                self.load,
                models=plan.models,
                faults=plan.faults,
                workloads=plan.workloads,
                seed=plan.seed,
                examples=plan.examples,
                crash_point=plan.crash_point,
                fault=plan.fault,
                timeout=plan.timeout,
                jobs=plan.jobs,
                shrink=plan.options.get("shrink", True),
                max_output=self.max_output,
                shown=self.shown,
                volatile=self.volatile,
            )
        else:
            raise BadTarget(f"--exec drives --kind document or state-storage, not {plan.kind!r}")
        verdict: VerifyResult = result
        verdict.facts = facts
        return verdict

"""The child side of the reality suite: run a workload on a real directory and die.

Runs as a small fork server (``python reality_driver.py serve``): it imports the
harness once, then reads one JSON job per line on stdin, forks a child per job and
answers one JSON line per job on stdout once the child is dead. Forking from this
single-threaded process (never from a pytest-xdist worker, which runs threads)
keeps a kill cheap (a few milliseconds) without forking a threaded process.

A child runs ``workload`` against ``target`` with the storage on
:class:`~crashpoint.faultfs.OsFileSystem` rooted at ``job["root"]`` (the model's
``/data/sessions`` is ``ROOT/data/sessions``) and sends itself SIGKILL:

* ``kill_at = N``: when the storage issues mutating operation ``N`` (0-based), so
  exactly ``N`` operations completed (crash point ``N``, FAULT-MODEL.md §2); an
  ``N`` past the end kills the process after the workload returned;
* ``aim_at = N`` with ``delay`` seconds: a thread sends SIGKILL ``delay`` seconds
  after operation ``N`` (a large write) began; if the write returns first the
  process waits to be killed, so the disk holds crash point ``N`` (the write not
  begun or torn) or ``N + 1`` (the write done), nothing later.

Everything the child did is appended, one line per event, to ``job["report"]``
(a file outside the directory under test): ``op`` lines (the mutating operation,
done or failed with its errno) and ``mark`` lines (``begin:``/``ack:``/``fail:``
marks of the storage calls, i.e. what the child acknowledged). ``os.write`` to a
file survives SIGKILL: the bytes are in the page cache when it returns.

``python reality_driver.py check`` prints what this machine allows (root,
``losetup``, ``mkfs.ext4``, ``mkfs.xfs``, ``mkfs.btrfs``) and why not.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from crashpoint.faultfs import CrashState, OsFileSystem, RecordingFileSystem
from crashpoint.scenarios import BASE_DIR, SCENARIOS, Session, Workload, get_target
from crashpoint.scenarios.kinds.agent.catalogue import assistant, build_state, user

T = TypeVar("T")

MIB = 1 << 20

# --- workloads with large states (not in the catalogue: they exist to aim kills) ---


def _big_text(size: int, seed: int) -> str:
    line = f"line {seed:04d} of a long tool transcript: " + "abcdefghij" * 6 + "\n"
    return (line * (size // len(line) + 1))[:size]


def _big_saves(sizes: tuple[int, ...]) -> Callable[[Session], None]:
    def run(s: Session) -> None:
        history = []
        for i, size in enumerate(sizes):
            history += [user(f"question {i}"), assistant(_big_text(size, i))]
            s.save(build_state(*history, running=i + 1 < len(sizes)))

    return run


BIG_WORKLOADS: dict[str, Workload] = {
    "big-saves": Workload(
        "big-saves",
        "three saves of states growing past 1 MiB (1.25, 2.5 and 4 MiB)",
        _big_saves((5 * MIB // 4, 5 * MIB // 4, 3 * MIB // 2)),
    ),
    "medium-saves": Workload(
        "medium-saves",
        "three saves of states of 3.4, 7.9 and 13 kB: one to four pages (torn on a real disk)",
        _big_saves((3000, 4000, 5000)),
    ),
}
"""Workloads saving large states, by name (used with ``aim_at`` and on images)."""


def workload(name: str) -> Workload:
    """A catalogue workload or one of :data:`BIG_WORKLOADS`."""
    return BIG_WORKLOADS[name] if name in BIG_WORKLOADS else SCENARIOS[name]


# --- the real filesystem under a root -----------------------------------------------


class RootedFileSystem:
    """:class:`OsFileSystem` with every model path ``/p`` mapped to ``ROOT/p``."""

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/")
        self.os = OsFileSystem()

    def _p(self, path: str) -> str:
        return self.root + path

    def mkdir(self, path: str) -> None:
        self.os.mkdir(self._p(path))

    def create(self, path: str, *, exclusive: bool = False) -> None:
        self.os.create(self._p(path), exclusive=exclusive)

    def write(self, path: str, offset: int, data: bytes) -> int:
        return self.os.write(self._p(path), offset, data)

    def truncate(self, path: str, size: int) -> None:
        self.os.truncate(self._p(path), size)

    def rename(self, src: str, dst: str) -> None:
        self.os.rename(self._p(src), self._p(dst))

    def unlink(self, path: str) -> None:
        self.os.unlink(self._p(path))

    def fsync(self, path: str) -> None:
        self.os.fsync(self._p(path))

    def fsync_dir(self, path: str) -> None:
        self.os.fsync_dir(self._p(path))

    def fdatasync(self, path: str) -> None:
        self.os.fdatasync(self._p(path))

    def rmdir(self, path: str) -> None:
        self.os.rmdir(self._p(path))

    def link(self, src: str, dst: str) -> None:
        self.os.link(self._p(src), self._p(dst))

    def read(self, path: str) -> bytes:
        return self.os.read(self._p(path))

    def exists(self, path: str) -> bool:
        return self.os.exists(self._p(path))

    def is_dir(self, path: str) -> bool:
        return self.os.is_dir(self._p(path))

    def listdir(self, path: str) -> list[str]:
        return self.os.listdir(self._p(path))

    def size(self, path: str) -> int:
        return self.os.size(self._p(path))

    def lock(self, path: str, timeout: float) -> int:
        return self.os.lock(self._p(path), timeout)

    def unlock(self, path: str, handle: int) -> None:
        self.os.unlock(self._p(path), handle)


def read_tree(root: str, *, ignore: tuple[str, ...] = ("/lost+found",)) -> CrashState:
    """The directory under ``root`` as a :class:`CrashState` (model paths, bytes)."""
    files: list[tuple[str, bytes]] = []
    dirs: list[str] = []
    base = root.rstrip("/")
    for here, subdirs, names in os.walk(base):
        rel = here[len(base) :] or "/"
        if rel in ignore:
            subdirs[:] = []
            continue
        if rel != "/":
            dirs.append(rel)
        for name in names:
            path = os.path.join(here, name)
            with open(path, "rb") as f:
                files.append(((rel.rstrip("/") + "/" + name), f.read()))
    return CrashState(tuple(sorted(files)), tuple(sorted(dirs)))


def render_op(
    kind: str, path: str, dst: str | None, offset: int, size: int, errno: int | None
) -> str:
    """One operation as the suite compares it (the child's report against the model's trace)."""
    text = f"{kind} {path}"
    if dst is not None:
        text += f" -> {dst}"
    if kind == "write":
        text += f" @{offset}+{size}"
    if kind == "truncate":
        text += f" ={size}"
    if errno is not None:
        text += f" !{errno}"
    return text


# --- the child ------------------------------------------------------------------------


class _Die(Exception):
    pass


class KillingFileSystem:
    """Wraps a filesystem; reports each mutating operation; SIGKILLs its own process
    when operation ``kill_at`` is issued, or ``delay`` seconds into operation ``aim_at``."""

    def __init__(
        self,
        inner: RootedFileSystem,
        emit: Callable[[str], None],
        *,
        kill_at: int | None,
        aim_at: int | None,
        delay: float,
    ) -> None:
        self.inner = inner
        self.emit = emit
        self.kill_at = kill_at
        self.aim_at = aim_at
        self.count = 0
        self.trigger = threading.Event()
        if aim_at is not None:
            threading.Thread(target=self._killer, args=(delay,), daemon=True).start()

    def _killer(self, delay: float) -> None:
        self.trigger.wait()
        if delay > 0:
            time.sleep(delay)
        os.kill(os.getpid(), signal.SIGKILL)

    def _op(
        self,
        kind: str,
        call: Callable[[], T],
        path: str,
        dst: str | None = None,
        offset: int = 0,
        size: int = 0,
    ) -> T:
        index = self.count
        if index == self.kill_at:
            self.emit(f"kill before {index}")
            os.kill(os.getpid(), signal.SIGKILL)
        aimed = index == self.aim_at
        if aimed:
            self.emit(f"aim {index}")
            self.trigger.set()
        started = time.perf_counter()
        try:
            result = call()
        except OSError as exc:
            self.count += 1
            self.emit("op " + render_op(kind, path, dst, offset, size, exc.errno))
            raise
        self.count += 1
        self.emit("op " + render_op(kind, path, dst, offset, size, None))
        if aimed:
            self.emit(f"returned {time.perf_counter() - started:.6f}")
            time.sleep(30)  # the killer thread is due: nothing after this write may run
        return result

    def mkdir(self, path: str) -> None:
        self._op("mkdir", lambda: self.inner.mkdir(path), path)

    def create(self, path: str, *, exclusive: bool = False) -> None:
        self._op("create", lambda: self.inner.create(path, exclusive=exclusive), path)

    def write(self, path: str, offset: int, data: bytes) -> int:
        return self._op(
            "write", lambda: self.inner.write(path, offset, data), path, None, offset, len(data)
        )

    def truncate(self, path: str, size: int) -> None:
        self._op("truncate", lambda: self.inner.truncate(path, size), path, None, 0, size)

    def rename(self, src: str, dst: str) -> None:
        self._op("rename", lambda: self.inner.rename(src, dst), src, dst)

    def unlink(self, path: str) -> None:
        self._op("unlink", lambda: self.inner.unlink(path), path)

    def fsync(self, path: str) -> None:
        self._op("fsync", lambda: self.inner.fsync(path), path)

    def fsync_dir(self, path: str) -> None:
        self._op("fsync_dir", lambda: self.inner.fsync_dir(path), path)

    def fdatasync(self, path: str) -> None:
        self._op("fdatasync", lambda: self.inner.fdatasync(path), path)

    def rmdir(self, path: str) -> None:
        self._op("rmdir", lambda: self.inner.rmdir(path), path)

    def link(self, src: str, dst: str) -> None:
        self._op("link", lambda: self.inner.link(src, dst), src, dst)

    def read(self, path: str) -> bytes:
        return self.inner.read(path)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def is_dir(self, path: str) -> bool:
        return self.inner.is_dir(path)

    def listdir(self, path: str) -> list[str]:
        return self.inner.listdir(path)

    def size(self, path: str) -> int:
        return self.inner.size(path)

    def lock(self, path: str, timeout: float) -> int:
        # creating an absent lock file is an operation of the trace (a kill site)
        if self.inner.exists(path):
            return self.inner.lock(path, timeout)
        return self._op("create", lambda: self.inner.lock(path, timeout), path)

    def unlock(self, path: str, handle: int) -> None:
        self.inner.unlock(path, handle)


class ReportingRecorder(RecordingFileSystem):
    """A recording filesystem that also reports each workload mark as it is made."""

    def __init__(self, inner: KillingFileSystem, emit: Callable[[str], None]) -> None:
        super().__init__(inner, record_reads=False)
        self.emit = emit

    def mark(self, label: str) -> None:
        super().mark(label)
        self.emit(f"mark {label}")


def _syncfs(path: str) -> None:
    """syncfs(2) on the filesystem holding ``path`` (``os.sync`` where libc lacks it)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if getattr(libc, "syncfs", None) is None or libc.syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)


def run_child(job: dict[str, Any]) -> None:
    """The forked child: set up, run the workload, die by SIGKILL (never returns).
    A ``pattern`` job runs that I/O pattern of ``reality_patterns.py`` (its setup done
    by the parent) with its ``open(2)`` flags instead of a workload and a target."""
    signal.alarm(60)  # a child that fails to die is killed by SIGALRM: a visible error
    report = os.open(job["report"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def emit(line: str) -> None:
        os.write(report, (line + "\n").encode())

    root = job["root"]
    if "pattern" in job:
        from reality_patterns import BY_NAME, FlaggedFileSystem  # imports this module

        pattern = BY_NAME[job["pattern"]]
        emit("start")
        pattern.run(
            KillingFileSystem(
                FlaggedFileSystem(root, pattern.flags),
                emit,
                kill_at=job["kill_at"],
                aim_at=None,
                delay=0.0,
            )
        )
        emit("end")
        os.kill(os.getpid(), signal.SIGKILL)
    os.makedirs(root + "/data", exist_ok=True)  # the harness's root directory /data
    fs = RootedFileSystem(root)
    wl = workload(job["workload"])
    if wl.setup is not None:
        wl.setup(fs, BASE_DIR)
    if job.get("sync_setup"):
        _syncfs(root)
    emit("start")
    killer = KillingFileSystem(
        fs, emit, kill_at=job.get("kill_at"), aim_at=job.get("aim_at"), delay=job.get("delay", 0.0)
    )
    rec = ReportingRecorder(killer, emit)
    session = Session(get_target(job["target"])(rec, BASE_DIR), rec, BASE_DIR)
    wl.run(session)
    emit("end")
    os.kill(os.getpid(), signal.SIGKILL)


def serve(lines: Iterator[str]) -> None:
    """Fork one child per JSON job line; answer ``{"signal": S, "exit": E}`` per job."""
    sys.setswitchinterval(1e-5)  # the killer thread gets the GIL promptly in aimed kills
    for line in lines:
        if not line.strip():
            continue
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            try:
                run_child(job)
            except BaseException as exc:  # a harness error: make it visible, never a kill
                with open(job["report"], "a") as f:
                    f.write(f"error {type(exc).__name__}: {exc}\n")
            os._exit(3)
        _, status = os.waitpid(pid, 0)
        answer = {
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        }
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


# --- what this machine allows ---------------------------------------------------------


def power_loss_unavailable(fstype: str = "ext4") -> str | None:
    """Why power cuts on a ``fstype`` image cannot be emulated here, or None if they can."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return "power-loss reality tests need root (losetup, mount)"
    for tool in ("losetup", "mount", "umount", f"mkfs.{fstype}"):
        if shutil.which(tool) is None:
            return f"power-loss reality tests on {fstype} need `{tool}` (not found)"
    if not os.path.exists("/dev/loop-control"):
        return "power-loss reality tests need loop devices (/dev/loop-control missing)"
    try:
        with open("/proc/filesystems") as f:
            known = {line.split()[-1] for line in f if line.strip()}
    except OSError:
        known = set()
    if fstype not in known:
        return f"the kernel has no {fstype} (not in /proc/filesystems)"
    return None


def process_crash_unavailable() -> str | None:
    """Why real kills cannot run here, or None."""
    if not hasattr(os, "fork") or not hasattr(signal, "SIGKILL"):
        return "process-crash reality tests need fork and SIGKILL (POSIX)"
    return None


def check() -> int:
    """Print what the reality suite can run on this machine (one line per part)."""
    parts = {
        "process-crash (real SIGKILL)": process_crash_unavailable(),
        "the ext4 family on ext4 (loop device)": power_loss_unavailable("ext4"),
        "the xfs family on xfs (loop device)": power_loss_unavailable("xfs"),
        "the btrfs family on btrfs (loop device)": power_loss_unavailable("btrfs"),
    }
    for part, why in parts.items():
        print(f"reality: {part}: {'runs' if why is None else 'SKIPPED: ' + why}")
    return 0


if __name__ == "__main__":
    command = sys.argv[1] if len(sys.argv) > 1 else "check"
    if command == "serve":
        serve(iter(sys.stdin.readline, ""))
    else:
        sys.exit(check())

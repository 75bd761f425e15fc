"""W1 (progress) and the lock kinds the scheduler models: flock, O_CREAT|O_EXCL lock
files, os.link locks (issue 25, SPEC.md §10.1)."""

from __future__ import annotations

import fcntl
import json
import os
import time
from typing import Any

from crashpoint.faultfs._models import PROCESS_CRASH
from crashpoint.scenarios.kinds.concurrent.kind import ConcurrentKind, explore_concurrent
from crashpoint.scenarios.targets.user import make_runner


class _Doc:
    def __init__(self, base_dir: str) -> None:
        self.base = base_dir
        self.path = os.path.join(base_dir, "doc.json")

    def load(self) -> Any:
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def _put(self, value: Any) -> None:
        tmp = f"{self.path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            json.dump(value, f)
        os.replace(tmp, self.path)


class OppositeOrderLocks(_Doc):
    """Broken: takes two flock locks in an order that depends on the process: deadlocks."""

    def save(self, value: Any) -> None:
        names = ["a.lock", "b.lock"] if os.getpid() % 2 else ["b.lock", "a.lock"]
        fds = [os.open(os.path.join(self.base, n), os.O_CREAT | os.O_RDWR) for n in names]
        for fd in fds:
            fcntl.flock(fd, fcntl.LOCK_EX)
        self._put(value)
        for fd in fds:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


class ExclLockFile(_Doc):
    """Good: an O_CREAT|O_EXCL lock file, polled with sleeps, removed after the save."""

    forget = False

    def save(self, value: Any) -> None:
        lock = os.path.join(self.base, "doc.lock")
        while True:
            try:
                os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
                break
            except FileExistsError:
                time.sleep(0.05)
        self._put(value)
        if not self.forget:
            os.unlink(lock)


class ForgottenExclLockFile(ExclLockFile):
    """Broken: never removes its lock file: the second writer polls for ever."""

    forget = True


class LinkLock(_Doc):
    """Good: an os.link lock (link a private file to the lock name), polled."""

    def save(self, value: Any) -> None:
        mine = os.path.join(self.base, f"lock.{os.getpid()}")
        lock = os.path.join(self.base, "doc.lock")
        os.close(os.open(mine, os.O_CREAT | os.O_WRONLY))
        while True:
            try:
                os.link(mine, lock)
                break
            except FileExistsError:
                time.sleep(0.05)
        self._put(value)
        os.unlink(lock)
        os.unlink(mine)


def _found(cls: Any, workload: str = "concurrent-saves") -> tuple[set[str], Any]:
    runner = make_runner(cls, "/data/store")
    with runner:
        kind = ConcurrentKind(runner, cls.__name__, preemptions=1)
        res = explore_concurrent(kind, workload, models=[PROCESS_CRASH])
    return {c.invariant for _, e in res.findings for c in e.counterexamples}, res


def test_opposite_order_flock_deadlocks_as_w1_not_a_hang() -> None:
    found, res = _found(OppositeOrderLocks)
    assert "W1" in found
    stuck = [out.stuck for _, out in res.exploration.kept if out.stuck]
    assert stuck and all(s.startswith("deadlock") for s in stuck)


def test_a_lock_file_never_removed_spins_as_w1_in_virtual_time() -> None:
    started = time.monotonic()
    found, _ = _found(ForgottenExclLockFile)
    assert "W1" in found
    assert time.monotonic() - started < 120  # polling sleeps are virtual


def test_excl_and_link_lock_files_serialise_the_writers() -> None:
    for cls in (ExclLockFile, LinkLock):
        found, res = _found(cls)
        assert found == set(), cls.__name__
        assert res.crash_states > 0 and not res.incomplete


class BackgroundSaver(_Doc):
    """Saves from a thread of its own (not an actor): the verdict names it."""

    def save(self, value: Any) -> None:
        import threading

        t = threading.Thread(target=self._put, args=(value,), name="bg-saver")
        t.start()
        t.join()


def test_a_thread_the_target_starts_makes_the_verdict_incomplete_naming_it() -> None:
    _, res = _found(BackgroundSaver)
    assert res.incomplete
    notes = {u for rs in res.results.values() for r in rs for u in r.unsupported}
    assert any("bg-saver" in u for u in notes)

"""Concurrent writers (SPEC.md §6, decided 2026-12-02; issue 21): the reference locks
``S.json.lock`` around save, delete and mark_not_resumable; a second writer waits up to
``lock_timeout`` seconds, then fails typed. Real processes on the real OS, and the
model's lock table, which changes no crash state."""

from __future__ import annotations

import errno
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any

import pytest
from crashpoint.core import (
    DEFAULT_LOCK_TIMEOUT,
    AgentState,
    ErrorCode,
    FileStateStorage,
    Retryability,
    StateError,
)
from crashpoint.faultfs import (
    POWER_LOSS_REORDER,
    MemoryFileSystem,
    OpKind,
    OsFileSystem,
    RecordingFileSystem,
    SimulatedCrash,
    VirtualClock,
    crash_points,
    makedirs,
)

LOCKED = "session locked by another writer"


def _state(writer: str, round_: int, size: int = 2000) -> AgentState:
    # big enough that an unlocked pair of saves interleaves inside one write
    return AgentState.new("s1", {"writer": writer, "round": round_, "pad": "x" * size})


def _hold(path: str, ready: Any, release: Any) -> None:
    fs = OsFileSystem()
    handle = fs.lock(path, 0)
    ready.set()
    release.wait(60)
    fs.unlock(path, handle)


def test_a_writer_that_dies_holding_the_lock_releases_it(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    ready, release = ctx.Event(), ctx.Event()
    holder = ctx.Process(target=_hold, args=(str(tmp_path / "s1.json.lock"), ready, release))
    holder.start()
    assert ready.wait(30)
    holder.kill()
    holder.join(30)
    FileStateStorage(OsFileSystem(), str(tmp_path), lock_timeout=5).save(_state("a", 0))
    assert (tmp_path / "s1.json").exists()


def test_two_handles_in_one_process_exclude_each_other_and_the_clock_is_injectable(
    tmp_path: Path,
) -> None:
    clock = VirtualClock()
    fs = OsFileSystem(clock=clock)
    path = str(tmp_path / "x.lock")
    held = fs.lock(path, 0)
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        fs.lock(path, DEFAULT_LOCK_TIMEOUT)
    assert time.monotonic() - start < 2  # virtual: it did not wait 10 s
    assert clock.slept == pytest.approx(DEFAULT_LOCK_TIMEOUT)
    fs.unlock(path, held)
    fs.unlock(path, fs.lock(path, 0))


def test_lock_refuses_a_planted_symlink_and_bad_timeouts(tmp_path: Path) -> None:
    target = tmp_path / "precious"
    target.write_bytes(b"keep me")
    (tmp_path / "s1.json.lock").symlink_to(target)
    storage = FileStateStorage(OsFileSystem(), str(tmp_path))
    with pytest.raises(StateError) as exc:
        storage.save(_state("a", 0))
    assert exc.value.code == ErrorCode.STATE_SAVE_FAILED
    assert isinstance(exc.value.cause, OSError) and exc.value.cause.errno == errno.ELOOP
    assert target.read_bytes() == b"keep me"
    assert not (tmp_path / "s1.json").exists()
    for bad in (-1, float("nan"), float("inf"), "10", True):
        with pytest.raises(ValueError, match="lock timeout"):
            FileStateStorage(OsFileSystem(), str(tmp_path), lock_timeout=bad)  # type: ignore[arg-type]


def test_model_lock_table_a_held_lock_fails_every_writer_and_changes_nothing() -> None:
    clock = VirtualClock()
    fs = MemoryFileSystem(dirs=("/data",), clock=clock)
    storage = FileStateStorage(fs, "/data")
    storage.save(_state("a", 0))
    held = fs.lock("/data/s1.json.lock", 0)
    before = fs.crash_state()
    for call in (
        lambda: storage.save(_state("b", 1)),
        lambda: storage.delete("s1"),
        lambda: storage.mark_not_resumable("s1"),
    ):
        with pytest.raises(StateError, match=LOCKED) as exc:
            call()
        assert exc.value.retryability is Retryability.CONDITIONAL
    assert fs.crash_state() == before
    assert clock.slept == pytest.approx(3 * DEFAULT_LOCK_TIMEOUT)
    assert storage.load("s1").metadata["writer"] == "a"  # load does not lock
    fs.unlock("/data/s1.json.lock", held)
    storage.save(_state("b", 1))
    storage.delete("s1")
    assert fs.listdir("/data") == ["s1.json.lock"]  # never removed, content meaningless


def test_locks_are_trace_events_that_no_model_multiplies() -> None:
    rec = RecordingFileSystem(MemoryFileSystem(dirs=("/data",)))
    storage = FileStateStorage(rec, "/data")  # type: ignore[arg-type]
    storage.save(_state("a", 0))
    storage.save(_state("a", 1))
    storage.mark_not_resumable("s1")
    storage.delete("s1")
    lock = "/data/s1.json.lock"
    events = [(e.kind, e.index) for e in rec.trace.events if e.path == lock]
    assert [k for k, _ in events] == [OpKind.CREATE, OpKind.LOCK, OpKind.UNLOCK] + [
        OpKind.LOCK,
        OpKind.UNLOCK,
    ] * 3
    assert not any(k.mutating or k.barrier or k.metadata for k in (OpKind.LOCK, OpKind.UNLOCK))
    assert all(op.kind not in (OpKind.LOCK, OpKind.UNLOCK) for op in rec.trace.ops)
    # each writer's lock spans its operations: every op lies between a lock and its unlock
    inside = False
    for e in rec.trace.events:
        if e.kind is OpKind.LOCK:
            inside = True
        elif e.kind is OpKind.UNLOCK:
            inside = False
        elif e.kind.mutating:
            # outside: the lock file's creation, and the base directory's parent fsync
            # of mkdir -p, which come before the lock
            assert inside or e.path in (lock, "/"), e.render()
    # the crash points are those of the operations alone, with the events or without
    ops = rec.trace.ops
    assert len(
        list(crash_points(POWER_LOSS_REORDER, MemoryFileSystem(dirs=("/data",)).crash_state(), ops))
    ) == (len(ops) + 1)


def test_a_crash_while_locked_releases_the_model_lock() -> None:
    mem = MemoryFileSystem(dirs=("/data",))
    rec = RecordingFileSystem(mem, crash_at=3)
    with pytest.raises(SimulatedCrash):
        FileStateStorage(rec, "/data").save(_state("a", 0))  # type: ignore[arg-type]
    mem.unlock("/data/s1.json.lock", mem.lock("/data/s1.json.lock", 0))  # free


def test_seed_takes_no_lock_and_makedirs_tolerates_a_concurrent_mkdir() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    FileStateStorage(fs, "/data", sync="none", ended_marker="legacy", strict=False).save(
        _state("a", 0)
    )
    assert fs.listdir("/data") == ["s1.json"]

    class Racing(MemoryFileSystem):
        """Another writer creates the directory between the look and the mkdir."""

        def exists(self, path: str) -> bool:
            return False if path == "/data/new" else super().exists(path)

        def mkdir(self, path: str) -> None:
            if path == "/data/new":
                super().mkdir(path)
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), path)
            super().mkdir(path)

    racing = Racing(dirs=("/data",))
    assert makedirs(racing, "/data/new/deeper") == ["/data/new/deeper"]
    assert racing.is_dir("/data/new/deeper")

    class FileRacing(Racing):
        """... or a file there: EEXIST stands."""

        def mkdir(self, path: str) -> None:
            if path == "/data/new":
                self.create(path)
            super(Racing, self).mkdir(path)

    with pytest.raises(FileExistsError):
        makedirs(FileRacing(dirs=("/data",)), "/data/new/deeper")


def test_under_interception_the_os_backend_takes_the_models_lock() -> None:
    from crashpoint.faultfs import intercept

    def locking(fs: RecordingFileSystem) -> list[tuple[OpKind, str]]:
        wanted = (OpKind.LOCK, OpKind.UNLOCK, OpKind.CREATE)
        return [(e.kind, e.path) for e in fs.trace.events if e.kind in wanted]

    direct = RecordingFileSystem(MemoryFileSystem(dirs=("/base",)))
    FileStateStorage(direct, "/base/s").save(_state("a", 0))  # type: ignore[arg-type]
    intercepted = RecordingFileSystem(MemoryFileSystem(dirs=("/base",)))
    with intercept(intercepted, root="/base") as icpt:
        FileStateStorage(OsFileSystem(), "/base/s").save(_state("a", 0))
    assert locking(intercepted) == locking(direct)
    assert (OpKind.LOCK, "/base/s/s1.json.lock") in locking(direct)
    assert icpt.unsupported == [] and icpt.escapes == []
    assert not os.path.exists("/base/s")


def test_the_model_waits_in_virtual_time_by_default() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    held = fs.lock("/data/x.lock", 0)
    start = time.monotonic()
    with pytest.raises(TimeoutError):
        fs.lock("/data/x.lock", 3600)  # an hour of model time, at once
    assert time.monotonic() - start < 5
    assert isinstance(fs.clock, VirtualClock) and fs.clock.slept == pytest.approx(3600)
    fs.unlock("/data/x.lock", held)

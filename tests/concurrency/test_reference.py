"""The reference storage with two writers on one session (SPEC.md §6; issue 25,
acceptance 3), through examples/concurrency/reference.py."""

from __future__ import annotations

import time
from typing import Any

import pytest
from crashpoint.core import AgentState, FileStateStorage, StateError
from crashpoint.faultfs import MemoryFileSystem
from crashpoint.faultfs._models import MODELS
from crashpoint.scenarios.engine.schedule import Scheduler, SchedulerClock
from crashpoint.scenarios.kinds.concurrent.kind import ConcurrentKind, explore_concurrent
from crashpoint.scenarios.targets.user import make_runner

from examples.concurrency.reference import ReferenceDocument, SeedDocument

MODELS2 = [MODELS["process-crash"], MODELS["ext4"]]


def _found(cls: Any, workload: str, **kw: Any) -> set[tuple[str, str]]:
    runner = make_runner(cls, "/data/store")
    with runner:
        kind = ConcurrentKind(runner, cls.__name__, **kw)
        res = explore_concurrent(kind, workload, models=MODELS2)
    assert res.crash_states > 0 and not res.incomplete
    return {(e.model, c.invariant) for _, e in res.findings for c in e.counterexamples}


def test_two_reference_writers_never_interleave_a_save() -> None:
    assert _found(ReferenceDocument, "concurrent-saves") == set()


def test_the_seed_which_does_not_lock_is_caught() -> None:
    found = _found(SeedDocument, "concurrent-saves")
    assert ("process-crash", "I8") in found  # the shared S.json.tmp: a save fails
    assert ("process-crash", "D2") in found


def test_the_references_load_reads_again_when_a_writers_rotation_moved_its_file() -> None:
    # FileStateStorage.load checks fs.exists(main), then reads it, without the lock
    # (SPEC.md §6 locks save, delete and mark_not_resumable); a writer's save renames
    # main -> bak before tmp -> main, so a load between the two renames found no main and
    # raised state_load_failed (R2 in save-while-load; I8 in concurrent-update). The load
    # now reads again when a file it saw vanished (core/_storage.py, _VANISHED_RETRIES).
    assert not _found(ReferenceDocument, "save-while-load")
    found = _found(ReferenceDocument, "concurrent-update", last_writer_wins=True)
    assert not found, found


def test_without_reading_again_the_window_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # the check can fail: the reference reading once (as before) is caught with R2
    from crashpoint.core import _storage

    monkeypatch.setattr(_storage, "_VANISHED_RETRIES", 0)
    assert ("process-crash", "R2") in _found(ReferenceDocument, "save-while-load")


def test_a_second_writer_waits_then_fails_with_the_typed_error_in_virtual_time() -> None:
    sched = Scheduler()
    fs = MemoryFileSystem(clock=SchedulerClock(sched))
    fs.mkdir("/data")
    storage = FileStateStorage(fs, "/data")
    raised: list[StateError] = []

    def holder() -> None:  # another writer holding the lock for a minute
        handle = fs.lock(storage.path("s1", ".lock"), 10)
        sched.sleep(60.0)
        fs.unlock(storage.path("s1", ".lock"), handle)

    def second() -> None:
        sched.point("start")
        try:
            FileStateStorage(fs, "/data").save(AgentState.new("s1"))
        except StateError as exc:
            raised.append(exc)

    started = time.monotonic()
    out = sched.run([holder, second])
    assert out.stuck is None
    (exc,) = raised
    assert exc.code == "state_save_failed" and exc.retryability.value == "conditional"
    assert "session locked by another writer" in str(exc)
    assert 10.0 <= sched.now <= 61.0  # the timeout passed on the virtual clock
    assert time.monotonic() - started < 5.0  # and not on the real one
    assert not fs.exists("/data/s1.json")


@pytest.mark.parametrize("cls", [ReferenceDocument])
def test_a_second_writer_that_can_wait_saves_after_the_first(cls: Any) -> None:
    sched = Scheduler((1,))
    fs = MemoryFileSystem(clock=SchedulerClock(sched))
    fs.mkdir("/data")
    a, b = cls(fs, "/data"), cls(fs, "/data")
    sched.run([lambda: a.save({"who": "a"}), lambda: b.save({"who": "b"})])
    assert cls(fs, "/data").load() in ({"who": "a"}, {"who": "b"})

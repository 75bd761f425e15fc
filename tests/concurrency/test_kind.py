"""The concurrent kind on examples/concurrency's field-bug stores (issue 25)."""

from __future__ import annotations

from typing import Any

import pytest
from crashpoint.faultfs._models import MODELS, PROCESS_CRASH
from crashpoint.scenarios.kinds.concurrent.kind import (
    ConcurrentKind,
    ConcurrentResult,
    explore_concurrent,
)
from crashpoint.scenarios.targets.user import make_runner

from examples.concurrency import stores


def _explore(
    cls: Any, workload: str, models: Any = (PROCESS_CRASH,), **kw: Any
) -> ConcurrentResult:
    runner = make_runner(cls, "/data/store")
    with runner:
        kind = ConcurrentKind(runner, cls.__name__, last_writer_wins=kw.pop("lww", False))
        return explore_concurrent(kind, workload, models=list(models), **kw)


def _found(res: ConcurrentResult) -> set[tuple[str, str]]:
    return {(e.model, c.invariant) for _, e in res.findings for c in e.counterexamples}


def test_a_shared_temporary_name_is_i8_and_d2_and_its_schedule_replays() -> None:
    res = _explore(stores.SharedTmpStore, "concurrent-saves")
    assert res.exploration.bound == 2 and not res.incomplete
    found = _found(res)
    assert ("process-crash", "I8") in found and ("process-crash", "D2") in found
    w, e = next(
        (w, e) for w, e in res.findings if any(c.invariant == "I8" for c in e.counterexamples)
    )
    c = next(c for c in e.counterexamples if c.invariant == "I8")
    assert f"--schedule {''.join(map(str, w.schedule))}" in c.replay
    again = _explore(stores.SharedTmpStore, "concurrent-saves", schedule=w.schedule)
    assert ("process-crash", "I8") in _found(again)


def test_the_same_store_alone_passes_so_i8_is_the_concurrency() -> None:
    # the pid-suffixed temporary with os.replace: I8 holds, L1 does not without a lock
    assert _found(_explore(stores.PidTmpStore, "concurrent-saves")) == set()
    assert ("process-crash", "L1") in _found(_explore(stores.PidTmpStore, "concurrent-update"))


def test_last_writer_wins_turns_l1_off() -> None:
    res = _explore(stores.UnlockedUpdateStore, "concurrent-update", lww=True)
    assert all(inv != "L1" for _, inv in _found(res))


def test_the_locked_store_passes_every_invariant_under_every_model() -> None:
    for workload in ("concurrent-saves", "concurrent-update", "save-while-load"):
        res = _explore(stores.LockedUpdateStore, workload, models=MODELS.values())
        assert res.crash_states > 0 and res.exploration.schedules > 1
        assert not res.incomplete, res.results
        assert _found(res) == set(), workload


def test_a_reader_against_an_in_place_writer_is_r2() -> None:
    found = _found(_explore(stores.InPlaceStore, "save-while-load"))
    assert ("process-crash", "R2") in found


@pytest.mark.parametrize("store", [stores.SharedTmpStore, stores.LockedUpdateStore])
def test_every_finding_names_an_invariant_of_the_kind(store: Any) -> None:
    res = _explore(store, "concurrent-saves")
    for _, e in res.findings:
        for c in e.counterexamples:
            assert c.invariant in {"S1", "I8", "L1", "R2", "W1", "D2"}

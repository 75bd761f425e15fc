"""The deterministic scheduler (scenarios/engine/schedule.py, SPEC.md §10.1)."""

from __future__ import annotations

import errno

import pytest
from crashpoint.scenarios.engine.schedule import (
    Scheduler,
    explore_schedules,
    format_schedule,
    parse_schedule,
)


def _bodies(sched: Scheduler, log: list[str], plan: list[list[str]]) -> list:  # type: ignore[type-arg]
    def body(actor: int):  # type: ignore[no-untyped-def]
        def go() -> None:
            for op in plan[actor]:
                sched.point(op)
                log.append(op)

        return go

    return [body(i) for i in range(len(plan))]


def _explore(plan: list[list[str]], bound: int = 2):  # type: ignore[no-untyped-def]
    def run_one(prefix):  # type: ignore[no-untyped-def]
        sched = Scheduler(prefix)
        log: list[str] = []
        out = sched.run(_bodies(sched, log, plan))
        return tuple(log), out

    return explore_schedules(run_one, preemptions=bound)


def test_the_default_schedule_has_no_preemption_and_finishing_is_not_one() -> None:
    # the earlier attempt's bug: every switch after the first step counted as a preemption
    sched = Scheduler()
    log: list[str] = []
    out = sched.run(_bodies(sched, log, [["a1", "a2"], ["b1", "b2"]]))
    assert log == ["a1", "a2", "b1", "b2"]
    assert out.preemptions == 0
    # switching to b when a has finished is free; switching while a could go on is not
    sched = Scheduler((0, 0, 1))  # a, a, then b while a's last point is pending? a ends
    out = sched.run(_bodies(sched, [], [["a1"], ["b1", "b2"]]))
    assert out.preemptions == 0
    sched = Scheduler((1,))
    log = []
    out = sched.run(_bodies(sched, log, [["a1", "a2"], ["b1"]]))
    assert log == ["b1", "a1", "a2"]
    assert out.preemptions == 0  # nobody ran yet: the first choice is not a preemption
    sched = Scheduler((0, 0, 1))  # start a; a at its first point goes on; at its second, b
    log = []
    out = sched.run(_bodies(sched, log, [["a1", "a2"], ["b1"]]))
    assert log == ["a1", "b1", "a2"]
    assert out.preemptions == 1


def test_a_switch_away_from_a_blocked_actor_is_not_a_preemption() -> None:
    sched = Scheduler((1,))  # b first: takes the lock
    sched2_order: list[str] = []

    def h2() -> None:
        sched.point("start")
        sched.flock("/l", True, True, False)  # blocks: b holds it
        sched2_order.append("a")

    def w2() -> None:
        sched.flock("/l", True, True, False)
        sched.point("hold")
        sched2_order.append("b")
        sched.flock("/l", True, True, True)

    out = sched.run([h2, w2])
    assert out is not None and out.stuck is None
    assert sched2_order == ["b", "a"]
    assert out.preemptions == 0, out.decisions


def test_bound_zero_runs_only_non_preemptive_schedules_and_counts_the_rest() -> None:
    found = _explore([["a1", "a2"], ["b1", "b2"]], bound=0)
    logs = {key for key, _ in found.kept}
    assert logs == {("a1", "a2", "b1", "b2"), ("b1", "b2", "a1", "a2")}
    assert found.beyond_bound > 0 and not found.exhaustive
    full = _explore([["a1", "a2"], ["b1", "b2"]], bound=4)
    assert len({key for key, _ in full.kept}) == 6  # C(4,2) interleavings
    assert full.exhaustive


def test_the_scheduler_never_switches_between_two_operations_of_one_yield() -> None:
    # acceptance 5: an actor that does two things without a yield point between them
    # never sees the other actor in between, in any schedule of any bound
    def run_one(prefix):  # type: ignore[no-untyped-def]
        sched = Scheduler(prefix)
        log: list[str] = []

        def a() -> None:
            sched.point("a")
            log.append("a1")
            log.append("a2")  # no yield point between a1 and a2

        def b() -> None:
            for op in ("b1", "b2", "b3"):
                sched.point(op)
                log.append(op)

        out = sched.run([a, b])
        return tuple(log), out

    found = explore_schedules(run_one, preemptions=5)
    assert found.exhaustive and len(found.kept) == 4
    for log, _ in found.kept:
        assert log.index("a2") == log.index("a1") + 1


def test_a_deadlock_is_stuck_not_a_hang() -> None:
    def run_one(prefix):  # type: ignore[no-untyped-def]
        sched = Scheduler(prefix)

        def one(first: str, second: str):  # type: ignore[no-untyped-def]
            def go() -> None:
                sched.flock(first, True, True, False)
                sched.point("between")
                sched.flock(second, True, True, False)

            return go

        out = sched.run([one("/x", "/y"), one("/y", "/x")])
        return out.stuck, out

    found = explore_schedules(run_one, preemptions=2)
    stuck = [key for key, _ in found.kept if key is not None]
    assert stuck and all(s.startswith("deadlock") for s in stuck)
    assert None in {key for key, _ in found.kept}  # and schedules that do not deadlock


def test_a_spinning_actor_is_stuck_and_time_is_virtual() -> None:
    sched = Scheduler(step_budget=500)

    def spin() -> None:
        while True:
            sched.sleep(1.0)

    out = sched.run([spin])
    assert out.stuck is not None and "scheduler steps" in out.stuck
    assert out.now >= 400  # virtual seconds passed, not real ones


def test_a_non_blocking_try_on_a_held_lock_raises_ewouldblock() -> None:
    def run_one(prefix):  # type: ignore[no-untyped-def]
        sched = Scheduler(prefix)
        seen: list[int] = []

        def a() -> None:
            sched.flock("/l", True, True, False)
            sched.point("hold")
            sched.flock("/l", True, True, True)

        def b() -> None:
            try:
                sched.flock("/l", True, False, False)
            except BlockingIOError as exc:
                seen.append(exc.errno)

        out = sched.run([a, b])
        return tuple(seen), out

    found = explore_schedules(run_one, preemptions=2)
    assert {key for key, _ in found.kept} == {(), (errno.EWOULDBLOCK,)}


def test_a_schedule_is_written_and_read_back() -> None:
    assert parse_schedule(format_schedule((0, 1, 1)), 2) == (0, 1, 1)
    assert parse_schedule("-", 2) == ()
    with pytest.raises(ValueError):
        parse_schedule("012", 2)

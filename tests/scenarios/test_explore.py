"""The harness end to end: the reference passes, every mutant is caught by the
invariant it stands for, and the seed fails exactly where SPEC.md §8 says."""

from __future__ import annotations

import pytest
from crashpoint.faultfs import PROCESS_CRASH
from crashpoint.scenarios import (
    INVARIANTS,
    MUTANTS,
    SCENARIOS,
    TARGETS,
    ExplorationResult,
    explore,
    get_target,
)
from crashpoint.scenarios.kinds.agent.checkers import severity_rank


def explore_all(target: str) -> list[ExplorationResult]:
    return [explore(w, model=PROCESS_CRASH, target=get_target(target)) for w in SCENARIOS.values()]


def test_catalogue_has_at_least_ten_scenarios_and_sixty_crash_points() -> None:
    results = explore_all("reference")
    assert len(results) >= 10
    assert sum(r.crash_points for r in results) >= 60
    assert all(r.crash_points == r.operations + 1 for r in results)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_reference_passes_every_scenario_under_process_crash(name: str) -> None:
    result = explore(SCENARIOS[name], model=PROCESS_CRASH, target=TARGETS["reference"])
    result.assert_no_violations()
    assert result.distinct_states >= 1


PROCESS_CRASH_MUTANTS = [
    n for n, t in MUTANTS.items() if t.expected and t.expected[1] == "process-crash"
]


@pytest.mark.parametrize("name", PROCESS_CRASH_MUTANTS)
def test_mutant_is_killed_by_its_expected_invariant(name: str) -> None:
    expected_invariant = MUTANTS[name].expected[0]  # type: ignore[index]
    results = explore_all(f"mutant:{name}")
    killed = {inv for r in results for inv in r.killed_by()}
    assert expected_invariant in killed, (name, killed)
    # most severe first (SPEC.md §8 classes), then minimal: smallest crash point
    for r in results:
        keys = [(severity_rank(v.invariant), v.crash_point) for v in r.counterexamples]
        assert keys == sorted(keys)


def test_every_invariant_but_f1_is_shown_to_catch_a_broken_storage() -> None:
    """A harness that says "0 violations" must be shown to find what it looks for."""
    caught = {MUTANTS[n].expected[0] for n in PROCESS_CRASH_MUTANTS}  # type: ignore[index]
    assert caught >= {i.value for i in INVARIANTS} - {"F1", "N1", "H1", "T1"}


def test_seed_fails_e2_with_the_stale_legacy_marker_counterexample() -> None:
    result = explore(SCENARIOS["stale-ended-marker"], target=TARGETS["seed"])
    assert result.killed_by() == ["E2"]
    v = result.counterexamples[0]
    assert v.invariant == "E2"
    assert v.last_done.startswith("rename(") and v.last_done.endswith("/s1.json')")
    assert ".tmp" in v.last_done
    assert v.operation.startswith("unlink(") and v.operation.endswith("s1.json.ended')")
    assert v.crash_state["s1.json.ended"].startswith("ended marker '1'")
    assert "= save#2" in v.crash_state["s1.json"]
    assert "isRunning=false" in v.got
    assert v.replay == (
        "crashpoint explore --scenario stale-ended-marker --target seed "
        f"--model process-crash --crash-point {v.crash_point}"
    )


def test_crash_point_restricts_exploration_to_one_point() -> None:
    result = explore(SCENARIOS["three-saves"], crash_point=5)
    assert result.crash_points == 1 and result.distinct_states == 1


def test_shards_partition_the_distinct_states() -> None:
    whole = explore(SCENARIOS["three-saves"])
    parts = [explore(SCENARIOS["three-saves"], shard=(k, 3)) for k in (1, 2, 3)]
    assert sum(p.distinct_states for p in parts) == whole.distinct_states
    assert sum(p.raw_states for p in parts) == whole.raw_states


def test_assert_no_violations_carries_the_counterexample() -> None:
    result = explore(SCENARIOS["delete"], target=get_target("mutant:delete-main-first"))
    with pytest.raises(AssertionError) as e:
        result.assert_no_violations()
    assert "D1 (deleted-stays-deleted)" in str(e.value)
    assert "replay: crashpoint explore --scenario delete" in str(e.value)

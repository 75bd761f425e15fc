"""Whole runs as workloads: the reference passes them under every model, each lifecycle
mutant is killed by the invariant it stands for, and the checkers N1/H1/T1 judge what
they should (SPEC §7, §8)."""

from __future__ import annotations

import pytest
from crashpoint.faultfs import MODELS, PROCESS_CRASH, crash_points
from crashpoint.scenarios import (
    MUTANTS,
    SCENARIOS,
    TARGETS,
    Target,
    explore,
    get_target,
    record,
)
from crashpoint.scenarios.kinds.agent.kind import AGENT_KINDS
from crashpoint.scenarios.kinds.agent.runs import (
    TWO_BATCHES,
    AgentRunKind,
    ResumeProbe,
    check_run,
    expected_resumability,
    probe_resume,
)

RUNS = [name for name, w in SCENARIOS.items() if "runtime" in w.tags]

LIFECYCLE = {
    "running-flag-after-save": "H1",
    "terminal-failure-unmarked": "T1",
    "suspend-failure-marks-ended": "H1",
    "toolcall-saved-before-pairing": "P1",
    "resume-reuses-stream": "H1",
}
"""Each lifecycle mutant and the invariant that must kill it."""

DESIGNED_FOR = {
    "terminal-failure-unmarked": "run-terminal-save-failure",
    "suspend-failure-marks-ended": "run-suspend-save-failure",
}
"""Mutants whose bug only a dedicated scenario reaches: the kill must come from it."""


def test_the_run_scenarios_are_judged_by_the_agent_run_kind() -> None:
    assert set(RUNS) >= {
        "run-plain-reply",
        "run-two-tool-batches",
        "run-approval",
        "run-suspend-stream",
        "run-suspend-tools",
        "run-cancel",
        "run-model-error",
        "run-terminal-save-failure",
    }
    for name in RUNS:
        workload = SCENARIOS[name]
        assert workload.tags == ("runtime",)
        assert AGENT_KINDS[workload.kind] is AgentRunKind
    # the storage workloads are judged by the storage invariants alone
    assert {SCENARIOS[n].kind for n in SCENARIOS if n not in RUNS} == {"agent-state"}


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("name", RUNS)
def test_reference_passes_each_run_scenario_under_each_model(name: str, model: str) -> None:
    result = explore(SCENARIOS[name], model=MODELS[model], target=TARGETS["reference"])
    result.assert_no_violations()
    assert result.distinct_states > 5
    assert {"N1", "H1", "T1", "S2"} <= set(result.invariants)


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("name", list(LIFECYCLE))
def test_each_lifecycle_mutant_is_killed_by_its_invariant_over_the_run_scenarios(
    name: str, model: str
) -> None:
    target = MUTANTS[name]
    assert target.expected == (LIFECYCLE[name], "process-crash")
    assert target.description  # the real bug it stands for
    killed: dict[str, set[str]] = {}
    for run in RUNS:
        result = explore(SCENARIOS[run], model=MODELS[model], target=target)
        for invariant in result.killed_by():
            killed.setdefault(invariant, set()).add(run)
    assert LIFECYCLE[name] in killed, killed
    if name in DESIGNED_FOR:
        assert killed == {LIFECYCLE[name]: {DESIGNED_FOR[name]}}


@pytest.mark.parametrize("name", list(LIFECYCLE))
def test_a_lifecycle_mutant_with_its_bug_off_passes_every_run(name: str) -> None:
    """The kill is the runtime bug's doing, not the storage's: the same storage class
    with ``runtime_bug`` cleared passes every run scenario."""
    cls = MUTANTS[name].factory
    assert isinstance(cls, type)
    off = type(f"{cls.__name__}Off", (cls,), {"runtime_bug": ""})
    target = Target(f"mutant:{name}-off", off, "the bug switched off")
    models = list(MODELS.values()) if name == "toolcall-saved-before-pairing" else [PROCESS_CRASH]
    for model in models:
        for run in RUNS:
            explore(SCENARIOS[run], model=model, target=target).assert_no_violations()


def test_a_runtime_that_leaks_its_key_is_caught_by_s2() -> None:
    """The workloads hand the runtime the secret API key: S2 watches every write."""
    result = explore(
        SCENARIOS["run-plain-reply"], target=get_target("mutant:runtime-handle-serialized")
    )
    assert result.killed_by() == ["S2"]


def test_runtime_events_are_recorded_as_marks() -> None:
    rec = record(SCENARIOS["run-plain-reply"], TARGETS["reference"])
    marks = [m.label for m in rec.marks if m.label.startswith(("rt:", "terminal:"))]
    assert marks == [
        "rt:save:after_user_input",
        "rt:saved:after_user_input",
        "rt:save:after_assistant_turn",
        "rt:saved:after_assistant_turn",
        "rt:save:complete",
        "rt:saved:complete",
        "terminal:returned",
    ]
    rec = record(SCENARIOS["run-terminal-save-failure"], TARGETS["reference"])
    labels = [m.label for m in rec.marks]
    assert labels.index("rt:save_failed:complete") < labels.index("rt:marked:")
    assert labels[-1] == "terminal:returned"


# --- expected resumability (H1, T1) ------------------------------------------------------
def test_a_checkpoint_save_sets_the_expected_resumability() -> None:
    assert expected_resumability([]).allowed == {False}
    saved = ["rt:save:after_user_input", "rt:saved:after_user_input"]
    assert expected_resumability(saved[:1]).allowed == {False, True}  # in flight
    assert expected_resumability(saved).allowed == {True}
    done = [*saved, "rt:save:complete", "rt:saved:complete", "terminal:returned"]
    exp = expected_resumability(done)
    assert exp.allowed == {False} and exp.returned
    again = [*done, "rt:save:after_user_input"]
    assert not expected_resumability(again).returned


def test_only_a_failed_terminal_save_may_be_followed_by_a_mark() -> None:
    base = ["rt:save:after_user_input", "rt:saved:after_user_input"]
    suspend = [*base, "rt:save:suspended", "rt:save_failed:suspended", "rt:mark:", "rt:marked:"]
    exp = expected_resumability(suspend)
    assert exp.allowed == {True} and "not allowed" in exp.why
    terminal = [*base, "rt:save:error", "rt:save_failed:error", "rt:mark:", "rt:marked:"]
    assert expected_resumability(terminal).allowed == {False}
    # a failed save may have committed: both values until the mark returns
    assert expected_resumability(terminal[:-1]).allowed == {False, True}


def _probe(**changes: object) -> ResumeProbe:
    fields: dict[str, object] = dict(
        load_error=None,
        loaded_running=True,
        loaded_checkpoint=None,
        frozen=(),
        persisted_results=("call_a",),
        needs_model=True,
        resume_status="complete",
        resumed=True,
        final_status="complete",
        journal=("model", "tool:call_b", "model"),
        model_calls=2,
        model_completed=2,
        executions=(("call_b", 1),),
        added_replies=2,
        final_paired=True,
        reloaded_paired=True,
        at_least_once=("call_b",),
    )
    fields.update(changes)
    return ResumeProbe(**fields)  # type: ignore[arg-type]


RUNNING = ["rt:save:after_user_input", "rt:saved:after_user_input"]


def test_check_run_accepts_an_honest_resume() -> None:
    assert check_run(_probe(), 9, RUNNING) == []


@pytest.mark.parametrize(
    ("changes", "invariant"),
    [
        ({"executions": (("call_a", 1),)}, "N1"),
        ({"resumed": False, "resume_status": "not_resumable"}, "H1"),
        ({"loaded_running": False, "journal": ("model",)}, "H1"),
        ({"journal": ("tool:call_a", "model")}, "H1"),
        ({"journal": (), "model_calls": 0, "model_completed": 0, "added_replies": 0}, "H1"),
        ({"added_replies": 3}, "H1"),
        ({"final_paired": False}, "P1"),
        ({"reloaded_paired": False}, "P1"),
    ],
)
def test_check_run_finds_each_dishonest_resume(changes: dict[str, object], invariant: str) -> None:
    found = check_run(_probe(**changes), 9, RUNNING)
    assert found and {f.invariant for f in found} == {invariant}


def test_check_run_t1_after_the_terminal_path_returned() -> None:
    done = [*RUNNING, "rt:save:complete", "rt:save_failed:complete", "rt:mark:", "rt:marked:"]
    done.append("terminal:returned")
    honest = _probe(loaded_running=False, resumed=False, journal=(), model_calls=0)
    assert check_run(honest, 20, done) == []
    found = check_run(_probe(), 20, done)
    assert [f.invariant for f in found] == ["T1"]


def test_an_unpersisted_tool_may_run_again_at_least_once() -> None:
    """The crash state right before the first after_tool_batch save: both tools ran,
    their results were not persisted; resume runs them again, not a violation."""
    rec = record(SCENARIOS["run-two-tool-batches"], TARGETS["reference"])
    labels = [(m.index, m.label) for m in rec.marks]
    k = next(i for i, label in labels if label == "rt:save:after_tool_batch")
    assert any(label == "rt:tool_done:call_b" and i <= k for i, label in labels)
    state = next(p for p in crash_points(PROCESS_CRASH, rec.initial, rec.ops) if p.index == k)
    probe = probe_resume(TWO_BATCHES, state.states[0], TARGETS["reference"].factory)
    assert probe.persisted_results == ()
    assert probe.at_least_once == ("call_a", "call_b", "call_c")
    assert probe.journal[0] == "model" and probe.final_status == "complete"
    assert check_run(probe, k, rec.marks_before(k)) == []

"""The storage state machine (``storage_state_machine``): the reference survives it
under every persistence model; mutants are caught and shrunk to a few steps, and
the printed program replays the failure (SPEC.md §8; STYLE.md §6, §11)."""

from __future__ import annotations

import functools
import io
import re
import subprocess
import sys
import unittest
from typing import Any

import pytest
from crashpoint.core import (
    AgentState,
    MediaPart,
    Message,
    PendingApproval,
    PendingRunCheckpoint,
    TextPart,
    ToolCall,
    state_is_paired,
)
from crashpoint.faultfs import MODELS
from crashpoint.scenarios import (
    MACHINE_INVARIANTS,
    MUTANTS,
    TARGETS,
    get_target,
    run_storage_machine,
    storage_state_machine,
)
from crashpoint.scenarios.kinds.agent.strategies import storage_states
from crashpoint.scenarios.kinds.state_storage.machine import Snapshot
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test
from machine_helpers import program

MAX_STEPS = 5
"""A shrunk counterexample is at most this many rules (the notes' program)."""


def machine_settings(max_examples: int) -> settings:
    """Deterministic, no example database, no coverage-traced explain phase."""
    return settings(
        max_examples=max_examples,
        stateful_step_count=20,
        database=None,
        derandomize=True,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    )


def failure(target: str, max_examples: int = 1000, **options: Any) -> AssertionError:
    machine = storage_state_machine(get_target(target), **options)
    with pytest.raises(AssertionError) as info:
        run_state_machine_as_test(machine, settings=machine_settings(max_examples))
    return info.value


@functools.cache
def caught(name: str) -> AssertionError:
    """The shrunk failure of ``mutant:NAME`` (found once per test session)."""
    return failure(f"mutant:{name}")


# --- the reference ---------------------------------------------------------------------
@pytest.mark.parametrize("model", list(MODELS))
def test_reference_survives_200_programs_under_each_model(model: str) -> None:
    machine = storage_state_machine(TARGETS["reference"], models=[model])
    run_state_machine_as_test(machine, settings=machine_settings(200))


# --- mutants: caught, shrunk, replayed ----------------------------------------------------
CAUGHT = [
    "write-main-in-place",
    "delete-main-first",
    "unsupported-fallback",
    "create-over-unreadable",
]


@pytest.mark.parametrize("name", CAUGHT)
def test_mutant_is_caught_and_shrunk_to_a_handful_of_steps(name: str) -> None:
    exc = caught(name)
    invariant = MUTANTS[name].expected[0]  # type: ignore[index]
    assert str(exc).startswith(f"{invariant} (")
    steps = program(exc)
    assert 1 <= len(steps) <= MAX_STEPS, steps
    assert "  disk:\n    s" in str(exc)  # the crash state, file by file


def test_delete_main_first_counterexample_names_the_crash_and_the_resurrected_bak() -> None:
    exc = caught("delete-main-first")
    text = str(exc)
    assert text.startswith("D1 (deleted-stays-deleted) violated: load after a process crash")
    assert "during delete#" in text and "before unlink(" in text
    # The deleted session's main is gone and its bak (a snapshot some program step wrote:
    # a save, or an older schema version the machine put there) loads again.
    found = re.search(r"during delete#\d+\('([^']+)'\)", text)
    assert found is not None, text
    stem = found.group(1)
    assert f"{stem}.json: absent" in text
    assert re.search(rf"{re.escape(stem)}\.json\.bak: valid v\d", text), text
    assert any(step.startswith("state.delete(") for step in program(exc))


def test_printed_program_replays_the_failure() -> None:
    """hypothesis's reproduction, executed as Python, fails the same way."""
    exc = caught("delete-main-first")
    machine = storage_state_machine(get_target("mutant:delete-main-first"))
    lines = [line for line in exc.__notes__ if line.startswith("state")]
    assert lines[0] == "state = StorageMachine()"
    names = {
        "StorageMachine": machine,
        "AgentState": lambda *a, **k: Snapshot(AgentState(*a, **k)),
        "Message": Message,
        "TextPart": TextPart,
        "MediaPart": MediaPart,
        "ToolCall": ToolCall,
        "PendingApproval": PendingApproval,
        "PendingRunCheckpoint": PendingRunCheckpoint,
    }
    with pytest.raises(AssertionError) as again:
        exec("\n".join(lines), names)
    assert str(again.value) == str(exc)


def test_power_loss_crash_state_is_rendered_in_the_notes() -> None:
    exc = failure("mutant:no-fsync-before-rename", models=["power-loss"])
    # the zero-length main loses data: R1, or D1 when the shrunk program ends in a delete
    assert str(exc).startswith(("R1 (recoverable)", "D1 (deleted-stays-deleted)"))
    notes = "\n".join(exc.__notes__)
    assert re.search(r"crash under power-loss during [a-z_]+#", notes), notes
    assert "crash state " in notes and ": empty" in notes  # the zero-length main
    assert any(step.startswith("state.crash_now(") for step in program(exc))
    assert len(program(exc)) <= MAX_STEPS


# --- rules driven by hand --------------------------------------------------------------
def new_machine(target: str = "reference", **options: Any) -> Any:
    return storage_state_machine(get_target(target), **options)()


def snapshot(sid: str = "s1", text: str = "hi", *, running: bool = False) -> Snapshot:
    state = AgentState.new(sid)
    state.messages = [Message("user", (TextPart(text),))]
    state.is_running = running
    return Snapshot(state)


def test_corrupt_main_falls_back_to_bak_and_a_crash_in_the_next_save_is_allowed() -> None:
    m = new_machine()
    m.save(snapshot(text="one"))
    m.save(snapshot(text="two"))
    m.corrupt(sid="s1", file="main", how="garbage")
    m.loads_as_expected()  # load returns bak ("one"): SPEC.md §6, not an R1 finding
    for at in range(12):
        m.crash_now(model="process-crash", at=at, pick=0)
        m.save(snapshot(text=f"three-{at}"))
        m.loads_as_expected()


@pytest.mark.parametrize("how", ["truncate", "garbage", "empty"])
def test_every_corruption_is_judged_as_specified(how: str) -> None:
    for which in ("main", "bak"):
        m = new_machine()
        m.save(snapshot(text="one"))
        m.save(snapshot(text="two"))
        m.corrupt(sid="s1", file=which, how=how)
        m.loads_as_expected()
        m.load_or_create(sid="s1", metadata=None)
        m.load(sid="s1")
        m.loads_as_expected()


def test_future_version_main_must_not_fall_back() -> None:
    ok = new_machine()
    ok.save(snapshot())
    ok.future_version_writes_main(sid="s1")
    ok.loads_as_expected()
    ok.load_or_create(sid="s1", metadata=None)  # refuses, writes nothing (C1)
    bad = new_machine("mutant:unsupported-fallback")
    bad.save(snapshot())
    bad.future_version_writes_main(sid="s1")
    with pytest.raises(AssertionError, match=r"^V1 \(no-unsupported-fallback\)"):
        bad.loads_as_expected()


def test_crash_armed_past_the_last_operation_crashes_right_after_the_call() -> None:
    m = new_machine()
    # the first save issues 8 operations (mkdir, its fsync_dir, the lock file's create,
    # the five of the commit): point 17 mod 9 = 8 is right after it returned
    m.crash_now(model="power-loss", at=17, pick=0)
    m.save(snapshot(running=True))
    assert "right after it returned (8 operations)" in m.harness.last_crash
    m.loads_as_expected()


def test_crash_inside_a_call_reboots_on_a_fresh_storage() -> None:
    m = new_machine()
    m.save(snapshot(text="one"))
    storage = m.harness.storage
    m.crash_now(model="process-crash", at=2, pick=0)
    m.save(snapshot(text="two"))
    assert m.harness.storage is not storage
    assert "after 2 of its operations" in m.harness.last_crash
    m.loads_as_expected()


def test_mark_then_crash_during_the_next_save_is_judged_e1_on_a_mutant() -> None:
    m = new_machine("mutant:ended-cleared-before-rename")
    m.save(snapshot(running=True))
    m.mark_not_resumable(sid="s1")
    with pytest.raises(AssertionError, match=r"^E1 \(not-resumable-honoured\)"):
        m.save_next_turn(sid="s1")


def test_save_next_turn_continues_the_last_saved_state() -> None:
    m = new_machine()
    m.save(snapshot(text="one"))
    m.save_next_turn(sid="s1")
    m.save_next_turn(sid="s1")
    loaded = m.harness.storage.load("s1")
    assert [p.text for msg in loaded.messages for p in msg.contents] == ["one", "turn 1", "turn 2"]
    assert loaded.is_running  # even turns save after_user_input, odd ones complete
    assert loaded.pending_run_checkpoint == PendingRunCheckpoint("after_user_input", 2)
    m.loads_as_expected()


def test_snapshot_repr_shows_only_what_differs_from_a_fresh_state() -> None:
    state = AgentState.new("s1")
    state.is_running = True
    assert repr(Snapshot(state)) == "AgentState('s1', is_running=True)"
    assert repr(Snapshot(AgentState.new("s2"))) == "AgentState('s2')"


# --- entry points ----------------------------------------------------------------------
def test_machine_class_is_a_rule_based_state_machine_with_a_unittest_case() -> None:
    machine = storage_state_machine(TARGETS["reference"], models=["process-crash"])
    assert issubclass(machine, RuleBasedStateMachine)
    case = machine.TestCase
    assert case.settings.stateful_step_count == 20
    case.settings = machine_settings(5)
    result = unittest.TextTestRunner(stream=io.StringIO()).run(case())
    assert result.wasSuccessful() and result.testsRun == 1


def test_run_storage_machine_raises_the_shrunk_failure_with_its_program() -> None:
    with pytest.raises(AssertionError) as info:
        run_storage_machine(get_target("mutant:write-main-in-place"), max_examples=300, seed=1)
    assert str(info.value).startswith("R1 (recoverable)")
    assert 1 <= len(program(info.value)) <= MAX_STEPS
    run_storage_machine(TARGETS["reference"], max_examples=10, seed=1)


def test_invariants_can_be_narrowed() -> None:
    assert "E2" in {i.value for i in MACHINE_INVARIANTS}
    machine = storage_state_machine(get_target("mutant:unsupported-fallback"), invariants=["R1"])
    m = machine()
    m.save(snapshot())
    m.future_version_writes_main(sid="s1")
    m.loads_as_expected()  # V1 not checked


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"models": []}, ValueError),
        ({"models": ["no-such-model"]}, KeyError),
        ({"session_ids": ()}, ValueError),
        ({"session_ids": ("../escape",)}, Exception),
        ({"invariants": ["Z9"]}, ValueError),
    ],
)
def test_bad_arguments_are_refused(options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        storage_state_machine(TARGETS["reference"], **options)


def test_importing_the_harness_does_not_import_hypothesis() -> None:
    code = "import sys, crashpoint.scenarios; print('hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- the state strategy ------------------------------------------------------------------
@settings(max_examples=50, database=None)
@given(storage_states(session_id="s1"), storage_states(session_id="s1", paired=False))
def test_storage_states_are_paired_or_never_paired_as_asked(
    paired: AgentState, unpaired: AgentState
) -> None:
    assert paired.session_id == unpaired.session_id == "s1"
    assert state_is_paired(paired)
    assert not state_is_paired(unpaired)

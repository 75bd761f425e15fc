"""The storage state machine checks S1 and S2 too (issue 10): hostile ids go through
the six methods, every call's operations are judged for confinement and every disk
it judges for secrets (SPEC.md §8)."""

from __future__ import annotations

import functools
from typing import Any

import pytest
from crashpoint.core import AgentState, Message, TextPart
from crashpoint.scenarios import MACHINE_INVARIANTS, TARGETS, get_target, storage_state_machine
from crashpoint.scenarios.kinds.state_storage.machine import HOSTILE_IDS, HOSTILE_METHODS, Snapshot
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test
from machine_helpers import program


def new_machine(target: str) -> Any:
    return storage_state_machine(get_target(target), models=["process-crash"])()


def snapshot(sid: str = "s1") -> Snapshot:
    state = AgentState.new(sid)
    state.messages = [Message("user", (TextPart("hi"),))]
    return Snapshot(state)


def test_s1_and_s2_are_machine_invariants() -> None:
    assert {"S1", "S2"} <= {i.value for i in MACHINE_INVARIANTS}


@pytest.mark.parametrize("target", ["reference", "seed"])
def test_hostile_calls_are_refused_without_touching_anything(target: str) -> None:
    m = new_machine(target)
    m.save(snapshot())
    for method in HOSTILE_METHODS:
        for sid in HOSTILE_IDS:
            m.hostile_call(method=method, sid=sid)
            m.loads_as_expected()


@pytest.mark.parametrize(
    ("mutant", "method"),
    [("unsanitized-session-id", "save"), ("unsanitized-delete", "delete")],
)
def test_a_hostile_call_outside_the_base_directory_is_s1(mutant: str, method: str) -> None:
    m = new_machine(f"mutant:{mutant}")
    m.save(snapshot())
    with pytest.raises(AssertionError, match=r"^S1 \(confined\) violated") as info:
        m.hostile_call(method=method, sid="../escape")
    assert "/data/escape.json" in str(info.value)


@pytest.mark.parametrize("mutant", ["runtime-handle-serialized", "chunked-secret-writer"])
def test_a_secret_on_disk_is_s2(mutant: str) -> None:
    m = new_machine(f"mutant:{mutant}")
    with pytest.raises(AssertionError, match=r"^S2 \(no-secrets\) violated"):
        m.save(snapshot())  # the sweep judges the crash states inside the save
        m.loads_as_expected()


@functools.cache
def shrunk(mutant: str) -> AssertionError:
    machine = storage_state_machine(get_target(f"mutant:{mutant}"), models=["process-crash"])
    with pytest.raises(AssertionError) as info:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=300,
                stateful_step_count=20,
                database=None,
                derandomize=True,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
            ),
        )
    return info.value


@pytest.mark.parametrize(
    ("mutant", "invariant"),
    [("unsanitized-session-id", "S1"), ("chunked-secret-writer", "S2")],
)
def test_the_machine_finds_and_shrinks_s1_and_s2(mutant: str, invariant: str) -> None:
    exc = shrunk(mutant)
    assert str(exc).startswith(f"{invariant} ("), str(exc)
    assert 1 <= len(program(exc)) <= 5, program(exc)  # as test_machine.py MAX_STEPS


def test_reference_passes_the_machine_with_hostile_calls() -> None:
    machine = storage_state_machine(TARGETS["reference"], models=["process-crash"])
    run_state_machine_as_test(
        machine,
        settings=settings(max_examples=40, database=None, derandomize=True, deadline=None),
    )


def test_a_factory_returning_none_is_a_bad_target_not_a_finding() -> None:
    from crashpoint.scenarios.targets.user import BadTarget

    machine = storage_state_machine(lambda fs, base: None)
    with pytest.raises(BadTarget, match="returned None"):
        run_state_machine_as_test(machine, settings=settings(max_examples=5, database=None))

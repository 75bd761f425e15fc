"""The storage state machine, long runs (marker ``long``; ``pytest -m long``):
2000 random programs per persistence model against the reference, every storage
mutant the machine can see caught and shrunk, the seed's known failures found."""

from __future__ import annotations

from typing import Any

import pytest
from crashpoint.faultfs import MODELS
from crashpoint.scenarios import (
    MACHINE_INVARIANTS,
    MUTANTS,
    TARGETS,
    get_target,
    storage_state_machine,
)
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test
from machine_helpers import program

pytestmark = pytest.mark.long

MAX_STEPS = 6

SEEN = {i.value for i in MACHINE_INVARIANTS}
STORAGE_MUTANTS = [
    name
    for name, target in MUTANTS.items()
    if "storage" in target.tags
    and target.expected is not None
    and target.expected[0] in SEEN
    and target.expected[1] != "fault"
]


def long_settings(max_examples: int, *, derandomize: bool) -> settings:
    return settings(
        max_examples=max_examples,
        stateful_step_count=30,
        database=None,
        derandomize=derandomize,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink],
    )


def shrunk_failure(target: str, **options: Any) -> AssertionError:
    machine = storage_state_machine(get_target(target), **options)
    with pytest.raises(AssertionError) as info:
        run_state_machine_as_test(machine, settings=long_settings(3000, derandomize=True))
    return info.value


@pytest.mark.parametrize("model", list(MODELS))
def test_reference_survives_2000_random_programs(model: str) -> None:
    machine = storage_state_machine(TARGETS["reference"], models=[model])
    run_state_machine_as_test(machine, settings=long_settings(2000, derandomize=False))


def test_the_storage_mutants_are_the_zoo_minus_faults_and_security() -> None:
    assert len(STORAGE_MUTANTS) >= 10


@pytest.mark.parametrize("name", STORAGE_MUTANTS)
def test_every_storage_mutant_is_caught_and_shrunk(name: str) -> None:
    exc = shrunk_failure(f"mutant:{name}")
    assert str(exc)[:2] in SEEN
    assert 1 <= len(program(exc)) <= MAX_STEPS, program(exc)


def test_seed_fails_e2_under_process_crash() -> None:
    """SPEC.md §8: the legacy marker left by a crash before save deletes it condemns
    the fresh, resumable snapshot."""
    exc = shrunk_failure("seed", models=["process-crash"])
    assert str(exc).startswith("E2 (resumability-preserved)")
    assert len(program(exc)) <= MAX_STEPS


def test_seed_fails_r1_under_power_loss() -> None:
    """SPEC.md §8: the seed syncs nothing, so a power cut loses what save acknowledged."""
    exc = shrunk_failure("seed", models=["power-loss"], invariants=["R1"])
    assert str(exc).startswith("R1 (recoverable)")
    assert len(program(exc)) <= MAX_STEPS

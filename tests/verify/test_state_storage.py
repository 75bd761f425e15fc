"""The state-storage kind for user targets (issue 8, acceptance 1 and 6): the
reference run unmodified through interception, the storage mutants, the conformance
suite against any storage, and a correct storage with a layout of its own."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import crashpoint
import pytest
import targets
from crashpoint.core import AgentState, ErrorCode, FileStateStorage, StateError
from crashpoint.faultfs import FileSystem
from crashpoint.scenarios import MUTANTS, SCENARIOS, TARGETS, record
from crashpoint.scenarios.kinds.agent.workload import BASE_DIR
from crashpoint.scenarios.kinds.state_storage.conformance import (
    CONFORMANCE,
    needs_reference_format,
    run_conformance,
    run_state_machine,
    selected_workloads,
    storage_target,
)
from crashpoint.scenarios.targets.user import make_runner
from ownlayout import OwnLayoutStorage, own_layout

STORAGE_MUTANTS = sorted(name for name, m in MUTANTS.items() if "storage" in m.tags)


# --- acceptance 1: the reference, unmodified, intercepted ------------------------------------


def test_the_reference_intercepted_passes_every_model() -> None:
    result = crashpoint.verify(targets.reference, kind="state-storage", model="all", examples=2)
    assert result.mode == "intercepted"
    result.assert_no_violations()
    assert {r.model for r in result.results} == {
        "process-crash",
        "ext4",
        "xfs",
        "btrfs",
        "posix",
    }
    assert {r.workload for r in result.results} >= {"three-saves", "future-main", "delete"}
    assert len(result.conformance) == len(CONFORMANCE) + 1  # + the state machine


@pytest.mark.long
def test_the_reference_intercepted_passes_every_model_with_faults() -> None:
    result = crashpoint.verify(targets.reference, kind="state-storage", model="all", faults=True)
    result.assert_no_violations()


@pytest.mark.parametrize("name", sorted(w for w in SCENARIOS if "storage" in SCENARIOS[w].tags))
def test_the_intercepted_trace_equals_the_protocol_trace_op_for_op(name: str) -> None:
    workload = SCENARIOS[name]
    protocol = record(workload, TARGETS["reference"]).ops
    with make_runner(targets.reference, BASE_DIR) as runner:
        intercepted = record(workload, storage_target(runner, "reference")).ops
    assert [dataclasses.astuple(op) for op in intercepted] == [
        dataclasses.astuple(op) for op in protocol
    ]


@pytest.mark.parametrize("name", STORAGE_MUTANTS)
def test_each_storage_mutant_fails_verify_as_it_fails_explore(name: str) -> None:
    mutant = MUTANTS[name]
    assert mutant.expected is not None
    invariant, model = mutant.expected
    faults = model == "fault"
    result = crashpoint.verify(
        mutant.factory,
        kind="state-storage",
        model="process-crash" if faults else model,
        faults=faults,
        # a fault mutant: one workload with two saves is enough (the full sweep is
        # the zoo's, tests/scenarios/test_zoo.py)
        workloads=["two-quick-saves"] if faults else None,
        reference_format=True,
        examples=1,
        target=mutant.name,
    )
    assert invariant in result.killed_by()
    found = next(c for c in result.counterexamples if c.invariant == invariant)
    assert found.replay.startswith(f"crashpoint verify {mutant.name} --kind state-storage")


def test_a_protocol_storage_that_ignores_fs_is_refused() -> None:
    class Ignores:
        def __init__(self, fs: FileSystem, base_dir: str) -> None:
            self.saved: dict[str, AgentState] = {}

        def save(self, state: AgentState) -> None:
            self.saved[state.session_id] = state

    with pytest.raises(Exception, match="save returned but no file operation was recorded"):
        crashpoint.verify(Ignores, kind="state-storage")


# --- acceptance 6: a correct storage with a layout of its own --------------------------------


def test_own_layout_storage_passes_conformance_and_every_model() -> None:
    result = crashpoint.verify(own_layout, kind="state-storage", model="all", examples=5)
    result.assert_no_violations()
    ids = {c["id"] for c in result.conformance}
    assert ids == {"13.1", "13.2", "13.5", "13.6", "13.8", "machine"}
    assert all(c["passed"] for c in result.conformance)


@pytest.mark.long
def test_own_layout_storage_passes_every_model_with_faults() -> None:
    result = crashpoint.verify(own_layout, kind="state-storage", model="all", faults=True)
    result.assert_no_violations()


def test_own_layout_storage_passes_the_state_machine_without_the_layout_rules() -> None:
    assert run_state_machine(own_layout, max_examples=10, seed=2) is None


@pytest.mark.long
def test_own_layout_storage_passes_200_state_machine_programs() -> None:
    assert run_state_machine(own_layout, max_examples=200, seed=3) is None


def test_the_layout_rules_are_why_the_machine_needs_the_reference_format() -> None:
    failure = run_state_machine(own_layout, reference_format=True, max_examples=50, seed=1)
    assert failure is not None and failure.split(" ", 1)[0] in {"V1", "R1", "C1"}


def test_reference_layout_workloads_run_only_when_declared() -> None:
    free = {w.name for w in selected_workloads(None, reference_format=False)}
    full = {w.name for w in selected_workloads(None, reference_format=True)}
    assert {"future-main", "corrupt-main-good-bak", "media-placeholder"} <= full - free
    assert "first-save" in free and "hostile-ids-every-method" in free
    assert not any(needs_reference_format(SCENARIOS[n]) for n in free)
    with pytest.raises(KeyError, match="--format reference"):
        selected_workloads(["future-main"], reference_format=False)


# --- the conformance suite catches broken storages ------------------------------------------


class _NotFoundCreates(OwnLayoutStorage):
    def load(self, session_id: str) -> AgentState:
        try:
            return super().load(session_id)
        except StateError:
            return AgentState.new(session_id)


class _DeleteDoesNothing(OwnLayoutStorage):
    def delete(self, session_id: str) -> None:
        return None


class _DropsMetadata(OwnLayoutStorage):
    def save(self, state: AgentState) -> None:
        state = dataclasses.replace(state, metadata={})
        super().save(state)


class _RawOSError(OwnLayoutStorage):
    def _replace(self, path: str, data: bytes) -> None:
        self._ensure_dir()
        self.fs.create(path + ".new")
        self.fs.write(path + ".new", 0, data)
        self.fs.rename(path + ".new", path)


class _RefusesOldVersions(FileStateStorage):
    def load(self, session_id: str) -> AgentState:
        data = self.fs.read(self.path(session_id))
        if json.loads(data).get("schemaVersion", 0) < 3:
            raise StateError(ErrorCode.STATE_CORRUPT, "old")
        return super().load(session_id)


def _reference_like(cls: type) -> object:
    return lambda fs, base: cls(fs, base, sync="full", ended_marker="scoped")


@pytest.mark.parametrize(
    ("factory", "reference_format", "caught"),
    [
        (lambda fs, base: _NotFoundCreates(fs, base), False, "13.1"),
        (lambda fs, base: _DeleteDoesNothing(fs, base), False, "13.1"),
        (lambda fs, base: _DropsMetadata(fs, base), False, "13.1"),
        (lambda fs, base: _RawOSError(fs, base), False, "13.2"),
        (MUTANTS["write-main-in-place"].factory, True, "13.2"),
        (_reference_like(_RefusesOldVersions), True, "13.3"),
        (MUTANTS["unsupported-fallback"].factory, True, "13.4"),
        (MUTANTS["unsanitized-session-id"].factory, True, "13.5"),
        (MUTANTS["unpaired-history-saved"].factory, True, "13.6"),
        (MUTANTS["empty-contents-rejected"].factory, True, "13.8"),
    ],
)
def test_each_conformance_item_catches_a_broken_storage(
    factory: object, reference_format: bool, caught: str
) -> None:
    results = run_conformance(
        lambda fs: factory(fs, BASE_DIR),  # type: ignore[operator]
        reference_format=reference_format,
    )
    failed = {check.id for check, why in results if why is not None}
    assert caught in failed


def test_the_reference_passes_every_conformance_item() -> None:
    results = run_conformance(lambda fs: TARGETS["reference"](fs, BASE_DIR), reference_format=True)
    assert [why for _, why in results] == [None] * len(CONFORMANCE)


def test_several_distinct_machine_failures_are_findings_not_a_crash(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Hypothesis reports two distinct failures as an exception group: each is a finding
    # (verify exit 1 with counterexamples), never "the target raised ExceptionGroup"
    import builtins

    import hypothesis.stateful

    group: Any = getattr(builtins, "ExceptionGroup", None)
    if group is None:  # pragma: no cover - Python 3.10 (hypothesis uses the backport)
        pytest.skip("needs the built-in ExceptionGroup (Python 3.11)")

    def two_failures(*args: object, **kwargs: object) -> None:
        raise group(
            "Hypothesis found 2 distinct failures.",
            [AssertionError("R1 (recoverable) violated: a"), AssertionError("S1 (confined): b")],
        )

    monkeypatch.setattr(hypothesis.stateful, "run_state_machine_as_test", two_failures)
    failure = run_state_machine(own_layout, max_examples=1)
    assert failure is not None
    assert failure.startswith("2 distinct failures: R1 (recoverable) violated: a | S1")

    def not_findings(*args: object, **kwargs: object) -> None:
        raise group("two bugs of the harness", [TypeError("x"), AssertionError("y")])

    monkeypatch.setattr(hypothesis.stateful, "run_state_machine_as_test", not_findings)
    with pytest.raises(group):
        run_state_machine(own_layout, max_examples=1)

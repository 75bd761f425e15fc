"""Storages under short counts (issue 9): a write that stores a prefix and returns its
length with no error. The reference continues it (SPEC.md §6); a storage that ignores
the count acknowledges a cut file, and R1 catches it."""

from __future__ import annotations

import errno

import pytest
from crashpoint.core import FileStateStorage
from crashpoint.faultfs import (
    MODELS,
    Fault,
    FaultKind,
    MemoryFileSystem,
    OpKind,
    RecordingFileSystem,
)
from crashpoint.scenarios import MUTANTS, SCENARIOS, TARGETS, explore_faults, fault_plan, record
from crashpoint.scenarios.kinds.agent.catalogue import build_state, user

SHORT = FaultKind.SHORT_COUNT
IGNORES = MUTANTS["ignores-short-write"]


def last_tmp_write(name: str) -> int:
    """The index of the scenario's last write to a ``.json.tmp`` (the last save's data)."""
    ops = record(SCENARIOS[name], TARGETS["reference"]).ops
    return max(op.index for op in ops if op.kind is OpKind.WRITE and op.path.endswith(".json.tmp"))


def test_the_mutant_is_registered_as_killed_by_r1_under_faults() -> None:
    assert IGNORES.expected == ("R1", "fault")
    assert IGNORES.description


def test_a_storage_ignoring_the_count_acknowledges_a_cut_main_r1() -> None:
    at = last_tmp_write("three-saves")
    fault = Fault(at, errno.ENOSPC, SHORT)
    result = explore_faults(SCENARIOS["three-saves"], target=IGNORES, faults=[fault])
    end = len(record(SCENARIOS["three-saves"], IGNORES, fault=fault).ops)
    r1 = [v for v in result.counterexamples if v.invariant == "R1" and v.crash_point == end]
    assert r1, [(v.invariant, v.crash_point) for v in result.counterexamples]
    assert r1[0].model == "process-crash"
    assert r1[0].crash_state["s1.json"].startswith("truncated")
    assert r1[0].fault == f"{at}:short-count"
    assert not [v for v in result.counterexamples if v.invariant == "F1"]


def test_the_reference_continues_the_same_short_count_and_passes() -> None:
    at = last_tmp_write("three-saves")
    fault = Fault(at, errno.ENOSPC, SHORT)
    rec = record(SCENARIOS["three-saves"], TARGETS["reference"], fault=fault)
    hit = next(c for c in rec.calls if c.begin <= at < (c.end or at + 1))
    assert hit.error is None  # a short count is no failure: the save completes
    # the short write, then its continuation at the offset it reached
    first, rest = rec.ops[at], rec.ops[at + 1]
    assert (rest.kind, rest.path, rest.offset) == (OpKind.WRITE, first.path, len(first.data))
    explore_faults(
        SCENARIOS["three-saves"], target=TARGETS["reference"], faults=[fault], crash_window=None
    ).assert_no_violations()


def _load_after_two_saves(factory: type[FileStateStorage] | None) -> str:
    """Save v1, then v2 with a short count armed on v2's tmp write; return which one
    the next process loads."""
    mem = MemoryFileSystem(dirs=("/data",))
    one = build_state(user("one"))
    two = build_state(user("one"), user("two"))
    make = factory or IGNORES.factory
    first = RecordingFileSystem(mem)
    make(first, "/data").save(one)
    # where the second save writes tmp (the first also created the lock file)
    probe = RecordingFileSystem(MemoryFileSystem(mem.crash_state()))
    make(probe, "/data").save(two)
    tmp_write = next(op.index for op in probe.trace.ops if op.kind is OpKind.WRITE)
    faulted = RecordingFileSystem(mem, fault=Fault(tmp_write, errno.ENOSPC, SHORT))
    make(faulted, "/data").save(two)  # returns: no error reached the caller
    assert len(faulted.trace.ops[tmp_write].data) < len(probe.trace.ops[tmp_write].data)
    reloaded = FileStateStorage(MemoryFileSystem(mem.crash_state()), "/data").load(one.session_id)
    return "two" if len(reloaded.messages) == 2 else "one"


def test_by_hand_a_bare_storage_ignoring_the_count_loses_the_acknowledged_save() -> None:
    assert _load_after_two_saves(None) == "one"  # older than the acknowledged save: R1
    assert _load_after_two_saves(FileStateStorage) == "two"


@pytest.mark.parametrize("model", list(MODELS))
def test_the_reference_survives_every_short_count_under_every_model(model: str) -> None:
    armed = 0
    for w in SCENARIOS.values():
        plan = [f for f in fault_plan(record(w, TARGETS["reference"]).ops) if f.kind is SHORT]
        armed += len(plan)
        explore_faults(
            w, model=MODELS[model], target=TARGETS["reference"], faults=plan
        ).assert_no_violations()
    assert armed > 20

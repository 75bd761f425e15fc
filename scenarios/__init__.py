"""Workloads, checkers, targets and exploration: the harness itself.

``explore(workload, *, model, target, checker)`` records a workload once, derives
every crash state, reboots each on a fresh filesystem with a fresh storage and
checks the invariants of SPEC.md §8.
"""

from typing import TYPE_CHECKING, Any

from . import _catalogue, _mutants, _runs  # noqa: F401  (register scenarios and mutants)
from ._checkers import INVARIANTS, Invariant, Observation, judge
from ._engine import Counterexample, EngineResult
from ._explore import SECRETS, explore, record
from ._faults import explore_faults, fault_plan, parse_fault
from ._targets import MUTANTS, TARGETS, Target, get_target, mutant
from ._workload import BASE_DIR, SCENARIOS, Call, CallKind, Expect, Session, Workload, scenario

ExplorationResult = EngineResult
"""What :func:`explore` returns: the engine's result (every kind's)."""

if TYPE_CHECKING:
    from ._machine import MACHINE_INVARIANTS, run_storage_machine, storage_state_machine
    from ._zoo import FAULT_COLUMN, ZooRow, kill_matrix

_LAZY = {
    "MACHINE_INVARIANTS": "_machine",
    "run_storage_machine": "_machine",
    "storage_state_machine": "_machine",
    "FAULT_COLUMN": "_zoo",
    "ZooRow": "_zoo",
    "kill_matrix": "_zoo",
}


def __getattr__(name: str) -> Any:
    # the state machine and the zoo, imported on first use: ``crashpoint explore``
    # starts without them (issue 11)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "BASE_DIR",
    "FAULT_COLUMN",
    "INVARIANTS",
    "MACHINE_INVARIANTS",
    "MUTANTS",
    "SCENARIOS",
    "SECRETS",
    "TARGETS",
    "Call",
    "CallKind",
    "Counterexample",
    "EngineResult",
    "Expect",
    "ExplorationResult",
    "Invariant",
    "Observation",
    "Session",
    "Target",
    "Workload",
    "ZooRow",
    "explore",
    "explore_faults",
    "fault_plan",
    "get_target",
    "judge",
    "kill_matrix",
    "mutant",
    "parse_fault",
    "record",
    "run_storage_machine",
    "scenario",
    "storage_state_machine",
]

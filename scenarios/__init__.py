"""Workloads, checkers, targets and exploration: the harness itself.

``explore(workload, *, model, target, checker)`` records a workload once, derives
every crash state, reboots each on a fresh filesystem with a fresh storage and
checks the invariants of SPEC.md §8.
"""

from typing import TYPE_CHECKING, Any

from .engine.explore import (
    Counterexample,
    EngineResult,
    Finding,
    InvariantInfo,
    Kind,
    Run,
    Step,
    register_invariants,
)
from .engine.faults import fault_plan, parse_fault
from .kinds.agent import catalogue, mutants, runs  # noqa: F401  (register scenarios and mutants)
from .kinds.agent.checkers import INVARIANTS, Invariant, Observation, judge
from .kinds.agent.kind import SECRETS, explore, explore_faults, record
from .kinds.agent.targets import MUTANTS, TARGETS, Target, get_target, mutant
from .kinds.agent.workload import (
    BASE_DIR,
    SCENARIOS,
    Call,
    CallKind,
    Expect,
    Session,
    Workload,
    scenario,
)
from .kinds.registry import KindEntry, kind_names, register_kind, unregister_kind

ExplorationResult = EngineResult
"""What :func:`explore` returns: the engine's result (every kind's)."""

if TYPE_CHECKING:
    from .jobs.verdict import VerifyResult
    from .jobs.verify import verify
    from .jobs.zoo import FAULT_COLUMN, ZooRow, kill_matrix
    from .kinds.state_storage.machine import (
        MACHINE_INVARIANTS,
        run_storage_machine,
        storage_state_machine,
    )

_LAZY = {
    "MACHINE_INVARIANTS": "kinds.state_storage.machine",
    "run_storage_machine": "kinds.state_storage.machine",
    "storage_state_machine": "kinds.state_storage.machine",
    "FAULT_COLUMN": "jobs.zoo",
    "ZooRow": "jobs.zoo",
    "kill_matrix": "jobs.zoo",
    "VerifyResult": "jobs.verdict",
    "verify": "jobs.verify",
}


def __getattr__(name: str) -> Any:
    # the state machine, the zoo and verify, imported on first use: ``crashpoint
    # explore`` starts without them (issue 11)
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
    "Finding",
    "Invariant",
    "InvariantInfo",
    "Kind",
    "KindEntry",
    "Observation",
    "Run",
    "Session",
    "Step",
    "Target",
    "VerifyResult",
    "Workload",
    "ZooRow",
    "explore",
    "explore_faults",
    "fault_plan",
    "get_target",
    "judge",
    "kill_matrix",
    "kind_names",
    "mutant",
    "parse_fault",
    "record",
    "register_invariants",
    "register_kind",
    "run_storage_machine",
    "scenario",
    "storage_state_machine",
    "unregister_kind",
    "verify",
]

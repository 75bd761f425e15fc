"""``crashpoint verify --kind state-storage``: a user's storage of agent state judged
with the agent-state kind's workloads and checkers, the conformance suite and the
storage state machine (SPEC.md §6, §8, §9)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ...faultfs import Fault, PersistenceModel
from ..engine.faults import fault_plan
from ..kinds.agent.kind import explore_agent, record
from ..kinds.agent.workload import BASE_DIR
from ..kinds.state_storage.conformance import (
    _escape,
    _preflight,
    run_conformance,
    run_state_machine,
    selected_workloads,
    storage_target,
)
from ..targets.user import make_runner
from .verdict import VerifyResult

__all__ = ["verify_state_storage"]


def verify_state_storage(
    factory: Callable[..., Any],
    *,
    models: Sequence[PersistenceModel],
    faults: bool = False,
    workloads: Iterable[str] | None = None,
    crash_point: int | None = None,
    fault: Fault | None = None,
    timeout: float | None = None,
    target: str = "",
    seed: int = 0,
    reference_format: bool | None = None,
    examples: int = 20,
    shard: tuple[int, int] | None = None,
) -> VerifyResult:
    """``verify(factory, kind="state-storage")`` (see
    ``crashpoint.scenarios.jobs.verify.verify``)."""

    declared = getattr(factory, "crashpoint_format", None) == "reference"
    if reference_format is None:
        reference_format = declared
    # a replay needs the flag when the factory does not declare the format itself
    flags = " --format reference" if reference_format and not declared else ""
    chosen = selected_workloads(workloads, reference_format=reference_format)
    runner = make_runner(factory, BASE_DIR, spec=target, timeout=timeout, seed=seed)
    result = VerifyResult(target, "state-storage", runner.mode, [m.name for m in models], seed=seed)
    with runner:
        tgt = storage_target(runner, target)
        _preflight(tgt, runner, target)
        command = f"crashpoint verify {target} --kind state-storage{flags} --workload"
        for w in chosen:
            for m in models:
                runs: list[tuple[list[Fault] | None, bool]] = []
                if fault is None:
                    runs.append((None, True))  # the crash-free run's crash points
                if faults or fault is not None:
                    plan = [fault] if fault is not None else fault_plan(record(w, tgt).ops)
                    runs.append((plan, False))  # the faulted re-runs
                for plan_or_none, crashes in runs:
                    result.results += explore_agent(
                        w,
                        models=[m],
                        target=tgt,
                        faults=plan_or_none,
                        crashes=crashes,
                        crash_point=crash_point if crashes else None,
                        shard=shard,
                        name=target,
                        command=command,
                    )
                last = result.results[-1]
                last.unsupported += [u for u in runner.unsupported() if u not in last.unsupported]
                if shard is None or shard[0] == 1:  # the run's own finding: shard 1's
                    for path in runner.escapes():
                        last.counterexamples.append(_escape(w.name, m.name, target, path))
        failed = [
            (check, why)
            for check, why in run_conformance(
                lambda fs: tgt(fs, BASE_DIR), reference_format=reference_format
            )
        ]
        if crash_point is None and fault is None:
            machine = run_state_machine(
                tgt,
                reference_format=reference_format,
                max_examples=examples,
                seed=seed,
                models=models,
            )
    result.conformance = [
        {"id": c.id, "check": c.name, "passed": why is None, "why": why} for c, why in failed
    ]
    if crash_point is None and fault is None:
        rules = "every rule" if reference_format else "rules of any layout"
        result.conformance.append(
            {
                "id": "machine",
                "check": f"storage state machine, {examples} programs ({rules})",
                "passed": machine is None,
                "why": machine,
            }
        )
    return result

"""One plan, one runner of plans (STYLE.md §17).

A :class:`Plan` is everything a verification needs, frozen: the kind, the target,
the models (parsed once, by :func:`crashpoint.faultfs.parse_models`), the workloads,
the faults, a replay's crash point or fault, the shard and the workers. The CLI, the
pytest plugin and :func:`crashpoint.verify` build one and hand it to :func:`run_plan`,
which asks the kind's registry entry (:mod:`~crashpoint.scenarios.kinds.registry`)
how to run it: a kind with a front end of its own (``document``, ``state-storage``)
runs through it; any other kind through the engine here, workload by workload, each
recorded once for every model, its fault plan from the crash-free run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...faultfs import Fault, PersistenceModel
from ...faultfs._canary import Canary
from ..engine.caches import hypothesis_keeps_no_files
from ..engine.explore import Counterexample, EngineResult, Run, explore_models, invariant_info
from ..engine.faults import fault_plan
from ..kinds.registry import KindEntry, get_kind
from ..targets.user import BadTarget, make_runner
from .verdict import VerifyResult

__all__ = ["Plan", "Transport", "run_id", "run_plan"]


class Transport(Protocol):
    """How a plan's target is reached when it is not a Python factory in this process:
    ``--exec``'s commands (:class:`~crashpoint.scenarios.jobs.exec.ExecCommands`, the
    strace runner with a program's own save and load). A kind's front end given one in
    its plan's option ``transport`` hands the plan to it (issue 19: a runner, not a kind)."""

    def verify(self, plan: Plan) -> VerifyResult:
        """The verdict of ``plan`` with the target reached through this transport."""
        ...


def run_id(fields: Mapping[str, Any]) -> str:
    """The id of a run described by ``fields`` (JSON-able, values ``repr``-ed otherwise):
    16 hex digits of the sha256 of them, keys sorted. Front ends leave out what does not
    change the report (``--shard``, ``--jobs``, ``--out``), so the shards of one run, and
    the run unsharded, share it (``crashpoint report merge`` checks it)."""
    text = json.dumps(dict(fields), sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Plan:
    """A verification, as every front end describes it.

    Attributes:
        kind: a registered kind's name (``document``, ``state-storage`` ...).
        target: the target's name as replays spell it (``file.py:factory``).
        models: the persistence models, in order.
        workloads: the workload names (None: the kind's defaults).
        faults: also arm every fault of the fault plan at every operation.
        fault: only this fault (a replay; no crash-only exploration).
        crash_point: only this crash point.
        shard: ``(K, N)``: only crash states whose identity falls in slice K of N.
        jobs: worker processes (a kind's front end may use them).
        seed: seeds generated workloads and the interception.
        timeout: seconds one call of the target may take (None: no limit).
        examples: hypothesis examples of the kind's generated workloads.
        options: the kind's own options (``values``, ``shrink``, ``reference_format``
            ...); an entry refuses names it does not declare.
    """

    kind: str
    target: str
    models: tuple[PersistenceModel, ...]
    workloads: tuple[str, ...] | None = None
    faults: bool = False
    fault: Fault | None = None
    crash_point: int | None = None
    shard: tuple[int, int] | None = None
    jobs: int = 1
    seed: int = 0
    timeout: float | None = None
    examples: int = 20
    options: Mapping[str, Any] = field(default_factory=dict)

    def run_id(self) -> str:
        """:func:`run_id` of this plan without its shard and workers (``jobs``)."""
        return run_id(
            {
                "command": "verify",
                "kind": self.kind,
                "target": self.target,
                "models": [repr(m) for m in self.models],
                "workloads": self.workloads,
                "faults": self.faults,
                "fault": repr(self.fault),
                "crash_point": self.crash_point,
                "seed": self.seed,
                "timeout": self.timeout,
                "examples": self.examples,
                "options": sorted((k, repr(v)) for k, v in self.options.items()),
            }
        )


def run_plan(
    plan: Plan,
    factory: Callable[..., Any] | None = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyResult:
    """Run ``plan`` against ``factory`` (the target's factory, already loaded; None for a
    kind whose targets are its own, as ``agent``'s catalogue). ``progress(done, total)``
    is called as units of work end, where the kind's front end counts them (``explore``'s
    tasks).

    Raises:
        KeyError: an unknown kind or workload; ValueError: an option the kind does not
        take; BadTarget, TargetTimeout from the target.
    """
    entry = get_kind(plan.kind)
    unknown = set(plan.options) - entry.options
    if unknown:
        raise ValueError(f"--kind {plan.kind} takes no option {', '.join(sorted(unknown))}")
    # A change on the real disk during the run (the kind's base path, the working
    # directory, $TMPDIR) makes the verdict incomplete (issue 21; faultfs/_canary.py).
    # crashpoint's own hypothesis keeps no cache in the working directory.
    with hypothesis_keeps_no_files():
        canary = Canary(entry.base_dir)
        if entry.run is not None:
            extra = {"progress": progress} if progress is not None else {}
            result: VerifyResult = entry.run(plan, factory, **extra)
        elif factory is None:
            raise BadTarget(f"kind {plan.kind!r} needs a target's factory")
        else:
            result = _run_generic(entry, plan, factory)
    result.canary += [c for c in canary.changes() if c not in result.canary]
    result.run_id = entry.run_id(plan) if entry.run_id is not None else plan.run_id()
    return result


def _run_generic(entry: KindEntry, plan: Plan, factory: Callable[..., Any]) -> VerifyResult:
    """A registered kind through the engine: each workload recorded once, judged under
    every model, with its fault plan (or the one fault replayed)."""
    runner = make_runner(
        factory, entry.base_dir, spec=plan.target, timeout=plan.timeout, seed=plan.seed
    )
    result = VerifyResult(
        plan.target, plan.kind, runner.mode, [m.name for m in plan.models], seed=plan.seed
    )
    names = plan.workloads if plan.workloads is not None else entry.workloads
    with runner:
        kind = entry.make(runner, plan.target, plan.options)
        _check_invariants(entry, kind)
        for name in dict.fromkeys(names):
            workload = kind.workload(name)
            base = kind.record(workload, None)
            _refuse_silent(entry, plan, base)
            if plan.fault is not None:
                faults, crashes = [plan.fault], False
            else:
                faults = fault_plan(base.ops) if plan.faults else []
                crashes = True
            result.results += explore_models(
                kind,
                workload,
                models=plan.models,
                target=plan.target,
                faults=faults,
                crashes=crashes,
                fault_window=(
                    None
                    if plan.fault is not None or plan.options.get("fault_points") == "all"
                    else 1
                ),
                crash_point=plan.crash_point,
                shard=plan.shard,
            )
        unsupported = runner.unsupported()
        escapes = runner.escapes()
        for r in result.results:
            r.unsupported += [u for u in unsupported if u not in r.unsupported]
        if escapes and result.results and (plan.shard is None or plan.shard[0] == 1):
            # S1 (SPEC.md §8): a write the interception saw aimed outside the base
            # directory is a finding, whatever the kind judges (shard 1 reports it).
            first = result.results[0]
            first.counterexamples += [_escape(first, entry, plan, path) for path in escapes]
    return result


def _check_invariants(entry: KindEntry, kind: Any) -> None:
    """No false green from a kind that judges nothing: it must name at least one
    invariant, each registered (:func:`~crashpoint.scenarios.engine.explore.
    register_invariants`). Raises BadTarget."""
    for faults in (False, True):
        ids = kind.invariants(faults=faults)
        if not ids:
            raise BadTarget(f"kind {entry.name!r} judges no invariant: nothing would be verified")
        for i in ids:
            try:
                invariant_info(i)
            except KeyError:
                raise BadTarget(
                    f"kind {entry.name!r} judges invariant {i!r}, which no one registered "
                    "(register_invariants)"
                ) from None


def _refuse_silent(entry: KindEntry, plan: Plan, base: Run) -> None:
    """No false green from a target that does nothing (as the document kind's preflight):
    on the crash-free run some call must be acknowledged, and an acknowledged call must
    have issued a file operation. Raises BadTarget."""
    if not base.steps:
        return  # a workload without calls: its crash points are the initial disk only
    done = [s for s in base.steps if s.error is None and s.end is not None]
    if not done and not base.unsupported:
        raise BadTarget(
            f"target {plan.target!r}: every call failed on a clean run "
            f"({base.steps[0].label}: {base.steps[0].error}): nothing acknowledged, "
            "nothing to verify"
        )
    if done and not base.ops and not base.escapes and not base.unsupported:
        raise BadTarget(
            f"target {plan.target!r}: its calls returned but no file operation was "
            f"recorded (kind {entry.name!r}): it writes nowhere the harness can see"
        )


def _escape(r: EngineResult, entry: KindEntry, plan: Plan, path: str) -> Counterexample:
    return Counterexample(
        "S1",
        ("S1",),
        r.workload,
        r.model,
        plan.target,
        0,
        "(intercepted)",
        "(intercepted)",
        entry.name,
        {},
        "",
        f"no operation outside {entry.base_dir}",
        f"the target changed {path}",
        f"crashpoint verify {plan.target} --kind {plan.kind} --workload {r.workload} "
        f"--model {r.model}",
    )

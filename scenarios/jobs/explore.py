"""Spreading an exploration over local cores (``crashpoint explore --jobs N``).

The work is cut into tasks — one crash exploration per (workload, model), and
the fault plan of each workload in slices, each slice explored under every model
from one recording of each faulted run — that run in a standard-library
process pool and are merged back in a fixed order. The cut and the merge are the
same whatever ``jobs`` is, so ``--jobs 2`` writes the same report as ``--jobs 1``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ...core._codec import decode_memo
from ...faultfs import get_model, with_device, with_sample
from ..engine.explore import EngineResult, fault_spec
from ..engine.faults import fault_plan, parse_fault
from ..engine.pool import worker_pool
from ..kinds.agent.kind import explore, explore_faults_models, record
from ..kinds.agent.targets import get_target
from ..kinds.agent.workload import BASE_DIR, SCENARIOS
from ..kinds.registry import KindEntry, register_kind
from ..targets.user import BadTarget
from .plan import Plan, run_id
from .verdict import VerifyResult

__all__ = [
    "EXPLORE_OPTIONS",
    "FAULT_SLICE",
    "KIND",
    "SMALL_RUN",
    "Task",
    "auto_jobs",
    "explore_run_id",
    "plan_run_id",
    "plan_tasks",
    "run_explore",
    "run_tasks",
]

FAULT_SLICE = 48
"""Faulted re-runs per task. Each task records the workload once and starts its checkers
afresh, about one faulted run's cost: 16 per task spent ~12% of ``--model all --faults``
on that (issue 11: 115 fault tasks; 48 gives 49, and the largest task stays well under a
second, so two workers still end together). The report does not depend on it."""


@dataclass(frozen=True, slots=True)
class Task:
    """One unit of work; plain data so it pickles to a worker.

    Attributes:
        scenario, model, target: names.
        faults: None for the crash exploration; else the fault specs to run.
        crash_point: only this crash point.
        shard: only this slice of the crash-state space.
        reorder_bound: the model's ``reorder_bound`` (``--reorder-bound N``), or None.
        models: a fault slice explored under each of these models (each faulted run
            recorded once); empty: under ``model`` alone.
        atomic_write, drive_ignores_flush: the device options of the models
            (``--atomic-write``, ``--drive-ignores-flush``; None and False: the default
            device).
        sample, sample_seed: the models' sample (``--sample``, ``--sample-seed``; None:
            every crash state).
    """

    scenario: str
    model: str
    target: str
    faults: tuple[str, ...] | None = None
    crash_point: int | None = None
    shard: tuple[int, int] | None = None
    reorder_bound: int | None = None
    models: tuple[str, ...] = ()
    atomic_write: int | None = None
    drive_ignores_flush: bool = False
    sample: float | None = None
    sample_seed: int = 0

    @property
    def group(self) -> tuple[str, str, bool]:
        return (self.scenario, self.model, self.faults is not None)

    @property
    def all_models(self) -> tuple[str, ...]:
        """The models this task explores, in order."""
        return self.models or (self.model,)


def plan_tasks(
    scenarios: Sequence[str],
    models: Sequence[str],
    target: str,
    *,
    crashes: bool = True,
    faults: bool = False,
    only_fault: str | None = None,
    crash_point: int | None = None,
    shard: tuple[int, int] | None = None,
    reorder_bound: int | None = None,
    atomic_write: int | None = None,
    drive_ignores_flush: bool = False,
    sample: float | None = None,
    sample_seed: int = 0,
) -> list[Task]:
    """The tasks of an exploration, in report order (per model, per scenario). The
    fault slices of a scenario come once, at the first model, and carry every model
    (``Task.models``): each faulted run is recorded once for all of them."""
    tasks: list[Task] = []
    plans: dict[str, list[str]] = {}
    for position, model in enumerate(models):
        for name in scenarios:
            if crashes:
                tasks.append(Task(name, model, target, None, crash_point, shard, reorder_bound))
            if only_fault is not None:
                tasks.append(
                    Task(name, model, target, (only_fault,), crash_point, shard, reorder_bound)
                )
            elif faults and position == 0:
                if name not in plans:
                    ops = record(SCENARIOS[name], get_target(target)).ops
                    plans[name] = [fault_spec(f) for f in fault_plan(ops)]
                specs = plans[name]
                for i in range(0, max(len(specs), 1), FAULT_SLICE):
                    tasks.append(
                        Task(
                            name,
                            model,
                            target,
                            tuple(specs[i : i + FAULT_SLICE]),
                            crash_point,
                            shard,
                            reorder_bound,
                            tuple(models) if len(models) > 1 else (),
                        )
                    )
    if atomic_write is not None or drive_ignores_flush:
        device = {"atomic_write": atomic_write, "drive_ignores_flush": drive_ignores_flush}
        tasks = [dataclasses.replace(t, **device) for t in tasks]  # type: ignore[arg-type]
    if sample is not None:
        tasks = [dataclasses.replace(t, sample=sample, sample_seed=sample_seed) for t in tasks]
    return tasks


def explore_run_id(
    scenarios: Sequence[str],
    models: Sequence[str],
    target: str,
    *,
    faults: bool = False,
    only_fault: str | None = None,
    crash_point: int | None = None,
    reorder_bound: int | None = None,
    sample: float | None = None,
    sample_seed: int = 0,
) -> str:
    """The run id of an exploration (:func:`~.plan.run_id`; :func:`plan_tasks`'s
    arguments without the shard): its shards and the run unsharded share it."""
    return run_id(
        {
            "command": "explore",
            "scenarios": list(scenarios),
            "models": [repr(get_model(m)) for m in models],
            "target": target,
            "faults": faults,
            "fault": only_fault,
            "crash_point": crash_point,
            "reorder_bound": reorder_bound,
            **({"sample": [sample, sample_seed]} if sample is not None else {}),
        }
    )


@decode_memo()  # the task's explorations share one decode memo (issue 11)
def run_task(task: Task) -> list[EngineResult]:
    """Run one task (in a worker process or in this one): one result per model of
    ``task.all_models``."""
    workload = SCENARIOS[task.scenario]
    models = [get_model(name) for name in task.all_models]
    if task.reorder_bound is not None:
        models = [dataclasses.replace(m, reorder_bound=task.reorder_bound) for m in models]
    if task.atomic_write is not None or task.drive_ignores_flush:
        models = [
            with_device(
                m, atomic_write=task.atomic_write, drive_ignores_flush=task.drive_ignores_flush
            )
            for m in models
        ]
    if task.sample is not None:
        models = [with_sample(m, task.sample, task.sample_seed) for m in models]
    target = get_target(task.target)
    if task.faults is None:
        return [
            explore(
                workload, model=m, target=target, crash_point=task.crash_point, shard=task.shard
            )
            for m in models
        ]
    results = explore_faults_models(
        workload,
        models=models,
        target=target,
        shard=task.shard,
        faults=[parse_fault(s) for s in task.faults],
    )
    if task.crash_point is not None:
        for result in results:
            result.counterexamples = [
                c for c in result.counterexamples if c.crash_point == task.crash_point
            ]
    return results


def _cost(task: Task) -> float:
    """A rough relative cost, for scheduling only."""
    runtime = "runtime" in SCENARIOS[task.scenario].tags
    base = 4.0 if runtime else 1.0
    per_model = len(task.faults) if task.faults is not None else 1.5
    return base * per_model * len(task.all_models)


SMALL_RUN = 200.0
"""A plan whose :func:`_cost` sums below this runs in this process by default: the
pool's start-up (each worker imports the harness) costs more than it saves (issue 11:
the default ``crashpoint explore`` sums to about 90)."""


def auto_jobs(tasks: Sequence[Task], cores: int) -> int:
    """The ``--jobs`` default for ``tasks``: 1 for a small run, ``cores`` for a large one."""
    return 1 if sum(_cost(t) for t in tasks) < SMALL_RUN else cores


def run_tasks(
    tasks: Sequence[Task],
    *,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> list[EngineResult]:
    """Run ``tasks`` on ``jobs`` processes; merge the parts of each exploration.

    Returns one result per (scenario, model, crashes-or-faults), ordered by model (in
    the order the tasks name them), then scenario, crashes before faults.
    An exception here (``KeyboardInterrupt`` from Ctrl-C included) kills the worker
    processes before it propagates (:func:`stop_workers`).
    """
    if jobs <= 1 or len(tasks) <= 1:
        parts: list[list[EngineResult]] = []
        for i, t in enumerate(tasks):
            parts.append(run_task(t))
            if progress:
                progress(i + 1, len(tasks))
    else:
        # Longest first (fault slices of whole agent runs cost most), so no worker is
        # left with a big task at the end; results are put back in task order.
        order = sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i]))
        from concurrent.futures import as_completed

        parts_by_index: dict[int, list[EngineResult]] = {}
        with worker_pool(min(jobs, len(tasks))) as pool:
            futures = {pool.submit(run_task, tasks[i]): i for i in order}
            for done, future in enumerate(as_completed(futures), 1):
                parts_by_index[futures[future]] = future.result()
                if progress:
                    progress(done, len(tasks))
        parts = [parts_by_index[i] for i in range(len(tasks))]
    merged: dict[tuple[str, str, bool], EngineResult] = {}
    model_order: dict[str, int] = {}
    scenario_order: dict[str, int] = {}
    for task, results in zip(tasks, parts, strict=False):
        scenario_order.setdefault(task.scenario, len(scenario_order))
        for name, part in zip(task.all_models, results, strict=True):
            model_order.setdefault(name, len(model_order))
            group = (task.scenario, name, task.faults is not None)
            if group in merged:
                merged[group].merge(part)
            else:
                merged[group] = part
    groups = sorted(merged, key=lambda g: (model_order[g[1]], scenario_order[g[0]], g[2]))
    return [merged[g] for g in groups]


KIND = "agent"
"""The kind ``crashpoint explore`` and the zoo run: the embedded catalogue's targets."""

EXPLORE_OPTIONS = frozenset(
    {
        "reorder_bound",
        "atomic_write",
        "drive_ignores_flush",
        "auto_jobs",
        "crashes",
        "sample",
        "sample_seed",
    }
)
"""The ``agent`` kind's plan options: ``--reorder-bound``, ``--atomic-write``,
``--drive-ignores-flush``, ``--sample`` and ``--sample-seed`` as given (None/False: not
given; the plan's models are the named ones, the tasks rebuild them in each worker),
``auto_jobs`` (``--jobs`` not given: :func:`auto_jobs` decides, up to ``Plan.jobs``) and
``crashes`` (False: only the faulted re-runs, as the zoo's fault column)."""


def run_explore(
    plan: Plan,
    factory: object = None,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> VerifyResult:
    """``crashpoint explore``'s front end of :func:`~.plan.run_plan` (kind ``agent``):
    the plan's scenarios (``Plan.workloads``, None: the whole catalogue) of the
    catalogue target ``Plan.target`` (``reference``, ``seed``, ``mutant:NAME``) cut into
    :func:`plan_tasks`, run on ``Plan.jobs`` processes by :func:`run_tasks` and merged.
    ``factory`` is unused: the kind's targets are its own. Returns a ``VerifyResult``
    whose ``results`` are :func:`run_tasks`'s (``run_plan`` names it: :func:`plan_run_id`).
    Raises KeyError for an unknown scenario or target."""
    options = plan.options
    scenarios = list(plan.workloads) if plan.workloads is not None else list(SCENARIOS)
    models = [m.name for m in plan.models]
    only_fault = fault_spec(plan.fault) if plan.fault is not None else None
    tasks = plan_tasks(
        scenarios,
        models,
        plan.target,
        crashes=plan.fault is None and options.get("crashes", True),
        faults=plan.faults,
        only_fault=only_fault,
        crash_point=plan.crash_point,
        shard=plan.shard,
        reorder_bound=options.get("reorder_bound"),
        atomic_write=options.get("atomic_write"),
        drive_ignores_flush=bool(options.get("drive_ignores_flush")),
        sample=options.get("sample"),
        sample_seed=int(options.get("sample_seed") or 0),
    )
    jobs = auto_jobs(tasks, plan.jobs) if options.get("auto_jobs") else plan.jobs
    result = VerifyResult(plan.target, KIND, "catalogue", models, seed=plan.seed)
    result.results = run_tasks(tasks, jobs=jobs, progress=progress)
    return result


def plan_run_id(plan: Plan) -> str:
    """The ``agent`` kind's run id of ``plan``: :func:`explore_run_id`'s."""
    return explore_run_id(
        list(plan.workloads) if plan.workloads is not None else list(SCENARIOS),
        [m.name for m in plan.models],
        plan.target,
        faults=plan.faults,
        only_fault=fault_spec(plan.fault) if plan.fault is not None else None,
        crash_point=plan.crash_point,
        reorder_bound=plan.options.get("reorder_bound"),
        sample=plan.options.get("sample"),
        sample_seed=int(plan.options.get("sample_seed") or 0),
    )


def _catalogue_only(runner: Any, target: str, options: Any) -> Any:
    raise BadTarget(
        "kind 'agent' runs the embedded catalogue's targets (crashpoint explore --target); "
        "a storage of your own is --kind state-storage"
    )


register_kind(
    KindEntry(
        KIND,
        "the embedded catalogue's agent-state targets (crashpoint explore)",
        BASE_DIR,
        make=_catalogue_only,
        workloads=tuple(SCENARIOS),
        run=run_explore,
        options=EXPLORE_OPTIONS,
        run_id=plan_run_id,
        listed=False,
    ),
    builtin=True,
)

"""Spreading an exploration over local cores (``crashpoint explore --jobs N``).

The work is cut into tasks — one crash exploration per (workload, model), and
the fault plan of each workload in slices — that run in a standard-library
process pool and are merged back in a fixed order. The cut and the merge are the
same whatever ``jobs`` is, so ``--jobs 2`` writes the same report as ``--jobs 1``.
"""

from __future__ import annotations

import dataclasses
import os
import signal
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass

from ..faultfs import MODELS
from ._explore import ExplorationResult, explore, record
from ._faults import explore_faults, fault_plan, fault_spec, parse_fault
from ._targets import get_target
from ._workload import SCENARIOS

__all__ = ["FAULT_SLICE", "Task", "ignore_interrupts", "plan_tasks", "run_tasks", "stop_workers"]

FAULT_SLICE = 16
"""Faulted re-runs per task."""


@dataclass(frozen=True, slots=True)
class Task:
    """One unit of work; plain data so it pickles to a worker.

    Attributes:
        scenario, model, target: names.
        faults: None for the crash exploration; else the fault specs to run.
        crash_point: only this crash point.
        shard: only this slice of the crash-state space.
        reorder_bound: the model's ``reorder_bound`` (``--reorder-bound N``), or None.
    """

    scenario: str
    model: str
    target: str
    faults: tuple[str, ...] | None = None
    crash_point: int | None = None
    shard: tuple[int, int] | None = None
    reorder_bound: int | None = None

    @property
    def group(self) -> tuple[str, str, bool]:
        return (self.scenario, self.model, self.faults is not None)


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
) -> list[Task]:
    """The tasks of an exploration, in report order (per model, per scenario)."""
    tasks: list[Task] = []
    plans: dict[str, list[str]] = {}
    for model in models:
        for name in scenarios:
            if crashes:
                tasks.append(Task(name, model, target, None, crash_point, shard, reorder_bound))
            if only_fault is not None:
                tasks.append(
                    Task(name, model, target, (only_fault,), crash_point, shard, reorder_bound)
                )
            elif faults:
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
                        )
                    )
    return tasks


def run_task(task: Task) -> ExplorationResult:
    """Run one task (in a worker process or in this one)."""
    workload = SCENARIOS[task.scenario]
    model = MODELS[task.model]
    if task.reorder_bound is not None:
        model = dataclasses.replace(model, reorder_bound=task.reorder_bound)
    target = get_target(task.target)
    if task.faults is None:
        return explore(
            workload, model=model, target=target, crash_point=task.crash_point, shard=task.shard
        )
    result = explore_faults(
        workload,
        model=model,
        target=target,
        shard=task.shard,
        faults=[parse_fault(s) for s in task.faults],
    )
    if task.crash_point is not None:
        result.violations = [v for v in result.violations if v.crash_point == task.crash_point]
    return result


def _cost(task: Task) -> float:
    """A rough relative cost, for scheduling only."""
    runtime = "runtime" in SCENARIOS[task.scenario].tags
    base = 4.0 if runtime else 1.0
    return base * (len(task.faults) if task.faults is not None else 1.5)


def default_jobs() -> int:
    """All cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def ignore_interrupts() -> None:
    """Worker initializer: Ctrl-C reaches the whole process group; the parent alone
    handles it (and stops the workers), so a worker prints no traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: drop the queued tasks and kill the running workers (an
    interrupted run exits in well under a second instead of finishing the queue).

    Python 3.14 has ``ProcessPoolExecutor.kill_workers``; before it, the pool's worker
    processes are reached through its ``_processes`` table. The pool's pending work is
    dropped first: Python 3.11's manager thread would otherwise fail a traceback onto
    stderr setting "broken pool" on futures that ``map`` had already cancelled."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # shutdown drops it
    pending = getattr(pool, "_pending_work_items", None)
    if isinstance(pending, dict):
        pending.clear()
    kill = getattr(pool, "kill_workers", None)
    if callable(kill):  # pragma: no cover - Python 3.14+
        kill()
    else:
        for process in processes:
            if process.is_alive():
                process.kill()
    for process in processes:
        process.join(timeout=2)
    pool.shutdown(wait=False, cancel_futures=True)


def run_tasks(
    tasks: Sequence[Task],
    *,
    jobs: int = 1,
    progress: Callable[[int, int], None] | None = None,
) -> list[ExplorationResult]:
    """Run ``tasks`` on ``jobs`` processes; merge the parts of each exploration.

    Returns one result per (scenario, model, crashes-or-faults), in task order.
    An exception here (``KeyboardInterrupt`` from Ctrl-C included) kills the worker
    processes before it propagates (:func:`stop_workers`).
    """
    if jobs <= 1 or len(tasks) <= 1:
        parts = []
        for i, t in enumerate(tasks):
            parts.append(run_task(t))
            if progress:
                progress(i + 1, len(tasks))
    else:
        # Longest first (fault slices of whole agent runs cost most), so no worker is
        # left with a big task at the end; results are put back in task order.
        order = sorted(range(len(tasks)), key=lambda i: -_cost(tasks[i]))
        parts_by_index: dict[int, ExplorationResult] = {}
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), initializer=ignore_interrupts)
        try:
            futures = {pool.submit(run_task, tasks[i]): i for i in order}
            for done, future in enumerate(as_completed(futures), 1):
                parts_by_index[futures[future]] = future.result()
                if progress:
                    progress(done, len(tasks))
        except BaseException:
            stop_workers(pool)
            raise
        pool.shutdown(wait=True)
        parts = [parts_by_index[i] for i in range(len(tasks))]
    merged: dict[tuple[str, str, bool], ExplorationResult] = {}
    for task, part in zip(tasks, parts, strict=False):
        if task.group in merged:
            merged[task.group].merge(part)
        else:
            merged[task.group] = part
    return list(merged.values())

"""The mutant zoo: every known-bad storage under every model and every fault.

A harness that says "0 violations" has to be shown to find the violations it
looks for. :func:`kill_matrix` explores the reference and every mutant and
records, per model (and a ``fault`` column), which invariants killed it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ...faultfs import MODELS, PROCESS_CRASH, PersistenceModel, canonical, get_model
from ..engine.explore import EngineResult
from ..engine.pool import worker_pool
from ..kinds.agent.checkers import INVARIANTS
from ..kinds.agent.targets import MUTANTS, TARGETS, Target, get_target
from ..kinds.agent.workload import SCENARIOS, Workload
from . import explore as _agent_kind  # registers the kind ``agent`` the rows' plans run
from .plan import Plan, run_plan

__all__ = ["FAULT_COLUMN", "ZOO_MODELS", "ZooRow", "kill_matrix"]

ZOO_MODELS: tuple[PersistenceModel, ...] = (PROCESS_CRASH, MODELS["ext4"], MODELS["posix"])
"""The models the zoo explores by default (issue 20): ``process-crash``, ``ext4`` and
``posix``, the weakest family; ``xfs`` and ``btrfs`` lie between them and kill nothing the
two miss on the catalogue (each mutant's expected kill is under one of these three)."""

FAULT_COLUMN = "fault"
"""The matrix column of fault-injection runs (explored under process-crash)."""


@dataclass(slots=True)
class ZooRow:
    """One target's line of the kill matrix.

    Attributes:
        target: ``reference`` or ``mutant:NAME``.
        expected: ``(invariant, column)`` that must kill a mutant; None for the reference.
        killed: column → invariant ids that found a violation.
        violations: total violations found.
    """

    target: str
    expected: tuple[str, str] | None
    killed: dict[str, list[str]] = field(default_factory=dict)
    violations: int = 0

    @property
    def verdict(self) -> str:
        """``clean``/``VIOLATED`` for the reference; for a mutant ``killed``,
        ``killed-unexpectedly`` (by something other than the expected invariant and
        model), ``SURVIVED``, or ``not-run`` (its model was not explored)."""
        if self.expected is None:
            return "clean" if self.violations == 0 else "VIOLATED"
        inv, column = self.expected
        # a column of an alias counts for its family (power-loss: ext4)
        columns = [c for c in self.killed if canonical(c) == canonical(column)]
        if not columns:
            return "not-run"  # its model (or faults) was not part of this run
        if any(inv in self.killed[c] for c in columns):
            return "killed"
        return "killed-unexpectedly" if self.violations else "SURVIVED"

    @property
    def ok(self) -> bool:
        return self.verdict in ("clean", "killed", "not-run")


def kill_matrix(
    *,
    targets: Sequence[Target] | None = None,
    models: Sequence[PersistenceModel] | None = None,
    workloads: Sequence[Workload] | None = None,
    faults: bool = True,
    jobs: int = 1,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[ZooRow], list[EngineResult]]:
    """Explore each target under each model (and faults) over the catalogue.

    Each row is the plans of one target run by :func:`~.plan.run_plan` (kind
    ``agent``), so targets must be registered ones (looked up by name: KeyError
    otherwise); ``jobs`` > 1 explores targets in a process pool. Returns the matrix rows
    (reference first) and the reference's own results.
    """
    targets = list(targets) if targets is not None else [TARGETS["reference"], *MUTANTS.values()]
    models = list(models) if models is not None else list(ZOO_MODELS)
    workloads = list(workloads) if workloads is not None else list(SCENARIOS.values())
    jobs_args = [
        (t.name, [m.name for m in models], [w.name for w in _for(t, workloads)], faults)
        for t in targets
    ]
    for t in targets:
        if get_target(t.name) is not t:
            raise KeyError(f"target {t.name!r} is not the registered one of that name")
    if jobs > 1 and len(targets) > 1:
        outcomes = []
        with worker_pool(min(jobs, len(targets))) as pool:  # Ctrl-C: the workers killed
            for target, outcome in zip(targets, pool.map(_row_by_name, jobs_args), strict=True):
                if progress:
                    progress(target.name)
                outcomes.append(outcome)
    else:
        outcomes = []
        for target in targets:
            if progress:
                progress(target.name)
            outcomes.append(_row(target, models, _for(target, workloads), faults))
    rows = [row for row, _ in outcomes]
    reference = next((results for row, results in outcomes if row.target == "reference"), [])
    return rows, reference


def _for(target: Target, workloads: Sequence[Workload]) -> list[Workload]:
    """The workloads a target is explored on: those sharing one of its tags."""
    return [w for w in workloads if set(w.tags) & set(target.tags)]


def _row_by_name(
    args: tuple[str, list[str], list[str], bool],
) -> tuple[ZooRow, list[EngineResult]]:
    name, models, workloads, faults = args
    return _row(
        get_target(name), [get_model(m) for m in models], [SCENARIOS[w] for w in workloads], faults
    )


def _row(
    target: Target,
    models: Sequence[PersistenceModel],
    workloads: Sequence[Workload],
    faults: bool,
) -> tuple[ZooRow, list[EngineResult]]:
    """One row: ``target``'s plans through :func:`~.plan.run_plan` (kind ``agent``), the
    crash exploration under ``models`` and, with ``faults``, the faulted re-runs under
    process-crash (the fault column). ``target`` must be registered (looked up by name)."""
    row = ZooRow(target.name, target.expected)
    names = tuple(w.name for w in workloads)
    runs: list[tuple[str, EngineResult]] = []
    if models:
        crashed = run_plan(Plan(_agent_kind.KIND, target.name, tuple(models), workloads=names))
        runs += [(r.model, r) for r in crashed.results]
    if faults:
        faulted = run_plan(
            Plan(
                _agent_kind.KIND,
                target.name,
                (PROCESS_CRASH,),
                workloads=names,
                faults=True,
                options={"crashes": False},
            )
        )
        runs += [(FAULT_COLUMN, r) for r in faulted.results]
    for column, result in runs:
        found = set(row.killed.get(column, [])) | set(result.killed_by())
        row.killed[column] = [i.value for i in INVARIANTS if i.value in found]
        row.violations += len(result.counterexamples)
    results = [r for _, r in runs] if target.name == "reference" else []
    return row, results

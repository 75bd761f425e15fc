"""The verdict of ``crashpoint verify``: every kind's results, conformance checks and
what made it incomplete (SPEC.md §10, FAULT-MODEL.md §4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..engine.explore import Counterexample, EngineResult

__all__ = ["VerifyResult"]


@dataclass(slots=True)
class VerifyResult:
    """What verifying one target found.

    Attributes:
        target: the target's name; kind: ``document`` or ``state-storage``;
        mode: ``intercepted`` or ``protocol``.
        models: the models' names.
        results: one :class:`~crashpoint.scenarios.engine.explore.EngineResult` per
            (workload, model), in order.
        shrunk: ``{original workload: shrunk workload}`` for workloads that shrank.
        leftovers: crash states that held leftover files (A5 warning count).
        seed, values: what generated the workloads.
        value_sizes: the smallest and largest value saved, in bytes as JSON, and the page
            boundaries no value reached (``{"min", "max", "boundaries_not_crossed"}``,
            issue 22); empty when the kind saves no document values.
    """

    target: str
    kind: str
    mode: str
    models: list[str]
    results: list[EngineResult] = field(default_factory=list)
    shrunk: dict[str, str] = field(default_factory=dict)
    leftovers: int = 0
    seed: int = 0
    values: str = "json"
    value_sizes: dict[str, Any] = field(default_factory=dict)
    conformance: list[dict[str, Any]] = field(default_factory=list)
    leftover_ids: set[str] = field(default_factory=set, repr=False)
    canary: list[str] = field(default_factory=list)  # real-disk changes seen (faultfs/_canary)
    workload_bounds: dict[str, dict[str, int]] = field(default_factory=dict)
    """What each workload reached, by name (document): ``saves`` (the most saves of one
    run), ``value_bytes`` (the largest value, UTF-8 JSON bytes) and, for ``random``,
    ``max_saves`` (the search's bound) and ``examples`` (report key
    ``workload_bounds``)."""
    run_id: str = ""
    """The run's id (:func:`~crashpoint.scenarios.jobs.plan.run_id`): its shards share it."""
    facts: Any = None
    """The transport's own figures, when the target ran through one (``--exec``:
    :class:`~crashpoint.scenarios.jobs.exec.ExecFacts`, processes by kind, paths ignored,
    faults that could not be aimed; its ``as_dict()`` is the report's key ``exec``)."""

    @property
    def failed_checks(self) -> list[dict[str, Any]]:
        """Conformance checks (state-storage) that failed."""
        return [c for c in self.conformance if not c["passed"]]

    @property
    def fault_points_not_examined(self) -> int:
        """Crash points of faulted runs the fault window left out (report key
        ``fault_points_not_examined``; ``--fault-crash-points all`` judges them)."""
        return sum(r.fault_points_skipped for r in self.results)

    @property
    def counterexamples(self) -> list[Counterexample]:
        return [c for r in self.results for c in r.counterexamples]

    @property
    def warnings(self) -> list[Counterexample]:
        return [c for r in self.results for c in r.warnings]

    @property
    def unsupported(self) -> list[str]:
        found = [u for r in self.results for u in r.unsupported]
        return list(dict.fromkeys([*found, *self.canary]))

    @property
    def examined_nothing(self) -> bool:
        """No crash point of any run was examined (no workload, no model, a crash point
        or fault no run has, an empty shard), no invariant was judged, or the sample
        left out every crash state: nothing was verified."""
        return (
            not any(r.crash_points for r in self.results)
            or not any(r.invariants for r in self.results)
            or (  # a sample that left out every state it met (--sample)
                any(r.unsampled for r in self.results)
                and not any(r.state_ids for r in self.results)
            )
        )

    @property
    def incomplete(self) -> bool:
        """A call the model cannot represent was made, or nothing was examined: the
        verdict is not a pass."""
        return bool(self.unsupported) or self.examined_nothing

    @property
    def ok(self) -> bool:
        return not self.counterexamples and not self.failed_checks and not self.incomplete

    @property
    def verdict(self) -> str:
        """``incomplete`` (a call the model cannot represent: findings after it are not
        a full account; or no crash point examined), ``violation`` or ``clean``."""
        if self.incomplete:
            return "incomplete"
        return "violation" if self.counterexamples or self.failed_checks else "clean"

    def killed_by(self) -> list[str]:
        found: list[str] = []
        for r in self.results:
            found += [i for i in r.killed_by() if i not in found]
        return found

    def assert_no_violations(self) -> None:
        """Raise ``AssertionError`` with the most severe, smallest counterexample, or
        naming the unsupported calls when the verdict is incomplete."""
        if self.counterexamples:
            first = self.counterexamples[0]
            more = len(self.counterexamples) - 1
            tail = f"\n  (and {more} more violation(s))" if more else ""
            raise AssertionError(first.render() + tail)
        if self.failed_checks:
            c = self.failed_checks[0]
            raise AssertionError(f"conformance {c['id']} ({c['check']}) failed: {c['why']}")
        if self.unsupported:
            raise AssertionError(
                "verdict incomplete: calls the model cannot represent: "
                + ", ".join(self.unsupported)
            )
        if self.examined_nothing:
            raise AssertionError(
                "verdict incomplete: no crash point was examined (no workload or model, or "
                "a crash point, fault or shard no run has): nothing was verified"
            )

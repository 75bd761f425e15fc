"""The JSON report: one document describing an exploration run.

Shape (keys are a contract; acceptance checks read them)::

    {
      "tool": "crashpoint", "version": "0.1.0",
      "format": 2,                         # this shape's version (2: severity order, "where")
      "model": "process-crash",            # as asked: a model name or "all"
      "models": [{"name", "family", "options"}],  # what the verdict assumed (issue 20)
      "target": "reference",
      "scenarios": [
        {"name", "model", "family", "target", "operations", "crash_points", "raw_states",
         "distinct_states", "cut", "not_examined", "sample", "exhaustive", "invariants",
         "faults",
         "violation_count", "violations_listed", "killed_by",
         "hypothetical_count", "hypothetical": [violation],  # issue 20: apart, see below
         "renamed": [{"from", "to"}],      # issue 22: fresh names of faulted re-runs
         "violations": [                   # minimal first; at most MAX_LISTED
           {"invariant", "title", "severity", "why", "fault", "session_id",
            "crash_point": {"index", "operation", "last_done", "where"},
            "crash_state": {file: rendering}, "state_digest",
            "expected", "load_returned", "replay"}]}],
      "totals": {"scenarios", "crash_points", "raw_states", "distinct_states",
                 "cut", "not_examined", "violations", "hypothetical"},
      "exhaustive": false when a bound left combinations out ("cut" counts them:
                    an upper bound on the distinct crash states not explored) or a
                    sample left distinct states out ("not_examined" counts them, exactly;
                    "sample": {"rate", "seed"} per scenario, null unsampled: issue 24),
      "counterexample": <the most severe, then minimal, violation overall, or null>,
      "renamed": [{"from", "to"}]          # every scenario's, once each
    }

``renamed``: a name a faulted re-run created (a ``tempfile`` name, a pid in a name) mapped
onto the name its recording created at the same position (FAULT-MODEL.md §4): the re-run
is judged as the recording's repetition under that renaming.

``verify`` adds (among others) ``"workload_bounds"``: ``{workload: {"saves",
"value_bytes"}}`` (the most saves of one run, the largest value in UTF-8 JSON bytes;
``random`` also ``"max_saves"``, the search's bound, and ``"examples"``): the verdict's
reach, said next to it (issue 22); and ``"fault_points_not_examined"``: crash points of the
faulted runs (``--faults``) past the failing call's recovery path and the next save that
were not judged (0 with ``--fault-crash-points all``).

A *hypothetical* finding (FAULT-MODEL.md §3) is reachable only through a model's device
options (``--atomic-write`` below the block, ``--drive-ignores-flush``): it is listed in
its scenario's ``hypothetical`` (at most MAX_LISTED) and counted in
``totals.hypothetical``, never in ``violations``, ``killed_by``, ``counterexample`` or the
exit code.

Violations are listed most severe first (SPEC.md §8 classes: security, data-loss,
invalid-history, semantics, warning), then by crash point.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..scenarios.engine.explore import (
    Counterexample,
    EngineResult,
    counterexample_order,
    invariant_info,
    severity_rank,
)
from ._publish import write_text

if TYPE_CHECKING:
    from ..scenarios.jobs.verdict import VerifyResult
    from ..scenarios.jobs.zoo import ZooRow

__all__ = [
    "FORMAT",
    "MAX_LISTED",
    "build_report",
    "build_verify_report",
    "models_assumed",
    "report_extra",
    "violation_dict",
    "write_json",
    "zoo_dict",
]

FORMAT = 2
"""The report's ``format`` key: the version of this document's shape (1: the unversioned
first shape; 2: violations ordered by severity class, ``crash_point.where``)."""

MAX_LISTED = 25
"""Violations listed per scenario entry (at least one per invariant found, so this can be
exceeded by the number of invariants); ``violation_count`` keeps the exact number."""


def violation_dict(v: Counterexample) -> dict[str, Any]:
    """One counterexample as a JSON object (its invariant's title, severity and meaning
    from the registry: an unregistered id raises KeyError)."""
    inv = invariant_info(v.invariant)
    return {
        "invariant": v.invariant,
        "title": inv.label,
        "severity": inv.severity,
        "scenario": v.workload,
        "model": v.model,
        "session_id": v.subject,
        "fault": v.fault or None,
        "why": inv.meaning,
        "crash_point": {
            "index": v.crash_point,
            "operation": v.operation,
            "last_done": v.last_done,
            "where": v.where(),
        },
        "crash_state": dict(v.crash_state),
        "state_digest": v.state_digest,
        "expected": v.expected,
        "load_returned": v.got,
        "replay": v.replay,
    }


def _listed(violations: Sequence[Counterexample]) -> list[Counterexample]:
    """At most MAX_LISTED violations: the minimal one of each invariant first, then the
    rest minimal first, so every invariant found has a counterexample in the report."""
    firsts: dict[str, Counterexample] = {}
    for v in violations:
        firsts.setdefault(v.invariant, v)
    chosen = list(firsts.values())
    for v in violations:
        if len(chosen) >= MAX_LISTED:
            break
        if v not in chosen:
            chosen.append(v)
    return sorted(chosen, key=counterexample_order)


def _scenario_dict(r: EngineResult) -> dict[str, Any]:
    return {
        "name": r.workload,
        "model": r.model,
        "family": r.family or r.model,
        "target": r.target,
        "operations": r.operations,
        "crash_points": r.crash_points,
        "raw_states": r.raw_states,
        "distinct_states": r.distinct_states,
        "cut": r.cut,
        "not_examined": r.not_examined,
        "sample": _sample(r),
        "exhaustive": r.exhaustive,
        "invariants": list(r.invariants),
        "faults": r.faults,
        "violation_count": len(r.counterexamples),
        "violations_listed": len(listed := _listed(r.counterexamples)),
        "killed_by": r.killed_by(),
        "violations": [_with_broken(violation_dict(v), v, r.counterexamples) for v in listed],
        "hypothetical_count": len(r.hypothetical),
        "hypothetical": [
            _with_broken(violation_dict(v), v, r.hypothetical) for v in _listed(r.hypothetical)
        ],
        "renamed": [dict(pair) for pair in r.renamed],
    }


def _sample(r: EngineResult) -> dict[str, Any] | None:
    """``{"rate", "seed"}`` of a sampled scenario's model (``--sample``), else None."""
    rate = r.options.get("sample")
    if rate is None:
        return None
    return {"rate": rate, "seed": r.options.get("sample_seed", 0)}


def _with_broken(
    entry: dict[str, Any], v: Counterexample, violations: Sequence[Counterexample]
) -> dict[str, Any]:
    """Add ``broken``: every invariant the violation's crash state breaks (SPEC.md §10)."""
    same = (v.crash_point, v.state_digest, v.fault)
    entry["broken"] = list(
        dict.fromkeys(
            w.invariant for w in violations if (w.crash_point, w.state_digest, w.fault) == same
        )
    )
    return entry


def build_report(
    results: Sequence[EngineResult],
    *,
    model: str,
    target: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The report document for ``results`` (see the module docstring)."""
    from .. import __version__

    scenarios = [_scenario_dict(r) for r in results]
    minimal = min(
        (v for r in results for v in r.counterexamples[:1]),
        key=lambda v: (*counterexample_order(v)[:2], len(v.crash_state)),  # severity, point
        default=None,
    )
    report: dict[str, Any] = {
        "tool": "crashpoint",
        "version": __version__,
        "format": FORMAT,
        "model": model,
        "models": models_assumed(results),
        "target": target,
        "scenarios": scenarios,
        "totals": {
            "scenarios": len({r.workload for r in results}),
            "crash_points": sum(r.crash_points for r in results),
            "raw_states": sum(r.raw_states for r in results),
            "distinct_states": sum(r.distinct_states for r in results),
            "cut": sum(r.cut for r in results),
            "not_examined": sum(r.not_examined for r in results),
            "violations": sum(len(r.counterexamples) for r in results),
            "hypothetical": sum(len(r.hypothetical) for r in results),
        },
        # a run that examined no crash state explored nothing, least of all exhaustively
        "exhaustive": any(r.distinct_states for r in results)
        and all(r.exhaustive for r in results)
        and not (extra or {}).get("examined_nothing"),
        "counterexample": violation_dict(minimal) if minimal is not None else None,
        "renamed": _renamed(results),
    }
    if extra:
        report.update(extra)
    return report


def _renamed(results: Sequence[EngineResult]) -> list[dict[str, str]]:
    """Every fresh name a faulted re-run created mapped onto the recording's (issue 22),
    once each, in order: ``[{"from": re-run name, "to": recording name}]``."""
    seen: list[dict[str, str]] = []
    for r in results:
        for pair in r.renamed:
            if pair not in seen:
                seen.append(dict(pair))
    return seen


def models_assumed(results: Sequence[EngineResult]) -> list[dict[str, Any]]:
    """Each model of ``results`` once, in order, with the family whose rules judged
    under it and its options (``{"name": "power-loss", "family": "ext4", "options":
    {"block_size": 4096, ...}}``): the verdict names what it assumed (issue 20)."""
    seen: dict[str, dict[str, Any]] = {}
    for r in results:
        seen.setdefault(
            r.model, {"name": r.model, "family": r.family or r.model, "options": dict(r.options)}
        )
    return list(seen.values())


def write_json(report: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write ``report`` as indented UTF-8 JSON to ``path`` (replaced atomically).
    Raises OSError if it cannot; no temporary file is left behind."""
    write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", path)


def zoo_dict(rows: Sequence[ZooRow], models: Sequence[str]) -> dict[str, Any]:
    """The kill matrix as JSON: ``{"models": [columns], "rows": [{"target", "expected",
    "killed": {column: [ids]}, "verdict", "violations"}], "ok"}``."""
    from ..scenarios.jobs.zoo import FAULT_COLUMN  # the zoo (and its process pool) on first use

    columns = [*models, FAULT_COLUMN] if any(FAULT_COLUMN in r.killed for r in rows) else [*models]
    return {
        "models": columns,
        "rows": [
            {
                "target": row.target,
                "expected": (
                    f"{row.expected[0]} under {row.expected[1]}" if row.expected else "none"
                ),
                "killed": {c: row.killed[c] for c in columns if c in row.killed},
                "verdict": row.verdict,
                "violations": row.violations,
            }
            for row in rows
        ],
        "ok": all(row.ok for row in rows),
    }


def report_extra(result: VerifyResult) -> dict[str, Any]:
    """The keys a verify report adds to an explore report."""
    return {
        "run_id": result.run_id,
        "kind": result.kind,
        "mode": result.mode,
        "verdict": result.verdict,
        "incomplete": result.unsupported,
        "examined_nothing": result.examined_nothing,
        "seed": result.seed,
        "values": result.values,
        "value_sizes": dict(result.value_sizes),
        "shrunk": dict(result.shrunk),
        "workload_bounds": {k: dict(v) for k, v in result.workload_bounds.items()},
        "fault_points_not_examined": result.fault_points_not_examined,
        "leftover_states": result.leftovers,
        "warnings": [violation_dict(c) for c in result.warnings[:25]],
        "warning_count": len(result.warnings),
        "conformance": list(result.conformance),
    }


def build_verify_report(result: VerifyResult, *, model: str) -> dict[str, Any]:
    """The report document (``report.json``'s shape plus verify's keys), findings in
    each scenario ordered by severity, then crash point (SPEC.md §10)."""
    report = build_report(
        result.results,
        model=model,
        target=result.target,
        extra=report_extra(result),
    )
    for s in report["scenarios"]:
        s["violations"].sort(key=_severity_key)
    return report


def _severity_key(v: Mapping[str, Any]) -> tuple[int, int]:
    return (severity_rank(v["invariant"]), v["crash_point"]["index"])

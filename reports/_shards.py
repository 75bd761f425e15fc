"""Shard reports and their merge (``crashpoint report merge``; issue 21).

A run split with ``--shard K/N`` judges the crash states whose identity falls in slice K
(:func:`~crashpoint.scenarios.engine.explore.judged_crash_states`). Its ``report.json``
is the report of what it examined, plus ``"shard"``: what the merge needs to give back
the unsharded run's results exactly::

    "shard": {"index": K, "count": N, "command": "explore" | "verify",
              "results": [<each EngineResult's own part, every finding listed>],
              "details": {<report.html's details of the findings it lists first>},
              ...verify's: "target", "kind", "mode", "models", "seed", "values",
              "shrunk", "leftover_ids", "conformance", "canary"}

A result's own part (:func:`result_record`) counts the crash points (and their cut) it
owns, not those it examined, so the parts add up; the faulted re-runs, the same in
every shard, are counted by shard 1. :func:`merge_shards` reads the parts back into
:class:`~crashpoint.scenarios.engine.explore.EngineResult` objects and adds them with
:meth:`~crashpoint.scenarios.engine.explore.EngineResult.merge`, the merge the run itself
uses for the slices of its fault plan, so the merged report is built by the same code,
from the same results, as the unsharded run's.

Errors: :class:`MergeError` (a ``ValueError``), one line: not a shard report, shards of
different runs or versions, a shard given twice or missing, parts that do not line up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..scenarios.engine.explore import Counterexample, EngineResult
from ..scenarios.jobs.verdict import VerifyResult

__all__ = [
    "MergeError",
    "MergedRun",
    "merge_shards",
    "result_record",
    "shard_section",
]


class MergeError(ValueError):
    """Reports that cannot be merged (the reason, one line; the CLI exits 2)."""


_UNKEPT = ("trace",)
"""Counterexample fields a shard's report does not keep (the run it was found in: its
report.html detail is kept instead, ``"details"``)."""


def _counterexample_record(c: Counterexample) -> dict[str, Any]:
    out = {f.name: getattr(c, f.name) for f in dataclasses.fields(c) if f.name not in _UNKEPT}
    out["broken"] = list(c.broken)
    out["crash_state"] = dict(c.crash_state)
    return out


def _counterexample(d: Mapping[str, Any]) -> Counterexample:
    names = {f.name for f in dataclasses.fields(Counterexample)} - set(_UNKEPT)
    values = {k: v for k, v in d.items() if k in names}
    values["broken"] = tuple(values["broken"])
    values["crash_state"] = dict(values["crash_state"])
    return Counterexample(**values)


def result_record(r: EngineResult, *, first: bool) -> dict[str, Any]:
    """The part of ``r`` a shard owns, as JSON (see the module docstring): its owned
    crash points and cut, its faulted re-runs when ``first`` (shard 1), every finding."""
    return {
        "workload": r.workload,
        "model": r.model,
        "target": r.target,
        "operations": r.operations,
        "crash_points": r.owned_points,
        "cut": r.owned_cut,
        "raw_states": r.raw_states,
        "faults": r.faults if first else 0,
        "fault_points_skipped": r.fault_points_skipped if first else 0,
        "invariants": list(r.invariants),
        "counterexamples": [_counterexample_record(c) for c in r.counterexamples],
        "warnings": [_counterexample_record(c) for c in r.warnings],
        "unsupported": list(r.unsupported),
        "seconds": r.seconds,
        "check_seconds": r.check_seconds,
        "state_ids": sorted(r.state_ids),
        "unsampled": sorted(r.unsampled),
        "subjects": r.subjects,
        "tiebreak": list(r.tiebreak),
        "family": r.family,
        "options": dict(r.options),
        "hypothetical": [_counterexample_record(c) for c in r.hypothetical],
        "renamed": [dict(pair) for pair in r.renamed],
    }


def _result(d: Mapping[str, Any]) -> EngineResult:
    return EngineResult(
        d["workload"],
        d["model"],
        d["target"],
        operations=int(d["operations"]),
        crash_points=int(d["crash_points"]),
        raw_states=int(d["raw_states"]),
        cut=int(d["cut"]),
        invariants=tuple(d["invariants"]),
        counterexamples=[_counterexample(c) for c in d["counterexamples"]],
        warnings=[_counterexample(c) for c in d["warnings"]],
        faults=int(d["faults"]),
        fault_points_skipped=int(d.get("fault_points_skipped", 0)),
        unsupported=list(d["unsupported"]),
        seconds=float(d["seconds"]),
        check_seconds=float(d["check_seconds"]),
        state_ids=set(d["state_ids"]),
        unsampled=set(d.get("unsampled", [])),
        subjects=d["subjects"],
        tiebreak=tuple(d["tiebreak"]),
        owned_points=int(d["crash_points"]),
        owned_cut=int(d["cut"]),
        family=str(d.get("family", "")),
        options=dict(d.get("options", {})),
        hypothetical=[_counterexample(c) for c in d.get("hypothetical", [])],
        renamed=[dict(pair) for pair in d.get("renamed", [])],
    )


def shard_section(
    results: Sequence[EngineResult],
    shard: tuple[int, int],
    verify: VerifyResult | None = None,
    *,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``"shard"`` key of shard ``shard`` = ``(K, N)``'s report (module docstring);
    ``details``: its report.html details (timelines and bytes of the findings it lists
    first), which the merged report.html shows for the findings it lists."""
    first = shard[0] == 1
    section: dict[str, Any] = {
        "index": shard[0],
        "count": shard[1],
        "command": "explore" if verify is None else "verify",
        "results": [result_record(r, first=first) for r in results],
        "details": dict(details or {}),
    }
    if verify is not None:
        section.update(
            target=verify.target,
            kind=verify.kind,
            mode=verify.mode,
            models=list(verify.models),
            seed=verify.seed,
            values=verify.values,
            value_sizes=dict(verify.value_sizes),
            shrunk=dict(verify.shrunk),
            workload_bounds=dict(verify.workload_bounds),
            leftover_ids=sorted(verify.leftover_ids),
            conformance=list(verify.conformance),
            canary=list(verify.canary),
        )
    return section


@dataclass(slots=True)
class MergedRun:
    """The shards merged: what the unsharded run would have returned.

    Attributes:
        command: ``explore`` or ``verify``; run_id, model, target, version: the run's.
        results: the merged results, in the run's order (explore).
        details: the shards' report.html details, by detail key.
        verify: the merged verdict (verify), else None.
    """

    command: str
    run_id: str
    model: str
    target: str
    version: str
    results: list[EngineResult]
    details: dict[str, Any]
    verify: VerifyResult | None = None


def merge_shards(reports: Sequence[tuple[str, Mapping[str, Any]]]) -> MergedRun:
    """Merge the shard reports ``(name, report)`` of one run (any order).

    Raises MergeError: a report without ``"shard"``, reports of different runs (run id)
    or crashpoint versions, a shard given twice, a shard missing, or parts that do not
    list the same explorations."""
    if not reports:
        raise MergeError("give the report.json of every shard of the run")
    shards: dict[int, tuple[str, Mapping[str, Any]]] = {}
    first_name, first = reports[0]
    count = 0
    for name, report in reports:
        section = report.get("shard")
        if not isinstance(section, dict) or not isinstance(report.get("run_id"), str):
            raise MergeError(
                f"{name} is not a shard report (no 'shard' and 'run_id': write it with --shard K/N)"
            )
        if report["run_id"] != first["run_id"]:
            raise MergeError(
                f"{name} is a shard of run {report['run_id']}, {first_name} of run "
                f"{first['run_id']}: shards of different runs do not merge"
            )
        if report.get("version") != first.get("version"):
            raise MergeError(
                f"{name} was written by crashpoint {report.get('version')}, {first_name} "
                f"by {first.get('version')}: shards of different versions do not merge"
            )
        k, n = section.get("index"), section.get("count")
        if not isinstance(k, int) or not isinstance(n, int) or not 1 <= k <= n:
            raise MergeError(f"{name}: its 'shard' names no shard K/N")
        count = count or n
        if n != count:
            raise MergeError(f"{name} is shard {k}/{n}, {first_name} one of {count}")
        if k in shards:
            raise MergeError(f"shard {k}/{n} given twice: {shards[k][0]} and {name}")
        shards[k] = (name, report)
    missing = [str(k) for k in range(1, count + 1) if k not in shards]
    if missing:
        raise MergeError(
            f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of {count} "
            f"missing: the merge needs all {count}"
        )
    ordered = [shards[k] for k in range(1, count + 1)]
    sections = [r["shard"] for _, r in ordered]
    try:
        parts = [[_result(d) for d in s["results"]] for s in sections]
    except (KeyError, TypeError, ValueError) as exc:
        raise MergeError(f"{ordered[0][0]}: its 'shard' is not readable ({exc})") from None
    shape = [(r.workload, r.model, r.faults > 0 or "F1" in r.invariants) for r in parts[0]]
    for (name, _), part in zip(ordered[1:], parts[1:], strict=True):
        mine = [(r.workload, r.model, r.faults > 0 or "F1" in r.invariants) for r in part]
        if len(mine) != len(shape) or [m[:2] for m in mine] != [s[:2] for s in shape]:
            raise MergeError(f"{name} does not list the explorations {ordered[0][0]} lists")
    merged = parts[0]
    for part in parts[1:]:
        for into, other in zip(merged, part, strict=True):
            into.merge(other)  # the run's own merge (its fault slices)
    head = ordered[0][1]
    run = MergedRun(
        str(sections[0].get("command", "explore")),
        str(head["run_id"]),
        str(head.get("model", "")),
        str(head.get("target", "")),
        str(head.get("version", "")),
        merged,
        {k: v for s in sections for k, v in dict(s.get("details") or {}).items()},
    )
    if run.command == "verify":
        s0 = sections[0]
        result = VerifyResult(
            str(s0["target"]),
            str(s0["kind"]),
            str(s0["mode"]),
            list(s0["models"]),
            results=merged,
            shrunk=dict(s0["shrunk"]),
            seed=int(s0["seed"]),
            values=str(s0["values"]),
            value_sizes=dict(s0.get("value_sizes") or {}),
            conformance=list(s0["conformance"]),
            run_id=run.run_id,
            workload_bounds=dict(s0.get("workload_bounds", {})),
        )
        for s in sections:
            result.leftover_ids |= set(s["leftover_ids"])
            result.canary += [c for c in s["canary"] if c not in result.canary]
        result.leftovers = len(result.leftover_ids)
        run.verify = result
    return run

"""Per-counterexample detail for report.html (issue 12): the operation timeline and the
crash state's files, byte for byte, from the trace the engine kept with each
counterexample (:class:`~crashpoint.scenarios.engine.explore.CrashTrace`).

A report lists counterexamples by workload, model, crash point and crash-state digest;
:func:`report_details` finds each listed one among the results, by
:func:`~crashpoint.scenarios.engine.explore.detail_key`, and renders its trace with
:func:`~crashpoint.scenarios.explain.search.timeline` and
:func:`~crashpoint.scenarios.explain.search.file_view`. Nothing is recorded again, so
every kind and every workload (a generated one too) gets its detail; a finding made
outside a run (an escape seen by the audit layer) has no trace and gets none: the page
then shows the files as report.json describes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...faultfs import get_model
from ..engine.explore import CrashTrace, EngineResult, detail_key, prefix_state
from ..explain.search import file_view, timeline

__all__ = [
    "MAX_DETAILS",
    "carry_values",
    "document_values",
    "report_details",
    "values_of_top",
]

MAX_DETAILS = 20
"""Counterexamples given a detail per report (the page renders at most this many)."""

VALUE_CHARS = 300
"""A value shown in a report (its ``repr``) is cut to this many characters."""


def report_details(report: Mapping[str, Any], results: Iterable[EngineResult]) -> dict[str, Any]:
    """``{detail_key: {"timeline", "files"}}`` for the first :data:`MAX_DETAILS`
    counterexamples ``report`` lists (its ``scenarios[].violations``, in order), each
    rendered from the trace its finding in ``results`` carries."""
    traces = _traces(results)
    out: dict[str, Any] = {}
    for s in report.get("scenarios", []):
        for v in s["violations"]:
            if len(out) >= MAX_DETAILS:
                return out
            key = detail_key(s["name"], v["model"], v["crash_point"]["index"], v["state_digest"])
            trace = traces.get((key, v.get("fault") or ""))
            if key not in out and trace is not None:
                out[key] = _detail(trace, v["model"], v["crash_point"]["index"])
    return out


def _traces(results: Iterable[EngineResult]) -> dict[tuple[str, str], CrashTrace]:
    """Each counterexample's trace, by (:func:`detail_key`, fault), the first kept."""
    traces: dict[tuple[str, str], CrashTrace] = {}
    for r in results:
        for c in (*r.counterexamples, *r.warnings):
            if c.trace is not None:
                key = detail_key(r.workload, c.model, c.crash_point, c.state_digest)
                traces.setdefault((key, c.fault), c.trace)
    return traces


def _detail(trace: CrashTrace, model: str, k: int) -> dict[str, Any]:
    base = trace.base
    prefix = prefix_state(trace.initial, trace.ops, k)
    view = timeline(get_model(model), trace.ops, k, base, trace.marks)
    files = [
        {
            "name": p[len(base) + 1 :] if base and p.startswith(base + "/") else p,
            **file_view(d, prefix.file(p)),
        }
        for p, d in trace.state.files
    ]
    return {"timeline": view, "files": files}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + f"… ({len(text)} chars)"


def _status(step: Any, k: int) -> str:
    """What had become of a save at crash point ``k``."""
    if step.end is not None and step.end <= k:
        return f"failed: {step.error}" if step.error else "acknowledged"
    if step.begin < k:
        return "in flight"
    return "not started"


def document_values(report: Mapping[str, Any], results: Iterable[EngineResult]) -> None:
    """Add to each listed violation of a document report (in place) ``saves``: the value
    each save of its workload was given, as ``[{"call": "save#0", "value": repr,
    "status": "acknowledged" | "failed: ..." | "in flight" | "not started"}]`` at its
    crash point, and ``load_value``: what load returned there (``repr``, or ``raised
    ...``), side by side in the reports (issue 22). Both come from the trace the engine
    kept with the counterexample (its run's steps, its observation of the crash state),
    so a drawn ``random`` workload has them too; nothing is recorded again."""
    traces = _traces(results)
    for s in report.get("scenarios", []):
        for v in s["violations"]:
            k = v["crash_point"]["index"]
            key = detail_key(s["name"], v["model"], k, v["state_digest"])
            trace = traces.get((key, v.get("fault") or ""))
            if trace is None:
                continue
            v["saves"] = [
                {"call": st.label, "value": _shown(st.payload[1]), "status": _status(st, k)}
                for st in trace.steps
                if isinstance(st.payload, tuple) and st.payload[0] == "save"
            ]
            obs = trace.observation
            if obs is not None:
                v["load_value"] = f"raised {obs.error}" if obs.error else _shown(obs.value)
    values_of_top(report)


def values_of_top(report: Mapping[str, Any]) -> None:
    """Give the report's minimal counterexample (``report["counterexample"]``) the
    ``saves`` and ``load_value`` of its entry among the scenarios' violations."""
    top = report.get("counterexample")
    if isinstance(top, dict):
        same = ("scenario", "model", "fault", "state_digest")
        for s in report.get("scenarios", []):
            for v in s["violations"]:
                point = v["crash_point"]["index"] == top["crash_point"]["index"]
                if "saves" in v and point and all(v.get(key) == top.get(key) for key in same):
                    top["saves"] = v["saves"]
                    if "load_value" in v:
                        top["load_value"] = v["load_value"]


def carry_values(report: Mapping[str, Any], shards: Iterable[Mapping[str, Any]]) -> None:
    """A merged report's violations take the ``saves`` and ``load_value`` their shard's
    report gave them (each shard kept the traces; the merge has only their records)."""

    def key(name: str, v: Mapping[str, Any]) -> tuple[object, ...]:
        return (name, v["model"], v["crash_point"]["index"], v["state_digest"])

    found: dict[tuple[object, ...], Mapping[str, Any]] = {}
    for shard in shards:
        for s in shard.get("scenarios", []):
            for v in s["violations"]:
                if "saves" in v:
                    found.setdefault((*key(s["name"], v), v.get("fault") or ""), v)
    for s in report.get("scenarios", []):
        for v in s["violations"]:
            given = found.get((*key(s["name"], v), v.get("fault") or ""))
            if given is not None:
                v["saves"] = given["saves"]
                if "load_value" in given:
                    v["load_value"] = given["load_value"]
    values_of_top(report)

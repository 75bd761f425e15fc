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
from ..engine.explore import CrashTrace, EngineResult, detail_key
from ..explain.search import _prefix_state, file_view, timeline

__all__ = ["MAX_DETAILS", "report_details"]

MAX_DETAILS = 20
"""Counterexamples given a detail per report (the page renders at most this many)."""


def report_details(report: Mapping[str, Any], results: Iterable[EngineResult]) -> dict[str, Any]:
    """``{detail_key: {"timeline", "files"}}`` for the first :data:`MAX_DETAILS`
    counterexamples ``report`` lists (its ``scenarios[].violations``, in order), each
    rendered from the trace its finding in ``results`` carries."""
    traces: dict[tuple[str, str], CrashTrace] = {}  # by (detail key, fault)
    for r in results:
        for c in (*r.counterexamples, *r.warnings):
            if c.trace is not None:
                key = detail_key(r.workload, c.model, c.crash_point, c.state_digest)
                traces.setdefault((key, c.fault), c.trace)
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


def _detail(trace: CrashTrace, model: str, k: int) -> dict[str, Any]:
    base = trace.base
    prefix = _prefix_state(trace.initial, trace.ops, k)
    view = timeline(get_model(model), trace.ops, k, base, trace.marks)
    files = [
        {
            "name": p[len(base) + 1 :] if base and p.startswith(base + "/") else p,
            **file_view(d, prefix.file(p)),
        }
        for p, d in trace.state.files
    ]
    return {"timeline": view, "files": files}

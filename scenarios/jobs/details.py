"""Per-counterexample detail for report.html (issue 12): the operation timeline and the
crash state's files, byte for byte, recomputed from the recorded run.

A report lists counterexamples by workload, model, crash point and crash-state digest;
:func:`report_details` records each listed workload again (runs are deterministic),
derives that crash point's states under the model, picks the one with the digest and
renders it with :func:`~crashpoint.scenarios.explain.search.timeline` and
:func:`~crashpoint.scenarios.explain.search.file_view`. A counterexample that cannot be
rebuilt (a generated workload, a target kind without a recorder) gets no detail: the
page then shows the files as report.json describes them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...faultfs import CrashState, Op, OpKind, crash_points, get_model
from ..engine.explore import detail_key
from ..engine.faults import parse_fault
from ..explain.search import _prefix_state, file_view, timeline
from ..kinds.agent.kind import record
from ..kinds.agent.workload import BASE_DIR, SCENARIOS

__all__ = [
    "Recorder",
    "document_recorder",
    "explore_recorder",
    "report_details",
]

Recorder = Callable[[str, str], "tuple[CrashState, list[Op], list[Op], str] | None"]
"""``recorder(workload, fault)`` → ``(initial, ops, marks, base_dir)`` or None."""

MAX_DETAILS = 20
"""Counterexamples given a detail per report (the page renders at most this many)."""


def report_details(report: Mapping[str, Any], recorder: Recorder) -> dict[str, Any]:
    """``{detail_key: {"timeline", "files"}}`` for the report's listed counterexamples."""

    out: dict[str, Any] = {}
    runs: dict[tuple[str, str], Any] = {}
    for s in report.get("scenarios", []):
        for v in s["violations"]:
            if len(out) >= MAX_DETAILS:
                return out
            k = v["crash_point"]["index"]
            key = detail_key(s["name"], v["model"], k, v["state_digest"])
            if key in out:
                continue
            run_key = (s["name"], v.get("fault") or "")
            if run_key not in runs:
                try:
                    runs[run_key] = recorder(*run_key)
                except Exception:
                    runs[run_key] = None
            run = runs[run_key]
            if run is None:
                continue
            initial, ops, marks, base = run
            detail = _detail(initial, ops, marks, base, v["model"], k, v["state_digest"])
            if detail is not None:
                out[key] = detail
    return out


def _detail(
    initial: CrashState, ops: list[Op], marks: list[Op], base: str, model: str, k: int, digest: str
) -> dict[str, Any] | None:
    m = get_model(model)
    for point in crash_points(m, initial, ops):
        if point.index != k:
            continue
        state = next((st for st in point.states if st.digest() == digest), None)
        if state is None:
            return None
        prefix = _prefix_state(initial, ops, k)
        view = timeline(m, ops, k, base, marks)
        files = [
            {
                "name": p[len(base) + 1 :] if p.startswith(base + "/") else p,
                **file_view(d, prefix.file(p)),
            }
            for p, d in state.files
        ]
        return {"timeline": view, "files": files}
    return None


def explore_recorder(target: Any) -> Recorder:
    """A recorder for ``crashpoint explore``: catalogue workloads against ``target``."""

    def rec(name: str, fault: str) -> tuple[CrashState, list[Op], list[Op], str] | None:
        if name not in SCENARIOS:
            return None
        r = record(SCENARIOS[name], target, fault=parse_fault(fault) if fault else None)
        return r.initial, r.ops, r.marks, BASE_DIR

    return rec


def document_recorder(doc: Any) -> Recorder:
    """A recorder for a document target (``verify --kind document``): its named workloads."""

    def rec(name: str, fault: str) -> tuple[CrashState, list[Op], list[Op], str] | None:
        try:
            workload = doc.workload(name)
        except KeyError:
            return None  # random: drawn by hypothesis, not rebuilt by name
        run = doc.record(workload, parse_fault(fault) if fault else None)
        marks = [Op(s.begin, OpKind.MARK, label=f"begin:{s.label}") for s in run.steps]
        return run.initial, run.ops, marks, doc.base

    return rec

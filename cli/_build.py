"""Building and writing a run's reports: one path for a run and for its merged shards
(``crashpoint report merge``), so both write the same reports from the same results."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scenarios import EngineResult

__all__ = ["explore_report", "write_all"]


def explore_report(
    results: Sequence[EngineResult],
    *,
    model: str,
    target: str,
    run_id: str,
    details: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The report of an exploration's ``results`` and its report.html details (from
    the traces the results keep, or ``details`` as merged shards give them): one builder
    for a run and for its merged shards (``crashpoint report merge``)."""
    from .reports import build_report

    report = build_report(results, model=model, target=target, extra={"run_id": run_id})
    if not report["totals"]["distinct_states"]:  # never a false green: a run that
        report["examined_nothing"] = True  # examined nothing says so
    if not report["totals"]["violations"]:
        return report, None
    if details is not None:
        return report, listed_details(report, details)
    from .scenarios.jobs.details import report_details  # timelines, crash-state bytes

    return report, dict(report_details(report, results))


def listed_details(report: dict[str, Any], details: dict[str, Any]) -> dict[str, Any]:
    """The entries of ``details`` (report.html's, by detail key) for the violations
    ``report`` lists, in their order."""
    from .scenarios.engine.explore import detail_key

    out: dict[str, Any] = {}
    for s in report.get("scenarios", []):
        for v in s["violations"]:
            key = detail_key(s["name"], v["model"], v["crash_point"]["index"], v["state_digest"])
            if key in details and key not in out:
                out[key] = details[key]
    return out


def write_all(
    report: dict[str, Any], out: str, details: dict[str, Any] | None = None
) -> tuple[str, str, str]:
    """Write report.json, report.md and report.html into ``out`` together (issue 21);
    returns their paths. Raises OSError."""
    from .reports._html import write_reports
    from .reports._markdown import render_markdown

    paths = (
        os.path.join(out, "report.json"),
        os.path.join(out, "report.md"),
        os.path.join(out, "report.html"),
    )
    write_reports(paths, report, render_markdown(report), details)
    return paths

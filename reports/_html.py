"""report.html: one self-contained page for ``explore``, ``verify`` and ``explain`` (issue 12).

Rendered with jinja2 (imported only here, only when HTML is written, so the plain CLI
stays fast) from the report document plus, per counterexample, an optional *detail*:
the operation timeline as lanes per file (each operation durable, volatile or not run
under the model at the crash point) and each file of the crash state in text and hex,
torn regions marked. The page fetches nothing: styles and scripts are inline, no URL
is referenced; a script adds copy buttons and text/hex toggles.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CASES_SHOWN", "detail_key", "render_html", "write_html"]

CASES_SHOWN = 20
"""Counterexamples rendered per page (report.json keeps every listed one)."""


def detail_key(scenario: str, model: str, crash_point: int, digest: str) -> str:
    """The key of a counterexample's detail in ``details``."""
    return f"{scenario}|{model}|{crash_point}|{digest}"


def _summary(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "scenario": s["name"],
            "model": s["model"],
            "crash_points": s["crash_points"],
            "states": s["distinct_states"],
            "violations": s["violation_count"],
            "killed_by": ", ".join(s["killed_by"]) or "—",
            "exhaustive": s["exhaustive"],
            "cut": s["cut"],
        }
        for s in report.get("scenarios", [])
    ]


def _cases_from_violations(
    report: Mapping[str, Any], details: Mapping[str, Any]
) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for s in report.get("scenarios", []):
        for v in s["violations"]:
            if len(cases) >= CASES_SHOWN:
                return cases
            cp = v["crash_point"]
            detail = details.get(detail_key(s["name"], v["model"], cp["index"], v["state_digest"]))
            views = {f["name"]: f for f in (detail or {}).get("files", [])}
            files = [
                {"name": n, "what": w, "view": views.get(n) or _by_base(views, n)}
                for n, w in v["crash_state"].items()
            ]
            cases.append(
                {
                    "id": f"case-{len(cases) + 1}",
                    "invariant": v["invariant"],
                    "title": v["title"],
                    "severity": v["severity"],
                    "meaning": v["why"],
                    "model": v["model"],
                    "workload": v["scenario"],
                    "fault": v.get("fault"),
                    "crash_point": cp["index"],
                    "where": cp.get("where")
                    or f"after {cp['last_done']}, before {cp['operation']}",
                    "subject": v.get("session_id", ""),
                    "files": files,
                    "timeline": (detail or {}).get("timeline"),
                    "got": v["load_returned"],
                    "expected": v["expected"],
                    "replay": v["replay"],
                    "cause": "",
                    "broken": v.get("broken", [v["invariant"]]),
                }
            )
    return cases


def _by_base(views: Mapping[str, Any], name: str) -> Any:
    base = name.rsplit("/", 1)[-1]
    for n, view in views.items():
        if n.rsplit("/", 1)[-1] == base:
            return view
    return None


def _cases_from_matches(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for m in report.get("matches", [])[:CASES_SHOWN]:
        cp = m["crash_point"]
        views = {f["name"]: f for f in m["timeline"].get("files", [])}
        counted = m.get("counted", m["invariants"])
        cases.append(
            {
                "id": f"case-{len(cases) + 1}",
                "invariant": ", ".join(counted) or "none",
                "title": "reachable" + (": invariant fails" if counted else ", no invariant fails"),
                "severity": "data-loss" if counted else "ok",
                "meaning": m["cause"],
                "model": m["model"],
                "workload": m["workload"],
                "fault": None,
                "crash_point": cp["index"],
                "where": f"after {cp['last_done']}, before {cp['operation']}",
                "subject": report.get("session", ""),
                "files": [
                    {"name": n, "what": w, "view": views.get(n)} for n, w in m["files"].items()
                ],
                "timeline": m["timeline"],
                "got": m["load_returned"] or "(judged: no invariant fails)",
                "expected": m["expected"] or "—",
                "replay": m["replay"],
                "cause": m["cause"],
                "broken": counted,
            }
        )
    return cases


def render_html(report: Mapping[str, Any], details: Mapping[str, Any] | None = None) -> str:
    """The page for ``report`` (an explore/verify report.json document, or explain's),
    with ``details`` keyed by :func:`detail_key` (explore/verify; explain carries its own)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("crashpoint.reports", "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    template = env.get_template("report.html.j2")
    explain = report.get("command") == "explain"
    cases = (
        _cases_from_matches(report) if explain else _cases_from_violations(report, details or {})
    )
    total = (
        len(report.get("matches", []))
        if explain
        else sum(len(s["violations"]) for s in report.get("scenarios", []))
    )
    return template.render(
        report=report,
        explain=explain,
        summary=_summary(report),
        cases=cases,
        cases_total=total,
        command=report.get("command") or ("verify" if "verdict" in report else "explore"),
    )


def write_html(
    report: Mapping[str, Any],
    path: str | os.PathLike[str],
    details: Mapping[str, Any] | None = None,
) -> None:
    """Write :func:`render_html` to ``path`` (replaced atomically). Raises OSError."""
    from ._json import write_text

    write_text(render_html(report, details), path)


def lanes_for(ops: Sequence[Mapping[str, Any]]) -> int:  # pragma: no cover - template helper
    return len(ops)

"""The Markdown report, rendered from the JSON report document."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ._publish import write_text
from ._terminal import (
    bounds_line,
    hypothetical_line,
    model_line,
    not_examined_suffix,
    sample_line,
)

__all__ = ["render_markdown", "write_markdown"]


def _violation_md(v: Mapping[str, Any]) -> list[str]:
    cp = v["crash_point"]
    fault = f" with injected fault `{v['fault']}`" if v.get("fault") else ""
    where = cp.get("where") or f"after `{cp['last_done']}`, before `{cp['operation']}`"
    lines = [
        f"#### {v['invariant']} ({v['title']}, {v['severity']}) — `{v['scenario']}` "
        f"under {v['model']}{fault}",
        "",
        f"- invariant: {v['why']}",
        f"- crash point **{cp['index']}**: {where}",
        f"- session `{v['session_id']}`; crash state:",
    ]
    lines += [f"  - `{name}`: {what}" for name, what in v["crash_state"].items()] or [
        "  - (empty: no files)"
    ]
    if len(v.get("broken", ())) > 1:
        lines.append(f"- this crash state breaks: {', '.join(v['broken'])}")
    got = "found" if v["invariant"] in ("S1", "S2") else "load returned"
    lines += [f"- {got}: {v['load_returned']}", f"- expected: {v['expected']}"]
    if v.get("saves"):
        lines.append("- values given to save(), and what load returned after the crash:")
        lines += [f"  - `{s['call']}` ({s['status']}): `{s['value']}`" for s in v["saves"]]
        if "load_value" in v:
            lines.append(f"  - load(): `{v['load_value']}`")
    lines += [f"- replay: `{v['replay']}`", ""]
    return lines


def _verify_md(report: Mapping[str, Any]) -> list[str]:
    """What ``crashpoint verify`` adds: verdict, kind and mode, calls the model cannot
    represent, conformance, warnings, shrunk workloads, the baseline."""
    out = [
        f"## Verdict: {report['verdict']}",
        "",
        f"- kind `{report['kind']}`, target run {report['mode']}; seed {report['seed']}",
    ]
    covered = bounds_line(report)
    if covered is not None:
        out.append(f"- {covered}")
    if report.get("incomplete"):
        out.append(
            "- **incomplete**: calls the model cannot represent: "
            + ", ".join(f"`{c}`" for c in report["incomplete"])
        )
    failed = [c for c in report.get("conformance", []) if not c["passed"]]
    if report.get("conformance"):
        out.append(
            f"- conformance: {len(report['conformance']) - len(failed)} of "
            f"{len(report['conformance'])} checks passed"
        )
    out += [f"  - **{c['id']}** {c['check']}: {c['why']}" for c in failed]
    if report.get("warning_count") or report.get("leftover_states"):
        out.append(
            f"- warnings (A5, not violations): {report.get('warning_count', 0)}; crash states "
            f"holding leftover files: {report.get('leftover_states', 0)}"
        )
    out += [f"- shrunk: {a} → `{b}`" for a, b in report.get("shrunk", {}).items()]
    sizes = report.get("value_sizes") or {}
    if sizes:
        never = sizes.get("boundaries_not_crossed") or []
        out.append(
            f"- values `{report.get('values')}`: {sizes['min']}–{sizes['max']} bytes as JSON"
            + (f"; page boundaries never crossed: {', '.join(map(str, never))}" if never else "")
        )
    if report.get("renamed"):
        out.append(
            "- renamed (fresh names of faulted re-runs, matched by creation order): "
            + ", ".join(f"`{p['from']}` → `{p['to']}`" for p in report["renamed"])
        )
    if report.get("thread_exception_count"):
        out.append(
            f"- the target's threads raised {report['thread_exception_count']} exception(s) "
            "(not findings; tracebacks in report.json `thread_exceptions`):"
        )
        out += [
            f"  - `{t['thread']}`: {t['type']}: {t['message'][:160]}"
            for t in report.get("thread_exceptions", [])[:5]
        ]
    if "baseline" in report:
        new = report["baseline"]["new"]
        out.append(
            f"- baseline `{report['baseline']['report']}`: {len(new)} new finding(s)"
            + (": " + "; ".join(new) if new else "")
        )
    return [*out, ""]


UNCONFIRMED = (
    "derived from a trace that lacks calls the model cannot represent, see the verdict: "
    "they may not be reachable on a real disk"
)
"""What the violations of an incomplete verdict are (verify: ``report["incomplete"]``
lists the calls): found, but not confirmed."""


def render_markdown(report: Mapping[str, Any]) -> str:
    """A Markdown page for a report document built by ``build_report``."""
    t = report["totals"]
    verdict = "no violation" if t["violations"] == 0 else f"**{t['violations']} violation(s)**"
    if report.get("examined_nothing"):
        verdict = "**no crash state examined: nothing was verified**"
    if t["violations"] and report.get("incomplete"):
        verdict += f" ({UNCONFIRMED})"
    out = [
        f"# crashpoint report: target `{report['target']}`, model `{report['model']}`",
        "",
        f"{t['scenarios']} scenario(s), {t['crash_points']} crash points, "
        f"{t['distinct_states']} distinct crash states checked "
        f"({t['raw_states']} before deduplication): {verdict}.",
        "",
        "A violation is one finding: an invariant failing for one session in one crash state "
        "at one crash point, so the count can exceed the number of states. Each scenario lists "
        "its minimal counterexample of every invariant found, then more up to a limit, most "
        "severe first (security, data-loss, invalid-history, semantics, warning), then by "
        "crash point.",
        "",
        "Operations are numbered from 0 in the order the workload issued them; "
        "`save#N` is the workload's storage call N (counting every call, loads included).",
        "",
    ]
    if report.get("models"):
        out += [
            "Models assumed: " + "; ".join(f"`{model_line(m)}`" for m in report["models"]) + ".",
            "",
        ]
    if t.get("cut"):
        out += [
            f"bounded: {t['cut']} combinations not explored (an upper bound on the distinct "
            "crash states left out: not every crash state of these workloads was explored).",
            "",
        ]
    sampled = sample_line(report)
    if sampled is not None:
        out += [sampled + ".", ""]
    out += [
        "| scenario | model | operations | crash points | distinct states | invariants "
        "| violations |",
        "|---|---|---:|---:|---:|---|---:|",
    ]
    for s in report["scenarios"]:
        killed = f" ({', '.join(s['killed_by'])})" if s["killed_by"] else ""
        if s["violations_listed"] < s["violation_count"]:
            killed += f", {s['violations_listed']} listed"
        bound = not_examined_suffix(s)
        mode = f" + {s['faults']} faults" if s.get("faults") else ""
        out.append(
            f"| {s['name']} | {s['model']}{mode} | {s['operations']} | {s['crash_points']} | "
            f"{s['distinct_states']}{bound} | {' '.join(s['invariants'])} | "
            f"{s['violation_count']}{killed} |"
        )
    out.append("")
    if "kind" in report:
        out += _verify_md(report)
    for key, title in (("zoo", "Kill matrix"),):
        if key in report:
            out += [f"## {title}", "", *_zoo_md(report[key]), ""]
    if report.get("counterexample"):
        out += ["## Minimal counterexample", "", *_violation_md(report["counterexample"])]
    listed = [v for s in report["scenarios"] for v in s["violations"][:1]]
    if len(listed) > 1:
        out += ["## First counterexample per scenario", ""]
        for v in listed:
            out += _violation_md(v)
    if t.get("hypothetical"):  # apart, after the verdict's findings (FAULT-MODEL.md §3)
        out += ["## Hypothetical findings", "", hypothetical_line(report) + ".", ""]
        for s in report["scenarios"]:
            for v in s.get("hypothetical", [])[:1]:
                out += _violation_md(v)
    return "\n".join(out).rstrip() + "\n"


def _zoo_md(zoo: Mapping[str, Any]) -> list[str]:
    models = zoo["models"]
    out = [
        "| target | " + " | ".join(models) + " | expected | verdict |",
        "|---|" + "---|" * len(models) + "---|---|",
    ]
    for row in zoo["rows"]:
        cells = [", ".join(row["killed"].get(m, [])) or "-" for m in models]
        out.append(
            f"| {row['target']} | "
            + " | ".join(cells)
            + f" | {row['expected']} | {row['verdict']} |"
        )
    return out


def write_markdown(report: Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write the Markdown rendering of ``report`` to ``path`` (replaced atomically)."""
    write_text(render_markdown(report), path)

"""``crashpoint explain``'s report as Markdown and as a terminal summary (issue 12).

Both render the explain report document (:meth:`Explanation.as_dict`): what load made
of the evidence, the matching crash states (model, workload, crash point, cause), the
nearest states when nothing matches, the invariant in SPEC.md's words, the verdict.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

__all__ = ["explain_summary", "render_explain_markdown", "terminal_safe"]

MATCHES_SHOWN = 5
"""Matches rendered in full (report.json lists every one)."""


def _load_lines(report: Mapping[str, Any]) -> list[str]:
    load = report["load"]
    lines = [
        f"- load returned: {load['returned']}",
        f"- load writes: {'yes' if load['load_writes'] else 'no'}",
    ]
    if "load_or_create" in load:
        lines.append(
            f"- load_or_create: {load['load_or_create']}; writes: "
            f"{'yes' if load['load_or_create_writes'] else 'no'}"
        )
    if "expected" in load:
        lines.append(f"- expected: {load['expected']}")
    for f in report["read_findings"]:
        lines.append(
            f"- **{f['invariant']}** (read path): expected {f['expected']}; got {f['got']}"
        )
    return lines


def _match_lines(m: Mapping[str, Any]) -> list[str]:
    cp = m["crash_point"]
    invs = ", ".join(m["counted"]) or "none"
    lines = [
        f"#### {m['model']} · `{m['workload']}` · crash point {cp['index']}",
        "",
        f"- after `{cp['last_done']}`, before `{cp['operation']}`",
        f"- invariants failing there: {invs}",
        f"- cause: {m['cause']}",
        "- crash state: " + "; ".join(f"`{n}` {w}" for n, w in m["files"].items()),
        f"- witness (operations whose effects it holds): {len(m['witness'])}: "
        + ", ".join(f"`{w}`" for w in m["witness"][:8])
        + (" …" if len(m["witness"]) > 8 else ""),
    ]
    for inv, why in m.get("conditional", {}).items():
        lines.append(f"- also {inv}, not counted: {why}")
    if m["expected"]:
        lines += [f"- load returned: {m['load_returned']}", f"- expected: {m['expected']}"]
    lines += [f"- replay: `{m['replay']}`", ""]
    return lines


def render_explain_markdown(report: Mapping[str, Any]) -> str:
    """The explain report as Markdown (control characters escaped: :func:`terminal_safe`)."""
    ev = report["evidence"]
    _private = ", private bytes: matched by shape" if ev["private"] else ""
    out = [
        f"# crashpoint explain: {report['target']} ({report['kind']})",
        "",
        f"## Verdict: {report['verdict']} (exit {report['exit_code']})",
        "",
        f"Evidence `{ev['source']}` ({ev['form']}{_private}), "
        f"session `{report['session'] or '-'}`:",
        "",
    ]
    out += [
        f"- `{f['name']}`: {f['class']}, {f['size']} bytes"
        + (
            " (a bystander: the target never writes it; left out of the match)"
            if f.get("bystander")
            else ""
        )
        for f in ev["files"]
    ]
    out += ["", "## What the target makes of it", "", *_load_lines(report), ""]
    out += ["## How it could happen", ""]
    s = report["searched"]
    gen = s["generated"]
    out.append(
        f"Searched {s['crash_states_examined']} crash states: models {', '.join(s['models'])}; "
        f"workloads {', '.join(s['workloads'])}; {gen['count']} generated (bound {gen['bound']}, "
        f"seed {gen['seed']})."
    )
    out.append("")
    if report["matches"]:
        out.append(f"{len(report['matches'])} (workload, model) pair(s) reach a matching state:")
        out.append("")
        for m in report["matches"][:MATCHES_SHOWN]:
            out += _match_lines(m)
    else:
        out += ["**No explored crash state matches.** Nearest states:", ""]
        for n in report["nearest"]:
            out.append(
                f"- {n['model']} · `{n['workload']}` · crash point {n['crash_point']} "
                f"({n['distance']} file(s) differ):"
            )
            out += [
                f"  - `{d['file']}`: evidence {d['evidence']}, state {d['state']}"
                for d in n["diff"]
            ]
        out += ["", f"Likelier: {report['likelier']}", ""]
    if report["invariants"]:
        out += ["## What it breaks", ""]
        for w in report["invariants"]:
            out += [
                f"- **{w['id']}** ({w['label']}, {w['spec']}): {w['meaning']}",
                f"  - a correct storage: {w['correct']}",
            ]
        out.append("")
    if report.get("emitted_test"):
        out += [f"Emitted test: `{report['emitted_test']}`", ""]
    return terminal_safe("\n".join(out) + "\n")  # (a `cat report.md` shows no raw escape)


def terminal_safe(text: str) -> str:
    """``text`` with every control character but the newline written as an escape
    (``\\x1b``): a file name in the evidence never drives the terminal."""
    return "".join(
        c
        if c == "\n" or not unicodedata.category(c).startswith("C")
        else c.encode("unicode_escape").decode("ascii")
        for c in text
    )


def explain_summary(report: Mapping[str, Any]) -> str:
    """A few lines for the terminal (control characters escaped: :func:`terminal_safe`)."""
    lines = [f"explain {report['evidence']['source']} with {report['target']}: {report['verdict']}"]
    lines.append(f"  load: {report['load']['returned'][:160]}")
    if report["evidence"].get("bystanders"):
        lines.append(
            "  bystanders (the target never writes them; left out of the match): "
            + ", ".join(report["evidence"]["bystanders"])
        )
    for f in report["read_findings"]:
        lines.append(f"  {f['invariant']} (read path): {f['got'][:160]}")
    first = report["first_match"]
    if first is not None:
        cp = first["crash_point"]
        lines.append(
            f"  reachable: {first['model']}, workload {first['workload']}, crash point "
            f"{cp['index']} ({len(report['matches'])} match(es)); invariants: "
            f"{', '.join(first['counted']) or 'none'}"
        )
        lines.append(f"  cause: {first['cause'][:240]}")
    else:
        lines.append(f"  not reachable by any explored state; {report['likelier']}")
    for w in report["invariants"]:
        lines.append(f"  {w['id']} ({w['spec']}): {w['meaning']}")
    return terminal_safe("\n".join(lines))

"""A concurrent counterexample's schedule as lanes, one per actor (issue 25, SPEC.md §10.1).

Each row is one event of the recorded schedule in the order it happened: an actor's
call beginning or ending, or one of its file operations; the row sits in its actor's
lane. A preemption (a switch away from an actor that could have continued) and the
crash point are rows of their own, across the lanes.
"""

from __future__ import annotations

import html
import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LaneRow", "lane_rows", "lanes_html", "lanes_markdown", "lanes_page", "lanes_text"]


@dataclass(frozen=True, slots=True)
class LaneRow:
    """One row: ``actor`` None for a row across the lanes (a preemption, the crash)."""

    actor: int | None
    text: str


def _short(op: Any, base: str) -> str:
    text: str = op.render()
    if base:
        text = text.replace(base.rstrip("/") + "/", "")
    return text


def lane_rows(run: Any, crash_point: int | None) -> list[LaneRow]:
    """The rows of ``run`` (a recorded concurrent schedule: its ``data`` holds the
    scheduler's outcome and the actors' call marks), with the crash after
    ``crash_point`` operations (None: the crash-free end)."""
    outcome = run.data.outcome
    marks: list[tuple[int, int, str]] = list(run.data.lanes)
    preempt = sorted(d.at for d in outcome.decisions if d.preemption)
    rows: list[LaneRow] = []
    mi = pi = 0
    n = len(run.ops)
    base = posixpath.normpath(run.base) if run.base else ""
    for i in range(n + 1):
        while pi < len(preempt) and preempt[pi] <= i:
            d = [x for x in outcome.decisions if x.preemption][pi]
            rows.append(LaneRow(None, f"-- preemption: actor {d.current} -> actor {d.chosen} --"))
            pi += 1
        while mi < len(marks) and marks[mi][0] <= i:
            _, actor, what = marks[mi]
            rows.append(LaneRow(actor, f"[{what}]"))
            mi += 1
        if crash_point is not None and i == crash_point:
            rows.append(LaneRow(None, f"== crash here ({i} operations done) =="))
        if i < n:
            who = outcome.actor_of(i)
            rows.append(LaneRow(who, f"{i}: {_short(run.ops[i], base)}"))
    return rows


def _actors(rows: Sequence[LaneRow]) -> int:
    return max((r.actor for r in rows if r.actor is not None), default=0) + 1


def lanes_text(rows: Sequence[LaneRow], *, width: int = 44) -> str:
    """Plain-text lanes, ``width`` characters per lane."""
    n = _actors(rows)
    head = "".join(f"{'actor ' + str(a):<{width}}" for a in range(n)).rstrip()
    out = [head, "".join("-" * (width - 2) + "  " for _ in range(n)).rstrip()]
    for r in rows:
        if r.actor is None:
            out.append(r.text)
            continue
        cell = r.text if len(r.text) < width - 1 else r.text[: width - 4] + "..."
        out.append((" " * (width * r.actor) + cell).rstrip())
    return "\n".join(out)


def lanes_markdown(rows: Sequence[LaneRow]) -> str:
    """A Markdown table: one column per actor."""
    n = _actors(rows)
    out = [
        "| " + " | ".join(f"actor {a}" for a in range(n)) + " |",
        "|" + "---|" * n,
    ]
    for r in rows:
        cells = [""] * n
        text = r.text.replace("|", "\\|")
        if r.actor is None:
            cells = [f"**{text}**"] + [""] * (n - 1)
        else:
            cells[r.actor] = f"`{text}`"
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def lanes_html(rows: Sequence[LaneRow]) -> str:
    """An HTML table (a fragment): one column per actor, a preemption or the crash a
    row across every lane (class ``preemption`` / ``crash``)."""
    n = _actors(rows)
    out = [
        '<table class="lanes">',
        "<tr>" + "".join(f"<th>actor {a}</th>" for a in range(n)) + "</tr>",
    ]
    for r in rows:
        text = html.escape(r.text)
        if r.actor is None:
            cls = "crash" if r.text.startswith("==") else "preemption"
            out.append(f'<tr class="{cls}"><td colspan="{n}">{text}</td></tr>')
        else:
            cells = ["<td></td>"] * n
            cells[r.actor] = f"<td><code>{text}</code></td>"
            out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


_STYLE = (
    "body{font-family:sans-serif;margin:2em}table.lanes{border-collapse:collapse;margin:1em 0}"
    "table.lanes td,table.lanes th{border:1px solid #ccc;padding:2px 8px;vertical-align:top}"
    "tr.preemption td{background:#fff3cd;font-weight:bold}"
    "tr.crash td{background:#f8d7da;font-weight:bold}pre{background:#f6f6f6;padding:1em}"
)


def lanes_page(title: str, sections: Sequence[tuple[str, str, str]]) -> str:
    """A standalone HTML page: ``title``, then per section its heading, a preformatted
    text (a counterexample) and a lanes fragment (:func:`lanes_html`)."""
    body = [f"<h1>{html.escape(title)}</h1>"]
    for heading, text, lanes in sections:
        body.append(f"<h2>{html.escape(heading)}</h2>")
        if text:
            body.append(f"<pre>{html.escape(text)}</pre>")
        body.append(lanes)
    return (
        '<!DOCTYPE html><html><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )

"""A concurrent counterexample's schedule as lanes, one per actor (issue 25, SPEC.md §10.1).

Each row is one event of the recorded schedule in the order it happened: an actor's
call beginning or ending, or one of its file operations; the row sits in its actor's
lane. A preemption (a switch away from an actor that could have continued) and the
crash point are rows of their own, across the lanes.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["LaneRow", "lane_rows", "lanes_markdown", "lanes_text"]


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

"""The terminal summary: a rich table and the minimal counterexample.

Given the CLI's :class:`~crashpoint._console.LazyConsole` where rich would print plain
text (no terminal), :func:`print_summary` writes the same bytes without importing rich
(issue 11: rich's import and table layout were a tenth of ``crashpoint explore``); text
rich would change (markup, emoji codes, control characters, a table wider than the
console) goes to rich as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._console import LazyConsole, plain_text
from ..scenarios._explore import got_label, render_files

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["print_summary", "print_zoo"]

_COLUMNS = ("scenario", "model", "operations", "crash points", "distinct states", "violations")
_RIGHT = (False, False, True, True, True, True)
"""Columns justified right (the numbers)."""


def _rows(report: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """The table's rows as plain text (rich's markup left out), the total row last."""
    rows: list[tuple[str, ...]] = []
    for s in report["scenarios"]:
        v = s["violation_count"]
        shown = f"{v} ({', '.join(s['killed_by'])})" if v else "0"
        states = str(s["distinct_states"]) + ("" if s["exhaustive"] else f" (+{s['cut']} cut)")
        model = s["model"] + (f" + {s['faults']} faults" if s.get("faults") else "")
        rows.append((s["name"], model, str(s["operations"]), str(s["crash_points"]), states, shown))
    t = report["totals"]
    rows.append(
        ("total", "", "", str(t["crash_points"]), str(t["distinct_states"]), str(t["violations"]))
    )
    return rows


def plain_table(
    title: str, rows: Sequence[Sequence[str]], width: int, *, markup_cells: bool = True
) -> str | None:
    """The summary table as rich draws it without a terminal (box ``HEAVY_HEAD``, one
    space of padding, the title at the left as soft-wrapped output leaves it), or None
    when rich would lay it out otherwise: wider than ``width``, or a cell or the title
    that is not plain printable ASCII on one line (or holds markup, ``markup_cells``)."""
    texts = [title, *(c for row in rows for c in row)]
    if not all(t.isascii() and "\n" not in t and plain_text(t, markup=markup_cells) for t in texts):
        return None
    cells = [_COLUMNS, *rows]
    widths = [max(len(row[i]) for row in cells) + 2 for i in range(len(_COLUMNS))]
    if sum(widths) + len(widths) + 1 > width:
        return None

    def line(left: str, fill: str, mid: str, right: str) -> str:
        return left + mid.join(fill * w for w in widths) + right

    def row(edge: str, cells: Sequence[str]) -> str:
        parts = [
            " " + (c.rjust(w - 2) if right else c.ljust(w - 2)) + " "
            for c, w, right in zip(cells, widths, _RIGHT, strict=True)
        ]
        return edge + edge.join(parts) + edge

    lines = [title, line("┏", "━", "┳", "┓"), row("┃", _COLUMNS), line("┡", "━", "╇", "┩")]
    lines += [row("│", r) for r in rows]
    lines.append(line("└", "─", "┴", "┘"))
    return "\n".join(lines) + "\n"


def _plain_summary(
    report: Mapping[str, Any], width: int, *, counterexample: bool = True
) -> str | None:
    """:func:`print_summary`'s output as rich writes it without a terminal, or None."""
    title = f"crashpoint: target {report['target']}, model {report['model']}"
    table = plain_table(title, _rows(report), width)
    if table is None:
        return None
    lines = [table.rstrip("\n")]
    ids: list[str] = []
    for s in report["scenarios"]:
        ids += [i for i in s["invariants"] if i not in ids]
    lines.append(f"invariants checked: {' '.join(ids)}")
    t = report["totals"]
    if t.get("cut"):
        lines.append(
            f"bounded: {t['cut']} combinations not explored (an upper bound on the "
            "distinct crash states left out; this run is not exhaustive)"
        )
    ce = report.get("counterexample")
    if ce and counterexample:
        cp = ce["crash_point"]
        fault = f", injected fault {ce['fault']}" if ce.get("fault") else ""
        where = cp.get("where") or f"after {cp['last_done']}, before {cp['operation']}"
        lines += [
            f"{ce['invariant']} ({ce['title']}, {ce['severity']}) in {ce['scenario']} under "
            f"{ce['model']}{fault}: crash point {cp['index']}, {where}",
            f"  invariant: {ce['why']}",
            "  crash state:",
            render_files(ce["crash_state"]),
            f"  {got_label(ce['invariant'], ce['session_id'])}: {ce['load_returned']}",
            f"  expected: {ce['expected']}",
            f"  replay: {ce['replay']}",
        ]
    if not all(plain_text(text) for text in lines[1:]):
        return None  # markup or emoji codes rich would render: rich prints it
    return "\n".join(lines) + "\n"


def print_summary(
    report: Mapping[str, Any], console: Console | LazyConsole, *, counterexample: bool = True
) -> None:
    """Print the scenario table (scenario, model, operations, crash points, distinct
    crash states, violations), the invariants checked and, if any (and
    ``counterexample``), the minimal counterexample."""
    if isinstance(console, LazyConsole):
        width = console.plain_width()
        text = (
            None if width is None else _plain_summary(report, width, counterexample=counterexample)
        )
        if text is not None:
            console.write(text)
            return
        console = console.rich
    from rich.table import Table

    table = Table(title=f"crashpoint: target {report['target']}, model {report['model']}")
    table.add_column("scenario", overflow="fold")
    table.add_column("model", overflow="fold")
    for name in ("operations", "crash points", "distinct states", "violations"):
        table.add_column(name, justify="right", overflow="fold")
    for s in report["scenarios"]:
        v = s["violation_count"]
        shown = f"[bold red]{v} ({', '.join(s['killed_by'])})[/]" if v else "0"
        states = str(s["distinct_states"]) + ("" if s["exhaustive"] else f" (+{s['cut']} cut)")
        model = s["model"] + (f" + {s['faults']} faults" if s.get("faults") else "")
        table.add_row(s["name"], model, str(s["operations"]), str(s["crash_points"]), states, shown)
    t = report["totals"]
    table.add_row(
        "[bold]total[/]",
        "",
        "",
        str(t["crash_points"]),
        str(t["distinct_states"]),
        f"[bold]{t['violations']}[/]",
        end_section=True,
    )
    console.print(table)
    ids: list[str] = []
    for s in report["scenarios"]:
        ids += [i for i in s["invariants"] if i not in ids]
    console.print(f"invariants checked: {' '.join(ids)}", highlight=False, soft_wrap=True)
    if t.get("cut"):
        console.print(
            f"[yellow]bounded: {t['cut']} combinations not explored[/] (an upper bound on the "
            "distinct crash states left out; this run is not exhaustive)",
            highlight=False,
            soft_wrap=True,
        )
    ce = report.get("counterexample")
    if ce and counterexample:
        cp = ce["crash_point"]
        fault = f", injected fault {ce['fault']}" if ce.get("fault") else ""
        where = cp.get("where") or f"after {cp['last_done']}, before {cp['operation']}"
        console.print(
            f"[bold red]{ce['invariant']} ({ce['title']}, {ce['severity']})[/] in "
            f"[bold]{ce['scenario']}[/] under {ce['model']}{fault}: crash point {cp['index']}, "
            f"{where}",
            highlight=False,
            soft_wrap=True,
        )
        console.print(f"  invariant: {ce['why']}", highlight=False, soft_wrap=True)
        console.print("  crash state:", highlight=False)
        console.print(render_files(ce["crash_state"]), highlight=False, soft_wrap=True)
        console.print(
            f"  {got_label(ce['invariant'], ce['session_id'])}: {ce['load_returned']}",
            highlight=False,
            soft_wrap=True,
        )
        console.print(f"  expected: {ce['expected']}", highlight=False, soft_wrap=True)
        console.print(f"  replay: {ce['replay']}", highlight=False, soft_wrap=True)


def print_zoo(zoo: Mapping[str, Any], console: Console | LazyConsole) -> None:
    """Print the kill matrix: target × model → the invariants that killed it."""
    from rich.table import Table

    if isinstance(console, LazyConsole):
        console = console.rich
    table = Table(title="crashpoint mutant zoo: kill matrix")
    table.add_column("target", overflow="fold")
    for column in zoo["models"]:
        table.add_column(column, overflow="fold")
    table.add_column("expected", overflow="fold")
    table.add_column("verdict")
    for row in zoo["rows"]:
        verdict = row["verdict"]
        style = "green" if verdict in ("clean", "killed") else "bold red"
        if verdict == "not-run":
            style = "yellow"
        cells = [", ".join(row["killed"].get(c, [])) or "-" for c in zoo["models"]]
        table.add_row(row["target"], *cells, row["expected"], f"[{style}]{verdict}[/]")
    console.print(table)
    bad = [r["target"] for r in zoo["rows"] if r["verdict"] not in ("clean", "killed", "not-run")]
    skipped = [r["target"] for r in zoo["rows"] if r["verdict"] == "not-run"]
    if bad:
        console.print(f"[bold red]not as expected:[/] {', '.join(bad)}", soft_wrap=True)
    else:
        console.print("every mutant explored was killed by its expected invariant; reference clean")
    if skipped:
        console.print(
            f"[yellow]not run[/] (their model was not selected): {', '.join(skipped)}",
            soft_wrap=True,
        )

"""The terminal summary: a rich table and the minimal counterexample."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["print_summary", "print_zoo"]


def print_summary(report: Mapping[str, Any], console: Console) -> None:
    """Print the scenario table (scenario, model, crash points, distinct crash states,
    invariants checked, violations) and, if any, the minimal counterexample."""
    table = Table(title=f"crashpoint: target {report['target']}, model {report['model']}")
    for name, justify in (
        ("scenario", "left"),
        ("model", "left"),
        ("crash points", "right"),
        ("distinct states", "right"),
        ("invariants checked", "right"),
        ("violations", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for s in report["scenarios"]:
        v = s["violation_count"]
        shown = f"[bold red]{v} ({', '.join(s['killed_by'])})[/]" if v else "0"
        states = str(s["distinct_states"]) + ("" if s["exhaustive"] else f" (+{s['cut']} cut)")
        table.add_row(
            s["name"], s["model"], str(s["crash_points"]), states, str(len(s["invariants"])), shown
        )
    t = report["totals"]
    table.add_row(
        "[bold]total[/]",
        "",
        str(t["crash_points"]),
        str(t["distinct_states"]),
        "",
        f"[bold]{t['violations']}[/]",
        end_section=True,
    )
    console.print(table)
    ids = sorted({i for s in report["scenarios"] for i in s["invariants"]}, key=_order)
    console.print(f"invariants checked: {' '.join(ids)}", highlight=False, soft_wrap=True)
    ce = report.get("counterexample")
    if ce:
        cp = ce["crash_point"]
        console.print(
            f"[bold red]{ce['invariant']} ({ce['title']})[/] in [bold]{ce['scenario']}[/] under "
            f"{ce['model']}: crash point {cp['index']}, after {cp['last_done']}, "
            f"before {cp['operation']}",
            highlight=False,
            soft_wrap=True,
        )
        for name, what in ce["crash_state"].items():
            console.print(f"    {name}: {what}", highlight=False, soft_wrap=True)
        console.print(f"  load returned: {ce['load_returned']}", highlight=False, soft_wrap=True)
        console.print(f"  expected: {ce['expected']}", highlight=False, soft_wrap=True)
        console.print(f"  replay: {ce['replay']}", highlight=False, soft_wrap=True)


def _order(inv: str) -> int:
    order = ["R1", "V1", "P1", "E1", "E2", "D1", "C1", "F1", "S1", "S2"]
    return order.index(inv) if inv in order else len(order)


def print_zoo(zoo: Mapping[str, Any], console: Console) -> None:
    """Print the kill matrix: target × model → the invariants that killed it."""
    table = Table(title="crashpoint mutant zoo: kill matrix")
    table.add_column("target")
    for column in zoo["models"]:
        table.add_column(column)
    table.add_column("expected")
    table.add_column("verdict")
    for row in zoo["rows"]:
        verdict = row["verdict"]
        style = "green" if verdict in ("clean", "killed") else "bold red"
        cells = [", ".join(row["killed"][c]) or "-" for c in zoo["models"]]
        table.add_row(row["target"], *cells, row["expected"], f"[{style}]{verdict}[/]")
    console.print(table)
    bad = [r["target"] for r in zoo["rows"] if r["verdict"] not in ("clean", "killed")]
    if bad:
        console.print(f"[bold red]not as expected:[/] {', '.join(bad)}", soft_wrap=True)
    else:
        console.print("every mutant killed by its expected invariant; reference clean")

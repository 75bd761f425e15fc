"""The terminal summary: a rich table and the minimal counterexample."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from ..scenarios.engine.explore import got_label

__all__ = [
    "bounds_line",
    "hypothetical_line",
    "model_line",
    "not_examined_suffix",
    "print_summary",
    "print_zoo",
    "sample_line",
]


def sample_line(report: Mapping[str, Any]) -> str | None:
    """What a sampled run (``--sample``) left out, with its rate and seed: ``sampled:
    N distinct crash states not examined (rate R, seed S)``; None when nothing was
    sampled out (issue 24: a sampling mode with a stated seed and a count of what was not
    examined)."""
    n = report.get("totals", {}).get("not_examined", 0)
    if not n:
        return None
    given = sorted(
        {(s["sample"]["rate"], s["sample"]["seed"]) for s in report["scenarios"] if s.get("sample")}
    )
    how = "; ".join(f"rate {rate:g}, seed {seed}" for rate, seed in given)
    return (
        f"sampled: {n:,} distinct crash states not examined ({how}): not every crash state "
        "of these workloads was judged"
    )


def not_examined_suffix(s: Mapping[str, Any]) -> str:
    """A scenario's states column's tail: `` (+N cut)`` for a bound, `` (+N not
    examined)`` for a sample, both, or nothing for an exhaustive scenario."""
    tail = ""
    if s.get("cut"):
        tail += f" (+{s['cut']} cut)"
    if s.get("not_examined"):
        tail += f" (+{s['not_examined']} not examined)"
    return tail


def bounds_line(report: Mapping[str, Any]) -> str | None:
    """What the verdict covers, said next to it (issue 22): each workload's saves and
    largest value (``workload_bounds``), and whether every crash state of these
    workloads was explored (never "exhaustive" alone: other workloads may break the
    store). None for a report without ``workload_bounds`` (explore's)."""
    bounds = report.get("workload_bounds")
    if not bounds:
        return None
    parts = []
    for name, b in bounds.items():
        saves = b.get("saves", 0)
        if "max_saves" in b:
            parts.append(
                f"{name} ({b.get('examples', 0)} examples, at most {b['max_saves']} saves each) "
                f"values up to {b.get('value_bytes', 0):,} bytes"
            )
        else:
            parts.append(
                f"{name} {saves} save{'s' if saves != 1 else ''}, values up to "
                f"{b.get('value_bytes', 0):,} bytes"
            )
    cut = report.get("totals", {}).get("cut", 0)
    unsampled = report.get("totals", {}).get("not_examined", 0)
    covered = (
        "no crash state was examined: nothing was verified"
        if report.get("examined_nothing")
        else "every crash state of these workloads was explored under the models named"
        if not cut and not unsampled
        else "not every crash state of these workloads was explored ("
        + ", ".join(
            part
            for part in (
                f"{cut} combinations cut" if cut else "",
                f"{unsampled} distinct states sampled out" if unsampled else "",
            )
            if part
        )
        + ")"
    )
    skipped = report.get("fault_points_not_examined", 0)
    if skipped:
        covered += (
            f"; {skipped:,} crash points of faulted runs past the recovery path and the next "
            "save were not examined (--fault-crash-points all judges them)"
        )
    return f"workloads: {'; '.join(parts)}: {covered} (values are UTF-8 JSON bytes)"


def hypothetical_line(report: Mapping[str, Any]) -> str:
    """What the summary (and report.md) says of the hypothetical findings: how many,
    under which models, that they are not the verdict (FAULT-MODEL.md §3)."""
    n = report["totals"].get("hypothetical", 0)
    found: dict[str, set[str]] = {}
    for s in report["scenarios"]:
        found.setdefault(s["model"], set()).update(
            h["invariant"] for h in s.get("hypothetical", [])
        )
    where = [f"{model} {', '.join(sorted(ids))}" for model, ids in found.items() if ids]
    return (
        f"hypothetical: {n} finding(s) reachable only through the device options "
        f"(an atomic write below the block, a drive that ignores flushes; FAULT-MODEL.md §3), "
        f"listed apart in the reports, not the verdict nor the exit code: {'; '.join(where)}"
    )


def model_line(entry: Mapping[str, Any]) -> str:
    """One entry of a report's ``models`` as the summary names it: ``power-loss (family
    ext4: block_size 4096, max_states 256, writeback_bound 6)``."""
    options = ", ".join(f"{k} {v}" for k, v in entry.get("options", {}).items())
    family = entry.get("family", entry["name"])
    return f"{entry['name']} (family {family}{': ' + options if options else ''})"


def print_summary(
    report: Mapping[str, Any], console: Console, *, counterexample: bool = True
) -> None:
    """Print the scenario table (scenario, model, operations, crash points, distinct
    crash states, violations), the invariants checked and, if any (and
    ``counterexample``), the minimal counterexample."""
    table = Table(title=f"crashpoint: target {report['target']}, model {report['model']}")
    table.add_column("scenario", overflow="fold")
    table.add_column("model", overflow="fold")
    for name in ("operations", "crash points", "distinct states", "violations"):
        table.add_column(name, justify="right", overflow="fold")
    for s in report["scenarios"]:
        v = s["violation_count"]
        shown = f"[bold red]{v} ({', '.join(s['killed_by'])})[/]" if v else "0"
        states = str(s["distinct_states"]) + not_examined_suffix(s)
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
    assumed = [model_line(m) for m in report.get("models", ())]
    if assumed:
        console.print(f"models: {'; '.join(assumed)}", highlight=False, soft_wrap=True)
    if t.get("hypothetical"):
        console.print(hypothetical_line(report), highlight=False, soft_wrap=True, markup=False)
    covered = bounds_line(report)
    if covered is not None:
        console.print(covered, highlight=False, soft_wrap=True, markup=False)
    if t.get("cut"):
        console.print(
            f"[yellow]bounded: {t['cut']} combinations not explored[/] (an upper bound on the "
            "distinct crash states left out: not every crash state of these workloads was "
            "explored)",
            highlight=False,
            soft_wrap=True,
        )
    sampled = sample_line(report)
    if sampled is not None:
        console.print(f"[yellow]{sampled}[/]", highlight=False, soft_wrap=True)
    ce = report.get("counterexample")
    if ce and counterexample and report.get("incomplete"):
        from rich.markup import escape

        console.print(
            "[yellow]verdict incomplete: calls the model cannot represent: "
            f"{escape(', '.join(report['incomplete']))}[/]; the violations below were derived "
            "from a trace without them: they may not be reachable on a real disk",
            highlight=False,
            soft_wrap=True,
        )
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


def print_zoo(zoo: Mapping[str, Any], console: Console) -> None:
    """Print the kill matrix: target × model → the invariants that killed it."""
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


def render_files(crash_state: Mapping[str, str], indent: str = "    ") -> str:
    """One line per file of a rendered crash state; an empty disk says so."""
    if not crash_state:
        return f"{indent}(empty: no files)"
    return "\n".join(f"{indent}{name}: {what}" for name, what in crash_state.items())

"""``crashpoint verify TARGET --actors N``: concurrent actors explored schedule by schedule
(issue 25, SPEC.md §10.1).

``--actors N`` (default 1: no concurrency) runs the concurrent workloads
``concurrent-saves``, ``concurrent-update`` and ``save-while-load`` of the document kind
with N actors; ``--workload`` picks one (a concurrent workload named without
``--actors`` implies 2). ``--preemptions N`` is the bound (default 2), ``--schedule S``
replays one schedule (as a counterexample prints it), ``--last-writer-wins`` turns L1
off (and the report says so). Reports: the terminal, ``report.md`` and ``report.json``
in ``--out``, each stating the bound and what it left out; each counterexample shows
its schedule as lanes per actor, the preemptions, the crash point and the replay.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from rich.console import Console

from ._options import int_option

__all__ = ["add_concurrent_options", "run_concurrent", "wants_concurrent"]

_WORKLOADS = ("concurrent-saves", "concurrent-update", "save-while-load")


def add_concurrent_options(p: argparse.ArgumentParser) -> None:
    """Add ``--actors``, ``--preemptions``, ``--schedule`` and ``--last-writer-wins``."""
    p.add_argument(
        "--actors",
        type=int_option("--actors", 1),
        default=None,
        metavar="N",
        help="run N instances of the factory on one directory, interleaved schedule by "
        "schedule (default 1; the concurrent workloads: concurrent-saves, concurrent-update, "
        "save-while-load)",
    )
    p.add_argument(
        "--preemptions",
        type=int_option("--preemptions", 0),
        default=None,
        metavar="N",
        help="--actors: at most N preemptions per schedule (default 2); what the bound "
        "leaves out is counted",
    )
    p.add_argument(
        "--schedule",
        metavar="S",
        help="--actors: replay only this schedule (as a counterexample prints it)",
    )
    p.add_argument(
        "--last-writer-wins",
        action="store_true",
        help="--actors: the target documents last-writer-wins: lost updates (L1) are not judged",
    )


def wants_concurrent(args: argparse.Namespace) -> bool:
    """Whether this verify runs actors (``--actors`` > 1 or a concurrent workload named).

    Raises ValueError (a usage error) for concurrency options without it, or with
    ``--exec`` (not for now)."""
    named = [w for w in (args.workload or []) if w in _WORKLOADS]
    wanted = (args.actors or 1) > 1 or bool(named)
    if wanted and getattr(args, "exec", None) is not None:
        raise ValueError(
            "--actors does not apply to --exec (the strace runner) for now: give a "
            "package.module:factory or file.py:factory TARGET"
        )
    if not wanted:
        extra = [
            flag
            for flag, on in (
                ("--preemptions", args.preemptions is not None),
                ("--schedule", args.schedule is not None),
                ("--last-writer-wins", args.last_writer_wins),
            )
            if on
        ]
        if extra:
            raise ValueError(f"{extra[0]} applies to --actors N (N >= 2) only")
        return False
    if args.kind != "document":
        raise ValueError("--actors runs document targets only (--kind document) for now")
    other = [w for w in (args.workload or []) if w not in _WORKLOADS]
    if other:
        raise ValueError(
            f"workload {other[0]!r} is not a concurrent workload; with --actors: "
            + ", ".join(_WORKLOADS)
        )
    for flag, on in (
        ("--faults", args.faults),
        ("--fault", args.fault is not None),
        ("--shard", args.shard is not None),
        ("--baseline", bool(args.baseline)),
    ):
        if on:
            raise ValueError(f"{flag} does not apply to --actors for now")
    return True


def run_concurrent(
    args: argparse.Namespace, console: Console, err: Console, models: list[Any], out: str
) -> int:
    """The concurrent verify; returns the exit code (0 clean, 1 a finding or an
    incomplete verdict). Raises ValueError for bad input (a usage error)."""
    from .reports._lanes import lane_rows, lanes_html, lanes_markdown, lanes_page, lanes_text
    from .scenarios.engine.schedule import DEFAULT_PREEMPTIONS, parse_schedule
    from .scenarios.kinds.concurrent.kind import (
        ConcurrentKind,
        declares_last_writer_wins,
        explore_concurrent,
    )
    from .scenarios.kinds.document.kind import DOC_BASE
    from .scenarios.targets.user import load_factory, make_runner

    actors = args.actors if args.actors and args.actors > 1 else 2
    if actors > 10:
        raise ValueError(f"--actors must be <= 10, not {actors}")
    bound = DEFAULT_PREEMPTIONS if args.preemptions is None else args.preemptions
    workloads = list(dict.fromkeys(args.workload or _WORKLOADS))
    schedule = None
    if args.schedule is not None:
        if len(workloads) != 1:
            raise ValueError("--schedule replays one workload's schedule: name it with --workload")
        schedule = parse_schedule(args.schedule, actors)
    factory = load_factory(args.target)
    declared = declares_last_writer_wins(factory)
    lww = bool(args.last_writer_wins) or declared
    runner = make_runner(factory, DOC_BASE, spec=args.target, timeout=args.timeout, seed=args.seed)
    results = []
    with runner:
        kind = ConcurrentKind(
            runner,
            args.target,
            last_writer_wins=lww,
            seed=args.seed,
            preemptions=bound,
        )
        for name in workloads:
            res = explore_concurrent(
                kind,
                name,
                actors=actors,
                models=models,
                schedule=schedule,
                crash_point=args.crash_point,
            )
            results.append(res)
        shown: list[dict[str, Any]] = []
        md: list[str] = [f"# crashpoint verify {args.target} --actors {actors}", ""]
        lines: list[str] = []
        if lww:
            by = "--last-writer-wins" if args.last_writer_wins else "the target"
            md.append(f"L1 (no-lost-update) is not judged: last-writer-wins declared by {by}.\n")
            lines.append(f"L1 (no-lost-update) not judged: last-writer-wins declared by {by}")
        page: list[tuple[str, str, str]] = []
        for res in results:
            words = res.exploration.words()
            line = (
                f"{res.workload}: {words}; {res.crash_states} crash states judged under "
                f"{', '.join(m.name for m in models)}"
            )
            lines.append(line)
            md.append(f"## {res.workload}\n\n{line}\n")
            page.append((res.workload, line, ""))
            seen: set[tuple[str, str]] = set()
            for w, e in res.findings:
                for c in e.counterexamples:
                    if (c.invariant, e.model) in seen:
                        continue
                    seen.add((c.invariant, e.model))
                    run = kind.record(w, None)
                    rows = lane_rows(run, c.crash_point)
                    pre = run.data.outcome.preemptions
                    shown.append(
                        {
                            "workload": res.workload,
                            "invariant": c.invariant,
                            "model": e.model,
                            "schedule": "".join(map(str, w.schedule)) or "-",
                            "preemptions": pre,
                            "crash_point": c.crash_point,
                            "got": c.got,
                            "replay": c.replay,
                        }
                    )
                    text = c.render()
                    lines.append(text)
                    lines.append(f"  schedule ({pre} preemptions, bound {bound}):")
                    lines.append("    " + lanes_text(rows).replace("\n", "\n    "))
                    md.append(f"### {c.invariant} under {e.model}\n")
                    md.append("```\n" + text + "\n```\n")
                    md.append(f"Schedule ({pre} preemptions, bound {bound}):\n")
                    md.append(lanes_markdown(rows) + "\n")
                    page.append(
                        (
                            f"{c.invariant} under {e.model}: schedule {pre} preemptions, "
                            f"bound {bound}",
                            text,
                            lanes_html(rows),
                        )
                    )
    incomplete = sorted(
        {u for res in results for rs in res.results.values() for r in rs for u in r.unsupported}
    )
    examined = sum(res.crash_states for res in results)
    ok = not shown and not incomplete and examined > 0
    summary = {
        "target": args.target,
        "actors": actors,
        "preemption_bound": bound,
        "last_writer_wins": lww,
        "last_writer_wins_declared_by": (
            "flag" if args.last_writer_wins else "target" if declared else None
        ),
        "models": [m.name for m in models],
        "workloads": [
            {
                "workload": res.workload,
                "schedules": res.exploration.schedules,
                "distinct_traces": res.exploration.distinct,
                "beyond_bound": res.exploration.beyond_bound,
                "beyond_limit": res.exploration.beyond_limit,
                "exhaustive": res.exploration.exhaustive,
                "crash_states": res.crash_states,
            }
            for res in results
        ],
        "findings": shown,
        "incomplete": incomplete,
        "ok": ok,
    }
    if incomplete:
        lines.append("incomplete verdict: " + "; ".join(incomplete))
        md.append("Incomplete verdict: " + "; ".join(incomplete) + "\n")
    if examined == 0:
        lines.append("nothing examined: no crash state was judged")
    verdict = "OK" if ok else "FAIL" if shown else "INCOMPLETE"
    lines.append(f"{verdict}: {len(shown)} findings (at most {bound} preemptions per schedule)")
    md.append(f"**{verdict}**: {len(shown)} findings (at most {bound} preemptions per schedule)\n")
    with open(os.path.join(out, "report.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    with open(os.path.join(out, "report.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md))
    title = f"crashpoint verify {args.target} --actors {actors}: {verdict}"
    with open(os.path.join(out, "report.html"), "w", encoding="utf-8") as f:
        f.write(lanes_page(title, page))
    for text in lines:
        console.print(text, markup=False, highlight=False, emoji=False)
    return 0 if ok else 1

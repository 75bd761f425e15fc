"""``crashpoint report merge R1 R2 … --out DIR``: the shards of one run, merged (issue 21).

A CI matrix runs ``crashpoint explore --shard K/N`` (or ``crashpoint verify --shard K/N``)
on N machines; each writes a report of its shard. The merge reads the N ``report.json``
files (or the directories holding them), checks they are the N shards of one run (the
run id each carries) and writes report.json, report.md and report.html in ``--out`` as the
unsharded run would have (:mod:`crashpoint.reports._shards`). Exit codes as the run's:
0 clean, 1 a violation (or an incomplete verdict, or nothing examined), 2 bad input: a
report that cannot be read, shards of different runs, a shard given twice or missing.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from rich.console import Console

from ._options import prepare_out, print_to_stdout

__all__ = ["add_report_parser", "run_report"]

EXIT_OK, EXIT_VIOLATION = 0, 1


class ReportUsageError(Exception):
    """Bad input: one line, exit 2."""


def add_report_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``report`` subcommand (``report merge``) to the subparsers ``sub``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "report",
        help="work on reports: merge the shards of a run",
        description="Work on crashpoint reports.",
    )
    verbs = p.add_subparsers(dest="report_command", metavar="ACTION", parser_class=type(p))
    m = verbs.add_parser(
        "merge",
        help="merge the reports of the N shards of one run (--shard K/N) into its report",
        description="Merge the report.json of every shard of one run (explore or verify "
        "with --shard K/N) into the report the unsharded run writes: report.json, report.md "
        "and report.html in --out. Refuses reports of different runs, a shard given twice "
        "or missing. Exit codes: 0 clean, 1 violation, incomplete verdict or nothing "
        "examined, 2 bad input.",
    )
    m.add_argument(
        "reports",
        nargs="+",
        metavar="REPORT",
        help="a shard's report.json, or the directory holding it",
    )
    m.add_argument(
        "--out",
        default="crashpoint-report",
        metavar="DIR",
        help="directory for the merged reports (default ./crashpoint-report)",
    )
    return p


def run_report(args: argparse.Namespace, console: Console, err: Console) -> int:
    """Run ``crashpoint report ACTION``; returns the exit code (bad input: one line, 2)."""
    from ._options import run_guarded

    if args.report_command != "merge":
        err.print("crashpoint: error: an action is required: merge", markup=False)
        err.print("see `crashpoint report --help`", markup=False)
        return 2
    return run_guarded(
        "report merge",
        lambda: _merge(args, console),
        ReportUsageError,
        out=args.out,
        target=None,
        err=err,
    )


def _read(path: str) -> dict[str, Any]:
    """The report at ``path`` (a report.json, or a directory holding one)."""
    file = os.path.join(path, "report.json") if os.path.isdir(path) else path
    try:
        with open(file, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as exc:
        raise ReportUsageError(f"cannot read {file!r}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ReportUsageError(f"{file!r} is not a crashpoint report ({exc})") from None
    if not isinstance(report, dict) or report.get("tool") != "crashpoint":
        raise ReportUsageError(f"{file!r} is not a crashpoint report")
    return report


def _thread_exceptions(shards: list[dict[str, Any]]) -> dict[str, object]:
    """The merged report's ``thread_exception_count`` (the shards' summed: each counted
    what its own run raised) and ``thread_exceptions`` (the distinct ones, in shard order,
    at most :data:`~crashpoint._options.THREAD_EXCEPTIONS_LISTED`)."""
    from ._options import thread_report

    listed: list[dict[str, str]] = []
    for shard in shards:
        for caught in shard.get("thread_exceptions") or []:
            if caught not in listed:
                listed.append(caught)
    keys = thread_report(listed)
    keys["thread_exception_count"] = sum(int(r.get("thread_exception_count") or 0) for r in shards)
    return keys


def _merge(args: argparse.Namespace, console: Console) -> int:
    from . import __version__
    from ._build import explore_report, listed_details, write_all
    from .reports import build_verify_report, print_summary
    from .reports._shards import MergeError, merge_shards

    named = [(path, _read(path)) for path in args.reports]
    kinds = {str(r.get("kind")) for _, r in named if "kind" in r}
    if kinds:  # a verify's: its kind registers the invariants its findings name
        from .scenarios.jobs import verify  # noqa: F401  (registers the built-in kinds)
        from .scenarios.kinds.registry import get_kind

        for kind in sorted(kinds):
            try:
                get_kind(kind)
            except (KeyError, ValueError) as exc:
                raise ReportUsageError(str(exc.args[0])) from None
    try:
        run = merge_shards(named)
    except MergeError as exc:
        raise ReportUsageError(str(exc)) from None
    if run.version != __version__:
        raise ReportUsageError(
            f"the shards were written by crashpoint {run.version}, this is {__version__}: "
            "merge them with the version that wrote them"
        )
    try:
        out = prepare_out(args.out)
    except ValueError as exc:
        raise ReportUsageError(str(exc)) from None
    details: dict[str, Any] | None
    if run.verify is None:
        report, details = explore_report(
            run.results, model=run.model, target=run.target, run_id=run.run_id, details=run.details
        )
        failed = bool(report["totals"]["violations"] or report.get("examined_nothing"))
    else:
        result = run.verify
        report = build_verify_report(result, model=run.model)
        from .scenarios.jobs.details import carry_values

        carry_values(report, [r for _, r in named])
        report.update(_thread_exceptions([r for _, r in named]))
        details = listed_details(report, run.details) or None
        failed = result.incomplete or bool(result.failed_checks or result.counterexamples)
    try:
        paths = write_all(report, out, details)
    except OSError as exc:
        raise ReportUsageError(f"cannot write the reports to {out!r}: {exc}") from None

    def show() -> None:
        print_summary(report, console)
        console.print(
            f"merged {len(named)} shards of run {run.run_id}: {paths[0]}, {paths[1]}, {paths[2]}",
            markup=False,
        )

    print_to_stdout(show)
    return EXIT_VIOLATION if failed else EXIT_OK

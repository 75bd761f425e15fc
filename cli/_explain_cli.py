"""``crashpoint explain EVIDENCE --target TARGET``: a field crash report explained (issue 12).

EVIDENCE is a directory, a ``.tar``/``.tar.gz``/``.zip`` archive of one, or a JSON
manifest. Exit codes: 0 the target is not at fault (the report says whether the state
is reachable at all, and by what); 1 the target is at fault (its write path reaches
the state and an invariant fails there, or its load mishandles the evidence); 2 usage
or input error (one line: an unreadable archive, path traversal inside one, a
manifest that does not parse, an unknown target). Nothing is written to the evidence;
reports go to ``--out`` (report.json, report.md, report.html).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from rich.console import Console

from ._options import KindChoices, int_option, prepare_out, print_to_stdout

__all__ = ["add_explain_parser", "run_explain"]

EXIT_OK, EXIT_AT_FAULT = 0, 1  # a usage error is 2 (run_guarded)


class ExplainUsageError(Exception):
    """Bad input: one line, exit 2."""


def add_explain_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``explain`` subcommand to the subparsers ``sub``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "explain",
        help="explain the files a crash left on a device: cause, invariant, regression test",
        description="Load the evidence (a directory, a .tar/.tar.gz/.zip of one, or a JSON "
        "manifest of names, sizes and hashes) on a copy with a fresh target, search the "
        "crash-state space for states of the same structure, and say which invariant fails "
        "and what a correct storage does. Exit codes: 0 the target is not at fault, 1 it is "
        "(its write path reaches the state and an invariant fails, or its load mishandles "
        "the evidence), 2 usage or input error.",
    )
    p.add_argument("evidence", metavar="EVIDENCE", help="directory, .tar/.tar.gz/.zip, or .json")
    p.add_argument(
        "--target",
        required=True,
        metavar="TARGET",
        help="reference, seed, mutant:NAME, or package.module:factory / file.py:factory",
    )
    p.add_argument(
        "--kind",
        choices=KindChoices(),
        metavar="KIND",  # (argparse would list the choices, importing every kind, at start)
        help="state-storage (default for reference, seed, mutants), document "
        "(default for a user target), or a plug-in kind (CRASHPOINT_KINDS, as verify)",
    )
    p.add_argument(
        "--workload",
        metavar="NAME|MODULE:FN",
        help="a workload to search first: a catalogue name, gen:STEP,..., or module:fn",
    )
    p.add_argument(
        "--model",
        default="all",
        metavar="NAME[,NAME...]|all",
        help="persistence models to search (default all)",
    )
    p.add_argument(
        "--out",
        default="crashpoint-report",
        metavar="DIR",
        help="directory for report.json, report.md and report.html (default ./crashpoint-report)",
    )
    p.add_argument("--session", metavar="ID", help="the session id (default: from the file names)")
    p.add_argument("--emit-test", metavar="PATH", help="write a self-contained pytest file here")
    p.add_argument("--seed", type=int_option("--seed", 0), default=0, metavar="N", help="seed (0)")
    p.add_argument(
        "--generated",
        type=int_option("--generated", 0),
        default=12,
        metavar="N",
        help="hypothesis-generated workloads to try (12)",
    )
    return p


def run_explain(args: argparse.Namespace, console: Console, err: Console) -> int:
    """Run ``crashpoint explain``; returns the exit code (usage errors: one line, 2)."""
    from ._options import run_guarded

    return run_guarded(
        "explain",
        lambda: _caught(args, console, err),
        ExplainUsageError,
        out=args.out,
        target=args.target,
        err=err,
    )


def _caught(args: argparse.Namespace, console: Console, err: Console) -> int:
    """:func:`_run` with what the target's threads raise kept for the report and said in
    one line on stderr (as verify: :func:`~crashpoint._options.thread_exceptions`)."""
    from ._options import thread_exceptions, thread_line

    with thread_exceptions() as caught:
        code = _run(args, console, caught)
    line = thread_line(caught)
    if line is not None:
        err.print(line, markup=False, highlight=False, emoji=False)
    return code


def _prepare(path: str, evidence: str) -> str:
    if os.path.exists(path) and not os.path.isdir(path):
        raise ExplainUsageError(f"--out {path!r} exists and is not a directory")
    real = os.path.realpath(path)
    ev = os.path.realpath(evidence)
    if os.path.isdir(ev) and (real == ev or real.startswith(ev + os.sep)):
        raise ExplainUsageError(f"--out {path!r} is inside the evidence: nothing is written there")
    try:
        prepare_out(path)
    except ValueError as exc:
        raise ExplainUsageError(str(exc)) from None
    return path


def _run(args: argparse.Namespace, console: Console, caught: list[dict[str, str]]) -> int:
    from ._options import parse_models, thread_report
    from .scenarios.explain.evidence import EvidenceError, load_evidence
    from .scenarios.explain.search import emit_test, explain
    from .scenarios.targets.user import BadTarget, TargetTimeout

    try:  # the parser explore uses: an empty name in a list is refused, 'all' stands alone
        models = parse_models(args.model)
    except ValueError as exc:
        raise ExplainUsageError(str(exc)) from None
    if args.session is not None and not args.session:
        raise ExplainUsageError(
            "--session: an empty session id (leave it out to take the id from the file names)"
        )
    try:
        evidence = load_evidence(args.evidence)
    except EvidenceError as exc:
        raise ExplainUsageError(str(exc)) from None
    if args.emit_test is not None:
        if args.kind not in (None, "document", "state-storage"):
            raise ExplainUsageError(
                f"--emit-test writes tests for --kind document and state-storage, not {args.kind}"
            )
        emit_dir = os.path.dirname(os.path.abspath(args.emit_test))
        if not os.path.isdir(emit_dir):
            raise ExplainUsageError(f"--emit-test {args.emit_test!r}: no such directory")
        if os.path.isdir(args.emit_test):
            raise ExplainUsageError(
                f"--emit-test {args.emit_test!r} is a directory: give the test file's path"
            )
        if os.path.isdir(args.evidence) and os.path.realpath(args.emit_test).startswith(
            os.path.realpath(args.evidence) + os.sep
        ):
            raise ExplainUsageError("--emit-test is inside the evidence: nothing is written there")
    out = _prepare(args.out, args.evidence)
    try:
        ex = explain(
            evidence,
            target=args.target,
            kind=args.kind,
            workload=args.workload,
            models=models,
            session=args.session,
            seed=args.seed,
            bound=args.generated,
        )
    except BadTarget as exc:
        raise ExplainUsageError(str(exc)) from None
    except TargetTimeout as exc:
        raise ExplainUsageError(f"target {args.target!r}: {exc}") from None
    except KeyError as exc:
        raise ExplainUsageError(str(exc.args[0])) from None
    except Exception as exc:
        from .core import StateError

        if isinstance(exc, StateError):  # an invalid --session
            raise ExplainUsageError(f"--session: {exc.message}") from None
        raise
    report = ex.as_dict()
    report.update(thread_report(caught))
    if args.emit_test is not None:
        from .reports._publish import write_text

        try:
            write_text(emit_test(ex, path=args.emit_test), args.emit_test)
        except OSError as exc:
            raise ExplainUsageError(f"cannot write --emit-test {args.emit_test!r}: {exc}") from None
        report["emitted_test"] = args.emit_test
    from .reports._explain_md import render_explain_markdown
    from .reports._html import write_reports

    paths = [os.path.join(out, n) for n in ("report.json", "report.md", "report.html")]
    try:
        write_reports(paths, report, render_explain_markdown(report))  # together (issue 21)
    except OSError as exc:
        raise ExplainUsageError(f"cannot write the reports to {out!r}: {exc}") from None
    from .reports._explain_md import explain_summary, terminal_safe

    def show() -> None:  # the reports are written: a closed stdout loses nothing
        console.print(explain_summary(report), markup=False, highlight=False, emoji=False)
        console.print(terminal_safe(f"reports: {', '.join(paths)}"), markup=False, emoji=False)
        if args.emit_test is not None:
            console.print(
                terminal_safe(f"emitted test: {args.emit_test}"), markup=False, emoji=False
            )

    print_to_stdout(show)
    return EXIT_AT_FAULT if ex.exit_code else EXIT_OK

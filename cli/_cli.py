"""The command line: ``crashpoint explore``.

Exit codes (for CI): 0 no violation, 1 a violation was found (or, with ``--zoo``, a
mutant survived), 2 a usage or input error. Never a traceback: errors are one
line on standard error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from .faultfs import PersistenceModel
    from .scenarios import ExplorationResult, Target, Workload
    from .scenarios._parallel import Task

__all__ = ["main"]

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: reported on one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def _shard(text: str) -> tuple[int, int]:
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shard must look like K/N, not {text!r}") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"shard K/N needs 1 <= K <= N, not {text!r}")
    return k, n


def _nonneg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


def _positive(text: str) -> int:
    value = _nonneg(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {value}")
    return value


def _with_progress(
    tasks: Sequence[Task], jobs: int, run: Callable[..., list[ExplorationResult]]
) -> list[ExplorationResult]:
    """Run with a rich progress bar on a terminal, quietly otherwise."""
    if not sys.stderr.isatty():
        return run(tasks, jobs=jobs)
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task_id = bar.add_task("exploring", total=len(tasks))
        return run(
            tasks, jobs=jobs, progress=lambda done, total: bar.update(task_id, completed=done)
        )


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="crashpoint", description=__doc__.split("\n\n")[0] if __doc__ else "")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    ex = sub.add_parser(
        "explore",
        help="explore every crash point of the workload catalogue",
        description="Record each workload once, derive every crash state under the "
        "persistence model, reboot each on a fresh storage and check the invariants.",
    )
    ex.add_argument(
        "--scenario",
        action="append",
        metavar="NAME",
        help="a workload of the catalogue (repeatable; default: all)",
    )
    ex.add_argument(
        "--model",
        default=None,
        metavar="MODEL",
        help="persistence model: process-crash (default; all with --zoo), "
        "power-loss, power-loss-reorder, or all",
    )
    ex.add_argument(
        "--target",
        default="reference",
        metavar="TARGET",
        help="reference (default), seed, or mutant:NAME",
    )
    ex.add_argument(
        "--out",
        default="crashpoint-report",
        metavar="DIR",
        help="directory for report.json and report.md (default ./crashpoint-report)",
    )
    ex.add_argument(
        "--list", action="store_true", help="list scenarios, models, targets and mutants, then exit"
    )
    ex.add_argument(
        "--crash-point",
        type=_nonneg,
        metavar="K",
        help="only crash point K (replay a counterexample)",
    )
    ex.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="only slice K of N of the crash-state space (CI matrices)",
    )
    ex.add_argument(
        "--faults",
        action="store_true",
        help="also re-run each workload with a fault armed at every operation "
        "(ENOSPC, EDQUOT, EIO, EACCES, EROFS, EXDEV, short write, lost fsync)",
    )
    ex.add_argument(
        "--fault",
        metavar="AT:ERRNO",
        help="only this one fault, e.g. 3:ENOSPC or 5:short-write (replay)",
    )
    ex.add_argument(
        "--jobs",
        type=_positive,
        metavar="N",
        help="worker processes (default: all cores); the report is the same for any N",
    )
    ex.add_argument(
        "--zoo",
        action="store_true",
        help="run every mutant under every model and faults; print the kill matrix; "
        "exit 1 if a mutant survives or the reference shows a violation",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    # Logs and CI are not terminals: give tables room rather than rich's 80 columns.
    width = None if sys.stdout.isatty() else 160
    console = Console(stderr=False, highlight=False, soft_wrap=True, width=width)
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        args = _parser().parse_args(argv)
        if args.command != "explore":
            _parser().print_help()
            return EXIT_USAGE
        return _explore(args, console)
    except UsageError as exc:
        err.print(f"crashpoint: error: {exc}", markup=False)
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except KeyboardInterrupt:
        err.print("crashpoint: interrupted", markup=False)
        return EXIT_USAGE
    except Exception as exc:  # never a traceback
        err.print(f"crashpoint: internal error: {type(exc).__name__}: {exc}", markup=False)
        return EXIT_USAGE


def _resolve(
    args: argparse.Namespace,
) -> tuple[list[Workload], list[PersistenceModel], Target]:
    from .faultfs import MODELS
    from .scenarios import SCENARIOS, get_target

    if args.model is None:
        args.model = "all" if args.zoo else "process-crash"
    names = args.scenario or list(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise UsageError(f"unknown scenario {unknown[0]!r}; see `crashpoint explore --list`")
    if args.model == "all":
        models = list(MODELS.values())
    elif args.model in MODELS:
        models = [MODELS[args.model]]
    else:
        raise UsageError(f"unknown model {args.model!r}; known: {', '.join(MODELS)}, all")
    try:
        target = get_target(args.target)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    return [SCENARIOS[n] for n in names], models, target


def _prepare_out(path: str) -> str:
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"--out {path!r} exists and is not a directory")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create --out directory {path!r}: {exc.strerror}") from None
    return path


def _list(console: Console) -> int:
    from .faultfs import MODELS
    from .scenarios import MUTANTS, SCENARIOS, TARGETS

    console.print("[bold]scenarios[/]")
    for w in SCENARIOS.values():
        console.print(f"  {w.name:28} {w.description}")
    console.print("[bold]models[/]")
    for m in MODELS.values():
        console.print(f"  {m.name:28} {m.source}")
    console.print("[bold]targets[/]")
    for t in TARGETS.values():
        console.print(f"  {t.name:28} {t.description}")
    console.print("[bold]mutants[/] (--target mutant:NAME; expected killer)")
    for name, t in MUTANTS.items():
        inv, model = t.expected or ("?", "?")
        console.print(f"  {name:28} {inv} under {model}: {t.description}")
    return EXIT_OK


def _explore(args: argparse.Namespace, console: Console) -> int:
    if args.list:
        return _list(console)
    workloads, models, target = _resolve(args)
    fault = None
    if args.fault is not None:
        from .scenarios import parse_fault

        try:
            fault = parse_fault(args.fault)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    out = _prepare_out(args.out)
    if args.zoo:
        return _zoo(args, workloads, models, out, console)
    from .reports import build_report, print_summary, write_json, write_markdown
    from .scenarios._parallel import default_jobs, plan_tasks, run_tasks

    tasks = plan_tasks(
        [w.name for w in workloads],
        [m.name for m in models],
        target.name,
        crashes=fault is None,
        faults=args.faults,
        only_fault=args.fault,
        crash_point=args.crash_point,
        shard=args.shard,
    )
    jobs = args.jobs if args.jobs is not None else default_jobs()
    results = _with_progress(tasks, jobs, run_tasks)
    report = build_report(results, model=args.model, target=target.name)
    write_json(report, os.path.join(out, "report.json"))
    write_markdown(report, os.path.join(out, "report.md"))
    print_summary(report, console)
    console.print(f"reports: {os.path.join(out, 'report.json')}, {os.path.join(out, 'report.md')}")
    if args.crash_point is not None:
        for r in results:
            for v in r.violations:
                console.print(v.render(), markup=False)
    return EXIT_VIOLATION if report["totals"]["violations"] else EXIT_OK


def _zoo(
    args: argparse.Namespace,
    workloads: Sequence[Workload],
    models: Sequence[PersistenceModel],
    out: str,
    console: Console,
) -> int:
    from .reports import build_report, print_zoo, write_json, write_markdown, zoo_dict
    from .scenarios import kill_matrix

    from .scenarios._parallel import default_jobs

    rows, reference = kill_matrix(
        models=models,
        workloads=workloads,
        jobs=args.jobs if args.jobs is not None else default_jobs(),
        progress=lambda name: console.print(f"exploring {name} …", style="dim"),
    )
    zoo = zoo_dict(rows, [m.name for m in models])
    report = build_report(reference, model=args.model, target="reference", extra={"zoo": zoo})
    write_json(report, os.path.join(out, "report.json"))
    write_markdown(report, os.path.join(out, "report.md"))
    print_zoo(zoo, console)
    console.print(f"reports: {os.path.join(out, 'report.json')}, {os.path.join(out, 'report.md')}")
    return EXIT_OK if zoo["ok"] else EXIT_VIOLATION

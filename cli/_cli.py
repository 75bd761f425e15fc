"""The command line: crashpoint explore.

Exit codes (for CI): 0 no violation; 1 a violation was found (or, with ``--zoo``, a
mutant was not killed as expected); 2 a usage or input error, including an output
directory that cannot be written; 130 interrupted (Ctrl-C); 143 terminated (SIGTERM).
Never a traceback: a usage error is one line with the reason and one hint line on
standard error (:func:`print_usage_error`).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, NoReturn, TypeVar

from rich.console import Console

from . import __version__
from ._build import explore_report, write_all
from ._options import (
    ProgressLine,
    Terminated,
    add_device_options,
    add_sample_options,
    cap_jobs,
    device_models,
    discard_out,
    glue_dash_values,
    open_closed_streams,
    parse_models,
    parse_shard,
    prepare_out,
    print_to_stdout,
    sampled_models,
    stop_on_signals,
)

if TYPE_CHECKING:
    from .faultfs import Fault, FaultKind, Op, OpKind, PersistenceModel
    from .scenarios import Target, Workload

__all__ = ["main", "run"]

T = TypeVar("T")

EXIT_OK, EXIT_VIOLATION, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 2, 130, 143


class UsageError(Exception):
    """Bad input from the user: reported on one line, exit code 2.

    ``UsageError(reason)`` or ``UsageError(reason, prog)``: ``prog`` (e.g.
    ``"crashpoint explore"``) names the command whose ``--help`` the hint points to."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message, self.prog)


def print_usage_error(err: Console, reason: str, prog: str = "crashpoint") -> None:
    """A usage error as the user sees it: the reason on one line, then one hint line
    (no usage block: ``--help`` has it)."""
    reason = " ".join(reason.split())
    err.print(f"crashpoint: error: {reason}", markup=False)
    err.print(f"see `{prog} --help`", markup=False)


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    """The long options of ``parser`` and its subcommands that take one value."""
    found: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _value_options(sub)
        elif action.option_strings and action.nargs is None:
            found.update(o for o in action.option_strings if o.startswith("--"))
    return found


def _ascii_int(text: str, what: str) -> int:
    text = text.strip()
    if not (text.isascii() and text.lstrip("-").isdigit()):
        raise argparse.ArgumentTypeError(f"{what} must be an integer, not {text!r}")
    return int(text)


def _shard(text: str) -> tuple[int, int]:
    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _crash_point(text: str) -> int:
    value = _ascii_int(text, "--crash-point")
    if value < 0:
        raise argparse.ArgumentTypeError(f"--crash-point must be >= 0, not {value}")
    return value


def _reorder_bound(text: str) -> int:
    value = _ascii_int(text, "--reorder-bound")
    if value < 0:
        raise argparse.ArgumentTypeError(f"--reorder-bound must be >= 0, not {value}")
    return value


def _jobs(text: str) -> int:
    value = _ascii_int(text, "--jobs")
    if value < 1:
        raise argparse.ArgumentTypeError(f"--jobs must be >= 1, not {value}")
    return value


def with_progress(run: Callable[[Callable[[int, int], None]], T], err: Console | None = None) -> T:
    """``run(progress)`` with a rich progress bar on a terminal, and without one a
    :class:`~crashpoint._options.ProgressLine` on standard error every few seconds (CI
    logs); ``progress(done, total)`` is the callback ``run`` reports to."""
    if not sys.stderr.isatty():
        console = err or Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

        def emit(line: str) -> None:
            console.print(line, markup=False, highlight=False)

        with ProgressLine("exploring", 0, emit) as line:
            return run(line)
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task_id = bar.add_task("exploring", total=None)
        return run(lambda done, total: bar.update(task_id, completed=done, total=total))


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="crashpoint",
        description="A crash-consistency test harness and fault injector.",
    )
    parser.add_argument("--version", action="version", version=f"crashpoint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    ex = sub.add_parser(
        "explore",
        help="explore every crash point of the workload catalogue",
        description="Record each workload once, derive every crash state under the "
        "persistence model, reboot each on a fresh storage and check the invariants. "
        "Exit codes: 0 no violation, 1 violation found, 2 usage or input error, "
        "130 interrupted, 143 terminated. "
        "SPEC.md and FAULT-MODEL.md, which messages cite, are installed with the package "
        "(--list prints where).",
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
        help="persistence model: process-crash (default), the file-system families "
        "ext4, xfs, btrfs, posix (docs/models.md), power-loss and power-loss-reorder "
        "(aliases of ext4 and posix), a comma-separated list, or all (process-crash and "
        "the four families); --zoo: process-crash,ext4,posix by default",
    )
    ex.add_argument(
        "--target",
        default=None,
        metavar="TARGET",
        help="reference (default), seed, or mutant:NAME",
    )
    ex.add_argument(
        "--out",
        default="crashpoint-report",
        metavar="DIR",
        help="directory for report.json, report.md and report.html (default ./crashpoint-report)",
    )
    ex.add_argument(
        "--list", action="store_true", help="list scenarios, models, targets and mutants, then exit"
    )
    ex.add_argument(
        "--crash-point",
        type=_crash_point,
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
        "(ENOSPC, EDQUOT, EIO, EACCES, EROFS, EXDEV, ENOENT, short-write, short-count, "
        "fsync-lost)",
    )
    ex.add_argument(
        "--fault",
        metavar="AT:NAME",
        help="only this one fault (replay): AT an operation index, NAME an errno above, "
        "short-write, short-count, or fsync-lost (alias fsyncgate), e.g. 3:ENOSPC",
    )
    ex.add_argument(
        "--jobs",
        type=_jobs,
        metavar="N",
        help="worker processes (default: 1 for a small run, all cores for a large one); "
        "the report is the same for any N",
    )
    ex.add_argument(
        "--reorder-bound",
        type=_reorder_bound,
        metavar="N",
        help="posix (power-loss-reorder): omit at most N pending operations together (default: "
        "exhaustive up to 2^16 combinations per crash point, bounded beyond); what a bound "
        "leaves out is counted and reported",
    )
    add_device_options(ex)
    add_sample_options(ex)
    ex.add_argument(
        "--require-exhaustive",
        action="store_true",
        help="exit 1 when a bound left combinations unexplored (by default a bounded run "
        "keeps its exit code and says 'bounded: N combinations not explored')",
    )
    ex.add_argument(
        "--zoo",
        action="store_true",
        help="run every mutant under every model and faults; print the kill matrix; "
        "exit 1 if a mutant is not killed as expected or the reference shows a violation",
    )
    from ._verify_cli import add_verify_parser

    add_verify_parser(sub)
    from ._explain_cli import add_explain_parser

    add_explain_parser(sub)
    from ._report_cli import add_report_parser

    add_report_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    open_closed_streams()
    # Logs and CI are not terminals: give tables room rather than rich's 80 columns.
    # No emoji codes: ":name:" in a session id or a path is printed as written (and rich
    # then never loads its emoji table).
    width = None if sys.stdout.isatty() else 160
    console = Console(stderr=False, highlight=False, soft_wrap=True, width=width, emoji=False)
    err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        with stop_on_signals():
            return _main(parser, argv, console, err)
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
        return _interrupted(err, exc)


@contextlib.contextmanager
def _no_library_caches() -> Iterator[None]:
    """No command leaves hypothesis's ``.hypothesis/`` caches in the working
    directory (:func:`~crashpoint.scenarios.engine.caches.hypothesis_keeps_no_files`);
    imported only once a command runs, so ``--help`` stays free of hypothesis."""
    from .scenarios.engine.caches import hypothesis_keeps_no_files

    with hypothesis_keeps_no_files():
        yield


def _interrupted(err: Console, exc: KeyboardInterrupt) -> int:
    """Ctrl-C: one line, 130; SIGTERM (:class:`~crashpoint._options.Terminated`): one
    line, 143."""
    if isinstance(exc, Terminated):
        err.print("crashpoint: terminated", markup=False)
        return EXIT_TERMINATED
    err.print("crashpoint: interrupted", markup=False)
    return EXIT_INTERRUPTED


def _main(parser: argparse.ArgumentParser, argv: list[str], console: Console, err: Console) -> int:
    command, out = "crashpoint", None
    try:
        args, extra = parser.parse_known_args(glue_dash_values(argv, _value_options(parser)))
        command = f"crashpoint {args.command}" if args.command else command
        out = getattr(args, "out", None)
        if extra:
            raise UsageError(f"unrecognized arguments: {' '.join(extra)}", command)
        if args.command not in ("explore", "verify", "explain", "report"):
            raise UsageError(
                "a command is required: explore, verify, explain or report", "crashpoint"
            )
        with _no_library_caches():
            if args.command == "verify":
                from ._verify_cli import run_verify

                return run_verify(args, console, err)
            if args.command == "explain":
                from ._explain_cli import run_explain

                return run_explain(args, console, err)
            if args.command == "report":
                from ._report_cli import run_report

                return run_report(args, console, err)
            return _explore(args, console, err)
    except UsageError as exc:
        print_usage_error(err, exc.args[0], exc.args[1] if len(exc.args) > 1 else command)
        if isinstance(out, str):  # the --out directories this run made, left empty
            discard_out(out)
        return EXIT_USAGE
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0)
    except Exception as exc:  # never a traceback
        from .scenarios.kinds.registry import PluginError

        if isinstance(exc, PluginError):  # CRASHPOINT_KINDS names a module that won't import
            print_usage_error(err, str(exc), command)
            if isinstance(out, str):
                discard_out(out)
            return EXIT_USAGE
        err.print(f"crashpoint: internal error: {type(exc).__name__}: {exc}", markup=False)
        return EXIT_USAGE


def run() -> NoReturn:
    """The ``crashpoint`` command (the console script and ``python -m crashpoint``): exit
    with :func:`main`'s code.

    Before exiting, every object left is moved out of the cycle collector's reach
    (:func:`gc.freeze`): the collections the interpreter runs while it shuts down would
    otherwise examine them all, about 8% of a default ``crashpoint explore``'s CPU time
    (issue 11). Reference counting still frees them; only ``__del__`` of objects in
    reference cycles may not run, which Python does not promise at exit anyway."""
    code = main()
    gc.freeze()
    sys.exit(code)


def _resolve(
    args: argparse.Namespace,
) -> tuple[list[Workload], list[PersistenceModel], Target]:
    from .faultfs import MODELS
    from .scenarios import SCENARIOS, get_target

    if args.zoo:
        clash = [
            flag
            for flag, value in (
                ("--target", args.target),
                ("--crash-point", args.crash_point),
                ("--shard", args.shard),
                ("--fault", args.fault),
                ("--faults", args.faults or None),
                ("--reorder-bound", args.reorder_bound),
                ("--require-exhaustive", args.require_exhaustive or None),
                ("--atomic-write", args.atomic_write),
                ("--drive-ignores-flush", args.drive_ignores_flush or None),
                ("--sample", args.sample),
                ("--sample-seed", args.sample_seed),
            )
            if value is not None
        ]
        if clash:
            raise UsageError(
                f"--zoo explores every target with every fault; it takes no {', '.join(clash)}"
            )
    if args.fault is not None and args.faults:
        raise UsageError("--fault replays one fault; --faults runs them all: give one of them")
    if args.model is None:
        args.model = "process-crash,ext4,posix" if args.zoo else "process-crash"
    try:
        models = parse_models(args.model)
    except ValueError as exc:
        raise UsageError(f"--model: {exc}") from None
    every = {m.name for m in models} == set(MODELS)
    args.model = "all" if every else ",".join(m.name for m in models)
    try:
        models = device_models(models, args.atomic_write, args.drive_ignores_flush)
        models = sampled_models(models, args.sample, args.sample_seed)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    names = list(dict.fromkeys(args.scenario or SCENARIOS))  # repeated names count once
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise UsageError(f"unknown scenario {unknown[0]!r}; see `crashpoint explore --list`")
    try:
        target = get_target("reference" if args.target is None else args.target)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    return [SCENARIOS[n] for n in names], models, target


def _check_replay(
    args: argparse.Namespace, workloads: Sequence[Workload], target: Target, fault: Fault | None
) -> None:
    """A crash point or fault that exists in none of the workloads is a typo, not a pass."""
    if args.crash_point is None and fault is None:
        return
    from .faultfs import FaultKind
    from .scenarios import record

    ops = {w.name: record(w, target).ops for w in workloads}
    if fault is not None:
        mutating = {name: [op for op in trace if op.kind.mutating] for name, trace in ops.items()}
        fits = [
            name
            for name, trace in mutating.items()
            if fault.at < len(trace)
            and (fault.kind is FaultKind.ERROR or fault.kind in _kinds_for(trace[fault.at].kind))
        ]
        if not fits:
            raise UsageError(f"--fault {args.fault}: {_fault_mismatch(fault, mutating)}")
    if args.crash_point is not None and all(args.crash_point > len(t) for t in ops.values()):
        longest = max((len(t) for t in ops.values()), default=0)
        raise UsageError(
            f"--crash-point {args.crash_point}: the selected scenarios have crash points "
            f"0..{longest} at most"
        )


def _kinds_for(op_kind: OpKind) -> set[FaultKind]:
    """The fault kinds an operation of this kind can suffer (FAULTS_BY_OP)."""
    from .scenarios.engine.faults import FAULTS_BY_OP

    return {kind for _, kind in FAULTS_BY_OP.get(op_kind, ())}


def _fault_mismatch(fault: Fault, mutating: dict[str, list[Op]]) -> str:
    """Why ``fault`` fits no selected scenario: what operation ``fault.at`` is in each,
    and which operations the fault's kind needs."""
    from .faultfs import FaultKind
    from .scenarios.engine.faults import FAULTS_BY_OP

    lengths = ", ".join(f"{n} {len(t)}" for n, t in mutating.items())
    if all(fault.at >= len(t) for t in mutating.values()):
        return (
            f"operation {fault.at} does not exist (operations per scenario: {lengths}; "
            "indices start at 0)"
        )
    needs = sorted(
        k.value for k, faults in FAULTS_BY_OP.items() if any(f is fault.kind for _, f in faults)
    )
    is_what = "; ".join(
        f"in {n} it is {t[fault.at].kind.value} ({t[fault.at].render()})"
        for n, t in list(mutating.items())[:3]
        if fault.at < len(t)
    )
    kind = fault.kind.value if fault.kind is not FaultKind.ERROR else "this fault"
    fitting = {
        n: [str(op.index) for op in t if fault.kind in _kinds_for(op.kind)]
        for n, t in list(mutating.items())[:3]
    }
    where = "; ".join(f"{n}: {', '.join(ix) or 'none'}" for n, ix in fitting.items())
    return (
        f"operation {fault.at} is not one {kind} applies to: {is_what}; "
        f"{kind} needs {' or '.join(needs) or 'another operation'} "
        f"(such operations: {where})"
    )


def _prepare_out(path: str) -> str:
    try:
        return prepare_out(path)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _write_reports(
    report: dict[str, object], out: str, details: dict[str, object] | None = None
) -> tuple[str, str, str]:
    try:
        return write_all(report, out, details)
    except OSError as exc:
        raise UsageError(f"cannot write the reports to {out!r}: {exc.strerror or exc}") from None


def _list(console: Console) -> int:
    from .faultfs import ALIASES, MODELS
    from .scenarios import MUTANTS, SCENARIOS, TARGETS

    def show() -> None:
        console.print("[bold]scenarios[/]")
        for w in SCENARIOS.values():
            console.print(f"  {w.name:30} {w.description}")
        console.print("[bold]models[/]")
        for m in MODELS.values():
            console.print(f"  {m.name:30} {m.source}")
        for m in ALIASES.values():
            console.print(f"  {m.name:30} {m.source}")
        console.print("[bold]targets[/]")
        for t in TARGETS.values():
            console.print(f"  {t.name:30} {t.description}")
        console.print("[bold]mutants[/] (--target mutant:NAME; the invariant that must catch it)")
        for name, t in MUTANTS.items():
            inv, model = t.expected or ("?", "?")
            console.print(f"  {name:30} {inv} under {model}: {' '.join(t.description.split())}")
        console.print("[bold]documents[/] (cited as SPEC.md §N and FAULT-MODEL.md §N)")
        for name in ("SPEC.md", "FAULT-MODEL.md"):
            console.print(f"  {name:30} {docs_path(name)}", markup=False)

    print_to_stdout(show)
    return EXIT_OK


def docs_path(name: str) -> str:
    """Where the installed copy of ``name`` (``SPEC.md``, ``FAULT-MODEL.md``) is: the
    package data ``crashpoint/docs/`` (SPEC.md and FAULT-MODEL.md ship in the wheel)."""
    from importlib import resources

    try:
        return str(resources.files("crashpoint.docs") / name)
    except ModuleNotFoundError:  # an editable install made before the docs were package data
        return f"docs/{name} in the crashpoint source tree"


def _explore(args: argparse.Namespace, console: Console, err: Console) -> int:
    workloads, models, target = _resolve(args)  # validated with --list too
    if args.list:
        return _list(console)
    fault = None
    if args.fault is not None:
        from .scenarios import parse_fault

        try:
            fault = parse_fault(args.fault)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    _check_replay(args, workloads, target, fault)
    out = _prepare_out(args.out)
    jobs = cap_jobs(args.jobs, lambda line: err.print(line, markup=False, highlight=False))
    if args.reorder_bound is not None and not any(m.reorder for m in models):
        err.print(  # said, not refused: a CI matrix may pass the bound with every model
            f"--reorder-bound {args.reorder_bound}: no model of this run reorders "
            f"({args.model}); it applies to posix (power-loss-reorder) only",
            markup=False,
            highlight=False,
        )
    if args.zoo:
        return _zoo(args, workloads, models, out, jobs, console, err)
    from .reports import print_summary
    from .scenarios.jobs import explore as agent  # registers the kind `agent`
    from .scenarios.jobs.plan import Plan, run_plan

    plan = Plan(
        agent.KIND,
        target.name,
        tuple(models),
        workloads=tuple(w.name for w in workloads),
        faults=args.faults,
        fault=fault,
        crash_point=args.crash_point,
        shard=args.shard,
        jobs=jobs,
        options={
            "reorder_bound": args.reorder_bound,
            "atomic_write": args.atomic_write,
            "drive_ignores_flush": args.drive_ignores_flush,
            "sample": args.sample,
            "sample_seed": args.sample_seed,
            "auto_jobs": args.jobs is None,  # 1 for a small run, all cores for a large one
        },
    )
    verdict = with_progress(lambda progress: run_plan(plan, progress=progress), err)
    results, run_id = verdict.results, verdict.run_id
    for r in results:  # a change on the real disk during the run (faultfs/_canary.py)
        r.unsupported += [c for c in verdict.canary if c not in r.unsupported]
    report, details = explore_report(results, model=args.model, target=target.name, run_id=run_id)
    examined_nothing = bool(report.get("examined_nothing"))
    if args.shard is not None:  # what `crashpoint report merge` needs (reports/_shards.py)
        from .reports._shards import shard_section

        report["shard"] = shard_section(results, args.shard, details=details)
    paths = _write_reports(report, out, details)
    code = EXIT_VIOLATION if report["totals"]["violations"] else EXIT_OK
    if args.require_exhaustive and not report["exhaustive"]:
        code = EXIT_VIOLATION  # --require-exhaustive: a bound is a failure
    if verdict.canary:  # never a false green: the run touched the real disk
        code = EXIT_VIOLATION
        err.print(f"crashpoint: verdict incomplete: {'; '.join(verdict.canary)}", markup=False)
    if examined_nothing:
        code = EXIT_VIOLATION
        err.print(
            "crashpoint: examined no crash state"
            + (
                f" (shard {args.shard[0]}/{args.shard[1]} holds none of this run's)"
                if args.shard
                else ""
            )
            + ": nothing was verified",
            markup=False,
        )

    def show() -> None:
        print_summary(report, console, counterexample=args.crash_point is None)
        if args.crash_point is not None:
            for r in results:
                for v in r.counterexamples:
                    console.print(v.render(), markup=False)
        console.print(f"reports: {paths[0]}, {paths[1]}, {paths[2]}")

    print_to_stdout(show)
    return code


def _zoo(
    args: argparse.Namespace,
    workloads: Sequence[Workload],
    models: Sequence[PersistenceModel],
    out: str,
    jobs: int,
    console: Console,
    err: Console,
) -> int:
    from .reports import build_report, print_zoo, zoo_dict
    from .scenarios import kill_matrix

    rows, reference = kill_matrix(
        models=models,
        workloads=workloads,
        jobs=jobs,
        progress=lambda name: err.print(f"exploring {name} …", style="dim"),
    )
    zoo = zoo_dict(rows, [m.name for m in models])
    report = build_report(reference, model=args.model, target="reference", extra={"zoo": zoo})
    paths = _write_reports(report, out)

    def show() -> None:
        print_zoo(zoo, console)
        if args.scenario:  # a mutant the chosen scenarios never exercise is not killed
            console.print(
                f"--scenario: the zoo ran on {len(workloads)} scenario(s) of the catalogue; a "
                "mutant shown as survived may only be left unexercised by them",
                markup=False,
            )
        console.print(f"reports: {paths[0]}, {paths[1]}, {paths[2]}")

    print_to_stdout(show)
    return EXIT_OK if zoo["ok"] else EXIT_VIOLATION

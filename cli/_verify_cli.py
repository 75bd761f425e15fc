"""``crashpoint verify TARGET``: judge a user's own storage (issue 8, SPEC.md §10).

TARGET is ``package.module:factory`` or ``path/to/file.py:factory``. Exit codes as
``explore``: 0 clean; 1 a violation, or an incomplete verdict (a call the model
cannot represent); 2 usage error or bad target (import error, missing attribute,
wrong signature, a call that raises on a clean run, a save that writes nothing, a
call that hangs past ``--timeout``). Errors are one line on standard error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from rich.console import Console

from ._concurrent_cli import add_concurrent_options, run_concurrent, wants_concurrent
from ._options import (
    KindChoices,
    ProgressLine,
    add_device_options,
    add_sample_options,
    int_option,
    prepare_out,
    print_to_stdout,
)

__all__ = ["add_verify_parser", "run_verify"]

EXIT_OK, EXIT_VIOLATION = 0, 1  # a usage error is 2 (run_guarded)

RUNNERS = ("intercepted", "protocol", "strace")
"""``--runner``'s choices (issue 23): how a target is run and its file calls recorded."""


class VerifyUsageError(Exception):
    """Bad input or a bad target: one line, exit 2."""


def _shard(text: str) -> tuple[int, int]:
    from ._options import parse_shard

    try:
        return parse_shard(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--timeout must be seconds, not {text!r}") from None
    if not value > 0 or value != value or value == float("inf"):
        raise argparse.ArgumentTypeError(f"--timeout must be > 0 seconds, not {text!r}")
    return value


def add_verify_parser(sub: Any) -> argparse.ArgumentParser:
    """Add the ``verify`` subcommand to the subparsers ``sub``."""
    p: argparse.ArgumentParser = sub.add_parser(
        "verify",
        help="verify your own storage code (unmodified: its file calls are intercepted)",
        description="Run the target's workloads once, derive every crash state under the "
        "persistence model(s), reboot each (a fresh disk holding exactly that state, a fresh "
        "target), load and judge it. TARGET is package.module:factory or "
        "path/to/file.py:factory; factory(base_dir) runs intercepted, factory(fs, base_dir) "
        "on the filesystem protocol. Exit codes: 0 clean, 1 violation or incomplete verdict, "
        "2 usage error or bad target.",
    )
    p.add_argument(
        "target",
        metavar="TARGET",
        nargs="?",
        help="package.module:factory or file.py:factory (none with --exec)",
    )
    p.add_argument(
        "--exec",
        nargs="?",
        const="",
        metavar="CMD",
        help="verify a program in any language, recorded through strace: --exec with --save "
        "and --load (document kind), or --exec 'CMD {dir}' --kind state-storage (one JSON "
        "request on stdin, one JSON reply on stdout)",
    )
    p.add_argument(
        "--runner",
        choices=RUNNERS,
        metavar="{intercepted,protocol,strace}",
        help="how TARGET runs: intercepted (factory(base_dir), its Python file calls "
        "routed into the model), protocol (factory(fs, base_dir)), or strace (in a child "
        "interpreter recorded through strace: for a store on sqlite3, dbm or any C "
        "extension). Default: by the factory's signature; --exec implies strace",
    )
    p.add_argument(
        "--save",
        metavar="CMD",
        help="--exec: command storing the JSON value of the file {value} into {dir}",
    )
    p.add_argument(
        "--load",
        metavar="CMD",
        help="--exec: command printing the value loaded from {dir} as JSON (non-zero exit: "
        "cannot load)",
    )
    p.add_argument(
        "--kind",
        default="document",
        choices=KindChoices(),
        metavar="KIND",  # (argparse would list the choices, importing every kind, at start)
        help="document: save(value)/load() (default); state-storage: the six methods of "
        "SPEC.md §6; or a plug-in kind: CRASHPOINT_KINDS=module,path/kinds.py names the "
        "modules to import first (each calls crashpoint.scenarios.register_kind)",
    )
    p.add_argument(
        "--model",
        default="process-crash",
        metavar="NAME[,NAME...]|all",
        help="persistence model(s): process-crash (default), the file-system families "
        "ext4, xfs, btrfs, posix (docs/models.md), power-loss and power-loss-reorder "
        "(aliases of ext4 and posix), a comma-separated list, or all (process-crash and "
        "the four families)",
    )
    add_device_options(p)
    add_sample_options(p)
    p.add_argument("--faults", action="store_true", help="arm every fault at every operation")
    p.add_argument(
        "--fault-crash-points",
        choices=("recovery", "all"),
        default="recovery",
        help="with --faults, the crash points of a faulted run judged: recovery (default: "
        "the one after the fault, the failing call's recovery path, the next save and the "
        "end; the rest are counted in the report, fault_points_not_examined) or all (every "
        "one through the end, about 3.4 times slower)",
    )
    p.add_argument(
        "--values",
        metavar="V",
        help="values document saves are given: json (default) or flat-strings; a FILE.json "
        "holding a list of values; or module:name / path/file.py:name of a hypothesis "
        "strategy or of a callable taking a size in bytes (called per sized workload)",
    )
    p.add_argument(
        "--sizes",
        metavar="SIZE[,SIZE...]",
        help="document: the value-size boundaries the many-saves workload crosses "
        "(default 4K,64K; bytes or a number with K or M, e.g. 4K,64K,1M); large-values "
        "crosses the largest at or above 1M",
    )
    p.add_argument(
        "--workload",
        action="append",
        metavar="NAME",
        help="only this workload (repeatable): first-save, resize, many-saves, "
        "save-after-failure, random, large-values, ten-saves "
        "(document); a catalogue scenario (state-storage)",
    )
    p.add_argument(
        "--format",
        choices=("reference",),
        help="state-storage: the target uses the reference's file layout (runs the "
        "scenarios and state-machine steps that depend on it)",
    )
    p.add_argument(
        "--out",
        default="crashpoint-report",
        metavar="DIR",
        help="directory for report.json, report.md and report.html (default ./crashpoint-report)",
    )
    p.add_argument(
        "--jobs",
        type=int_option("--jobs", 1),
        metavar="N",
        help="worker processes (default 1; with --exec, load processes at a time, default the "
        "cores this process may use): a document target runs one workload per "
        "process; the report is the same for any N",
    )
    p.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        help="seconds one call of the target may take (default: no limit; with --exec, 60)",
    )
    p.add_argument(
        "--max-output",
        type=int_option("--max-output", 1),
        metavar="BYTES",
        help="--exec: bytes a command may print on standard output or error, and its strace "
        "log may hold (default 134217728, 128 MiB); past it the command is killed and the "
        "run stops (exit 2)",
    )
    p.add_argument(
        "--volatile",
        action="append",
        metavar="GLOB",
        help="--exec or --runner strace, document kind: a file matching GLOB (relative to "
        "{dir}; repeatable) is volatile, content the program rebuilds after a crash and "
        "never trusts (SQLite's db.sqlite-shm): a shared writable mmap of it does not make "
        "the verdict incomplete, and every crash state holds garbage in its place",
    )
    p.add_argument(
        "--baseline",
        metavar="REPORT",
        help="an earlier report.json: fail only on findings not in it",
    )
    p.add_argument(
        "--crash-point", type=int_option("--crash-point", 0), metavar="K", help="only crash point K"
    )
    p.add_argument("--fault", metavar="K:NAME", help="only this fault (replay), e.g. 3:ENOSPC")
    p.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="only slice K of N of the crash-state space (CI matrices; `crashpoint report "
        "merge` combines the N reports into the unsharded run's)",
    )
    p.add_argument("--seed", type=int_option("--seed", 0), default=0, metavar="N", help="seed (0)")
    p.add_argument(
        "--examples",
        type=int_option("--examples", 1),
        default=20,
        metavar="N",
        help="hypothesis examples for the random workload (20)",
    )
    add_concurrent_options(p)
    return p


def _cores() -> int:
    """The cores this process may use (the default ``--jobs`` of ``--exec``: its work
    is other processes, so one load process per core)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _prepare_out(path: str) -> str:
    try:
        return prepare_out(path)
    except ValueError as exc:
        raise VerifyUsageError(str(exc)) from None


def _baseline(path: str) -> tuple[set[tuple[str, str, str]], str | None]:
    """Known findings of an earlier report, (workload, model, invariant), and the target
    that report names (None when it names none). A model is keyed by what it stands
    for (:func:`crashpoint.faultfs.canonical`), so a baseline naming ``power-loss``
    still knows the same findings under ``ext4`` (issue 20)."""
    from .faultfs import canonical

    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
        if not isinstance(report, dict) or not isinstance(report.get("scenarios"), list):
            raise VerifyUsageError(
                f"--baseline {path!r} is not a crashpoint report (no list of scenarios: "
                "give the report.json of an earlier crashpoint verify)"
            )
        theirs = report.get("target")
        known = {  # a model by what it stands for: power-loss's findings are ext4's
            (str(s["name"]).split(":", 1)[0], canonical(str(s["model"])), str(inv))
            for s in report["scenarios"]
            for inv in s.get("killed_by", [])
        }
        return known, theirs if isinstance(theirs, str) else None
    except OSError as exc:
        raise VerifyUsageError(f"--baseline {path!r}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise VerifyUsageError(f"--baseline {path!r} is not a crashpoint report ({exc})") from None


def _factory(spec: str) -> str:
    """The factory's name in a target spec (``pkg.mod:make`` or ``path/file.py:make``)."""
    return spec.rsplit(":", 1)[-1]


EXEC_TIMEOUT = 60.0
"""Seconds one command of ``--exec`` may take when ``--timeout`` is not given: a command
that hangs is a finding to report, not a CI job that never ends."""


def run_verify(args: argparse.Namespace, console: Console, err: Console) -> int:
    """Run ``crashpoint verify``; returns the exit code (usage errors: one line, 2)."""
    from ._options import run_guarded

    return run_guarded(
        "verify",
        lambda: _run(args, console, err),
        VerifyUsageError,
        out=args.out,
        target=args.target,
        err=err,
    )


def _run(args: argparse.Namespace, console: Console, err: Console) -> int:
    """The command, with what the target's threads raise collected for the report and
    said in one line on stderr (:func:`~crashpoint._options.thread_exceptions`)."""
    from ._options import thread_exceptions

    with thread_exceptions() as caught:
        return _verify(args, console, err, caught)


def _verify(
    args: argparse.Namespace, console: Console, err: Console, caught: list[dict[str, str]]
) -> int:
    from ._options import (
        device_models,
        parse_models,
        sampled_models,
        thread_line,
        thread_report,
    )
    from .faultfs import canonical
    from .reports import build_verify_report
    from .scenarios.jobs.verify import verify
    from .scenarios.targets.user import BadTarget, TargetTimeout, load_factory

    if args.fault is not None and args.faults:
        raise VerifyUsageError("--fault replays one fault; --faults runs them all: give one")
    if args.fault_crash_points != "recovery" and not args.faults:
        raise VerifyUsageError("--fault-crash-points applies to --faults runs: add --faults")
    if args.fault_crash_points != "recovery" and args.kind != "document":
        raise VerifyUsageError("--fault-crash-points applies to --kind document")
    try:  # the parser explore uses: an empty name in a list is refused, 'all' stands alone
        models = parse_models(args.model)
    except ValueError as exc:
        raise VerifyUsageError(str(exc)) from None
    if args.model.strip().lower() != "all":  # as explore: the names as the models spell them
        args.model = ",".join(m.name for m in models)
    try:
        models = device_models(models, args.atomic_write, args.drive_ignores_flush)
        models = sampled_models(models, args.sample, args.sample_seed)
    except ValueError as exc:
        raise VerifyUsageError(str(exc)) from None
    fault = None
    if args.fault is not None:
        from .scenarios import parse_fault

        try:
            fault = parse_fault(args.fault)
        except ValueError as exc:
            raise VerifyUsageError(str(exc)) from None
    if args.values is not None and args.kind != "document":
        raise VerifyUsageError("--values applies to --kind document only")
    sizes = None
    if args.sizes is not None:
        if args.kind != "document" or args.exec is not None:
            raise VerifyUsageError("--sizes applies to --kind document (without --exec) only")
        from .scenarios.kinds.document.kind import parse_sizes

        try:
            sizes = parse_sizes(args.sizes)
        except ValueError as exc:
            raise VerifyUsageError(str(exc)) from None
    if args.format is not None and args.kind != "state-storage":
        raise VerifyUsageError("--format applies to --kind state-storage only")
    if args.shard is not None and args.exec is not None:
        raise VerifyUsageError("--shard does not apply to --exec (run it unsharded)")
    if args.shard is not None and args.baseline:
        raise VerifyUsageError(
            "--baseline compares a whole run: merge the shards (crashpoint report merge), "
            "or run unsharded"
        )
    known, baseline_target = _baseline(args.baseline) if args.baseline else (None, None)
    try:
        concurrent = wants_concurrent(args)
    except ValueError as exc:
        raise VerifyUsageError(str(exc)) from None
    exec_facts: Any = None
    shown = _strace_runner(args)
    if args.exec is not None:
        from .scenarios.jobs.exec import check_exec_args

        try:
            check_exec_args(args)
        except ValueError as exc:
            raise VerifyUsageError(str(exc)) from None
    elif args.save is not None or args.load is not None:
        raise VerifyUsageError("--save and --load apply to --exec only")
    elif args.max_output is not None:
        raise VerifyUsageError("--max-output applies to --exec only")
    elif args.volatile:
        raise VerifyUsageError(
            "--volatile applies to --exec and --runner strace only (a shared writable mmap "
            "is seen in a system-call trace, not by the interception)"
        )
    elif not args.target:
        raise VerifyUsageError("give TARGET (package.module:factory or file.py:factory) or --exec")
    out = _prepare_out(args.out)
    if concurrent:  # issue 25: actors on one directory (cli/_concurrent_cli.py)
        try:
            return run_concurrent(args, console, err, list(models), out)
        except (ValueError, KeyError) as exc:
            raise VerifyUsageError(str(exc).strip("'\"")) from None
    if args.exec is not None:
        from .scenarios.jobs.exec import MAX_OUTPUT, allow_processes

        allow_processes()  # a new run (an earlier one in this process may have stopped them)
        if args.timeout is None:
            args.timeout = EXEC_TIMEOUT
        if args.max_output is None:
            args.max_output = MAX_OUTPUT
    before: set[str] = set(sys.modules)
    imported: set[str] | None = None
    try:
        with _still_running(err):  # a line every few seconds in a CI log
            if args.exec is not None:  # the strace runner with the program's own commands
                from .scenarios.jobs.exec import ExecCommands
                from .scenarios.jobs.plan import Plan, run_plan

                args.target = shown or None
                factory: Any = None
                commands = ExecCommands(
                    save=args.save or "",
                    load=args.load or "",
                    storage=args.exec,
                    max_output=args.max_output,
                    shown=shown,
                    volatile=tuple(args.volatile or ()),
                )
                options: dict[str, Any] = {"transport": commands}
                if args.fault_crash_points != "recovery":
                    options["fault_points"] = args.fault_crash_points
                if args.kind == "state-storage":
                    options["reference_format"] = args.format == "reference"
                result = run_plan(
                    Plan(
                        "state-storage" if args.exec else "document",
                        shown or "--exec",
                        tuple(models),
                        workloads=tuple(args.workload) if args.workload is not None else None,
                        faults=args.faults,
                        fault=fault,
                        crash_point=args.crash_point,
                        jobs=args.jobs or _cores(),
                        seed=args.seed,
                        timeout=args.timeout,
                        examples=args.examples,
                        options=options,
                    )
                )
                exec_facts = result.facts
            else:
                factory = load_factory(args.target)
                imported = set(sys.modules)  # what the target's import brought: the hint's
                _check_runner(args, factory)
                result = verify(
                    factory,
                    kind=args.kind,
                    model=models,
                    faults=args.faults,
                    values=args.values,
                    sizes=sizes,
                    workloads=args.workload,
                    seed=args.seed,
                    examples=args.examples,
                    crash_point=args.crash_point,
                    fault=fault,
                    timeout=args.timeout,
                    target=args.target,
                    reference_format=True if args.format == "reference" else None,
                    jobs=args.jobs or 1,
                    shard=args.shard,
                    fault_points=args.fault_crash_points,
                )
    except BadTarget as exc:
        hint = "" if args.exec is not None else _strace_hint(str(exc), before, imported)
        raise VerifyUsageError(str(exc) + hint) from None
    except TargetTimeout as exc:
        what = "the --exec commands" if args.exec is not None else f"target {args.target!r}"
        raise VerifyUsageError(f"{what}: {exc}") from None
    except KeyError as exc:
        raise VerifyUsageError(str(exc.args[0])) from None
    if result.examined_nothing:  # a replay that matched nothing is a typo, no pass
        if args.crash_point is not None:  # (as explore --crash-point, --fault)
            raise VerifyUsageError(
                f"--crash-point {args.crash_point}: no workload run has that crash point"
            )
        if fault is not None:
            raise VerifyUsageError(
                f"--fault {args.fault}: no workload run has operation {fault.at}"
            )
    report = build_verify_report(result, model=args.model)
    if exec_facts is not None:
        report["exec"] = exec_facts.as_dict()
    details = _html_details(report, result)
    if args.shard is not None:  # what `crashpoint report merge` needs (reports/_shards.py)
        from .reports._shards import shard_section

        report["shard"] = shard_section(result.results, args.shard, result, details=details)
    new: list[str] = []
    if known is not None:
        new = sorted(
            {
                f"{c.workload.split(':', 1)[0]} {c.model} {c.invariant}"
                for c in result.counterexamples
                if (c.workload.split(":", 1)[0], canonical(c.model), c.invariant) not in known
            }
        )
        report["baseline"] = {
            "report": args.baseline,
            "target": baseline_target,
            "known": len(known),
            "new": new,
        }
    from .reports import print_summary
    from .reports._html import write_reports
    from .reports._markdown import render_markdown

    paths = (
        os.path.join(out, "report.json"),
        os.path.join(out, "report.md"),
        os.path.join(out, "report.html"),
    )
    _values_beside_load(report, result, args)
    details = _html_details(report, result)
    report.update(thread_report(caught))  # (the threads of the run and of its re-run)
    try:  # all three together (issue 21)
        write_reports(paths, report, render_markdown(report), details)
    except OSError as exc:
        raise VerifyUsageError(f"cannot write the reports to {out!r}: {exc}") from None

    def show() -> None:  # the reports are written: a closed stdout loses nothing
        print_summary(report, console)
        if args.crash_point is not None:
            for c in result.counterexamples:
                console.print(c.render(), markup=False)
        if result.unsupported and not result.counterexamples:  # else said above it
            console.print(
                "verdict incomplete: calls the model cannot represent: "
                + ", ".join(result.unsupported),
                markup=False,
            )
        if result.warnings or result.leftovers:
            console.print(
                f"warnings: {len(result.warnings)} (A5); crash states with leftover files: "
                f"{result.leftovers}",
                markup=False,
            )
        for original, smaller in result.shrunk.items():
            console.print(f"shrunk: {original} -> {smaller}", markup=False)
        if report.get("renamed"):
            console.print(_renamed_line(report["renamed"]), markup=False)
        if report.get("value_sizes"):
            console.print(_sizes_line(report["values"], report["value_sizes"]), markup=False)
        if known is not None:
            console.print(
                f"baseline {args.baseline}: {len(new)} new finding(s)"
                + (f": {'; '.join(new)}" if new else ""),
                markup=False,
            )
            this = args.target or args.exec
            if baseline_target is not None and this and _factory(baseline_target) != _factory(this):
                # a report of another target: its findings may hide this one's (same workload,
                # model and invariant); said, not refused (a renamed factory is the same store)
                console.print(
                    f"baseline {args.baseline} is a report of target {baseline_target!r}, "
                    f"not of {this!r}: its known findings are hidden here too",
                    markup=False,
                )
        console.print(f"reports: {paths[0]}, {paths[1]}, {paths[2]}", markup=False)
        if exec_facts is not None:
            kinds = ", ".join(f"{n} {k}" for k, n in sorted(exec_facts.counts.items()))
            kinds = f" ({kinds})" if kinds else ""
            n = exec_facts.loads_reused
            reused = (
                f"; {n} crash state(s) answered by a load that read the same bytes" if n else ""
            )
            console.print(
                f"exec: {exec_facts.processes} processes{kinds}{reused}; ignored by rule "
                f"({exec_facts.ignored_rule}): {len(exec_facts.ignored)} path(s)",
                markup=False,
            )
            for note in exec_facts.untargeted:
                console.print(f"not injected: {note}", markup=False)
            if exec_facts.volatile:
                mapped = ", ".join(exec_facts.volatile_mapped) or "none"
                console.print(
                    f"volatile (garbage in every crash state): {', '.join(exec_facts.volatile)}; "
                    f"mapped shared and writable: {mapped}",
                    markup=False,
                )
        for check in result.failed_checks:
            console.print(
                f"conformance {check['id']} failed: {check['check']}: {check['why']}", markup=False
            )

    print_to_stdout(show)
    line = thread_line(caught)
    if line is not None:  # after the summary: the last thing said
        err.print(line, markup=False, highlight=False, emoji=False)
    if result.examined_nothing:  # never a false green, and said (as explore says it)
        why = (
            f" (shard {args.shard[0]}/{args.shard[1]} holds none of this run's)"
            if args.shard is not None
            else " (the sample left out every one)"
            if any(r.unsampled for r in result.results)
            else ""
        )
        err.print(
            f"crashpoint: examined no crash state{why}: nothing was verified",
            markup=False,
            highlight=False,
        )
    if result.incomplete or result.failed_checks:
        return EXIT_VIOLATION
    if known is not None:
        return EXIT_VIOLATION if new else EXIT_OK
    return EXIT_VIOLATION if result.counterexamples else EXIT_OK


def _strace_runner(args: argparse.Namespace) -> str:
    """``--runner`` checked against ``--exec``; with ``--runner strace`` and a Python
    TARGET, ``args`` turned into the ``--exec`` form running it through the strace driver
    (:func:`~crashpoint.scenarios.jobs.exec.driver_commands`). Returns the TARGET so run
    ("" otherwise). Raises VerifyUsageError (exit 2)."""
    runner = args.runner
    if args.exec is not None:
        if runner not in (None, "strace"):
            raise VerifyUsageError(
                f"--runner {runner} cannot run --exec commands: they are other processes, "
                "recorded through strace (--exec implies --runner strace)"
            )
        return ""
    if runner != "strace":
        return ""
    if not args.target:
        raise VerifyUsageError(
            "--runner strace needs TARGET (package.module:factory or file.py:factory)"
        )
    if args.save is not None or args.load is not None:
        raise VerifyUsageError("--save and --load apply to --exec only")
    if args.values not in (None, "json"):
        raise VerifyUsageError("--runner strace saves JSON values: --values json only")
    if args.shard is not None:
        raise VerifyUsageError("--shard does not apply to --runner strace (run it unsharded)")
    from .scenarios.jobs.exec import driver_commands
    from .scenarios.targets.user import BadTarget, load_factory, target_mode

    try:
        target_mode(load_factory(args.target), args.target)  # exit 2 here, not in a child
    except BadTarget as exc:
        raise VerifyUsageError(str(exc)) from None
    save, load, storage = driver_commands(args.target, args.kind)
    if args.kind == "state-storage":
        args.exec = storage
    elif args.kind == "document":
        args.exec, args.save, args.load = "", save, load
    else:
        raise VerifyUsageError(
            f"--runner strace runs the document and state-storage kinds, not {args.kind!r}"
        )
    shown: str = args.target
    args.target, args.values = None, None
    return shown


def _check_runner(args: argparse.Namespace, factory: Any) -> None:
    """``--runner intercepted``/``protocol`` must match the factory's signature."""
    from .scenarios.targets.user import target_mode

    if args.runner is None:
        return
    mode = target_mode(factory, args.target)
    if mode != args.runner:
        sig = "factory(base_dir)" if mode == "intercepted" else "factory(fs, base_dir)"
        raise VerifyUsageError(
            f"--runner {args.runner}: target {args.target!r} is {sig}, which runs {mode} "
            "(or give --runner strace)"
        )


#: Modules whose I/O is C code interception cannot see, by the name a user knows.
_C_STORES = {"_sqlite3": "sqlite3", "_dbm": "dbm.ndbm", "_gdbm": "dbm.gnu", "lmdb": "lmdb"}


@contextlib.contextmanager
def _still_running(err: Console) -> Iterator[None]:
    """Without a terminal (a CI log), ``verifying: 35 s`` on standard error every
    :data:`~crashpoint._options.PROGRESS_INTERVAL` seconds while the run lasts (README:
    "a progress line goes to standard error every 5 seconds"); on a terminal, nothing."""
    if sys.stderr.isatty():
        yield
        return

    def emit(line: str) -> None:
        err.print(line, markup=False, highlight=False)

    with ProgressLine("verifying", 0, emit, unit=None):
        yield


def _strace_hint(message: str, before: set[str], imported: set[str] | None = None) -> str:
    """What to add to a bad target's message when its file I/O may be C code that
    interception cannot see: the C extension modules its import brought in (``sqlite3``
    for ``_sqlite3``: ``sqlite3.connect`` opens its files in C) and ``--runner strace``.
    ``before`` and ``imported``: ``sys.modules``'s names before and after the target's
    import (None: now), so the modules crashpoint's own run imports are not named."""
    new = [m for m in (sys.modules if imported is None else imported) if m not in before]
    found: list[str] = []
    for name in new:
        module = sys.modules.get(name)
        path = str(getattr(module, "__file__", "") or "")
        top = name.partition(".")[0]
        label = _C_STORES.get(name) or _C_STORES.get(top)
        if label is None and path.endswith((".so", ".pyd")) and not top.startswith("_"):
            label = top
        if label is not None and label not in found:
            found.append(label)
    silent = "no file operation was recorded" in message or "raised on a clean run" in message
    if not found and "no file operation was recorded" not in message:
        return ""
    if not silent:
        return ""
    what = (
        f"; it uses {', '.join(found)} (C code: "
        + ("sqlite3.connect opens its files in C; " if "sqlite3" in found else "")
        + "interception sees only Python's file calls)"
        if found
        else "; if its I/O is C code (sqlite3, dbm, a C extension), interception cannot see it"
    )
    return what + ": run it with --runner strace"


def _sizes_line(values: str, sizes: dict[str, Any]) -> str:
    """The values saved and their sizes, with the page boundaries none crossed (issue 22)."""
    never = sizes.get("boundaries_not_crossed") or []
    tail = (
        f"; never crossed: {', '.join(f'{b} bytes' for b in never)}"
        if never
        else "; every page boundary crossed"
    )
    return f"values {values}: {sizes['min']}-{sizes['max']} bytes as JSON{tail}"


def _renamed_line(renamed: list[dict[str, str]]) -> str:
    """The fresh names faulted re-runs created, matched onto the recording's (issue 22)."""
    shown = ", ".join(f"{p['from']} -> {p['to']}" for p in renamed[:5])
    more = f" (and {len(renamed) - 5} more, in report.json `renamed`)" if len(renamed) > 5 else ""
    return f"renamed (fresh names of faulted re-runs matched by creation order): {shown}{more}"


def _html_details(report: dict[str, Any], result: Any) -> dict[str, Any] | None:
    """Timelines and crash-state bytes for report.html, from the traces the engine kept
    with the counterexamples; None when there is nothing to show."""
    if not report["totals"]["violations"]:
        return None
    from .scenarios.jobs.details import report_details

    return report_details(report, result.results) or None


def _values_beside_load(report: dict[str, Any], result: Any, args: argparse.Namespace) -> None:
    """Add to ``report``'s violations of a document target the value each save was given
    and what load returned (``saves``, ``load_value``:
    :func:`~crashpoint.scenarios.jobs.details.document_values`), from the traces the
    engine kept with the counterexamples."""
    if not report["totals"]["violations"] or args.kind != "document":
        return
    from .scenarios.jobs.details import document_values

    document_values(report, result.results)

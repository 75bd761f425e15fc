"""Option parsing and run plumbing shared by every command and the pytest plugin.

Nothing here imports the harness at module level, so the pytest plugin stays cheap to
import (STYLE.md §10). Each parser raises ``ValueError`` with a one-line reason that
the caller reports as a usage error (exit 2; pytest's ``UsageError`` in the plugin).

* :func:`parse_models` — ``all`` or a comma-separated list of persistence models;
* :func:`add_device_options`, :func:`device_models` — ``--atomic-write BYTES`` and
  ``--drive-ignores-flush`` (explore and verify);
* :func:`add_sample_options`, :func:`sampled_models` — ``--sample RATE`` and
  ``--sample-seed N`` (explore and verify);
* :func:`parse_shard` — ``K/N`` with 1 ≤ K ≤ N;
* :func:`usable_cores`, :func:`cap_jobs` — ``--jobs`` never above the usable cores;
* :func:`glue_dash_values` — ``--shard -1/2`` reaches the option's own check;
* :class:`ProgressLine` — one progress line every few seconds when stderr is no terminal;
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse

    from rich.console import Console

    from .faultfs import PersistenceModel

__all__ = [
    "PROGRESS_INTERVAL",
    "ProgressLine",
    "Terminated",
    "add_device_options",
    "add_sample_options",
    "cap_jobs",
    "device_models",
    "discard_out",
    "glue_dash_values",
    "int_option",
    "parse_models",
    "parse_shard",
    "prepare_out",
    "run_guarded",
    "sampled_models",
    "stop_on_signals",
    "usable_cores",
]

PROGRESS_INTERVAL = 5.0
"""Seconds between two progress lines when standard error is not a terminal."""


def prepare_out(path: str) -> str:
    """Create the report directory ``path`` if needed and check it can take the reports.

    Raises ``ValueError`` with a one-line reason: a file in the way, a directory that
    cannot be created, a report name taken by a directory, no write access (a read-only
    filesystem said as such, not as "permission denied")."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"--out {path!r} exists and is not a directory")
    missing = []  # the directories makedirs would create, deepest first
    here = os.path.abspath(path)
    while not os.path.lexists(here) and os.path.dirname(here) != here:
        missing.append(here)
        here = os.path.dirname(here)
    _CREATED[path] = missing
    try:
        os.makedirs(path, exist_ok=True)
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        discard_out(path)  # a path that fails part-way leaves nothing behind
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise ValueError(f"cannot create --out directory {path!r}: {why}") from None
    for name in ("report.json", "report.md", "report.html"):
        if os.path.isdir(os.path.join(path, name)):
            raise ValueError(f"--out {path!r} holds a directory named {name}")
    if not os.access(path, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write to --out directory {path!r}: {_why_unwritable(path)}")
    return path


_CREATED: dict[str, list[str]] = {}
"""Per ``--out`` path given to :func:`prepare_out`, the directories it created, deepest
first (for :func:`discard_out`)."""


def discard_out(path: str) -> None:
    """Remove the directories :func:`prepare_out` created for ``path``, each only while it
    is empty: a command that ends in a usage error leaves no empty ``--out`` behind."""
    for made in _CREATED.pop(path, ()):
        with contextlib.suppress(OSError, ValueError):
            os.rmdir(made)


def run_guarded(
    command: str,
    run: Callable[[], int],
    usage_error: type[Exception],
    *,
    out: str,
    target: str | None,
    err: Console,
) -> int:
    """``run()`` of ``crashpoint COMMAND`` (``verify``, ``explain``) with its reports in
    ``out``, never a traceback: a ``usage_error`` or whatever else the target raised (its
    SystemExit, a TargetExit ...) is one line and a hint, exit 2, and the ``--out``
    directories this run created are removed; Ctrl-C goes on up. Nothing is written
    outside ``out`` (hypothesis keeps no caches while a command runs:
    :func:`~crashpoint.scenarios.engine.caches.hypothesis_keeps_no_files`)."""
    try:
        return run()
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        from .scenarios.kinds.registry import PluginError

        if isinstance(exc, (usage_error, PluginError)):  # PluginError: CRASHPOINT_KINDS's
            line = " ".join(str(exc).split())
        else:  # argparse is done: the target's, or odder
            what = f"target {target!r}" if target else "the target"
            line = f"{what} raised " + " ".join(f"{type(exc).__name__}: {exc}".split())
        err.print(f"crashpoint: error: {line}", markup=False, emoji=False)
        err.print(f"see `crashpoint {command} --help`", markup=False)
        discard_out(out)
        return 2  # the commands' EXIT_USAGE


def open_closed_streams() -> None:
    """Give a standard stream closed by the caller (``>&-``, ``2>&-``) ``/dev/null``:
    its file descriptor is then never reused by a report file (a print would land in
    it), and what is printed to it is dropped, not a traceback."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
        if getattr(sys, name) is None:  # Python found it closed at start
            setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115


def print_to_stdout(fn: Callable[[], None]) -> None:
    """Run ``fn`` (it prints to standard output), surviving a closed pipe
    (``crashpoint explore | head``): the rest of the output is dropped, the run's exit
    code and reports stand (rich answers a broken pipe with ``SystemExit(1)``, which
    would otherwise read as the target's)."""
    try:
        fn()
        sys.stdout.flush()
    except (BrokenPipeError, SystemExit):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _why_unwritable(path: str) -> str:
    try:
        read_only = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # pragma: no cover - no statvfs
        read_only = False
    return "it is on a read-only filesystem" if read_only else "permission denied"


def int_option(what: str, low: int) -> Callable[[str], int]:
    """An argparse ``type=`` for an integer option ``what`` of at least ``low``: ASCII
    digits only, one-line ``ArgumentTypeError`` otherwise."""
    import argparse

    def parse(text: str) -> int:
        text = text.strip()
        if not (text.isascii() and text.lstrip("-").isdigit()):
            raise argparse.ArgumentTypeError(f"{what} must be an integer, not {text!r}")
        value = int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"{what} must be >= {low}, not {value}")
        return value

    return parse


def parse_models(spec: str) -> list[PersistenceModel]:
    """``"all"`` or comma-separated model names (:func:`crashpoint.faultfs.parse_models`,
    the one parser). Raises ValueError naming the known models."""
    from .faultfs import parse_models as parse

    return parse(spec)


def add_device_options(parser: argparse.ArgumentParser) -> None:
    """``--atomic-write BYTES`` and ``--drive-ignores-flush`` (FAULT-MODEL.md §3, issue
    20), on ``explore`` and ``verify``."""
    parser.add_argument(
        "--atomic-write",
        type=int_option("--atomic-write", 1),
        metavar="BYTES",
        help="the device's atomic write size (default 4096, the block: writes tear only at "
        "its multiples; 512 adds sub-block tears). A finding only a smaller size reaches is "
        "hypothetical: listed apart, not the verdict nor the exit code",
    )
    parser.add_argument(
        "--drive-ignores-flush",
        action="store_true",
        help="the drive acknowledges a flush without writing its cache: fsync promises "
        "nothing. A finding only this reaches is hypothetical (listed apart)",
    )


def device_models(
    models: Sequence[PersistenceModel], atomic_write: int | None, drive_ignores_flush: bool
) -> list[PersistenceModel]:
    """``models`` with the device options (:func:`crashpoint.faultfs.with_device`;
    ``process-crash`` unchanged). Raises ValueError (one line) for an atomic write size
    that is not a power of two from 512 to the block, or device options given to a run
    whose every model is ``process-crash`` (a process crash keeps the page cache)."""
    from .faultfs import with_device

    if atomic_write is None and not drive_ignores_flush:
        return list(models)
    if all(m.family == "process-crash" for m in models):
        given = "--atomic-write" if atomic_write is not None else "--drive-ignores-flush"
        raise ValueError(
            f"{given} applies to the power-loss families (ext4, xfs, btrfs, posix); this run "
            "has only process-crash, which keeps the page cache"
        )
    return [
        with_device(m, atomic_write=atomic_write, drive_ignores_flush=drive_ignores_flush)
        for m in models
    ]


def parse_sample_rate(text: str) -> float:
    """``--sample``'s value: a fraction in (0, 1] (``0.25``) or a percentage in (0, 100]
    (``25%``). An argparse ``type=``: one-line ``ArgumentTypeError`` otherwise."""
    import argparse
    import math

    raw = text.strip()
    percent = raw.endswith("%")
    number = raw[:-1].strip() if percent else raw
    try:
        value = float(number) if number.isascii() else math.nan
    except ValueError:
        value = math.nan
    if percent:
        value /= 100
    if not (math.isfinite(value) and 0.0 < value <= 1.0):
        raise argparse.ArgumentTypeError(
            f"--sample takes a fraction in (0, 1] or a percentage in (0, 100], not {text!r}"
        )
    return value


def add_sample_options(parser: argparse.ArgumentParser) -> None:
    """``--sample RATE`` and ``--sample-seed N`` (issue 24), on ``explore`` and ``verify``."""
    parser.add_argument(
        "--sample",
        type=parse_sample_rate,
        metavar="RATE",
        help="judge only this fraction of the distinct crash states (0.25 or 25%%), chosen "
        "by --sample-seed; the rest are counted as not examined, and the run is never "
        "exhaustive (explore's --require-exhaustive exits 1)",
    )
    parser.add_argument(
        "--sample-seed",
        type=int_option("--sample-seed", 0),
        default=None,
        metavar="N",
        help="the seed choosing --sample's crash states (default 0): the report states it; "
        "the same seed judges the same states",
    )


def sampled_models(
    models: Sequence[PersistenceModel], rate: float | None, seed: int | None
) -> list[PersistenceModel]:
    """``models`` each judging the fraction ``rate`` of its distinct crash states chosen by
    ``seed`` (:func:`crashpoint.faultfs.with_sample`); unchanged for None. Raises
    ValueError (one line) for a seed given without ``--sample``."""
    from .faultfs import with_sample

    if rate is None:
        if seed is not None:
            raise ValueError("--sample-seed chooses --sample's crash states: add --sample RATE")
        return list(models)
    return [with_sample(m, rate, seed or 0) for m in models]


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)``. Raises ValueError unless 1 ≤ K ≤ N (ASCII digits)."""
    k_text, sep, n_text = text.strip().partition("/")
    if not sep:
        raise ValueError(f"a shard looks like K/N (e.g. 2/4), not {text!r}")
    try:
        k, n = (_ascii_int(part) for part in (k_text, n_text))
    except ValueError:
        raise ValueError(f"a shard looks like K/N with integers K and N, not {text!r}") from None
    if not 1 <= k <= n:
        raise ValueError(f"shard K/N needs 1 <= K <= N, not {text!r}")
    return k, n


def _ascii_int(text: str) -> int:
    text = text.strip()
    if not (text.isascii() and text.lstrip("-").isdigit() and text.count("-") <= 1):
        raise ValueError(f"not an integer: {text!r}")
    return int(text)


def usable_cores() -> int:
    """The cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count``
    where that does not exist)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def cap_jobs(requested: int | None, notice: Callable[[str], None]) -> int:
    """Worker processes to start for ``--jobs requested`` (None: all usable cores).

    More processes than cores only cost memory (each worker holds the harness), so a
    request above :func:`usable_cores` is capped, and ``notice`` gets one line."""
    cores = usable_cores()
    if requested is None:
        return cores
    if requested > cores:
        notice(f"crashpoint: --jobs {requested} capped at {cores} (the usable cores)")
        return cores
    return requested


def glue_dash_values(argv: Sequence[str], takes_value: Collection[str]) -> list[str]:
    """``["--shard", "-1/2"]`` → ``["--shard=-1/2"]`` for options in ``takes_value``.

    argparse reads a value that starts with ``-`` as the next option and says only
    "expected one argument"; glued, the value reaches the option's own check, which
    says what is wrong with it. A following token that is itself an option of
    ``takes_value`` (or ``--``) is left alone."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if (
            token in takes_value
            and nxt is not None
            and nxt.startswith("-")
            and nxt != "--"
            and not nxt.startswith("--")
        ):
            out.append(f"{token}={nxt}")
            i += 2
            continue
        out.append(token)
        i += 1
    return out


class ProgressLine:
    """A progress line (``"exploring: 12/40 tasks, 8 s"``) every ``interval`` seconds,
    from a timer thread, for logs that are not terminals. Use as a context manager;
    the object it yields is the ``progress(done, total)`` callback.

    Args:
        what: the word before the colon.
        total: how many units the run has.
        emit: takes each line (e.g. printing to standard error).
        interval: seconds between lines (default :data:`PROGRESS_INTERVAL`).
        unit: the unit's plural, shown after the counts; None for a run that counts no
            units (``verify``): the line is the time only (``"verifying: 35 s"``).
    """

    def __init__(
        self,
        what: str,
        total: int,
        emit: Callable[[str], None],
        *,
        interval: float | None = None,
        unit: str | None = "tasks",
    ) -> None:
        self.what, self.total, self.emit, self.unit = what, total, emit, unit
        self.interval = PROGRESS_INTERVAL if interval is None else interval
        self.done = 0
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, name="crashpoint-progress", daemon=True)

    def __call__(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def line(self) -> str:
        seconds = time.monotonic() - self._started
        if self.unit is None:
            return f"{self.what}: {seconds:.0f} s"
        return f"{self.what}: {self.done}/{self.total} {self.unit}, {seconds:.0f} s"

    def _tick(self) -> None:
        while not self._stop.wait(self.interval):
            self.emit(self.line())

    def __enter__(self) -> ProgressLine:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread while a command runs: handled as an interrupt
    (worker and target processes are stopped on the way out), exit code 143."""


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """While a command runs: SIGINT raises KeyboardInterrupt and SIGTERM
    :class:`Terminated` in the main thread, each after killing the target processes
    ``verify --exec`` has running (they run in sessions of their own, which the
    terminal's Ctrl-C never reaches). A signal ignored when the command started stays
    ignored; the handlers before are restored after. Outside the main thread: nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        running = sys.modules.get("crashpoint.scenarios.jobs.exec")
        if running is not None:
            running.stop_processes()
        raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)


class KindChoices:
    """``--kind``'s choices: the registered kinds (:func:`crashpoint.scenarios.kinds.
    registry.kind_names`), read when argparse asks, so building the parser imports no
    kind (``crashpoint explore`` starts without them) and a kind registered later (a
    plug-in, a test's) is a choice."""

    def _names(self) -> list[str]:
        from .scenarios.jobs import verify  # noqa: F401  (registers the built-in kinds)
        from .scenarios.kinds.registry import kind_names

        try:
            return kind_names()
        except ValueError as exc:  # a plug-in (CRASHPOINT_KINDS) that does not import
            print(f"crashpoint: error: {exc}", file=sys.stderr)
            raise SystemExit(2) from None

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())


THREAD_EXCEPTIONS_LISTED = 50
"""Exceptions of the target's threads whose tracebacks a report keeps (all are counted)."""


@contextlib.contextmanager
def thread_exceptions() -> Iterator[list[dict[str, str]]]:
    """Collect what the target's own threads raise while the block runs (a library's
    background thread, 32 of them during one pickledb run), instead of the traceback
    ``threading.excepthook`` prints to stderr for each: ``[{"thread", "type", "message",
    "traceback"}]``, for the report (issue 22). The hook in place before is restored."""
    import traceback

    caught: list[dict[str, str]] = []
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        if args.exc_type is SystemExit:  # as the default hook: a thread's exit is quiet
            return
        caught.append(
            {
                "thread": args.thread.name if args.thread is not None else "?",
                "type": args.exc_type.__name__,
                "message": " ".join(str(args.exc_value).split())[:300],
                "traceback": "".join(
                    traceback.format_exception(args.exc_type, args.exc_value, args.exc_traceback)
                )[-4000:],
            }
        )

    threading.excepthook = hook
    try:
        yield caught
    finally:
        threading.excepthook = previous


def thread_report(caught: Sequence[dict[str, str]]) -> dict[str, object]:
    """The report keys for ``caught`` (:func:`thread_exceptions`): ``thread_exception_count``
    and ``thread_exceptions`` (at most :data:`THREAD_EXCEPTIONS_LISTED`)."""
    return {
        "thread_exception_count": len(caught),
        "thread_exceptions": list(caught[:THREAD_EXCEPTIONS_LISTED]),
    }


def thread_line(caught: Sequence[dict[str, str]]) -> str | None:
    """One line for stderr about ``caught``, or None when the threads raised nothing."""
    if not caught:
        return None
    first = caught[0]
    return (
        f"crashpoint: the target's threads raised {len(caught)} exception(s) (first, in "
        f"{first['thread']}: {first['type']}: {first['message'][:120]}); their tracebacks are "
        "in report.json (thread_exceptions)"
    )

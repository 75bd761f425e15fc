"""Exploration throughput against its floor, and memory (issue 11).

    python benchmarks/bench_explore.py [--repeat N] [--saves N] [--rss-saves N]

Everything is measured in one process and one run (the peak RSS in a child process):

* **explore**: each storage scenario of the catalogue through ``explore()`` on the
  ``reference`` target, per persistence model: wall seconds and distinct crash states
  (states/s counts distinct crash states, never raw ones);
* **floor**: the physical limit of the same work, on the same distinct crash states
  (derived beforehand, each once): for each session, what ``load`` reads — the main
  file, and the bak when main is absent or does not decode — read from the state,
  parsed and decoded the cheapest way the project's own codec can: ``decode_bytes``
  (load's semantics; before issue 11 it was ``json.loads`` + ``decode``, since then
  its fast path parses the bytes itself, so ``json.loads`` + ``decode`` would be a
  slower, flattering floor); ratio = explore seconds / floor seconds (below 1 is
  possible where explore dedupes per file); beside it, the floor as issue 11 words it
  (read + ``json.loads`` + the reference ``decode`` of the parsed document), printed
  for comparison only;
* **lower bound**: the storage scenarios' workloads run once each through the target
  on a plain memory filesystem (nothing recorded, no crash state, no check; each call
  straight to the storage, a refusal swallowed): the cost any harness pays to run the
  code under test at all, so explore/floor can never be below (workload alone)/floor;
  beside it, the same plus one load through the target of every session in every
  distinct crash state (a reboot of each, as a harness without a load memo would);
* **big**: a workload of ``--saves`` saves of a 1,000-message state (about 100 KB)
  under ext4 (``power-loss`` before issue 20): distinct states per second and its own
  floor ratio;
* **codec**: ``decode_bytes`` of the 1,000-message state (about 140 KB) against
  ``json.loads`` of the same bytes: ``decode_bytes`` is what load runs on a file's
  bytes (its fast path parses the bytes itself, never through ``json.loads``), so
  this is the fair reading of the codec's cost; also ``decode(json.loads(b))`` (the
  reference decoder on a parsed document) and ``peek_schema_version`` (what V1 runs
  on a crash state), each against ``json.loads`` in the same run;
* **peak RSS**: a child process exploring ``--rss-saves`` saves of 1,000 messages under
  posix (``power-loss-reorder`` before issue 20; ``ru_maxrss``, MiB);
* **CLI wall**: ``crashpoint explore`` (no arguments) and ``crashpoint explore --model
  all --faults --jobs 2``, each a fresh process in a fresh directory, seconds
  (``--skip-cli`` leaves them out).

One untimed exploration of the storage scenarios under each model comes first (modules
imported on first use are start-up costs, counted by the CLI wall lines). Each figure is
repeated ``--repeat`` times (default 5); the median of the per-run
figures is printed with min and max. The last line is::

    states/s=N floor_ratio=R big_states/s=M peak_rss_mib=P

(``states/s`` and ``floor_ratio``: storage scenarios under ext4; ``big_states/s``:
the 1,000-message workload under ext4). Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from crashpoint.core import AgentState, decode, decode_bytes, encode_bytes, peek_schema_version
from crashpoint.faultfs import MODELS, CrashState, MemoryFileSystem, crash_points, get_model
from crashpoint.scenarios import SCENARIOS, TARGETS, Workload, explore, record
from crashpoint.scenarios.kinds.agent.catalogue import assistant, build_state, user
from crashpoint.scenarios.kinds.agent.kind import _ROOT_DIRS
from crashpoint.scenarios.kinds.agent.workload import BASE_DIR, Session

BIG_MESSAGES = 1000


def big_history(n: int = BIG_MESSAGES) -> list[object]:
    """``n`` messages of about 100 bytes each, user and assistant in turn."""
    return [
        user(f"question {i}: " + "q" * 70) if i % 2 == 0 else assistant(f"answer {i}: " + "a" * 70)
        for i in range(n)
    ]


def big_workload(saves: int) -> Workload:
    """``saves`` saves of session ``s1``, each a state of 1,000 messages and more
    (two messages added per save)."""

    def run(s: Session) -> None:
        history = big_history()
        for i in range(saves):
            history += [user(f"more {i}"), assistant(f"reply {i}")]
            s.save(build_state(*history, running=i < saves - 1))  # type: ignore[arg-type]

    return Workload(f"big-{saves}", f"{saves} saves of 1,000 messages", run)


def storage_workloads() -> list[Workload]:
    return [w for w in SCENARIOS.values() if "storage" in w.tags]


def distinct_states(workload: Workload, model_name: str) -> tuple[list[CrashState], list[str]]:
    """Every distinct crash state of ``workload`` under the model, and its sessions."""
    rec = record(workload, TARGETS["reference"])
    seen: dict[CrashState, None] = {}
    for point in crash_points(get_model(model_name), rec.initial, rec.ops):
        seen.update(dict.fromkeys(point.states))
    return list(seen), rec.sessions


def _parse_and_decode(data: bytes) -> object:
    """The floor as issue 11 words it: ``json.loads``, then the reference decoder."""
    return decode(json.loads(data))


def _load_floor(
    state: CrashState, session_id: str, decoder: Callable[[bytes], object] = decode_bytes
) -> object:
    """What load reads of one session in one state, with load's semantics: main, then
    bak when main is absent or does not decode; read, then parse and decode with
    ``decoder`` (default ``decode_bytes``, the codec's cheapest path from bytes)."""
    main = f"{BASE_DIR}/{session_id}.json"
    for path in (main, main + ".bak"):
        data = state.file(path)
        if data is None:
            continue
        try:
            return decoder(data)
        except Exception:
            continue
    return None


def floor_seconds(
    jobs: Sequence[tuple[list[CrashState], list[str]]],
    decoder: Callable[[bytes], object] = decode_bytes,
) -> float:
    t0 = time.perf_counter()
    for states, sessions in jobs:
        for state in states:
            for sid in sessions:
                _load_floor(state, sid, decoder)
    return time.perf_counter() - t0


class _BareSession(Session):
    """A session that only runs the storage: each call goes straight to it, any
    exception it raises is swallowed (as :class:`Session` does), nothing is recorded
    and nothing expected is computed."""

    def save(self, state: AgentState) -> bool:
        return self._bare(lambda: self.storage.save(state)) is not _FAILED

    def load(self, session_id: str) -> AgentState | None:
        found = self._bare(lambda: self.storage.load(session_id))
        return None if found is _FAILED else found

    def load_or_create(self, session_id: str, initial_metadata: Any = None) -> AgentState | None:
        found = self._bare(lambda: self.storage.load_or_create(session_id, initial_metadata))
        return None if found is _FAILED else found

    def delete(self, session_id: str) -> bool:
        return self._bare(lambda: self.storage.delete(session_id)) is not _FAILED

    def mark_not_resumable(self, session_id: str) -> bool:
        return self._bare(lambda: self.storage.mark_not_resumable(session_id)) is not _FAILED

    @staticmethod
    def _bare(call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception:
            return _FAILED


_FAILED = object()


def run_alone(workload: Workload) -> MemoryFileSystem:
    """Run ``workload`` once through the reference target on a plain memory filesystem
    (its setup first): no recording, no crash state. Returns the filesystem after it."""
    fs = MemoryFileSystem(dirs=_ROOT_DIRS)
    if workload.setup is not None:
        dict(workload.setup(fs, BASE_DIR))
    fs = MemoryFileSystem(fs.crash_state())
    workload.run(_BareSession(TARGETS["reference"](fs, BASE_DIR), fs, BASE_DIR))
    return fs


def workload_alone_seconds(workloads: Sequence[Workload]) -> float:
    """Wall seconds of :func:`run_alone` of each workload."""
    t0 = time.perf_counter()
    for workload in workloads:
        run_alone(workload)
    return time.perf_counter() - t0


def reboot_seconds(jobs: Sequence[tuple[list[CrashState], list[str]]]) -> float:
    """Wall seconds of one load through the reference target of every session in every
    distinct crash state, each state on a fresh memory filesystem (errors swallowed)."""
    target = TARGETS["reference"]
    t0 = time.perf_counter()
    for states, sessions in jobs:
        for state in states:
            storage = target(MemoryFileSystem(state), BASE_DIR)
            for sid in sessions:
                with contextlib.suppress(Exception):
                    storage.load(sid)
    return time.perf_counter() - t0


def explore_seconds(workloads: Sequence[Workload], model_name: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    results = [explore(w, model=model_name, target="reference") for w in workloads]
    return time.perf_counter() - t0, sum(r.distinct_states for r in results)


class Run(NamedTuple):
    """One run's wall seconds (and its distinct-state count)."""

    explore: float
    floor: float  # read + decode_bytes
    distinct: int
    worded: float  # the floor as issue 11 words it: read + json.loads + decode
    alone: float  # the workloads alone (the lower bound)
    reboots: float  # a load through the target of each session in each distinct state


def one_run(workloads: Sequence[Workload], model_name: str) -> Run:
    """Explore, its floors and its lower bound, in one run."""
    seconds, distinct = explore_seconds(workloads, model_name)
    jobs = [distinct_states(w, model_name) for w in workloads]
    n_floor = sum(len(s) for s, _ in jobs)
    if n_floor != distinct:
        print(f"  note: explore counted {distinct} distinct states, the floor {n_floor}")
    return Run(
        seconds,
        floor_seconds(jobs),
        distinct,
        floor_seconds(jobs, _parse_and_decode),
        workload_alone_seconds(workloads),
        reboot_seconds(jobs),
    )


def spread(values: Sequence[float], fmt: str = "{:.0f}") -> str:
    return (
        f"{fmt.format(statistics.median(values))} "
        f"(min {fmt.format(min(values))}, max {fmt.format(max(values))})"
    )


def codec_ratios(repeat: int) -> dict[str, list[float]]:
    """Per run, against json.loads(b) of the 1,000-message state's bytes b:
    decode_bytes(b), decode(json.loads(b)) and peek_schema_version(b)."""
    data = encode_bytes(build_state(*big_history()))  # type: ignore[arg-type]
    calls: dict[str, Callable[[], object]] = {
        "decode_bytes": lambda: decode_bytes(data),
        "decode(json.loads)": lambda: decode(json.loads(data)),
        "peek_schema_version": lambda: peek_schema_version(data),
    }
    ratios: dict[str, list[float]] = {name: [] for name in calls}
    n = 20
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(n):
            json.loads(data)
        t_json = time.perf_counter() - t0
        for name, call in calls.items():
            t0 = time.perf_counter()
            for _ in range(n):
                call()
            ratios[name].append((time.perf_counter() - t0) / t_json)
    return ratios


def peak_rss_child(saves: int, model: str) -> float:
    """Peak RSS (MiB) of a fresh process exploring the big workload."""
    out = subprocess.run(
        [sys.executable, __file__, "--rss-child", str(saves), "--model", model],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return float(out[-1])


def cli_walls(argv: Sequence[str], repeat: int) -> list[float]:
    """Wall seconds of ``crashpoint ARGV`` in a fresh process, each run in a fresh
    directory (the reports are written there), ``repeat`` times."""
    import os
    import shutil
    import tempfile

    exe = shutil.which("crashpoint", path=os.path.dirname(sys.executable)) or "crashpoint"
    walls = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cwd:
            t0 = time.perf_counter()
            subprocess.run([exe, *argv], cwd=cwd, capture_output=True, check=True)
            walls.append(time.perf_counter() - t0)
    return walls


def repeated(fn: Callable[[], Run], repeat: int) -> list[Run]:
    return [fn() for _ in range(repeat)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--saves", type=int, default=8, help="saves of the big workload")
    parser.add_argument("--rss-saves", type=int, default=64)
    parser.add_argument("--rss-repeat", type=int, default=None)
    parser.add_argument("--model", default="posix")
    parser.add_argument("--rss-child", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--skip-cli", action="store_true", help="no CLI wall times")
    parser.add_argument(
        "--skip-storage", action="store_true", help="only the big workload, codec and RSS"
    )
    args = parser.parse_args()
    if args.rss_child is not None:
        explore(big_workload(args.rss_child), model=args.model, target="reference")
        print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        return
    workloads = storage_workloads()
    # Warm-up, untimed: modules imported on first use (the codec's msgspec, say) are a
    # start-up cost, which the CLI wall lines count; the rates are steady-state figures.
    for name in MODELS:
        explore_seconds(workloads, name)
    print(
        f"{'model':20} {'distinct':>9} {'states/s':>28} {'explore/floor':>26} "
        f"{'explore/(json.loads+decode)':>28}"
    )
    headline: dict[str, tuple[float, float]] = {}
    bounds: list[Run] = []
    for name in [] if args.skip_storage else list(MODELS):
        runs = repeated(lambda name=name: one_run(workloads, name), args.repeat)  # type: ignore[misc]
        bounds += runs
        rates = [r.distinct / r.explore for r in runs]
        ratios = [r.explore / r.floor for r in runs]
        worded = [r.explore / r.worded for r in runs]
        headline[name] = (statistics.median(rates), statistics.median(ratios))
        print(
            f"{name:20} {runs[0].distinct:9d} {spread(rates):>28} "
            f"{spread(ratios, '{:.2f}'):>26} {spread(worded, '{:.2f}'):>28}"
        )
    if bounds:
        # Per run, against that run's floors (the workloads alone do not depend on the
        # model; the reboots do, through the distinct states).
        alone = [r.alone / r.floor for r in bounds]
        alone_w = [r.alone / r.worded for r in bounds]
        both = [(r.alone + r.reboots) / r.floor for r in bounds]
        both_w = [(r.alone + r.reboots) / r.worded for r in bounds]
        print(
            f"lower bound, every model: workloads alone / floor {spread(alone, '{:.2f}')}, "
            f"/ (json.loads+decode) {spread(alone_w, '{:.2f}')}; with a reboot of each "
            f"distinct state / floor {spread(both, '{:.2f}')}, / (json.loads+decode) "
            f"{spread(both_w, '{:.2f}')}"
        )
    big = big_workload(args.saves)
    runs = repeated(lambda: one_run([big], "ext4"), args.repeat)
    big_rates = [r.distinct / r.explore for r in runs]
    big_ratios = [r.explore / r.floor for r in runs]
    print(
        f"big ({args.saves} saves of {BIG_MESSAGES} messages, ext4): "
        f"{runs[0].distinct} states, "
        f"states/s {spread(big_rates)}, explore/floor {spread(big_ratios, '{:.2f}')}"
    )
    for name, codec in codec_ratios(args.repeat).items():
        print(f"codec {name} / json.loads, {BIG_MESSAGES} messages: {spread(codec, '{:.2f}')}")
    rss = [
        peak_rss_child(args.rss_saves, args.model) for _ in range(args.rss_repeat or args.repeat)
    ]
    what = f"{args.rss_saves} saves of {BIG_MESSAGES} messages, {args.model}"
    print(f"peak RSS, {what}: {spread(rss)} MiB")
    if not args.skip_cli:
        for argv in (["explore"], ["explore", "--model", "all", "--faults", "--jobs", "2"]):
            walls = cli_walls(argv, args.repeat)
            print(f"wall, crashpoint {' '.join(argv)}: {spread(walls, '{:.2f}')} s")
    rate, ratio = headline.get("ext4", (math.nan, math.nan))
    print(
        f"states/s={rate:.0f} floor_ratio={ratio:.2f} "
        f"big_states/s={statistics.median(big_rates):.0f} peak_rss_mib={statistics.median(rss):.0f}"
    )


if __name__ == "__main__":
    main()

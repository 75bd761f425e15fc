"""``verify --exec`` throughput (issue 13): cost per crash state, and the Node seed port.

    python benchmarks/bench_exec.py [--jobs N] [--rounds 5] [--skip-catalogue] [--only-side-by-side]
                                    [--one-shot] [--workloads W,...]

* **side by side** (issue 23): the JSON store ``examples/stores/jsonstore.py:JsonStore``
  judged in-process (intercepted) and through ``--runner strace`` (crashpoint's driver:
  each save and batch of loads a forked child of a traced fork server, the server's start
  included), in turn, ``--rounds`` times: the median cost per distinct crash state (disk
  image), wall and CPU (children's included, RUSAGE_CHILDREN: the servers, their tracers
  and children are reaped by then), and their ratio (target: within 4x), on the runner's
  default workloads (``--workloads`` to choose). With
  ``--one-shot``, also the driver run as one traced interpreter per call (the path a
  user's ``--exec`` commands and faulted records take).

* **per crash state**: the document workload ``resize`` under every model, once through
  ``--exec`` (``examples/exec/pystore.py JsonStore``: the Python store run as commands,
  one process per save and per distinct crash state, recorded through strace) and once
  intercepted in Python (``examples/stores/jsonstore.py:JsonStore``). Seconds per raw
  crash state judged (recording, reboots, loads and judging included) and their ratio.
  The same for the Node store ``examples/exec/atomic_store.js``.
* **catalogue**: the Node port of the seed's FileStateStorage
  (``examples/exec/seed_storage.js``) over the storage catalogue under ``--model all``
  (``--format reference``), ``--jobs N``: wall time (target: under 120 s on 2 cores).

Figures are printed with the machine's load average, never asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from typing import Any

from crashpoint.faultfs import parse_models
from crashpoint.scenarios.jobs.exec import driver_commands, verify_exec, verify_exec_state_storage
from crashpoint.scenarios.jobs.verify import verify
from crashpoint.scenarios.kinds.document.kind import BASIC_WORKLOADS
from crashpoint.scenarios.targets.user import load_factory

HERE = os.path.dirname(os.path.abspath(__file__))
EXEC = os.path.join(HERE, "..", "examples", "exec")
STORE = os.path.join(HERE, "..", "examples", "stores", "jsonstore.py")


def _cpu() -> float:
    """CPU seconds (user + sys) of this process and of its waited-for children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _per_state(result: object, seconds: float) -> tuple[int, float]:
    states = sum(r.raw_states for r in result.results)  # type: ignore[attr-defined]
    return states, seconds / max(states, 1)


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _children_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def side_by_side(
    models: list[Any], workloads: list[str], jobs: int, rounds: int, one_shot: bool = False
) -> None:
    """The same JSON store (``examples/stores/jsonstore.py:JsonStore``) judged in-process
    (intercepted) and through ``--runner strace`` (the driver's fork server: a forked
    child per save and per batch of crash images; ``one_shot``: also a traced interpreter
    per call), ``rounds`` times each in turn: the median cost per distinct crash state,
    wall and CPU (this process's and its children's, RUSAGE_CHILDREN)."""
    save, load, _ = driver_commands(f"{STORE}:JsonStore", "document")
    labels = ["in-process", "strace"] + (["strace one-shot"] if one_shot else [])
    wall: dict[str, list[float]] = {label: [] for label in labels}
    cpu: dict[str, list[float]] = {label: [] for label in labels}
    states: dict[str, int] = {}
    kinds: dict[str, dict[str, int]] = {}
    for _ in range(rounds):
        for label in labels:
            t0, c0 = time.perf_counter(), _cpu()
            if label == "in-process":
                result: Any = verify(
                    load_factory(f"{STORE}:JsonStore"), model=models, workloads=workloads
                )
            else:
                result, facts = verify_exec(
                    save,
                    load,
                    models=models,
                    workloads=workloads,
                    jobs=jobs,
                    shown=f"{STORE}:JsonStore",
                    server=label == "strace",
                )
                kinds[label] = facts.counts
            seconds, cpu_s = time.perf_counter() - t0, _cpu() - c0
            n = len(set().union(*(r.state_ids for r in result.results)))
            states[label] = n
            wall[label].append(seconds / max(n, 1))
            cpu[label].append(cpu_s / max(n, 1))
    w_i, c_i = _median(wall["in-process"]), _median(cpu["in-process"])
    print(
        f"JsonStore, {','.join(workloads)}, {len(models)} models, median of {rounds}: "
        f"in-process {w_i * 1000:.1f} ms wall / {c_i * 1000:.1f} ms CPU per distinct state "
        f"({states['in-process']} states)"
    )
    for label in labels[1:]:
        w_s, c_s = _median(wall[label]), _median(cpu[label])
        procs = ", ".join(f"{n} {k}" for k, n in sorted(kinds[label].items()))
        print(
            f"  --runner strace --jobs {jobs}{' (one-shot)' if label != 'strace' else ''}: "
            f"{w_s * 1000:.1f} ms wall / {c_s * 1000:.1f} ms CPU per distinct state "
            f"({states[label]} states; processes: {procs}): {w_s / w_i:.1f}x wall, "
            f"{c_s / c_i:.1f}x CPU (target: within 4x)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--skip-catalogue", action="store_true")
    parser.add_argument("--only-side-by-side", action="store_true")
    parser.add_argument("--one-shot", action="store_true")
    parser.add_argument(
        "--workloads",
        default=",".join(BASIC_WORKLOADS),
        help="side by side: the workloads judged (default: --runner strace's own default)",
    )
    args = parser.parse_args()
    models = parse_models("all")
    print(f"load average: {os.getloadavg()[0]:.1f} (cpus: {os.cpu_count()})")
    side_by_side(models, args.workloads.split(","), args.jobs, args.rounds, args.one_shot)
    print(f"load average: {os.getloadavg()[0]:.1f}")
    if args.only_side_by_side:
        return 0

    t0, c0 = time.perf_counter(), _cpu()
    intercepted = verify(load_factory(f"{STORE}:JsonStore"), model=models, workloads=["resize"])
    n_i, per_i = _per_state(intercepted, time.perf_counter() - t0)
    _, cpu_i = _per_state(intercepted, _cpu() - c0)
    print(
        f"intercepted JsonStore, resize, all models: {n_i} crash states, {per_i * 1000:.2f} ms "
        f"wall, {cpu_i * 1000:.2f} ms CPU each"
    )

    for label, store in (
        ("exec python JsonStore", f"{sys.executable} {EXEC}/pystore.py JsonStore"),
        ("exec node atomic_store", f"node {EXEC}/atomic_store.js"),
    ):
        t0, c0 = time.perf_counter(), _cpu()
        result, facts = verify_exec(
            f"{store} save {{dir}} {{value}}",
            f"{store} load {{dir}}",
            models=models,
            workloads=["resize"],
            jobs=args.jobs,
        )
        n, per = _per_state(result, time.perf_counter() - t0)
        _, cpu = _per_state(result, _cpu() - c0)
        print(
            f"{label}, resize, all models, --jobs {args.jobs}: {n} crash states, "
            f"{facts.processes} processes, {per * 1000:.1f} ms wall ({per / per_i:.0f}x the "
            f"intercepted cost), {cpu * 1000:.1f} ms CPU ({cpu / cpu_i:.0f}x) each, "
            f"verdict {result.verdict}"
        )

    if not args.skip_catalogue:
        t0, c0 = time.perf_counter(), _cpu()
        result, facts = verify_exec_state_storage(
            f"node {EXEC}/seed_storage.js {{dir}}",
            models=models,
            jobs=args.jobs,
            reference_format=True,
        )
        seconds, cpu_s = time.perf_counter() - t0, _cpu() - c0
        states = sum(r.distinct_states for r in result.results)
        images = len(set().union(*(r.state_ids for r in result.results)))
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(facts.counts.items()))
        print(
            f"node seed port, storage catalogue ({len({r.workload for r in result.results})} "
            f"workloads), all models, --jobs {args.jobs}: {seconds:.1f} s wall, {cpu_s:.1f} s "
            f"CPU, {facts.processes} processes ({kinds}), {states} distinct states summed over "
            f"(workload, model), {images} distinct disk images, killed by {result.killed_by()} "
            "(target: under 120 s)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``verify --exec`` throughput (issue 13): cost per crash state, and the Node seed port.

    python benchmarks/bench_exec.py [--jobs N] [--skip-catalogue]

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
import sys
import time

from crashpoint.faultfs import parse_models
from crashpoint.scenarios.jobs.exec import verify_exec, verify_exec_state_storage
from crashpoint.scenarios.jobs.verify import verify
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--skip-catalogue", action="store_true")
    args = parser.parse_args()
    models = parse_models("all")
    print(f"load average: {os.getloadavg()[0]:.1f} (cpus: {os.cpu_count()})")

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

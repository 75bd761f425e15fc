"""Concurrent actors (issue 25): exploration figures per example store.

    python benchmarks/bench_concurrency.py [--preemptions N] [--model all]

For each store of ``examples/concurrency`` and each concurrent workload, two actors:
schedules run, distinct traces, branches the preemption bound left out, crash states
judged (under the models named, default all) and seconds; a store declaring
last-writer-wins (``crashpoint_last_writer_wins``, the reference) is judged without L1, as
the CLI judges it. Figures are printed with the machine's load average, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))

from crashpoint.faultfs import parse_models  # noqa: E402
from crashpoint.scenarios.kinds.concurrent.kind import (  # noqa: E402
    CONCURRENT_WORKLOADS,
    ConcurrentKind,
    declares_last_writer_wins,
    explore_concurrent,
)
from crashpoint.scenarios.targets.user import make_runner  # noqa: E402

from examples.concurrency import reference, stores  # noqa: E402

STORES = [
    ("SharedTmpStore", stores.SharedTmpStore),
    ("UnlockedUpdateStore", stores.UnlockedUpdateStore),
    ("LockedUpdateStore", stores.LockedUpdateStore),
    ("PortalockerUpdateStore", stores.PortalockerUpdateStore),
    ("PortalockerUnlocked", stores.PortalockerUnlockedUpdateStore),
    ("InPlaceStore", stores.InPlaceStore),
    ("ReferenceDocument", reference.ReferenceDocument),
    ("SeedDocument", reference.SeedDocument),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preemptions", type=int, default=2)
    parser.add_argument("--model", default="all")
    args = parser.parse_args()
    models = list(parse_models(args.model))
    print(f"load average {os.getloadavg()[0]:.2f}; models {', '.join(m.name for m in models)}")
    print(
        f"{'store':<24}{'workload':<19}{'schedules':>10}{'traces':>8}{'beyond':>8}"
        f"{'crash states':>14}{'seconds':>9}  findings"
    )
    for name, cls in STORES:
        for workload in CONCURRENT_WORKLOADS:
            runner = make_runner(cls, "/data/store")
            started = time.perf_counter()
            with runner:
                kind = ConcurrentKind(
                    runner,
                    name,
                    preemptions=args.preemptions,
                    last_writer_wins=declares_last_writer_wins(cls),
                )
                res = explore_concurrent(kind, workload, models=models)
            seconds = time.perf_counter() - started
            found = sorted({c.invariant for _, e in res.findings for c in e.counterexamples})
            ex = res.exploration
            print(
                f"{name:<24}{workload:<19}{ex.schedules:>10}{ex.distinct:>8}{ex.beyond_bound:>8}"
                f"{res.crash_states:>14}{seconds:>9.2f}  {','.join(found) or '-'}"
            )


if __name__ == "__main__":
    main()

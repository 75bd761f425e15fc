"""Exploration throughput: crash states checked per second, and the overhead ratio.

    python benchmarks/bench_explore.py [--model NAME|all] [--repeat N]

For each persistence model, in one run:

* **explore**: the whole catalogue through ``explore()`` (record once, enumerate
  crash states, deduplicate, reboot, load, judge): raw and distinct crash states,
  wall time, distinct states per second;
* **bare**: the same distinct crash states, already derived, only rebooted, loaded
  and judged: the floor the harness cannot go below;
* **ratio** = explore time / bare time (target ≤ 1.3).

With ``--enumerate``, only the persistence model's own work: the catalogue recorded
once per target (reference and seed), then every crash point's states derived
(``crash_points``), best of ``--repeat``: raw states, distinct states, cut, CPU
seconds and raw states per CPU second per model and target (issue 9: a model change measured
before and after in one sitting).

Figures are printed, never asserted (timings belong to benchmarks, not tests).
"""

from __future__ import annotations

import argparse
import time

from crashpoint.faultfs import MODELS, crash_points
from crashpoint.scenarios import SCENARIOS, TARGETS, Workload, explore, record
from crashpoint.scenarios._checkers import expectation, judge
from crashpoint.scenarios._explore import _probe, _wanted


def bare(model_name: str, tag: str | None) -> tuple[int, float]:
    """Reboot + load + judge every distinct crash state, derived beforehand: the same
    per-state work explore() does (loads, C1 and V1 probes, the workload's own
    resume probe and checks), without recording, enumeration or bookkeeping."""
    target = TARGETS["reference"]
    model = MODELS[model_name]
    wanted = _wanted(None, faults=False)
    jobs = []
    for w in _workloads(tag):
        rec = record(w, target)
        seen = set()
        for point in crash_points(model, rec.initial, rec.ops):
            exps = {
                sid: expectation(rec.calls, rec.expects.get(sid), sid, point.index)
                for sid in rec.sessions
            }
            marks = rec.marks_before(point.index)
            for st in point.states:
                if st not in seen:
                    seen.add(st)
                    jobs.append((w, st, rec.sessions, exps, point.index, marks))
    t0 = time.perf_counter()
    for w, st, sessions, exps, k, marks in jobs:
        obs, _c1, v1 = _probe(st, sessions, target, wanted)
        for sid in sessions:
            judge(obs[sid], exps[sid], v1=v1[sid])
        if w.probe is not None and w.check is not None:
            w.check(w.probe(st, target.factory), k, marks)
    return len(jobs), time.perf_counter() - t0


def _workloads(tag: str | None) -> list[Workload]:
    return [w for w in SCENARIOS.values() if tag is None or tag in w.tags]


def run(model_name: str, tag: str | None) -> dict[str, float]:
    model = MODELS[model_name]
    t0 = time.perf_counter()
    results = [explore(w, model=model, target=TARGETS["reference"]) for w in _workloads(tag)]
    total = time.perf_counter() - t0
    distinct = sum(r.distinct_states for r in results)
    raw = sum(r.raw_states for r in results)
    n_bare, t_bare = bare(model_name, tag)
    return {
        "raw": raw,
        "distinct": distinct,
        "explore_s": total,
        "states_per_s": distinct / total,
        "bare_states": n_bare,
        "bare_s": t_bare,
        "ratio": total / t_bare if t_bare else float("nan"),
    }


def enumerate_only(model_name: str, target: str, repeat: int) -> dict[str, float]:
    """Derive every crash state of the catalogue's recordings (recorded beforehand)."""
    model = MODELS[model_name]
    recordings = [record(w, TARGETS[target]) for w in _workloads(None)]
    best = float("inf")
    raw = distinct = cut = 0
    for _ in range(repeat):
        t0 = time.process_time()  # CPU time: steadier than wall time on a shared machine
        raw = distinct = cut = 0
        for rec in recordings:
            seen = set()
            for point in crash_points(model, rec.initial, rec.ops):
                raw += len(point.states)
                cut += point.cut
                seen.update(point.states)
            distinct += len(seen)
        best = min(best, time.process_time() - t0)
    return {"raw": raw, "distinct": distinct, "cut": cut, "s": best, "per_s": raw / best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="all")
    parser.add_argument("--repeat", type=int, default=3, help="best of N runs per model")
    parser.add_argument(
        "--tag", default=None, help="only workloads with this tag (storage, runtime)"
    )
    parser.add_argument(
        "--enumerate", action="store_true", help="time crash-state derivation alone"
    )
    args = parser.parse_args()
    names = list(MODELS) if args.model == "all" else [args.model]
    if args.enumerate:
        print(
            f"{'model':20} {'target':10} {'raw':>8} {'distinct':>9} {'cut':>12} {'s':>8} "
            f"{'raw/s':>10}"
        )
        for name in names:
            for target in ("reference", "seed"):
                r = enumerate_only(name, target, args.repeat)
                print(
                    f"{name:20} {target:10} {r['raw']:8.0f} {r['distinct']:9.0f} "
                    f"{r['cut']:12.0f} {r['s']:8.3f} {r['per_s']:10.0f}"
                )
        return
    print(
        f"{'model':20} {'raw':>8} {'distinct':>9} {'explore s':>10} {'states/s':>10} "
        f"{'bare s':>8} {'ratio':>6}"
    )
    for name in names:
        best = min((run(name, args.tag) for _ in range(args.repeat)), key=lambda r: r["explore_s"])
        print(
            f"{name:20} {best['raw']:8.0f} {best['distinct']:9.0f} {best['explore_s']:10.3f} "
            f"{best['states_per_s']:10.0f} {best['bare_s']:8.3f} {best['ratio']:6.2f}"
        )


if __name__ == "__main__":
    main()

"""verify throughput: interception against the protocol backend, and a 10-save workload.

    python benchmarks/bench_verify.py [--repeat N]

In one run:

* **per crash state**: the document workload ``ten-saves`` (ten saves across 4096-byte
  boundaries) verified under every model, once through interception (a plain-stdlib
  store, ``examples/stores/jsonstore.py:JsonStore``: ``open``/``os.fsync``/``os.replace``)
  and once through the protocol backend (the same algorithm written against
  ``crashpoint.faultfs.FileSystem``). Crash states per second = raw crash states judged
  / wall time (recording, enumeration, reboots, loads and judging included); the
  **ratio** = protocol rate / interception rate (target: at most 3).
* **10 saves**: the ``ten-saves`` workload under ``--model all --faults`` through
  interception: wall time (target: under 30 s on a 2-core machine).

Figures are printed, never asserted (timings belong to benchmarks, not tests).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from crashpoint.faultfs import FileSystem
from crashpoint.scenarios.jobs.verdict import VerifyResult
from crashpoint.scenarios.jobs.verify import verify
from crashpoint.scenarios.targets.user import load_factory

HERE = os.path.dirname(os.path.abspath(__file__))
STORE = os.path.join(HERE, "..", "examples", "stores", "jsonstore.py")


class ProtocolJsonStore:
    """``JsonStore``'s algorithm against the filesystem protocol: tmp, write, fsync,
    rename, directory fsync."""

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        self.fs = fs
        self.base_dir = base_dir
        self.path = base_dir + "/doc.json"

    def save(self, value: Any) -> None:
        data = json.dumps(value).encode()
        tmp = self.path + ".tmp"
        self.fs.create(tmp)
        offset = 0
        while offset < len(data):
            offset += self.fs.write(tmp, offset, data[offset:])
        self.fs.fsync(tmp)
        self.fs.rename(tmp, self.path)
        self.fs.fsync_dir(self.base_dir)

    def load(self) -> Any:
        if not self.fs.exists(self.path):
            return None
        return json.loads(self.fs.read(self.path))


def _timed(factory: Any, **options: Any) -> tuple[VerifyResult, float]:
    started = time.perf_counter()
    result = verify(factory, shrink=False, **options)
    return result, time.perf_counter() - started


def _states(result: VerifyResult) -> tuple[int, int]:
    return (
        sum(r.raw_states for r in result.results),
        sum(r.distinct_states for r in result.results),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="best of N runs (5)")
    args = parser.parse_args(argv)
    intercepted = load_factory(f"{os.path.abspath(STORE)}:JsonStore")

    print("per crash state: workload ten-saves, every model, crash points only")
    for factory in (intercepted, ProtocolJsonStore):  # warm up: imports, patcher caches
        verify(factory, workloads=["first-save"])
    rates: dict[str, float] = {}
    for label, factory in (("interception", intercepted), ("protocol", ProtocolJsonStore)):
        best = None
        for _ in range(args.repeat):
            result, seconds = _timed(factory, model="all", workloads=["ten-saves"])
            result.assert_no_violations()
            if best is None or seconds < best[1]:
                best = (result, seconds)
        assert best is not None
        result, seconds = best
        raw, distinct = _states(result)
        ops = result.results[0].operations
        rates[label] = raw / seconds
        print(
            f"  {label:13} {result.mode:11} {ops:3} operations  {raw:5} crash states "
            f"({distinct} distinct)  {seconds:6.3f} s  {rates[label]:8.0f} states/s"
        )
    ratio = rates["protocol"] / rates["interception"]
    print(f"  ratio protocol/interception per crash state: {ratio:.2f}x (target <= 3)")

    print("10 saves: workload ten-saves, --model all --faults, through interception")
    result, seconds = _timed(intercepted, model="all", faults=True, workloads=["ten-saves"])
    result.assert_no_violations()
    raw, distinct = _states(result)
    faults = sum(r.faults for r in result.results)
    print(
        f"  {result.results[0].operations} operations, {faults} faulted runs, {raw} crash "
        f"states ({distinct} distinct): {seconds:.1f} s wall (target < 30 s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Interception overhead: operations per second through ``intercept()`` and directly.

    python benchmarks/bench_intercept.py [--saves N] [--repeat N]

One workload, the reference storage's saves, marks and deletes, run three ways into a
fresh ``RecordingFileSystem(MemoryFileSystem)``:

* **direct**: ``FileStateStorage(recording_fs, base)``: protocol calls;
* **intercepted**: ``FileStateStorage(OsFileSystem(), base)`` under one ``intercept()``
  (patched once; ``switch()`` per run, as a verify engine does per crash state);
* **setup**: the cost of entering and leaving ``intercept()`` (the Patcher): the
  first time (every loaded module scanned) and later (cached).

Prints recorded operations per second for each and their ratio. Figures are printed,
never asserted (timings belong to benchmarks, not tests).
"""

from __future__ import annotations

import argparse
import time

from crashpoint.core import AgentState, FileStateStorage, Message, TextPart
from crashpoint.faultfs import (
    MemoryFileSystem,
    OsFileSystem,
    RecordingFileSystem,
    intercept,
)

BASE = "/base"


def workload(storage: FileStateStorage, saves: int) -> None:
    state = AgentState.new("s1")
    for i in range(saves):
        state.messages.append(Message("user", (TextPart("hello " * (50 * i + 1)),)))
        storage.save(state)
    storage.save(AgentState.new("s2"))
    storage.mark_not_resumable("s1")
    storage.delete("s2")


def fresh() -> RecordingFileSystem:
    return RecordingFileSystem(MemoryFileSystem(dirs=(BASE,)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()

    start = time.perf_counter()
    ops = 0
    for _ in range(args.repeat):
        fs = fresh()
        workload(FileStateStorage(fs, BASE), args.saves)
        ops += len(fs.trace.ops)
    direct = time.perf_counter() - start

    setups = []
    for _ in range(3):
        start = time.perf_counter()
        with intercept(fresh(), root=BASE):
            pass
        setups.append(time.perf_counter() - start)

    start = time.perf_counter()
    iops = 0
    with intercept(fresh(), root=BASE) as icpt:
        for _ in range(args.repeat):
            fs = fresh()
            icpt.switch(fs)
            workload(FileStateStorage(OsFileSystem(), BASE), args.saves)
            iops += len(fs.trace.ops)
    intercepted = time.perf_counter() - start

    assert iops == ops, (iops, ops)
    print(f"workload: {ops // args.repeat} operations, {args.repeat} runs")
    print(f"direct      {ops / direct:10.0f} ops/s  ({direct:.3f} s)")
    print(f"intercepted {iops / intercepted:10.0f} ops/s  ({intercepted:.3f} s)")
    print(f"ratio       {intercepted / direct:10.2f}x")
    print(f"setup       {setups[0] * 1000:10.1f} ms first intercept() (enter + exit: module scan)")
    print(
        f"            {min(setups[1:]) * 1000:10.1f} ms later ones (pyfakefs's module cache warm)"
    )


if __name__ == "__main__":
    main()

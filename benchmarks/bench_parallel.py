"""Parallel speed-ups on this machine, measured in one run.

    python benchmarks/bench_parallel.py

* ``crashpoint explore --faults --model all --jobs 2`` over ``--jobs 1``
  (one exploration spread over a process pool; the reports are compared too);
* ``pytest -n 2`` over ``pytest -n 0`` on ``benchmarks/xdist_suite`` (the zoo, one
  test per target, distributed by pytest-xdist).

Targets (issue: scale-out): ≥ 1.8× each on 2 cores. Printed, never asserted.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
BIN = pathlib.Path(sys.executable).parent


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    crashpoint = str(BIN / "crashpoint")
    with tempfile.TemporaryDirectory() as tmp:
        args = ["explore", "--faults", "--model", "all"]
        t1 = timed([crashpoint, *args, "--jobs", "1", "--out", f"{tmp}/j1"])
        t2 = timed([crashpoint, *args, "--jobs", "2", "--out", f"{tmp}/j2"])
        same = json.loads(pathlib.Path(f"{tmp}/j1/report.json").read_text()) == json.loads(
            pathlib.Path(f"{tmp}/j2/report.json").read_text()
        )
    print(
        f"crashpoint explore --faults --model all: --jobs 1 {t1:.2f} s, --jobs 2 {t2:.2f} s, "
        f"speed-up {t1 / t2:.2f}x, same report: {same}"
    )
    suite = str(HERE / "xdist_suite")
    base = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        suite,
        "-c",
        "/dev/null",
        suite,
    ]
    n0 = timed([*base, "-n", "0"])
    n2 = timed([*base, "-n", "2"])
    print(
        f"pytest benchmarks/xdist_suite: -n 0 {n0:.2f} s, -n 2 {n2:.2f} s, speed-up {n0 / n2:.2f}x"
    )


if __name__ == "__main__":
    main()

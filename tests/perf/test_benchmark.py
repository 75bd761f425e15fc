"""Issue 11's benchmark measures what it says: its lower bound runs the same work as
explore's recording, and its output keeps the issue's last line. Figures are never
asserted (they are the benchmark's to print)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re
import subprocess
import sys
from types import ModuleType

import pytest
from crashpoint.faultfs import MODELS, crash_points
from crashpoint.scenarios import TARGETS, record

ROOT = pathlib.Path(__file__).parents[2]
BENCH = ROOT / "benchmarks" / "bench_explore.py"
# one repeat of each figure, the big workloads one save: the output, not the figures
SMALL = ["--repeat", "1", "--saves", "1", "--rss-saves", "1", "--rss-repeat", "1", "--skip-cli"]


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_explore", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_lower_bound_leaves_the_disk_the_recorded_run_leaves(bench: ModuleType) -> None:
    # The workloads alone must do the work explore records, or the bound flatters:
    # each storage scenario ends on the same files and directories as its recording.
    workloads = bench.storage_workloads()
    assert len(workloads) >= 20
    writing = 0  # the scenarios whose run changes the disk (the others only load)
    for workload in workloads:
        rec = record(workload, TARGETS["reference"])
        *_, end = crash_points(MODELS["process-crash"], rec.initial, rec.ops)
        (recorded,) = end.states
        alone = bench.run_alone(workload).crash_state()
        assert alone == recorded, workload.name
        writing += recorded != rec.initial
    assert writing >= 15


def test_the_benchmark_runs_and_ends_with_the_issue_line(tmp_path: pathlib.Path) -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), *SMALL],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    lines = out.strip().splitlines()
    number = r"[0-9]+(\.[0-9]+)?"
    assert re.fullmatch(
        rf"states/s={number} floor_ratio={number} big_states/s={number} peak_rss_mib={number}",
        lines[-1],
    ), lines[-1]
    bound = [line for line in lines if line.startswith("lower bound, every model:")]
    assert len(bound) == 1, out
    assert len(re.findall(r"/ floor [0-9.]+ \(min", bound[0])) == 2, bound[0]
    for model in MODELS:
        assert any(line.startswith(model + " ") for line in lines), model


def test_the_engine_table_is_made_from_benchmark_rows(tmp_path: pathlib.Path) -> None:
    # docs/field-results.md's table from `bench_engines.py --out` rows: findings apart from
    # recovery, a bound and an incomplete verdict said, a row that failed shown as failed
    rows = tmp_path / "rows.jsonl"
    row = {
        "engine": "lmdb",
        "config": "locked",
        "version": "0.9.36",
        "families": ["ext4"],
        "seconds": 2.25,
        "processes": 1234,
        "distinct": 18,
        "cut": 54_000_000,
        "incomplete": ["A3 unjudged"],
        "volatile": ["/data/store/lock.mdb"],
        "summary": {"atomicity": 17, "recovery": 3},
    }
    clean = dict(row, summary={"unjudged": 2}, cut=0, incomplete=[], volatile=[])
    failed = {"spec": "git:default", "families": ["posix"], "error": "KeyError: 'x'"}
    rows.write_text("\n".join(json.dumps(r) for r in (row, clean, failed)) + "\n")
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_engines.py"), "--table", str(rows)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert len(out) == 5
    assert out[2] == (
        "| LMDB (py-lmdb) 0.9.36 | locked | ext4 | 17 atomicity; 3 recovery | 2.2 s | 1,234 "
        "| 18 | 5.4e+07 | findings, bounded, incomplete, lock.mdb volatile |"
    )
    assert "| none; 2 unjudged |" in out[3] and out[3].endswith("| clean |")
    assert "git:default" in out[4] and "error: KeyError" in out[4]

"""``crashpoint report merge`` (issue 21): the N shard reports of one run merge into the
unsharded run's report (digest equality: sha256 of report.json without ``version`` and
timings, ``benchmarks/report_digests.py``), and reports that are not the N shards of one
run are refused (one line, exit 2)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crashpoint._cli import main

ROOT = Path(__file__).resolve().parents[2]
STORES = ROOT / "examples" / "stores" / "jsonstore.py"


def _digest_function() -> Callable[[Any], str]:
    spec = importlib.util.spec_from_file_location(
        "report_digests", ROOT / "benchmarks" / "report_digests.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.digest  # type: ignore[no-any-return]


digest = _digest_function()


def _report(path: Path) -> dict[str, Any]:
    return json.loads((path / "report.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _run(args: list[str], cwd: Path, apart: bool) -> int:
    """``crashpoint ARGS``: through ``main`` or, ``apart``, in a process of its own (as
    on the N machines of a CI matrix: hypothesis draws the ``random`` workload from
    constants of the modules loaded, which differ in a process that ran other work)."""
    if not apart:
        return main(args)
    done = subprocess.run(
        [sys.executable, "-m", "crashpoint", *args], cwd=cwd, capture_output=True, text=True
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode


def _split(tmp_path: Path, args: list[str], n: int, apart: bool = False) -> tuple[int, list[Path]]:
    """Run ``args`` unsharded into ``tmp_path/whole`` and as ``n`` shards; returns the
    unsharded exit code and the shard directories."""
    code = _run([*args, "--out", str(tmp_path / "whole")], tmp_path, apart)
    shards = []
    for k in range(1, n + 1):
        out = tmp_path / f"shard{k}"
        assert _run([*args, "--shard", f"{k}/{n}", "--out", str(out)], tmp_path, apart) in (0, 1)
        shards.append(out)
    return code, shards


def _merged_equals_whole(
    tmp_path: Path, args: list[str], n: int = 4, apart: bool = False
) -> dict[str, Any]:
    code, shards = _split(tmp_path, args, n, apart)
    merged = tmp_path / "merged"
    assert main(["report", "merge", *map(str, reversed(shards)), "--out", str(merged)]) == code
    whole, together = _report(tmp_path / "whole"), _report(merged)
    assert "shard" not in together and together.get("run_id") == whole.get("run_id")
    assert digest(together) == digest(whole)
    for name in ("report.md", "report.html"):
        assert (merged / name).stat().st_size > 0
    return whole


def test_explore_model_all_faults_in_4_shards_merges_to_the_unsharded_report(
    tmp_path: Path,
) -> None:
    whole = _merged_equals_whole(tmp_path, ["explore", "--model", "all", "--faults"])
    parts = [_report(tmp_path / f"shard{k}") for k in range(1, 5)]
    # each shard examined only part of the space (a crash point with states in two shards
    # is examined by both: the sum of the shards' own counts is not the whole's)
    assert all(p["totals"]["distinct_states"] < whole["totals"]["distinct_states"] for p in parts)
    assert sum(p["totals"]["crash_points"] for p in parts) > whole["totals"]["crash_points"]


@pytest.mark.parametrize(
    "more",
    [
        # shrinking (resize under the power-loss models) and the random workload's search
        ["--model", "all", "--workload", "resize", "--workload", "random", "--examples", "5"],
        ["--model", "all", "--faults", "--workload", "first-save"],
    ],
    ids=["shrink-and-random", "faults"],
)
def test_verify_in_4_shards_merges_to_the_unsharded_report(tmp_path: Path, more: list[str]) -> None:
    args = ["verify", f"{STORES}:NoFsyncJsonStore", *more]
    whole = _merged_equals_whole(tmp_path, args, apart="random" in more)
    assert whole["totals"]["violations"] > 0  # findings to merge, not only counts
    if "resize" in more:
        assert whole["shrunk"]


def test_verify_of_a_clean_store_in_3_shards_merges_with_exit_0(tmp_path: Path) -> None:
    whole = _merged_equals_whole(
        tmp_path, ["verify", f"{STORES}:JsonStore", "--model", "power-loss", "--faults"], 3
    )
    assert whole["verdict"] == "clean"


def test_the_run_id_leaves_out_the_shard_and_the_workers(tmp_path: Path) -> None:
    args = ["explore", "--scenario", "first-save", "--model", "power-loss"]
    assert main([*args, "--out", str(tmp_path / "a"), "--jobs", "1"]) == 0
    assert main([*args, "--out", str(tmp_path / "b"), "--shard", "2/3"]) in (0, 1)
    assert main([*args, "--faults", "--out", str(tmp_path / "c")]) == 0
    a, b, c = (_report(tmp_path / x) for x in "abc")
    assert a.get("run_id") and a.get("run_id") == b.get("run_id") != c.get("run_id")
    assert b.get("shard", {}).get("index") == 2 and b["shard"]["count"] == 3
    assert "shard" not in a


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    out = []
    for k in (1, 2, 3):
        d = tmp_path / f"s{k}"
        args = ["explore", "--scenario", "first-save", "--shard", f"{k}/3", "--out", str(d)]
        assert main(args) in (0, 1)
        out.append(d)
    return out


def _refused(capsys: pytest.CaptureFixture[str], args: list[str], *words: str) -> None:
    assert main(["report", "merge", *args]) == 2
    err = capsys.readouterr().err
    line = err.strip().splitlines()[0]
    assert all(w in line for w in words), err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 2


def test_merge_refuses_a_missing_shard(
    shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _refused(capsys, [str(shards[0]), str(shards[2]), "--out", str(tmp_path / "m")], "2", "missing")
    assert not (tmp_path / "m" / "report.json").exists()


def test_merge_refuses_a_shard_given_twice(
    shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [*map(str, shards), str(shards[1] / "report.json"), "--out", str(tmp_path / "m")]
    _refused(capsys, args, "shard 2/3 given twice")


def test_merge_refuses_shards_of_different_runs(
    shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other"
    assert main(["explore", "--scenario", "delete", "--shard", "2/3", "--out", str(other)]) in (
        0,
        1,
    )
    args = [str(shards[0]), str(other), str(shards[2]), "--out", str(tmp_path / "m")]
    _refused(capsys, args, "different runs")


def test_merge_refuses_a_report_that_is_no_shard(
    shards: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = tmp_path / "whole"
    assert main(["explore", "--scenario", "first-save", "--out", str(whole)]) == 0
    _refused(capsys, [str(whole), *map(str, shards[1:]), "--out", str(tmp_path / "m")], "--shard")
    (tmp_path / "junk.json").write_text("[1, 2")
    _refused(capsys, [str(tmp_path / "junk.json"), "--out", str(tmp_path / "m")], "not a")
    _refused(capsys, [str(tmp_path / "nowhere"), "--out", str(tmp_path / "m")], "cannot read")


def test_verify_shard_refuses_exec_and_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = ["--out", str(tmp_path / "o")]
    exec_args = ["--exec", "--save", "x {dir} {value}", "--load", "x {dir}"]
    code = main(["verify", *exec_args, *out, "--shard", "1/2"])
    assert code == 2 and "--shard does not apply to --exec" in capsys.readouterr().err
    target = f"{STORES}:JsonStore"
    code = main(["verify", target, "--shard", "1/2", "--baseline", str(tmp_path / "r.json"), *out])
    assert code == 2 and "--baseline" in capsys.readouterr().err


def test_verify_state_storage_in_3_shards_merges_to_the_unsharded_report(tmp_path: Path) -> None:
    target = f"{ROOT}/tests/verify/targets.py:reference"
    args = ["verify", target, "--kind", "state-storage", "--model", "power-loss"]
    whole = _merged_equals_whole(
        tmp_path, [*args, "--examples", "2", "--workload", "first-save", "--workload", "delete"], 3
    )
    assert whole["conformance"] and whole["verdict"] == "clean"


def test_verify_with_hypothetical_findings_in_2_shards_merges_to_the_unsharded_report(
    tmp_path: Path,
) -> None:
    """Each shard's hypothetical findings (a tear below the block, issue 20) come back in
    the merged report, listed apart as in the unsharded one."""
    store = ROOT / "tests" / "verify" / "stores.py"
    args = ["verify", f"{store}:BlockAtomicStore", "--model", "ext4", "--atomic-write", "512"]
    whole = _merged_equals_whole(tmp_path, [*args, "--workload", "first-save"], 2)
    assert whole["verdict"] == "clean" and whole["totals"]["hypothetical"] > 0

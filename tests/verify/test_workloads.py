"""The default document workloads reach where stores break (issue 22, undeserved
cleans): 16 saves, values across the 4 KiB and 64 KiB boundaries (``--sizes`` moves
them), a ``large-values`` workload across 1 MiB, torn states counted once, a clock that
does not depend on the machine's speed. Findings pinned by invariant, model and crash
state."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import crashpoint
import pytest
import workload_stores
from crashpoint._cli import main

if TYPE_CHECKING:
    from crashpoint.scenarios.kinds.document.kind import DocumentKind

HERE = Path(__file__).resolve().parent
STORES = HERE / "workload_stores.py"
EXAMPLE = HERE.parent.parent / "examples" / "stores" / "jsonstore.py"
_ERRNOS = ("ENOSPC", "EDQUOT", "EIO")


def _cli(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> tuple[int, str, str]:
    code = main(["verify", *args, "--out", str(out)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return data


class _NoRunner:
    base_dir = "/data/store"


def _kind(**options: Any) -> DocumentKind:
    from crashpoint.scenarios.kinds.document.kind import DocumentKind

    return DocumentKind(_NoRunner(), "t", **options)  # type: ignore[arg-type]


def test_many_saves_is_a_default_workload_of_16_saves_across_4k_and_64k() -> None:
    from crashpoint.scenarios.kinds.document.kind import DOC_WORKLOADS, value_bytes

    assert "many-saves" in DOC_WORKLOADS
    saves = _kind().workload("many-saves").values
    sizes = [value_bytes(v) for v in saves]
    assert len(saves) == 16
    for boundary in (4096, 65536):
        assert any(n < boundary for n in sizes) and any(n > boundary for n in sizes)
        # crossed both ways between consecutive saves
        pairs = list(itertools.pairwise(sizes))
        assert any(a < boundary < b for a, b in pairs)
        assert any(a > boundary > b for a, b in pairs)
    assert len({json.dumps(v) for v in saves}) == 16  # every save a new value


def test_sizes_sets_the_boundaries_and_large_values_crosses_one_mib() -> None:
    from crashpoint.scenarios.kinds.document.kind import many_saves_bytes, parse_sizes, value_bytes

    assert parse_sizes("4K,64K,1M") == (4096, 65536, 2**20)
    assert parse_sizes("64k, 4096") == (4096, 65536)
    wide = [value_bytes(v) for v in _kind(sizes=(4096, 65536, 2**20)).workload("many-saves").values]
    assert any(n > 2**20 for n in wide) and any(2**16 < n < 2**20 for n in wide)
    assert len(many_saves_bytes((4096, 65536, 2**20))) == 16
    large = [value_bytes(v) for v in _kind().workload("large-values").values]
    assert any(n < 2**20 for n in large) and any(n > 2**20 for n in large)


@pytest.mark.parametrize("bad", ["", "4Q", "-4K", "100", "1G", "4K,,64K", "65M"])
def test_bad_sizes_are_a_one_line_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, bad: str
) -> None:
    from crashpoint.scenarios.kinds.document.kind import parse_sizes

    with pytest.raises(ValueError, match="--sizes"):
        parse_sizes(bad)
    code, _out, err = _cli(capsys, tmp_path / "r", f"{STORES}:SoundStore", "--sizes", bad)
    assert code == 2
    assert "--sizes" in err.splitlines()[0] and "Traceback" not in err
    assert not (tmp_path / "r" / "report.json").exists()


def test_a_store_rewriting_in_place_on_its_7th_save_is_caught_by_default(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, _ = _cli(capsys, tmp_path, f"{STORES}:SeventhSaveInPlaceStore")
    rep = _report(tmp_path)
    assert code == 1 and rep["verdict"] == "violation"
    (a1,) = [
        v
        for s in rep["scenarios"]
        if s["name"].startswith("many-saves")
        for v in s["violations"]
        if v["invariant"] == "A1"
    ][:1]
    assert a1["model"] == "process-crash"
    assert a1["crash_state"] == {"doc.json": "empty"}  # truncated by the in-place rewrite


def test_a_store_writing_values_over_16k_in_place_is_caught_by_default(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, _ = _cli(capsys, tmp_path, f"{STORES}:LargeInPlaceStore")
    rep = _report(tmp_path)
    assert code == 1
    found = {
        (s["name"].split(":")[0], v["invariant"], v["model"])
        for s in rep["scenarios"]
        for v in s["violations"]
    }
    assert ("many-saves", "A1", "process-crash") in found


def test_the_sound_store_is_clean_on_the_default_workloads() -> None:
    from crashpoint.scenarios.kinds.document.kind import DOC_WORKLOADS

    result = crashpoint.verify(workload_stores.SoundStore)
    result.assert_no_violations()
    assert {r.workload for r in result.results} == set(DOC_WORKLOADS)


def test_a_store_broken_once_2ms_have_passed_is_caught_at_the_same_save_every_run() -> None:
    # The virtual clock: each reading is 1 ms later, so the 3rd save (save#2) is the
    # first one more than 2 ms after the store was made, on any machine at any load.
    runs = [
        crashpoint.verify(workload_stores.LateClockStore, workloads=["resize"], shrink=False)
        for _ in range(2)
    ]
    for result in runs:
        assert "A1" in result.killed_by()
        first = min(
            (c for c in result.counterexamples if c.invariant == "A1"),
            key=lambda c: c.crash_point,
        )
        assert first.model == "process-crash"
        assert first.crash_state["doc.json"] == "empty"  # the in-place rewrite's truncation
    points = [sorted({c.crash_point for c in r.counterexamples}) for r in runs]
    assert points[0] == points[1]


def test_torn_states_of_one_write_that_leave_the_same_image_are_one_state() -> None:
    # A write rewriting 64 KiB of which only the last page changes: its torn prefixes
    # (one per 4 KiB page) leave the old image but for the last page: one state, not 16.
    from crashpoint.faultfs import PROCESS_CRASH, CrashState, Op, OpKind, crash_points

    old = b"a" * 65536
    initial = CrashState((("/d/f", old),), ("/d",))
    new = b"a" * 61440 + b"b" * 4096
    ops = [Op(0, OpKind.WRITE, "/d/f", offset=0, data=new)]
    (point, _end) = list(crash_points(PROCESS_CRASH, initial, ops))
    assert [s.files for s in point.states] == [(("/d/f", old),)]
    # and the engine judges it once: raw states counted, one distinct
    result = crashpoint.verify(workload_stores.SoundStore, workloads=["many-saves"])
    assert result.results[0].distinct_states <= result.results[0].raw_states


def test_a_recovery_path_after_a_fault_is_torn_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The EXDEV fallback copies the document in place: a crash after its truncation (two
    # operations after the failed rename) leaves an empty document: A1. Only the crash
    # point right after the fault was explored before issue 22.
    code, _, _ = _cli(
        capsys, tmp_path, f"{STORES}:ExdevFallbackStore", "--faults", "--workload", "first-save"
    )
    rep = _report(tmp_path)
    assert code == 1
    found = [
        v
        for s in rep["scenarios"]
        for v in s["violations"]
        if v["invariant"] == "A1" and v["fault"].endswith(":EXDEV")
    ]
    assert found, rep["scenarios"][0]["violations"]
    assert found[0]["crash_state"]["doc.json"] == "empty"


def test_crash_points_past_the_recovery_path_are_counted_and_judged_on_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # DegradedAfterFailureStore writes in place only from the second save after a failed
    # one: by default those crash points of the faulted runs are not judged, and the report
    # counts them (never a silent clean); --fault-crash-points all judges them: A1/A2.
    target = f"{STORES}:DegradedAfterFailureStore"
    args = ("--faults", "--workload", "resize")
    code, out, _ = _cli(capsys, tmp_path / "recovery", target, *args)
    rep = _report(tmp_path / "recovery")
    assert code == 0 and rep["verdict"] == "clean"
    assert rep["fault_points_not_examined"] > 0
    assert f"{rep['fault_points_not_examined']:,} crash points of faulted runs" in out
    code, out, _ = _cli(capsys, tmp_path / "all", target, *args, "--fault-crash-points", "all")
    rep = _report(tmp_path / "all")
    assert code == 1 and rep["fault_points_not_examined"] == 0
    found = {v["invariant"] for s in rep["scenarios"] for v in s["violations"] if v.get("fault")}
    assert found & {"A1", "A2"}, found
    assert "crash points of faulted runs" not in out


def test_fault_crash_points_without_faults_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = _cli(capsys, tmp_path, f"{STORES}:SoundStore", "--fault-crash-points", "all")
    assert code == 2 and "--faults" in err and "Traceback" not in err


def test_a_crash_state_already_judged_in_a_faulted_run_is_not_judged_again() -> None:
    # ENOSPC, EDQUOT and EIO at the in-place store's write leave the same run (the save
    # raises, nothing written): the crash state after it is judged once, its A1 found
    # once (three times before issue 22).
    from crashpoint.scenarios.targets.user import load_factory

    in_place = load_factory(f"{EXAMPLE}:InPlaceJsonStore")
    result = crashpoint.verify(in_place, workloads=["first-save"], faults=True, shrink=False)
    errors = [c for c in result.counterexamples if c.fault.split(":")[-1] in _ERRNOS]
    assert [(c.invariant, c.model, c.crash_state) for c in errors] == [
        ("A1", "process-crash", {"doc.json": "empty"})
    ]
    short = {c.fault.split(":")[-1] for c in result.counterexamples if "short" in c.fault}
    assert short == {"short-write", "short-count"}  # one failed, one acknowledged: both judged


def test_shrinking_keeps_each_invariant_with_its_own_smallest_workload() -> None:
    # A1 needs one save, A2 needs seven: a shrinker keeping "any invariant broken" ends
    # on one save and A2 vanishes.
    result = crashpoint.verify(workload_stores.TwoBugsStore, workloads=["ten-saves"])
    assert {"A1", "A2"} <= set(result.killed_by())
    by_inv = {c.invariant: c.workload for c in result.counterexamples}
    assert len(by_inv["A1"].split(":")[1].split(",")) == 1
    assert len(by_inv["A2"].split(":")[1].split(",")) >= 7
    assert result.shrunk["ten-saves (process-crash) A2"] == by_inv["A2"]


def test_the_random_workloads_bounds_stand_next_to_the_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _cli(
        capsys,
        tmp_path,
        f"{STORES}:SoundStore",
        "--workload",
        "first-save",
        "--workload",
        "random",
        "--examples",
        "3",
    )
    rep = _report(tmp_path)
    assert code == 0 and rep["verdict"] == "clean"
    assert "workload_bounds" in rep
    bounds = rep["workload_bounds"]
    assert bounds["first-save"]["saves"] == 1 and bounds["first-save"]["value_bytes"] > 0
    assert bounds["random"]["max_saves"] == 6 and bounds["random"]["examples"] == 3
    assert 1 <= bounds["random"]["saves"] <= 6 and bounds["random"]["value_bytes"] > 0
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    for text in (out, md):
        line = next(x for x in text.splitlines() if "workloads:" in x)
        assert "random (3 examples, at most 6 saves each)" in line
        assert "every crash state of these workloads" in line
        assert "exhaustive" not in text.replace("every crash state of these workloads", "")


def test_sizes_and_large_values_through_the_cli_cross_one_mib(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 22 (undeserved cleans): ``--sizes 4K,64K,1M`` makes ``many-saves`` cross
    every boundary named, up to 1 MiB, and ``large-values`` crosses 1 MiB; the bounds
    reached stand in the report, every page boundary crossed (75a7228 had neither option
    nor workload, and its largest value was about 9 KB: exit 2)."""
    code, _out, err = _cli(
        capsys,
        tmp_path,
        f"{EXAMPLE}:JsonStore",
        "--sizes",
        "4K,64K,1M",
        "--workload",
        "many-saves",
        "--workload",
        "large-values",
    )
    assert code == 0, err
    rep = _report(tmp_path)
    bounds = rep["workload_bounds"]
    assert bounds["many-saves"]["saves"] >= 16
    assert bounds["many-saves"]["value_bytes"] > 2**20
    assert bounds["large-values"]["value_bytes"] > 2**20
    assert rep["value_sizes"]["max"] > 2**20
    assert rep["value_sizes"]["boundaries_not_crossed"] == []
    assert sum(sc["crash_points"] for sc in rep["scenarios"]) > 0

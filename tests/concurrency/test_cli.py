"""``crashpoint verify TARGET --actors N`` (issue 25): exit codes, reports, the replay."""

from __future__ import annotations

import json
import pathlib
import shlex

import pytest
from crashpoint._cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
STORES = ROOT / "examples" / "concurrency" / "stores.py"


def _verify(tmp: pathlib.Path, *args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    out = tmp / "out"
    code = main(["verify", *args, "--out", str(out)])
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return code, report


def test_the_shared_tmp_store_fails_with_i8_and_its_printed_replay_finds_it_again(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = _verify(tmp_path, f"{STORES}:SharedTmpStore", "--workload", "concurrent-saves")
    assert code == 1
    assert report["actors"] == 2 and report["preemption_bound"] == 2  # the workload implies 2
    (wl,) = report["workloads"]
    assert wl["schedules"] > 1 and wl["exhaustive"] is False and wl["beyond_bound"] > 0
    i8 = next(f for f in report["findings"] if f["invariant"] == "I8")
    assert i8["preemptions"] <= 2
    text = capsys.readouterr().out
    assert "actor 0" in text and "actor 1" in text and "preemption" in text
    md = (tmp_path / "out" / "report.md").read_text()
    assert "at most 2 preemptions" in md and "| actor 0 | actor 1 |" in md
    page = (tmp_path / "out" / "report.html").read_text()
    assert '<tr class="preemption">' in page and '<tr class="crash">' in page
    argv = shlex.split(i8["replay"])
    assert argv[:2] == ["crashpoint", "verify"] and "--schedule" in argv
    code, again = _verify(tmp_path / "replay", *argv[2:])
    assert code == 1
    assert {f["invariant"] for f in again["findings"]} >= {"I8"}
    assert again["workloads"][0]["schedules"] == 1 and not again["workloads"][0]["exhaustive"]


def test_the_locked_store_passes_and_the_bound_is_stated(tmp_path: pathlib.Path) -> None:
    code, report = _verify(tmp_path, f"{STORES}:LockedUpdateStore", "--actors", "2")
    assert code == 0, report["findings"]
    assert [w["workload"] for w in report["workloads"]] == [
        "concurrent-saves",
        "concurrent-update",
        "save-while-load",
    ]
    assert all(w["crash_states"] > 0 for w in report["workloads"])
    assert report["preemption_bound"] == 2


def test_last_writer_wins_is_said_in_the_report(tmp_path: pathlib.Path) -> None:
    code, report = _verify(
        tmp_path,
        f"{STORES}:PidTmpStore",
        "--workload",
        "concurrent-update",
        "--last-writer-wins",
        "--preemptions",
        "1",
    )
    assert code == 0, report["findings"]
    assert report["last_writer_wins"] is True and report["preemption_bound"] == 1
    assert all(f["invariant"] != "L1" for f in report["findings"])
    assert "--last-writer-wins" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize(
    "args",
    [
        ["--actors", "2", "--exec", "true"],
        ["--actors", "2", "--workload", "resize"],
        ["--preemptions", "1"],
        ["--actors", "2", "--schedule", "01x"],
        ["--actors", "2", "--schedule", "01"],
        ["--actors", "0"],
    ],
)
def test_bad_concurrency_options_are_usage_errors(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    target = [] if "--exec" in args else [f"{STORES}:SharedTmpStore"]
    assert main(["verify", *target, *args, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if "--exec" in args:
        assert "for now" in err


def test_the_reference_with_two_writers_has_no_i8_l1_or_d2_and_says_it_is_last_writer_wins(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 25, acceptance 3: the reference (SPEC.md §6 locks each save) under every
    concurrent workload and every model; L1 is not judged because the target declares
    last-writer-wins, and the report and the terminal say who declared it."""
    ref = ROOT / "examples" / "concurrency" / "reference.py"
    code, report = _verify(tmp_path, f"{ref}:ReferenceDocument", "--actors", "2", "--model", "all")
    assert code == 0, report["findings"]
    assert report["last_writer_wins"] is True
    assert report["last_writer_wins_declared_by"] == "target"
    assert len(report["workloads"]) == 3
    assert all(w["crash_states"] > 0 for w in report["workloads"])
    assert "last-writer-wins declared by the target" in capsys.readouterr().out
    code, seed = _verify(tmp_path / "seed", f"{ref}:SeedDocument", "--actors", "2")
    assert code == 1
    assert {"I8", "D2"} <= {f["invariant"] for f in seed["findings"]}


def test_without_its_declaration_the_references_racing_updates_are_a_lost_update(
    tmp_path: pathlib.Path,
) -> None:
    """The check behind acceptance 3 can fail: undeclared, two read-modify-write updates
    of the reference lose one (L1), as SPEC.md §6 (a lock per save, not per update) makes
    them."""
    target = tmp_path / "undeclared.py"
    target.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from examples.concurrency.reference import ReferenceDocument\n"
        "class Undeclared(ReferenceDocument):\n"
        "    crashpoint_last_writer_wins = False\n"
    )
    spec = f"{target}:Undeclared"
    args = ("--workload", "concurrent-update", "--model", "process-crash")
    code, report = _verify(tmp_path, spec, *args)
    assert code == 1
    assert report["last_writer_wins"] is False and report["last_writer_wins_declared_by"] is None
    assert "L1" in {f["invariant"] for f in report["findings"]}

"""The command line, called as ``main([...])`` (STYLE.md §14)."""

from __future__ import annotations

import json
import pathlib

import pytest
from crashpoint._cli import main
from crashpoint.scenarios import MUTANTS, SCENARIOS


def run(args: list[str], out: pathlib.Path) -> tuple[int, dict]:  # type: ignore[type-arg]
    code = main(["explore", "--out", str(out), *args])
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
    return code, report


def test_default_run_passes_and_writes_both_reports(tmp_path: pathlib.Path) -> None:
    code, report = run([], tmp_path)
    assert code == 0
    assert report["model"] == "process-crash" and report["target"] == "reference"
    assert len(report["scenarios"]) == len(SCENARIOS) >= 10
    for s in report["scenarios"]:
        assert {"name", "crash_points", "distinct_states", "violations"} <= set(s)
    assert report["totals"]["crash_points"] >= 60
    assert report["totals"]["violations"] == 0
    assert report["totals"]["distinct_states"] == sum(
        s["distinct_states"] for s in report["scenarios"]
    )
    md = (tmp_path / "report.md").read_text()
    assert "no violation" in md and "three-saves" in md


@pytest.mark.parametrize(
    "name", [n for n, t in MUTANTS.items() if t.expected and t.expected[1] == "process-crash"]
)
def test_every_mutant_exits_1_with_its_counterexample(name: str, tmp_path: pathlib.Path) -> None:
    code, report = run(["--target", f"mutant:{name}"], tmp_path)
    assert code == 1
    ce = report["counterexample"]
    assert ce is not None
    assert {"invariant", "crash_point", "crash_state", "load_returned", "replay"} <= set(ce)
    assert {"index", "operation"} <= set(ce["crash_point"])
    killed = {i for s in report["scenarios"] for i in s["killed_by"]}
    assert MUTANTS[name].expected[0] in killed  # type: ignore[index]


def test_seed_exits_1_with_the_e2_counterexample(tmp_path: pathlib.Path) -> None:
    code, report = run(["--target", "seed"], tmp_path)
    assert code == 1
    entry = next(s for s in report["scenarios"] if s["name"] == "stale-ended-marker")
    v = entry["violations"][0]
    assert v["invariant"] == "E2"
    assert v["crash_point"]["operation"].startswith("unlink(")
    # replaying the counterexample reproduces it
    replay = v["replay"].split()[2:]  # drop "crashpoint explore"
    code2, again = run(replay, tmp_path / "replay")
    assert code2 == 1
    assert again["counterexample"]["crash_point"] == v["crash_point"]


@pytest.mark.parametrize(
    "args",
    [
        ["--scenario", "no-such-scenario"],
        ["--target", "mutant:no-such"],
        ["--target", "nonsense"],
        ["--model", "cosmic-ray"],
        ["--shard", "3/2"],
        ["--shard", "x"],
        ["--crash-point", "-1"],
        ["--bogus-flag"],
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(
    args: list[str], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["explore", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert "error" in err and "Traceback" not in err
    assert not (out / "report.json").exists()


def test_out_that_is_a_file_is_refused(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "file"
    f.write_text("keep me")
    assert main(["explore", "--out", str(f)]) == 2
    assert f.read_text() == "keep me"
    assert "not a directory" in capsys.readouterr().err


def test_list_shows_scenarios_and_mutants(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in SCENARIOS)
    assert all(name in out for name in MUTANTS)


def test_no_command_is_a_usage_error() -> None:
    assert main([]) == 2


@pytest.mark.parametrize(
    "args",
    [
        ["--crash-point", "1000"],
        ["--crash-point", "٣"],
        ["--fault", "1000:ENOSPC"],
        ["--fault", "0:short-write", "--scenario", "first-save"],  # op 0 is a mkdir
        ["--fault", "3:EPERM"],
        ["--fault", "3:ENOSPC", "--faults"],
        ["--zoo", "--target", "seed"],
        ["--zoo", "--crash-point", "3"],
        ["--jobs", "0"],
        ["--jobs", "abc"],
        ["--shard", "0/3"],
        ["--shard", "1/0"],
    ],
)
def test_replays_that_match_nothing_and_clashing_flags_are_usage_errors(
    args: list[str], tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explore", "--out", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err
    assert "crashpoint: error:" in err and "usage:" in err and "Traceback" not in err


def test_fault_names_accept_aliases_and_any_case(tmp_path: pathlib.Path) -> None:
    from crashpoint.faultfs import FaultKind
    from crashpoint.scenarios import parse_fault

    assert parse_fault("3:fsyncgate").kind is FaultKind.FSYNC_LOST
    assert parse_fault("3:enospc") == parse_fault("3:ENOSPC")
    code = main(["explore", "--scenario", "first-save", "--fault", "2:eio", "--out", str(tmp_path)])
    assert code == 0


def test_repeated_scenario_counts_once(tmp_path: pathlib.Path) -> None:
    code, report = run(["--scenario", "first-save", "--scenario", "first-save"], tmp_path)
    assert code == 0 and len(report["scenarios"]) == 1


def test_every_invariant_found_has_a_listed_counterexample(tmp_path: pathlib.Path) -> None:
    code, report = run(["--target", "seed", "--model", "power-loss"], tmp_path)
    assert code == 1
    for s in report["scenarios"]:
        listed = {v["invariant"] for v in s["violations"]}
        assert listed == set(s["killed_by"])
        assert s["violations_listed"] == len(s["violations"]) <= s["violation_count"]
    md = (tmp_path / "report.md").read_text()
    assert "listed" in md


def test_fault_counterexample_names_the_fault(tmp_path: pathlib.Path) -> None:
    code, report = run(
        ["--target", "mutant:cleanup-deletes-main", "--faults", "--scenario", "three-saves"],
        tmp_path,
    )
    assert code == 1
    ce = report["counterexample"]
    assert ce["fault"] and f"--fault {ce['fault']}" in ce["replay"]


def test_a_closed_pipe_keeps_the_exit_code() -> None:
    import subprocess
    import sys

    script = (
        "import sys; from crashpoint._cli import main; "
        "sys.exit(main(['explore', '--scenario', 'first-save', '--out', sys.argv[1]]))"
    )
    import tempfile

    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", script, out], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert proc.stdout is not None
        proc.stdout.close()  # like `| head -0`
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err


def test_interrupt_exits_130(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> None:
    import crashpoint.scenarios._parallel as parallel

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(parallel, "run_tasks", interrupted)
    assert main(["explore", "--out", str(tmp_path)]) == 130


def test_report_path_that_is_a_directory_is_refused_before_exploring(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "report.json").mkdir()
    assert main(["explore", "--out", str(tmp_path)]) == 2
    assert "report.json" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert "crashpoint 0.1.0" in capsys.readouterr().out


def test_python_api_accepts_names() -> None:
    from crashpoint.scenarios import explore

    result = explore(SCENARIOS["first-save"], model="power-loss", target="seed")
    assert result.model == "power-loss" and result.target == "seed"

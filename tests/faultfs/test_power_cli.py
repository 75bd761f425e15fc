"""Issue 9: a bounded enumeration is said, counted, and an error only when asked
(``--reorder-bound N``, ``--require-exhaustive``, ``exhaustive`` in report.json)."""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest
from crashpoint._cli import main

ARGS = ["explore", "--model", "power-loss-reorder", "--scenario", "three-saves", "--jobs", "1"]


def run(tmp_path: pathlib.Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    out = tmp_path / "out"
    code = main([*ARGS, *extra, "--out", str(out)])
    report = json.loads((out / "report.json").read_text())
    return code, report, (out / "report.md").read_text()


def test_the_default_run_of_the_reference_is_exhaustive(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, md = run(tmp_path)
    assert code == 0
    assert report["exhaustive"] is True
    assert all(s["exhaustive"] and s["cut"] == 0 for s in report["scenarios"])
    assert "bounded:" not in capsys.readouterr().out
    assert "bounded:" not in md


def test_a_bound_keeps_the_exit_code_and_says_what_it_left_out(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, md = run(tmp_path, "--reorder-bound", "1")
    assert code == 0
    assert report["exhaustive"] is False
    cut = report["totals"]["cut"]
    assert cut > 0
    assert [s["exhaustive"] for s in report["scenarios"]] == [False]
    assert f"bounded: {cut} combinations not explored" in capsys.readouterr().out
    assert f"bounded: {cut} combinations not explored" in md


def test_require_exhaustive_turns_a_bound_into_exit_1(tmp_path: pathlib.Path) -> None:
    code, report, _ = run(tmp_path, "--reorder-bound", "1", "--require-exhaustive")
    assert code == 1 and report["totals"]["violations"] == 0
    code, _, _ = run(tmp_path, "--reorder-bound", "20", "--require-exhaustive")
    assert code == 0  # a bound that leaves nothing out is exhaustive


@pytest.mark.parametrize("value", ["-1", "x", "1.5"])
def test_a_bad_bound_is_a_usage_error(
    value: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*ARGS, "--reorder-bound", value, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--reorder-bound" in err and "Traceback" not in err

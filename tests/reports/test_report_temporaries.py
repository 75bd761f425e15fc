"""Report files (issue 21): a planted symlink at ``--out/report.json.tmp`` is never
followed, and a SIGTERM while a run's reports are put in place leaves one run's reports,
never a mix of two, and no temporary. Through ``main([...])`` only."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from crashpoint._cli import main

REPORTS = ("report.html", "report.json", "report.md")


def _explore(out: Path, scenario: str) -> int:
    return main(["explore", "--scenario", scenario, "--out", str(out)])


def _scenarios(out: Path) -> dict[str, str]:
    """Which scenario each report of ``out`` speaks of."""
    found = {}
    for name in REPORTS:
        text = (out / name).read_text(encoding="utf-8")
        hits = [s for s in ("first-save", "three-saves") if s in text]
        found[name] = ",".join(hits)
    return found


@pytest.mark.parametrize("name", [*(f"{r}.tmp" for r in REPORTS)])
def test_a_planted_symlink_at_a_report_temporary_is_never_followed(
    tmp_path: Path, name: str
) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(victim)
    assert _explore(out, "first-save") == 0
    assert victim.read_bytes() == b"precious"
    assert json.loads((out / "report.json").read_text())["totals"]["violations"] == 0
    # nothing left but the reports and the planted link itself
    assert sorted(os.listdir(out)) == sorted([*REPORTS, name])


def test_sigterm_while_reports_are_put_in_place_never_mixes_two_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    assert _explore(out, "first-save") == 0
    assert set(_scenarios(out).values()) == {"first-save"}
    real_replace = os.replace
    calls: list[Any] = []

    def replace_then_sigterm(src: Any, dst: Any) -> None:
        real_replace(src, dst)
        calls.append(dst)
        if len(calls) == 1:  # SIGTERM right after the run's first report is in place
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(os, "replace", replace_then_sigterm)
    code = _explore(out, "three-saves")
    monkeypatch.undo()
    assert code == 143
    names = sorted(os.listdir(out))
    assert names == sorted(REPORTS), names  # no temporary left
    assert len(set(_scenarios(out).values())) == 1, _scenarios(out)  # one run, whole


def test_sigterm_while_a_report_temporary_is_written_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    assert _explore(out, "first-save") == 0
    real_open = open
    opened: list[Any] = []

    def open_then_sigterm(file: Any, *args: Any, **kwargs: Any) -> Any:
        f = real_open(file, *args, **kwargs)
        if isinstance(file, int) or str(file).endswith(".tmp"):
            opened.append(file)
            if len(opened) == 2:  # the second report's temporary is open
                try:
                    os.kill(os.getpid(), signal.SIGTERM)
                    signal.sigtimedwait([], 0)  # a bytecode boundary for the handler
                except BaseException:
                    f.close()  # the caller never got it (not what this test is about)
                    raise
        return f

    monkeypatch.setattr("builtins.open", open_then_sigterm)
    code = _explore(out, "three-saves")
    monkeypatch.undo()
    assert code == 143 and len(opened) == 2
    assert sorted(os.listdir(out)) == sorted(REPORTS)  # no report.*.tmp
    assert set(_scenarios(out).values()) == {"first-save"}  # the previous run, whole

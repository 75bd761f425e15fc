"""The false alarms of issue 22, each through ``crashpoint.verify`` or ``main([...])``:
every test fails on the behaviour before it (a false "not deterministic", a false A3,
a false bad target ...). Findings are pinned by invariant, model and crash state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import crashpoint
import honesty_stores
import pytest
from crashpoint._cli import main

HERE = Path(__file__).resolve().parent
STORES = HERE / "honesty_stores.py"


def run(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> tuple[int, str, str]:
    code = main(["verify", *args, "--out", str(out)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def report(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return data


# --- 1. fresh names matched by creation order ----------------------------------------


def test_fresh_names_of_a_faulted_re_run_are_matched_onto_the_recording() -> None:
    result = crashpoint.verify(
        honesty_stores.FreshNameStore, faults=True, workloads=["first-save", "resize"]
    )
    assert result.verdict == "clean", result.unsupported
    assert not any("diverged" in u for u in result.unsupported)
    assert sum(r.faults for r in result.results) > 0
    renamed = [p for r in result.results for p in r.renamed]
    assert renamed, "the re-runs' names were matched onto the recording's"
    for pair in renamed:
        assert pair["from"] != pair["to"]
        assert pair["from"].rsplit(".", 1)[0] == pair["to"].rsplit(".", 1)[0]  # scratch.N


def test_the_renaming_is_in_the_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, _ = run(
        capsys, out, f"{STORES}:FreshNameStore", "--faults", "--workload", "first-save"
    )
    assert code == 0, stdout
    rep = report(out)
    assert rep["verdict"] == "clean" and not rep["incomplete"]
    assert rep["renamed"] and all(set(p) == {"from", "to"} for p in rep["renamed"])
    assert rep["scenarios"][0]["renamed"] == rep["renamed"]
    assert "renamed" in stdout


# --- 7. a divergence says what differs -------------------------------------------------


def test_a_re_run_writing_other_bytes_diverges_and_says_how() -> None:
    result = crashpoint.verify(
        honesty_stores.CounterInDataStore, faults=True, workloads=["resize"], shrink=False
    )
    assert result.verdict == "incomplete"
    diverged = [u for u in result.unsupported if "diverged from its recording" in u]
    assert diverged
    assert all("sha256" in u and "first difference at byte" in u for u in diverged)


# --- 2. A3 on states: a recovery is not a silent reset ---------------------------------


@pytest.mark.parametrize("model", ["process-crash", "ext4"])
def test_a_load_rolling_back_a_hot_journal_is_a_recovery_not_a_reset(model: str) -> None:
    result = crashpoint.verify(
        honesty_stores.RollbackJournalStore,
        model=model,
        workloads=["first-save", "resize"],
        shrink=False,
    )
    assert result.killed_by() == [], [c.render() for c in result.counterexamples[:1]]
    assert result.verdict == "clean"


# --- 3. the last value saved equals the initial value ----------------------------------


@pytest.mark.parametrize("model", ["process-crash", "ext4"])
def test_a_last_save_equal_to_the_initial_value_is_not_a_silent_reset(model: str) -> None:
    from crashpoint.faultfs import get_model
    from crashpoint.scenarios.engine.explore import explore_kind
    from crashpoint.scenarios.kinds.document.kind import DOC_BASE, DocumentKind, DocWorkload
    from crashpoint.scenarios.targets.user import make_runner

    with make_runner(honesty_stores.BackupStore, DOC_BASE) as runner:
        doc = DocumentKind(runner, "honesty_stores:BackupStore")
        workload = DocWorkload("random", ({"a": [1, 2, 3]}, {}))  # the last save is {}
        result = explore_kind(doc, workload, model=get_model(model), target=doc.target)
    assert result.crash_points > 0
    assert result.killed_by() == [], [c.render() for c in result.counterexamples[:1]]

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


def test_fresh_names_are_matched_under_the_protocol_runner_too() -> None:
    """Issue 22: fresh names are matched by creation order "for every runner": the same
    counter-named scratch directory through ``factory(fs, base_dir)`` (the protocol
    runner) is judged with faults, complete, not "not deterministic"."""
    result = crashpoint.verify(
        honesty_stores.ProtocolFreshNameStore,
        faults=True,
        model="process-crash,ext4",
        workloads=["first-save", "resize"],
    )
    assert result.mode == "protocol"
    assert result.verdict == "clean", result.unsupported
    assert sum(r.faults for r in result.results) > 0
    renamed = [p for r in result.results for p in r.renamed]
    assert renamed and all(p["from"] != p["to"] for p in renamed)


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


def test_a_random_workload_ending_in_the_initial_value_is_no_silent_reset_from_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The issue's own case through ``main``: a random workload over the values
    ``{"a": [1, 2, 3]}`` and ``{}`` (BackupStore's initial value), so some examples end
    with a save of ``{}``; load rightly returns ``{}`` beside the older backup. 75a7228
    reported A3 here (and took no ``--values`` file: exit 2)."""
    values = tmp_path / "values.json"
    values.write_text(json.dumps([{"a": [1, 2, 3]}, {}]), encoding="utf-8")
    out = tmp_path / "out"
    code, _stdout, err = run(
        capsys,
        out,
        f"{STORES}:BackupStore",
        "--values",
        str(values),
        "--workload",
        "random",
        "--model",
        "process-crash,power-loss",  # families 75a7228 knew too
    )
    assert code != 2, err  # judged, not refused
    rep = report(out)
    found = [v["invariant"] for s in rep["scenarios"] for v in s["violations"]]
    assert "A3" not in found, found
    assert code == 0 and rep["verdict"] == "clean", (err, rep["incomplete"])
    assert rep["workload_bounds"]["random"]["saves"] >= 2
    assert all(s["crash_points"] > 0 for s in rep["scenarios"])


def test_the_default_random_workload_on_a_backup_store_has_no_false_a3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same through ``main`` with the default values: hypothesis's random workload
    draws examples whose last save is ``{}`` (BackupStore's initial value). 75a7228
    reported A3 at crash point 13 (after the rename of ``doc.json``, before the
    directory fsync): load returned ``{}``, the right value, beside the older backup."""
    out = tmp_path / "out"
    code, _stdout, err = run(capsys, out, f"{STORES}:BackupStore", "--workload", "random")
    assert code != 2, err
    rep = report(out)
    found = [v["invariant"] for s in rep["scenarios"] for v in s["violations"]]
    assert "A3" not in found, found
    assert code == 0 and rep["verdict"] == "clean", err
    assert sum(s["crash_points"] for s in rep["scenarios"]) > 0


# --- 6. --values: a file, a strategy, a sized callable; the sizes reached ----------------

ROOT = HERE.parent.parent
EXAMPLES = ROOT / "examples"
JSONSTORE = EXAMPLES / "stores" / "jsonstore.py"


def test_values_from_a_json_file_are_saved_and_their_sizes_reported(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    values = tmp_path / "values.json"
    listed = [{"n": 1}, {"big": "x" * 5000}, [1, 2, 3], "text", {"n": 2, "pad": "y" * 300}]
    values.write_text(json.dumps(listed), encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, _ = run(
        capsys, out, f"{JSONSTORE}:JsonStore", "--values", str(values), "--workload", "resize"
    )
    assert code == 0, stdout
    rep = report(out)
    assert rep["values"] == str(values)
    sizes = rep["value_sizes"]
    assert sizes["min"] >= len(json.dumps("text")) and sizes["max"] >= 5000
    assert sizes["boundaries_not_crossed"] == [65536]  # 4096 crossed by the 5000-byte value
    assert "never crossed: 65536 bytes" in stdout


def test_values_from_a_sized_callable_reach_the_sizes_asked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, _, _ = run(
        capsys,
        out,
        f"{EXAMPLES / 'stores' / 'perkey.py'}:PerKeyStore",
        "--values",
        f"{EXAMPLES / 'values.py'}:perkey_values",
        "--workload",
        "resize",
        "--workload",
        "first-save",
    )
    assert code == 1  # judged (a mix of two saves' keys), not refused
    rep = report(out)
    assert rep["value_sizes"]["max"] > 4096 and rep["value_sizes"]["boundaries_not_crossed"] == [
        65536
    ]


@pytest.mark.parametrize(
    "values",
    ["no-such-strategy", "missing.json", "examples/values.py:nothing", "tests/verify:x"],
)
def test_bad_values_are_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, values: str
) -> None:
    out = tmp_path / "out"
    code, stdout, err = run(capsys, out, f"{JSONSTORE}:JsonStore", "--values", values)
    assert code == 2
    assert "Traceback" not in err + stdout
    assert "--values" in err
    assert not out.exists()


def test_a_bad_values_file_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "v.json"
    bad.write_text('{"not": "a list"}', encoding="utf-8")
    code, _, err = run(capsys, tmp_path / "out", f"{JSONSTORE}:JsonStore", "--values", str(bad))
    assert code == 2 and "no non-empty JSON list" in err


def test_a_value_that_does_not_round_trip_is_shown(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, tmp_path / "out", f"{STORES}:TextStore", "--workload", "first-save")
    assert code == 2
    assert "saved {'generation': 0" in err and 'load returned \'{"generation": 0' in err


# --- 8. a state storage swallowing StateError is judged, not refused --------------------


def test_a_state_storage_whose_save_swallows_state_error_breaks_recoverability(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    code, _, err = run(
        capsys,
        out,
        f"{STORES}:swallowing_state_storage",
        "--kind",
        "state-storage",
        "--workload",
        "unpaired-refused",
    )
    assert code == 1, err  # judged (a violation), not refused as a bad target (exit 2)
    rep = report(out)
    (scenario,) = rep["scenarios"]
    assert scenario["model"] == "process-crash"
    # the refused save returned as if done: a load after it finds no session (R1)
    assert "R1" in scenario["killed_by"]


# --- 9. a constant file is no value on disk ----------------------------------------------


def test_a_constant_file_written_before_the_value_is_no_complete_value_on_disk() -> None:
    # pytest's cache writes README.md before the value file: a crash between the two
    # leaves no value on disk, so a load returning the initial value is no silent reset
    # (A3 counted the README, the same bytes whatever the value, as save#0's value)
    result = crashpoint.verify(
        honesty_stores.CacheDirStore, model="all", workloads=["first-save", "resize"]
    )
    assert "A3" not in result.killed_by(), [c.render() for c in result.counterexamples][:1]
    assert result.verdict == "clean"


def test_a_constant_files_bytes_at_another_path_are_no_value_on_disk() -> None:
    # issue 24, lmdb:locked under ext4: data.mdb left as 8 KiB of zeros, the bytes of the
    # constant lock.mdb; a load that refuses it and rewrites the lock file lost nothing
    # complete (A1 only: A3 named lock.mdb's save#0 as the generation lost)
    result = crashpoint.verify(
        honesty_stores.ZeroHeaderStore, model="process-crash", workloads=["first-save"]
    )
    killed = result.killed_by()
    assert "A1" in killed, [c.render() for c in result.counterexamples][:1]
    a3 = [c.render() for c in result.counterexamples if c.invariant == "A3"]
    assert "A3" not in killed, a3[:1]


def test_a_reset_beside_a_constant_file_is_still_a_silent_reset() -> None:
    # the same store, whose load discards the complete value file when it finds a
    # temporary beside it: the README is no value, but doc.json is (A3, both halves)
    result = crashpoint.verify(
        honesty_stores.CacheDirDiscardingStore, workloads=["resize"], shrink=False
    )
    assert "A3" in result.killed_by()
    a3 = [c for c in result.counterexamples if c.invariant == "A3"]
    assert all("README.md" in c.crash_state for c in a3)
    assert all("as save#" in c.crash_state.get("doc.json", "") for c in a3), [
        c.crash_state for c in a3 if "doc.json" not in c.crash_state
    ][:1]
    for c in a3:  # the generation named is doc.json's, never the README's save#0
        label = c.crash_state["doc.json"].split("as ")[1].split(" ")[0]
        assert c.expected in (
            f"load reads the complete value on disk ({label}'s)",
            f"load's writes leave {label}'s complete value recoverable",
        ), (c.expected, c.crash_state)
    assert len({c.expected.split(" (")[0][:20] for c in a3}) == 2  # both halves of A3


def test_a_reset_over_a_rotated_backup_is_still_a_silent_reset() -> None:
    # main renamed to bak, the crash before the new main: the backup holds the previous
    # value whole (its file not constant: each save leaves other bytes in it)
    result = crashpoint.verify(honesty_stores.RotatingStore, workloads=["resize"], shrink=False)
    a3 = [c for c in result.counterexamples if c.invariant == "A3"]
    assert any(
        "doc.json" not in c.crash_state and "as save#" in c.crash_state.get("doc.json.bak", "")
        for c in a3
    ), [c.crash_state for c in result.counterexamples][:3]


def test_the_probe_of_constant_files_hides_no_escape_from_a_later_run() -> None:
    # the probe (a recording of two values, issue 22) saves one of resize's values after
    # first-save is judged: its escape, noted once, must not be missing from resize's run
    result = crashpoint.verify(
        honesty_stores.EscapingCacheDirStore, workloads=["first-save", "resize"], shrink=False
    )
    assert "A3" not in result.killed_by()
    escaped = {
        c.got
        for c in result.counterexamples
        if c.invariant == "S1" and c.workload == "resize" and c.got.startswith("changed ")
    }
    assert len(escaped) == 6, escaped  # one scratch file per save of resize

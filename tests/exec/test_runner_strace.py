"""``crashpoint verify --runner`` (issue 23, item 1): a Python TARGET recorded through
strace with crashpoint's own driver, usage errors, and the hint an intercepted store on
C code gets. The usage tests run everywhere; the ones running stores under strace are
marked ``exec``."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from crashpoint._cli import main
from crashpoint.faultfs._strace import strace_available

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DB = os.path.join(ROOT, "examples", "stores", "dbstores.py")
JSON = os.path.join(ROOT, "examples", "stores", "jsonstore.py")


def run(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> tuple[int, str, str]:
    code = main(["verify", *args, "--out", str(out)])
    got = capsys.readouterr()
    return code, got.out, got.err


def report(out: Path) -> dict[str, Any]:
    with open(out / "report.json", encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def _need_strace() -> None:
    reason = strace_available()
    if reason is not None:
        pytest.skip(reason)


# --- usage (no strace needed) ---------------------------------------------------------


def test_runner_intercepted_with_exec_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(
        capsys, tmp_path / "o", "--exec", "--runner", "intercepted", "--save", "x {dir} {value}",
        "--load", "x {dir}",
    )  # fmt: skip
    assert code == 2
    assert "--runner intercepted cannot run --exec commands" in err
    assert not (tmp_path / "o" / "report.json").exists()


def test_runner_protocol_on_an_intercepted_factory_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, tmp_path / "o", f"{JSON}:JsonStore", "--runner", "protocol")
    assert code == 2
    assert "runs intercepted" in err


def test_runner_strace_with_a_bad_target_fails_in_the_parent(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(capsys, tmp_path / "o", f"{JSON}:NoSuchStore", "--runner", "strace")
    assert code == 2
    assert "NoSuchStore" in err


def test_an_intercepted_sqlite_store_is_offered_the_strace_runner(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store = tmp_path / "sqlstore.py"
    store.write_text(
        textwrap.dedent(
            """
            import json, os, sqlite3

            class Store:
                def __init__(self, base):
                    self.path = os.path.join(base, "d.sqlite")

                def save(self, value):
                    con = sqlite3.connect(self.path)
                    con.execute("CREATE TABLE IF NOT EXISTS t (v TEXT)")
                    con.execute("INSERT INTO t VALUES (?)", (json.dumps(value),))
                    con.commit()
                    con.close()

                def load(self):
                    return None
            """
        )
    )
    code, _, err = run(capsys, tmp_path / "o", f"{store}:Store", "--workload", "first-save")
    assert code == 2
    assert "sqlite3" in err and "--runner strace" in err


# --- stores under strace ----------------------------------------------------------------


def _verify(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cls: str, *extra: str
) -> tuple[int, dict[str, Any], str]:
    _need_strace()
    out = tmp_path / "o"
    code, text, err = run(
        capsys, out, f"{DB}:{cls}", "--runner", "strace", "--workload", "first-save", *extra
    )
    assert code in (0, 1), err
    rep = report(out)
    return code, rep, text


def _findings(rep: dict[str, Any]) -> set[tuple[str, str]]:
    return {(v["invariant"], v["model"]) for s in rep["scenarios"] for v in s["violations"]}


@pytest.mark.exec
def test_dbm_dumb_store_loses_its_index_at_a_process_crash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Real (Lib/dbm/dumb.py, _commit): the value goes to db.dat, then the old db.dir is
    # renamed to db.bak, which dbm.dumb never reads, and a new db.dir written: a crash
    # between them leaves a saved value no open finds.
    _, rep, text = _verify(capsys, tmp_path, "DumbDbmStore", "--model", "process-crash")
    assert rep["mode"] == "strace"
    assert rep["verdict"] != "incomplete", rep.get("unsupported")
    assert ("A3", "process-crash") in _findings(rep)
    assert "deterministic" not in text and "interception" not in text


@pytest.mark.exec
def test_shelve_store_is_judged_completely(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, rep, _ = _verify(capsys, tmp_path, "ShelveStore", "--model", "process-crash")
    assert rep["verdict"] != "incomplete", rep.get("unsupported")
    assert ("A3", "process-crash") in _findings(rep)  # dbm.dumb underneath, as above


@pytest.mark.exec
def test_sqlite_store_is_judged_completely(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, rep, _ = _verify(capsys, tmp_path, "SqliteStore", "--model", "process-crash")
    assert rep["verdict"] != "incomplete", rep.get("unsupported")
    assert _findings(rep) == set()  # a rolled-back hot journal is recovery, no finding


@pytest.mark.exec
def test_a_pid_and_clock_named_temporary_is_judged_with_faults_under_strace(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # the clock part of the temporary's name differs from run to run: the faulted re-runs
    # are matched onto the recording by creation order (report key renamed)
    _, rep, text = _verify(
        capsys, tmp_path, "PidNamedStore", "--model", "process-crash", "--faults"
    )
    assert rep["verdict"] == "clean", rep.get("unsupported")
    assert sum(s["faults"] for s in rep["scenarios"]) > 0
    assert "deterministic" not in text and "interception" not in text


def test_a_pid_and_clock_named_temporary_is_judged_with_faults_intercepted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, text, err = run(
        capsys, tmp_path / "o", f"{DB}:PidNamedStore", "--workload", "first-save", "--faults"
    )
    assert code == 0, text + err
    rep = report(tmp_path / "o")
    assert rep["verdict"] == "clean"
    assert sum(s["faults"] for s in rep["scenarios"]) > 0


@pytest.mark.exec
def test_a_node_store_naming_its_temporary_after_its_pid_is_judged_with_faults(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # npm's write-file-atomic names its temporary from the pid (and a counter): every
    # faulted re-run is judged against its recording, none is "not deterministic"
    _need_strace()
    wfa = os.path.join(ROOT, "examples", "exec", "wfa_store.js")
    if not os.path.isdir(
        os.path.join(ROOT, "examples", "exec", "node_modules", "write-file-atomic")
    ):
        pytest.skip("write-file-atomic is not installed: npm ci --prefix examples/exec")
    code, text, err = run(
        capsys, tmp_path / "o", "--exec", "--save", f"node {wfa} save {{dir}} {{value}}",
        "--load", f"node {wfa} load {{dir}}", "--workload", "first-save", "--faults",
        "--model", "process-crash",
    )  # fmt: skip
    rep = report(tmp_path / "o")
    assert code == 0, text + err
    assert rep["verdict"] == "clean"
    assert sum(s["faults"] for s in rep["scenarios"]) > 0
    assert "deterministic" not in text and "interception" not in text


@pytest.mark.exec
def test_a_state_storage_runs_its_six_methods_through_the_driver(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _need_strace()
    targets = os.path.join(ROOT, "tests", "verify", "targets.py")
    code, text, err = run(
        capsys, tmp_path / "o", f"{targets}:reference", "--kind", "state-storage",
        "--runner", "strace", "--format", "reference", "--workload", "first-save",
        "--model", "process-crash",
    )  # fmt: skip
    assert code == 0, text + err
    rep = report(tmp_path / "o")
    assert (rep["verdict"], rep["mode"], rep["kind"]) == ("clean", "strace", "state-storage")
    assert rep["conformance"] and all(c["passed"] for c in rep["conformance"])

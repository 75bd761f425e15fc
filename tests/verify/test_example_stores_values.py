"""Acceptance 3 of issue 22: the INI store and the one-file-per-key store of
``examples/stores/`` verified from the command line with ``--values`` (a strategy and a
sized callable of ``examples/values.py``), their expected findings pinned by invariant,
model and crash state. Each store's docstring says why each finding is real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from crashpoint._cli import main

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
INI = EXAMPLES / "stores" / "inistore.py"
PERKEY = EXAMPLES / "stores" / "perkey.py"
VALUES = EXAMPLES / "values.py"

pytestmark = pytest.mark.examples  # about three minutes on 2 cores: run with -m examples


def verify(tmp_path: Path, target: str, values: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "out"
    code = main(
        [
            "verify",
            target,
            "--values",
            f"{VALUES}:{values}",
            "--model",
            "process-crash,ext4",
            "--workload",
            "first-save",
            "--workload",
            "resize",
            "--out",
            str(out),
        ]
    )
    assert (out / "report.json").is_file(), f"exit {code}: no report (refused)"
    return code, json.loads((out / "report.json").read_text(encoding="utf-8"))


def found(rep: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(scenario without its shrinking, model) → its violations."""
    return {(s["name"].split(":")[0], s["model"]): s["violations"] for s in rep["scenarios"]}


def test_the_per_key_store_mixes_two_saves_keys(tmp_path: Path) -> None:
    code, rep = verify(tmp_path, f"{PERKEY}:PerKeyStore", "perkey_values")
    assert code == 1 and rep["verdict"] == "violation"
    by = found(rep)
    for model in ("process-crash", "ext4"):
        first = by["first-save", model][0]
        # crash between the first key's rename and the second's: one key of three on disk
        assert first["invariant"] == "A1"
        assert list(first["crash_state"]) == ["keys/key00"]
        assert "save#0" in first["crash_state"]["keys/key00"]
        assert {v["invariant"] for v in by["first-save", model]} == {"A1"}  # durable: no A2
    assert rep["value_sizes"]["max"] > 4096  # the sized callable reached past a page


def test_the_per_key_store_without_directory_fsyncs_loses_a_save_on_ext4(tmp_path: Path) -> None:
    _, rep = verify(tmp_path, f"{PERKEY}:PerKeyNoDirFsyncStore", "perkey_values")
    by = found(rep)
    assert {v["invariant"] for v in by["first-save", "process-crash"]} == {"A1"}
    a2 = [v for v in by["first-save", "ext4"] if v["invariant"] == "A2"]
    assert a2  # the renames were never made durable: the acknowledged save can vanish


def test_the_ini_store_written_in_place_is_torn(tmp_path: Path) -> None:
    code, rep = verify(tmp_path, f"{INI}:IniStore", "ini_values")
    assert code == 1
    by = found(rep)
    # one write(2) of the whole document: a process crash cannot tear it on first-save ...
    assert by["first-save", "process-crash"] == []
    # ... ext4 can: the file has its size but not all its bytes
    torn = by["first-save", "ext4"][0]
    assert torn["invariant"] == "A1" and list(torn["crash_state"]) == ["settings.ini"]
    # resize: a crash between open(path, "w") (truncation) and the write: the acknowledged
    # previous settings are gone
    lost = [v for v in by["resize", "process-crash"] if v["invariant"] == "A2"]
    assert lost and lost[0]["crash_state"] == {"settings.ini": "empty"}


@pytest.mark.parametrize(
    ("target", "values"),
    [(f"{INI}:AtomicIniStore", "ini_values")],
)
def test_the_atomic_ini_store_passes(tmp_path: Path, target: str, values: str) -> None:
    code, rep = verify(tmp_path, target, values)
    assert code == 0 and rep["verdict"] == "clean"
    assert rep["totals"]["violations"] == 0 and rep["totals"]["crash_points"] > 0

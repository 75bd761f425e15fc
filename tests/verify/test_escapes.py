"""Nothing escapes (issue 21, acceptance 3): a store reaching the real disk through a
function bound before the patch (a dict, a partial, a class attribute, an ``opener=``,
``io.open``) changes no real file, checked from outside, and its verdict is incomplete
with the path named, never clean. Through ``main([...])`` only."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from crashpoint._cli import main

ESCAPES = Path(__file__).resolve().parent / "escapes.py"

CASES = {
    "HeldDictStore": ["dst"],
    "PartialStore": ["partial"],
    "ClassAttrStore": ["classattr-dir", "classattr"],
    "OpenerStore": ["opener"],
    "IoOpenStore": ["io-open"],
}


@pytest.mark.parametrize("store", sorted(CASES))
def test_a_captured_function_reaches_no_real_file_and_the_verdict_names_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    store: str,
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "src").write_text("a real file")
    monkeypatch.setenv("CRASHPOINT_ESCAPE_DIR", str(real))
    out = tmp_path / "out"
    code = main(["verify", f"{ESCAPES}:{store}", "--workload", "first-save", "--out", str(out)])
    printed = capsys.readouterr().out
    # from outside: the real directory is as it was
    assert sorted(os.listdir(real)) == ["src"]
    assert (real / "src").read_text() == "a real file"
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert code == 1 and rep["verdict"] == "incomplete", (code, rep["verdict"])
    named = " ".join(rep["incomplete"])
    expected = str(real / ("src" if store == "HeldDictStore" else CASES[store][0]))
    assert expected in named or str(real / CASES[store][0]) in named, rep["incomplete"]
    assert "real disk" in printed


def test_a_store_whose_every_write_is_refused_is_incomplete_not_a_bad_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    monkeypatch.setenv("CRASHPOINT_ESCAPE_DIR", str(real))
    out = tmp_path / "out"
    code = main(["verify", f"{ESCAPES}:HeldOnlyStore", "--out", str(out)])
    err = capsys.readouterr().err
    assert os.listdir(real) == []
    assert code == 1, err  # not exit 2, "wrote nothing the harness can see"
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert rep["verdict"] == "incomplete"
    assert f"real disk: open for writing {real / 'held-only.json'}" in rep["incomplete"]


def test_a_state_storage_saving_past_the_patch_is_incomplete_naming_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    monkeypatch.setenv("CRASHPOINT_ESCAPE_DIR", str(real))
    out = tmp_path / "out"
    code = main(
        [
            "verify",
            f"{ESCAPES}:escaping_reference",
            "--kind",
            "state-storage",
            "--workload",
            "first-save",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert os.listdir(real) == []
    assert code == 1, err  # not exit 2, "save() raised on a clean run"
    rep = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert rep["verdict"] == "incomplete"
    assert rep["incomplete"] == [f"real disk: os.mkdir {real / 'state-storage'}"]

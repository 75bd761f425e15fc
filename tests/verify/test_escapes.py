"""Nothing escapes (issue 21, acceptance 3): a store reaching for the real disk through a
function bound before the patch changes no real file, checked from outside, and its
verdict is never clean. Where the patch reaches the function (a dict's value, a class
attribute, a closure's cell, a partial, an ``opener=``, ``io.open`` held), the change goes
into the model and is judged: an S1 finding naming the path. Where it cannot (a list's
element, an attribute of an object made before the patch), the audit layer refuses the
change: an incomplete verdict naming the path. Through ``main([...])`` only."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from crashpoint._cli import main

ESCAPES = Path(__file__).resolve().parent / "escapes.py"
IMPORT_WRITES = ESCAPES.with_name("import_writes.py")

#: technique -> the file (or directory) it aims at under the escape directory
REACHED = {
    "HeldDictStore": "dst",  # os.rename in a dict: renames src -> dst
    "PartialStore": "partial",  # functools.partial(os.open, ...)
    "ClassAttrStore": "classattr-dir",  # _os = os as a class attribute (dbm.dumb)
    "ClosureStore": "closure",  # os.open in a closure's cell
    "OpenerStore": "opener",  # open(opener=lambda ...) over a held os.open
    "RealOpenerStore": "real-opener",  # open(opener=<the real os.open>)
    "IoOpenStore": "io-open",  # io.open in a dict
}
REFUSED = {
    "HeldInListStore": "in-list",
    "InstanceAttrStore": "instance",
}


def _verify(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str, *extra: str
) -> tuple[int, dict[str, Any], Path]:
    real = tmp_path / "real"
    real.mkdir()
    (real / "src").write_text("a real file")
    monkeypatch.setenv("CRASHPOINT_ESCAPE_DIR", str(real))
    base_existed = os.path.lexists("/data/store")
    out = tmp_path / "out"
    target = f"{IMPORT_WRITES}:ImportWritingStore" if store == "IMPORT" else f"{ESCAPES}:{store}"
    code = main(["verify", target, *extra, "--out", str(out)])
    # from outside: the real directory is as it was, the model's base path untouched
    assert sorted(os.listdir(real)) == ["src"]
    assert (real / "src").read_text() == "a real file"
    assert os.path.lexists("/data/store") == base_existed
    return code, json.loads((out / "report.json").read_text(encoding="utf-8")), real


@pytest.mark.parametrize("store", sorted(REACHED))
def test_a_captured_function_the_patch_reaches_is_judged_s1_and_writes_no_real_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    code, rep, real = _verify(tmp_path, monkeypatch, store, "--workload", "first-save")
    assert code == 1 and rep["verdict"] == "violation", (code, rep["verdict"], rep["incomplete"])
    assert rep["incomplete"] == []  # judged, not refused: the patch reached it
    s1 = [
        v
        for s in rep["scenarios"]
        for v in s["violations"]
        if v["invariant"] == "S1" and s["model"] == "process-crash"
    ]
    target = str(real / REACHED[store])
    assert any(target in json.dumps(v) for v in s1), [v["load_returned"] for v in s1]


@pytest.mark.parametrize("store", sorted(REFUSED))
def test_a_captured_function_out_of_reach_is_refused_and_the_verdict_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    code, rep, real = _verify(tmp_path, monkeypatch, store, "--workload", "first-save")
    assert code == 1 and rep["verdict"] == "incomplete", (code, rep["verdict"])
    assert f"real disk: open for writing {real / REFUSED[store]}" in rep["incomplete"]


def test_a_store_whose_every_write_is_refused_is_incomplete_not_a_bad_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rep, real = _verify(tmp_path, monkeypatch, "HeldOnlyStore")
    assert code == 1, capsys.readouterr().err  # not exit 2, "wrote nothing the harness can see"
    assert rep["verdict"] == "incomplete"
    assert f"real disk: open for writing {real / 'held-only.json'}" in rep["incomplete"]


def test_a_state_storage_saving_past_the_patch_is_incomplete_naming_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, rep, real = _verify(
        tmp_path,
        monkeypatch,
        "escaping_reference",
        "--kind",
        "state-storage",
        "--workload",
        "first-save",
    )
    assert code == 1, capsys.readouterr().err  # not exit 2, "save() raised on a clean run"
    assert rep["verdict"] == "incomplete"
    assert rep["incomplete"] == [f"real disk: os.mkdir {real / 'state-storage'}"]


def test_writes_a_target_module_makes_at_import_are_refused_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, rep, real = _verify(tmp_path, monkeypatch, "IMPORT", "--workload", "first-save")
    assert code == 1 and rep["verdict"] == "incomplete", (code, rep["verdict"])
    assert f"real disk: os.mkdir {real / 'default-data'} (at import)" in rep["incomplete"]

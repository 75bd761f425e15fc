"""A torn 4,096-byte prefix of a YAML file (issue 22, explain): the explanation cites
the write that was torn (not an earlier, smaller one still pending), never prescribes an
fsync for a tear a process crash makes (a temporary file and a rename fix it), calls
evidence the target's load reads "loadable", not "unreadable", and lists as matching only
states whose file has the evidence's 4,096 bytes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from explain_helpers import explain
from yaml_stores import to_yaml

STORES = Path(__file__).resolve().parent / "yaml_stores.py"


@pytest.fixture
def torn(tmp_path: Path) -> Path:
    ev = tmp_path / "ev"
    ev.mkdir()
    whole = to_yaml({"name": "app", "pad": "x" * 5000}).encode()
    assert len(whole) == 5020
    (ev / "config.yaml").write_bytes(whole[:4096])
    return ev


def cited_write_sizes(cause: str) -> list[int]:
    return [int(n) for n in re.findall(r"write\('[^']*', offset=\d+, (\d+) bytes\)", cause)]


def test_one_torn_write_is_cited_and_no_fsync_prescribed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torn: Path
) -> None:
    code, report, _ = explain(
        capsys, tmp_path / "r", torn, "--target", f"{STORES}:OneWriteYamlStore"
    )
    assert code == 1
    assert [f["class"] for f in report["evidence"]["files"]] == ["loadable"]
    assert report["load"]["error"] is None
    assert report["matches"]
    for m in report["matches"]:
        assert m["files"]["config.yaml"].endswith(", 4096 bytes"), m["files"]
        assert all(n > 4096 for n in cited_write_sizes(m["cause"])), m["cause"]
    first = report["first_match"]
    assert first["model"] == "process-crash" and "A1" in first["counted"]
    assert "missing fsync" not in first["cause"] and "in flight" in first["cause"]
    assert "rename" in first["cause"]
    a1 = next(w for w in report["invariants"] if w["id"] == "A1")
    assert "rename" in a1["correct"] and "does not help" in a1["correct"]


def test_a_save_still_being_written_is_a_process_crash_tear(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], torn: Path
) -> None:
    code, report, _ = explain(
        capsys, tmp_path / "r", torn, "--target", f"{STORES}:ChunkedYamlStore"
    )
    assert code == 1
    first = report["first_match"]
    assert first["model"] == "process-crash"
    assert first["files"]["config.yaml"].startswith("partly written")
    assert "fsync does not help" in first["cause"] and "missing fsync" not in first["cause"]
    assert all(m["files"]["config.yaml"].endswith(", 4096 bytes") for m in report["matches"])


def test_an_unmatched_loadable_file_is_never_called_unreadable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ev = tmp_path / "odd"
    ev.mkdir()
    whole = to_yaml({"name": "app", "pad": "x" * 5000}).encode()
    (ev / "config.yaml").write_bytes(whole[:4000])  # no block boundary: no state has it
    _, report, _ = explain(capsys, tmp_path / "r", ev, "--target", f"{STORES}:OneWriteYamlStore")
    assert report["reachable"] is False
    assert [f["class"] for f in report["evidence"]["files"]] == ["loadable"]
    assert all(d["evidence"] == "loadable" for n in report["nearest"] for d in n["diff"]), report[
        "nearest"
    ]
    assert "leaves config.yaml loadable" in report["likelier"], report["likelier"]

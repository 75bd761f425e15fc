"""The documented limits of interception are named in the verdict (issue 21; README
"What crashpoint never touches"): a target that imports or calls ``ctypes``, ``socket``,
``readline`` or ``posix`` gets an incomplete verdict saying which, never a clean one;
what readline's C code writes under a watched root the canary reports. Through
``main([...])``; a store without them stays complete."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from crashpoint._cli import main

HERE = Path(__file__).resolve().parent


def _verify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str) -> tuple[int, Any]:
    cwd, tmp = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir()
    tmp.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setenv("CRASHPOINT_ESCAPE_DIR", str(tmp_path))
    monkeypatch.setenv("CRASHPOINT_CANARY_PATH", str(tmp / f"canary-{uuid.uuid4().hex}"))
    out = tmp_path / "out"
    code = main(["verify", f"{HERE / target}", "--workload", "first-save", "--out", str(out)])
    return code, json.loads((out / "report.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("store", "limit"),
    [
        ("CtypesStore", "ctypes"),
        ("SocketStore", "socket"),
        ("ReadlineStore", "readline"),
        ("PosixStore", "posix"),
    ],
)
def test_a_target_using_a_documented_limit_is_incomplete_and_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str, limit: str
) -> None:
    code, rep = _verify(tmp_path, monkeypatch, f"limits.py:{store}")
    assert code == 1 and rep["verdict"] == "incomplete", (code, rep["verdict"])
    named = [line for line in rep["incomplete"] if line.startswith(f"limit: {limit}: ")]
    assert len(named) == 1, rep["incomplete"]


def test_readline_history_written_under_a_watched_root_is_seen_by_the_canary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, rep = _verify(tmp_path, monkeypatch, "limits.py:ReadlineStore")
    changed = [line for line in rep["incomplete"] if line.startswith("real disk changed: ")]
    assert len(changed) == 1 and "canary-" in changed[0], rep["incomplete"]


def test_a_store_without_them_stays_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, rep = _verify(tmp_path, monkeypatch, "escapes.py:NoEscapeStore")
    assert code == 0 and rep["verdict"] == "clean", rep["incomplete"]

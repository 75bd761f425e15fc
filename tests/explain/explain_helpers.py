"""Shared helpers for the explain tests: run the CLI, read the report, run an emitted test."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from crashpoint._cli import main

ROOT = Path(__file__).resolve().parents[2]
FIELD = ROOT / "examples" / "field-reports"
JSONSTORE = ROOT / "examples" / "stores" / "jsonstore.py"
NOTEBOOK = FIELD / "notebook_store.py"


def explain(
    capsys: pytest.CaptureFixture[str], out: Path, evidence: Path | str, *args: str
) -> tuple[int, dict[str, Any], str]:
    code = main(["explain", str(evidence), "--out", str(out), *args])
    captured = capsys.readouterr()
    report: dict[str, Any] = {}
    if (out / "report.json").exists():
        report = json.loads((out / "report.json").read_text())
    return code, report, captured.out + captured.err


def run_emitted(path: Path, target: str | None, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Import the emitted test file and call each test; the names of those that failed
    (an AssertionError) with ``CRASHPOINT_TARGET`` set to ``target`` (None: its default)."""
    if target is None:
        monkeypatch.delenv("CRASHPOINT_TARGET", raising=False)
    else:
        monkeypatch.setenv("CRASHPOINT_TARGET", target)
    spec = importlib.util.spec_from_file_location(f"emitted_{abs(hash((path, target)))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = [n for n in dir(module) if n.startswith("test_")]
    assert tests, "the emitted file holds no test"
    failed = []
    for name in tests:
        try:
            getattr(module, name)()
        except AssertionError:
            failed.append(name)
    return failed

"""The emitted test runs from any directory (issue 22, explain): a target named by a
relative ``path/file.py:factory`` or an importable ``module:factory`` is resolved from
the emitted file's own location, so run from another directory it fails on the buggy
target by an AssertionError (never BadTarget) and passes on the fixed one."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
from explain_helpers import FIELD, JSONSTORE, explain

ZERO_DOC = FIELD / "zero-length-main" / "document"


def outcomes(path: Path, target: str | None, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Each test of the emitted file: ``passed``, or the class of what it raised."""
    if target is None:
        monkeypatch.delenv("CRASHPOINT_TARGET", raising=False)
    else:
        monkeypatch.setenv("CRASHPOINT_TARGET", target)
    spec = importlib.util.spec_from_file_location(f"emitted_{path.stem}_{target}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    seen: dict[str, str] = {}
    for name in [n for n in dir(module) if n.startswith("test_")]:
        try:
            getattr(module, name)()
            seen[name] = "passed"
        except Exception as exc:
            seen[name] = type(exc).__name__
    return seen


def test_a_relative_file_target_is_resolved_from_the_test_files_location(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "stores").mkdir(parents=True)
    (project / "tests").mkdir()
    shutil.copy(JSONSTORE, project / "stores" / "jsonstore.py")
    emitted = project / "tests" / "test_zero.py"
    monkeypatch.chdir(project)
    code, _, _ = explain(
        capsys,
        tmp_path / "r",
        ZERO_DOC,
        "--target",
        "stores/jsonstore.py:NoFsyncJsonStore",  # relative to the project
        "--emit-test",
        "tests/test_zero.py",
    )
    assert code == 1
    text = emitted.read_text()
    assert "'stores/jsonstore.py'" not in text  # never the caller's relative path
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    buggy = outcomes(emitted, None, monkeypatch)
    assert set(buggy.values()) == {"AssertionError"}, buggy  # the finding, not BadTarget
    fixed = outcomes(emitted, f"{project / 'stores' / 'jsonstore.py'}:JsonStore", monkeypatch)
    assert set(fixed.values()) == {"passed"}, fixed


def test_a_module_target_under_the_project_is_importable_from_anywhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "mystores").mkdir(parents=True)
    (project / "mystores" / "__init__.py").write_text("")
    shutil.copy(JSONSTORE, project / "mystores" / "jsonstore.py")
    emitted = project / "test_zero_module.py"
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    code, _, _ = explain(
        capsys,
        tmp_path / "r",
        ZERO_DOC,
        "--target",
        "mystores.jsonstore:NoFsyncJsonStore",
        "--emit-test",
        str(emitted),
    )
    assert code == 1
    monkeypatch.chdir(tmp_path)
    for name in [m for m in list(sys.modules) if m.startswith("mystores")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(project)])
    buggy = outcomes(emitted, None, monkeypatch)
    assert set(buggy.values()) == {"AssertionError"}, buggy

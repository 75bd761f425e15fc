"""Where the exec runner makes its scratch directories (crash images, the commands'
working copies, strace's logs): ``$CRASHPOINT_SCRATCH``, else a roomy tmpfs at /dev/shm,
else the system's temporary directory (issue 23, acceptance 3; docs/decisions.md). The
real disk under them never decides a verdict: the same run on a disk directory and on
tmpfs judges the same crash states the same way."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from crashpoint.faultfs import parse_models
from crashpoint.faultfs._strace import strace_available
from crashpoint.scenarios.jobs import exec as ex

pytestmark = pytest.mark.exec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JSON = os.path.join(ROOT, "examples", "stores", "jsonstore.py")


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ex, "_SCRATCH", {})


def test_the_variable_names_the_scratch_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ex.SCRATCH_ENV, str(tmp_path))
    assert ex.scratch_root() == str(tmp_path)
    monkeypatch.setenv(ex.SCRATCH_ENV, "")
    assert ex.scratch_root() is None  # the system's temporary directory


def test_a_variable_naming_no_directory_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ex.SCRATCH_ENV, str(tmp_path / "missing"))
    with pytest.raises(ValueError, match=r"CRASHPOINT_SCRATCH=.*not a writable directory"):
        ex.scratch_root()
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv(ex.SCRATCH_ENV, str(tmp_path / "file"))
    monkeypatch.setattr(ex, "_SCRATCH", {})
    with pytest.raises(ValueError, match="not a writable directory"):
        ex.scratch_root()


def test_the_cli_refuses_a_bad_scratch_root_before_running(tmp_path: Path) -> None:
    env = dict(os.environ, CRASHPOINT_SCRATCH=str(tmp_path / "missing"))
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "crashpoint",
            "verify",
            f"{JSON}:JsonStore",
            "--runner",
            "strace",
            "--workload",
            "first-save",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "CRASHPOINT_SCRATCH" in done.stderr and "not a writable directory" in done.stderr
    assert "Traceback" not in done.stderr and "raised" not in done.stderr
    assert not out.exists()


def test_no_tmpfs_there_means_the_system_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ex.SCRATCH_ENV, raising=False)
    monkeypatch.setattr(ex, "SHM", str(tmp_path))  # a directory, not a tmpfs mount
    assert ex.scratch_root() is None


def _run(monkeypatch: pytest.MonkeyPatch, scratch: str) -> tuple[Any, list[str]]:
    """A run with ``$CRASHPOINT_SCRATCH`` at ``scratch``, and the directory each scratch
    directory was made in (``tempfile.mkdtemp``'s, ``TemporaryDirectory``'s among them)."""
    made: list[str] = []
    real_mkdtemp = tempfile.mkdtemp

    def tracking_mkdtemp(*a: Any, **k: Any) -> Any:
        made.append(str(a[2] if len(a) > 2 else k.get("dir")))
        return real_mkdtemp(*a, **k)

    save, load, _ = ex.driver_commands(f"{JSON}:InPlaceJsonStore", "document")
    with monkeypatch.context() as m:
        m.setenv(ex.SCRATCH_ENV, scratch)
        m.setattr(ex, "_SCRATCH", {})
        m.setattr(tempfile, "mkdtemp", tracking_mkdtemp)
        result, _facts = ex.verify_exec(
            save,
            load,
            models=parse_models("process-crash,ext4"),
            workloads=["first-save", "resize"],
            shown=f"{JSON}:InPlaceJsonStore",
        )
    return result, made


@pytest.mark.skipif(strace_available() is not None, reason="needs strace")
def test_a_disk_scratch_root_and_tmpfs_judge_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not ex._roomy_tmpfs(ex.SHM):
        pytest.skip(f"no roomy tmpfs at {ex.SHM}")
    disk = tmp_path / "scratch"
    disk.mkdir()
    on_disk, made_disk = _run(monkeypatch, str(disk))
    on_tmpfs, made_tmpfs = _run(monkeypatch, ex.SHM)
    assert made_disk and set(made_disk) == {str(disk)}  # every scratch directory there
    assert made_tmpfs and set(made_tmpfs) == {ex.SHM}
    assert list(disk.iterdir()) == []  # and every one removed
    assert not on_disk.incomplete and not on_tmpfs.incomplete
    assert on_disk.verdict == on_tmpfs.verdict
    for a, b in zip(on_disk.results, on_tmpfs.results, strict=True):
        assert a.state_ids == b.state_ids
        assert found(a) == found(b)
    assert sum(len(r.state_ids) for r in on_disk.results) > 0
    assert any(found(r) for r in on_disk.results)  # (the in-place store tears: A1)


def found(result: Any) -> list[tuple[str, str]]:
    return sorted((c.invariant, c.model) for c in result.counterexamples)

"""``pytest`` says how many tests the default markers deselect and how to run them
(issue 22): the suite's conftest hook, run on a small project that uses it, with and
without pytest-xdist."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = Path(__file__).resolve().parent / "conftest.py"

INI = """[pytest]
addopts = -p no:cacheprovider -m 'not long and not examples and not exec'
markers =
    long: long
    examples: examples
    exec: exec
"""

TESTS = """import pytest

def test_plain():
    pass

@pytest.mark.long
def test_long_one():
    pass

@pytest.mark.long
def test_long_two():
    pass

@pytest.mark.examples
def test_example():
    pass
"""


@pytest.mark.parametrize("xdist", [[], ["-n", "1"]], ids=["serial", "xdist"])
def test_the_run_names_what_the_default_markers_left_out(tmp_path: Path, xdist: list[str]) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST.read_text())
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "test_some.py").write_text(TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *xdist],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout
    line = "3 tests deselected by the default markers (long: 2, examples: 1); run them with: "
    assert line + "pytest -m long; pytest -m examples" in done.stdout, done.stdout

"""A benchmark workload for pytest-xdist: the whole zoo, one test per target.

Not collected by the default test run (it lives under ``benchmarks/``); timed by
``benchmarks/bench_parallel.py`` with ``-n 0`` and ``-n 2``.
"""

from __future__ import annotations

import pytest
from crashpoint.scenarios import MUTANTS, TARGETS, kill_matrix

TARGET_NAMES = ["reference", *MUTANTS]


@pytest.mark.parametrize("name", TARGET_NAMES)
def test_target(name: str) -> None:
    target = TARGETS["reference"] if name == "reference" else MUTANTS[name]
    rows, _ = kill_matrix(targets=[target])
    assert rows[0].ok, rows[0]

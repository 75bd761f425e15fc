"""A benchmark workload for pytest-xdist: the zoo, one test per (target, model column).

Not collected by the default test run (it lives under ``benchmarks/``); timed by
``benchmarks/bench_parallel.py`` with ``-n 0`` and ``-n 2``.
"""

from __future__ import annotations

import pytest
from crashpoint.faultfs import MODELS
from crashpoint.scenarios import FAULT_COLUMN, MUTANTS, TARGETS, kill_matrix

TARGET_NAMES = ["reference", *MUTANTS]
COLUMNS = [*MODELS, FAULT_COLUMN]


@pytest.mark.parametrize("column", COLUMNS)
@pytest.mark.parametrize("name", TARGET_NAMES)
def test_target(name: str, column: str) -> None:
    target = TARGETS["reference"] if name == "reference" else MUTANTS[name]
    faults = column == FAULT_COLUMN
    models = [] if faults else [MODELS[column]]
    rows, _ = kill_matrix(targets=[target], models=models, faults=faults)
    row = rows[0]
    if target.expected is None:
        assert row.violations == 0
    elif target.expected[1] == column:
        assert target.expected[0] in row.killed[column]

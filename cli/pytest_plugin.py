"""The crashpoint pytest plugin (registered under ``pytest11``).

Cheap to import: nothing of crashpoint is imported until a fixture is used.
"""

from __future__ import annotations

import pytest

__all__ = ["pytest_addoption"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("crashpoint", "crash-consistency exploration (crashpoint)")
    group.addoption(
        "--crashpoint-model",
        action="store",
        default="process-crash",
        metavar="MODEL",
        help="persistence model for crashpoint explorations: process-crash (default), "
        "power-loss, power-loss-reorder, all.",
    )
    group.addoption(
        "--crashpoint-shard",
        action="store",
        default=None,
        metavar="K/N",
        help="explore only slice K of N of every crash-state space (CI matrices).",
    )

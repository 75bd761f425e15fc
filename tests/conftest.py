"""The suite's shared set-up: the tests' folder on ``sys.path`` (helpers import by
name), a hypothesis profile for small shared CI machines, and a closing line saying how
many tests the default markers (``addopts = -m 'not long and ...'`` in pyproject.toml)
left out and how to run them (issue 22)."""

from __future__ import annotations

import pathlib
import re
import sys

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(pathlib.Path(__file__).parent))

# CI machines are small and shared (2 cores, pytest-xdist on both): timing-based
# hypothesis checks would make the suite flaky without finding anything.
settings.register_profile("crashpoint", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("crashpoint")

_DESELECTED: dict[str, int] = {}
"""Tests deselected by ``-m``, per excluded marker they carry (one count per test, under
its first excluded marker)."""


def _excluded(config: pytest.Config) -> list[str]:
    """The markers ``-m`` excludes (``not NAME``), in its order."""
    return re.findall(r"\bnot\s+(\w+)", str(config.option.markexpr or ""))


def pytest_deselected(items: list[pytest.Item]) -> None:
    if not items:
        return
    excluded = _excluded(items[0].config)
    for item in items:
        carried = [m for m in excluded if item.get_closest_marker(m) is not None]
        if carried:
            _DESELECTED[carried[0]] = _DESELECTED.get(carried[0], 0) + 1


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """(pytest-xdist, on the controller, which collects nothing) the counts of the first
    worker that finishes: every worker collects and deselects the same tests."""
    counts = getattr(node, "workeroutput", {}).get("crashpoint_deselected")
    if counts and not _DESELECTED:
        _DESELECTED.update(counts)


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the counts to the controller
        workeroutput["crashpoint_deselected"] = dict(_DESELECTED)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    counts = dict(_DESELECTED)
    total = sum(counts.values())
    if not total:
        return
    each = ", ".join(f"{m}: {n}" for m, n in counts.items())
    runs = "; ".join(f"pytest -m {m}" for m in counts)
    terminalreporter.write_line(
        f"{total} test{'s' if total != 1 else ''} deselected by the default markers "
        f"({each}); run them with: {runs}"
    )

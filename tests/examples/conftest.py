"""Helpers for the real-library tests (marker ``examples``; ``tox -e examples``).

The libraries are pinned in ``examples/requirements.txt``. Outside CI a missing one
skips its tests with the reason; under CI (``CI`` set) it fails them: CI installs
the pins, so a skip there would hide a broken install step.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import Any

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIBRARIES = os.path.join(ROOT, "examples", "libraries")

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


def need(module: str) -> ModuleType:
    """Import ``module``; skip with the reason when it is missing (fail under CI)."""
    if os.environ.get("CI"):
        return importlib.import_module(module)
    return pytest.importorskip(
        module,
        reason=f"{module} is not installed: pip install -r examples/requirements.txt "
        "(or tox -e examples)",
    )


def spec(target: str) -> str:
    """``examples/libraries/<file.py>:<factory>`` as an absolute target spec."""
    file, _, attr = target.partition(":")
    return f"{os.path.join(LIBRARIES, file)}:{attr}"


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        if str(item.fspath).startswith(HERE):
            item.add_marker(pytest.mark.examples)

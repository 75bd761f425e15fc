"""The real-library tests (marker ``examples``, added here to every test of this folder;
``tox -e examples``). Helpers: ``library_support.py``."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        if str(item.fspath).startswith(HERE):
            item.add_marker(pytest.mark.examples)

"""Helpers of tests/engines: the catalogue (examples/engines) on ``sys.path``, a run of one
engine configuration, and findings as the pinned tuples."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENGINES = os.path.join(ROOT, "examples", "engines")
if ENGINES not in sys.path:
    sys.path.insert(0, ENGINES)


def need(module: str | None = None, program: str | None = None) -> None:
    """Skip with the reason when strace, ``module`` or ``program`` is missing; under CI a
    missing engine library fails (the pinned versions must install)."""
    from crashpoint.faultfs._strace import strace_available

    reason = strace_available()
    if reason is not None:
        pytest.skip(reason)
    if module is not None:
        try:
            __import__(module)
        except ImportError as exc:
            if os.environ.get("CI"):
                raise
            pytest.skip(
                f"{module} is not installed (pip install -r examples/requirements.txt): {exc}"
            )
    if program is not None and shutil.which(program) is None:
        pytest.skip(f"{program} is not installed")


def run(spec: str, family: str, workload: str = "first-save", sample: float | None = None) -> Any:
    """``examples/engines/run.py``'s run of ``spec`` under one family (``sample``: that
    share of its distinct crash states, seed 1)."""
    import run as engine_run

    return engine_run.run(spec, family, [workload], jobs=2, sample=sample, sample_seed=1)


def pins(r: Any) -> set[tuple[str, str, str, int]]:
    """The findings of a run as ``(invariant, class, trade-off or bug, crash point)``:
    what tests/engines pins (by invariant, class and crash state, never by text)."""
    return {
        (f.invariant, f.cls, "documented" if f.trade_off else "bug", f.crash_point)
        for f in r.findings
    }

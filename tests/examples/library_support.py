"""Helpers for the real-library tests: the libraries are pinned in
``examples/requirements.txt``; outside CI a missing one skips its tests with the reason,
under CI (``CI`` set) it fails them (CI installs the pins: a skip there would hide a
broken install step). Crash states are recovered as bytes (tests pin them by content,
never by how a report renders them)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

import pytest
from crashpoint.faultfs import CrashState, crash_points, parse_models
from crashpoint.scenarios.engine.explore import Counterexample, Run
from crashpoint.scenarios.engine.faults import parse_fault
from crashpoint.scenarios.kinds.document.kind import DOC_BASE, DocumentKind
from crashpoint.scenarios.targets.user import load_factory, make_runner

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LIBRARIES = os.path.join(ROOT, "examples", "libraries")


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


def crash_state(spec: str, c: Counterexample) -> tuple[dict[str, bytes], Run, DocumentKind]:
    """Record ``c``'s workload again (with its fault) and return the crash state at its
    crash point whose digest it names: ``{path relative to the base: bytes}``, the run
    and the kind (for the saved values). Named workloads only (not ``random``)."""
    factory = load_factory(spec)
    attr = getattr(factory, "crashpoint_values", None)
    values, strategy = (
        ("json", None)
        if attr is None
        else ((attr, None) if isinstance(attr, str) else ("custom", attr))
    )
    runner = make_runner(factory, DOC_BASE, spec=spec, seed=0)
    with runner:
        doc = DocumentKind(runner, spec, values=values, strategy=strategy, seed=0)
        run = doc.record(doc.workload(c.workload), parse_fault(c.fault) if c.fault else None)
        (model,) = parse_models(c.model)
        for point in crash_points(model, run.initial, run.ops):
            if point.index != c.crash_point:
                continue
            for state in point.states:
                if state.digest() == c.state_digest:
                    return _files(state), run, doc
    raise AssertionError(f"no crash state {c.state_digest} at crash point {c.crash_point}")


def _files(state: CrashState) -> dict[str, bytes]:
    base = DOC_BASE.rstrip("/") + "/"
    return {p[len(base) :]: b for p, b in state.files if p.startswith(base)}


def saved_blobs(run: Run) -> dict[bytes, str]:
    """Every complete file content an acknowledged save left: ``{bytes: save label}``."""
    blobs: dict[bytes, str] = run.data.blobs
    return blobs


def saved_values(run: Run) -> list[Any]:
    return [s.payload[1] for s in run.steps if s.payload and s.payload[0] == "save"]

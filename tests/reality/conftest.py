"""The reality suite's figures: each test appends its tally to a shared folder (xdist
workers inherit the controller's environment) and the terminal summary adds them up."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

_FIGURES = "CRASHPOINT_REALITY_FIGURES"


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput") and _FIGURES not in os.environ:
        where = tempfile.mkdtemp(prefix="crashpoint-reality-figures-")
        os.environ[_FIGURES] = where
        config.stash[_key] = where
        os.environ["CRASHPOINT_REALITY_PREFIX"] = f"crashpoint-reality-{os.getpid()}-"


_key = pytest.StashKey[str]()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    where = config.stash.get(_key, None)
    if where is None:
        return
    entries = []
    for path in sorted(Path(where).glob("*.jsonl")):
        entries += [json.loads(line) for line in path.read_text().splitlines() if line]
    shutil.rmtree(where, ignore_errors=True)
    if not entries:
        return
    tr = terminalreporter
    tr.section("reality: real crash states against the persistence models")
    totals: dict[str, dict[str, Any]] = {}
    for e in sorted(entries, key=lambda e: e["name"]):
        tr.write_line(
            f"{e['name']}: {e['runs']} {e['kind']}, {e['distinct']} distinct real states, "
            f"{e['inside']} inside ({e['by_rule']} in the bound's cut, matched by the rule), "
            f"{len(e['outside'])} outside, "
            f"{len(e['disagreements'])} disagreements ({e['seconds']} s)"
            + "".join(f"; {n} {what}" for what, n in e.get("notes", {}).items())
        )
        t = totals.setdefault(
            e["kind"], {"runs": 0, "digests": set(), "inside": 0, "outside": 0, "dis": 0}
        )
        t["runs"] += e["runs"]
        t["digests"] |= set(e["digests"])
        t["inside"] += e["inside"]
        t["outside"] += len(e["outside"])
        t["dis"] += len(e["disagreements"])
    for kind, t in totals.items():
        tr.write_line(
            f"TOTAL {kind}: {t['runs']} runs, {len(t['digests'])} distinct real states, "
            f"{t['inside']} inside the model, {t['outside']} outside, {t['dis']} disagreements"
        )
    for e in entries:
        for text in e["outside"] + e["disagreements"]:
            tr.write_line(f"[{e['name']}] {text}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The controller checks that no loop device or mount of the suite was left behind."""
    if hasattr(session.config, "workerinput") or getattr(os, "geteuid", lambda: -1)() != 0:
        return
    from reality_helpers import IMAGE_PREFIX, leftover_loops, leftover_mounts

    left = leftover_loops(IMAGE_PREFIX) + leftover_mounts(IMAGE_PREFIX)
    if left:
        print("reality: LEFT BEHIND (loop devices or mounts):", *left, sep="\n  ")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="module")
def driver() -> Iterator[Any]:
    from reality_helpers import Driver

    d = Driver()
    try:
        yield d
    finally:
        d.close()


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A folder for the images (reality_helpers.fresh_dir); afterwards no loop device or
    mount may refer to it."""
    from reality_helpers import fresh_dir, leftover_loops, leftover_mounts

    where = fresh_dir()
    try:
        yield where
    finally:
        loops, mounts = leftover_loops(str(where)), leftover_mounts(str(where))
        shutil.rmtree(where, ignore_errors=True)
        assert not loops and not mounts, f"left behind: {loops} {mounts}"

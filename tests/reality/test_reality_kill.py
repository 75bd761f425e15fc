"""Real SIGKILLs against ``process-crash`` (issue 9, FAULT-MODEL.md §2–§3, "Validation").

A child runs a workload with the storage on :class:`~crashpoint.faultfs.OsFileSystem`
in a real directory and kills itself with SIGKILL after operation N, for every N;
the directory it leaves (names and bytes) must be one of ``process-crash``'s crash
states at crash point N, and the storage calls it acknowledged before dying must be
the ones the model's recording acknowledged before N. Kills aimed into large writes
(states over 1 MiB) must leave the write whole, absent, or cut at a page boundary
(FAULT-MODEL.md §2: "a write is not one instant").

The 33 I/O patterns of the power-cut suite (``reality_patterns.py``, issue 20) are
killed the same way after every operation, their states judged against
``process-crash`` (about 160 kills).

The default run (``-m reality``) kills every crash point of every catalogue storage
workload once per target (about 620 kills, seconds) and of every pattern, and aims 8
kills into each large write; ``CRASHPOINT_REALITY_LONG=1`` kills every point three times
and aims 60.
"""

from __future__ import annotations

import random
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from crashpoint.faultfs import PROCESS_CRASH, OpKind, crash_points
from reality_driver import MIB, RootedFileSystem, process_crash_unavailable, read_tree
from reality_helpers import (
    LONG,
    STORAGE_SCENARIOS,
    TARGETS,
    Expected,
    Tally,
    child_marks,
    child_ops,
    model_ops,
    partial_write_rule,
)
from reality_patterns import PATTERNS, trace

pytestmark = [pytest.mark.reality]

_why = process_crash_unavailable()
if _why is not None:
    pytestmark.append(pytest.mark.skip(reason=_why))

REPEATS = 3 if LONG else 1


def kill_every_point(driver: Any, tally: Tally, tmp: Path, scenario: str, target: str) -> None:
    """Kill ``scenario`` on ``target`` after every operation N and judge each state."""
    expected = Expected.of(scenario, target, PROCESS_CRASH)
    marks = expected.recording
    for n in range(expected.n + 1):
        root = tmp / f"{scenario}-{n}"
        what = f"{scenario} on {target}, SIGKILL after operation {n} of {expected.n}"
        lines = driver.run(
            {
                "workload": scenario,
                "target": target,
                "root": str(root),
                "kill_at": n,
                "report": str(tmp / "report"),
            }
        )
        point = expected.points[n]
        tally.judge(what, read_tree(str(root)), point.states, cut=point.cut)
        tally.agree(what, child_marks(lines), marks.marks_before(n), "acknowledgements")
        tally.agree(what, child_ops(lines), expected.ops[:n], "operations")
        shutil.rmtree(root)


@pytest.mark.parametrize("target", TARGETS)
def test_kill_after_every_operation(driver: Any, tmp_path: Path, target: str) -> None:
    tally = Tally(f"process-crash, kill after every operation, {target}", "kills")
    for _ in range(REPEATS):
        for scenario in STORAGE_SCENARIOS:
            kill_every_point(driver, tally, tmp_path, scenario, target)
    tally.check()


def _write_seconds(where: Path, size: int) -> float:
    """How long a ``size``-byte write into the page cache takes here (median of 5)."""
    data = b"x" * size
    times = []
    for i in range(5):
        path = where / f"calibrate-{i}"
        started = time.perf_counter()
        with open(path, "wb") as f:
            f.write(data)
        times.append(time.perf_counter() - started)
        path.unlink()
    return sorted(times)[2]


@pytest.mark.parametrize("target", ["reference", "mutant:write-main-in-place"])
def test_kills_aimed_into_large_writes(driver: Any, tmp_path: Path, target: str) -> None:
    """SIGKILL from a thread a random moment into each write over 1 MiB: the state is
    the one before the write, after it, or with a page-aligned prefix of it."""
    tally = Tally(f"process-crash, kills aimed into writes over 1 MiB, {target}", "kills")
    expected = Expected.of("big-saves", target, PROCESS_CRASH)
    ops = expected.recording.ops
    large = [op for op in ops if op.kind is OpKind.WRITE and len(op.data) > MIB]
    assert large, "big-saves must write states over 1 MiB"
    per_write = 60 if LONG else 8
    rng = random.Random(f"aim-{target}")
    for op in large:
        window = _write_seconds(tmp_path, len(op.data)) * 1.3
        for rep in range(per_write):
            root = tmp_path / f"aim-{op.index}-{rep}"
            delay = rng.uniform(0, window)
            what = (
                f"big-saves on {target}, SIGKILL {delay * 1e6:.0f} µs into operation "
                f"{op.index} ({op.render()})"
            )
            lines = driver.run(
                {
                    "workload": "big-saves",
                    "target": target,
                    "root": str(root),
                    "aim_at": op.index,
                    "delay": delay,
                    "report": str(tmp_path / "report"),
                }
            )
            observed = read_tree(str(root))
            before, after = expected.points[op.index], expected.points[op.index + 1]
            allowed = (*before.states, *after.states)
            rule = partial_write_rule(before.states[0], op)
            tally.judge(what, observed, allowed, cut=before.cut + after.cut, rule=rule)
            done = sum(1 for line in lines if line.startswith("op "))
            tally.agree(what, child_ops(lines), expected.ops[:done], "operations")
            content = observed.file(op.path)
            tally.note(
                "landed inside the write (a page-aligned prefix)",
                content is not None and 0 < len(content) < len(op.data),
            )
            shutil.rmtree(root)
    tally.check()


def test_a_wrong_model_is_caught(driver: Any, tmp_path: Path) -> None:
    """The comparison can fail: real states judged against the *next* crash point's
    states, and acknowledgements against the next point's marks, are flagged wherever
    the two points differ (a deliberately wrong model)."""
    scenario, target = "three-saves", "reference"
    expected = Expected.of(scenario, target, PROCESS_CRASH)
    right = Tally("a wrong model: the right crash point", "kills")
    wrong = Tally("a wrong model: the next crash point", "kills")
    differ = marks_differ = 0
    for n in range(expected.n):
        root = tmp_path / f"wrong-{n}"
        job = {"workload": scenario, "target": target, "root": str(root), "kill_at": n}
        lines = driver.run({**job, "report": str(tmp_path / "report")})
        observed = read_tree(str(root))
        here, there = expected.points[n], expected.points[n + 1]
        right.judge(f"point {n}", observed, here.states)
        wrong.judge(f"point {n} judged as {n + 1}", observed, there.states)
        differ += set(here.states) != set(there.states)
        now, later = expected.recording.marks_before(n), expected.recording.marks_before(n + 1)
        wrong.agree(f"point {n}", child_marks(lines), later, "acknowledgements")
        marks_differ += now != later
        shutil.rmtree(root)
    assert not right.outside
    assert differ > 0 and len(wrong.outside) == differ
    assert marks_differ > 0 and len(wrong.disagreements) == marks_differ


def test_power_cut_patterns_killed_after_every_operation(driver: Any, tmp_path: Path) -> None:
    """The I/O patterns of the power-cut suite (``reality_patterns.py``: page overwrites,
    fdatasync, truncation, hard links, rmdir, directory renames, O_APPEND and O_DIRECT
    writes) killed by a real SIGKILL after every operation N in a plain directory: the
    directory must be ``process-crash``'s one state at crash point N (every completed
    operation, nothing else), and the operations the child reports the model's first N."""
    tally = Tally(
        "process-crash, the power-cut suite's I/O patterns, kill after every operation", "kills"
    )
    wrong = Tally("a wrong model: the patterns judged at the next crash point", "kills")
    differ = 0  # points whose prefix state (the one a kill leaves) the next point lacks
    for rep in range(REPEATS):
        for pattern in PATTERNS:
            n_ops: int | None = None
            n = 0
            while n_ops is None or n <= n_ops:
                root = tmp_path / f"{pattern.name}-{rep}-{n}"
                root.mkdir()
                pattern.setup(RootedFileSystem(str(root)))
                initial = read_tree(str(root))
                ops = trace(pattern, initial)
                n_ops = len(ops)
                what = f"{pattern.name}, SIGKILL after operation {n} of {n_ops}"
                lines = driver.run(
                    {
                        "pattern": pattern.name,
                        "root": str(root),
                        "kill_at": n,
                        "report": str(tmp_path / "report"),
                    }
                )
                points = list(crash_points(PROCESS_CRASH, initial, ops, points={n, n + 1}))
                point, observed = points[0], read_tree(str(root))
                tally.judge(what, observed, point.states, cut=point.cut)
                if len(points) == 2:  # the comparison can fail: the next point's states
                    there = points[1].states
                    differ += point.states[0] not in set(there)
                    wrong.judge(f"{what}, judged as {n + 1}", observed, there)
                tally.agree(what, child_ops(lines), model_ops(ops[:n]), "operations")
                shutil.rmtree(root)
                n += 1
    assert len(PATTERNS) >= 33, "the suite's patterns (issue 20: about 33)"
    assert differ > 0 and len(wrong.outside) == differ, "a wrong model must be caught"
    tally.check()

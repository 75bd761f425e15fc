"""Emulated power cuts against ``power-loss`` (issue 9, FAULT-MODEL.md §3, "Validation").

The workload runs on a fresh ext4 (or XFS) image attached to a loop device; its
setup is made durable (syncfs) first. The writer SIGKILLs itself when it issues
operation N; the image's backing file is read until two consecutive reads agree
(the kernel may still be writing back: only a consistent copy is a state a power
cut could leave); the copy is mounted on another loop device, which replays the
journal, and the tree it holds must be one of ``power-loss``'s crash states at
crash point N. Each cut is taken at once, and (ext4) once after a journal commit:
the original is mounted with ``commit=1`` and the copy taken 1.5 s after the kill.
The child's acknowledgements must agree with the model's recording, as for kills.

Needs root, ``losetup``, ``mount`` and ``mkfs.ext4``/``mkfs.xfs``; where the machine
lacks one the tests are skipped with the reason (and ``.ci/run`` prints it). No loop
device or mount is left behind, even when a test fails (checked at the end).

The default run (``-m reality``) cuts a sample of crash points (about 60, half a minute);
``CRASHPOINT_REALITY_LONG=1`` cuts every crash point of every catalogue storage
workload for each target.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from crashpoint.faultfs import POWER_LOSS, PROCESS_CRASH
from reality_driver import power_loss_unavailable, read_tree
from reality_helpers import (
    LONG,
    STORAGE_SCENARIOS,
    TARGETS,
    Expected,
    Tally,
    child_marks,
    child_ops,
    consistent_copy,
    fresh_dir,
    leftover_loops,
    leftover_mounts,
    loop_mount,
    mkfs,
    sample,
)

pytestmark = [pytest.mark.reality]

IMAGE_BYTES = {"ext4": 32 << 20, "xfs": 300 << 20}  # mkfs.xfs refuses less than 300 MB
COPY_OPTIONS = {"ext4": "", "xfs": "nouuid"}
COMMIT_WAIT = 1.5  # seconds after the kill, with the original mounted commit=1


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A folder for the images; afterwards no loop device or mount may refer to it."""
    where = fresh_dir()
    try:
        yield where
    finally:
        loops, mounts = leftover_loops(str(where)), leftover_mounts(str(where))
        shutil.rmtree(where, ignore_errors=True)
        assert not loops and not mounts, f"left behind: {loops} {mounts}"


def power_cut(
    driver: Any,
    tally: Tally,
    work: Path,
    fstype: str,
    scenario: str,
    target: str,
    n: int,
    expected: Expected,
    *,
    commit: bool,
) -> None:
    """One emulated power cut at crash point ``n``, judged against ``expected``."""
    image, copy = work / "image", work / "copy"
    mkfs(image, fstype, IMAGE_BYTES[fstype])
    options = "commit=1" if commit else ""
    with loop_mount(image, work / "live", fstype, options) as live:
        lines = driver.run(
            {
                "workload": scenario,
                "target": target,
                "root": str(live),
                "kill_at": n,
                "sync_setup": True,
                "report": str(work / "report"),
            }
        )
        if commit:
            time.sleep(COMMIT_WAIT)
        consistent_copy(image, copy)
    image.unlink()
    with loop_mount(copy, work / "replayed", fstype, COPY_OPTIONS[fstype]) as replayed:
        observed = read_tree(str(replayed))
    copy.unlink()
    when = "after a journal commit" if commit else "at once"
    what = f"{scenario} on {target}, {fstype}, power cut {when} after operation {n} of {expected.n}"
    point = expected.points[n]
    tally.judge(what, observed, point.states, cut=point.cut)
    tally.agree(what, child_marks(lines), expected.recording.marks_before(n), "acknowledgements")
    tally.agree(what, child_ops(lines), expected.ops[:n], "operations")


def _plan(target: str, fstype: str, commit: bool) -> list[tuple[str, list[int] | None]]:
    """(scenario, crash points or None for all) to cut for one test."""
    scenarios = [*STORAGE_SCENARIOS, "medium-saves"]
    if LONG:
        if commit:  # each cut waits for the commit: a sample of points per scenario
            return [(s, []) for s in sample(scenarios, 8, f"{target}-{fstype}")]
        return [(s, None) for s in scenarios]
    if target == "reference" and not commit and fstype == "ext4":
        return [(s, []) for s in ["three-saves", "medium-saves", "delete"]]
    return [(s, []) for s in sample(scenarios, 1, f"{target}-{fstype}-{commit}")]


def _points(expected: Expected, wanted: list[int] | None, seed: str) -> list[int]:
    everything = list(range(expected.n + 1))
    if wanted is None:
        return everything
    return sample(everything, 8 if LONG else 6, seed)


def _cases() -> list[Any]:
    """(target, fstype, commit): every combination in the long run; outside it ext4 at
    once for every target, after a commit for two, XFS for the reference."""
    cases = []
    for target in TARGETS:
        for fstype, commit in (("ext4", False), ("ext4", True), ("xfs", False)):
            quick = (
                (fstype == "ext4" and not commit)
                or (commit and target in ("reference", "mutant:no-fsync-before-rename"))
                or (fstype == "xfs" and target == "reference")
            )
            if LONG or quick:
                name = f"{target}-{fstype}{'-commit' if commit else ''}"
                cases.append(pytest.param(target, fstype, commit, id=name))
    return cases


@pytest.mark.parametrize(("target", "fstype", "commit"), _cases())
def test_power_cut_after_operation(
    driver: Any, workdir: Path, target: str, fstype: str, commit: bool
) -> None:
    why = power_loss_unavailable(fstype)
    if why is not None:
        pytest.skip(why)
    when = "after a journal commit" if commit else "at once"
    tally = Tally(f"power-loss, {fstype} power cut {when}, {target}", "power cuts")
    for scenario, wanted in _plan(target, fstype, commit):
        expected = Expected.of(scenario, target, POWER_LOSS)
        for n in _points(expected, wanted, f"{scenario}-{target}-{fstype}-{commit}"):
            power_cut(driver, tally, workdir, fstype, scenario, target, n, expected, commit=commit)
    tally.check()


def test_a_power_cut_loses_what_was_not_synced(driver: Any, workdir: Path) -> None:
    """The emulation is not a copy of the live directory: the seed (no fsync) cut at
    once after its last operation keeps none of its saves, a state ``process-crash``
    (the page cache survives) does not offer, while ``power-loss`` does."""
    why = power_loss_unavailable("ext4")
    if why is not None:
        pytest.skip(why)
    scenario, target = "two-quick-saves", "seed"
    expected = Expected.of(scenario, target, POWER_LOSS)
    killed = Expected.of(scenario, target, PROCESS_CRASH)
    n = expected.n
    power = Tally("a power cut loses unsynced saves: power-loss", "power cuts")
    power_cut(driver, power, workdir, "ext4", scenario, target, n, expected, commit=False)
    assert not power.outside, power.outside
    kill = Tally("a power cut loses unsynced saves: judged by process-crash", "power cuts")
    power_cut(driver, kill, workdir, "ext4", scenario, target, n, killed, commit=False)
    assert len(kill.outside) == 1

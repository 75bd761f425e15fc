"""Emulated power cuts against the file-system families (issues 9 and 20, FAULT-MODEL.md §3).

The workload runs on a fresh ext4, XFS or btrfs image attached to a loop device; its
setup is made durable (syncfs) first. The writer SIGKILLs itself when it issues
operation N; the image's backing file is read until two consecutive reads agree
(the kernel may still be writing back: only a consistent copy is a state a power
cut could leave); the copy is mounted on another loop device, which replays the
journal (or btrfs's log tree), and the tree it holds must be one of the model's crash
states at crash point N under that file system's family, ``ext4``, ``xfs`` or ``btrfs``
(docs/models.md; whether a state also fits the journaled model ``power-loss`` named before
issue 20 is counted).
Each cut is taken at once; also after a commit (the original mounted ``commit=1``; on
ext4 the copy waits for jbd2 to count a commit after the kill), and, on ext4, after
part of the dirty data was written back (a random page-aligned prefix of each file,
``sync_file_range``, then the commit): the delayed-allocation states.
The child's acknowledgements and operations must agree with the model's recording.

Needs root, ``losetup``, ``mount`` and ``mkfs.ext4``/``mkfs.xfs``/``mkfs.btrfs``; where
the machine lacks one the tests are skipped with the reason (and ``.ci/run`` prints it).
No loop device or mount is left behind, even when a test fails (checked per test and
at the end of the session).

The default run (``-m reality``) cuts a sample of crash points (about 70, a minute or
two); ``CRASHPOINT_REALITY_LONG=1`` cuts every crash point of every catalogue storage
workload for each target at once, and a sample after a commit or a writeback.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from crashpoint.faultfs import PROCESS_CRASH, get_model
from crashpoint.faultfs._power import JOURNALED
from crashpoint.scenarios import get_target, record
from reality_driver import power_loss_unavailable, read_tree, workload
from reality_helpers import (
    LONG,
    STORAGE_SCENARIOS,
    TARGETS,
    Expected,
    Tally,
    child_marks,
    child_ops,
    consistent_copy,
    loop_mount,
    mkfs,
    sample,
    wait_for_commit,
    write_back_prefixes,
)

pytestmark = [pytest.mark.reality]

IMAGE_BYTES = {"ext4": 32 << 20, "xfs": 300 << 20, "btrfs": 128 << 20}  # mkfs minimums
COPY_OPTIONS = {"ext4": "", "xfs": "nouuid", "btrfs": ""}
MODEL_FOR = {fs: dataclasses.replace(get_model(fs), max_states=4096) for fs in IMAGE_BYTES}
"""The model each file system is judged against: its family (issue 20; ``power-loss``, an
alias of ``ext4`` since), with room to enumerate every state of these workloads (cut = 0):
a real state is then judged against the family's rule, not against its default bound."""
MODEL = MODEL_FOR["ext4"]
OLD = dataclasses.replace(JOURNALED, max_states=4096)
"""The journaled model ``power-loss`` named before issue 20: how many real states it
holds too is counted, not asserted."""


WHEN = {
    "now": "at once",
    "commit": "after a journal commit",  # btrfs: a transaction commit
    "writeback": "after part of the dirty data was written back",
}
"""The three moments a power cut is emulated at, after the writer died."""


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
    mode: str = "now",
    also: Expected | None = None,
) -> None:
    """One emulated power cut at crash point ``n`` (``mode``: a key of :data:`WHEN`),
    judged against ``expected``; ``also``: a second model whose fit is counted, not asserted."""
    image, copy = work / "image", work / "copy"
    mkfs(image, fstype, IMAGE_BYTES[fstype])
    options = "" if mode == "now" else "commit=1"
    with loop_mount(image, work / "live", fstype, options) as live:
        lines = driver.run(
            {
                "workload": scenario,
                "target": target,
                "root": str(live.path),
                "kill_at": n,
                "sync_setup": True,
                "report": str(work / "report"),
            }
        )
        commits = live.journal_commits()
        if mode == "writeback":
            write_back_prefixes(live.path, f"{scenario}-{target}-{n}")
        if mode != "now":
            wait_for_commit(live, commits, fstype)
        consistent_copy(image, copy)
    image.unlink()
    with loop_mount(copy, work / "replayed", fstype, COPY_OPTIONS[fstype]) as replayed:
        observed = read_tree(str(replayed.path))
    copy.unlink()
    what = (
        f"{scenario} on {target}, {fstype}, power cut {WHEN[mode]}, "
        f"after operation {n} of {expected.n}"
    )
    point = expected.points[n]
    tally.judge(what, observed, point.states, cut=point.cut)
    if also is not None:
        tally.note(f"also inside {also.model}", observed in set(also.points[n].states))
    tally.agree(what, child_marks(lines), expected.recording.marks_before(n), "acknowledgements")
    tally.agree(what, child_ops(lines), expected.ops[:n], "operations")


def _plan(target: str, fstype: str, mode: str) -> list[tuple[str, bool]]:
    """(scenario, every crash point?) to cut for one test; a sample of points otherwise."""
    scenarios = [*STORAGE_SCENARIOS, "medium-saves"]
    if LONG:
        if mode != "now":  # each cut waits for a commit: a sample of points per scenario
            return [(s, False) for s in sample(scenarios, 8, f"{target}-{fstype}-{mode}")]
        return [(s, True) for s in scenarios]
    if target == "reference" and mode == "now" and fstype == "ext4":
        return [(s, False) for s in ["three-saves", "medium-saves", "delete"]]
    if mode == "writeback":
        return [("medium-saves", False)]
    busy = [s for s in scenarios if record(workload(s), get_target(target)).ops]
    return [(s, False) for s in sample(busy, 1, f"{target}-{fstype}-{mode}")]


def _points(expected: Expected, every: bool, seed: str) -> list[int]:
    everything = list(range(expected.n + 1))
    return everything if every else sample(everything, 8 if LONG else 6, seed)


def _cases() -> list[Any]:
    """(target, fstype, mode): every combination in the long run; outside it ext4 at once
    for every target, after a commit or a writeback for two, XFS and btrfs at once for
    the reference."""
    cases = []
    for target in TARGETS:
        for fstype, mode in (("ext4", "now"), ("ext4", "commit"), ("ext4", "writeback")):
            cases.append((target, fstype, mode))
        cases.append((target, "xfs", "now"))
        cases += [(target, "btrfs", "now"), (target, "btrfs", "commit")]
    chosen = []
    for target, fstype, mode in cases:
        quick = (
            (fstype == "ext4" and mode == "now")
            or (
                fstype == "ext4"
                and mode == "commit"
                and target in ("reference", "mutant:no-fsync-before-rename")
            )
            or (mode == "writeback" and target in ("seed", "mutant:no-fsync-before-rename"))
            or (fstype in ("xfs", "btrfs") and mode == "now" and target == "reference")
        )
        if LONG or quick:
            name = f"{target}-{fstype}{'' if mode == 'now' else '-' + mode}"
            chosen.append(pytest.param(target, fstype, mode, id=name))
    return chosen


@pytest.mark.parametrize(("target", "fstype", "mode"), _cases())
def test_power_cut_after_operation(
    driver: Any, workdir: Path, target: str, fstype: str, mode: str
) -> None:
    why = power_loss_unavailable(fstype)
    if why is not None:
        pytest.skip(why)
    model = MODEL_FOR[fstype]
    tally = Tally(f"{model.name}, {fstype} power cut {WHEN[mode]}, {target}", "power cuts")
    for scenario, every in _plan(target, fstype, mode):
        expected = Expected.of(scenario, target, model)
        also = Expected.of(scenario, target, OLD)
        for n in _points(expected, every, f"{scenario}-{target}-{fstype}-{mode}"):
            power_cut(
                driver, tally, workdir, fstype, scenario, target, n, expected, mode=mode, also=also
            )
    tally.check()


def test_a_power_cut_loses_what_was_not_synced(driver: Any, workdir: Path) -> None:
    """The emulation is not a copy of the live directory: the seed (no fsync) cut at
    once after its last operation keeps none of its saves, a state ``process-crash``
    (the page cache survives) does not offer, while ``ext4`` (``power-loss``) does."""
    why = power_loss_unavailable("ext4")
    if why is not None:
        pytest.skip(why)
    scenario, target = "two-quick-saves", "seed"
    expected = Expected.of(scenario, target, MODEL)
    killed = Expected.of(scenario, target, PROCESS_CRASH)
    n = expected.n
    power = Tally("a power cut loses unsynced saves: ext4", "power cuts")
    power_cut(driver, power, workdir, "ext4", scenario, target, n, expected, mode="now")
    assert not power.outside, power.outside
    kill = Tally("a power cut loses unsynced saves: judged by process-crash", "power cuts")
    power_cut(driver, kill, workdir, "ext4", scenario, target, n, killed, mode="now")
    assert len(kill.outside) == 1

"""Emulated power cuts against the file-system families (issue 20, FAULT-MODEL.md §3).

Database-style patterns (in-place page overwrites, ``fdatasync``, truncation, an fsync
of one file while other metadata is pending, hard links, rmdir, a directory rename) and
their controls run on a fresh ext4, XFS or btrfs image on a loop device. The setup is
made durable first (syncfs). The pattern's first ``N`` operations run, through a
recording filesystem that stops the writer at operation ``N``; in mode ``range`` the
pattern's chosen ranges are then written back with ``sync_file_range`` (the out-of-order
writeback a kernel may do: block 2 before block 0); the image is copied once two
consecutive reads agree, the copy is mounted (the journal or log replays) and the tree
it holds must be one of that file system's family's crash states at crash point ``N``,
and one of ``posix``'s. For each family, the model states no cut produced (its slack)
are counted and printed, not asserted.

The long run (``CRASHPOINT_REALITY_LONG=1``, tox ``reality-long``) cuts each (pattern,
point, mode) three times, and adds mode ``kernel`` once per pattern: the cut waits until
the kernel's own writeback has had its chance (``vm.dirty_expire_centisecs`` plus
``vm.dirty_writeback_centisecs`` plus a second, about 36 s by default) at the point where
the most is pending: just before the pattern's last fsync, fdatasync or directory fsync
(after its last operation if it has none): about an hour of waits over 33 patterns and
the three file systems. The O_APPEND and O_DIRECT patterns write through the real flags
(:class:`FlaggedFileSystem`). The same patterns are killed for real under
``process-crash`` in ``test_reality_kill.py``.

Needs root, ``losetup``, ``mount``, ``mkfs.ext4``/``mkfs.xfs``/``mkfs.btrfs``; skipped
with the reason otherwise.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import dataclasses
import os
import time
from pathlib import Path

import pytest
from crashpoint.faultfs import (
    CrashState,
    Op,
    OpKind,
    PersistenceModel,
    RecordingFileSystem,
    SimulatedCrash,
    crash_points,
    get_model,
)
from crashpoint.faultfs._power import JOURNALED
from reality_driver import RootedFileSystem, power_loss_unavailable, read_tree
from reality_helpers import (
    LONG,
    Tally,
    consistent_copy,
    loop_mount,
    mkfs,
)
from reality_patterns import PATTERNS, FlaggedFileSystem, Pattern, trace

pytestmark = [pytest.mark.reality]

IMAGE_BYTES = {"ext4": 32 << 20, "xfs": 300 << 20, "btrfs": 128 << 20}
COPY_OPTIONS = {"ext4": "", "xfs": "nouuid", "btrfs": ""}


POWER_LOSS_BIG = dataclasses.replace(JOURNALED, max_states=1 << 16)
"""The journaled model ``power-loss`` named before issue 20 (an alias of ``ext4`` since),
whose misses on these patterns are counted (not asserted)."""


def _model(name: str) -> PersistenceModel:
    return dataclasses.replace(get_model(name), max_states=1 << 16)


def _syncfs(path: Path) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.syncfs(fd) != 0:
            raise OSError(ctypes.get_errno(), "syncfs", str(path))
    finally:
        os.close(fd)


def _write_back(root: Path, ranges: tuple[tuple[str, int, int], ...]) -> None:
    """``sync_file_range(WAIT_BEFORE|WRITE|WAIT_AFTER)`` of each range that exists."""
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    sync_file_range = libc.sync_file_range
    sync_file_range.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
    for path, offset, length in ranges:
        real = str(root) + path
        if not os.path.isfile(real):
            continue
        fd = os.open(real, os.O_RDONLY)
        try:
            if sync_file_range(fd, offset, length, 1 | 2 | 4) != 0:
                raise OSError(ctypes.get_errno(), "sync_file_range", real)
        finally:
            os.close(fd)


def _kernel_writeback_seconds() -> float:
    """How long the kernel may keep a dirty page before its flusher writes it back."""
    total = 1.0
    for knob, default in (("dirty_expire_centisecs", 3000), ("dirty_writeback_centisecs", 500)):
        try:
            total += int(Path("/proc/sys/vm", knob).read_text()) / 100
        except (OSError, ValueError):
            total += default / 100
    return total


def cut(
    work: Path, fstype: str, pattern: Pattern, n: int, mode: str
) -> tuple[CrashState, CrashState, list[str]]:
    """One emulated power cut after ``n`` operations of ``pattern``: (the durable state
    the run started from, the state the replayed copy holds, the operations the real run
    recorded)."""
    image, copy = work / "image", work / "copy"
    mkfs(image, fstype, IMAGE_BYTES[fstype])
    with loop_mount(image, work / "live", fstype) as live:
        pattern.setup(RootedFileSystem(str(live.path)))
        _syncfs(live.path)
        initial = read_tree(str(live.path))
        real = FlaggedFileSystem(str(live.path), pattern.flags)
        recorder = RecordingFileSystem(real, crash_at=n)
        with contextlib.suppress(SimulatedCrash):
            pattern.run(recorder)
        if mode == "range":
            _write_back(live.path, pattern.writeback)
        elif mode == "kernel":
            time.sleep(_kernel_writeback_seconds())
        consistent_copy(image, copy)
    image.unlink()
    with loop_mount(copy, work / "replayed", fstype, COPY_OPTIONS[fstype]) as replayed:
        observed = read_tree(str(replayed.path))
    copy.unlink()
    return initial, observed, [_render(o) for o in recorder.trace.ops]


_SYNCS = (OpKind.FSYNC, OpKind.FDATASYNC, OpKind.FSYNC_DIR)


def _most_pending(ops: list[Op]) -> int:
    """The crash point just before the last sync of ``ops`` (``len(ops)`` if none): where
    the kernel's own writeback has the most pending to write back, in any order."""
    syncs = [op.index for op in ops if op.kind in _SYNCS]
    at = syncs[-1] if syncs else len(ops)
    assert at > 0, "a pattern's first operation is never a sync (cut 0 has no trace yet)"
    return at


def _render(op: Op) -> str:
    return f"{op.kind.value} {op.path} {op.dst}"


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "btrfs"])
def test_real_power_cuts_fall_inside_the_family_and_posix(fstype: str, workdir: Path) -> None:
    why = power_loss_unavailable(fstype)
    if why is not None:
        pytest.skip(why)
    family, posix = _model(fstype), _model("posix")
    inside_family = Tally(f"{fstype} family, database patterns, {fstype} power cuts", "power cuts")
    inside_posix = Tally(f"posix family, database patterns, {fstype} power cuts", "power cuts")
    slack: dict[str, int] = {}
    for pattern in PATTERNS:
        seen: dict[int, set[CrashState]] = {}
        expected: dict[int, tuple[CrashState, ...]] = {}
        modes = ["now", "range"] if pattern.writeback else ["now"]
        n_ops: int | None = None
        kernel_at = -1  # known once the first cut has recorded the trace
        k = 0
        while n_ops is None or k <= n_ops:
            extra = ["kernel"] if LONG and k == kernel_at else []  # every pattern, once
            for mode in [m for m in modes for _ in range(3 if LONG else 1)] + extra:
                initial, observed, real = cut(workdir, fstype, pattern, k, mode)
                ops = trace(pattern, initial)
                n_ops = len(ops)
                kernel_at = _most_pending(ops)
                what = f"{pattern.name} on {fstype}, cut after operation {k} of {n_ops} ({mode})"
                inside_family.agree(what, real, [_render(o) for o in ops[:k]], "operations")
                fpoint = next(iter(crash_points(family, initial, ops, points={k})))
                ppoint = next(iter(crash_points(posix, initial, ops, points={k})))
                old = next(iter(crash_points(POWER_LOSS_BIG, initial, ops, points={k})))
                if observed not in set(old.states):  # counted: what the old power-loss misses
                    inside_family.note(
                        f"outside journaled, the old power-loss ({pattern.name}, {mode})", True
                    )
                assert fpoint.cut == 0 and ppoint.cut == 0, what
                inside_family.judge(what, observed, fpoint.states)
                inside_posix.judge(what, observed, ppoint.states)
                seen.setdefault(k, set()).add(observed)
                expected[k] = fpoint.states
            k += 1
        slack[pattern.name] = sum(len(set(expected[k]) - seen[k]) for k in expected)
    inside_family.notes["model states no cut produced (the family's slack)"] = sum(slack.values())
    print(f"slack of the {fstype} family (model states no cut produced), by pattern: {slack}")
    inside_posix.check()
    inside_family.check()

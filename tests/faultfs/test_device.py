"""Device guarantees as model options (issue 20, FAULT-MODEL.md §3): the atomic write
size (``--atomic-write``) and a drive that ignores flushes (``--drive-ignores-flush``)."""

from __future__ import annotations

import dataclasses

import pytest
from crashpoint.faultfs import (
    FS_MODELS,
    PROCESS_CRASH,
    CrashState,
    MemoryFileSystem,
    Op,
    RecordingFileSystem,
    crash_points,
    device_default,
    durable_at,
    get_model,
    with_device,
    write_bytes,
)
from crashpoint.faultfs._power import JOURNALED

BASE = "/base"
BLOCK = 4096
OLD, NEW = b"o" * BLOCK, b"n" * BLOCK
SECTOR = 512


def record(setup: bytes | None, *, fsync_dir: bool = False) -> tuple[CrashState, list[Op]]:
    """One block of ``/base/f`` overwritten in place and fsynced (created when ``setup``
    is None)."""
    mem = MemoryFileSystem(dirs=(BASE,))
    if setup is not None:
        write_bytes(mem, "/base/f", setup)
    initial = mem.crash_state()
    fs = RecordingFileSystem(MemoryFileSystem(initial))
    if setup is None:
        fs.create("/base/f")
    fs.write("/base/f", 0, NEW)
    fs.fsync("/base/f")
    if fsync_dir:
        fs.fsync_dir(BASE)
    return initial, fs.trace.ops


def contents(
    model_name: str, initial: CrashState, ops: list[Op], k: int, **device: object
) -> set[bytes]:
    """The contents of /base/f at crash point ``k``; the writeback bound counts torn units
    (a block's 8 sectors at 512 bytes), so it is raised to enumerate them all."""
    big = dataclasses.replace(get_model(model_name), max_states=10**5, writeback_bound=8)
    model = with_device(big, **device)  # type: ignore[arg-type]
    point = next(iter(crash_points(model, initial, ops, points={k})))
    assert point.cut == 0
    return {s.file("/base/f") for s in point.states}


@pytest.mark.parametrize("name", list(FS_MODELS))
def test_the_default_device_tears_only_at_the_block(name: str) -> None:
    initial, ops = record(OLD)
    assert contents(name, initial, ops, 1) == {OLD, NEW}


@pytest.mark.parametrize("name", list(FS_MODELS))
def test_a_512_byte_atomic_write_adds_sub_block_tears(name: str) -> None:
    initial, ops = record(OLD)
    got = contents(name, initial, ops, 1, atomic_write=SECTOR)
    half = NEW[: BLOCK // 2] + OLD[BLOCK // 2 :]
    assert {OLD, NEW, half} <= got  # the block half new, half old
    assert all(len(c) == BLOCK for c in got)
    for c in got:  # every state is made of whole sectors, each old or new
        sectors = {c[i : i + SECTOR] for i in range(0, BLOCK, SECTOR)}
        assert sectors <= {OLD[:SECTOR], NEW[:SECTOR]}
    # once the fsync returned, the block is durable: no tear
    assert contents(name, initial, ops, 2, atomic_write=SECTOR) == {NEW}


@pytest.mark.parametrize("name", list(FS_MODELS))
def test_a_drive_that_ignores_flushes_keeps_nothing_an_fsync_forced(name: str) -> None:
    initial, ops = record(None, fsync_dir=True)
    assert contents(name, initial, ops, len(ops)) == {NEW}
    lost = contents(name, initial, ops, len(ops), drive_ignores_flush=True)
    # the acknowledged file may be absent, empty or zero-filled: nothing was forced
    assert {NEW, None, b"", bytes(BLOCK)} == lost
    model = with_device(get_model(name), drive_ignores_flush=True)
    assert durable_at(model, ops, len(ops)) == [
        op.kind.barrier for op in ops
    ]  # nothing but the barriers themselves (which changed nothing)
    assert durable_at(get_model(name), ops, len(ops)) == [True] * len(ops)


def test_device_options_are_validated_and_named() -> None:
    ext4 = get_model("ext4")
    assert with_device(ext4) is ext4 and device_default(ext4) is ext4 and not ext4.hypothetical
    small = with_device(ext4, atomic_write=SECTOR)
    assert small.hypothetical and small.name == "ext4"
    assert device_default(small) == ext4
    assert device_default(with_device(ext4, drive_ignores_flush=True)) == ext4
    assert small.options()["atomic_write"] == SECTOR
    assert small.options()["drive_ignores_flush"] is False
    for bad in (0, 511, 513, 1000, 8192):
        with pytest.raises(ValueError, match="a power of two from 512 to the block size"):
            with_device(ext4, atomic_write=bad)
    # a process crash keeps the page cache: the drive does not matter, and the family
    # refuses a hand-made model that says otherwise
    assert with_device(PROCESS_CRASH, atomic_write=SECTOR) is PROCESS_CRASH
    assert "atomic_write" not in PROCESS_CRASH.options()
    initial, ops = record(OLD)
    for model in (PROCESS_CRASH, JOURNALED):
        odd = dataclasses.replace(model, drive_ignores_flush=True)
        with pytest.raises(ValueError, match=r"device options|no device options"):
            list(crash_points(odd, initial, ops))

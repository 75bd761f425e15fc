"""Short counts: a write that stores a prefix and returns its length with no error
(FAULT-MODEL.md §2), and the loops that continue it (SPEC.md §6)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from crashpoint.faultfs import (
    PROCESS_CRASH,
    Fault,
    FaultKind,
    MemoryFileSystem,
    OpKind,
    OsFileSystem,
    RecordingFileSystem,
    SimulatedCrash,
    crash_points,
    write_bytes,
)
from crashpoint.scenarios import fault_plan, parse_fault
from crashpoint.scenarios.engine.faults import fault_spec

BASE = "/base"
SHORT = FaultKind.SHORT_COUNT


def disk() -> MemoryFileSystem:
    mem = MemoryFileSystem(dirs=(BASE,))
    mem.create("/base/f")
    return mem


# --- the fault ----------------------------------------------------------------------------


def test_a_short_count_stores_half_and_returns_its_length_without_error() -> None:
    mem = disk()
    fs = RecordingFileSystem(mem, fault=Fault(0, errno.ENOSPC, SHORT))
    assert fs.write("/base/f", 2, b"0123456789") == 5
    assert mem.read("/base/f") == b"\0\x0001234"
    (op,) = fs.trace.ops
    # The trace holds what was stored, as a plain successful write.
    assert (op.kind, op.offset, op.data, op.errno) == (OpKind.WRITE, 2, b"01234", None)
    assert fs.write("/base/f", 7, b"56789") == 5  # the next call is not faulted
    assert mem.read("/base/f") == b"\0\x000123456789"


@pytest.mark.parametrize(("size", "stored"), [(2, 1), (3, 1), (9, 4), (4096, 2048)])
def test_the_prefix_is_half_rounded_down_and_never_empty(size: int, stored: int) -> None:
    fs = RecordingFileSystem(disk(), fault=Fault(0, errno.ENOSPC, SHORT))
    assert fs.write("/base/f", 0, bytes(size)) == stored


def test_a_one_byte_write_or_another_operation_fails_with_enospc_instead() -> None:
    mem = disk()
    fs = RecordingFileSystem(mem, fault=Fault(0, errno.ENOSPC, SHORT))
    with pytest.raises(OSError) as info:
        fs.write("/base/f", 0, b"x")
    assert info.value.errno == errno.ENOSPC
    assert mem.read("/base/f") == b""
    fs = RecordingFileSystem(mem, fault=Fault(0, errno.ENOSPC, SHORT))
    with pytest.raises(OSError) as info:
        fs.create("/base/g")
    assert info.value.errno == errno.ENOSPC
    assert not mem.exists("/base/g")


def test_a_short_count_on_a_missing_file_is_an_ordinary_failure() -> None:
    fs = RecordingFileSystem(disk(), fault=Fault(0, errno.ENOSPC, SHORT))
    with pytest.raises(FileNotFoundError):
        fs.write("/base/missing", 0, b"0123")
    assert fs.trace.ops[0].errno == errno.ENOENT


def test_a_crash_cannot_be_outrun_by_a_short_count() -> None:
    fs = RecordingFileSystem(disk(), crash_at=0, fault=Fault(0, errno.ENOSPC, SHORT))
    with pytest.raises(SimulatedCrash):
        fs.write("/base/f", 0, b"0123")
    assert fs.trace.ops == []


def test_write_bytes_continues_a_short_count_where_it_stopped() -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    fs = RecordingFileSystem(mem, fault=Fault(1, errno.ENOSPC, SHORT))
    write_bytes(fs, "/base/f", b"0123456789")
    assert mem.read("/base/f") == b"0123456789"
    writes = [(op.offset, op.data) for op in fs.trace.ops if op.kind is OpKind.WRITE]
    assert writes == [(0, b"01234"), (5, b"56789")]


def test_the_crash_state_between_the_two_writes_holds_the_prefix() -> None:
    """The trace records what was stored, so crash states are right: a crash after the
    short write and before its continuation leaves the prefix."""
    mem = MemoryFileSystem(dirs=(BASE,))
    initial = mem.crash_state()
    fs = RecordingFileSystem(mem, fault=Fault(1, errno.ENOSPC, SHORT))
    write_bytes(fs, "/base/f", b"0123456789")
    after = {p.index: p.states for p in crash_points(PROCESS_CRASH, initial, fs.trace.ops)}
    assert dict(after[2][0].files)["/base/f"] == b"01234"
    assert dict(after[3][0].files)["/base/f"] == b"0123456789"


class _ZeroCount(MemoryFileSystem):
    def write(self, path: str, offset: int, data: bytes) -> int:
        return 0


def test_write_bytes_refuses_a_zero_count_with_enospc_instead_of_spinning() -> None:
    with pytest.raises(OSError) as info:
        write_bytes(_ZeroCount(dirs=(BASE,)), "/base/f", b"abc")
    assert info.value.errno == errno.ENOSPC


# --- the plan and the CLI's spelling -----------------------------------------------------


def test_fault_plan_arms_a_short_count_on_every_write_of_two_bytes_or_more() -> None:
    fs = RecordingFileSystem(MemoryFileSystem(dirs=(BASE,)))
    fs.create("/base/f")
    fs.write("/base/f", 0, b"ab")
    fs.write("/base/f", 2, b"c")
    fs.fsync("/base/f")
    short = [f.at for f in fault_plan(fs.trace.ops) if f.kind is SHORT]
    assert short == [1]


def test_parse_fault_reads_short_count() -> None:
    fault = parse_fault("4:short-count")
    assert (fault.at, fault.errno, fault.kind) == (4, errno.ENOSPC, SHORT)
    assert fault_spec(fault) == "4:short-count"
    assert fault.render() == "short-count at operation 4"


# --- OsFileSystem loops over os.pwrite ----------------------------------------------------


def _stingy_pwrite(
    monkeypatch: pytest.MonkeyPatch, limit: int, fail_after: int | None = None
) -> list[int]:
    """Make ``os.pwrite`` store at most ``limit`` bytes per call (and, after
    ``fail_after`` calls, raise ENOSPC); returns the list of counts it returned."""
    real = os.pwrite
    counts: list[int] = []

    def pwrite(fd: int, data: bytes, offset: int) -> int:
        if fail_after is not None and len(counts) >= fail_after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        n = real(fd, bytes(data)[:limit], offset)
        counts.append(n)
        return n

    monkeypatch.setattr(os, "pwrite", pwrite)
    return counts


def test_os_write_goes_on_until_every_byte_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "f")
    Path(path).write_bytes(b"")
    counts = _stingy_pwrite(monkeypatch, 3)
    assert OsFileSystem().write(path, 2, b"0123456789") == 10
    assert counts == [3, 3, 3, 1]
    assert Path(path).read_bytes() == b"\0\x000123456789"


def test_os_write_raises_the_error_that_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "f")
    Path(path).write_bytes(b"")
    _stingy_pwrite(monkeypatch, 4, fail_after=1)
    with pytest.raises(OSError) as info:
        OsFileSystem().write(path, 0, b"0123456789")
    assert info.value.errno == errno.ENOSPC
    assert Path(path).read_bytes() == b"0123"  # what the disk took stays


def test_os_write_of_nothing_calls_no_pwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "f")
    Path(path).write_bytes(b"ab")
    counts = _stingy_pwrite(monkeypatch, 3)
    assert OsFileSystem().write(path, 5, b"") == 0
    assert counts == []
    assert Path(path).read_bytes() == b"ab"


def test_os_write_refuses_a_zero_count_with_enospc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "f")
    Path(path).write_bytes(b"")
    _stingy_pwrite(monkeypatch, 0)
    with pytest.raises(OSError) as info:
        OsFileSystem().write(path, 0, b"abc")
    assert info.value.errno == errno.ENOSPC


def test_write_bytes_on_the_real_disk_survives_short_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "f")
    _stingy_pwrite(monkeypatch, 7)
    data = bytes(range(256)) * 4
    write_bytes(OsFileSystem(), path, data)
    assert Path(path).read_bytes() == data

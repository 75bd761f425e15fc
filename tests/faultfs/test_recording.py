"""The recording wrapper: traces, marks, simulated crashes and injected faults
(FAULT-MODEL.md §2)."""

from __future__ import annotations

import errno
import pickle
from collections.abc import Callable

import pytest
from crashpoint.faultfs import (
    PROCESS_CRASH,
    CrashState,
    Fault,
    FaultKind,
    FileSystem,
    MemoryFileSystem,
    OpKind,
    RecordingFileSystem,
    SimulatedCrash,
    crash_points,
    effective,
    write_bytes,
)

BASE = "/base"


def workload(fs: FileSystem) -> None:
    """Two atomic saves and a cleanup: eleven operations."""
    fs.mkdir("/base/d")
    for version in (b"one", b"two"):
        write_bytes(fs, "/base/d/s.tmp", version)
        fs.fsync("/base/d/s.tmp")
        fs.rename("/base/d/s.tmp", "/base/d/s")
        fs.fsync_dir("/base/d")
    fs.unlink("/base/d/s")


def full_trace() -> tuple[CrashState, RecordingFileSystem]:
    mem = MemoryFileSystem(dirs=(BASE,))
    initial = mem.crash_state()
    fs = RecordingFileSystem(mem)
    workload(fs)
    return initial, fs


# --- recording -------------------------------------------------------------------------


def test_every_mutating_call_is_one_operation_in_program_order() -> None:
    _, fs = full_trace()
    kinds = [op.kind for op in fs.trace.ops]
    assert kinds == [
        OpKind.MKDIR,
        *[OpKind.CREATE, OpKind.WRITE, OpKind.FSYNC, OpKind.RENAME, OpKind.FSYNC_DIR] * 2,
        OpKind.UNLINK,
    ]
    assert [op.index for op in fs.trace.ops] == list(range(len(kinds)))
    assert fs.op_count == len(kinds)
    assert fs.trace.ops[2].data == b"one"
    assert fs.trace.ops[4].dst == "/base/d/s"
    assert all(op.errno is None for op in fs.trace.ops)


def test_reads_and_marks_are_events_numbered_by_the_operations_before_them() -> None:
    fs = RecordingFileSystem(MemoryFileSystem(dirs=(BASE,)))
    write_bytes(fs, "/base/f", b"x")
    fs.mark("ack:save#1")
    assert fs.read("/base/f") == b"x"
    assert fs.exists("/base/f")
    assert fs.listdir(BASE) == ["f"]
    fs.unlink("/base/f")
    fs.mark("ack:delete")
    events = [(e.kind, e.index) for e in fs.trace.events if not e.kind.mutating]
    assert events == [
        (OpKind.MARK, 2),
        (OpKind.READ, 2),
        (OpKind.EXISTS, 2),
        (OpKind.LISTDIR, 2),
        (OpKind.MARK, 3),
    ]
    assert fs.trace.marks() == ["ack:save#1", "ack:delete"]
    assert fs.trace.marks(before=2) == ["ack:save#1"]
    assert fs.trace.marks(before=1) == []
    assert len(fs.trace.ops) == 3


def test_reads_are_not_recorded_when_asked_not_to() -> None:
    fs = RecordingFileSystem(MemoryFileSystem(dirs=(BASE,)), record_reads=False)
    fs.create("/base/f")
    assert fs.read("/base/f") == b""
    assert fs.size("/base/f") == 0
    assert [e.kind for e in fs.trace.events] == [OpKind.CREATE]


def test_a_failing_call_is_recorded_with_its_errno_and_changes_nothing() -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    fs = RecordingFileSystem(mem)
    with pytest.raises(FileNotFoundError):
        fs.rename("/base/missing", "/base/x")
    op = fs.trace.ops[0]
    assert (op.kind, op.errno) == (OpKind.RENAME, errno.ENOENT)
    assert not effective(op)
    assert mem.mutations == 0


# --- crashes ---------------------------------------------------------------------------


def test_simulated_crash_is_not_an_exception() -> None:
    assert issubclass(SimulatedCrash, BaseException)
    assert not issubclass(SimulatedCrash, Exception)
    fs = RecordingFileSystem(MemoryFileSystem(dirs=(BASE,)), crash_at=0)
    swallowed = []

    def careless(fs: FileSystem) -> None:
        try:
            fs.create("/base/f")
        except Exception:  # the system under test cannot swallow a crash
            swallowed.append(True)

    with pytest.raises(SimulatedCrash):
        careless(fs)
    assert swallowed == []


def test_crash_at_k_stops_before_operation_k() -> None:
    initial, full = full_trace()
    ops = full.trace.ops
    expected = [point.states[0] for point in crash_points(PROCESS_CRASH, initial, ops)]
    for k in range(len(ops) + 1):
        mem = MemoryFileSystem(dirs=(BASE,))
        fs = RecordingFileSystem(mem, crash_at=k)
        if k < len(ops):
            with pytest.raises(SimulatedCrash) as info:
                workload(fs)
            assert info.value.op_index == k
            assert info.value.path == ops[k].path
            assert fs.crashed is info.value
        else:
            workload(fs)
            assert fs.crashed is None
        assert fs.op_count == k
        assert [op.kind for op in fs.trace.ops] == [op.kind for op in ops[:k]]
        assert mem.crash_state() == expected[k], f"crash at {k}"


CALLS: dict[str, Callable[[RecordingFileSystem], object]] = {
    "mkdir": lambda fs: fs.mkdir("/base/e"),
    "create": lambda fs: fs.create("/base/g"),
    "write": lambda fs: fs.write("/base/f", 0, b"zz"),
    "truncate": lambda fs: fs.truncate("/base/f", 0),
    "rename": lambda fs: fs.rename("/base/f", "/base/h"),
    "unlink": lambda fs: fs.unlink("/base/f"),
    "fsync": lambda fs: fs.fsync("/base/f"),
    "fsync_dir": lambda fs: fs.fsync_dir(BASE),
    "read": lambda fs: fs.read("/base/f"),
    "exists": lambda fs: fs.exists("/base/f"),
    "is_dir": lambda fs: fs.is_dir(BASE),
    "listdir": lambda fs: fs.listdir(BASE),
    "size": lambda fs: fs.size("/base/f"),
    "mark": lambda fs: fs.mark("ack:late"),
}


@pytest.mark.parametrize("name", sorted(CALLS))
def test_after_a_crash_every_call_raises_again_and_changes_nothing(name: str) -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    fs = RecordingFileSystem(mem, crash_at=2)
    write_bytes(fs, "/base/f", b"data")
    with pytest.raises(SimulatedCrash) as first:
        fs.mkdir("/base/d")
    before = (mem.crash_state(), mem.mutations, len(mem.log))
    events = list(fs.trace.events)
    with pytest.raises(SimulatedCrash) as again:
        CALLS[name](fs)
    assert again.value is first.value
    assert (mem.crash_state(), mem.mutations, len(mem.log)) == before
    assert fs.trace.events == events


def test_simulated_crash_pickles() -> None:
    crash = SimulatedCrash(7, "/base/s.json")
    clone = pickle.loads(pickle.dumps(crash))
    assert type(clone) is SimulatedCrash
    assert (clone.op_index, clone.path) == (7, "/base/s.json")
    assert str(clone) == str(crash)


# --- faults ----------------------------------------------------------------------------

MUTATING: dict[str, Callable[[FileSystem], object]] = {
    "mkdir": lambda fs: fs.mkdir("/base/e"),
    "create": lambda fs: fs.create("/base/g"),
    "write": lambda fs: fs.write("/base/f", 2, b"zz"),
    "truncate": lambda fs: fs.truncate("/base/f", 1),
    "rename": lambda fs: fs.rename("/base/f", "/base/h"),
    "unlink": lambda fs: fs.unlink("/base/f"),
    "fsync": lambda fs: fs.fsync("/base/f"),
    "fsync_dir": lambda fs: fs.fsync_dir(BASE),
}

ERRNOS = [errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EACCES, errno.EROFS, errno.ENOENT]
CASES = [(name, code) for name in sorted(MUTATING) for code in ERRNOS] + [("rename", errno.EXDEV)]


def disk() -> MemoryFileSystem:
    mem = MemoryFileSystem(dirs=(BASE,))
    write_bytes(mem, "/base/f", b"data")
    return mem


@pytest.mark.parametrize(("name", "code"), CASES)
def test_an_error_fault_raises_the_errno_and_leaves_the_disk_unchanged(
    name: str, code: int
) -> None:
    mem = disk()
    before = (mem.crash_state(), mem.mutations, len(mem.log))
    fs = RecordingFileSystem(mem, fault=Fault(0, code))
    with pytest.raises(OSError) as info:
        MUTATING[name](fs)
    assert info.value.errno == code
    assert type(info.value) is type(OSError(code, "x"))  # the builtin subclass, as the OS
    assert (mem.crash_state(), mem.mutations, len(mem.log)) == before
    (op,) = fs.trace.ops
    assert (op.kind.value, op.errno) == (name, code)
    assert not effective(op)


def test_code_keeps_running_after_a_fault() -> None:
    mem = disk()
    fs = RecordingFileSystem(mem, fault=Fault(1, errno.ENOSPC))
    fs.create("/base/a")
    with pytest.raises(OSError) as info:
        fs.write("/base/a", 0, b"lost")
    assert info.value.errno == errno.ENOSPC
    fs.write("/base/a", 0, b"kept")
    assert mem.read("/base/a") == b"kept"
    assert [op.errno for op in fs.trace.ops] == [None, errno.ENOSPC, None]


def test_a_short_write_stores_a_prefix_then_fails_with_enospc() -> None:
    mem = disk()
    fs = RecordingFileSystem(mem, fault=Fault(0, kind=FaultKind.SHORT_WRITE))
    with pytest.raises(OSError) as info:
        fs.write("/base/f", 4, b"0123456789")
    assert info.value.errno == errno.ENOSPC
    assert mem.read("/base/f") == b"data01234"
    (op,) = fs.trace.ops
    assert (op.kind, op.offset, op.data, op.errno) == (OpKind.WRITE, 4, b"01234", errno.ENOSPC)
    assert effective(op)


def test_a_short_write_on_a_missing_file_is_an_ordinary_failure() -> None:
    mem = disk()
    fs = RecordingFileSystem(mem, fault=Fault(0, kind=FaultKind.SHORT_WRITE))
    with pytest.raises(FileNotFoundError):
        fs.write("/base/missing", 0, b"0123456789")
    (op,) = fs.trace.ops
    assert (op.errno, op.data) == (errno.ENOENT, b"")
    assert not effective(op)


def test_a_lost_fsync_raises_eio_and_is_labelled() -> None:
    mem = disk()
    before = mem.crash_state()
    fs = RecordingFileSystem(mem, fault=Fault(0, kind=FaultKind.FSYNC_LOST))
    with pytest.raises(OSError) as info:
        fs.fsync("/base/f")
    assert info.value.errno == errno.EIO
    (op,) = fs.trace.ops
    assert (op.kind, op.errno, op.label) == (OpKind.FSYNC, errno.EIO, "fsync-lost")
    assert mem.crash_state() == before
    fs.fsync("/base/f")  # the retry reports success, as Linux <= 4.13 did
    assert fs.trace.ops[1].errno is None


def test_fault_render() -> None:
    assert Fault(3, errno.EXDEV).render() == "EXDEV at operation 3"
    assert Fault(1, kind=FaultKind.SHORT_WRITE).render() == "short-write (EIO) at operation 1"

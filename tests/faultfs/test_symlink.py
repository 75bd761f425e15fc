"""``symlink(2)`` in the model (issue 24: Mercurial's locks are symbolic links whose
target is "host:pid"): one directory operation that makes the name and its target
together, so no family offers a link that is empty or torn, and a load sees it again as
a real link."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from crashpoint.faultfs import (
    MODELS,
    POWER_LOSS,
    POWER_LOSS_REORDER,
    MemoryFileSystem,
    OpKind,
    PersistenceModel,
    RecordingFileSystem,
    SymlinkFileSystem,
    crash_points,
    symlink_content,
    symlink_target,
)
from crashpoint.scenarios.jobs.exec import materialize

LOCK = b"host/4026531836:4242"
ALL_MODELS: list[PersistenceModel] = [*MODELS.values(), POWER_LOSS, POWER_LOSS_REORDER]


def _recorded() -> RecordingFileSystem:
    """Mercurial's commit in small: the lock taken, data written and synced, the lock
    released; nothing makes the directory durable."""
    fs = RecordingFileSystem(MemoryFileSystem(dirs=("/d",)))
    fs.symlink(LOCK, "/d/lock")
    fs.create("/d/data")
    fs.write("/d/data", 0, b"committed")
    fs.fsync("/d/data")
    fs.unlink("/d/lock")
    return fs


def test_memory_symlink_is_a_file_holding_its_target() -> None:
    fs = MemoryFileSystem(dirs=("/d",))
    assert isinstance(fs, SymlinkFileSystem)
    fs.symlink(LOCK, "/d/lock")
    assert fs.read("/d/lock") == symlink_content(LOCK)
    assert symlink_target(fs.read("/d/lock")) == LOCK
    assert symlink_target(b"plain bytes") is None
    with pytest.raises(FileExistsError):
        fs.symlink(b"other", "/d/lock")
    with pytest.raises(FileNotFoundError):
        fs.symlink(b"x", "/nowhere/lock")
    for bad, code in ((b"", errno.ENOENT), (b"a\0b", errno.EINVAL)):
        with pytest.raises(OSError) as exc:
            fs.symlink(bad, "/d/other")
        assert exc.value.errno == code


def test_the_trace_holds_one_symlink_operation_with_its_target() -> None:
    ops = _recorded().trace.ops
    assert [o.kind for o in ops][:2] == [OpKind.SYMLINK, OpKind.CREATE]
    assert ops[0].data == LOCK and ops[0].path == "/d/lock"
    assert ops[0].kind.metadata and not ops[0].kind.barrier
    assert "symlink(b'host/4026531836:4242', '/d/lock')" in ops[0].render()


@pytest.mark.parametrize("model", ALL_MODELS, ids=lambda m: m.name)
def test_no_family_leaves_a_link_empty_or_torn(model: PersistenceModel) -> None:
    fs = _recorded()
    initial = fs.inner.boot_state  # type: ignore[attr-defined]
    held: set[bytes | None] = set()
    for point in crash_points(model, initial, fs.trace.ops):
        for state in point.states:
            content = state.file("/d/lock")
            assert content in (None, symlink_content(LOCK)), (point.index, content)
            if 1 <= point.index <= 4:
                held.add(content)
    # while the lock is held (crash points 1-4) it is there in some state, and every
    # power-loss family may also lose it: its directory was never synced
    assert symlink_content(LOCK) in held
    assert (None in held) == (model.name != "process-crash"), held


def test_a_link_made_durable_by_its_directory_fsync_stays() -> None:
    fs = RecordingFileSystem(MemoryFileSystem(dirs=("/d",)))
    fs.symlink(LOCK, "/d/lock")
    fs.fsync_dir("/d")
    fs.create("/d/after")
    initial = fs.inner.boot_state  # type: ignore[attr-defined]
    for model in ALL_MODELS:
        last = list(crash_points(model, initial, fs.trace.ops))[-1]
        assert all(s.file("/d/lock") == symlink_content(LOCK) for s in last.states), model.name


def test_materialize_makes_a_real_symlink(tmp_path: Path) -> None:
    fs = MemoryFileSystem(dirs=("/d",))
    fs.mkdir("/d/store")
    fs.symlink(LOCK, "/d/store/lock")
    fs.create("/d/store/data")
    fs.write("/d/store/data", 0, b"kept")
    root = tmp_path / "image"
    materialize(fs.crash_state(), "/d", str(root))
    assert os.path.islink(root / "store" / "lock")
    assert os.readlink(root / "store" / "lock") == LOCK.decode()
    assert (root / "store" / "data").read_bytes() == b"kept"


def test_a_loads_before_and_after_read_a_dangling_link_without_following_it(
    tmp_path: Path,
) -> None:
    """Whether a load wrote is told from two snapshots of its image; a lock's link names a
    process, not a file, and is read as a link (it once raised FileNotFoundError)."""
    from crashpoint.scenarios.jobs.exec import _snapshot

    os.symlink(LOCK, tmp_path / "lock")
    before = _snapshot(str(tmp_path))
    assert before[str(tmp_path / "lock")] == symlink_content(LOCK)
    os.unlink(tmp_path / "lock")
    os.symlink(b"host/1:99", tmp_path / "lock")
    assert _snapshot(str(tmp_path)) != before

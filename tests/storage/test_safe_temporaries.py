"""Safe temporaries (SPEC.md §6; issue 21): the reference's ``S.json.tmp`` (and the scoped
marker's ``S.json.ended.tmp``) keep their names but are created ``O_CREAT|O_EXCL|
O_NOFOLLOW`` after a stale one is unlinked: a symlink or a hard link planted there is
never followed or truncated. Only the API of 75a7228 is used."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from crashpoint.core import AgentState, FileStateStorage
from crashpoint.faultfs import MemoryFileSystem, OpKind, OsFileSystem, RecordingFileSystem

SECRET = b"the victim's bytes, never to be touched"


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "elsewhere" / "victim"
    victim.parent.mkdir()
    victim.write_bytes(SECRET)
    return victim


@pytest.mark.parametrize("name", ["s1.json.tmp", "s1.json.ended.tmp"])
@pytest.mark.parametrize("plant", ["symlink", "hardlink"])
def test_a_planted_link_at_a_temporary_is_never_followed(
    tmp_path: Path, name: str, plant: str
) -> None:
    victim = _victim(tmp_path)
    base = tmp_path / "sessions"
    base.mkdir()
    storage = FileStateStorage(OsFileSystem(), str(base))
    storage.save(AgentState.new("s1", {"n": 1}))
    if plant == "symlink":
        (base / name).symlink_to(victim)
    else:
        os.link(victim, base / name)
    storage.save(AgentState.new("s1", {"n": 2}))
    storage.mark_not_resumable("s1")
    assert victim.read_bytes() == SECRET
    assert storage.load("s1").metadata == {"n": 2}
    assert not (base / name).exists() and not (base / name).is_symlink()


def test_a_dangling_symlink_at_tmp_is_not_followed_to_create_its_target(tmp_path: Path) -> None:
    base = tmp_path / "sessions"
    base.mkdir()
    target = tmp_path / "created-through-the-link"
    (base / "s1.json.tmp").symlink_to(target)
    FileStateStorage(OsFileSystem(), str(base)).save(AgentState.new("s1"))
    assert not target.exists()
    assert (base / "s1.json").is_file()


def test_os_write_and_exclusive_create_refuse_symlinks(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(victim)
    fs = OsFileSystem()
    with pytest.raises(FileExistsError):
        fs.create(str(link), exclusive=True)
    with pytest.raises(OSError) as exc:
        fs.write(str(link), 0, b"overwritten")
    assert exc.value.errno == 40  # ELOOP
    assert victim.read_bytes() == SECRET
    fs.create(str(tmp_path / "new"), exclusive=True)
    with pytest.raises(FileExistsError):
        fs.create(str(tmp_path / "new"), exclusive=True)


def test_the_model_unlinks_a_stale_tmp_then_creates_exclusively() -> None:
    mem = MemoryFileSystem(dirs=("/data",))
    mem.create("/data/s1.json.tmp")
    mem.write("/data/s1.json.tmp", 0, b"a crashed save's bytes")
    with pytest.raises(FileExistsError):
        mem.create("/data/s1.json.tmp", exclusive=True)
    rec = RecordingFileSystem(mem)
    FileStateStorage(rec, "/data").save(AgentState.new("s1"))  # type: ignore[arg-type]
    tmp_ops = [op.kind for op in rec.trace.ops if op.path == "/data/s1.json.tmp"]
    assert tmp_ops[:3] == [OpKind.UNLINK, OpKind.CREATE, OpKind.WRITE]
    # the seed keeps the published sequence: create truncates the stale one in place
    mem.create("/data/s1.json.tmp")
    rec = RecordingFileSystem(mem)
    FileStateStorage(rec, "/data", sync="none", ended_marker="legacy", strict=False).save(  # type: ignore[arg-type]
        AgentState.new("s1")
    )
    assert [op.kind for op in rec.trace.ops if op.path == "/data/s1.json.tmp"][:2] == [
        OpKind.CREATE,
        OpKind.WRITE,
    ]

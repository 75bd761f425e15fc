"""A read error is not corruption (SPEC §5, §6; issue 10): an I/O error reading main or
bak makes load raise ``state_load_failed`` (conditional) without falling back, and
load_or_create writes nothing. The seed target keeps its bak fallback (SPEC §8)."""

from __future__ import annotations

import errno

import pytest
from crashpoint.core import (
    AgentState,
    ErrorCode,
    FileStateStorage,
    Message,
    Retryability,
    StateError,
    TextPart,
    encode_bytes,
)
from crashpoint.faultfs import MemoryFileSystem, makedirs, write_bytes
from crashpoint.scenarios.kinds.agent.targets import TARGETS

BASE = "/data/sessions"
MAIN = f"{BASE}/s1.json"
BAK = f"{BASE}/s1.json.bak"


class FailingReads(MemoryFileSystem):
    """Reads of the paths in ``failing`` raise ``OSError(code)``; everything else works."""

    def __init__(self, failing: dict[str, int]) -> None:
        super().__init__()
        self.failing = dict(failing)
        self.writes: list[str] = []

    def read(self, path: str) -> bytes:
        if path in self.failing:
            code = self.failing[path]
            raise OSError(code, errno.errorcode.get(code, "error"), path)
        return super().read(path)

    def create(self, path: str, *, exclusive: bool = False) -> None:
        self.writes.append(path)
        super().create(path, exclusive=exclusive)

    def rename(self, src: str, dst: str) -> None:
        self.writes.append(dst)
        super().rename(src, dst)

    def unlink(self, path: str) -> None:
        self.writes.append(path)
        super().unlink(path)


def state(text: str) -> AgentState:
    s = AgentState.new("s1")
    s.messages = [Message("user", (TextPart(text),))]
    return s


def disk(failing: dict[str, int], *, main: bytes | None, bak: bytes | None) -> FailingReads:
    fs = FailingReads({})
    makedirs(fs, BASE)
    if main is not None:
        write_bytes(fs, MAIN, main)
    if bak is not None:
        write_bytes(fs, BAK, bak)
    fs.failing = failing
    fs.writes.clear()
    return fs


NEW, OLD = encode_bytes(state("newest")), encode_bytes(state("older"))


@pytest.mark.parametrize("code", [errno.EIO, errno.EMFILE, errno.EACCES, errno.ENFILE])
def test_a_read_error_on_main_is_state_load_failed_never_bak(code: int) -> None:
    fs = disk({MAIN: code}, main=NEW, bak=OLD)
    with pytest.raises(StateError) as exc:
        FileStateStorage(fs, BASE).load("s1")
    assert exc.value.code == ErrorCode.STATE_LOAD_FAILED
    assert exc.value.retryability is Retryability.CONDITIONAL
    assert isinstance(exc.value.cause, OSError) and exc.value.cause.errno == code
    fs.failing.clear()  # the error was transient: the newest state is still there
    assert FileStateStorage(fs, BASE).load("s1") == state("newest")


@pytest.mark.parametrize("main", [None, b"{torn"], ids=["main-absent", "main-corrupt"])
def test_a_read_error_on_bak_is_state_load_failed(main: bytes | None) -> None:
    fs = disk({BAK: errno.EIO}, main=main, bak=OLD)
    with pytest.raises(StateError) as exc:
        FileStateStorage(fs, BASE).load("s1")
    assert exc.value.code == ErrorCode.STATE_LOAD_FAILED


def test_load_or_create_raises_state_load_failed_and_writes_nothing() -> None:
    fs = disk({MAIN: errno.EMFILE}, main=NEW, bak=None)
    with pytest.raises(StateError) as exc:
        FileStateStorage(fs, BASE).load_or_create("s1")
    assert exc.value.code == ErrorCode.STATE_LOAD_FAILED
    assert fs.writes == []


def test_mark_not_resumable_that_cannot_read_the_snapshot_fails_and_writes_nothing() -> None:
    fs = disk({MAIN: errno.EIO}, main=NEW, bak=OLD)
    with pytest.raises(StateError) as exc:
        FileStateStorage(fs, BASE).mark_not_resumable("s1")
    assert exc.value.code == ErrorCode.STATE_SAVE_FAILED
    assert exc.value.retryability is Retryability.CONDITIONAL
    # only the writers' lock file, created empty before anything is read (SPEC.md §6)
    assert fs.writes == [MAIN + ".lock"]


def test_the_seed_target_falls_back_to_bak_on_a_read_error_as_published() -> None:
    fs = disk({MAIN: errno.EMFILE}, main=NEW, bak=OLD)
    assert TARGETS["seed"](fs, BASE).load("s1") == state("older")

"""Saving over an undecodable main (SPEC §6, issue 10): an undecodable main is never
rotated over a good bak; it is replaced directly, so a crash at any point of that save
leaves a loadable state. The seed target keeps rotating whatever main holds (SPEC §8)."""

from __future__ import annotations

import contextlib

import pytest
from crashpoint.core import (
    AgentState,
    FileStateStorage,
    Message,
    StateError,
    TextPart,
    ToolCall,
    encode_bytes,
)
from crashpoint.faultfs import (
    MemoryFileSystem,
    OpKind,
    RecordingFileSystem,
    SimulatedCrash,
    makedirs,
    write_bytes,
)
from crashpoint.scenarios.kinds.agent.targets import TARGETS

BASE = "/data/sessions"
MAIN, BAK = f"{BASE}/s1.json", f"{BASE}/s1.json.bak"


def state(text: str) -> AgentState:
    s = AgentState.new("s1")
    s.messages = [Message("user", (TextPart(text),))]
    return s


def unpaired_bytes() -> bytes:
    s = state("x")
    s.messages.append(Message("assistant", (), tool_calls=(ToolCall("c1", "rm", "{}"),)))
    return encode_bytes(s)


UNDECODABLE = {
    "torn": b'{"schemaVersion":3,"sessionId":"s1","hist',
    "empty": b"",
    "not-json": b"\x00\x00\x00\x00",
    "unpaired": unpaired_bytes(),
    "too-deep": b'{"sessionId":"s1","x":' + b"[" * 100 + b"]" * 100 + b"}",
}


def disk(main: bytes) -> MemoryFileSystem:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    write_bytes(fs, BAK, encode_bytes(state("good bak")))
    write_bytes(fs, MAIN, main)
    return fs


@pytest.mark.parametrize("main", UNDECODABLE.values(), ids=UNDECODABLE.keys())
def test_save_over_an_undecodable_main_keeps_the_bak(main: bytes) -> None:
    fs = disk(main)
    rec = RecordingFileSystem(fs)
    FileStateStorage(rec, BASE).save(state("new"))  # type: ignore[arg-type]
    touched = [(op.kind, op.path) for op in rec.trace.ops if op.kind is not OpKind.FSYNC]
    assert (OpKind.UNLINK, BAK) not in touched
    assert all(not (kind is OpKind.RENAME and path == MAIN) for kind, path in touched)
    assert fs.read(BAK) == encode_bytes(state("good bak"))
    assert FileStateStorage(fs, BASE).load("s1") == state("new")


@pytest.mark.parametrize("main", UNDECODABLE.values(), ids=UNDECODABLE.keys())
def test_a_crash_anywhere_in_that_save_leaves_a_loadable_state(main: bytes) -> None:
    count = RecordingFileSystem(disk(main))
    FileStateStorage(count, BASE).save(state("new"))  # type: ignore[arg-type]
    for crash_at in range(count.op_count + 1):
        fs = disk(main)
        rec = RecordingFileSystem(fs, crash_at=crash_at)
        with contextlib.suppress(SimulatedCrash):
            FileStateStorage(rec, BASE).save(state("new"))  # type: ignore[arg-type]
        after = FileStateStorage(MemoryFileSystem(fs.crash_state()), BASE)
        try:
            loaded = after.load("s1")
        except StateError as exc:  # pragma: no cover - the defect
            pytest.fail(f"crash at {crash_at}: {exc.code}")
        assert loaded in (state("good bak"), state("new")), crash_at


def test_save_over_a_good_main_still_rotates_it_to_bak() -> None:
    fs = disk(encode_bytes(state("good main")))
    FileStateStorage(fs, BASE).save(state("new"))
    assert fs.read(BAK) == encode_bytes(state("good main"))


def test_the_seed_target_rotates_whatever_main_holds_as_published() -> None:
    fs = disk(UNDECODABLE["torn"])
    TARGETS["seed"](fs, BASE).save(state("new"))
    assert fs.read(BAK) == UNDECODABLE["torn"]

"""Load checks pairing (SPEC §3, issue 10): a file whose history is not paired is
undecodable for load, so bak fallback applies; the seed target keeps the published
behaviour (no pairing check on load, SPEC §8)."""

from __future__ import annotations

import pytest
from crashpoint.core import (
    AgentState,
    ErrorCode,
    FileStateStorage,
    Message,
    PendingRunCheckpoint,
    StateError,
    TextPart,
    ToolCall,
    encode_bytes,
    state_is_paired,
)
from crashpoint.faultfs import MemoryFileSystem, makedirs, write_bytes
from crashpoint.scenarios.kinds.agent.targets import TARGETS

BASE = "/data/sessions"


def paired(sid: str = "s1") -> AgentState:
    s = AgentState.new(sid)
    s.messages = [Message("user", (TextPart("good"),))]
    return s


def unpaired(sid: str = "s1") -> AgentState:
    s = AgentState.new(sid)
    s.messages = [
        Message("user", (TextPart("run it"),)),
        Message("assistant", (), tool_calls=(ToolCall("c1", "rm", "{}"),)),
    ]
    s.is_running = True
    s.pending_run_checkpoint = PendingRunCheckpoint("suspended", 1)
    assert not state_is_paired(s)
    return s


def disk(main: AgentState | None, bak: AgentState | None) -> MemoryFileSystem:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    if main is not None:
        write_bytes(fs, f"{BASE}/s1.json", encode_bytes(main))
    if bak is not None:
        write_bytes(fs, f"{BASE}/s1.json.bak", encode_bytes(bak))
    return fs


def load_error(storage: FileStateStorage) -> StateError:
    with pytest.raises(StateError) as exc:
        storage.load("s1")
    return exc.value


def test_an_unpaired_main_beside_a_good_bak_loads_the_bak() -> None:
    loaded = FileStateStorage(disk(unpaired(), paired()), BASE).load("s1")
    assert loaded == paired()
    assert state_is_paired(loaded)


def test_an_unpaired_main_without_bak_is_state_corrupt() -> None:
    exc = load_error(FileStateStorage(disk(unpaired(), None), BASE))
    assert exc.code == ErrorCode.STATE_CORRUPT
    assert isinstance(exc.cause, StateError)
    assert exc.cause.code == ErrorCode.HISTORY_UNPAIRED


def test_an_unpaired_bak_alone_or_beside_a_bad_main_is_state_corrupt() -> None:
    assert load_error(FileStateStorage(disk(None, unpaired()), BASE)).code == (
        ErrorCode.STATE_CORRUPT
    )
    fs = disk(None, unpaired())
    write_bytes(fs, f"{BASE}/s1.json", b"{torn")
    assert load_error(FileStateStorage(fs, BASE)).code == ErrorCode.STATE_CORRUPT


def test_exists_is_still_true_for_an_unpaired_file() -> None:
    # exists: true exactly when load would not raise session_not_found (SPEC §6)
    assert FileStateStorage(disk(unpaired(), None), BASE).exists("s1")


def test_the_scoped_marker_condemns_what_load_returns_not_the_unpaired_main() -> None:
    bak = paired()
    bak.is_running = True
    fs = disk(unpaired(), bak)
    storage = FileStateStorage(fs, BASE)
    storage.mark_not_resumable("s1")
    loaded = storage.load("s1")
    assert loaded.messages == bak.messages and not loaded.is_running


def test_load_or_create_over_an_unpaired_main_writes_nothing() -> None:
    fs = disk(unpaired(), None)
    before = fs.read(f"{BASE}/s1.json")
    with pytest.raises(StateError) as exc:
        FileStateStorage(fs, BASE).load_or_create("s1")
    assert exc.value.code == ErrorCode.STATE_CORRUPT
    assert fs.read(f"{BASE}/s1.json") == before
    assert not fs.exists(f"{BASE}/s1.json.bak")


def test_the_seed_target_loads_an_unpaired_main_as_published() -> None:
    seed = TARGETS["seed"](disk(unpaired(), paired()), BASE)
    assert seed.load("s1") == unpaired()

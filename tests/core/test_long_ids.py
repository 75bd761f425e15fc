"""Long session ids (SPEC §4, issue 10): an id whose longest file name
(``S.json.ended.tmp``) would exceed 255 bytes is ``invalid_session_id``, refused before
any I/O, by both targets and by the in-memory storage."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from crashpoint.core import (
    AgentState,
    ErrorCode,
    FileStateStorage,
    MemoryStateStorage,
    Retryability,
    StateError,
    safe_session_file_name,
)
from crashpoint.faultfs import MemoryFileSystem, RecordingFileSystem
from crashpoint.scenarios.kinds.agent.targets import TARGETS

LONGEST_SUFFIX = ".json.ended.tmp"
MAX_STEM = 255 - len(LONGEST_SUFFIX)  # 240


def refused(call: Callable[[], object]) -> StateError:
    with pytest.raises(StateError) as exc:
        call()
    assert exc.value.code == ErrorCode.INVALID_SESSION_ID
    assert exc.value.retryability is Retryability.NEVER
    return exc.value


def test_a_stem_of_240_characters_is_the_longest_accepted() -> None:
    assert safe_session_file_name("a" * MAX_STEM) == "a" * MAX_STEM
    refused(lambda: safe_session_file_name("a" * (MAX_STEM + 1)))


@pytest.mark.parametrize(
    "session_id",
    ["a" * 241, "a" * 246, "a" * 247, "a" * 10_000, "会" * 241, "\U0001f600" * 121],
    ids=["241", "246", "247", "10000", "cjk-241", "astral-121"],
)
def test_an_id_whose_stem_is_too_long_is_invalid(session_id: str) -> None:
    error = refused(lambda: safe_session_file_name(session_id))
    assert session_id not in error.message  # shown through redact


@pytest.mark.parametrize("target", ["reference", "seed"])
@pytest.mark.parametrize("length", [241, 246, 247, 300])
def test_every_method_refuses_a_long_id_before_any_io(target: str, length: int) -> None:
    session_id = "x" * length
    rec = RecordingFileSystem(MemoryFileSystem(dirs=("/data",)))
    storage = TARGETS[target](rec, "/data/sessions")  # type: ignore[arg-type]
    state = AgentState.new(session_id)
    for call in (
        lambda: storage.save(state),
        lambda: storage.load(session_id),
        lambda: storage.load_or_create(session_id),
        lambda: storage.exists(session_id),
        lambda: storage.delete(session_id),
        lambda: storage.mark_not_resumable(session_id),
    ):
        refused(call)
    assert list(rec.trace.ops) == []
    assert not rec.inner.exists("/data/sessions")


def test_a_240_character_id_saves_marks_and_loads() -> None:
    session_id = "y" * MAX_STEM
    storage = FileStateStorage(MemoryFileSystem(), "/data/sessions")
    state = AgentState.new(session_id)
    state.is_running = True
    storage.save(state)
    storage.mark_not_resumable(session_id)
    assert storage.load(session_id).is_running is False
    storage.delete(session_id)
    assert not storage.exists(session_id)


def test_the_memory_storage_refuses_long_ids_too() -> None:
    storage = MemoryStateStorage()
    refused(lambda: storage.save(AgentState.new("z" * 241)))
    refused(lambda: storage.load("z" * 241))

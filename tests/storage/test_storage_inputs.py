"""Storage inputs from the hostile review (issue 10): error messages show ids only through
``redact`` (SPEC §4), and the base directory is explicit and absolute (SPEC §6)."""

from __future__ import annotations

import errno
import inspect

import pytest
from crashpoint.core import (
    AgentState,
    FileStateStorage,
    StateError,
    encode_bytes,
    redact,
    safe_session_file_name,
)
from crashpoint.faultfs import MemoryFileSystem, makedirs, write_bytes

BASE = "/data/sessions"
LONG_ID = "customer 4711 conversation about invoices"
STEM = safe_session_file_name(LONG_ID)


class UnreadableFileSystem(MemoryFileSystem):
    """A memory filesystem whose reads of session files fail with EIO."""

    def read(self, path: str) -> bytes:
        if path.endswith((".json", ".json.bak")):
            raise OSError(errno.EIO, "Input/output error", path)
        return super().read(path)


def messages_of(exc: BaseException) -> str:
    """Every message in the chain of ``exc`` (the typed error and its causes)."""
    parts = []
    seen: BaseException | None = exc
    while seen is not None:
        if not isinstance(seen, OSError):  # the OS error names the path; ours must not
            parts.append(str(seen))
        seen = seen.__cause__
    return "\n".join(parts)


def test_a_read_failure_message_shows_the_id_redacted() -> None:
    fs = UnreadableFileSystem()
    makedirs(fs, BASE)
    write_bytes(fs, f"{BASE}/{STEM}.json", encode_bytes(AgentState.new(LONG_ID)))
    with pytest.raises(StateError) as exc:
        FileStateStorage(fs, BASE).load(LONG_ID)
    text = messages_of(exc.value)
    assert STEM not in text and STEM[:9] not in text
    assert redact(LONG_ID) in text


def test_a_file_of_another_session_is_reported_with_both_ids_redacted() -> None:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    other = LONG_ID.replace(" ", "_")
    write_bytes(fs, f"{BASE}/{STEM}.json", encode_bytes(AgentState.new(other)))
    with pytest.raises(StateError) as exc:
        FileStateStorage(fs, BASE).load(LONG_ID)
    text = messages_of(exc.value)
    assert STEM not in text and other not in text and STEM[:9] not in text


@pytest.mark.parametrize("base", ["data", "data/sessions", "./data", ""])
def test_a_relative_base_dir_is_a_typed_error_at_construction(base: str) -> None:
    with pytest.raises(ValueError, match="absolute"):
        FileStateStorage(MemoryFileSystem(), base)


def test_the_base_dir_is_required() -> None:
    parameter = inspect.signature(FileStateStorage).parameters["base_dir"]
    assert parameter.default is inspect.Parameter.empty
    with pytest.raises(TypeError):
        FileStateStorage(MemoryFileSystem())  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        FileStateStorage()  # type: ignore[call-arg]

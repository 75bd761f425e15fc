"""Issue 11: save's rotate-or-replace verdict on main is remembered by main's bytes;
it is the verdict the decoder and the pairing check give, for the reference only."""

from __future__ import annotations

from crashpoint.core import AgentState, FileStateStorage, Message, TextPart, ToolCall, encode_bytes
from crashpoint.faultfs import MemoryFileSystem, write_bytes

CALL = ToolCall("c1", "read", "{}")
GOOD = AgentState.new("s1")
GOOD.messages = [Message("user", (TextPart("hi"),))]
UNPAIRED = AgentState.new("s1")
UNPAIRED.messages = [Message("user", (TextPart("hi"),)), Message("assistant", (), (CALL,))]


class _LoosePairing(FileStateStorage):
    """Pairing not checked: its verdicts are never taken from the reference's."""

    def _check_pairing(self, state: AgentState) -> None:
        pass


def _verdicts(storage: FileStateStorage) -> list[bool]:
    main = storage.path("s1")
    out = []
    for data in (encode_bytes(GOOD), encode_bytes(UNPAIRED), b'{"sessionId":', b""):
        write_bytes(storage.fs, main, data)
        out += [storage._rotatable(main), storage._rotatable(main)]
    return out


def test_the_verdict_is_the_decoders_each_time() -> None:
    fs = MemoryFileSystem(dirs=("/d",))
    expected = [True, True, False, False, False, False, False, False]
    assert _verdicts(FileStateStorage(fs, "/d")) == expected
    assert _verdicts(FileStateStorage(fs, "/d")) == expected  # remembered: the same


def test_a_storage_with_its_own_pairing_check_judges_for_itself() -> None:
    fs = MemoryFileSystem(dirs=("/d",))
    _verdicts(FileStateStorage(fs, "/d"))
    assert _verdicts(_LoosePairing(fs, "/d")) == [True, True, True, True] + [False] * 4
    assert _verdicts(FileStateStorage(fs, "/d", strict=False)) == [True] * 8

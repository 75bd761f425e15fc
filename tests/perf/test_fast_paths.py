"""Issue 11: each fast path gives exactly what the slow path gives."""

from __future__ import annotations

import json

import pytest
from crashpoint.core import AgentState, ErrorCode, StateError, _codec, decode_bytes, encode_bytes
from crashpoint.core._codec import peek_schema_version
from crashpoint.faultfs import MODELS, crash_points
from crashpoint.scenarios import SCENARIOS, TARGETS, record
from crashpoint.scenarios.kinds.agent.checkers import _future
from hypothesis import given
from hypothesis import strategies as st

PIECES = st.sampled_from(
    [
        b'{"schemaVersion":',
        b'"schemaVersion":',
        b'"schema\\u0056ersion":',
        b"3",
        b"4",
        b"9",
        b"03",
        b"3.0",
        b",",
        b"}",
        b'"a":1',
        b"[",
        b"]",
        b" ",
        b'"',
    ]
)


@given(st.lists(PIECES, max_size=12).map(b"".join))
def test_future_is_peek_schema_version_above_current(data: bytes) -> None:
    version = peek_schema_version(data)
    assert _future(data) == (version is not None and version > 3)


@pytest.mark.parametrize(
    "doc",
    [
        {"schemaVersion": 3, "sessionId": "s1", "schemaVersion ": 1},
        {"schemaVersion": 2},
    ],
)
def test_future_on_documents(doc: dict[str, object]) -> None:
    data = json.dumps(doc, separators=(",", ":")).encode()
    assert _future(data) is False
    assert _future(data[:-1] + b',"schemaVersion":7}')  # the last duplicate counts


def test_encode_check_cache_keeps_the_decoder_verdict() -> None:
    """A document with the same bytes as one already checked but a non-str key in
    systemReminders (json.dumps writes 1 as "1") is still refused, as decode would."""
    good = AgentState.new("s1")
    good.system_reminders = {"1": "x"}
    data = encode_bytes(good)
    assert decode_bytes(data).system_reminders == {"1": "x"}
    bad = AgentState.new("s1")
    bad.system_reminders = {1: "x"}  # type: ignore[dict-item]
    with pytest.raises(StateError) as raised:
        encode_bytes(bad)
    assert raised.value.code == ErrorCode.SYSTEM_REMINDERS_TYPE
    assert encode_bytes(good) == data  # the cached path gives the same bytes
    assert _codec._CHECKED  # and the check ran once for it


@pytest.mark.parametrize("model", list(MODELS))
def test_points_give_the_same_states_as_the_whole_enumeration(model: str) -> None:
    rec = record(SCENARIOS["three-saves"], TARGETS["reference"])
    whole = {p.index: (p.states, p.cut) for p in crash_points(MODELS[model], rec.initial, rec.ops)}
    wanted = {0, 3, 7, len(rec.ops)}
    some = {
        p.index: (p.states, p.cut)
        for p in crash_points(MODELS[model], rec.initial, rec.ops, points=wanted)
    }
    assert some == {k: whole[k] for k in wanted}

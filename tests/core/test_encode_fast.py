"""Issue 11: encode_bytes writes plain documents with msgspec; the bytes do not change.

The oracle is encode_bytes as it was before (``json.dumps`` of the encoder's document
after the reference decoder's check): on generated states, on states with values the
fast path must hand back to json (floats, subclasses, tuples, cycles, lone surrogates),
and for every code point in a string.
"""

from __future__ import annotations

import enum
import json
import random
from collections.abc import Callable

import pytest
from crashpoint.core import (
    AgentState,
    Message,
    StateError,
    TextPart,
    ToolCall,
    _codec,
    encode_bytes,
)
from fuzz.test_codec_fuzz import valid_state
from hypothesis import given, settings
from strategies import agent_states


def outcome(call: Callable[[], bytes]) -> tuple[object, ...]:
    """The bytes, or what a caller can observe of the error."""
    try:
        return ("bytes", call())
    except StateError as exc:
        return ("error", exc.code, exc.message, exc.layer, exc.retryability, repr(exc.cause))


def reference_encode_bytes(state: AgentState) -> bytes:
    """encode_bytes before issue 11's msgspec path: json.dumps after the check."""
    obj = _codec._Encoder(True).document(state)
    _codec._decode_checked(obj)
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


def test_msgspec_writes_every_code_point_as_json_does() -> None:
    """The claim :func:`_codec._dumps` rests on, for strings: one string per code
    point (all but the surrogates, which neither writes) and all of them in one."""
    import msgspec

    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for chunk in range(0, len(chars), 4096):
        doc = {c: [c, c + "x"] for c in chars[chunk : chunk + 4096]}
        expected = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
        assert msgspec.json.encode(doc) == expected
    whole = "".join(chars)
    assert msgspec.json.encode(whole) == json.dumps(whole, ensure_ascii=False).encode()


@pytest.mark.parametrize("digits", [1, 18, 19, 20, 39, 40, 300, 4000])
def test_msgspec_writes_integers_as_json_does(digits: int) -> None:
    for value in (10 ** (digits - 1), 10**digits - 1, -(10**digits) + 1, 2**63, -(2**63) - 1):
        assert (
            _codec._dumps({"n": [value]}, True)
            == json.dumps({"n": [value]}).replace(" ", "").encode()
        )


def test_generated_states_encode_to_the_reference_bytes() -> None:
    rng = random.Random(11)
    exact = 0
    for _ in range(400):
        state = valid_state(rng)
        assert encode_bytes(state) == reference_encode_bytes(state)
        encoder = _codec._Encoder(True)
        encoder.document(state)
        exact += encoder.exact
    assert exact > 100  # the fast path ran on many of them


@settings(max_examples=200)
@given(agent_states())
def test_hypothesis_states_encode_to_the_reference_bytes(state: AgentState) -> None:
    _codec._CHECKED.clear()
    expected = outcome(lambda: reference_encode_bytes(state))
    _codec._CHECKED.clear()
    assert outcome(lambda: encode_bytes(state)) == expected
    assert outcome(lambda: encode_bytes(state)) == expected  # the cached check too


class _Text(str):
    pass


class _Number(int):
    pass


class _Skill(enum.Enum):
    A = "a"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("metadata", {"f": 1.5}),
        ("metadata", {"f": [1e16, 1e-5, -0.0]}),
        ("plan", {"n": 1e22}),
        ("session_id", _Text("s1")),
        ("total_loop_count", _Number(3)),
        ("total_loop_count", 3.0),
        ("system_reminders", {_Text("a"): "b"}),
        ("system_reminders", {"a": _Text("b")}),
        ("active_skills", ["a", _Skill.A]),
        ("active_skills", ["a", b"a"]),
    ],
)
def test_values_json_writes_its_own_way_are_left_to_json(field: str, value: object) -> None:
    """Floats (msgspec writes 1e16 where json writes 1e+16), subclasses, values only
    msgspec writes (enum members, bytes), lone surrogates: same bytes or same error."""
    state = AgentState.new("s1")
    setattr(state, field, value)
    _codec._CHECKED.clear()
    expected = outcome(lambda: reference_encode_bytes(state))
    _codec._CHECKED.clear()
    assert outcome(lambda: encode_bytes(state)) == expected
    encoder = _codec._Encoder(True)
    encoder.document(state)
    assert not encoder.exact


@pytest.mark.parametrize(
    ("field", "value"),
    [("metadata", {"t": _Text("x")}), ("last_error", "\ud800"), ("session_id", "\udfff")],
)
def test_values_msgspec_refuses_or_the_copy_makes_plain_are_written_as_before(
    field: str, value: object
) -> None:
    """The copy of a JSON object holds plain str; a lone surrogate makes msgspec raise
    and json then fails as before."""
    state = AgentState.new("s1")
    setattr(state, field, value)
    _codec._CHECKED.clear()
    expected = outcome(lambda: reference_encode_bytes(state))
    _codec._CHECKED.clear()
    assert outcome(lambda: encode_bytes(state)) == expected


@pytest.mark.parametrize(
    "message",
    [
        Message("user", (TextPart(_Text("hi")),)),
        Message(_Text("user"), (TextPart("hi"),)),  # type: ignore[arg-type]
        Message("tool", (TextPart("r"),), tool_call_id=_Text("c")),
        Message("assistant", (), (ToolCall("c", "n", _Text("{}")),)),
        Message("user", (TextPart("hi"),), metadata={"score": 0.5}),
    ],
)
def test_messages_with_values_json_writes_its_own_way_are_left_to_json(
    message: Message,
) -> None:
    state = AgentState.new("s1")
    state.messages = [message]
    assert outcome(lambda: encode_bytes(state)) == outcome(lambda: reference_encode_bytes(state))
    encoder = _codec._Encoder(True)
    encoder.document(state)
    assert not encoder.exact


def test_plain_json_refuses_what_msgspec_would_write_differently() -> None:
    loop: list[object] = []
    loop.append(loop)
    deep: object = "x"
    for _ in range(_codec.MAX_DEPTH + 1):
        deep = [deep]
    assert _codec._plain_json({"a": [1, "b", None, True, {"c": []}]})
    for value in (1.0, (1,), _Text("a"), _Number(1), {1: "a"}, loop, deep, 10**4001):
        assert not _codec._plain_json({"a": value})


def _mutations() -> list[Callable[[AgentState], object]]:
    """In-place changes after which the state must encode anew."""
    return [
        lambda s: s.messages.append(Message("user", (TextPart("more"),))),
        lambda s: s.messages.__setitem__(-1, Message("user", (TextPart("other"),))),
        lambda s: s.messages.pop(),
        lambda s: s.metadata.__setitem__("k", 1),
        lambda s: s.metadata.__setitem__("k", True),  # == 1, written differently
        lambda s: s.metadata.__setitem__("n", {"deep": [1]}),
        lambda s: s.metadata["n"]["deep"].append(2),  # nested: never remembered
        lambda s: s.metadata.clear(),
        lambda s: setattr(s, "plan", {"step": "one"}),
        lambda s: s.plan.__setitem__("step", "two"),
        lambda s: setattr(s, "active_skills", ["a"]),
        lambda s: s.active_skills.append("b"),
        lambda s: s.system_reminders.__setitem__("r", "x"),
        lambda s: s.system_reminders.__setitem__("r", "y"),
        lambda s: setattr(s, "is_running", True),
        lambda s: setattr(s, "total_loop_count", 7),
        lambda s: setattr(s, "total_loop_count", 7.0),  # refused
        lambda s: setattr(s, "total_loop_count", 2),
        lambda s: setattr(s, "last_error", "boom"),
        lambda s: setattr(s, "session_id", "s2"),
        lambda s: setattr(s, "messages", tuple(s.messages)),
        lambda s: setattr(s, "metadata", {"k": [1]}),
        lambda s: s.metadata["k"].append(1.5),
    ]


def test_an_encoding_is_reused_only_for_the_same_unchanged_values() -> None:
    """encode_bytes remembers its last encoding by the identity of what it read: each
    in-place change gives the new bytes (or the new error), never the old ones."""
    rng = random.Random(3)
    for _ in range(20):
        state = valid_state(rng)
        for mutate in _mutations():
            mutate(state)
            expected = outcome(lambda: reference_encode_bytes(state))  # noqa: B023
            assert outcome(lambda: encode_bytes(state)) == expected  # noqa: B023
            assert outcome(lambda: encode_bytes(state)) == expected  # noqa: B023


def test_an_unchanged_state_and_its_snapshot_reuse_the_encoding() -> None:
    state = AgentState.new("s1", {"k": "v"})
    state.messages = [Message("user", (TextPart("hi"),))]
    data = encode_bytes(state)
    assert encode_bytes(state) is data
    assert encode_bytes(state.snapshot()) is data  # frozen values are shared
    assert encode_bytes(state, persistence=False) == data  # encoded anew, same bytes here


def test_encode_gives_the_document_or_the_error_it_gave() -> None:
    """encode() takes the check's verdict from the same cache as encode_bytes."""

    def reference(state: AgentState) -> tuple[object, ...]:
        try:
            obj = _codec._Encoder(True).document(state)
            _codec._decode_checked(obj)
        except StateError as exc:
            return ("error", exc.code, exc.message)
        return ("document", repr(obj), obj)

    def actual(state: AgentState) -> tuple[object, ...]:
        try:
            obj = _codec.encode(state)
        except StateError as exc:
            return ("error", exc.code, exc.message)
        return ("document", repr(obj), obj)

    rng = random.Random(5)
    states = [valid_state(rng) for _ in range(50)]
    for field, value in [
        ("total_loop_count", 3.0),
        ("total_loop_count", _Number(3)),
        ("is_running", {1}),
        ("system_reminders", {1: "x"}),
        ("metadata", {"a": float("nan")}),
        ("last_error", "\ud800"),
    ]:
        state = AgentState.new("s1")
        setattr(state, field, value)
        states.append(state)
    for state in states:
        expected = reference(state)
        assert actual(state) == expected
        assert actual(state) == expected  # the check's verdict remembered

"""Issue 11: the fast decode path, the cheap peeks and the decode memo change nothing.

The oracle is the decoder as it was before issue 11 (``old_parse`` below is its parser,
verbatim), run on generated states, on the codec fuzz suite's hostile inputs, and on
mutated encodings: ``decode_bytes``, ``peek_schema_version`` and ``peek_session_id``
give what it gives, state for state (``==`` and ``repr``, so dict order and int/bool
and -0.0 count) and error for error (type, code, message, layer, retryability, cause).
The fast path alone either returns the oracle's state or declines (None).
"""

from __future__ import annotations

import enum
import json
import random
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from crashpoint.core import (
    AgentState,
    ErrorCode,
    Message,
    StateError,
    TextPart,
    _codec,
    decode_bytes,
    encode_bytes,
    peek_schema_version,
    peek_session_id,
)
from crashpoint.core._codec import MAX_DEPTH, decode_memo
from crashpoint.core._fastdecode import fast_decode
from fuzz.test_codec_fuzz import fuzz_input, valid_state
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import agent_states

# --- the oracle: the decoder before issue 11 ---------------------------------------------


def old_parse(data: bytes) -> Any:
    """``_codec._parse`` before issue 11, verbatim."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _codec._error(ErrorCode.JSON_INVALID, f"not UTF-8 JSON: {exc}", cause=exc) from exc
    if _codec._text_too_deep(text):
        raise _codec._too_deep(f"the document nests deeper than {MAX_DEPTH} levels")
    parse_int = _codec._parse_int if _codec._LONG_DIGITS.search(text) else None
    try:
        return json.loads(text, parse_constant=_codec._reject_constant, parse_int=parse_int)
    except ValueError as exc:
        raise _codec._error(ErrorCode.JSON_INVALID, f"not UTF-8 JSON: {exc}", cause=exc) from exc


def old_decode_bytes(data: bytes) -> AgentState:
    return _codec._fresh_stack(lambda d: _codec._decode(old_parse(d)), data)


def old_peek_schema_version(data: bytes) -> int | None:
    try:
        obj = _codec._fresh_stack(old_parse, data)
    except (StateError, TypeError):
        return None
    if not isinstance(obj, dict) or "schemaVersion" not in obj:
        return None
    raw = obj["schemaVersion"]
    version = _codec._whole_number(raw)
    if version is None:
        if _codec._is_int(raw) or (isinstance(raw, float) and raw.is_integer()):
            return int(raw)
        return None
    return sys.maxsize if version == _codec._HUGE else version


def old_peek_session_id(data: bytes) -> str | None:
    try:
        obj = _codec._fresh_stack(old_parse, data)
    except (StateError, TypeError):
        return None
    if not isinstance(obj, dict):
        return None
    session_id = obj.get("sessionId")
    return session_id if _codec._is_text(session_id) else None


def outcome(call: Callable[[], object]) -> tuple[object, ...]:
    """What a caller can observe of a call: the state (repr and value) or the error."""
    try:
        value = call()
    except StateError as exc:
        return (
            "error",
            type(exc),
            exc.code,
            exc.message,
            exc.layer,
            exc.retryability,
            type(exc.cause),
            str(exc.cause),
            exc.__cause__ is exc.cause,
            exc.__suppress_context__,
        )
    if isinstance(value, AgentState):
        return ("state", repr(value), value)
    return ("value", value)


def assert_same_as_before(data: bytes) -> bool:
    """Assert it; return whether the fast path took the input."""
    expected = outcome(lambda: old_decode_bytes(data))
    assert outcome(lambda: decode_bytes(data)) == expected
    fast = fast_decode(data, _codec._json_object)
    if fast is not None:
        assert expected[0] == "state"
        assert ("state", repr(fast), fast) == expected
    assert peek_schema_version(data) == old_peek_schema_version(data)
    assert peek_session_id(data) == old_peek_session_id(data)
    return fast is not None


# --- generated states: the fast path takes them all ----------------------------------------


@given(agent_states(paired=False), st.booleans())
def test_fast_path_decodes_every_encoded_state_as_the_reference(
    state: AgentState, persistence: bool
) -> None:
    data = encode_bytes(state, persistence=persistence)
    fast = fast_decode(data, _codec._json_object)
    assert fast is not None  # it declines none of the documents encode writes
    reference = old_decode_bytes(data)
    assert fast == reference
    assert repr(fast) == repr(reference)
    assert decode_bytes(encode_bytes(fast, persistence=persistence)) == fast  # symmetry
    assert peek_schema_version(data) == 3 == old_peek_schema_version(data)
    assert peek_session_id(data) == state.session_id == old_peek_session_id(data)


def test_fast_path_takes_the_1000_message_state() -> None:
    history = [Message("user" if i % 2 else "assistant", (TextPart(f"m{i}"),)) for i in range(1000)]
    state = AgentState("s1", messages=history)
    data = encode_bytes(state)
    assert fast_decode(data, _codec._json_object) == old_decode_bytes(data) == state


def test_fast_path_values_are_the_callers_own() -> None:
    """Defaults the structs fill (an absent systemReminders, metadata...) are new
    objects per decode: changing one decoded state never changes another."""
    data = b'{"sessionId":"s","history":{"messages":[{"role":"user","contents":[]'
    data += b',"toolCalls":[{"id":"c","name":"n","arguments":"{}"}]}]}}'
    first, second = decode_bytes(data), decode_bytes(data)
    first.system_reminders["x"] = "y"
    first.metadata["k"] = 1
    first.messages.append(first.messages[0])
    assert second == old_decode_bytes(data)
    assert second.system_reminders == {} and second.metadata == {}


# --- hostile and mutated inputs: same state or same error ----------------------------------


def test_fuzz_inputs_decode_and_peek_as_before() -> None:
    rng = random.Random(11)
    kinds: dict[str, int] = {}
    fast: dict[str, int] = {}
    for _ in range(600):
        kind, data = fuzz_input(rng)
        kinds[kind] = kinds.get(kind, 0) + 1
        fast[kind] = fast.get(kind, 0) + assert_same_as_before(data)
    assert len(kinds) == 7  # every kind of input of the fuzz suite was drawn
    assert fast["valid"] == kinds["valid"]  # the fast path took every valid one
    assert fast["duplicate-key"] > 0  # and some that are not what encode writes


_PIECES = [
    b'"schemaVersion":',
    b'"schema\\u0056ersion":',
    b'"sessionId":',
    b'"s"',
    b'"\\ud800"',
    b'"\\ud83d\\ude00"',
    b"3",
    b"3.0",
    b"1E1",
    b"-1",
    b"9" * 4100,
    b"9" * 4400,
    b"1e400",
    b"NaN",
    b"true",
    b"null",
    b",",
    b":",
    b"{",
    b"}",
    b"[",
    b"]",
    b'"',
    b"\\",
    b" ",
    b"\xff",
    b'"unknownKey":1',
    b'"role":"tool"',
    b'"contents":[]',
    b'"metadata":{"a":[1,2.5,-0.0]}',
    b'{"type":"text","text":"t"}',
    b'{"type":"image","mimeType":"i/p","data":""}',
    b'{"type":"text","type":"image","text":"t"}',
]


@given(
    st.sampled_from(
        [
            encode_bytes(valid_state(random.Random(seed)), persistence=seed % 2 == 0)
            for seed in range(8)
        ]
    ),
    st.lists(
        st.tuples(st.integers(min_value=0), st.integers(0, 3), st.sampled_from(_PIECES)),
        max_size=4,
    ),
)
def test_mutated_encodings_decode_and_peek_as_before(
    valid: bytes, edits: list[tuple[int, int, bytes]]
) -> None:
    data = valid
    for at, cut, piece in edits:
        at %= len(data) + 1
        data = data[:at] + piece + data[at + cut :]
    assert_same_as_before(data)


@given(st.lists(st.sampled_from(_PIECES), max_size=12).map(b"".join))
def test_pieces_decode_and_peek_as_before(data: bytes) -> None:
    assert_same_as_before(b"{" + data)
    assert_same_as_before(data)


_ODD_VALUES = ["-1", "0", "4", "3.0", "1E1", "-0.0", "true", "null", '"s"', '"\\ud800"', "[]", "{}"]
_ODD_VALUES += ["9" * 4001, "[[[" + "1" + "]]]", '[{"type":"text","text":"t"}]', '{"a":{"b":1}}']


def _paths(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every key and index path of a JSON value."""
    out = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*path, index))
    return out


def test_every_field_with_every_odd_value_decodes_and_peeks_as_before() -> None:
    """Each value of a rich document (every field of SPEC §1, nested ones included)
    replaced in turn by negative, float, boolean, null, string, lone-surrogate, long,
    array and object literals."""
    state = valid_state(random.Random(5))
    state.pending_run_checkpoint = None
    state.messages.append(Message("tool", (TextPart("r"),), tool_call_id="c0"))
    doc = json.loads(encode_bytes(state))
    doc["pendingRunCheckpoint"] = {"checkpoint": "x", "loopCount": 1}
    doc["currentLoopUsages"] = [{"inputTokens": 1, "outputTokens": 2, "model": "m"}]
    doc["history"]["episodicMemories"] = [{"id": "e", "summary": "s", "messages": []}]
    doc["pendingApproval"] = {"toolCalls": [{"id": "c", "name": "n", "arguments": "{}"}]}
    doc["pendingPlanReview"] = {"plan": {"p": 1}}
    taken = 0
    for path in _paths(doc)[1:]:
        for literal in _ODD_VALUES:
            copy = json.loads(json.dumps(doc))
            target = copy
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = "@@VALUE@@"
            text = json.dumps(copy, ensure_ascii=False).replace('"@@VALUE@@"', literal)
            taken += assert_same_as_before(text.encode())
    assert taken > 0


@given(st.text(alphabet='[]{}"\\ a:,()', max_size=400), st.integers(0, 130))
@example(text="}[:", openers=64)  # 65 openers in a row on the bytes, not in the text
@example(text="]", openers=65)  # 65 in a row in both, after a closer: deepest is 64
def test_the_byte_depth_scan_is_the_text_depth_scan(text: str, openers: int) -> None:
    for sample in (text, "[" * openers + text, text + "{" * openers, "[" * openers + "]" * openers):
        assert _codec._bytes_too_deep(sample.encode()) == _codec._text_too_deep(sample)


def test_a_version_of_4001_to_4300_digits_is_described_as_before() -> None:
    for digits in (4001, 4300):
        data = ('{"sessionId":"s","schemaVersion":-' + "9" * digits + "}").encode()
        assert_same_as_before(data)


# --- the decode memo ------------------------------------------------------------------------


def _error_view(exc: StateError) -> tuple[object, ...]:
    return outcome(lambda: (_ for _ in ()).throw(exc))


def test_memo_returns_equal_independent_states_for_equal_bytes() -> None:
    state = valid_state(random.Random(3))
    data = encode_bytes(state)
    with decode_memo() as memo:
        first = decode_bytes(data)
        again = decode_bytes(bytes(bytearray(data)))  # equal bytes, another object
        assert (memo.hits, memo.misses) == (1, 1)
        assert again == first == old_decode_bytes(data)
        assert again is not first
        again.messages.clear()
        again.metadata["changed"] = True
        third = decode_bytes(data)
        assert third == first == old_decode_bytes(data)
        assert memo.hits == 2
    assert len(memo) == 0  # emptied at exit
    decode_bytes(data)
    assert memo.hits == 2  # off outside the block


def test_memo_raises_a_fresh_equal_error_for_bytes_that_failed() -> None:
    bad = b'{"sessionId":"s","history":{"messages":[1]}}'
    torn = encode_bytes(valid_state(random.Random(4)))[:-7]
    with decode_memo() as memo:
        for data in (bad, torn):
            with pytest.raises(StateError) as first:
                decode_bytes(data)
            with pytest.raises(StateError) as second:
                decode_bytes(data)
            assert second.value is not first.value
            assert _error_view(second.value) == _error_view(first.value)
            assert outcome(lambda d=data: old_decode_bytes(d)) == _error_view(second.value)
            assert second.value.__cause__ is first.value.__cause__
        assert (memo.hits, memo.misses) == (2, 2)
    assert first.value.code == ErrorCode.JSON_INVALID


def test_memo_is_bounded_and_nested_blocks_share_it() -> None:
    docs = [encode_bytes(AgentState.new(f"s{i}")) for i in range(5)]
    with decode_memo(max_entries=2) as memo:
        for data in docs:
            decode_bytes(data)
        assert len(memo) == 2
        decode_bytes(docs[-1])
        assert memo.hits == 1
        with decode_memo() as inner:
            assert inner is memo
        assert len(memo) == 2  # the inner block does not empty the outer memo
    with decode_memo(max_bytes=len(docs[0]) * 3) as memo:
        for data in docs:
            decode_bytes(data)
        assert len(memo) == 3
        decode_bytes(docs[0])  # evicted: decoded again
        assert memo.hits == 0


def test_msgspec_is_imported_on_first_decode_not_with_the_package() -> None:
    """Commands that decode nothing (``explore --list``) do not pay msgspec's import."""
    code = "import sys, crashpoint.core as c; print('msgspec' in sys.modules)"
    code += "; c.decode_bytes(b'{\"sessionId\":\"s\"}'); print('msgspec' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


class _Count(enum.IntEnum):
    THREE = 3


def _reference_encode_bytes(state: AgentState) -> bytes:
    """encode_bytes with the reference decoder's check on every document."""
    obj = _codec._Encoder(True).document(state)
    _codec._decode_checked(obj)
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("total_loop_count", _Count.THREE),
        ("total_loop_count", 3.0),
        ("total_loop_count", True),
        ("total_loop_count", -1),
        ("total_loop_count", 10**4100),
        ("total_loop_count", 10**4050),
        ("is_running", 1),
        ("system_reminders", {1: "x"}),
        ("system_reminders", {"a": 1}),
        ("metadata", {"a": float("nan")}),
        ("metadata", {"a": (1, 2)}),
        ("metadata", {1: 2}),
        ("metadata", {"a": "\ud800"}),
        ("metadata", {"a": 10**4050}),
        ("active_skills", ("a",)),
        ("active_skills", ["a", 1]),
        ("session_id", "\ud800"),
        ("last_error", 5),
    ],
)
def test_encode_accepts_and_refuses_what_the_reference_check_does(
    field: str, value: object
) -> None:
    """The encoder's check takes the fast decoder's word for documents it reads."""
    state = valid_state(random.Random(6))
    setattr(state, field, value)
    _codec._CHECKED.clear()
    expected = outcome(lambda: _reference_encode_bytes(state))
    _codec._CHECKED.clear()
    assert outcome(lambda: encode_bytes(state)) == expected

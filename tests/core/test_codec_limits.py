"""Parsing robustness of the codec (SPEC §2, issue 10): the nesting limit, schemaVersion
spellings and huge numbers. Each test was written to fail before its fix."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any

import pytest
from crashpoint.core import (
    AgentState,
    ErrorCode,
    FileStateStorage,
    Message,
    StateError,
    TextPart,
    ToolsEntry,
    decode,
    decode_bytes,
    encode,
    encode_bytes,
)
from crashpoint.faultfs import MemoryFileSystem, makedirs, write_bytes

MAX_DEPTH = 64
BASE = "/data/sessions"


def nested(depth: int) -> Any:
    """A JSON value that is ``depth`` arrays deep (``depth`` >= 1)."""
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def code(call: Callable[[], object]) -> str:
    with pytest.raises(StateError) as exc:
        call()
    return str(exc.value.code)


def at_stack_depth(frames_left: int, call: Callable[[], object]) -> object:
    """Run ``call`` with only about ``frames_left`` Python frames left before the
    recursion limit, as a caller deep in its own recursion would."""
    limit = sys.getrecursionlimit()

    def here() -> int:
        depth, frame = 0, sys._getframe()
        while frame is not None:
            depth, frame = depth + 1, frame.f_back  # type: ignore[assignment]
        return depth

    def descend(n: int) -> object:
        return call() if n <= 0 else descend(n - 1)

    return descend(limit - here() - frames_left)


# --- depth (SPEC §2 "Nesting") --------------------------------------------------------------


def test_a_document_of_exactly_64_levels_decodes() -> None:
    # root (1) -> metadata (2) -> 62 more arrays = 64 levels
    doc = {"sessionId": "s", "metadata": {"deep": nested(MAX_DEPTH - 2)}}
    state = decode_bytes(json.dumps(doc).encode())
    assert decode(json.loads(encode_bytes(state))).metadata == state.metadata


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 480, 1000, 100_000])
def test_a_document_deeper_than_64_levels_is_json_too_deep(depth: int) -> None:
    text = '{"sessionId":"s","x":' + "[" * (depth - 1) + "]" * (depth - 1) + "}"
    assert code(lambda: decode_bytes(text.encode())) == ErrorCode.JSON_TOO_DEEP
    doc = {"sessionId": "s", "x": nested(depth - 1)}
    assert code(lambda: decode(doc)) == ErrorCode.JSON_TOO_DEEP


def test_depth_counts_objects_and_arrays_inside_strings_not() -> None:
    ok = '{"sessionId":"s","metadata":' + '{"a":' * 62 + '"[[[[{{{{"' + "}" * 62 + "}"
    assert decode_bytes(ok.encode()).session_id == "s"
    # escaped quotes and backslashes inside strings do not end them
    tricky = r'"\\\"[[[[\\" , "]]]]\""'
    deep = '{"sessionId":"s","metadata":' + '{"a":' * 63 + "[" + tricky + "]" + "}" * 63 + "}"
    assert code(lambda: decode_bytes(deep.encode())) == ErrorCode.JSON_TOO_DEEP  # 65 levels
    ok = '{"sessionId":"s","metadata":' + '{"a":' * 62 + "[" + tricky + "]" + "}" * 62 + "}"
    assert decode_bytes(ok.encode()).metadata["a"]["a"]["a"] is not None
    deep = '{"sessionId":"s","metadata":' + '{"a":[' * 32 + "1" + "]}" * 32 + "}"
    assert code(lambda: decode_bytes(deep.encode())) == ErrorCode.JSON_TOO_DEEP


@pytest.mark.parametrize(
    "place",
    ["metadata", "plan", "message", "episode", "tools", "plan_review"],
)
def test_encode_refuses_the_same_depth_as_decode(place: str) -> None:
    def build(extra: int) -> AgentState:
        s = AgentState.new("s")
        # each place's free-form object sits at a different level from the root
        base = {"metadata": 2, "plan": 2, "message": 5, "episode": 7, "tools": 5}.get(place, 3)
        value = {"v": nested(MAX_DEPTH - base + extra)} if MAX_DEPTH - base + extra else {}
        if place == "metadata":
            s.metadata = value
        elif place == "plan":
            s.plan = value
        elif place == "message":
            s.messages = [Message("user", (TextPart("x"),), metadata=value)]
        elif place == "episode":
            from crashpoint.core import Episode

            s.episodic_memories = [
                Episode("e", "sum", (Message("user", (TextPart("x"),), metadata=value),))
            ]
        elif place == "tools":
            s.tools_history = [ToolsEntry(1, (value,))]
        else:
            from crashpoint.core import PendingPlanReview

            s.pending_plan_review = PendingPlanReview(value)
        return s

    fits = encode_bytes(build(0))
    assert decode_bytes(fits) == decode(json.loads(fits))
    assert code(lambda: encode_bytes(build(1))) == ErrorCode.JSON_TOO_DEEP
    assert code(lambda: encode(build(1))) == ErrorCode.JSON_TOO_DEEP
    at = fits.index(b"[]", fits.index(b'"v":'))
    too_deep = fits[:at] + b"[[]]" + fits[at + 2 :]
    assert code(lambda: decode_bytes(too_deep)) == ErrorCode.JSON_TOO_DEEP


def test_encode_of_100000_levels_is_json_too_deep_not_recursion_error() -> None:
    s = AgentState.new("s")
    s.metadata = {"deep": nested(100_000)}
    assert code(lambda: encode_bytes(s)) == ErrorCode.JSON_TOO_DEEP


@pytest.mark.parametrize("frames_left", [40, 120, 300])
def test_depth_error_is_the_same_from_deep_in_a_recursion(frames_left: int) -> None:
    deep = ('{"sessionId":"s","x":' + "[" * 500 + "]" * 500 + "}").encode()
    fine = json.dumps({"sessionId": "s", "metadata": {"d": nested(MAX_DEPTH - 2)}}).encode()

    def both() -> tuple[str, AgentState]:
        return code(lambda: decode_bytes(deep)), decode_bytes(fine)

    got = at_stack_depth(frames_left, both)
    assert got == (ErrorCode.JSON_TOO_DEEP, decode_bytes(fine))


def test_load_of_a_deeply_nested_main_beside_a_good_bak_returns_bak() -> None:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    storage = FileStateStorage(fs, BASE)
    good = AgentState.new("s1")
    good.messages = [Message("user", (TextPart("kept"),))]
    write_bytes(fs, f"{BASE}/s1.json.bak", encode_bytes(good))

    def main(levels: int) -> bytes:
        return (
            '{"schemaVersion":3,"sessionId":"s1","history":{"messages":[{"role":"user",'
            '"contents":[{"type":"text","text":"x"}],"metadata":{"a":'
            + "[" * levels
            + "]" * levels
            + "}}]}}"
        ).encode()

    assert 1000 < len(main(480)) < 1200  # the 1.1 KB file of the report
    for levels in (100, 300, 480):
        write_bytes(fs, f"{BASE}/s1.json", main(levels))
        assert storage.load("s1") == good
        for frames_left in range(30, 1000):  # whatever the caller's stack depth
            assert at_stack_depth(frames_left, lambda: storage.load("s1")) == good


def test_json_too_deep_is_a_codec_error_wrapped_by_load_without_bak() -> None:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    write_bytes(fs, f"{BASE}/s1.json", b'{"sessionId":"s1","m":' + b"[" * 2000 + b"]" * 2000 + b"}")
    with pytest.raises(StateError) as exc:
        FileStateStorage(fs, BASE).load("s1")
    assert exc.value.code == ErrorCode.STATE_CORRUPT
    assert isinstance(exc.value.cause, StateError)
    assert exc.value.cause.code == ErrorCode.JSON_TOO_DEEP
    assert exc.value.cause.layer == "codec"


# --- schemaVersion spellings and huge numbers (SPEC §2) -------------------------------------


def short(spelling: object) -> str:
    """A readable test id for a long spelling."""
    text = str(spelling) if not isinstance(spelling, int) else "int"
    return text if len(text) <= 12 else f"{text[:6]}...({len(text)} chars)"


def doc_with_version(spelling: str) -> bytes:
    return ('{"schemaVersion":' + spelling + ',"sessionId":"s"}').encode()


@pytest.mark.parametrize(
    "spelling",
    ["4", "4.0", "4e0", "4E0", "4.000", "1E1", "40e-1", "1e400", "9" * 5000, "1" + "0" * 5000],
    ids=short,
)
def test_a_whole_version_above_3_is_unsupported_however_spelled(spelling: str) -> None:
    assert code(lambda: decode_bytes(doc_with_version(spelling))) == (
        ErrorCode.SCHEMA_VERSION_UNSUPPORTED
    )


@pytest.mark.parametrize(
    ("spelling", "version"),
    [("0.0", 0), ("-0.0", 0), ("1.0", 1), ("2e0", 2), ("3.0", 3), ("30e-1", 3), ("0e5", 0)],
)
def test_a_whole_version_up_to_3_reads_as_that_integer(spelling: str, version: int) -> None:
    state = decode_bytes(doc_with_version(spelling))
    assert state.schema_version == version
    assert type(state.schema_version) is int


@pytest.mark.parametrize(
    "spelling",
    ["-1", "-1.0", "-4e0", "1.5", "3.5", "4.5", "-1e400", "-" + "9" * 5000, '"4"', "true", "null"],
    ids=short,
)
def test_a_negative_fractional_or_non_number_version_is_invalid(spelling: str) -> None:
    assert code(lambda: decode_bytes(doc_with_version(spelling))) == (
        ErrorCode.SCHEMA_VERSION_INVALID
    )


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (10**5000, ErrorCode.SCHEMA_VERSION_UNSUPPORTED),
        (-(10**5000), ErrorCode.SCHEMA_VERSION_INVALID),
        (4.0, ErrorCode.SCHEMA_VERSION_UNSUPPORTED),
        (float("inf"), ErrorCode.SCHEMA_VERSION_UNSUPPORTED),
        (float("-inf"), ErrorCode.SCHEMA_VERSION_INVALID),
        (float("nan"), ErrorCode.SCHEMA_VERSION_INVALID),
    ],
    ids=["10**5000", "-10**5000", "4.0", "inf", "-inf", "nan"],
)
def test_decode_of_a_huge_or_float_version_never_leaks_value_error(
    version: object, expected: str
) -> None:
    assert code(lambda: decode({"schemaVersion": version, "sessionId": "s"})) == expected


def test_load_of_a_main_with_version_4_0_raises_unsupported_never_bak() -> None:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    write_bytes(fs, f"{BASE}/s1.json.bak", encode_bytes(AgentState.new("s1")))
    for spelling in ("4.0", "4e0", "1E1", "1" + "0" * 5000):
        write_bytes(
            fs, f"{BASE}/s1.json", ('{"schemaVersion":' + spelling + ',"sessionId":"s1"}').encode()
        )
        assert code(lambda: FileStateStorage(fs, BASE).load("s1")) == (
            ErrorCode.SCHEMA_VERSION_UNSUPPORTED
        )


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ('"metadata":{"n":%s}', ErrorCode.METADATA_TYPE),
        ('"totalLoopCount":%s', ErrorCode.TOTAL_LOOP_COUNT_TYPE),
        ('"usages":[{"inputTokens":%s,"outputTokens":1}]', ErrorCode.USAGE_TYPE),
    ],
)
def test_an_integer_of_more_than_4000_digits_is_a_type_error(field: str, expected: str) -> None:
    for digits in ("1" * 4001, "-" + "1" * 4001, "7" * 100_000):
        data = ('{"sessionId":"s",' + field % digits + "}").encode()
        assert code(functools.partial(decode_bytes, data)) == expected


def test_an_integer_of_4000_digits_round_trips() -> None:
    big = int("9" * 4000)
    s = AgentState.new("s")
    s.metadata = {"n": big, "m": -big}
    s.total_loop_count = big
    assert decode_bytes(encode_bytes(s)) == decode(json.loads(encode_bytes(s)))
    assert decode_bytes(encode_bytes(s)).metadata == {"n": big, "m": -big}
    s.metadata = {"n": big * 10}
    assert code(lambda: encode_bytes(s)) == ErrorCode.METADATA_TYPE
    s.metadata = {}
    s.total_loop_count = big * 10
    assert code(lambda: encode_bytes(s)) == ErrorCode.TOTAL_LOOP_COUNT_TYPE


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [("4.0", 4), ("1E1", 10), ("3.0", 3), ("1.5", None), ("1" + "0" * 5000, sys.maxsize)],
    ids=short,
)
def test_peek_schema_version_reads_the_same_spellings(spelling: str, expected: int | None) -> None:
    from crashpoint.core import peek_schema_version

    assert peek_schema_version(doc_with_version(spelling)) == expected

"""The AgentState codec (SPEC §2; seed §5, §6, §13.3, §13.8)."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from contextlib import AbstractContextManager
from typing import Any

import pytest
from crashpoint.core import (
    CURRENT_VERSION,
    AgentState,
    Episode,
    ErrorCode,
    MediaPart,
    Message,
    ModelUsage,
    PendingApproval,
    PendingPlanReview,
    PendingRunCheckpoint,
    Retryability,
    StateError,
    SystemPromptEntry,
    TextPart,
    ToolCall,
    ToolsEntry,
    as_persisted,
    decode,
    decode_bytes,
    encode,
    encode_bytes,
    media_placeholder,
    peek_schema_version,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import agent_states, json_values


def full_document() -> dict[str, Any]:
    """A v3 document with every field present (a fresh copy each call)."""
    return {
        "schemaVersion": 3,
        "sessionId": "sess-1",
        "history": {
            "messages": [
                {"role": "user", "contents": [{"type": "text", "text": "hi"}]},
                {
                    "role": "assistant",
                    "contents": [],
                    "toolCalls": [{"id": "c1", "name": "search", "arguments": '{"q":1}'}],
                },
                {
                    "role": "tool",
                    "contents": [{"type": "image", "mimeType": "image/png", "data": ""}],
                    "toolCallId": "c1",
                    "metadata": {"ms": 12},
                },
                {
                    "role": "assistant",
                    "contents": [],
                    "toolCalls": [{"id": "c2", "name": "rm", "arguments": "{}"}],
                },
            ],
            "episodicMemories": [
                {
                    "id": "e1",
                    "summary": "greeting",
                    "messages": [{"role": "user", "contents": [{"type": "text", "text": "yo"}]}],
                }
            ],
        },
        "usages": [{"inputTokens": 10, "outputTokens": 5, "model": "m"}],
        "metadata": {"k": [1, 2.5, None, True, {"n": "v"}]},
        "plan": {"steps": ["a"]},
        "activeSkills": ["coding"],
        "isRunning": True,
        "totalLoopCount": 7,
        "currentLoopCount": 2,
        "currentLoopUsages": [{"inputTokens": 1, "outputTokens": 2}],
        "lastError": "boom",
        "systemReminders": {"z": "last", "a": "first"},
        "systemPromptHistory": [{"loopCount": 0, "systemPrompt": "be nice"}],
        "toolsHistory": [{"loopCount": 0, "tools": [{"name": "search"}]}],
        "pendingRunCheckpoint": {"checkpoint": "suspended", "loopCount": 2},
        "pendingApproval": {"toolCalls": [{"id": "c2", "name": "rm", "arguments": "{}"}]},
        "pendingPlanReview": {"plan": {"steps": ["a"]}},
        "planReviewApproved": True,
    }


def full_state() -> AgentState:
    """The state ``full_document()`` decodes to."""
    return AgentState(
        "sess-1",
        schema_version=3,
        messages=[
            Message("user", (TextPart("hi"),)),
            Message("assistant", tool_calls=(ToolCall("c1", "search", '{"q":1}'),)),
            Message("tool", (MediaPart("image", "image/png", ""),), (), "c1", {"ms": 12}),
            Message("assistant", tool_calls=(ToolCall("c2", "rm", "{}"),)),
        ],
        episodic_memories=[Episode("e1", "greeting", (Message("user", (TextPart("yo"),)),))],
        usages=[ModelUsage(10, 5, "m")],
        metadata={"k": [1, 2.5, None, True, {"n": "v"}]},
        plan={"steps": ["a"]},
        active_skills=["coding"],
        is_running=True,
        total_loop_count=7,
        current_loop_count=2,
        current_loop_usages=[ModelUsage(1, 2)],
        last_error="boom",
        system_reminders={"z": "last", "a": "first"},
        system_prompt_history=[SystemPromptEntry(0, "be nice")],
        tools_history=[ToolsEntry(0, ({"name": "search"},))],
        pending_run_checkpoint=PendingRunCheckpoint("suspended", 2),
        pending_approval=PendingApproval((ToolCall("c2", "rm", "{}"),)),
        pending_plan_review=PendingPlanReview({"steps": ["a"]}),
        plan_review_approved=True,
    )


def codec_error(code: str) -> AbstractContextManager[Any]:
    return pytest.raises(StateError, match=f"^{code}: ")


def assert_codec_error(exc: StateError, code: str) -> None:
    assert exc.code == code
    assert exc.layer == "codec"
    assert exc.retryability is Retryability.NEVER


def decode_error(obj: object) -> StateError:
    with pytest.raises(StateError) as info:
        decode(obj)
    return info.value


def v2_document() -> dict[str, Any]:
    doc = full_document()
    doc["schemaVersion"] = 2
    del doc["pendingPlanReview"], doc["planReviewApproved"]
    return doc


def v1_document() -> dict[str, Any]:
    doc = v2_document()
    doc["schemaVersion"] = 1
    del doc["pendingApproval"]
    return doc


# --- seed §13.3 version migration, one test per bullet -----------------------------------


def test_13_3_v0_without_schema_version_reads_with_defaults() -> None:
    state = decode({"sessionId": "legacy", "history": {"messages": []}, "lastError": "x"})
    assert state == AgentState("legacy", schema_version=0, last_error="x")
    assert state.metadata == {}
    assert state.is_running is False
    assert state.pending_approval is None
    assert state.pending_plan_review is None
    assert state.plan_review_approved is False
    assert decode({"sessionId": "bare"}) == AgentState("bare", schema_version=0)


def test_13_3_v1_reads_with_pending_approval_none() -> None:
    state = decode(v1_document())
    assert state.schema_version == 1
    assert state.pending_approval is None
    assert state.pending_plan_review is None
    assert state.plan_review_approved is False
    expected = dataclasses.replace(
        full_state(),
        schema_version=1,
        pending_approval=None,
        pending_plan_review=None,
        plan_review_approved=False,
    )
    assert state == expected


def test_13_3_v2_reads_with_pending_plan_review_none_and_not_approved() -> None:
    state = decode(v2_document())
    assert state.schema_version == 2
    assert state.pending_plan_review is None
    assert state.plan_review_approved is False
    assert state.pending_approval == PendingApproval((ToolCall("c2", "rm", "{}"),))
    expected = dataclasses.replace(
        full_state(), schema_version=2, pending_plan_review=None, plan_review_approved=False
    )
    assert state == expected


@pytest.mark.parametrize("version", [4, 5, 100, 10**30])
def test_13_3_v4_future_version_raises_schema_version_unsupported(version: int) -> None:
    doc = full_document()
    doc["schemaVersion"] = version
    exc = decode_error(doc)
    assert_codec_error(exc, "schema_version_unsupported")
    assert str(version) in exc.message
    with codec_error("schema_version_unsupported"):
        decode_bytes(json.dumps(doc).encode())


@pytest.mark.parametrize("version", [-1, -3, -(10**20)])
def test_13_3_negative_schema_version_raises_schema_version_invalid(version: int) -> None:
    assert_codec_error(
        decode_error({"schemaVersion": version, "sessionId": "s"}), "schema_version_invalid"
    )


@pytest.mark.parametrize("version", [1.5, 0.5, 3.25, -1.0, -math.inf, math.nan])
def test_13_3_non_integer_schema_version_raises_schema_version_invalid(version: float) -> None:
    assert_codec_error(
        decode_error({"schemaVersion": version, "sessionId": "s"}), "schema_version_invalid"
    )


@pytest.mark.parametrize("version", ["3", "", None, True, False, [3], {"v": 3}])
def test_13_3_non_number_schema_version_raises_schema_version_invalid(version: object) -> None:
    assert_codec_error(
        decode_error({"schemaVersion": version, "sessionId": "s"}), "schema_version_invalid"
    )


def test_schema_version_is_checked_before_any_field() -> None:
    assert_codec_error(
        decode_error({"schemaVersion": 4, "sessionId": 5}), "schema_version_unsupported"
    )
    assert_codec_error(decode_error({"schemaVersion": -1}), "schema_version_invalid")
    assert_codec_error(decode_error({"schemaVersion": 1.5, "history": 1}), "schema_version_invalid")


def test_decode_bytes_reads_a_fractional_json_version_as_invalid() -> None:
    with codec_error("schema_version_invalid"):
        decode_bytes(b'{"schemaVersion":2.5,"sessionId":"s"}')
    with codec_error("schema_version_invalid"):
        decode_bytes(b'{"schemaVersion":15e-1,"sessionId":"s"}')
    # SPEC §2: a whole number in any spelling is that integer (test_codec_limits.py)
    assert decode_bytes(b'{"schemaVersion":3.0,"sessionId":"s"}').schema_version == 3
    assert decode_bytes(b'{"schemaVersion":1e0,"sessionId":"s"}').schema_version == 1


# --- seed §13.8 empty contents, one test per bullet ----------------------------------------


def test_13_8_tool_call_only_assistant_message_round_trips() -> None:
    message = Message("assistant", (), (ToolCall("call_1", "search", '{"q":"x"}'),))
    state = AgentState("s", messages=[Message("user", (TextPart("q"),)), message])
    data = encode_bytes(state)
    assert b'"contents":[]' in data
    back = decode_bytes(data)
    assert back == state
    assert back.messages[1].contents == ()
    assert encode_bytes(back) == data


def test_13_8_wholly_empty_message_fails_decode_with_message_empty_contents() -> None:
    for message in (
        {"role": "assistant", "contents": []},
        {"role": "assistant", "contents": [], "toolCalls": []},
        {"role": "user"},
    ):
        exc = decode_error({"sessionId": "s", "history": {"messages": [message]}})
        assert_codec_error(exc, "message_empty_contents")
        assert "history.messages[0]" in exc.message


def test_13_8_normal_message_with_contents_round_trips() -> None:
    message = Message("user", (TextPart("hello"), TextPart("world")))
    state = AgentState("s", messages=[message])
    back = decode_bytes(encode_bytes(state))
    assert back == state
    assert back.messages[0].contents == (TextPart("hello"), TextPart("world"))


def test_encode_refuses_a_wholly_empty_message_symmetrically() -> None:
    for state in (
        AgentState("s", messages=[Message("assistant")]),
        AgentState("s", episodic_memories=[Episode("e", "s", (Message("user"),))]),
    ):
        with pytest.raises(StateError) as info:
            encode(state)
        assert_codec_error(info.value, "message_empty_contents")
        with codec_error("message_empty_contents"):
            encode_bytes(state)


def test_message_without_contents_key_but_with_tool_calls_reads() -> None:
    doc = {
        "sessionId": "s",
        "history": {
            "messages": [
                {"role": "assistant", "toolCalls": [{"id": "a", "name": "n", "arguments": ""}]}
            ]
        },
    }
    assert decode(doc).messages == [Message("assistant", (), (ToolCall("a", "n", ""),))]


# --- encode ------------------------------------------------------------------------------


def test_full_document_decodes_to_full_state_and_encodes_back_exactly() -> None:
    assert decode(full_document()) == full_state()
    assert encode(full_state()) == full_document()
    assert list(encode(full_state())) == list(full_document())


def test_encode_bytes_is_canonical_compact_json() -> None:
    assert encode_bytes(AgentState.new("s")) == (
        b'{"schemaVersion":3,"sessionId":"s","history":{"messages":[],"episodicMemories":[]},'
        b'"usages":[],"metadata":{},"isRunning":false,"totalLoopCount":0,"currentLoopCount":0,'
        b'"currentLoopUsages":[],"systemReminders":{},"systemPromptHistory":[],"toolsHistory":[],'
        b'"planReviewApproved":false}'
    )


def test_encode_always_writes_version_3_first() -> None:
    for version in (0, 1, 2, 3, 99):
        obj = encode(AgentState("s", schema_version=version))
        assert next(iter(obj)) == "schemaVersion"
        assert obj["schemaVersion"] == CURRENT_VERSION == 3


def test_encode_omits_absent_optional_fields() -> None:
    obj = encode(
        AgentState(
            "s",
            messages=[Message("user", (TextPart("x"),))],
            usages=[ModelUsage(1, 2)],
        )
    )
    for key in (
        "plan",
        "activeSkills",
        "lastError",
        "pendingRunCheckpoint",
        "pendingApproval",
        "pendingPlanReview",
    ):
        assert key not in obj
    assert obj["history"]["messages"] == [
        {"role": "user", "contents": [{"type": "text", "text": "x"}]}
    ]
    assert obj["usages"] == [{"inputTokens": 1, "outputTokens": 2}]


def test_encode_writes_present_empty_optional_collections() -> None:
    obj = encode(AgentState("s", plan={}, active_skills=[], last_error=""))
    assert obj["plan"] == {}
    assert obj["activeSkills"] == []
    assert obj["lastError"] == ""


def test_encode_keeps_reminder_insertion_order() -> None:
    state = AgentState("s", system_reminders={"b": "1", "a": "2", "c": "3"})
    assert list(encode(state)["systemReminders"]) == ["b", "a", "c"]
    assert list(decode_bytes(encode_bytes(state)).system_reminders) == ["b", "a", "c"]


def test_encode_bytes_writes_utf8_not_escapes() -> None:
    data = encode_bytes(AgentState("会话-001", last_error="ошибка"))
    assert "会话-001".encode() in data
    assert "ошибка".encode() in data
    assert b"\\u" not in data


def test_encode_result_shares_nothing_mutable_with_the_state() -> None:
    state = full_state()
    obj = encode(state)
    obj["metadata"]["k"].append("new")
    obj["plan"]["steps"].append("b")
    obj["history"]["messages"][2]["metadata"]["ms"] = 0
    obj["toolsHistory"][0]["tools"][0]["name"] = "x"
    obj["pendingPlanReview"]["plan"]["steps"] = []
    assert state == full_state()


# --- persistence encoding and placeholders -----------------------------------------------


def test_placeholder_text_is_exact() -> None:
    assert media_placeholder(MediaPart("image", "image/png", "AAAA")) == TextPart(
        "[image omitted: image/png]"
    )
    assert media_placeholder(MediaPart("audio", "audio/wav", "AA")).text == (
        "[audio omitted: audio/wav]"
    )
    assert media_placeholder(MediaPart("file", "application/pdf", "A")).text == (
        "[file omitted: application/pdf]"
    )


def test_persistence_encoding_replaces_binary_media_by_placeholder() -> None:
    message = Message(
        "user",
        (
            TextPart("look"),
            MediaPart("image", "image/png", "iVBORw0KGgo="),
            MediaPart("file", "text/plain", ""),
        ),
    )
    state = AgentState("s", messages=[message])
    contents = encode(state)["history"]["messages"][0]["contents"]
    assert contents == [
        {"type": "text", "text": "look"},
        {"type": "text", "text": "[image omitted: image/png]"},
        {"type": "file", "mimeType": "text/plain", "data": ""},
    ]
    assert b"iVBORw0KGgo" not in encode_bytes(state)
    back = decode_bytes(encode_bytes(state))
    assert back.messages[0].contents == (
        TextPart("look"),
        TextPart("[image omitted: image/png]"),
        MediaPart("file", "text/plain", ""),
    )
    assert back == as_persisted(state)
    assert back != state


def test_persistence_false_keeps_binary_media() -> None:
    message = Message("user", (MediaPart("audio", "audio/wav", "UklGRg=="),))
    state = AgentState("s", messages=[message])
    contents = encode(state, persistence=False)["history"]["messages"][0]["contents"]
    assert contents == [{"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}]
    assert decode_bytes(encode_bytes(state, persistence=False)) == state


def test_placeholders_apply_inside_episodes() -> None:
    inner = Message("user", (MediaPart("image", "image/gif", "R0lG"),))
    state = AgentState("s", episodic_memories=[Episode("e", "sum", (inner,))])
    back = decode_bytes(encode_bytes(state))
    assert back.episodic_memories[0].messages[0].contents == (
        TextPart("[image omitted: image/gif]"),
    )
    assert back == as_persisted(state)


def test_as_persisted_without_media_is_the_state_at_version_3() -> None:
    state = dataclasses.replace(full_state(), schema_version=1)
    assert as_persisted(state) == dataclasses.replace(state, schema_version=3)


# --- field-specific type errors (table-driven) -------------------------------------------

_MISSING = object()

FIELD_TYPE_CASES: list[tuple[tuple[Any, ...], object, str]] = [
    (("sessionId",), 5, "session_id_type"),
    (("sessionId",), _MISSING, "session_id_type"),
    (("sessionId",), None, "session_id_type"),
    (("history",), [], "history_type"),
    (("history",), None, "history_type"),
    (("history", "messages"), {}, "messages_type"),
    (("history", "messages", 0), "hi", "message_type"),
    (("history", "messages", 0, "role"), "robot", "message_role_type"),
    (("history", "messages", 0, "role"), _MISSING, "message_role_type"),
    (("history", "messages", 0, "contents"), "hi", "message_contents_type"),
    (("history", "messages", 0, "contents", 0), "hi", "part_type"),
    (("history", "messages", 0, "contents", 0, "type"), "video", "part_type"),
    (("history", "messages", 0, "contents", 0, "text"), 5, "part_type"),
    (("history", "messages", 2, "contents", 0, "mimeType"), _MISSING, "part_type"),
    (("history", "messages", 2, "contents", 0, "data"), 1, "part_type"),
    (("history", "messages", 1, "toolCalls"), {}, "message_tool_calls_type"),
    (("history", "messages", 1, "toolCalls", 0), 1, "tool_call_type"),
    (("history", "messages", 1, "toolCalls", 0, "arguments"), {"q": 1}, "tool_call_type"),
    (("history", "messages", 1, "toolCalls", 0, "id"), _MISSING, "tool_call_type"),
    (("history", "messages", 2, "toolCallId"), 7, "message_tool_call_id_type"),
    (("history", "messages", 2, "metadata"), [], "message_metadata_type"),
    (("history", "episodicMemories"), {}, "episodic_memories_type"),
    (("history", "episodicMemories", 0), [], "episode_type"),
    (("history", "episodicMemories", 0, "summary"), None, "episode_type"),
    (("history", "episodicMemories", 0, "messages"), _MISSING, "episode_type"),
    (("history", "episodicMemories", 0, "messages", 0, "role"), 1, "message_role_type"),
    (("usages",), {}, "usages_type"),
    (("usages", 0), "u", "usage_type"),
    (("usages", 0, "inputTokens"), 1.5, "usage_type"),
    (("usages", 0, "outputTokens"), True, "usage_type"),
    (("usages", 0, "model"), 3, "usage_type"),
    (("metadata",), [], "metadata_type"),
    (("metadata",), None, "metadata_type"),
    (("metadata", "k"), math.nan, "metadata_type"),
    (("metadata", "k"), (1, 2), "metadata_type"),
    (("metadata", "k"), {1, 2}, "metadata_type"),
    (("plan",), "plan", "plan_type"),
    (("activeSkills",), "coding", "active_skills_type"),
    (("activeSkills", 0), 1, "active_skills_type"),
    (("isRunning",), 1, "is_running_type"),
    (("isRunning",), "true", "is_running_type"),
    (("isRunning",), None, "is_running_type"),
    (("totalLoopCount",), -1, "total_loop_count_type"),
    (("totalLoopCount",), 1.0, "total_loop_count_type"),
    (("currentLoopCount",), "3", "current_loop_count_type"),
    (("currentLoopCount",), False, "current_loop_count_type"),
    (("currentLoopUsages",), 5, "current_loop_usages_type"),
    (("currentLoopUsages", 0), 5, "usage_type"),
    (("lastError",), 5, "last_error_type"),
    (("systemReminders",), [], "system_reminders_type"),
    (("systemReminders", "z"), 5, "system_reminders_type"),
    (("systemPromptHistory",), {}, "system_prompt_history_type"),
    (("systemPromptHistory", 0), 0, "system_prompt_history_entry_type"),
    (("systemPromptHistory", 0, "loopCount"), "0", "system_prompt_history_entry_type"),
    (("systemPromptHistory", 0, "systemPrompt"), _MISSING, "system_prompt_history_entry_type"),
    (("toolsHistory",), {}, "tools_history_type"),
    (("toolsHistory", 0, "tools"), {}, "tools_history_entry_type"),
    (("toolsHistory", 0, "tools", 0), "search", "tools_history_entry_type"),
    (("toolsHistory", 0, "loopCount"), None, "tools_history_entry_type"),
    (("pendingRunCheckpoint",), 5, "pending_run_checkpoint_type"),
    (("pendingRunCheckpoint", "loopCount"), "2", "pending_run_checkpoint_type"),
    (("pendingRunCheckpoint", "checkpoint"), _MISSING, "pending_run_checkpoint_type"),
    (("pendingApproval",), [], "pending_approval_type"),
    (("pendingApproval", "toolCalls"), {}, "pending_approval_type"),
    (("pendingApproval", "toolCalls", 0, "id"), 5, "tool_call_type"),
    (("pendingPlanReview",), 5, "pending_plan_review_type"),
    (("pendingPlanReview", "plan"), [], "pending_plan_review_type"),
    (("pendingPlanReview", "plan"), _MISSING, "pending_plan_review_type"),
    (("planReviewApproved",), "yes", "plan_review_approved_type"),
    (("planReviewApproved",), None, "plan_review_approved_type"),
]


def _set(doc: Any, path: tuple[Any, ...], value: object) -> None:
    for key in path[:-1]:
        doc = doc[key]
    if value is _MISSING:
        del doc[path[-1]]
    else:
        doc[path[-1]] = value


@pytest.mark.parametrize(
    ("path", "value", "code"),
    FIELD_TYPE_CASES,
    ids=[
        f"{'.'.join(map(str, p))}={'absent' if v is _MISSING else repr(v)}"
        for p, v, _ in FIELD_TYPE_CASES
    ],
)
def test_wrong_type_field_yields_its_field_specific_code(
    path: tuple[Any, ...], value: object, code: str
) -> None:
    doc = full_document()
    _set(doc, path, value)
    exc = decode_error(doc)
    assert_codec_error(exc, code)
    assert exc.code in {c.value for c in ErrorCode}
    assert str(path[0]) in exc.message


def test_every_field_type_code_is_covered_by_the_table() -> None:
    covered = {code for _, _, code in FIELD_TYPE_CASES}
    all_type_codes = {c.value for c in ErrorCode if c.value.endswith("_type")}
    assert covered == all_type_codes


def test_error_message_names_the_json_path() -> None:
    doc = full_document()
    doc["history"]["messages"][2]["contents"][0]["mimeType"] = 1
    assert "history.messages[2].contents[0].mimeType" in decode_error(doc).message


# --- null, unknown fields, aliasing ------------------------------------------------------


def test_null_optional_fields_read_as_absent() -> None:
    doc = {
        "sessionId": "s",
        "history": {
            "messages": [
                {
                    "role": "user",
                    "contents": [{"type": "text", "text": "x"}],
                    "toolCalls": None,
                    "toolCallId": None,
                    "metadata": None,
                }
            ]
        },
        "usages": [{"inputTokens": 1, "outputTokens": 1, "model": None}],
        "plan": None,
        "activeSkills": None,
        "lastError": None,
        "pendingRunCheckpoint": None,
        "pendingApproval": None,
        "pendingPlanReview": None,
    }
    state = decode(doc)
    assert state == AgentState(
        "s",
        schema_version=0,
        messages=[Message("user", (TextPart("x"),))],
        usages=[ModelUsage(1, 1)],
    )


def test_unknown_fields_are_ignored_everywhere() -> None:
    doc = full_document()
    doc["futureField"] = {"x": 1}
    doc["history"]["future"] = 1
    doc["history"]["messages"][0]["extra"] = [1]
    doc["history"]["messages"][0]["contents"][0]["extra"] = 1
    doc["usages"][0]["cacheTokens"] = 5
    doc["pendingApproval"]["reason"] = "dangerous"
    assert decode(doc) == full_state()


def test_decode_does_not_alias_its_input() -> None:
    doc = full_document()
    state = decode(doc)
    doc["metadata"]["k"].append("x")
    doc["plan"]["steps"].append("x")
    doc["history"]["messages"][2]["metadata"]["ms"] = 0
    doc["systemReminders"]["new"] = "x"
    assert state == full_state()


def test_decode_does_not_modify_its_input() -> None:
    doc = full_document()
    decode(doc)
    assert doc == full_document()


# --- json_invalid and decode_bytes -------------------------------------------------------


@pytest.mark.parametrize("obj", [None, [], ["sessionId"], "s", 5, 1.5, True])
def test_non_object_document_is_json_invalid(obj: object) -> None:
    assert_codec_error(decode_error(obj), "json_invalid")


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"   ",
        b"not json",
        b"\xff\xfe{}",
        b'{"sessionId": "s"',
        b'{"sessionId": "s"} trailing',
        b'{"sessionId":"s","metadata":{"x":NaN}}',
        b'{"sessionId":"s","metadata":{"x":Infinity}}',
        b'{"sessionId":"s","totalLoopCount":-Infinity}',
        b"\xef\xbb\xbf" + b'{"sessionId":"s"}',
        b'{"sessionId":"\xed\xa0\x80"}',
        b"[" * 30 + b"]" * 30,  # (deeper than 64 levels: json_too_deep, test_codec_limits.py)
        b"[1, 2]",
        b"null",
        b'"a string"',
    ],
)
def test_decode_bytes_rejects_non_object_json(data: bytes) -> None:
    with pytest.raises(StateError) as info:
        decode_bytes(data)
    assert_codec_error(info.value, "json_invalid")


def test_json_invalid_carries_the_parse_error_as_cause() -> None:
    with pytest.raises(StateError) as info:
        decode_bytes(b"{")
    assert isinstance(info.value.cause, ValueError)
    assert info.value.__cause__ is info.value.cause


def test_huge_float_literal_is_a_type_error_not_a_crash() -> None:
    with codec_error("metadata_type"):
        decode_bytes(b'{"sessionId":"s","metadata":{"x":1e999}}')


def test_lone_surrogate_escapes_are_refused_on_both_sides() -> None:
    with codec_error("session_id_type"):
        decode_bytes(b'{"sessionId":"\\ud800"}')
    with codec_error("metadata_type"):
        decode_bytes(b'{"sessionId":"s","metadata":{"\\udc00":1}}')
    with codec_error("part_type"):
        decode_bytes(
            b'{"sessionId":"s","history":{"messages":[{"role":"user",'
            b'"contents":[{"type":"text","text":"a\\ud83d"}]}]}}'
        )
    with codec_error("session_id_type"):
        encode_bytes(AgentState("\ud800"))
    # A proper surrogate pair escape is one astral character.
    assert decode_bytes(b'{"sessionId":"\\ud83d\\ude00"}').session_id == "\U0001f600"


def test_deeply_nested_metadata_is_json_too_deep() -> None:
    nested: Any = []
    for _ in range(100_000):
        nested = [nested]
    assert_codec_error(
        decode_error({"sessionId": "s", "metadata": {"deep": nested}}), "json_too_deep"
    )


def test_decode_bytes_accepts_bytearray_and_memoryview() -> None:
    data = encode_bytes(full_state())
    assert decode_bytes(bytearray(data)) == full_state()  # type: ignore[arg-type]
    assert decode_bytes(memoryview(data)) == full_state()  # type: ignore[arg-type]


# --- encode refuses what decode would refuse ---------------------------------------------


@pytest.mark.parametrize(
    ("change", "code"),
    [
        ({"metadata": {"s": {1, 2}}}, "metadata_type"),
        ({"metadata": {"t": (1, 2)}}, "metadata_type"),
        ({"metadata": {"f": math.nan}}, "metadata_type"),
        ({"metadata": {1: "x"}}, "metadata_type"),
        ({"metadata": {"o": object()}}, "metadata_type"),
        ({"plan": {"x": math.inf}}, "plan_type"),
        ({"session_id": 5}, "session_id_type"),
        ({"is_running": 1}, "is_running_type"),
        ({"total_loop_count": -1}, "total_loop_count_type"),
        ({"current_loop_count": 1.0}, "current_loop_count_type"),
        ({"last_error": 5}, "last_error_type"),
        ({"active_skills": ["a", 1]}, "active_skills_type"),
        ({"active_skills": "abc"}, "active_skills_type"),
        ({"messages": ["hello"]}, "message_type"),
        ({"messages": None}, "messages_type"),
        ({"messages": [Message("robot", (TextPart("x"),))]}, "message_role_type"),  # type: ignore[arg-type]
        ({"messages": [Message("user", ("x",))]}, "part_type"),  # type: ignore[arg-type]
        ({"messages": [Message("user", (MediaPart("video", "v/mp4", "AA"),))]}, "part_type"),  # type: ignore[arg-type]
        (
            {"messages": [Message("tool", (TextPart("x"),), tool_call_id=5)]},
            "message_tool_call_id_type",
        ),  # type: ignore[arg-type]
        ({"messages": [Message("assistant", tool_calls=("c",))]}, "tool_call_type"),  # type: ignore[arg-type]
        (
            {"messages": [Message("assistant", tool_calls=(ToolCall("c", "n", None),))]},
            "tool_call_type",
        ),  # type: ignore[arg-type]
        ({"usages": [ModelUsage(1.5, 2)]}, "usage_type"),  # type: ignore[arg-type]
        ({"usages": [(1, 2)]}, "usage_type"),
        ({"system_reminders": {"a": 1}}, "system_reminders_type"),
        ({"system_reminders": [("a", "b")]}, "system_reminders_type"),
        (
            {"system_prompt_history": [SystemPromptEntry("0", "p")]},
            "system_prompt_history_entry_type",
        ),  # type: ignore[arg-type]
        ({"tools_history": [ToolsEntry(0, ({"f": math.nan},))]}, "tools_history_entry_type"),
        ({"pending_run_checkpoint": PendingRunCheckpoint("c", "1")}, "pending_run_checkpoint_type"),  # type: ignore[arg-type]
        ({"pending_run_checkpoint": "suspended"}, "pending_run_checkpoint_type"),
        ({"pending_approval": PendingApproval(("c",))}, "tool_call_type"),  # type: ignore[arg-type]
        ({"pending_plan_review": {"plan": {}}}, "pending_plan_review_type"),
        ({"plan_review_approved": "yes"}, "plan_review_approved_type"),
    ],
)
def test_encode_refuses_what_decode_would_refuse(change: dict[str, Any], code: str) -> None:
    state = AgentState("s")
    for name, value in change.items():
        setattr(state, name, value)
    with pytest.raises(StateError) as info:
        encode_bytes(state)
    assert_codec_error(info.value, code)


def test_encode_requires_an_agent_state() -> None:
    with pytest.raises(TypeError):
        encode({"sessionId": "s"})  # type: ignore[arg-type]


# --- peek_schema_version -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"schemaVersion":3,"sessionId":"s"}', 3),
        (b'{"schemaVersion":4}', 4),
        (b'{"schemaVersion":0}', 0),
        (b'{"schemaVersion":-1}', -1),
        (b'{"sessionId":"s"}', None),
        (b'{"schemaVersion":3.0}', 3),
        (b'{"schemaVersion":3.5}', None),
        (b'{"schemaVersion":true}', None),
        (b'{"schemaVersion":"3"}', None),
        (b'{"schemaVersion":null}', None),
        (b"[3]", None),
        (b"{", None),
        (b"", None),
        (b"\xff", None),
        (b'{"schemaVersion":NaN}', None),
    ],
)
def test_peek_schema_version(data: bytes, expected: int | None) -> None:
    assert peek_schema_version(data) == expected


def test_peek_schema_version_of_an_encoded_state() -> None:
    assert peek_schema_version(encode_bytes(AgentState("s", schema_version=1))) == 3


# --- properties --------------------------------------------------------------------------


def _has_binary_media(state: AgentState) -> bool:
    all_messages = [*state.messages, *(m for e in state.episodic_memories for m in e.messages)]
    return any(isinstance(p, MediaPart) and p.data for m in all_messages for p in m.contents)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(agent_states(paired=False))
def test_round_trip_property(state: AgentState) -> None:
    """SPEC §2: decode(encode(s)) is s with media placeholders, re-encoding is identical."""
    data = encode_bytes(state)
    back = decode_bytes(data)
    assert back == as_persisted(state)
    assert back.schema_version == 3
    assert encode_bytes(back) == data
    assert decode(encode(state)) == back
    assert encode_bytes(state) == data  # deterministic
    # Exact when there is no binary media; otherwise the placeholders differ.
    at_v3 = dataclasses.replace(state, schema_version=3)
    assert (back == at_v3) is not _has_binary_media(state)
    # The non-persistence encoding keeps media and is lossless.
    assert decode_bytes(encode_bytes(state, persistence=False)) == at_v3


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(agent_states(paired=False), st.sampled_from([0, 1, 2]))
def test_older_versions_read_into_v3_with_defaults(state: AgentState, version: int) -> None:
    doc = encode(state)
    doc.pop("pendingPlanReview", None)
    doc.pop("planReviewApproved", None)
    expected = dataclasses.replace(
        as_persisted(state),
        schema_version=version,
        pending_plan_review=None,
        plan_review_approved=False,
    )
    if version <= 1:
        doc.pop("pendingApproval", None)
        expected.pending_approval = None
    if version == 0:
        del doc["schemaVersion"]
    else:
        doc["schemaVersion"] = version
    back = decode_bytes(json.dumps(doc, ensure_ascii=False).encode())
    assert back == expected
    # Reading an old document and writing it back upgrades it to v3 losslessly.
    assert decode_bytes(encode_bytes(back)) == dataclasses.replace(expected, schema_version=3)


@settings(max_examples=200)
@given(st.binary(max_size=200))
def test_garbage_bytes_raise_only_codec_state_errors(data: bytes) -> None:
    try:
        decode_bytes(data)
    except StateError as exc:
        assert exc.layer == "codec"
        assert exc.retryability is Retryability.NEVER


_documents = st.dictionaries(
    st.sampled_from(
        [
            "schemaVersion",
            "sessionId",
            "history",
            "usages",
            "metadata",
            "plan",
            "activeSkills",
            "isRunning",
            "totalLoopCount",
            "currentLoopCount",
            "currentLoopUsages",
            "lastError",
            "systemReminders",
            "systemPromptHistory",
            "toolsHistory",
            "pendingRunCheckpoint",
            "pendingApproval",
            "pendingPlanReview",
            "planReviewApproved",
            "other",
        ]
    ),
    json_values(),
    max_size=8,
)


@settings(max_examples=100)
@given(st.one_of(_documents, json_values()))
def test_arbitrary_json_decodes_or_raises_a_codec_error(doc: Any) -> None:
    _check_decodes_or_codec_error(doc)


def _check_decodes_or_codec_error(doc: Any) -> None:
    text = json.dumps(doc, ensure_ascii=False)
    try:
        state = decode(doc)
    except StateError as exc:
        assert exc.layer == "codec"
        assert exc.retryability is Retryability.NEVER
        with pytest.raises(StateError) as info:
            decode_bytes(text.encode())
        assert info.value.code == exc.code
        return
    # Whatever decode reads, encode writes back, and it reads back the same.
    assert decode_bytes(encode_bytes(state)) == as_persisted(state)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(agent_states(paired=False), st.data())
def test_mutated_documents_decode_or_raise_a_codec_error(
    state: AgentState, data: st.DataObject
) -> None:
    doc = encode(state)
    path = data.draw(st.sampled_from(_paths(doc)))
    _set(doc, path, data.draw(st.one_of(st.just(_MISSING), json_values(4))))
    _check_decodes_or_codec_error(copy.deepcopy(doc))

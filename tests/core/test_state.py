"""The AgentState data model (SPEC §1)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from crashpoint.core import (
    AgentState,
    Episode,
    MediaPart,
    Message,
    ModelUsage,
    PendingApproval,
    PendingPlanReview,
    PendingRunCheckpoint,
    SystemPromptEntry,
    TextPart,
    ToolCall,
    ToolsEntry,
)
from hypothesis import given, settings
from strategies import agent_states


def _rich_state() -> AgentState:
    state = AgentState.new("sess-1", {"user": {"tags": ["a"]}})
    state.messages += [
        Message("user", (TextPart("hi"), MediaPart("image", "image/png", "iVBO"))),
        Message("assistant", tool_calls=(ToolCall("c1", "search", '{"q": 1}'),)),
        Message("tool", (TextPart("found"),), tool_call_id="c1", metadata={"ms": [1, 2]}),
    ]
    state.episodic_memories.append(Episode("e1", "summary", (state.messages[0],)))
    state.usages.append(ModelUsage(10, 20, "m"))
    state.plan = {"steps": [{"do": "x"}]}
    state.active_skills = ["coding"]
    state.system_reminders["r"] = "remember"
    state.system_prompt_history.append(SystemPromptEntry(0, "be kind"))
    state.tools_history.append(ToolsEntry(0, ({"name": "search"},)))
    state.pending_run_checkpoint = PendingRunCheckpoint("suspended", 3)
    state.pending_plan_review = PendingPlanReview({"steps": [1]})
    return state


def test_new_has_the_spec_defaults() -> None:
    state = AgentState.new("s")
    assert state.session_id == "s"
    assert state.schema_version == 3
    assert state.messages == []
    assert state.episodic_memories == []
    assert state.usages == []
    assert state.metadata == {}
    assert state.plan is None
    assert state.active_skills is None
    assert state.is_running is False
    assert state.total_loop_count == 0
    assert state.current_loop_count == 0
    assert state.current_loop_usages == []
    assert state.last_error is None
    assert state.system_reminders == {}
    assert state.system_prompt_history == []
    assert state.tools_history == []
    assert state.pending_run_checkpoint is None
    assert state.pending_approval is None
    assert state.pending_plan_review is None
    assert state.plan_review_approved is False
    assert state == AgentState("s")


def test_new_deep_copies_metadata() -> None:
    metadata = {"a": {"b": [1]}}
    state = AgentState.new("s", metadata)
    metadata["a"]["b"].append(2)
    assert state.metadata == {"a": {"b": [1]}}


def test_fields_are_exactly_the_spec_fields() -> None:
    names = [f.name for f in dataclasses.fields(AgentState)]
    assert names == [
        "session_id",
        "schema_version",
        "messages",
        "episodic_memories",
        "usages",
        "metadata",
        "plan",
        "active_skills",
        "is_running",
        "total_loop_count",
        "current_loop_count",
        "current_loop_usages",
        "last_error",
        "system_reminders",
        "system_prompt_history",
        "tools_history",
        "pending_run_checkpoint",
        "pending_approval",
        "pending_plan_review",
        "plan_review_approved",
    ]


def test_only_session_id_is_positional() -> None:
    with pytest.raises(TypeError):
        AgentState("s", 3)  # type: ignore[misc]


def test_state_has_slots_and_no_dict() -> None:
    state = AgentState("s")
    with pytest.raises(AttributeError):
        state.client = object()  # type: ignore[attr-defined]


def test_snapshot_equals_and_is_independent() -> None:
    state = _rich_state()
    snap = state.snapshot()
    assert snap == state
    assert snap is not state
    snap.messages.append(Message("user", (TextPart("more"),)))
    snap.metadata["user"]["tags"].append("b")
    assert snap.plan is not None
    snap.plan["steps"][0]["do"] = "y"
    assert snap.active_skills is not None
    snap.active_skills.append("x")
    snap.system_reminders["r2"] = "x"
    snap.usages.clear()
    snap.is_running = True
    assert state == _rich_state()


def test_snapshot_shares_frozen_values() -> None:
    state = _rich_state()
    snap = state.snapshot()
    assert all(a is b for a, b in zip(snap.messages, state.messages, strict=True))
    assert snap.messages is not state.messages
    assert snap.pending_run_checkpoint is state.pending_run_checkpoint
    assert snap.pending_plan_review is state.pending_plan_review
    assert snap.tools_history[0] is state.tools_history[0]


def test_values_are_frozen() -> None:
    message = Message("user", (TextPart("x"),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.role = "assistant"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        ToolCall("a", "b", "{}").id = "z"  # type: ignore[misc]


def test_message_coerces_sequences_to_tuples() -> None:
    message = Message("assistant", [TextPart("x")], [ToolCall("c", "n", "{}")])  # type: ignore[arg-type]
    assert message.contents == (TextPart("x"),)
    assert message.tool_calls == (ToolCall("c", "n", "{}"),)
    assert message == Message("assistant", (TextPart("x"),), (ToolCall("c", "n", "{}"),))
    assert Episode("e", "s", [message]).messages == (message,)  # type: ignore[arg-type]
    assert PendingApproval([ToolCall("c", "n", "{}")]).tool_calls == (  # type: ignore[arg-type]
        ToolCall("c", "n", "{}"),
    )


def test_message_metadata_is_a_read_only_private_copy() -> None:
    metadata = {"k": [1]}
    message = Message("user", (TextPart("x"),), metadata=metadata)
    metadata["k"].append(2)
    metadata["new"] = 1
    assert message.metadata == {"k": [1]}
    with pytest.raises(TypeError):
        message.metadata["k"] = 2  # type: ignore[index]
    assert message == Message("user", (TextPart("x"),), metadata={"k": [1]})
    assert message != Message("user", (TextPart("x"),), metadata={"k": [2]})


def test_plan_review_and_tools_are_read_only_copies() -> None:
    plan = {"a": 1}
    review = PendingPlanReview(plan)
    plan["a"] = 2
    assert review.plan == {"a": 1}
    with pytest.raises(TypeError):
        review.plan["a"] = 3  # type: ignore[index]
    tool = {"name": "t"}
    entry = ToolsEntry(1, (tool,))
    tool["name"] = "u"
    assert entry.tools == ({"name": "t"},)


def test_values_with_json_objects_pickle_and_deepcopy() -> None:
    state = _rich_state()
    assert pickle.loads(pickle.dumps(state)) == state
    assert copy.deepcopy(state) == state
    back = pickle.loads(pickle.dumps(state.messages[2]))
    assert back == state.messages[2]
    with pytest.raises(TypeError):
        back.metadata["ms"] = 0  # type: ignore[index]


def test_replace_keeps_metadata() -> None:
    message = Message("tool", (TextPart("x"),), tool_call_id="c", metadata={"a": 1})
    other = dataclasses.replace(message, tool_call_id="d")
    assert other.metadata == {"a": 1}
    assert other.tool_call_id == "d"


def test_text_part_type_is_text() -> None:
    assert TextPart("x").type == "text"
    assert MediaPart("audio", "audio/wav").data == ""


@settings(max_examples=30)
@given(agent_states(paired=False))
def test_snapshot_equals_any_state(state: AgentState) -> None:
    snap = state.snapshot()
    assert snap == state
    assert pickle.loads(pickle.dumps(state)) == state

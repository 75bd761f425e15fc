"""Tool-call pairing (SPEC §3; seed §13.6)."""

from __future__ import annotations

import pytest
from crashpoint.core import (
    AgentState,
    Message,
    PendingApproval,
    TextPart,
    ToolCall,
    state_is_paired,
    tool_calls_paired,
    truncate_to_paired,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import agent_states, messages, paired_histories


def user(text: str = "hi") -> Message:
    return Message("user", (TextPart(text),))


def say(text: str = "ok") -> Message:
    return Message("assistant", (TextPart(text),))


def call(*ids: str) -> Message:
    return Message("assistant", tool_calls=tuple(ToolCall(i, "tool", "{}") for i in ids))


def result(call_id: str | None) -> Message:
    return Message("tool", (TextPart("result"),), tool_call_id=call_id)


# --- seed §13.6, one test per bullet -----------------------------------------------------


def test_13_6_tool_call_with_matching_tool_message_is_paired() -> None:
    assert tool_calls_paired([user(), call("call_1"), result("call_1"), say()])


def test_13_6_tool_call_without_matching_tool_message_is_unpaired() -> None:
    assert not tool_calls_paired([user(), call("call_123")])
    assert not tool_calls_paired([user(), call("call_1", "call_2"), result("call_1")])


def test_13_6_orphan_tool_message_is_unpaired() -> None:
    assert not tool_calls_paired([user(), result("call_456")])
    assert not tool_calls_paired([user(), call("call_1"), result("call_2")])


def test_13_6_trailing_unanswered_call_is_paired_when_awaiting_approval() -> None:
    history = [user(), call("call_1")]
    assert tool_calls_paired(history, awaiting_approval=True)
    assert not tool_calls_paired(history)


def test_13_6_truncate_to_paired_cuts_the_tail_to_the_last_safe_point() -> None:
    safe = [user(), call("c1"), result("c1"), say()]
    history = [*safe, user("again"), call("c2", "c3"), result("c2")]
    assert truncate_to_paired(history) == [*safe, user("again")]
    assert truncate_to_paired(safe) == safe
    assert truncate_to_paired([result("x")]) == []


# --- the trailing-only approval rule (SPEC §3) --------------------------------------------


def test_unanswered_call_in_an_earlier_batch_is_unpaired_even_awaiting_approval() -> None:
    history = [user(), call("c1"), say(), call("c2")]
    assert not tool_calls_paired(history, awaiting_approval=True)
    history = [user(), call("c1", "c2"), result("c1"), call("c3")]
    assert not tool_calls_paired(history, awaiting_approval=True)


def test_frozen_batch_may_be_partly_answered() -> None:
    history = [user(), call("c1", "c2", "c3"), result("c2")]
    assert tool_calls_paired(history, awaiting_approval=True)
    assert not tool_calls_paired(history)


def test_only_tool_messages_may_follow_the_frozen_batch() -> None:
    assert not tool_calls_paired([user(), call("c1"), say()], awaiting_approval=True)
    assert not tool_calls_paired([user(), call("c1"), user()], awaiting_approval=True)
    assert not tool_calls_paired(
        [user(), call("c1", "c2"), result("c1"), say()], awaiting_approval=True
    )


def test_awaiting_approval_with_everything_answered_is_paired() -> None:
    assert tool_calls_paired([user(), call("c1"), result("c1")], awaiting_approval=True)
    assert tool_calls_paired([], awaiting_approval=True)


# --- further cases -----------------------------------------------------------------------


def test_empty_history_is_paired() -> None:
    assert tool_calls_paired([])
    assert truncate_to_paired([]) == []


def test_result_before_its_call_is_unpaired() -> None:
    assert not tool_calls_paired([user(), result("c1"), call("c1")])


def test_second_answer_to_a_call_is_unpaired() -> None:
    assert not tool_calls_paired([user(), call("c1"), result("c1"), result("c1")])


def test_tool_message_without_call_id_is_unpaired() -> None:
    assert not tool_calls_paired([user(), call("c1"), result(None)])


def test_reused_tool_call_id_is_unpaired() -> None:
    assert not tool_calls_paired([call("c1"), result("c1"), call("c1"), result("c1")])
    assert not tool_calls_paired([call("c1", "c1"), result("c1")])


def test_results_may_arrive_in_any_order() -> None:
    assert tool_calls_paired([call("a", "b", "c"), result("c"), result("a"), result("b")])


def test_tool_calls_on_non_assistant_messages_are_ignored() -> None:
    odd = Message("user", (TextPart("x"),), tool_calls=(ToolCall("u1", "t", "{}"),))
    assert tool_calls_paired([odd])
    assert not tool_calls_paired([odd, result("u1")])


def test_truncate_does_not_modify_its_argument() -> None:
    history = [user(), call("c1")]
    out = truncate_to_paired(history)
    assert out == [user()]
    assert history == [user(), call("c1")]
    assert out is not history


def test_truncate_ignores_approval_and_drops_the_frozen_batch() -> None:
    assert truncate_to_paired([user(), call("c1", "c2"), result("c1")]) == [user()]


def test_state_is_paired_uses_pending_approval() -> None:
    state = AgentState("s", messages=[user(), call("c1")])
    assert not state_is_paired(state)
    state.pending_approval = PendingApproval((ToolCall("c1", "tool", "{}"),))
    assert state_is_paired(state)
    state.messages.append(say())
    assert not state_is_paired(state)


@pytest.mark.parametrize("awaiting", [False, True])
def test_a_tuple_of_messages_works_too(awaiting: bool) -> None:
    assert tool_calls_paired((user(), call("c"), result("c")), awaiting_approval=awaiting)


# --- properties --------------------------------------------------------------------------


@settings(max_examples=100)
@given(paired_histories(frozen_batch=False))
def test_generated_histories_are_paired(generated: tuple[list[Message], None]) -> None:
    history, approval = generated
    assert approval is None
    assert tool_calls_paired(history)
    assert tool_calls_paired(history, awaiting_approval=True)
    assert truncate_to_paired(history) == history


@settings(max_examples=100)
@given(paired_histories(frozen_batch=True))
def test_frozen_batch_is_paired_only_when_awaiting_approval(
    generated: tuple[list[Message], PendingApproval],
) -> None:
    history, approval = generated
    assert approval is not None
    assert tool_calls_paired(history, awaiting_approval=True)
    assert not tool_calls_paired(history)
    # Anything but a tool message after the frozen batch breaks it.
    assert not tool_calls_paired([*history, say()], awaiting_approval=True)


@settings(max_examples=100)
@given(st.lists(messages(), max_size=8))
def test_truncate_returns_the_longest_paired_prefix(history: list[Message]) -> None:
    out = truncate_to_paired(history)
    assert out == history[: len(out)]
    assert tool_calls_paired(out)
    for longer in range(len(out) + 1, len(history) + 1):
        assert not tool_calls_paired(history[:longer])


@settings(max_examples=100)
@given(paired_histories(frozen_batch=False), paired_histories(frozen_batch=True))
def test_an_earlier_frozen_batch_is_never_allowed(
    first: tuple[list[Message], PendingApproval | None],
    second: tuple[list[Message], PendingApproval | None],
) -> None:
    # Ids of the two histories may clash; rename the second's to keep them unique.
    frozen, _ = second
    renamed = [_prefix_ids(m, "second:") for m in frozen]
    frozen_then_more = [*renamed, user("later"), *first[0]]
    assert not tool_calls_paired(frozen_then_more, awaiting_approval=True)


def _prefix_ids(message: Message, prefix: str) -> Message:
    calls = tuple(ToolCall(prefix + c.id, c.name, c.arguments) for c in message.tool_calls)
    call_id = None if message.tool_call_id is None else prefix + message.tool_call_id
    return Message(message.role, message.contents, calls, call_id, message.metadata)


@settings(max_examples=50)
@given(agent_states())
def test_generated_states_are_paired(state: AgentState) -> None:
    assert state_is_paired(state)

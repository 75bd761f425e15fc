"""A frozen batch is exact (SPEC §3, §7; issue 10): ``pendingApproval.toolCalls`` must be
exactly the unanswered calls of the last assistant message (same ids, same order), or save
refuses ``history_unpaired``; approving runs only the unanswered calls, never one whose
result is already in the history."""

from __future__ import annotations

import pytest
from crashpoint.core import (
    AgentRuntime,
    AgentState,
    ErrorCode,
    FileStateStorage,
    MemoryStateStorage,
    Message,
    PendingApproval,
    RunStatus,
    ScriptedModel,
    ScriptedTools,
    StateError,
    TextPart,
    ToolCall,
    encode_bytes,
    state_is_paired,
    tool_calls_paired,
    unanswered_calls,
)
from crashpoint.faultfs import MemoryFileSystem, makedirs, write_bytes
from crashpoint.scenarios.kinds.agent.targets import TARGETS

A, B, C = (ToolCall(i, f"tool_{i}", "{}") for i in ("a", "b", "c"))
BASE = "/data/sessions"


def user(text: str = "go") -> Message:
    return Message("user", (TextPart(text),))


def batch(*calls: ToolCall) -> Message:
    return Message("assistant", (), tool_calls=calls)


def result(call: ToolCall) -> Message:
    return Message("tool", (TextPart(f"{call.id} done"),), tool_call_id=call.id)


def frozen(messages: list[Message], *pending: ToolCall) -> AgentState:
    return AgentState(
        "s1", messages=messages, pending_approval=PendingApproval(pending), is_running=True
    )


@pytest.mark.parametrize(
    ("messages", "pending", "exact"),
    [
        ([user(), batch(A, B)], (A, B), True),
        ([user(), batch(A, B), result(A)], (B,), True),
        ([user(), batch(A, B, C), result(B)], (A, C), True),
        ([user(), batch(A, B), result(A)], (A, B), False),  # a is answered already
        ([user(), batch(A, B)], (B, A), False),  # order
        ([user(), batch(A, B)], (A,), False),  # b missing
        ([user(), batch(A)], (A, B), False),  # b is not in the batch
        ([user(), batch(A), result(A)], (), True),
        ([user()], (), True),
        ([user()], (A,), False),
    ],
)
def test_pending_approval_must_be_exactly_the_unanswered_calls(
    messages: list[Message], pending: tuple[ToolCall, ...], exact: bool
) -> None:
    assert state_is_paired(frozen(messages, *pending)) is exact
    assert tool_calls_paired(messages, awaiting_approval=True)


def test_unanswered_calls_are_those_of_the_last_batch_in_order() -> None:
    assert unanswered_calls([user(), batch(A, B, C), result(B)]) == (A, C)
    assert unanswered_calls([user(), batch(A), result(A)]) == ()
    assert unanswered_calls([]) == ()


@pytest.mark.parametrize("storage", ["file", "memory"])
def test_save_refuses_a_pending_approval_that_does_not_match(storage: str) -> None:
    st = FileStateStorage(MemoryFileSystem(), BASE) if storage == "file" else MemoryStateStorage()
    with pytest.raises(StateError) as exc:
        st.save(frozen([user(), batch(A, B), result(A)], A, B))
    assert exc.value.code == ErrorCode.HISTORY_UNPAIRED
    assert not st.exists("s1")


def test_load_treats_a_non_matching_pending_approval_as_unpaired() -> None:
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    good = frozen([user(), batch(A, B)], A, B)
    write_bytes(fs, f"{BASE}/s1.json.bak", encode_bytes(good))
    write_bytes(fs, f"{BASE}/s1.json", encode_bytes(frozen([user(), batch(A, B), result(A)], A, B)))
    assert FileStateStorage(fs, BASE).load("s1") == good


def test_approve_never_reruns_a_call_whose_result_is_in_the_history() -> None:
    # The report: a frozen batch [a, b] with a's result on disk and pendingApproval [a, b]
    # (written by the seed's looser rule); approve ran a twice, then every save failed.
    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    on_disk = frozen([user(), batch(A, B), result(A)], A, B)
    write_bytes(fs, f"{BASE}/s1.json", encode_bytes(on_disk))
    storage = TARGETS["seed"](fs, BASE)
    tools = ScriptedTools(dangerous=("tool_a", "tool_b"))
    model = ScriptedModel([[A, B], "finished"])
    outcome = AgentRuntime(storage, "s1", model, tools).approve()
    assert tools.executions["a"] == 0
    assert tools.executions["b"] == 1
    assert outcome.status is RunStatus.COMPLETE
    final = storage.load("s1")
    assert [m.tool_call_id for m in final.messages if m.role == "tool"] == ["a", "b"]
    assert state_is_paired(final) and not final.is_running


def test_approve_of_an_exact_batch_runs_each_unanswered_call_once() -> None:
    storage = MemoryStateStorage()
    tools = ScriptedTools(dangerous=("tool_b",))
    model = ScriptedModel([[A, B], "finished"])
    runtime = AgentRuntime(storage, "s1", model, tools)
    assert runtime.run("go").status is RunStatus.AWAITING_APPROVAL
    assert runtime.approve().status is RunStatus.COMPLETE
    assert dict(tools.executions) == {"a": 1, "b": 1}

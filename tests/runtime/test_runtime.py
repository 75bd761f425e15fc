"""The agent-run lifecycle (SPEC §7; seed §9, §10): checkpoints, approval, suspend,
cancel, errors, the terminal path, resume, and the seed's checklist §13.7."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from crashpoint.core import (
    AgentRuntime,
    AgentState,
    Checkpoint,
    ErrorCode,
    EventKind,
    FileStateStorage,
    MemoryStateStorage,
    Message,
    ModelChunk,
    ModelClient,
    ModelError,
    Reply,
    Retryability,
    RunConflict,
    RunEvent,
    RunStatus,
    ScriptedModel,
    ScriptedTools,
    StateError,
    StateStorage,
    ToolCall,
    ToolExecutor,
    encode_bytes,
    state_is_paired,
    tool_calls_paired,
)
from crashpoint.faultfs import MemoryFileSystem

SID = "s1"
BASE = "/data/sessions"
KEY = "sk-test-secret-0042"
A = ToolCall("call_a", "read_file", '{"path": "notes.txt"}')
B = ToolCall("call_b", "search", '{"q": "x"}')
C = ToolCall("call_c", "summarize", "{}")
RM = ToolCall("call_rm", "delete_files", '{"glob": "*.tmp"}')


class SpyStorage:
    """A MemoryStateStorage that keeps a copy of every state saved (as it loads) and
    can fail the next saves or marks with state_save_failed."""

    def __init__(self, inner: StateStorage | None = None) -> None:
        self.inner: StateStorage = inner if inner is not None else MemoryStateStorage()
        self.saved: list[AgentState] = []
        self.calls: list[str] = []
        self.fail_saves = 0
        self.fail_marks = 0

    def _fail(self, what: str) -> StateError:
        return StateError(
            ErrorCode.STATE_SAVE_FAILED, f"{what}: disk full", retryability=Retryability.CONDITIONAL
        )

    def save(self, state: AgentState) -> None:
        self.calls.append("save")
        if self.fail_saves:
            self.fail_saves -= 1
            raise self._fail("save")
        self.inner.save(state)
        self.saved.append(state.snapshot())

    def mark_not_resumable(self, session_id: str) -> None:
        self.calls.append("mark")
        if self.fail_marks:
            self.fail_marks -= 1
            raise self._fail("mark_not_resumable")
        self.inner.mark_not_resumable(session_id)

    def load(self, session_id: str) -> AgentState:
        self.calls.append("load")
        return self.inner.load(session_id)

    def load_or_create(self, session_id: str, initial_metadata: Any = None) -> AgentState:
        return self.inner.load_or_create(session_id, initial_metadata)

    def delete(self, session_id: str) -> None:
        self.inner.delete(session_id)

    def exists(self, session_id: str) -> bool:
        return self.inner.exists(session_id)


class Harness:
    """A runtime over a spy storage with scripted fakes, recording every event."""

    def __init__(
        self,
        script: Sequence[Any],
        *,
        storage: SpyStorage | None = None,
        dangerous: Sequence[str] = (),
        interrupt: Sequence[str] = (),
    ) -> None:
        self.storage = storage if storage is not None else SpyStorage()
        self.journal: list[str] = []
        self.model = ScriptedModel(script, chunk_size=4, api_key=KEY, journal=self.journal)
        self.tools = ScriptedTools(dangerous=dangerous, interrupt=interrupt, journal=self.journal)
        self.events: list[RunEvent] = []
        self.rt = AgentRuntime(
            self.storage, SID, self.model, self.tools, api_key=KEY, listeners=[self.events.append]
        )

    def when(self, kind: EventKind, do: str, *, index: int = 0, call: int = 0) -> None:
        fired = [False]

        def listener(e: RunEvent) -> None:
            if fired[0] or e.kind is not kind or e.index != index:
                return
            if call and self.rt.model_calls != call:
                return
            fired[0] = True
            getattr(self.rt, do)()

        self.rt.add_listener(listener)

    def saves(self) -> list[str]:
        return [e.name for e in self.events if e.kind is EventKind.SAVED]

    def fresh(self, script: Sequence[Any] | None = None, **kw: Any) -> Harness:
        """A new runtime over the same storage: a restarted process."""
        script = script if script is not None else self.model.script
        return Harness(script, storage=self.storage, **kw)


def roles(state: AgentState) -> list[str]:
    return [m.role for m in state.messages]


def results_in(state: AgentState) -> list[str]:
    return [m.tool_call_id for m in state.messages if m.tool_call_id is not None]


# --- checkpoints (SPEC §7, seed §9.4) ------------------------------------------------------
def test_plain_reply_saves_after_user_input_then_after_assistant_turn_then_complete() -> None:
    h = Harness(["Hello there, friend."])
    out = h.rt.run("hi")
    assert out.status is RunStatus.COMPLETE and out.checkpoint is Checkpoint.COMPLETE
    assert h.saves() == ["after_user_input", "after_assistant_turn", "complete"]
    first, turn, done = h.storage.saved
    assert first.is_running and roles(first) == ["user"]
    assert turn.is_running and roles(turn) == ["user", "assistant"]
    assert not done.is_running and done.pending_run_checkpoint is None
    assert done.messages[-1].contents[0].text == "Hello there, friend."  # type: ignore[union-attr]
    assert h.model.calls == 1 and h.model.completed == 1


def test_is_running_is_set_before_the_after_user_input_save() -> None:
    """The seed's pitfall 5 (§9.4): the save reflects the run about to start."""
    h = Harness([ModelError("boom")])
    h.rt.run("go")
    assert h.saves()[0] == "after_user_input"
    assert h.storage.saved[0].is_running is True


def test_two_tool_batches_are_each_saved_once_paired() -> None:
    h = Harness([[A, B], [C], "done"])
    out = h.rt.run("work")
    assert out.status is RunStatus.COMPLETE
    assert h.saves() == [
        "after_user_input",
        "after_tool_batch",
        "after_tool_batch",
        "after_assistant_turn",
        "complete",
    ]
    assert results_in(h.storage.saved[1]) == ["call_a", "call_b"]
    assert results_in(h.storage.saved[2]) == ["call_a", "call_b", "call_c"]
    assert h.journal == ["model", "tool:call_a", "tool:call_b", "model", "tool:call_c", "model"]
    final = h.storage.load(SID)
    assert final.total_loop_count == 3 and len(final.usages) == 3


def test_no_saved_state_ever_has_an_unpaired_history() -> None:
    """An assistant message with tool calls is never saved before its batch is paired,
    except frozen for approval (SPEC §7)."""
    cases: list[tuple[list[Any], dict[str, Any]]] = [
        ([[A, B], [C], "done"], {}),
        ([[RM], "done"], {"dangerous": ["delete_files"]}),
        ([[A, B], "done"], {"interrupt": ["call_b"]}),
    ]
    for script, kw in cases:
        h = Harness(script, **kw)
        h.when(EventKind.TOOL_DONE, "request_suspend")
        out = h.rt.run("go")
        if out.status is RunStatus.AWAITING_APPROVAL:
            h.rt.approve()
        else:
            h.rt.resume()
        assert h.storage.saved
        for state in h.storage.saved:
            assert state_is_paired(state)
            assert tool_calls_paired(state.messages) or state.pending_approval is not None


def test_a_failed_autosave_is_reported_and_the_run_goes_on() -> None:
    h = Harness([[A], "done"])
    h.storage.fail_saves = 1  # after_user_input
    out = h.rt.run("go")
    assert out.status is RunStatus.COMPLETE
    assert [e.code for e in out.save_errors] == ["state_save_failed"]
    assert "mark" not in h.storage.calls
    assert not h.storage.load(SID).is_running


def test_state_holds_no_runtime_handle_and_the_key_reaches_no_file() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    h = Harness([[A], "done"], storage=SpyStorage(FileStateStorage(fs, BASE)))
    h.rt.run("go")
    assert h.model.calls == 2  # the key reached the client (it answers 401 otherwise)
    for _, data in fs.crash_state().files:
        assert KEY.encode() not in data
    assert KEY not in repr(h.rt)
    state = h.rt.state
    assert state is not None and KEY.encode() not in encode_bytes(state)
    assert set(AgentState.__dataclass_fields__) >= {"session_id", "messages"}
    assert not any(
        isinstance(getattr(state, name), (ScriptedModel, ScriptedTools, AgentRuntime))
        for name in AgentState.__dataclass_fields__
    )


def test_the_client_is_called_with_the_key_and_a_wrong_key_is_an_error() -> None:
    storage = SpyStorage()
    rt = AgentRuntime(storage, SID, ScriptedModel(["hi"], api_key=KEY), ScriptedTools())
    out = rt.run("go")
    assert out.status is RunStatus.ERROR and out.error is not None and "401" in out.error
    assert KEY not in out.error


# --- approval (seed §8.2) ------------------------------------------------------------------
def test_dangerous_batch_is_frozen_with_pending_approval_then_approved() -> None:
    h = Harness([[RM], "Deleted."], dangerous=["delete_files"])
    out = h.rt.run("clean up")
    assert out.status is RunStatus.AWAITING_APPROVAL
    frozen = h.storage.saved[-1]
    assert h.saves() == ["after_user_input", "awaiting_approval"]
    assert frozen.is_running and frozen.pending_approval is not None
    assert frozen.pending_approval.tool_calls == (RM,)
    assert frozen.messages[-1].tool_calls == (RM,) and h.tools.executions["call_rm"] == 0
    out = h.rt.approve()
    assert out.status is RunStatus.COMPLETE
    assert h.tools.executions["call_rm"] == 1
    assert h.saves()[2:] == ["after_tool_batch", "after_assistant_turn", "complete"]
    assert h.storage.saved[2].pending_approval is None


def test_a_frozen_batch_survives_a_restart_and_is_approved_without_a_model_call_first() -> None:
    h = Harness([[RM], "Deleted."], dangerous=["delete_files"])
    h.rt.run("clean up")
    again = h.fresh(dangerous=["delete_files"])
    out = again.rt.resume()
    assert out.status is RunStatus.AWAITING_APPROVAL and again.model.calls == 0
    out = again.rt.approve()
    assert out.status is RunStatus.COMPLETE
    assert again.journal == ["tool:call_rm", "model"]


def test_deny_answers_the_frozen_batch_as_not_executed() -> None:
    h = Harness([[RM], "Fine, I won't."], dangerous=["delete_files"])
    h.rt.run("clean up")
    out = h.rt.deny()
    assert out.status is RunStatus.COMPLETE
    assert h.tools.executions["call_rm"] == 0
    answer = h.storage.load(SID).messages[2]
    assert answer.tool_call_id == "call_rm"
    assert answer.metadata == {"notExecuted": "denied by the user"}


def test_approve_without_a_frozen_batch_is_a_conflict() -> None:
    h = Harness(["hi"])
    h.rt.run("go")
    with pytest.raises(RunConflict):
        h.rt.approve()


# --- suspend (seed §9.2) -------------------------------------------------------------------
def test_suspend_during_a_stream_abandons_it_and_saves_at_the_last_safe_checkpoint() -> None:
    h = Harness([[A], "a long answer in many chunks"])
    h.when(EventKind.CHUNK, "request_suspend", index=1, call=2)
    out = h.rt.run("go")
    assert out.status is RunStatus.SUSPENDED
    assert h.model.abandoned == 1 and h.model.completed == 1
    assert any(e.kind is EventKind.STREAM_ABANDONED for e in h.events)
    suspended = h.storage.saved[-1]
    assert suspended.is_running
    assert suspended.pending_run_checkpoint is not None
    assert suspended.pending_run_checkpoint.checkpoint == "after_tool_batch"
    assert roles(suspended) == ["user", "assistant", "tool"]  # the partial reply dropped


def test_suspend_during_a_tool_batch_waits_for_the_batch_to_pair() -> None:
    h = Harness([[A, B, C], "done"])
    h.when(EventKind.TOOL_DONE, "request_suspend", index=0)
    out = h.rt.run("go")
    assert out.status is RunStatus.SUSPENDED
    assert dict(h.tools.executions) == {"call_a": 1, "call_b": 1, "call_c": 1}
    assert h.saves() == ["after_user_input", "after_tool_batch", "suspended"]
    assert results_in(h.storage.saved[-1]) == ["call_a", "call_b", "call_c"]


def test_suspend_falls_back_to_truncate_to_paired_when_a_tool_cannot_finish() -> None:
    h = Harness([[A, B], "done"], interrupt=["call_b"])
    h.when(EventKind.TOOL_DONE, "request_suspend", index=0)
    out = h.rt.run("go")
    assert out.status is RunStatus.SUSPENDED
    suspended = h.storage.saved[-1]
    assert roles(suspended) == ["user"]
    assert suspended.pending_run_checkpoint is not None
    assert suspended.pending_run_checkpoint.checkpoint == "after_user_input"
    # resumed: the model asks again; the unpersisted call runs again (at-least-once)
    out = h.fresh().rt.resume()
    assert out.status is RunStatus.COMPLETE


def test_a_tool_that_cannot_finish_without_a_suspend_ends_the_run_in_error() -> None:
    h = Harness([[A, B], "done"], interrupt=["call_b"])
    out = h.rt.run("go")
    assert out.status is RunStatus.ERROR and out.error is not None and "call_b" in out.error
    final = h.storage.load(SID)
    assert roles(final) == ["user"] and not final.is_running


def test_suspend_outside_a_run_does_nothing() -> None:
    h = Harness(["hi"])
    h.rt.request_suspend()
    assert h.rt.run("go").status is RunStatus.COMPLETE


# --- cancel, error ------------------------------------------------------------------------
def test_cancel_during_a_batch_answers_the_rest_as_not_executed_and_is_final() -> None:
    h = Harness([[A, B], "never"])
    h.when(EventKind.TOOL_DONE, "cancel", index=0)
    out = h.rt.run("go")
    assert out.status is RunStatus.CANCELLED
    assert h.saves() == ["after_user_input", "cancelled"]
    assert dict(h.tools.executions) == {"call_a": 1}
    final = h.storage.load(SID)
    assert not final.is_running and final.pending_run_checkpoint is None
    assert final.messages[-1].metadata == {"notExecuted": "cancelled"}
    assert h.model.calls == 1


def test_cancel_during_a_stream_abandons_it() -> None:
    h = Harness(["a long reply in many chunks"])
    h.when(EventKind.CHUNK, "cancel", index=0)
    out = h.rt.run("go")
    assert out.status is RunStatus.CANCELLED and h.model.abandoned == 1
    assert roles(h.storage.load(SID)) == ["user"]


def test_cancel_outside_a_run_ends_a_suspended_session() -> None:
    h = Harness([[A], "done"])
    h.when(EventKind.TOOL_DONE, "request_suspend")
    h.rt.run("go")
    again = h.fresh()
    out = again.rt.cancel()
    assert out is not None and out.status is RunStatus.CANCELLED
    assert not h.storage.load(SID).is_running
    assert again.rt.resume().status is RunStatus.NOT_RESUMABLE


def test_cancel_outside_a_run_answers_a_frozen_batch() -> None:
    h = Harness([[RM], "x"], dangerous=["delete_files"])
    h.rt.run("go")
    out = h.rt.cancel()
    assert out is not None and out.status is RunStatus.CANCELLED
    final = h.storage.load(SID)
    assert final.pending_approval is None and state_is_paired(final)
    assert h.tools.executions["call_rm"] == 0


def test_model_error_ends_in_error_with_last_error() -> None:
    h = Harness([[A], ModelError("503 service unavailable")])
    out = h.rt.run("go")
    assert out.status is RunStatus.ERROR
    final = h.storage.load(SID)
    assert not final.is_running and final.last_error is not None
    assert "503" in final.last_error
    assert results_in(final) == ["call_a"]
    assert h.saves() == ["after_user_input", "after_tool_batch", "error"]


def test_a_listener_exception_is_not_a_model_error() -> None:
    h = Harness(["hello"])

    def boom(e: RunEvent) -> None:
        if e.kind is EventKind.CHUNK:
            raise KeyError("listener bug")

    h.rt.add_listener(boom)
    with pytest.raises(KeyError):
        h.rt.run("go")


# --- the terminal path (seed §10) ----------------------------------------------------------
def test_failed_terminal_save_is_followed_by_mark_not_resumable() -> None:
    h = Harness(["done"])
    h.rt.add_listener(
        lambda e: (
            setattr(h.storage, "fail_saves", 1)
            if e.kind is EventKind.SAVE and e.name == "complete"
            else None
        )
    )
    out = h.rt.run("go")
    assert out.status is RunStatus.COMPLETE
    assert [e.code for e in out.save_errors] == ["state_save_failed"]
    assert h.storage.calls[-2:] == ["save", "mark"]
    loaded = h.storage.load(SID)
    assert not loaded.is_running and loaded.pending_run_checkpoint is None
    assert roles(loaded) == ["user", "assistant"]  # the last snapshot, condemned


def test_terminal_save_and_mark_both_failing_raise() -> None:
    h = Harness(["done"])
    h.rt.add_listener(
        lambda e: (
            setattr(h.storage, "fail_saves", 1)
            if e.kind is EventKind.SAVE and e.name == "complete"
            else None
        )
    )
    h.storage.fail_marks = 1
    with pytest.raises(StateError) as err:
        h.rt.run("go")
    assert err.value.code == "state_save_failed"
    assert isinstance(err.value.__context__, StateError)  # the save's failure
    assert any(e.kind is EventKind.MARK_FAILED for e in h.events)
    assert not any(e.kind is EventKind.TERMINAL for e in h.events)


# --- resume (seed §9.3) ---------------------------------------------------------------------
def test_resume_of_a_state_that_is_not_running_does_nothing() -> None:
    h = Harness(["done"])
    h.rt.run("go")
    again = h.fresh()
    assert again.rt.resume().status is RunStatus.NOT_RESUMABLE
    assert again.model.calls == 0 and not again.journal


def test_resume_after_the_final_reply_completes_without_a_model_call() -> None:
    """The run finished but its terminal save did not land: nothing is left to ask."""
    h = Harness(["done"])
    h.rt.add_listener(
        lambda e: (
            setattr(h.storage, "fail_saves", 1)
            if e.kind is EventKind.SAVE and e.name == "complete"
            else None
        )
    )
    h.storage.fail_marks = 1
    with pytest.raises(StateError):
        h.rt.run("go")
    again = h.fresh()
    out = again.rt.resume()
    assert out.status is RunStatus.COMPLETE and again.model.calls == 0
    assert not h.storage.load(SID).is_running


def test_resume_of_an_unknown_session_raises_not_found() -> None:
    h = Harness(["x"])
    with pytest.raises(StateError) as err:
        h.rt.resume()
    assert err.value.code == "session_not_found"


def test_run_while_running_is_a_conflict_and_reentry_is_refused() -> None:
    h = Harness([[A], "done"])
    h.when(EventKind.TOOL_DONE, "request_suspend")
    h.rt.run("go")
    with pytest.raises(RunConflict):
        h.rt.run("again")
    seen: list[BaseException] = []

    def reenter(e: RunEvent) -> None:
        if e.kind is EventKind.MODEL_CALL and not seen:
            try:
                h.rt.resume()
            except RunConflict as exc:
                seen.append(exc)

    h.rt.add_listener(reenter)
    h.rt.resume()
    assert seen


def test_a_second_run_after_complete_continues_the_history() -> None:
    h = Harness(["first answer", "second answer"])
    h.rt.run("one")
    out = h.rt.run("two")
    assert out.status is RunStatus.COMPLETE
    assert roles(h.storage.load(SID)) == ["user", "assistant", "user", "assistant"]


def test_invalid_session_id_is_refused_at_construction() -> None:
    with pytest.raises(StateError) as err:
        AgentRuntime(MemoryStateStorage(), "../x", ScriptedModel([]), ScriptedTools())
    assert err.value.code == "invalid_session_id"


# --- the fakes ------------------------------------------------------------------------------
def test_scripted_model_streams_in_chunks_and_counts_calls() -> None:
    model = ScriptedModel(["abcdefghij", Reply("look", (A,))], chunk_size=3)
    chunks = list(model.stream([Message("user", ())]))
    assert [c.text for c in chunks] == ["abc", "def", "ghi", "j", ""]
    assert chunks[-1].usage is not None
    history = [Message("user", ()), Message("assistant", tool_calls=(A,))]
    second = list(model.stream(history))
    assert [c.tool_call for c in second if c.tool_call] == [A]
    assert model.calls == 2 and model.completed == 2 and len(model.requests) == 2


def test_scripted_model_counts_abandoned_streams_and_fails_past_the_script() -> None:
    model = ScriptedModel(["abcdefgh"], chunk_size=2)
    stream = model.stream([])
    next(stream)
    stream.close()  # type: ignore[attr-defined]
    assert model.abandoned == 1 and model.completed == 0
    with pytest.raises(ModelError, match="script exhausted"):
        list(model.stream([Message("assistant", tool_calls=(A,))]))
    with pytest.raises(ValueError):
        ScriptedModel([], chunk_size=0)


def test_scripted_tools_count_executions_and_interrupt_once() -> None:
    from crashpoint.core import ToolInterrupted

    tools = ScriptedTools({"call_a": "notes"}, dangerous=["delete_files"], interrupt=["call_b"])
    assert tools.execute(A) == "notes"
    assert tools.is_dangerous(RM) and not tools.is_dangerous(A)
    with pytest.raises(ToolInterrupted):
        tools.execute(B)
    assert tools.execute(B) == "search: ok"
    assert tools.executions == {"call_a": 1, "call_b": 2}


def test_fakes_satisfy_the_protocols() -> None:
    assert isinstance(ScriptedModel([]), ModelClient)
    assert isinstance(ScriptedTools(), ToolExecutor)

    class Minimal:
        def stream(
            self, messages: Sequence[Message], *, api_key: str | None = None
        ) -> Iterator[ModelChunk]:
            yield ModelChunk(text="ok")

    out = AgentRuntime(MemoryStateStorage(), SID, Minimal(), ScriptedTools()).run("go")
    assert out.status is RunStatus.COMPLETE


# --- the seed's checklist §13.7 --------------------------------------------------------------
@pytest.mark.parametrize("where", ["stream", "tool-batch"])
def test_13_7_request_suspend_stops_at_a_safe_checkpoint_running_with_checkpoint(
    where: str,
) -> None:
    h = Harness([[A, B], "a long final answer"])
    if where == "stream":
        h.when(EventKind.CHUNK, "request_suspend", index=1, call=2)
    else:
        h.when(EventKind.TOOL_DONE, "request_suspend", index=0)
    out = h.rt.run("go")
    assert out.status is RunStatus.SUSPENDED
    saved = h.storage.load(SID)
    assert saved.is_running is True
    assert saved.pending_run_checkpoint is not None
    assert saved.pending_run_checkpoint.checkpoint == "after_tool_batch"
    assert state_is_paired(saved) and results_in(saved) == ["call_a", "call_b"]


def test_13_7_after_a_restart_load_says_running_and_the_run_resumes() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    h = Harness([[A], "done"], storage=SpyStorage(FileStateStorage(fs, BASE)))
    h.when(EventKind.TOOL_DONE, "request_suspend")
    h.rt.run("go")
    rebooted = FileStateStorage(MemoryFileSystem(fs.crash_state()), BASE)
    loaded = rebooted.load(SID)
    assert loaded.is_running and loaded.pending_run_checkpoint is not None
    again = Harness([[A], "done"], storage=SpyStorage(rebooted))
    out = again.rt.resume()
    assert out.status is RunStatus.COMPLETE
    final = rebooted.load(SID)
    assert not final.is_running and final.messages[-1].role == "assistant"


def test_13_7_resume_makes_a_new_model_call_and_completed_tools_never_run_again() -> None:
    h = Harness([[A, B], [C], "done"])
    h.when(EventKind.TOOL_DONE, "request_suspend", index=0)  # in the first batch
    h.rt.run("go")
    persisted = h.storage.load(SID)
    assert results_in(persisted) == ["call_a", "call_b"]
    again = h.fresh()
    again.rt.resume()
    assert again.model.calls == 2  # new connections, from the persisted history
    assert again.model.requests[0] == tuple(persisted.messages)
    assert again.tools.executions["call_a"] == 0 and again.tools.executions["call_b"] == 0
    assert again.tools.executions["call_c"] == 1
    assert again.journal[0] == "model"


def test_13_7_cancel_saves_not_running_and_load_cannot_resume() -> None:
    h = Harness([[A, B], "never"])
    h.when(EventKind.TOOL_DONE, "cancel")
    assert h.rt.run("go").status is RunStatus.CANCELLED
    loaded = h.storage.load(SID)
    assert loaded.is_running is False and loaded.pending_run_checkpoint is None
    again = h.fresh()
    assert again.rt.resume().status is RunStatus.NOT_RESUMABLE
    assert again.model.calls == 0


def test_13_7_failed_terminal_save_leaves_the_ended_marker_and_load_forces_not_running() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    storage = SpyStorage(FileStateStorage(fs, BASE))
    h = Harness(["the answer"], storage=storage)
    h.rt.add_listener(
        lambda e: (
            setattr(storage, "fail_saves", 1)
            if e.kind is EventKind.SAVE and e.name == "complete"
            else None
        )
    )
    h.rt.run("go")
    assert fs.exists(f"{BASE}/s1.json.ended")
    loaded = FileStateStorage(MemoryFileSystem(fs.crash_state()), BASE).load(SID)
    assert loaded.is_running is False and loaded.pending_run_checkpoint is None
    assert roles(loaded) == ["user", "assistant"]


def test_13_7_failed_suspend_save_writes_no_ended_marker_and_stays_resumable() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    storage = SpyStorage(FileStateStorage(fs, BASE))
    h = Harness(["a long answer in chunks"], storage=storage)
    h.when(EventKind.CHUNK, "request_suspend", index=1)
    h.rt.add_listener(
        lambda e: (
            setattr(storage, "fail_saves", 1)
            if e.kind is EventKind.SAVE and e.name == "suspended"
            else None
        )
    )
    out = h.rt.run("go")
    assert out.status is RunStatus.SUSPENDED and len(out.save_errors) == 1
    assert "mark" not in storage.calls
    assert not fs.exists(f"{BASE}/s1.json.ended")
    rebooted = FileStateStorage(MemoryFileSystem(fs.crash_state()), BASE)
    assert rebooted.load(SID).is_running  # after_user_input: still resumable
    again = Harness(["a long answer in chunks"], storage=SpyStorage(rebooted))
    assert again.rt.resume().status is RunStatus.COMPLETE


def test_the_runtime_names_are_public_and_all_stays_sorted() -> None:
    import crashpoint.core as core

    names = {
        "AgentRuntime",
        "Checkpoint",
        "EventKind",
        "Listener",
        "ModelChunk",
        "ModelClient",
        "ModelError",
        "Reply",
        "RunConflict",
        "RunEvent",
        "RunOutcome",
        "RunStatus",
        "ScriptedModel",
        "ScriptedTools",
        "Step",
        "ToolExecutor",
        "ToolInterrupted",
    }
    assert names <= set(core.__all__)
    assert core.__all__ == sorted(core.__all__)
    assert all(hasattr(core, name) for name in core.__all__)

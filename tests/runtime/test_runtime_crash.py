"""A run crashed at every operation, rebooted and resumed (SPEC §7, seed §9.3).

For every crash point ``k`` the run is driven on a ``RecordingFileSystem(crash_at=k)``
over a ``MemoryFileSystem``; the disk it leaves is rebooted in a fresh filesystem and
storage, and a fresh runtime with fresh fakes resumes. The final history must be
paired, hold every persisted tool result exactly once (those tools never run
again), and every model call after the reboot must be a new one, made from the
persisted history. The same holds for every crash state of the power-loss models.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from crashpoint.core import (
    AgentRuntime,
    AgentState,
    EventKind,
    FileStateStorage,
    ModelError,
    RunEvent,
    RunStatus,
    ScriptedModel,
    ScriptedTools,
    StateError,
    ToolCall,
    state_is_paired,
)
from crashpoint.faultfs import (
    MODELS,
    CrashState,
    MemoryFileSystem,
    RecordingFileSystem,
    SimulatedCrash,
    crash_points,
)

SID = "s1"
BASE = "/data/sessions"
KEY = "sk-crash-test"
A = ToolCall("call_a", "read_file", "{}")
B = ToolCall("call_b", "search", "{}")
C = ToolCall("call_c", "summarize", "{}")
RM = ToolCall("call_rm", "delete_files", "{}")


@dataclass(frozen=True)
class Plan:
    script: tuple[Any, ...]
    dangerous: tuple[str, ...] = ()
    interrupt: tuple[str, ...] = ()
    suspend_after_tool: int | None = None  # request_suspend after this tool of a batch
    cancel_after_tool: int | None = None
    fail_checkpoints: tuple[str, ...] = field(default=())


PLANS = {
    "two-batches": Plan(([A, B], [C], "All done.")),
    "approval": Plan(([RM], "Deleted."), dangerous=("delete_files",)),
    "suspend-in-batch": Plan(([A, B, C], "Summary."), suspend_after_tool=0),
    "suspend-truncate": Plan(([A, B], "Both."), interrupt=("call_b",), suspend_after_tool=0),
    "cancel": Plan(([A, B], "never"), cancel_after_tool=0),
    "model-error": Plan(([A], ModelError("503"))),
    "terminal-save-fails": Plan(([A], "The answer."), fail_checkpoints=("complete",)),
}


class _FailOnce:
    """Storage proxy failing the saves of the named checkpoints once each."""

    def __init__(self, inner: FileStateStorage, names: Sequence[str]) -> None:
        self.inner, self.names, self.armed = inner, list(names), 0

    def on(self, event: RunEvent) -> None:
        if event.kind is EventKind.SAVE and event.name in self.names:
            self.names.remove(event.name)
            self.armed += 1

    def save(self, state: AgentState) -> None:
        if self.armed:
            self.armed -= 1
            raise StateError("state_save_failed", "injected")
        self.inner.save(state)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def drive(fs: Any, plan: Plan) -> ScriptedTools:
    """The recorded run: run, then approve or resume as the plan leads."""
    storage = _FailOnce(FileStateStorage(fs, BASE), plan.fail_checkpoints)
    tools = ScriptedTools(dangerous=plan.dangerous, interrupt=plan.interrupt)
    rt = AgentRuntime(storage, SID, ScriptedModel(plan.script, api_key=KEY), tools, api_key=KEY)
    rt.add_listener(storage.on)
    fired = [False]

    def interrupt(e: RunEvent) -> None:
        if e.kind is EventKind.TOOL_DONE and not fired[0]:
            if e.index == plan.suspend_after_tool:
                fired[0] = True
                rt.request_suspend()
            elif e.index == plan.cancel_after_tool:
                fired[0] = True
                rt.cancel()

    rt.add_listener(interrupt)
    out = rt.run("go")
    if out.status is RunStatus.AWAITING_APPROVAL:
        rt.approve()
    elif out.status is RunStatus.SUSPENDED:
        rt.resume()
    return tools


def resume_and_check(state: CrashState, plan: Plan) -> str:
    """Reboot ``state``, resume with fresh fakes, check; returns the resume's status."""
    storage = FileStateStorage(MemoryFileSystem(state), BASE)
    try:
        loaded = storage.load(SID)
    except StateError as exc:
        assert exc.code == "session_not_found", exc  # never corrupt (R1 covers the rest)
        return "not-found"
    assert state_is_paired(loaded)
    persisted = [m.tool_call_id for m in loaded.messages if m.tool_call_id is not None]
    journal: list[str] = []
    model = ScriptedModel(plan.script, api_key=KEY, journal=journal)
    tools = ScriptedTools(dangerous=plan.dangerous, journal=journal)
    rt = AgentRuntime(storage, SID, model, tools, api_key=KEY)
    out = rt.resume()
    if loaded.pending_approval is not None and loaded.is_running:
        assert out.status is RunStatus.AWAITING_APPROVAL and model.calls == 0
    if out.status is RunStatus.AWAITING_APPROVAL:  # frozen now or before the crash
        out = rt.approve()
    final = rt.state
    assert final is not None
    reloaded = storage.load(SID)
    for s in (final, reloaded):
        assert state_is_paired(s)
    if not loaded.is_running:
        assert out.status is RunStatus.NOT_RESUMABLE and not journal
        return str(out.status.value)
    assert out.status in (RunStatus.COMPLETE, RunStatus.ERROR), out
    assert not reloaded.is_running
    # every persisted tool result exactly once; those tools never ran again
    for call_id in persisted:
        assert [m.tool_call_id for m in final.messages].count(call_id) == 1, call_id
        assert tools.executions[call_id] == 0, call_id
    # model calls after the reboot are new calls, from the persisted history
    before = sum(1 for m in loaded.messages if m.role == "assistant")
    added = sum(1 for m in final.messages if m.role == "assistant") - before
    assert added == model.completed <= model.calls
    if model.calls:
        first_request = model.requests[0]
        assert first_request[: len(loaded.messages)] == tuple(loaded.messages)
        if loaded.pending_approval is None:
            assert journal[0] == "model"
    ends_final = loaded.messages[-1].role == "assistant" and not loaded.messages[-1].tool_calls
    assert model.calls >= (0 if ends_final and loaded.pending_approval is None else 1)
    return str(out.status.value)


@pytest.mark.parametrize("name", list(PLANS))
def test_crash_at_every_operation_then_resume(name: str) -> None:
    plan = PLANS[name]
    clean = RecordingFileSystem(MemoryFileSystem(dirs=("/data",)))
    drive(clean, plan)
    n = clean.op_count
    assert n > 10
    outcomes = set()
    for k in range(n + 1):
        inner = MemoryFileSystem(dirs=("/data",))
        rec = RecordingFileSystem(inner, crash_at=k)
        try:
            drive(rec, plan)
        except SimulatedCrash as crash:
            assert crash.op_index == k
        else:
            assert k == n
        outcomes.add(resume_and_check(inner.crash_state(), plan))
    assert "not-found" in outcomes  # k = 0
    assert outcomes & {"complete", "error"}  # some crash points resumed a run
    assert "not_resumable" in outcomes  # the end of the run: nothing to resume


@pytest.mark.parametrize("model", list(MODELS))
def test_every_crash_state_of_every_model_resumes_honestly(model: str) -> None:
    for plan in (PLANS["two-batches"], PLANS["approval"]):
        rec = RecordingFileSystem(MemoryFileSystem(dirs=("/data",)))
        initial = MemoryFileSystem(dirs=("/data",)).crash_state()
        drive(rec, plan)
        seen: set[CrashState] = set()
        for point in crash_points(MODELS[model], initial, rec.trace.ops):
            for state in point.states:
                if state not in seen:
                    seen.add(state)
                    resume_and_check(state, plan)
        assert len(seen) > 10

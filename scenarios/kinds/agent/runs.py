"""Whole agent runs as workloads, their resume probe and checkers, and lifecycle mutants.

Each ``run-*`` workload drives an :class:`~crashpoint.core.AgentRuntime` over the
storage under test, through :meth:`Session.recorded` so every storage call is
recorded and the storage invariants (R1, P1, E1, E2, S2 ...) apply to what the
runtime writes. The runtime holds the API key ``SECRETS[0]`` (S2 is then checked on
the trace). Runtime events become trace marks (``rt:save:after_user_input``,
``rt:saved:...``, ``rt:save_failed:...``, ``rt:mark:``, ``rt:marked:``,
``rt:tool_done:<id>``, ``terminal:returned``), which is how the checkers know, at
each crash point, where the run stood.

After a crash, :func:`probe_resume` reboots the disk, builds a fresh runtime with fresh
fakes and resumes, as the app would after a restart; :func:`check_run` judges it:

* **N1 no-tool-rerun**: a tool whose result was persisted is not executed again. A
  tool whose result was not persisted may run again (at-least-once; recorded in
  :attr:`ResumeProbe.at_least_once`, not a violation).
* **H1 honest-resume**: resume happens exactly when the loaded state says
  ``isRunning`` (after any applicable ended marker); a resumed run that needs the model
  starts with a fresh model call, and every reply it adds came from a new call; and
  the loaded state is resumable exactly as SPEC §7 says for the last checkpoint the
  runtime saved (``after_user_input`` ... running; a failed suspend save changes
  nothing; only a failed terminal save may be followed by a mark).
* **T1 terminal-honoured**: once the terminal path has returned, no load offers a
  resume (until a new run saves ``after_user_input``).
* **P1**, for the runtime: the history of the resumed run is paired, in memory and
  as persisted afterwards.

Lifecycle mutants are runtime bugs, not storage bugs: each is a reference
:class:`~crashpoint.core.FileStateStorage` subclass whose class attribute
``runtime_bug`` names the bug; the workloads and the probe read it and switch the
bug on in the runtime they build (the runtime's private ``_bugs``).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ....core import (
    AgentRuntime,
    AgentState,
    Checkpoint,
    ErrorCode,
    EventKind,
    FileStateStorage,
    Message,
    ModelError,
    Retryability,
    RunEvent,
    RunOutcome,
    RunStatus,
    ScriptedModel,
    ScriptedTools,
    StateError,
    Step,
    ToolCall,
    tool_calls_paired,
    truncate_to_paired,
)
from ....faultfs import CrashState, FileSystem, MemoryFileSystem
from ...engine.explore import Finding, Run
from .catalogue import CALL_A, CALL_B, CALL_DANGER, SID
from .checkers import Invariant
from .kind import AGENT_KINDS, SECRETS, AgentStateKind
from .targets import Target, mutant
from .workload import BASE_DIR, Session, scenario

__all__ = [
    "RUNS",
    "AgentRunKind",
    "Resumability",
    "ResumeProbe",
    "check_run",
    "expected_resumability",
    "probe_resume",
]

CALL_C = ToolCall("call_c", "summarize", '{"sentences": 3}')

_RESUMABLE = frozenset(c.value for c in Checkpoint if c.resumable)
_TERMINAL = frozenset(c.value for c in Checkpoint if c.terminal)


# --- plans and the runtime a workload builds ----------------------------------------------
@dataclass(frozen=True, slots=True)
class _Plan:
    """What a run workload's fakes do; the probe rebuilds the same fakes after a reboot."""

    script: tuple[Step, ...]
    dangerous: frozenset[str] = frozenset()
    interrupt: frozenset[str] = frozenset()  # recorded run only: the reboot's tools work
    approve: bool = True


def _bug_of(storage: object) -> frozenset[str]:
    bug = getattr(storage, "runtime_bug", None)
    return frozenset({bug}) if isinstance(bug, str) and bug else frozenset()


def _runtime(
    storage: Any, bugs: frozenset[str], model: ScriptedModel, tools: ScriptedTools
) -> AgentRuntime:
    rt = AgentRuntime(storage, SID, model, tools, api_key=SECRETS[0])
    rt._bugs = bugs  # the lifecycle mutant's switch (never public API)
    return rt


def _injected_failure(what: str) -> StateError:
    cause = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), BASE_DIR)
    return StateError(
        ErrorCode.STATE_SAVE_FAILED,
        f"{what} failed: {cause.strerror} (injected)",
        retryability=Retryability.CONDITIONAL,
        cause=cause,
    )


class _FlakyStorage:
    """The recorded storage, with the next saves made to fail on demand (a full disk
    before the first byte: nothing is written, so nothing needs recording)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.fail_saves = 0

    def save(self, state: AgentState) -> None:
        if self.fail_saves:
            self.fail_saves -= 1
            raise _injected_failure("save")
        self._inner.save(state)

    def mark_not_resumable(self, session_id: str) -> None:
        self._inner.mark_not_resumable(session_id)

    def load(self, session_id: str) -> AgentState:
        result: AgentState = self._inner.load(session_id)
        return result

    def load_or_create(
        self, session_id: str, initial_metadata: Mapping[str, Any] | None = None
    ) -> AgentState:
        result: AgentState = self._inner.load_or_create(session_id, initial_metadata)
        return result

    def delete(self, session_id: str) -> None:
        self._inner.delete(session_id)

    def exists(self, session_id: str) -> bool:
        return bool(self._inner.exists(session_id))


@dataclass(frozen=True, slots=True)
class _Trigger:
    kind: EventKind
    do: Callable[[AgentRuntime], object]
    index: int
    model_call: int

    def matches(self, event: RunEvent, model_call: int) -> bool:
        return (
            event.kind is self.kind
            and event.index == self.index
            and (not self.model_call or model_call == self.model_call)
        )


_MARKED = {
    EventKind.SAVE: "save",
    EventKind.SAVED: "saved",
    EventKind.SAVE_FAILED: "save_failed",
    EventKind.MARK: "mark",
    EventKind.MARKED: "marked",
    EventKind.MARK_FAILED: "mark_failed",
    EventKind.TOOL_DONE: "tool_done",
}


@dataclass(slots=True)
class _Drive:
    """A workload's runtime, its storage wrapper and its fakes."""

    session: Session
    runtime: AgentRuntime
    storage: _FlakyStorage
    model: ScriptedModel
    tools: ScriptedTools
    fail_checkpoints: list[str] = field(default_factory=list)
    triggers: list[_Trigger] = field(default_factory=list)
    model_call: int = 0

    def when(
        self,
        kind: EventKind,
        do: Callable[[AgentRuntime], object],
        *,
        index: int = 0,
        model_call: int = 0,
    ) -> None:
        """Call ``do(runtime)`` once, at the first ``kind`` event with ``index`` (during
        model call number ``model_call``, when given): a deterministic interruption."""
        self.triggers.append(_Trigger(kind, do, index, model_call))

    def on(self, event: RunEvent) -> None:
        if event.kind is EventKind.MODEL_CALL:
            self.model_call = event.index
        for trigger in self.triggers:
            if trigger.matches(event, self.model_call):
                self.triggers.remove(trigger)
                trigger.do(self.runtime)
                break
        if event.kind is EventKind.SAVE and event.name in self.fail_checkpoints:
            self.fail_checkpoints.remove(event.name)
            self.storage.fail_saves += 1
        label = _MARKED.get(event.kind)
        if label is not None:
            self.session.fs.mark(f"rt:{label}:{event.name}")
        elif event.kind is EventKind.TERMINAL:
            self.session.fs.mark("terminal:returned")

    def attempt(self, call: Callable[[], RunOutcome | None]) -> RunOutcome | None:
        """Call the runtime; an exception (a storage error the runtime cannot absorb,
        or a broken storage's own bug) is marked and ends the workload's step."""
        try:
            return call()
        except Exception as exc:
            code = exc.code if isinstance(exc, StateError) else type(exc).__name__
            self.session.fs.mark(f"run:raised:{code}")
            return None


def _drive(s: Session, plan: _Plan, *, fail: Iterable[str] = ()) -> _Drive:
    """The runtime a workload drives: over ``s.recorded()`` (saves named in ``fail``
    fail once, injected), with the plan's fakes, the API key, and events as marks."""
    storage = _FlakyStorage(s.recorded())
    model = ScriptedModel(plan.script, api_key=SECRETS[0])
    tools = ScriptedTools(dangerous=plan.dangerous, interrupt=plan.interrupt)
    rt = _runtime(storage, _bug_of(s.storage), model, tools)
    d = _Drive(s, rt, storage, model, tools, list(fail))
    rt.add_listener(d.on)
    return d


# --- the resume probe and the checkers ----------------------------------------------------
@dataclass(frozen=True, slots=True)
class ResumeProbe:
    """What rebooting one crash state and resuming the run gave.

    Attributes:
        load_error: the error code load raised, or None.
        loaded_running: the loaded state's ``is_running`` (None if load failed).
        loaded_checkpoint: its ``pending_run_checkpoint`` name, if any.
        frozen: call ids of a batch frozen for approval in the loaded state.
        persisted_results: tool-call ids whose result is in the loaded history.
        needs_model: the loaded run can only continue by asking the model.
        resume_status: what ``resume()`` returned (a status, or ``raised:<code>``).
        resumed: ``resume()`` continued the run (running or awaiting approval).
        final_status: how the resumed run ended (after ``approve()`` if frozen).
        journal: the fakes' calls in order: ``"model"`` or ``"tool:<id>"``.
        model_calls: new model calls made; ``model_completed``: streams read to the end.
        executions: tool executions by call id.
        added_replies: assistant messages the resumed run added to the history.
        final_paired: the runtime's history after the resumed run is paired.
        reloaded_paired: the state persisted after the resumed run is paired (None if
            it does not load).
        at_least_once: calls executed again because their result was not persisted.
    """

    load_error: str | None
    loaded_running: bool | None
    loaded_checkpoint: str | None
    frozen: tuple[str, ...]
    persisted_results: tuple[str, ...]
    needs_model: bool
    resume_status: str
    resumed: bool
    final_status: str
    journal: tuple[str, ...]
    model_calls: int
    model_completed: int
    executions: tuple[tuple[str, int], ...]
    added_replies: int
    final_paired: bool
    reloaded_paired: bool | None
    at_least_once: tuple[str, ...]

    def executed(self, call_id: str) -> int:
        return dict(self.executions).get(call_id, 0)


def _load(storage: Any) -> tuple[AgentState | None, str | None]:
    try:
        state = storage.load(SID)
    except StateError as exc:
        return None, str(exc.code)
    except Exception as exc:  # a broken storage: reported, never a harness error
        return None, f"exception:{type(exc).__name__}"
    return (state, None) if isinstance(state, AgentState) else (None, "exception:TypeError")


def _paired(state: AgentState) -> bool:
    return tool_calls_paired(state.messages, awaiting_approval=state.pending_approval is not None)


def _assistants(messages: Sequence[Message]) -> int:
    return sum(1 for m in messages if m.role == "assistant")


def _status(outcome: RunOutcome | None, raised: str | None) -> str:
    if raised is not None:
        return f"raised:{raised}"
    return outcome.status.value if outcome is not None else "none"


def probe_resume(
    plan: _Plan, state: CrashState, factory: Callable[[FileSystem, str], Any]
) -> ResumeProbe:
    """Reboot ``state`` (a fresh filesystem and storage), resume with a fresh runtime
    and fresh fakes, approve a frozen batch when the plan does, and record it all."""
    fs = MemoryFileSystem(state)
    storage = factory(fs, BASE_DIR)
    loaded, load_error = _load(storage)
    journal: list[str] = []
    model = ScriptedModel(plan.script, api_key=SECRETS[0], journal=journal)
    tools = ScriptedTools(dangerous=plan.dangerous, journal=journal)
    rt = _runtime(storage, _bug_of(storage), model, tools)
    first: RunOutcome | None = None
    outcome: RunOutcome | None = None
    raised: str | None = None
    try:
        first = outcome = rt.resume()
        if outcome.status is RunStatus.AWAITING_APPROVAL and plan.approve:
            outcome = rt.approve()
    except StateError as exc:
        raised = str(exc.code)
    except Exception as exc:  # a broken storage or runtime: recorded, judged below
        raised = f"exception:{type(exc).__name__}"
    resume_status = _status(first, raised if first is None else None)
    final_status = _status(outcome, raised)

    persisted: tuple[str, ...] = ()
    frozen: tuple[str, ...] = ()
    needs_model = False
    base_replies = 0
    if loaded is not None:
        persisted = tuple(m.tool_call_id for m in loaded.messages if m.tool_call_id is not None)
        if loaded.pending_approval is not None:
            frozen = tuple(c.id for c in loaded.pending_approval.tool_calls)
        base = loaded.messages if _paired(loaded) else truncate_to_paired(loaded.messages)
        base_replies = _assistants(base)
        ends_final = bool(base) and base[-1].role == "assistant" and not base[-1].tool_calls
        needs_model = loaded.is_running and loaded.pending_approval is None and not ends_final
    final = rt.state
    again, _ = _load(storage)
    executions = tuple(sorted(tools.executions.items()))
    return ResumeProbe(
        load_error=load_error,
        loaded_running=None if loaded is None else loaded.is_running,
        loaded_checkpoint=(
            None
            if loaded is None or loaded.pending_run_checkpoint is None
            else loaded.pending_run_checkpoint.checkpoint
        ),
        frozen=frozen,
        persisted_results=persisted,
        needs_model=needs_model,
        resume_status=resume_status,
        resumed=first is not None and first.status is not RunStatus.NOT_RESUMABLE,
        final_status=final_status,
        journal=tuple(journal),
        model_calls=model.calls,
        model_completed=model.completed,
        executions=executions,
        added_replies=0 if final is None else max(0, _assistants(final.messages) - base_replies),
        final_paired=final is None or _paired(final),
        reloaded_paired=None if again is None else _paired(again),
        at_least_once=tuple(cid for cid, n in executions if n and cid not in persisted),
    )


@dataclass(frozen=True, slots=True)
class Resumability:
    """What ``isRunning`` a load may show at one crash point of a run workload.

    Attributes:
        allowed: the acceptable values.
        why: the runtime marks that decided it, for reports.
        returned: the terminal path had returned and no new run had begun (T1).
    """

    allowed: frozenset[bool]
    why: str
    returned: bool


def expected_resumability(marks: Sequence[str]) -> Resumability:
    """Fold the runtime marks before a crash point into what ``isRunning`` a load may
    show (SPEC §7): a checkpoint's save sets it (``after_*``, ``awaiting_approval``,
    ``suspended``: running; ``complete``, ``cancelled``, ``error``: not); a save in
    flight or failed allows both; ``mark_not_resumable`` counts only after a failed
    terminal save (a failed suspend save never marks, seed §10.2)."""
    current: set[bool] = {False}
    inflight: bool | None = None
    notes = ["no checkpoint saved"]
    terminal_failed = False
    returned = False
    for label in marks:
        if label == "terminal:returned":
            returned = True
            notes.append("terminal path returned")
            continue
        if not label.startswith("rt:"):
            continue
        _, kind, name = label.split(":", 2)
        if kind == "save":
            inflight = name in _RESUMABLE
            notes.append(f"{name} in flight")
            if name == Checkpoint.AFTER_USER_INPUT.value:
                returned = terminal_failed = False
        elif kind == "saved":
            current, inflight = {name in _RESUMABLE}, None
            notes = [f"{name} saved"]
        elif kind == "save_failed":
            current.add(name in _RESUMABLE)
            inflight = None
            terminal_failed = name in _TERMINAL
            notes[-1] = f"{name} failed"
        elif kind == "mark":
            if terminal_failed:
                inflight = False
            notes.append("mark_not_resumable" + ("" if terminal_failed else " (not allowed)"))
        elif kind in ("marked", "mark_failed") and terminal_failed:
            current = {False} if kind == "marked" else current | {False}
            inflight = None
            notes[-1] = "mark_not_resumable " + ("done" if kind == "marked" else "failed")
    allowed = set(current)
    if inflight is not None:
        allowed.add(inflight)
    return Resumability(frozenset(allowed), "; ".join(notes), returned)


def _running(value: bool) -> str:
    return f"isRunning={str(value).lower()}"


def _gave(probe: ResumeProbe) -> str:
    """What load gave, as the report's ``load(...) gave:`` line continues."""
    if probe.loaded_running is None:
        return f"error {probe.load_error}"
    text = _running(probe.loaded_running)
    if probe.loaded_checkpoint is not None:
        text += f", checkpoint={probe.loaded_checkpoint}"
    return text


def check_run(probe: ResumeProbe, k: int, marks: Sequence[str]) -> list[Finding]:
    """Judge one crash point ``k`` of a run workload: N1, H1, T1 and the resumed run's
    pairing (P1). ``marks`` are the trace marks recorded before ``k``. See the module
    docstring."""
    found: list[Finding] = []
    gave = _gave(probe)

    def finding(inv: str, expected: str, got: str) -> None:
        found.append(Finding(inv, expected, f"{gave}; {got}", SID))

    rerun = [cid for cid in probe.persisted_results if probe.executed(cid)]
    if rerun:
        finding(
            "N1",
            "no tool whose result is persisted runs again on resume",
            f"resume executed {', '.join(rerun)} again",
        )

    # H1, the resume itself: exactly when running; fresh model calls only.
    if not probe.loaded_running:
        if probe.resumed or probe.journal:
            finding(
                "H1",
                "no resume: the loaded state is not running",
                f"resume gave {probe.resume_status}, "
                f"then ran: {', '.join(probe.journal) or 'nothing'}",
            )
    elif not probe.resumed:
        finding("H1", "a resume: the loaded state is running", f"resume gave {probe.resume_status}")
    else:
        before_model = []
        for entry in probe.journal:
            if entry == "model":
                break
            before_model.append(entry)
        approved = {f"tool:{cid}" for cid in probe.frozen}
        stray = [e for e in before_model if e not in approved]
        if probe.needs_model and not probe.journal:
            finding("H1", "resume starts with a fresh model call", "resume made no model call")
        elif stray:
            finding(
                "H1",
                "resume starts with a fresh model call (only an approved frozen batch runs "
                "before it)",
                f"before any model call resume ran {', '.join(stray)}",
            )
        if probe.added_replies > probe.model_completed:
            finding(
                "H1",
                "every reply after resume comes from a new model call",
                f"resume added {probe.added_replies} replies from {probe.model_completed} "
                "completed model calls (an old reply was replayed)",
            )

    # T1 and H1: what the loaded state offers, given where the run stood at k.
    exp = expected_resumability(marks)
    if probe.loaded_running is not None:
        offers = probe.loaded_running or probe.loaded_checkpoint is not None
        if exp.returned:
            if offers or probe.resumed:
                finding(
                    "T1",
                    f"not resumable ({exp.why})",
                    f"resume gave {probe.resume_status}",
                )
        elif probe.loaded_running not in exp.allowed:
            want = " or ".join(_running(v) for v in sorted(exp.allowed))
            finding("H1", f"{want} ({exp.why})", "the state's resumability is wrong")

    if not probe.final_paired or probe.reloaded_paired is False:
        finding(
            "P1",
            "the resumed run's history is tool-call paired, in memory and on disk",
            "unpaired " + ("in memory" if not probe.final_paired else "after reloading"),
        )
    return found


class AgentRunKind(AgentStateKind):
    """The agent-run kind: a whole agent run over the storage (the ``run-*``
    workloads). Judges what :class:`AgentStateKind` judges of what the runtime writes,
    and, at each crash point, the resumed run (:func:`probe_resume`, once per distinct
    crash state) by :func:`check_run`: N1, H1, T1 and the runtime's P1."""

    name = "agent-run"

    def __init__(self, target: Target, **options: Any) -> None:
        super().__init__(target, **options)  # checker, command: AgentStateKind's
        self._resumed: dict[tuple[str, str], ResumeProbe] = {}

    def judge(self, run: Run, k: int, state: CrashState, observation: Any) -> list[Finding]:
        out = super().judge(run, k, state, observation)
        workload = self.workload
        if workload is None:
            return out
        key = (workload.name, self.digests.state(state))
        probed = self._resumed.get(key)
        if probed is None:
            probed = self._resumed[key] = probe_resume(
                RUNS[workload.name], state, self.target.factory
            )
        marks = run.data.recording.marks_before(k)
        out.extend(f for f in check_run(probed, k, marks) if Invariant(f.invariant) in self.wanted)
        return out


AGENT_KINDS[AgentRunKind.name] = AgentRunKind

RUNS: dict[str, _Plan] = {}
"""The run workloads' plans (what their fakes do), by workload name."""


def _register(
    name: str, description: str, plan: _Plan
) -> Callable[[Callable[[Session], None]], Callable[[Session], None]]:
    RUNS[name] = plan
    return scenario(name, description, tags=("runtime",), kind=AgentRunKind.name)


# --- the run workloads ---------------------------------------------------------------------
PLAIN = _Plan(("Hello! How can I help you today?",))
TWO_BATCHES = _Plan(((CALL_A, CALL_B), (CALL_C,), "Your notes say: ship the release."))
APPROVAL = _Plan(
    ((CALL_DANGER,), "Deleted the temporary files."), dangerous=frozenset({"delete_files"})
)
SUSPEND_STREAM = _Plan(((CALL_A,), "A long answer that streams in many small chunks."))
SUSPEND_TOOLS = _Plan(((CALL_A, CALL_B, CALL_C), "A summary of the three results."))
SUSPEND_TRUNCATE = _Plan(
    ((CALL_A, CALL_B), "Both tools answered."), interrupt=frozenset({"call_b"})
)
CANCEL = _Plan(((CALL_A, CALL_B), "This reply is never asked for."))
MODEL_ERROR = _Plan(((CALL_A,), ModelError("503 service unavailable")))
TERMINAL_FAILURE = _Plan(("The final answer.",))
SUSPEND_FAILURE = _Plan(("An answer long enough to stream in several chunks.",))


@_register("run-plain-reply", "an agent run: one reply without tool calls, complete", PLAIN)
def run_plain_reply(s: Session) -> None:
    d = _drive(s, PLAIN)
    d.attempt(lambda: d.runtime.run("hello"))


@_register(
    "run-two-tool-batches",
    "an agent run with two tool batches, each saved once paired, then a reply",
    TWO_BATCHES,
)
def run_two_tool_batches(s: Session) -> None:
    d = _drive(s, TWO_BATCHES)
    d.attempt(lambda: d.runtime.run("read my notes, search, summarize"))


@_register(
    "run-approval",
    "a dangerous tool's batch frozen for approval (pendingApproval), approved, run",
    APPROVAL,
)
def run_approval(s: Session) -> None:
    d = _drive(s, APPROVAL)
    out = d.attempt(lambda: d.runtime.run("clean up the temp files"))
    if out is not None and out.status is RunStatus.AWAITING_APPROVAL:
        d.attempt(d.runtime.approve)


@_register(
    "run-suspend-stream",
    "suspend requested during a model stream: abandoned, suspended, resumed anew",
    SUSPEND_STREAM,
)
def run_suspend_stream(s: Session) -> None:
    d = _drive(s, SUSPEND_STREAM)
    d.when(EventKind.CHUNK, AgentRuntime.request_suspend, index=1, model_call=2)
    d.attempt(lambda: d.runtime.run("read my notes and explain them"))
    d.attempt(d.runtime.resume)


@_register(
    "run-suspend-tools",
    "suspend requested during a tool batch: the batch pairs, then suspended, resumed",
    SUSPEND_TOOLS,
)
def run_suspend_tools(s: Session) -> None:
    d = _drive(s, SUSPEND_TOOLS)
    d.when(EventKind.TOOL_DONE, AgentRuntime.request_suspend, index=0)
    d.attempt(lambda: d.runtime.run("read, search and summarize"))
    d.attempt(d.runtime.resume)


@_register(
    "run-suspend-truncate",
    "suspend during a batch whose tool cannot finish: truncate_to_paired, resumed",
    SUSPEND_TRUNCATE,
)
def run_suspend_truncate(s: Session) -> None:
    d = _drive(s, SUSPEND_TRUNCATE)
    d.when(EventKind.TOOL_DONE, AgentRuntime.request_suspend, index=0)
    d.attempt(lambda: d.runtime.run("read and search"))
    d.attempt(d.runtime.resume)


@_register(
    "run-cancel", "cancel during a tool batch: the rest answered as not executed, final", CANCEL
)
def run_cancel(s: Session) -> None:
    d = _drive(s, CANCEL)
    d.when(EventKind.TOOL_DONE, AgentRuntime.cancel, index=0)
    d.attempt(lambda: d.runtime.run("read and search"))


@_register(
    "run-model-error",
    "the model call after a tool batch fails: error with lastError, final",
    MODEL_ERROR,
)
def run_model_error(s: Session) -> None:
    d = _drive(s, MODEL_ERROR)
    d.attempt(lambda: d.runtime.run("read my notes"))


@_register(
    "run-terminal-save-failure",
    "the terminal (complete) save fails: mark_not_resumable condemns the last snapshot",
    TERMINAL_FAILURE,
)
def run_terminal_save_failure(s: Session) -> None:
    d = _drive(s, TERMINAL_FAILURE, fail=[Checkpoint.COMPLETE.value])
    d.attempt(lambda: d.runtime.run("answer me"))


@_register(
    "run-suspend-save-failure",
    "the suspend save fails: never marked, the run resumes from after_user_input",
    SUSPEND_FAILURE,
)
def run_suspend_save_failure(s: Session) -> None:
    d = _drive(s, SUSPEND_FAILURE, fail=[Checkpoint.SUSPENDED.value])
    d.when(EventKind.CHUNK, AgentRuntime.request_suspend, index=1, model_call=1)
    d.attempt(lambda: d.runtime.run("tell me something"))
    d.attempt(d.runtime.resume)


# --- lifecycle mutants ----------------------------------------------------------------------
class _LifecycleMutant(FileStateStorage):
    """The reference storage; ``runtime_bug`` switches a bug on in the runtime."""

    runtime_bug: ClassVar[str] = ""

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        super().__init__(fs, base_dir)


@mutant("running-flag-after-save", invariant="H1", model="process-crash", tags=("runtime",))
class RunningFlagAfterSave(_LifecycleMutant):
    """The seed's pitfall 5 (§9.4): ``after_user_input`` is saved before ``isRunning``
    is set, so a run killed before its next checkpoint loads as not running and can
    never be resumed, though the user's request is on disk."""

    runtime_bug = "running-flag-after-save"


@mutant("terminal-failure-unmarked", invariant="T1", model="process-crash", tags=("runtime",))
class TerminalFailureUnmarked(_LifecycleMutant):
    """The seed's P1-5 before its fix (§10): a failed terminal save is not followed by
    ``mark_not_resumable``, so the last intermediate snapshot (``isRunning=true``)
    offers to resume a run that has ended."""

    runtime_bug = "terminal-failure-unmarked"


@mutant("suspend-failure-marks-ended", invariant="H1", model="process-crash", tags=("runtime",))
class SuspendFailureMarksEnded(_LifecycleMutant):
    """A failed suspend save treated like a failed terminal save (§10.2): the session
    is marked not resumable, so the ``after_user_input`` snapshot the user could have
    resumed is condemned."""

    runtime_bug = "suspend-failure-marks-ended"


@mutant("toolcall-saved-before-pairing", invariant="P1", model="process-crash", tags=("runtime",))
class ToolcallSavedBeforePairing(_LifecycleMutant):
    """The runtime autosaves an assistant turn as soon as its stream ends, before its
    tool batch ran, over a storage that, like the seed's, leaves pairing to the
    runtime (§8): a crash in the batch leaves an unanswered tool call on disk and the
    next model request is invalid. (With the bug off, this storage passes every run.)"""

    runtime_bug = "toolcall-saved-before-pairing"

    def _check_pairing(self, state: AgentState) -> None:
        pass  # the seed's storage leaves pairing to the runtime


@mutant("resume-reuses-stream", invariant="H1", model="process-crash", tags=("runtime",))
class ResumeReusesStream(_LifecycleMutant):
    """The seed's "reuse the old HTTP connection on resume" (§9.3, §12): instead of a new
    model call, resume replays the last reply it has (the dead stream's), so it
    re-runs that reply's tools and answers without asking the model."""

    runtime_bug = "resume-reuses-stream"

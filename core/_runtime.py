"""The agent-run lifecycle: an agent loop that saves at safe checkpoints (SPEC §7, seed §9, §10).

:class:`AgentRuntime` drives one session: it sends the history to a
:class:`ModelClient`, runs the tool calls of each reply through a
:class:`ToolExecutor`, and saves the state through a
:class:`~crashpoint.core.StateStorage` at each safe checkpoint (:class:`Checkpoint`).
Runtime handles — the client, the executor, listeners, the suspend and cancel
signals, the API key — live only here, never in the :class:`~crashpoint.core.AgentState`
(seed §2.1, invariant S2).

The rules it keeps (SPEC §7):

* ``after_user_input``: ``is_running`` is set to true **before** the save (seed §9.4);
* ``after_assistant_turn`` (a reply without tool calls) and ``after_tool_batch`` (every
  call of the batch answered) are saved with ``is_running`` true;
* an assistant message with tool calls is never saved before its batch is paired,
  except frozen for approval (``pending_approval`` set, ``is_running`` true);
* :meth:`AgentRuntime.request_suspend` stops only at a safe checkpoint: it abandons an
  in-flight model stream, waits for a running tool batch to pair, and falls back to
  :func:`~crashpoint.core.truncate_to_paired` when a tool cannot finish; the suspended
  state keeps ``is_running`` true and records a ``pending_run_checkpoint``;
* complete, cancelled and error end through one terminal path: a full save; if it
  fails, ``mark_not_resumable``; if that fails too, the error is raised. A failed
  suspend save never marks the session not resumable (seed §10.2);
* :meth:`AgentRuntime.resume` loads the state and, when it is running, continues with a
  **new** model call from the persisted history; tools whose results are persisted are
  never run again (seed §9.3).

Errors::

    Exception
     +-- StateError            storage failures the runtime cannot absorb (see each method)
     +-- ModelError            a model call failed (raised by clients; the run ends in error)
     +-- ToolInterrupted       a tool call stopped without a result
     +-- RuntimeError
          +-- RunConflict      a call that does not fit the run's state (misuse)

Example::

    runtime = AgentRuntime(storage, "s1", ScriptedModel(["Hello!"]), ScriptedTools())
    outcome = runtime.run("hi")
    assert outcome.status is RunStatus.COMPLETE
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ._errors import ErrorCode, StateError
from ._ids import redact, safe_session_file_name
from ._pairing import tool_calls_paired, truncate_to_paired, unanswered_calls
from ._state import (
    AgentState,
    Message,
    ModelUsage,
    PendingApproval,
    PendingRunCheckpoint,
    TextPart,
    ToolCall,
)
from ._storage import StateStorage

__all__ = [
    "AgentRuntime",
    "Checkpoint",
    "EventKind",
    "Listener",
    "ModelChunk",
    "ModelClient",
    "ModelError",
    "RunConflict",
    "RunEvent",
    "RunOutcome",
    "RunStatus",
    "ToolExecutor",
    "ToolInterrupted",
]


# --- errors ------------------------------------------------------------------------
class ModelError(Exception):
    """A model call failed (a provider error: HTTP 5xx, a refused key, a broken stream).

    Raised by a :class:`ModelClient` while streaming. The runtime ends the run
    through the terminal path with checkpoint ``error`` and ``last_error`` set.
    """


class ToolInterrupted(Exception):
    """A tool call stopped without a result (it hung, timed out, or was torn down).

    Raised by a :class:`ToolExecutor`. With a suspend pending the batch cannot pair,
    so the runtime truncates the history to its last paired prefix and suspends
    there; with a cancel pending the call is answered as not executed; otherwise the
    run ends in ``error``.
    """


class RunConflict(RuntimeError):
    """A runtime call that does not fit the session's state: ``run`` while a run is
    in progress or resumable, ``approve`` with nothing frozen, a re-entrant call
    from a listener. Nothing was saved."""


# --- values --------------------------------------------------------------------------
class Checkpoint(str, enum.Enum):
    """The safe points at which the runtime saves (SPEC §7, seed §9.4)."""

    AFTER_USER_INPUT = "after_user_input"
    """The user's message is in the history; ``is_running`` set to true before the save."""
    AFTER_ASSISTANT_TURN = "after_assistant_turn"
    """A reply without tool calls is in the history."""
    AFTER_TOOL_BATCH = "after_tool_batch"
    """Every call of the last batch has its result in the history."""
    AWAITING_APPROVAL = "awaiting_approval"
    """A batch with a dangerous call is frozen: ``pending_approval`` set, unanswered."""
    SUSPENDED = "suspended"
    """Stopped at a safe checkpoint: ``is_running`` true and a ``pending_run_checkpoint``."""
    CANCELLED = "cancelled"
    """Terminal: the user cancelled (final, not resumable)."""
    ERROR = "error"
    """Terminal: the run failed; ``last_error`` says why."""
    COMPLETE = "complete"
    """Terminal: the run finished."""

    @property
    def resumable(self) -> bool:
        """Whether the state saved at this checkpoint has ``is_running`` true."""
        return self not in _TERMINAL

    @property
    def terminal(self) -> bool:
        """Whether this checkpoint ends the run (saved through the terminal path)."""
        return self in _TERMINAL


_TERMINAL = frozenset({Checkpoint.CANCELLED, Checkpoint.ERROR, Checkpoint.COMPLETE})


class RunStatus(str, enum.Enum):
    """How a call of :class:`AgentRuntime` left the run."""

    COMPLETE = "complete"
    """The run finished (saved, or the failed save was followed by a mark)."""
    SUSPENDED = "suspended"
    """The run stopped at a safe checkpoint and can be resumed."""
    AWAITING_APPROVAL = "awaiting_approval"
    """A batch with a dangerous call waits for :meth:`AgentRuntime.approve`."""
    CANCELLED = "cancelled"
    """The run was cancelled (final)."""
    ERROR = "error"
    """The run failed; see :attr:`RunOutcome.error`."""
    NOT_RESUMABLE = "not_resumable"
    """``resume`` (or ``cancel``) found a state that is not running: nothing to do."""


@dataclass(frozen=True, slots=True)
class RunOutcome:
    """What a run, resume or approve call ended with.

    Attributes:
        status: how the run stands.
        checkpoint: the checkpoint saved last (``suspended``: where the run stopped).
        error: for ``ERROR``, the ``last_error`` text.
        save_errors: save or mark failures the runtime absorbed on the way (an
            autosave that failed, a failed suspend save, a failed terminal save that
            was followed by a successful ``mark_not_resumable``), oldest first.
    """

    status: RunStatus
    checkpoint: Checkpoint | None = None
    error: str | None = None
    save_errors: tuple[StateError, ...] = ()


class EventKind(str, enum.Enum):
    """What a :class:`RunEvent` reports. Listeners get them synchronously, in order."""

    MODEL_CALL = "model_call"
    """A new model call was opened; ``index``: its number in this runtime (from 1)."""
    CHUNK = "chunk"
    """A streamed chunk arrived; ``index``: its position in the stream (from 0)."""
    STREAM_ABANDONED = "stream_abandoned"
    """The in-flight stream was closed early (suspend or cancel)."""
    REPLY = "reply"
    """A whole reply was appended to the history; ``index``: its number of tool calls."""
    TOOL_DONE = "tool_done"
    """A tool call was answered; ``name``: the call id, ``index``: its place in the batch."""
    SAVE = "save"
    """A save begins; ``name``: the checkpoint."""
    SAVED = "saved"
    """The save returned; ``name``: the checkpoint."""
    SAVE_FAILED = "save_failed"
    """The save raised; ``name``: the checkpoint, ``detail``: the error code."""
    MARK = "mark"
    """``mark_not_resumable`` begins (after a failed terminal save)."""
    MARKED = "marked"
    """``mark_not_resumable`` returned."""
    MARK_FAILED = "mark_failed"
    """``mark_not_resumable`` raised; ``detail``: the error code."""
    TERMINAL = "terminal"
    """The terminal path returned; ``name``: the terminal checkpoint."""


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One step of a run, as listeners see it (see :class:`EventKind`)."""

    kind: EventKind
    name: str = ""
    index: int = 0
    detail: str = ""


Listener = Callable[[RunEvent], None]
"""A callback for :class:`RunEvent` values. It may call :meth:`AgentRuntime.request_suspend`
or :meth:`AgentRuntime.cancel` (that is how tests interrupt a run deterministically)."""


@dataclass(frozen=True, slots=True)
class ModelChunk:
    """One piece of a streamed reply: some text, one tool call, and/or the usage."""

    text: str = ""
    tool_call: ToolCall | None = None
    usage: ModelUsage | None = None


# --- protocols -------------------------------------------------------------------------
@runtime_checkable
class ModelClient(Protocol):
    """A model API: one call streams one reply (httpx-style injectable transport).

    Each ``stream`` call is a **new** connection; a stream is never reopened. The
    runtime may close the returned iterator early (``close()`` if it has one) to
    abandon it. Errors while streaming are :class:`ModelError` (any ``Exception``
    is treated the same way).
    """

    def stream(
        self, messages: Sequence[Message], *, api_key: str | None = None
    ) -> Iterator[ModelChunk]:
        """Open a call with ``messages`` (the persisted history) and stream the reply."""


@runtime_checkable
class ToolExecutor(Protocol):
    """Runs tool calls. A dangerous call needs the user's approval first."""

    def is_dangerous(self, call: ToolCall) -> bool:
        """Whether ``call`` must be approved before it runs (seed §8.2)."""

    def execute(self, call: ToolCall) -> str:
        """Run ``call`` and return its result text. Raises :class:`ToolInterrupted`
        when it stops without a result; any other exception becomes an error result."""


# --- the runtime -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Reply:
    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: ModelUsage | None = None


class _Abandoned(Exception):
    """The in-flight stream was abandoned for a suspend or a cancel."""


class _ModelFailed(Exception):
    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class _BatchBroken(Exception):
    """A tool call ended without a result and nothing is pending to explain it."""


_NOT_EXECUTED = "not executed: {why}"


class AgentRuntime:
    """Runs an agent loop over one session and persists it at safe checkpoints (SPEC §7).

    Args:
        storage: where the state lives (any :class:`~crashpoint.core.StateStorage`).
        session_id: the session; validated at once (``invalid_session_id``).
        model: the model client; every model call is a new ``model.stream(...)``.
        tools: the tool executor.
        api_key: a secret handed to the client with each call; kept only here.
        listeners: callbacks for :class:`RunEvent` values (see :meth:`add_listener`).

    Raises:
        StateError: ``invalid_session_id``.

    The state is loaded lazily: by :meth:`run` (a new session starts fresh), :meth:`resume`
    (``load``), or :meth:`approve`/:meth:`deny`/:meth:`cancel` when none is loaded.

    Example::

        rt = AgentRuntime(storage, "s1", model, tools, api_key=key)
        out = rt.run("clean up")            # RunStatus.AWAITING_APPROVAL
        out = rt.approve()                  # runs the frozen batch, then a new model call
    """

    def __init__(
        self,
        storage: StateStorage,
        session_id: str,
        model: ModelClient,
        tools: ToolExecutor,
        *,
        api_key: str | None = None,
        listeners: Iterable[Listener] = (),
    ) -> None:
        safe_session_file_name(session_id)
        self.session_id = session_id
        self._storage = storage
        self._model = model
        self._tools = tools
        self._api_key = api_key
        self._listeners: list[Listener] = list(listeners)
        self._suspend = threading.Event()
        self._cancel = threading.Event()
        self._active = False
        self._state: AgentState | None = None
        self._save_errors: list[StateError] = []
        # Lifecycle bugs a mutant target switches on (scenarios/_runs.py), never users:
        # running-flag-after-save, terminal-failure-unmarked, suspend-failure-marks-ended,
        # toolcall-saved-before-pairing, resume-reuses-stream.
        self._bugs: frozenset[str] = frozenset()
        self.model_calls = 0
        """Model calls this runtime opened (each one a new connection)."""

    def __repr__(self) -> str:
        return f"AgentRuntime(session={redact(self.session_id)!r}, active={self._active})"

    # --- observers ---------------------------------------------------------------------
    @property
    def state(self) -> AgentState | None:
        """The live state, or None before anything was loaded. Do not mutate it;
        use :meth:`snapshot` for an independent copy."""
        return self._state

    def snapshot(self) -> AgentState | None:
        """An independent copy of the live state (SPEC §1), or None."""
        return None if self._state is None else self._state.snapshot()

    def add_listener(self, listener: Listener) -> None:
        """Call ``listener`` with every :class:`RunEvent` from now on."""
        self._listeners.append(listener)

    # --- requests ------------------------------------------------------------------------
    def request_suspend(self) -> None:
        """Ask the run in progress to stop at its next safe checkpoint (seed §9.2).

        An in-flight model stream is abandoned (its partial reply dropped); a running
        tool batch is finished first so that it pairs; if a tool cannot finish
        (:class:`ToolInterrupted`) the history is cut back with ``truncate_to_paired``.
        The run then saves checkpoint ``suspended`` (``is_running`` true plus a
        ``pending_run_checkpoint`` naming the safe checkpoint) and returns
        :attr:`RunStatus.SUSPENDED`. Outside a run this does nothing: a frozen or
        suspended state is already saved resumable. Safe to call from a listener
        or another thread.
        """
        if self._active:
            self._suspend.set()

    def cancel(self) -> RunOutcome | None:
        """End the run for good: ``is_running`` false, no checkpoint (seed §9.1).

        During a run (from a listener or another thread) this only asks: the stream
        is abandoned, or the running tool finishes and the calls not yet started are
        answered as not executed; the run then ends through the terminal path with
        ``cancelled`` and the call returns None. Outside a run, a running state
        (suspended or frozen for approval; loaded first if needed) is ended now and
        the outcome returned; a state that is not running gives ``NOT_RESUMABLE``.

        Raises:
            StateError: from loading, or when the terminal save and
                ``mark_not_resumable`` both fail (``state_save_failed``).
        """
        if self._active:
            self._cancel.set()
            return None
        with self._activity():
            state = self._state if self._state is not None else self._storage.load(self.session_id)
            self._state = state
            if not state.is_running:
                return self._outcome(RunStatus.NOT_RESUMABLE)
            self._answer_open_batch("cancelled")
            return self._terminal(Checkpoint.CANCELLED)

    # --- run, resume, approve ------------------------------------------------------------
    def run(self, user_text: str) -> RunOutcome:
        """Start a run with the user's message and drive it until it stops.

        Loads the session if nothing is loaded yet (a new session starts from a
        fresh state, first written by this save, SPEC §6 ``load_or_create``). Saves
        ``after_user_input`` with ``is_running`` already true, then loops: a model
        call; a reply without tool calls is saved at ``after_assistant_turn`` and the
        run completes; a batch is run and saved at ``after_tool_batch``; a batch
        with a dangerous call is frozen and saved for approval.

        Returns:
            the outcome (complete, suspended, awaiting approval, cancelled, error).

        Raises:
            RunConflict: a run is in progress, or the session is running (resume,
                approve or cancel it first).
            StateError: from loading (any code but ``session_not_found``);
                ``state_save_failed`` when a terminal save and the following
                ``mark_not_resumable`` both fail. Failed autosaves do not raise (see
                :attr:`RunOutcome.save_errors`).
        """
        with self._activity():
            if self._state is None:
                self._state = self._load_or_new()
            state = self._state
            if state.is_running:
                raise RunConflict(
                    f"session {redact(self.session_id)} has a run in progress: "
                    "resume(), approve() or cancel() it first"
                )
            # A frozen batch whose run ended (a condemned snapshot) is answered first.
            self._answer_open_batch("the run ended before approval")
            if not tool_calls_paired(state.messages):
                state.messages = truncate_to_paired(state.messages)
            state.messages.append(Message("user", (TextPart(user_text),)))
            state.last_error = None
            state.pending_run_checkpoint = None
            state.current_loop_count = 0
            state.current_loop_usages = []
            if "running-flag-after-save" in self._bugs:
                self._checkpoint(Checkpoint.AFTER_USER_INPUT)
                state.is_running = True
            else:
                state.is_running = True
                self._checkpoint(Checkpoint.AFTER_USER_INPUT)
            return self._loop()

    def resume(self) -> RunOutcome:
        """Load the session and continue its run if, and only if, it is running (seed §9.3).

        The live state is replaced by what ``load`` returns (an ended marker already
        applied). Not running: ``NOT_RESUMABLE``, no model call. Frozen for
        approval: ``AWAITING_APPROVAL``, no model call (see :meth:`approve`).
        Otherwise the ``pending_run_checkpoint`` is cleared and the loop continues
        with a **new** model call from the persisted history; tool results already
        in it are never produced again. A history that already ends with a reply
        without tool calls (the run finished but its terminal save did not land) is
        completed without a model call: there is nothing left to ask.

        Raises:
            RunConflict: a run is in progress in this runtime.
            StateError: from ``load`` (``session_not_found``, ``state_corrupt`` ...);
                ``state_save_failed`` as for :meth:`run`.
        """
        with self._activity():
            state = self._storage.load(self.session_id)
            self._state = state
            if not state.is_running:
                return self._outcome(RunStatus.NOT_RESUMABLE)
            if state.pending_approval is not None:
                return self._outcome(RunStatus.AWAITING_APPROVAL, Checkpoint.AWAITING_APPROVAL)
            if not tool_calls_paired(state.messages):  # never send an unpaired history
                state.messages = truncate_to_paired(state.messages)
            state.pending_run_checkpoint = None
            if "resume-reuses-stream" in self._bugs:
                replay = _last_reply(state.messages)
                if replay is not None:
                    return self._loop(first=replay)
            if _ends_with_final_reply(state.messages):
                return self._terminal(Checkpoint.COMPLETE)
            return self._loop()

    def approve(self) -> RunOutcome:
        """Run the batch frozen for approval, then continue the run (seed §8.2).

        Runs the calls of the frozen batch that are still unanswered, in order, and only
        those: a call whose result is already in the history is never run again
        (SPEC §3, §7).

        Raises:
            RunConflict: a run is in progress, or no running state has a frozen batch.
            StateError: from loading (when nothing is loaded) or as for :meth:`run`.
        """
        with self._activity():
            state = self._frozen_state()
            # SPEC §3/§7: only the calls still unanswered; a result in the history is
            # never produced twice, whatever the pending approval lists.
            batch = unanswered_calls(state.messages)
            state.pending_approval = None
            try:
                paired = self._run_batch(batch)
            except _BatchBroken as exc:
                return self._terminal(Checkpoint.ERROR, error=str(exc))
            return self._after_batch(paired)

    def deny(self) -> RunOutcome:
        """Answer the frozen batch as denied (nothing executed), then continue the run.

        Raises: as :meth:`approve`.
        """
        with self._activity():
            self._frozen_state()
            self._answer_open_batch("denied by the user")
            return self._after_batch(True)

    # --- the loop --------------------------------------------------------------------------
    def _loop(self, first: _Reply | None = None) -> RunOutcome:
        state = self._live()
        while True:
            if self._cancel.is_set():
                return self._terminal(Checkpoint.CANCELLED)
            if self._suspend.is_set():
                return self._suspend_here()
            if first is not None:
                reply, first = first, None
            else:
                try:
                    reply = self._call_model()
                except _Abandoned:
                    continue
                except _ModelFailed as exc:
                    return self._terminal(Checkpoint.ERROR, error=exc.text)
            if not reply.tool_calls:
                self._append_reply(reply)
                if self._cancel.is_set():
                    return self._terminal(Checkpoint.CANCELLED)
                self._checkpoint(Checkpoint.AFTER_ASSISTANT_TURN)
                if self._suspend.is_set():
                    return self._suspend_here()
                return self._terminal(Checkpoint.COMPLETE)
            self._append_reply(reply)
            if any(self._tools.is_dangerous(call) for call in reply.tool_calls):
                state.pending_approval = PendingApproval(reply.tool_calls)
                self._checkpoint(Checkpoint.AWAITING_APPROVAL)
                return self._outcome(RunStatus.AWAITING_APPROVAL, Checkpoint.AWAITING_APPROVAL)
            if "toolcall-saved-before-pairing" in self._bugs:
                self._save(Checkpoint.AFTER_ASSISTANT_TURN)
            try:
                paired = self._run_batch(reply.tool_calls)
            except _BatchBroken as exc:
                return self._terminal(Checkpoint.ERROR, error=str(exc))
            if not paired:  # a tool could not finish and a suspend is pending
                state.messages = truncate_to_paired(state.messages)
                return self._suspend_here()
            if self._cancel.is_set():  # final: no resumable checkpoint on the way out
                return self._terminal(Checkpoint.CANCELLED)
            self._checkpoint(Checkpoint.AFTER_TOOL_BATCH)

    def _after_batch(self, paired: bool) -> RunOutcome:
        if not paired:
            state = self._live()
            state.messages = truncate_to_paired(state.messages)
            return self._suspend_here()
        if self._cancel.is_set():
            return self._terminal(Checkpoint.CANCELLED)
        self._checkpoint(Checkpoint.AFTER_TOOL_BATCH)
        return self._loop()

    def _call_model(self) -> _Reply:
        """One new model call, streamed; raises _Abandoned or _ModelFailed. Listener
        exceptions pass through untouched (they are not model errors)."""
        state = self._live()
        self.model_calls += 1
        state.total_loop_count += 1
        state.current_loop_count += 1
        text: list[str] = []
        calls: list[ToolCall] = []
        usage: ModelUsage | None = None
        self._emit(EventKind.MODEL_CALL, index=self.model_calls)
        try:
            stream = iter(self._model.stream(tuple(state.messages), api_key=self._api_key))
        except Exception as exc:
            raise _ModelFailed(f"{type(exc).__name__}: {exc}") from exc
        try:
            index = 0
            while True:
                try:
                    chunk = next(stream)
                except StopIteration:
                    break
                except Exception as exc:
                    raise _ModelFailed(f"{type(exc).__name__}: {exc}") from exc
                text.append(chunk.text)
                if chunk.tool_call is not None:
                    calls.append(chunk.tool_call)
                if chunk.usage is not None:
                    usage = chunk.usage
                self._emit(EventKind.CHUNK, index=index)
                if self._cancel.is_set() or self._suspend.is_set():
                    self._emit(EventKind.STREAM_ABANDONED, index=index)
                    raise _Abandoned
                index += 1
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()  # abandon the connection; a finished stream ignores it
        reply = _Reply("".join(text), tuple(calls), usage)
        if not reply.text and not reply.tool_calls:
            raise _ModelFailed("ModelError: the model returned an empty reply")
        return reply

    def _append_reply(self, reply: _Reply) -> None:
        state = self._live()
        contents = (TextPart(reply.text),) if reply.text else ()
        state.messages.append(Message("assistant", contents, tool_calls=reply.tool_calls))
        if reply.usage is not None:
            state.usages.append(reply.usage)
            state.current_loop_usages.append(reply.usage)
        self._emit(EventKind.REPLY, index=len(reply.tool_calls))

    def _run_batch(self, calls: Sequence[ToolCall]) -> bool:
        """Answer every call of the batch, in order; True when it paired.

        A suspend waits for the batch; a cancel lets the running call finish and
        answers the rest as not executed. A call that stops without a result
        returns False when a suspend is pending (the batch cannot pair: the caller
        falls back to truncate_to_paired); otherwise raises _BatchBroken."""
        state = self._live()
        for index, call in enumerate(calls):
            if self._cancel.is_set():
                state.messages.append(_not_executed(call, "cancelled"))
                continue
            try:
                result = self._tools.execute(call)
            except ToolInterrupted as exc:
                if self._cancel.is_set():
                    state.messages.append(_not_executed(call, "cancelled"))
                    continue
                if self._suspend.is_set():
                    return False
                state.messages = truncate_to_paired(state.messages)
                raise _BatchBroken(f"ToolInterrupted: {call.name} ({call.id}): {exc}") from exc
            except Exception as exc:  # a failing tool is an answer, not a broken run
                result = f"error: {type(exc).__name__}: {exc}"
            state.messages.append(Message("tool", (TextPart(result),), tool_call_id=call.id))
            self._emit(EventKind.TOOL_DONE, call.id, index)
        return True

    def _answer_open_batch(self, why: str) -> None:
        """Answer the unanswered calls of a frozen batch as not executed; clear it."""
        state = self._live()
        if state.pending_approval is None:
            return
        for call in unanswered_calls(state.messages):
            state.messages.append(_not_executed(call, why))
        state.pending_approval = None

    def _load_or_new(self) -> AgentState:
        """``load``; a fresh, unsaved state only when the session is not found (the
        ``after_user_input`` save creates it). Any other load error is raised."""
        try:
            return self._storage.load(self.session_id)
        except StateError as exc:
            if exc.code != ErrorCode.SESSION_NOT_FOUND:
                raise
        return AgentState.new(self.session_id)

    def _frozen_state(self) -> AgentState:
        if self._state is None:
            self._state = self._storage.load(self.session_id)
        state = self._state
        if not state.is_running or state.pending_approval is None:
            raise RunConflict(f"session {redact(self.session_id)} has no batch awaiting approval")
        return state

    # --- saving ------------------------------------------------------------------------------
    def _checkpoint(self, checkpoint: Checkpoint) -> None:
        """Reach a safe checkpoint and autosave it. A failed autosave is recorded, not
        raised: the next checkpoint saves everything again."""
        self._save(checkpoint)

    def _save(self, checkpoint: Checkpoint) -> StateError | None:
        self._emit(EventKind.SAVE, checkpoint.value)
        try:
            self._storage.save(self._live())
        except StateError as exc:
            self._save_errors.append(exc)
            self._emit(EventKind.SAVE_FAILED, checkpoint.value, detail=str(exc.code))
            return exc
        self._emit(EventKind.SAVED, checkpoint.value)
        return None

    def _suspend_here(self) -> RunOutcome:
        """Save ``suspended`` at the last safe checkpoint. A failed save is reported in
        the outcome and never marks the session not resumable (seed §10.2)."""
        state = self._live()
        state.is_running = True
        state.pending_run_checkpoint = PendingRunCheckpoint(
            _resting_checkpoint(state).value, state.current_loop_count
        )
        failed = self._save(Checkpoint.SUSPENDED)
        if failed is not None and "suspend-failure-marks-ended" in self._bugs:
            self._mark()
        return self._outcome(RunStatus.SUSPENDED, Checkpoint.SUSPENDED)

    def _terminal(self, checkpoint: Checkpoint, *, error: str | None = None) -> RunOutcome:
        """The one terminal path (seed §10): full save; on failure mark_not_resumable;
        if that fails too, raise its StateError (the save's error as ``__context__``)."""
        state = self._live()
        state.is_running = False
        state.pending_run_checkpoint = None
        if error is not None:
            state.last_error = error
        failed = self._save(checkpoint)
        if failed is not None and "terminal-failure-unmarked" not in self._bugs:
            try:
                self._mark()
            except StateError as exc:
                exc.__context__ = failed
                raise
        self._emit(EventKind.TERMINAL, checkpoint.value)
        status = RunStatus(checkpoint.value)
        return self._outcome(status, checkpoint, error=error)

    def _mark(self) -> None:
        self._emit(EventKind.MARK)
        try:
            self._storage.mark_not_resumable(self.session_id)
        except StateError as exc:
            self._emit(EventKind.MARK_FAILED, detail=str(exc.code))
            raise
        self._emit(EventKind.MARKED)

    # --- plumbing ----------------------------------------------------------------------------
    def _live(self) -> AgentState:
        if self._state is None:  # pragma: no cover - every entry point loads first
            raise RunConflict("no state loaded")
        return self._state

    def _emit(self, kind: EventKind, name: str = "", index: int = 0, detail: str = "") -> None:
        if self._listeners:
            event = RunEvent(kind, name, index, detail)
            for listener in tuple(self._listeners):
                listener(event)

    def _outcome(
        self,
        status: RunStatus,
        checkpoint: Checkpoint | None = None,
        *,
        error: str | None = None,
    ) -> RunOutcome:
        return RunOutcome(status, checkpoint, error, tuple(self._save_errors))

    def _activity(self) -> _Activity:
        return _Activity(self)


class _Activity:
    """Marks the runtime busy for the duration of one public call (no re-entry)."""

    def __init__(self, runtime: AgentRuntime) -> None:
        self._rt = runtime

    def __enter__(self) -> None:
        rt = self._rt
        if rt._active:
            raise RunConflict("the runtime is already running a call (re-entrant use)")
        rt._active = True
        rt._suspend.clear()
        rt._cancel.clear()
        rt._save_errors = []

    def __exit__(self, *exc: object) -> None:
        rt = self._rt
        rt._active = False
        rt._suspend.clear()
        rt._cancel.clear()


def _not_executed(call: ToolCall, why: str) -> Message:
    return Message(
        "tool",
        (TextPart(_NOT_EXECUTED.format(why=why)),),
        tool_call_id=call.id,
        metadata={"notExecuted": why},
    )


def _resting_checkpoint(state: AgentState) -> Checkpoint:
    """The safe checkpoint a paired history rests at, from its last message."""
    if state.pending_approval is not None:
        return Checkpoint.AWAITING_APPROVAL
    last = state.messages[-1] if state.messages else None
    if last is not None and last.role == "tool":
        return Checkpoint.AFTER_TOOL_BATCH
    if last is not None and last.role == "assistant" and not last.tool_calls:
        return Checkpoint.AFTER_ASSISTANT_TURN
    return Checkpoint.AFTER_USER_INPUT


def _ends_with_final_reply(messages: Sequence[Message]) -> bool:
    return bool(messages) and messages[-1].role == "assistant" and not messages[-1].tool_calls


def _last_reply(messages: Sequence[Message]) -> _Reply | None:
    """The last assistant message as a reply (the bug ``resume-reuses-stream`` replays it)."""
    for message in reversed(messages):
        if message.role == "assistant":
            text = "".join(p.text for p in message.contents if isinstance(p, TextPart))
            return _Reply(text or "(replayed)", message.tool_calls)
    return None

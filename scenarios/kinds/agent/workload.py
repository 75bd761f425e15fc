"""Workloads: short programs over a storage, with marks for acknowledged calls.

A workload is a plain function taking a :class:`Session`; it calls the storage
through the session, which records each call (what it was, how many operations
had been issued when it began and when it returned, how it ended) and puts
``begin:`` / ``ack:`` marks in the trace (FAULT-MODEL.md §1: ALICE treats printed
output the same way). The checker derives from those calls what was acknowledged
before any crash point.

Register workloads with the :func:`scenario` decorator::

    @scenario("first-save", "a new session's first save")
    def first_save(s: Session) -> None:
        s.save(state("s1", "hello"))
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ....core import AgentState, StateError, decode_bytes, encode_bytes
from ....faultfs import FileSystem, RecordingFileSystem

__all__ = [
    "BASE_DIR",
    "SCENARIOS",
    "Call",
    "CallKind",
    "Expect",
    "RecordedStorage",
    "Session",
    "Workload",
    "scenario",
]

BASE_DIR = "/data/sessions"
"""Where every catalogue workload keeps its session files (created by the first save)."""


class CallKind(str, enum.Enum):
    """A storage call a workload made."""

    SAVE = "save"
    LOAD = "load"
    LOAD_OR_CREATE = "load_or_create"
    DELETE = "delete"
    MARK_NOT_RESUMABLE = "mark_not_resumable"


_VALUES: dict[CallKind, str] = {kind: kind.value for kind in CallKind}


@functools.lru_cache(maxsize=4096)
def _as_loaded(data: bytes) -> AgentState:
    # Re-runs of a workload (one per fault) save the same snapshots again; the
    # harness never mutates an expected state, so the decoded value can be shared.
    return decode_bytes(data)


@functools.lru_cache(maxsize=1024)
def _fresh_bytes(session_id: str) -> bytes:
    # A fresh state without metadata is a function of its id (AgentState.new); an id
    # the codec refuses raises each time (lru_cache keeps results only).
    return encode_bytes(AgentState.new(session_id, {}))


@dataclass(frozen=True, slots=True)
class Expect:
    """What loading a session must give: a state, or an error code.

    Attributes:
        state: the state load returns (as it loads: after the codec round trip).
        code: the error code load raises, when ``state`` is None
            (``session_not_found``, ``state_corrupt``, ``schema_version_unsupported``).
        marked: an acknowledged mark_not_resumable condemned this snapshot, so it
            loads with ``is_running=False`` and no ``pending_run_checkpoint``.
        data: the snapshot's bytes as saved, when known.
        origin: which call wrote it (``"save#2"``), for the rendering only (not compared).
    """

    state: AgentState | None = None
    code: str | None = None
    marked: bool = False
    data: bytes | None = None
    origin: str = field(default="", compare=False)

    @classmethod
    def not_found(cls) -> Expect:
        return cls(code="session_not_found")

    @classmethod
    def saved(cls, state: AgentState) -> Expect:
        """What loading ``state`` after a save must give (the codec's round trip)."""
        data = encode_bytes(state)
        return cls(state=_as_loaded(data), data=data)

    @classmethod
    def created(cls, session_id: str, initial_metadata: Mapping[str, Any] | None) -> Expect:
        """:meth:`saved` of the fresh state load_or_create saves for a new session."""
        if not initial_metadata and type(session_id) is str:
            data = _fresh_bytes(session_id)  # the same state for the same id
        else:
            data = encode_bytes(AgentState.new(session_id, dict(initial_metadata or {})))
        return cls(state=_as_loaded(data), data=data)

    def describe(self) -> str:
        """One line: ``error CODE``, or ``state with N message(s) (flags as it loads)``;
        a snapshot condemned by mark_not_resumable says so and what it was saved with;
        ``from save#2`` when the writing call is known."""
        if self.state is None:
            return f"error {self.code}"
        s = self.state
        n = len(s.messages)
        text = f"state with {n} message{'' if n == 1 else 's'}"
        saved = f"isRunning={str(s.is_running).lower()}"
        if s.pending_run_checkpoint is not None:
            saved += f", checkpoint={s.pending_run_checkpoint.checkpoint}"
        if self.marked:
            text += f" (isRunning=false: condemned, i.e. marked not resumable; saved with {saved})"
        else:
            text += f" ({saved})"
        return text + (f" from {self.origin}" if self.origin else "")


@dataclass(slots=True)
class Call:
    """One storage call of a workload run.

    Attributes:
        seq: its position among the run's calls.
        kind: which method.
        session_id: the session it named.
        begin: operations issued before it began.
        end: operations issued when it returned or raised; None if a crash stopped it.
        error: the StateError code it raised (``exception:<Type>`` for any other
            exception), or None.
        retryability: the raised StateError's retryability.
        saved: for a save (or a creating load_or_create): what it writes, as it loads.
        result: for a load: what it returned.
    """

    seq: int
    kind: CallKind
    session_id: str
    begin: int
    end: int | None = None
    error: str | None = None
    saved: Expect | None = None
    result: AgentState | None = None
    retryability: str | None = None

    @property
    def label(self) -> str:
        return f"{self.kind.value}#{self.seq}"


class Session:
    """What a workload sees: the storage under test, wrapped so each call is recorded.

    Storage errors (:class:`~crashpoint.core.StateError`) are recorded and swallowed,
    so a workload continues past an expected refusal; a simulated crash is not.

    Attributes:
        storage: the storage under test.
        fs: the recording filesystem it runs on.
        base_dir: the storage's directory.
        calls: the recorded calls, in order.
    """

    def __init__(self, storage: Any, fs: RecordingFileSystem, base_dir: str) -> None:
        self.storage = storage
        self.fs = fs
        self.base_dir = base_dir
        self.calls: list[Call] = []
        self._quiet = RecordedStorage(self, reraise=False)

    def _call(
        self,
        kind: CallKind,
        session_id: str,
        fn: Callable[[], Any],
        saved: Expect | None = None,
        *,
        reraise: bool = False,
    ) -> Any:
        fs = self.fs
        seq = len(self.calls)
        call = Call(seq, kind, session_id, fs.op_count, saved=saved)
        self.calls.append(call)
        label = f"{_VALUES[kind]}#{seq}"  # = call.label
        fs.mark("begin:" + label)
        try:
            result = fn()
        except StateError as exc:
            call.end = fs.op_count
            call.error = str(exc.code)
            call.retryability = str(exc.retryability)
            fs.mark(f"fail:{label}:{exc.code}")
            if reraise:
                raise
            return None
        except Exception as exc:  # not a StateError: a finding (F1), not a harness error
            if fs.crashed is not None:
                raise fs.crashed from None
            call.end = fs.op_count
            call.error = f"exception:{type(exc).__name__}"
            fs.mark(f"fail:{label}:{call.error}")
            if reraise:
                raise
            return None
        call.end = fs.op_count
        if isinstance(result, AgentState):
            call.result = result
        fs.mark("ack:" + label)
        return result

    def save(self, state: AgentState) -> bool:
        """Save ``state``; True if the storage acknowledged it."""
        self._quiet.save(state)
        return self.calls[-1].error is None

    def load(self, session_id: str) -> AgentState | None:
        """Load a session; None if the storage raised."""
        return self._quiet.load(session_id)

    def load_or_create(
        self, session_id: str, initial_metadata: Mapping[str, Any] | None = None
    ) -> AgentState | None:
        """load_or_create; None if the storage raised."""
        return self._quiet.load_or_create(session_id, initial_metadata)

    def delete(self, session_id: str) -> bool:
        """Delete a session; True if acknowledged."""
        self._quiet.delete(session_id)
        return self.calls[-1].error is None

    def mark_not_resumable(self, session_id: str) -> bool:
        """Mark the current snapshot not resumable; True if acknowledged."""
        self._quiet.mark_not_resumable(session_id)
        return self.calls[-1].error is None

    def recorded(self) -> RecordedStorage:
        """A storage that records each call like this session's methods but raises
        storage errors as the storage does: hand it to code under test (a runtime)."""
        return RecordedStorage(self)


class RecordedStorage:
    """The StateStorage protocol over a :class:`Session`: each call is recorded; storage
    errors are raised (``reraise=True``) or recorded and swallowed (the call returns None)."""

    def __init__(self, session: Session, *, reraise: bool = True) -> None:
        self._s = session
        self._reraise = reraise

    def _call(
        self, kind: CallKind, session_id: str, fn: Callable[[], Any], saved: Expect | None = None
    ) -> Any:
        return self._s._call(kind, session_id, fn, saved, reraise=self._reraise)

    def save(self, state: AgentState) -> None:
        try:
            expect: Expect | None = Expect.saved(state)
        except StateError:
            expect = None  # the codec refuses it; so must the storage
        storage = self._s.storage
        self._call(CallKind.SAVE, state.session_id, lambda: storage.save(state), expect)

    def load(self, session_id: str) -> AgentState | None:
        storage = self._s.storage
        result: AgentState | None = self._call(
            CallKind.LOAD, session_id, lambda: storage.load(session_id)
        )
        return result

    def load_or_create(
        self, session_id: str, initial_metadata: Mapping[str, Any] | None = None
    ) -> AgentState | None:
        storage = self._s.storage
        fresh = Expect.created(session_id, initial_metadata)
        result: AgentState | None = self._call(
            CallKind.LOAD_OR_CREATE,
            session_id,
            lambda: storage.load_or_create(session_id, initial_metadata),
            fresh,
        )
        return result

    def delete(self, session_id: str) -> None:
        storage = self._s.storage
        self._call(CallKind.DELETE, session_id, lambda: storage.delete(session_id))

    def exists(self, session_id: str) -> bool:
        return bool(self._s.storage.exists(session_id))

    def mark_not_resumable(self, session_id: str) -> None:
        storage = self._s.storage
        self._call(
            CallKind.MARK_NOT_RESUMABLE, session_id, lambda: storage.mark_not_resumable(session_id)
        )


Setup = Callable[[FileSystem, str], Mapping[str, Expect]]


@dataclass(frozen=True, slots=True)
class Workload:
    """A named workload of the catalogue.

    Attributes:
        name: how the CLI and reports call it (``--scenario NAME``).
        description: one line.
        run: the program, given a :class:`Session`.
        setup: writes the disk the run starts from (durable before the run) and
            returns what loading each pre-existing session must give; None for an
            empty disk.
        tags: free-form labels (``"storage"``, ``"runtime"``).
        kind: the agent kind that judges it, by name (``"agent-state"``: the storage
            invariants; ``"agent-run"``: those and the run's own, N1, H1, T1).
    """

    name: str
    description: str
    run: Callable[[Session], None]
    setup: Setup | None = None
    tags: tuple[str, ...] = field(default=("storage",))
    kind: str = "agent-state"


SCENARIOS: dict[str, Workload] = {}
"""The workload catalogue, by name, in registration order."""


def scenario(
    name: str,
    description: str,
    *,
    setup: Setup | None = None,
    tags: tuple[str, ...] = ("storage",),
    kind: str = "agent-state",
) -> Callable[[Callable[[Session], None]], Callable[[Session], None]]:
    """Register a workload under ``name`` (a decorator). Raises ValueError on a duplicate name."""

    def register(fn: Callable[[Session], None]) -> Callable[[Session], None]:
        if name in SCENARIOS:
            raise ValueError(f"scenario {name!r} is already registered")
        SCENARIOS[name] = Workload(name, description, fn, setup, tags, kind)
        return fn

    return register

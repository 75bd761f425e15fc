"""The agent-state kind: the reference storage's workloads judged by the engine.

:class:`AgentStateKind` implements the engine's :class:`~crashpoint.scenarios.engine.explore.Kind`
for storages of agent state (SPEC.md §6): a workload of the catalogue is run once on
a recording filesystem; every crash state is rebooted on a fresh
:class:`~crashpoint.faultfs.MemoryFileSystem` with a fresh storage, every session is
loaded and judged against SPEC.md §8. :func:`explore` is the plain entry point
(STYLE.md §8)::

    result = explore(SCENARIOS["three-saves"], model=PROCESS_CRASH)
    result.assert_no_violations()
"""

from __future__ import annotations

import bisect
import contextlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ....core import AgentState, ErrorCode, FileStateStorage, encode_bytes
from ....core._codec import decode_memo
from ....faultfs import (
    PROCESS_CRASH,
    CrashState,
    Fault,
    FaultKind,
    MemoryFileSystem,
    Op,
    OpKind,
    PersistenceModel,
    RecordingFileSystem,
    get_model,
)
from ...engine.explore import (
    AGENT_TIEBREAK,
    EngineResult,
    FileDigests,
    Finding,
    InvariantInfo,
    Run,
    Step,
    explore_models,
    fault_spec,
    register_invariants,
)
from ...engine.faults import fault_plan
from ...targets.user import BadTarget, a_storage, exits_refused
from .checkers import (
    INVARIANTS,
    Expectation,
    Invariant,
    Observation,
    confinement_violations,
    describe_file,
    expectation,
    judge,
    observe,
    secrets_in_state,
    v1_required,
)
from .targets import MUTANTS, TARGETS, Factory, Target, get_target
from .workload import BASE_DIR, Call, CallKind, Expect, Session, Workload

__all__ = [
    "AGENT_KINDS",
    "SECRETS",
    "AgentStateKind",
    "Recording",
    "explore",
    "explore_agent",
    "explore_faults",
    "explore_faults_models",
    "record",
    "refuse_silent_saves",
    "resolve",
]

SECRETS: tuple[str, ...] = ("sk-crashpoint-test-SECRET-0001",)
"""Secret values a runtime holds (an API key); no file may ever contain one (S2)."""

_ROOT_DIRS = ("/data",)

register_invariants(
    InvariantInfo(i.value, i.label, i.severity, i.meaning) for i in INVARIANTS
)  # SPEC.md §8; S1 is the engine's CONFINED, the same text


@dataclass(slots=True)
class Recording:
    """One recorded run of a workload."""

    initial: CrashState
    expects: Mapping[str, Expect]
    ops: list[Op]
    calls: list[Call]
    sessions: list[str]
    marks: list[Op] = field(default_factory=list)

    def marks_before(self, k: int) -> list[str]:
        """Labels of the marks recorded while at most ``k`` operations were done."""
        return [m.label for m in self.marks if m.index <= k]


def record(workload: Workload, target: Target, *, fault: Fault | None = None) -> Recording:
    """Run ``workload`` once on a recording memory filesystem: the crash-free run, or
    the run with ``fault`` armed."""
    fs = MemoryFileSystem(dirs=_ROOT_DIRS)
    expects = dict(workload.setup(fs, BASE_DIR)) if workload.setup else {}
    initial = fs.crash_state()
    # Reads are not kept (the recording holds operations and marks): not recorded.
    rec = RecordingFileSystem(MemoryFileSystem(initial), fault=fault, record_reads=False)
    session = Session(a_storage(target(rec, BASE_DIR), f"target {target.name!r}"), rec, BASE_DIR)
    workload.run(session)
    sessions = list(expects)
    for call in session.calls:
        if call.session_id not in sessions:
            sessions.append(call.session_id)
    marks = [e for e in rec.trace.events if e.kind is OpKind.MARK]
    return Recording(initial, expects, rec.trace.ops, session.calls, sessions, marks)


def _known_blobs(recording: Recording) -> dict[bytes, str]:
    known: dict[bytes, str] = {}
    for call in recording.calls:
        saved = call.saved
        if (
            saved is not None
            and saved.data is not None
            and (call.kind is CallKind.SAVE or call.error is None)
        ):
            known.setdefault(saved.data, call.label)
    for sid, exp in recording.expects.items():
        if exp.state is not None:
            known.setdefault(encode_bytes(exp.state), f"the setup's snapshot of {sid}")
    return known


def _render_state(
    state: CrashState, session_id: str, storage: object, known: Mapping[bytes, str]
) -> dict[str, str]:
    path_of = getattr(storage, "path", None)
    try:
        main = path_of(session_id) if path_of else None
    except Exception:
        main = None
    files: dict[str, str] = {}
    if main is not None:
        for suffix in ("", ".bak", ".tmp", ".ended"):
            files[(main + suffix).rsplit("/", 1)[-1]] = describe_file(
                state.file(main + suffix), known
            )
    for path, data in state.files:
        name = path.rsplit("/", 1)[-1]
        if name not in files:
            files[path] = describe_file(data, known)
    return files


def resolve(
    model: PersistenceModel | str, target: Target | str | Factory | None
) -> tuple[PersistenceModel, Target]:
    """Accept names for a model and a target, and a plain ``factory(fs, base_dir)`` as
    a target (named after the factory). Raises KeyError listing the known names."""
    if isinstance(model, str):
        model = get_model(model)
    if target is None:
        target = TARGETS["reference"]
    elif isinstance(target, str):
        target = get_target(target)
    elif not isinstance(target, Target) and callable(target):
        name = getattr(target, "__name__", None) or getattr(target, "__qualname__", None)
        doc = (getattr(target, "__doc__", None) or "").strip()
        target = Target(name or repr(target), target, doc)
    return model, target


def _wanted(checker: Iterable[Invariant | str] | None, *, faults: bool) -> set[Invariant]:
    chosen = {Invariant(i) for i in (checker if checker is not None else INVARIANTS)}
    if not faults:
        chosen.discard(Invariant.F1)  # F1 needs injected faults (explore_faults)
    return chosen


@dataclass(slots=True)
class _AgentRun:
    """What the agent kind keeps of one recorded run while the engine judges it."""

    recording: Recording
    short_count: bool = False
    begins: list[int] = field(default_factory=list)
    ends: list[float] = field(default_factory=list)
    folded: dict[tuple[int, int], dict[str, Expectation]] = field(default_factory=dict)
    labelled: dict[int, Expect] = field(default_factory=dict)
    judged: dict[tuple[int, int], list[tuple[Invariant, str] | None]] = field(default_factory=dict)
    leaked: set[tuple[str, str]] = field(default_factory=set)
    step_k: int = -1
    step: dict[str, Expectation] = field(default_factory=dict)


_EXPLORE = "crashpoint explore --scenario"


class AgentStateKind:
    """The agent-state kind for one target (SPEC.md §6, §8): its workloads are the
    catalogue's (:data:`~crashpoint.scenarios.SCENARIOS`), its observation of a crash
    state is a load of every session (with C1's load_or_create and V1's refusal check),
    its invariants R1…S2 and I1 (and a workload's own, N1, H1, T1).

    Keeps the per-crash-state caches across every run it records (the faulted re-runs
    of a workload share most of their crash states): equal loaded states are kept
    once and loads are memoised by what they read (:class:`_LoadMemo`), so memory does
    not grow with the files of the crash states (issue 11).

    Args:
        target: the storage.
        checker: the invariants to judge (default: all but F1, which needs faults).
    """

    name = "agent-state"
    subject = "the session"
    tiebreak: tuple[str, ...] = AGENT_TIEBREAK

    def __init__(
        self,
        target: Target,
        *,
        checker: Iterable[Invariant | str] | None = None,
        command: str = "",
    ) -> None:
        self.target = target
        self.command = command or _EXPLORE
        """The replay command up to the workload's name (``crashpoint explore
        --scenario``; a user storage's ``crashpoint verify SPEC --kind state-storage
        --workload``)."""
        self.checker = checker
        self.wanted = _wanted(checker, faults=True)
        self._states = _EqualStates()
        self.digests = FileDigests()
        """File and state digests, shared with the engine (each content hashed once)."""
        self._loads = _LoadMemo(self.digests.file)
        self.leaks: dict[str, list[tuple[str, str]]] = {}
        self._known_for: Recording | None = None
        self._known: dict[bytes, str] = {}
        self._rendered: dict[tuple[str, str], dict[str, str]] = {}
        self.workload: Workload | None = None
        """The workload the kind is judging (the last one recorded)."""
        self._sessions: Sequence[str] = ()
        self.refuse_silent = True
        """Refuse a user storage whose saves acknowledge nothing on the crash-free run
        (:func:`refuse_silent_saves`)."""

    # --- the Kind protocol ------------------------------------------------------------
    def workload_name(self, workload: Workload) -> str:
        return workload.name

    def invariants(self, *, faults: bool) -> tuple[str, ...]:
        wanted = _wanted(self.checker, faults=faults)
        return tuple(i.value for i in INVARIANTS if i in wanted)

    def record(self, workload: Workload, fault: Fault | None) -> Run:
        self.workload = workload
        rec = record(workload, self.target, fault=fault)
        if fault is None and self.refuse_silent:
            refuse_silent_saves(rec.calls, self.target, rec.ops)  # a user target's
        self._sessions = rec.sessions
        for call in rec.calls:  # a load equal to a saved state shares its value
            if call.saved is not None and call.saved.state is not None:
                self._states.offer(call.saved.state)
        steps = [Step(c.label, c.begin, c.end, c.error, payload=c) for c in rec.calls]
        data = _AgentRun(
            rec,
            begins=[c.begin for c in rec.calls],  # calls are sequential: both sorted
            ends=[math.inf if c.end is None else c.end for c in rec.calls],
        )
        if fault is not None:
            # A short count is no failure: the call must finish the write and return
            # normally, so F1 does not apply; a save acknowledged over a cut file is R1.
            data.short_count = (
                fault.kind is FaultKind.SHORT_COUNT
                and fault.at < len(rec.ops)
                and rec.ops[fault.at].errno is None
            )
        return Run(
            rec.initial,
            rec.ops,
            steps,
            fault,
            subjects=len(rec.sessions),
            data=data,
            marks=rec.marks,
            base=BASE_DIR,
        )

    def observe(self, state: CrashState) -> _Probed:
        probed = _probe(state, self._sessions, self.target, self.wanted, self._states, self._loads)
        return self._states.shared(probed)

    def trace_findings(self, run: Run) -> list[tuple[int, Finding]]:
        rec: Recording = run.data.recording
        first = rec.sessions[0] if rec.sessions else ""
        out: list[tuple[int, Finding]] = []
        fault = run.fault
        if fault is not None and not run.data.short_count:
            hit = next(
                (
                    c
                    for c in rec.calls
                    if c.begin <= fault.at and (c.end is None or fault.at < c.end)
                ),
                None,
            )
            if hit is not None and (
                hit.error != "state_save_failed" or hit.retryability != "conditional"
            ):
                got = (
                    f"{hit.label} returned normally"
                    if hit.error is None
                    else f"{hit.label} raised {hit.error}"
                    + (f" ({hit.retryability})" if hit.retryability else "")
                )
                out.append(
                    (
                        fault.at + 1,
                        Finding(
                            "F1",
                            f"{hit.kind.value} raises state_save_failed (conditional) after "
                            f"{fault.render()}",
                            got,
                            hit.session_id,
                        ),
                    )
                )
        # S1 judges the trace itself: an operation aimed outside the base directory is
        # a finding whether or not it succeeded and whether or not a crash follows it.
        for op in confinement_violations(rec.ops, BASE_DIR):
            failed = "" if op.errno is None else " (it failed, but was attempted)"
            out.append(
                (
                    op.index + 1,
                    Finding(
                        "S1",
                        f"no operation outside {BASE_DIR}",
                        op.render() + failed,
                        _session_of(rec.calls, op.index, first),
                    ),
                )
            )
        return out

    def judge(self, run: Run, k: int, state: CrashState, observation: _Probed) -> list[Finding]:
        data: _AgentRun = run.data
        rec = data.recording
        sessions = rec.sessions
        wanted = self.wanted
        if k != data.step_k:
            # What was acknowledged changes only where a call begins or returns: fold
            # the calls once per such step, not once per crash point.
            step = (bisect.bisect_right(data.begins, k), bisect.bisect_right(data.ends, k))
            exps = data.folded.get(step)
            if exps is None:
                exps = data.folded[step] = {
                    sid: expectation(
                        rec.calls, rec.expects.get(sid), sid, k, labelled=data.labelled
                    )
                    for sid in sessions
                }
            data.step_k, data.step = k, exps
        exps = data.step
        obs_by_sid, c1_by_sid, v1_by_sid = observation
        out: list[Finding] = []
        first = sessions[0] if sessions else ""
        if Invariant.S2 in wanted:
            # S2 judges every file of every crash state (SPEC.md §8): each leaking file
            # is reported once, at the first crash point and state where it holds it.
            digest = self.digests.state(state)
            for path, secret in self._leaks(state, digest):
                if (path, secret) not in data.leaked:
                    data.leaked.add((path, secret))
                    out.append(
                        Finding(
                            "S2",
                            "no secret in any file",
                            f"{path} holds {secret[:6]}… ({len(secret)} characters)",
                            first,
                        )
                    )
        # A state and a step judged before (equal probe results are one object; each
        # step's expectations too) judge the same.
        verdicts = data.judged.get((id(observation), id(exps)))
        if verdicts is None:
            verdicts = data.judged[id(observation), id(exps)] = [
                judge(obs_by_sid[sid], exps[sid], v1=v1_by_sid[sid]) for sid in sessions
            ]
        at_end = k == len(run.ops) and run.fault is not None and not data.short_count
        for sid, verdict in zip(sessions, verdicts, strict=True):
            if verdict is not None:
                inv = verdict[0]
                if at_end and inv in (Invariant.R1, Invariant.D1):
                    inv = Invariant.F1  # no crash after a fault: the failure was not clean
                if inv in wanted:
                    out.append(Finding(inv.value, verdict[1], obs_by_sid[sid].describe(), sid))
            if c1_by_sid.get(sid):
                out.append(
                    Finding(
                        "C1",
                        f"load_or_create raises {obs_by_sid[sid].code} and writes nothing",
                        "load_or_create wrote to the disk",
                        sid,
                    )
                )
        return out

    def describe_state(self, state: CrashState, run: Run, subject: str) -> dict[str, str]:
        rec: Recording = run.data.recording
        if rec is not self._known_for:
            self._known_for, self._known, self._rendered = rec, _known_blobs(rec), {}
        digest = self.digests.state(state)
        rendered = self._rendered.get((digest, subject))
        if rendered is None:
            storage = self.target(MemoryFileSystem(state), BASE_DIR)
            rendered = self._rendered[digest, subject] = _render_state(
                state, subject, storage, self._known
            )
        return rendered

    def replay(
        self, workload: Workload, model: PersistenceModel, k: int, fault: Fault | None
    ) -> str:
        extra = f" --fault {fault_spec(fault)}" if fault is not None else ""
        return (
            f"{self.command} {workload.name}"
            + (f" --target {self.target.name}" if self.command == _EXPLORE else "")
            + f" --model {model.name}{extra} --crash-point {k}"
        )

    # --- helpers ----------------------------------------------------------------------
    def _leaks(self, state: CrashState, digest: str) -> list[tuple[str, str]]:
        found = self.leaks.get(digest)
        if found is None:
            found = self.leaks[digest] = secrets_in_state(state, SECRETS) or _NO_LEAKS
        return found


AGENT_KINDS: dict[str, type[AgentStateKind]] = {AgentStateKind.name: AgentStateKind}
"""The agent kinds, by name: a workload's :attr:`Workload.kind` names the one that
judges it (``agent-run``, registered by the run workloads' module, adds N1, H1, T1)."""


@decode_memo()  # one content-addressed decode memo per exploration (issue 11)
def explore(
    workload: Workload,
    *,
    model: PersistenceModel | str = PROCESS_CRASH,
    target: Target | str | Factory | None = None,
    checker: Iterable[Invariant | str] | None = None,
    crash_point: int | None = None,
    shard: tuple[int, int] | None = None,
) -> EngineResult:
    """Explore every crash point of ``workload`` under ``model`` against ``target``.

    Records the workload once, derives each crash point's crash states, reboots each
    distinct state on a fresh :class:`~crashpoint.faultfs.MemoryFileSystem` with a
    fresh storage, loads every session and judges it (SPEC.md §8).

    Args:
        workload: the workload (see ``SCENARIOS``).
        model: the persistence model or its name (default process-crash).
        target: the storage, its name (default ``reference``), or a plain
            ``factory(fs, base_dir)`` (a target named after the factory).
        checker: the invariants to check (default: all but F1, which needs faults).
        crash_point: only this crash point ``k`` (replaying a counterexample).
        shard: ``(K, N)``, 1 ≤ K ≤ N: only crash states whose identity falls in
            slice K of N; the N shards together cover every state exactly once.

    Returns:
        the engine's result (:data:`~crashpoint.scenarios.ExplorationResult`);
        counterexamples sorted most severe, then minimal, first.
    """
    model, target = resolve(model, target)
    (result,) = explore_agent(
        workload,
        models=[model],
        target=target,
        checker=checker,
        crash_point=crash_point,
        shard=shard,
    )
    return result


def explore_agent(
    workload: Workload,
    *,
    models: Sequence[PersistenceModel],
    target: Target,
    checker: Iterable[Invariant | str] | None = None,
    faults: Sequence[Fault] | None = None,
    crashes: bool = True,
    crash_point: int | None = None,
    shard: tuple[int, int] | None = None,
    crash_window: int | None = 1,
    name: str = "",
    command: str = "",
) -> list[EngineResult]:
    """The agent kind through the engine: ``workload`` against ``target`` under each of
    ``models``, crash-free run (when ``crashes``) and every fault of ``faults``.
    ``name``: the target as results name it (default its own name); ``command``: the
    replay command up to the workload's name (:class:`AgentStateKind`)."""
    kind = AGENT_KINDS[workload.kind](target, checker=checker, command=command)
    kind.refuse_silent = crashes
    with exits_refused():  # a target's os._exit must not end the run as a pass
        return explore_models(
            kind,
            workload,
            models=models,
            target=name or target.name,
            faults=list(faults or ()),
            crashes=crashes,
            fault_window=crash_window,
            crash_point=crash_point,
            shard=shard,
            digests=kind.digests,
        )


def _session_of(calls: Sequence[Call], index: int, default: str) -> str:
    """The session of the call that issued operation ``index``."""
    for call in calls:
        if call.begin <= index and (call.end is None or index < call.end):
            return call.session_id
    return default


_Probed = tuple[dict[str, Observation], dict[str, bool], dict[str, bool]]
"""What a distinct crash state gave: per session, the load observed, whether C1's
load_or_create wrote, whether V1 requires a refusal."""

_NO_LEAKS: list[tuple[str, str]] = []  # shared by every state without a leak; never mutated


def _probe(
    state: CrashState,
    sessions: Sequence[str],
    target: Target,
    wanted: set[Invariant],
    states: _EqualStates | None = None,
    loads: _LoadMemo | None = None,
) -> _Probed:
    """Reboot ``state`` and load each session; for C1, also try load_or_create on a
    session that failed to load for a reason other than not-found; for V1, whether
    the disk holds a future version load must refuse. With ``states``, a loaded state
    equal to one loaded before is replaced by that one (kept once). With ``loads``
    (and ``states``), a load that read what a load read before gives what it gave then,
    without running again (:class:`_LoadMemo` says when that is sure)."""
    fs = MemoryFileSystem(state)
    memo = loads if loads is not None and not loads.off and states is not None else None
    built_in = target is _REFERENCE or target is _SEED
    storage: object = None
    tracer: _TracingFS | None = None
    config: tuple[object, ...] | None = None
    if memo is None:
        storage = target(fs, BASE_DIR)
    elif built_in and memo.built_in is not None:
        config = memo.built_in  # its storage (no other effect) is built on a miss
    else:
        # built over the probe's own filesystem, as without the memo; only a storage
        # the memo applies to is then given the tracer
        storage = target(fs, BASE_DIR)
        config = memo.config(storage, fs)
        if config is not None:
            tracer = memo.trace(storage, fs)
            if built_in:
                memo.built_in = config
    obs: dict[str, Observation] = {}
    leaves: dict[str, _Loaded] = {}
    for sid in sessions:
        leaf = None
        if config is not None and memo is not None:
            leaf = memo.find(fs, config, sid)
            if leaf is None and storage is None:
                storage = target(fs, BASE_DIR)
                if memo.config(storage, fs) != config:
                    memo.off = True
                    config = None
                else:
                    tracer = memo.trace(storage, fs)
        if leaf is None:
            if tracer is not None:
                tracer.log = []
            o = observe(storage, sid)
            if states is not None and o.state is not None:
                o = Observation(states.canonical(o.state), o.code, o.detail)
            leaf = _Loaded(o)
            if config is not None and memo is not None and tracer is not None:
                if tracer.tainted:
                    memo.off = True  # not a function of what it read
                else:
                    memo.add(config, sid, tracer.log, leaf)
                if memo.off:
                    config = None
        obs[sid] = leaf.obs
        leaves[sid] = leaf
    c1: dict[str, bool] = {}
    if Invariant.C1 in wanted:
        # A built-in target's load_or_create after a given load outcome does the same
        # whatever else is on the disk: it is known once per outcome.
        known_c1 = config is not None and (target is _REFERENCE or target is _SEED)
        for sid, o in obs.items():
            if o.state is None and o.code != ErrorCode.SESSION_NOT_FOUND:
                leaf = leaves[sid]
                wrote = leaf.c1 if known_c1 else None
                if wrote is None:
                    probe_fs = MemoryFileSystem(state)
                    with contextlib.suppress(Exception):
                        target(probe_fs, BASE_DIR).load_or_create(sid)
                    wrote = leaf.c1 = probe_fs.mutations > 0
                c1[sid] = wrote
    check_v1 = Invariant.V1 in wanted
    v1 = {sid: check_v1 and v1_required(state, BASE_DIR, sid) for sid in sessions}
    return obs, c1, v1


_REFERENCE = TARGETS["reference"]
_SEED = TARGETS["seed"]


class _Loaded:
    """What one load gave (its observation, loaded state made canonical) and, once
    asked, whether C1's load_or_create wrote after it (None: not asked yet)."""

    __slots__ = ("c1", "obs")

    def __init__(self, obs: Observation) -> None:
        self.obs = obs
        self.c1: bool | None = None


_Read = Callable[[MemoryFileSystem, str], object]
_READS: dict[str, _Read] = {
    "exists": MemoryFileSystem.exists,
    "is_dir": MemoryFileSystem.is_dir,
    "read": MemoryFileSystem.read,
    "listdir": MemoryFileSystem.listdir,
    "size": MemoryFileSystem.size,
}
"""The read-only calls of the filesystem protocol."""

_Call = tuple[_Read, str, object]
"""One traced call: the read, its path, and what it gave (:func:`_answer`)."""


def _answer(value: object, file_key: Callable[[bytes], bytes]) -> object:
    """A hashable key equal for equal results of one read: a content by its sha256,
    else the value with its type; None when it cannot be keyed."""
    if type(value) is bytes:
        return (bytes, file_key(value))
    if type(value) is bool or type(value) is int or type(value) is str:
        return (type(value), value)
    if type(value) is list and all(type(v) is str for v in value):
        return (list, tuple(value))
    return None


def _raised(exc: Exception) -> object:
    """A hashable key equal for equal exceptions (type, arguments, file names); None
    when it cannot be keyed."""
    key = (type(exc), exc.args, getattr(exc, "filename", None), getattr(exc, "filename2", None))
    try:
        hash(key)
    except TypeError:
        return None
    return ("raised", key)


class _TracingFS:
    """The filesystem a probed storage is given: every call goes to ``fs``; the reads
    are logged with what they gave (``log``, for :class:`_LoadMemo`); any other call or
    attribute marks the storage ``tainted`` (what it does is then not only a function
    of what it read)."""

    __slots__ = ("_fs", "file_key", "log", "tainted")

    def __init__(self, fs: MemoryFileSystem, file_key: Callable[[bytes], bytes]) -> None:
        self._fs = fs
        self.file_key = file_key
        self.log: list[_Call] = []
        self.tainted = False

    def _read(self, name: str, path: str) -> object:
        read = _READS[name]
        try:
            value = read(self._fs, path)
        except Exception as exc:
            key = _raised(exc)
            self._note(read, path, key)
            raise
        self._note(read, path, _answer(value, self.file_key))
        return value

    def _note(self, read: _Read, path: str, key: object) -> None:
        if key is None or type(path) is not str:
            self.tainted = True
        else:
            self.log.append((read, path, key))

    def exists(self, path: str) -> bool:
        return self._read("exists", path)  # type: ignore[return-value]

    def is_dir(self, path: str) -> bool:
        return self._read("is_dir", path)  # type: ignore[return-value]

    def read(self, path: str) -> bytes:
        return self._read("read", path)  # type: ignore[return-value]

    def listdir(self, path: str) -> list[str]:
        return self._read("listdir", path)  # type: ignore[return-value]

    def size(self, path: str) -> int:
        return self._read("size", path)  # type: ignore[return-value]

    def mkdir(self, path: str) -> None:
        self.tainted = True
        self._fs.mkdir(path)

    def create(self, path: str, *, exclusive: bool = False) -> None:
        self.tainted = True
        self._fs.create(path, exclusive=exclusive)

    def write(self, path: str, offset: int, data: bytes) -> int:
        self.tainted = True
        return self._fs.write(path, offset, data)

    def truncate(self, path: str, size: int) -> None:
        self.tainted = True
        self._fs.truncate(path, size)

    def rename(self, src: str, dst: str) -> None:
        self.tainted = True
        self._fs.rename(src, dst)

    def unlink(self, path: str) -> None:
        self.tainted = True
        self._fs.unlink(path)

    def fsync(self, path: str) -> None:
        self.tainted = True
        self._fs.fsync(path)

    def fsync_dir(self, path: str) -> None:
        self.tainted = True
        self._fs.fsync_dir(path)

    def lock(self, path: str, timeout: float) -> int:
        self.tainted = True
        return self._fs.lock(path, timeout)

    def unlock(self, path: str, handle: int) -> None:
        self.tainted = True
        self._fs.unlock(path, handle)

    def rmdir(self, path: str) -> None:
        self.tainted = True
        self._fs.rmdir(path)

    def link(self, src: str, dst: str) -> None:
        self.tainted = True
        self._fs.link(src, dst)

    def fdatasync(self, path: str) -> None:
        self.tainted = True
        self._fs.fdatasync(path)

    def __getattr__(self, name: str) -> object:
        self.tainted = True  # anything beyond the protocol (the image, the log ...)
        return getattr(self._fs, name)


class _Node:
    """A read a load made, and where each of its answers led (the next read, or what
    the load gave)."""

    __slots__ = ("branches", "path", "read")

    def __init__(self, read: _Read, path: str) -> None:
        self.read = read
        self.path = path
        self.branches: dict[object, _Node | _Loaded] = {}


class _LoadMemo:
    """A read-set memo of loads: what ``load(session_id)`` gave, by the answers to the
    reads it made (which paths exist, what they hold ...), per storage configuration.

    Sound for a storage whose load is a deterministic function of the session id and
    of what it reads, with no other effect: a load asked the same questions that gets
    the same answers asks the same next question and gives the same outcome. Used only
    for a :class:`~crashpoint.core.FileStateStorage` exactly (whose load is that;
    mutants and user classes load for real), built by the target over the probe's
    filesystem without writing to it, then given a tracer to read through (its
    constructor reads nothing, so no answer is missed); a storage that writes,
    reaches past the filesystem protocol or reads differently after the same answers
    turns the memo ``off`` for good. Holds contents by their sha256 only.
    """

    __slots__ = ("_roots", "built_in", "file_key", "off")

    def __init__(self, file_key: Callable[[bytes], bytes]) -> None:
        self.file_key = file_key
        self._roots: dict[tuple[object, str], _Node | _Loaded] = {}
        self.off = False
        # the configuration of the storages a built-in target builds (None: not known yet)
        self.built_in: tuple[object, ...] | None = None

    def config(self, storage: object, fs: MemoryFileSystem) -> tuple[object, ...] | None:
        """The configuration ``storage`` (just built by the target over the probe's
        filesystem ``fs``) is memoised under, or None (then the memo is off: the target
        builds storages it does not apply to, or its building wrote to ``fs``)."""
        if type(storage) is not FileStateStorage or storage.fs is not fs or fs.log:
            self.off = True
            return None
        return (storage.base_dir, storage.sync, storage.ended_marker, storage.strict)

    def trace(self, storage: object, fs: MemoryFileSystem) -> _TracingFS:
        """Give ``storage`` (one :meth:`config` accepted: a FileStateStorage exactly) a
        tracer over ``fs`` to read through: its loads are logged from here on."""
        assert type(storage) is FileStateStorage
        tracer = _TracingFS(fs, self.file_key)
        storage.fs = tracer
        return tracer

    def find(self, fs: MemoryFileSystem, config: object, session_id: str) -> _Loaded | None:
        """What ``load(session_id)`` gave before on a disk that answers its reads as
        ``fs`` does, or None."""
        node = self._roots.get((config, session_id))
        file_key = self.file_key
        while type(node) is _Node:
            try:
                key = _answer(node.read(fs, node.path), file_key)
            except Exception as exc:
                key = _raised(exc)
            node = node.branches.get(key)
        return node  # type: ignore[return-value]

    def add(self, config: object, session_id: str, log: list[_Call], loaded: _Loaded) -> None:
        """Remember that a load of ``session_id`` that made the reads of ``log`` gave
        ``loaded``."""
        roots = self._roots
        root = (config, session_id)
        if not log:
            if roots.setdefault(root, loaded) is not loaded:
                self.off = True  # it read before, or gave something else
            return
        node = roots.get(root)
        if node is None:
            node = roots[root] = _Node(log[0][0], log[0][1])
        last = len(log) - 1
        for i, (read, path, key) in enumerate(log):
            if type(node) is not _Node or node.read is not read or node.path != path:
                self.off = True  # another read after the same answers
                return
            after = node.branches.get(key)
            if i == last:
                if after is not None:
                    self.off = True  # it would have been found
                    return
                node.branches[key] = loaded
                return
            if after is None:
                after = node.branches[key] = _Node(log[i + 1][0], log[i + 1][1])
            node = after


class _EqualStates:
    """Loaded agent states kept once per value: :meth:`canonical` gives the first
    state seen equal to the one given (``==``, field by field), so a crash state's
    observation holds a shared reference, not a decoded copy of its own. The verdicts
    (:func:`judge`, ``describe``) depend on a state's value only."""

    __slots__ = ("_buckets", "_probed")

    def __init__(self) -> None:
        self._buckets: dict[tuple[object, ...], list[AgentState]] = {}
        # equal probe results (by the identity of their kept states), kept once
        self._probed: dict[tuple[object, ...], _Probed] = {}

    def shared(self, probed: _Probed) -> _Probed:
        """``probed``, or an equal probe result kept before (its loaded states already
        made canonical): most distinct crash states load the same way."""
        obs, c1, v1 = probed
        key = (
            tuple((sid, id(o.state), o.code, o.detail) for sid, o in obs.items()),
            tuple(c1.items()),
            tuple(v1.items()),
        )
        found = self._probed.get(key)
        if found is None:
            found = self._probed[key] = probed
        return found

    @staticmethod
    def _key(state: AgentState) -> tuple[object, ...]:
        return (
            state.session_id,
            state.schema_version,
            len(state.messages),
            state.is_running,
            state.total_loop_count,
            state.current_loop_count,
            len(state.usages),
            len(state.episodic_memories),
        )

    def offer(self, state: AgentState) -> None:
        """Make ``state`` (one the caller keeps anyway: a recording's expected state)
        the one kept for its value, unless this very object is known."""
        bucket = self._buckets.setdefault(self._key(state), [])
        if not any(known is state for known in bucket):
            bucket.append(state)

    def canonical(self, state: AgentState) -> AgentState:
        """The first state kept equal to ``state``; else ``state``, kept from now on."""
        bucket = self._buckets.setdefault(self._key(state), [])
        for known in bucket:
            if known is state or known == state:
                return known
        bucket.append(state)
        return state


def refuse_silent_saves(calls: Sequence[Any], target: Target, ops: Sequence[Op] = ()) -> None:
    """No false green: a user's target (not a registered one) is refused with
    :class:`~crashpoint.scenarios.targets.user.BadTarget` when, in a crash-free run
    with no fault injected, every save returned without a single mutating file operation
    ("save returned but no file operation was recorded: ...": its storage ignores the
    filesystem it was given; one such save beside saves that wrote is judged instead)
    or raised ``state_save_failed`` though none of its
    operations in ``ops`` (the run's trace) failed ("save raised state_save_failed on
    a clean run: ..."; SPEC.md §5: a failed write, rename, delete or sync makes save
    fail). A store that never acknowledges a save breaks no invariant (nothing
    acknowledged is ever lost) and would pass."""
    name = target.name
    if TARGETS.get(name) is target or MUTANTS.get(name.removeprefix("mutant:")) is target:
        return
    # A save that wrote nothing while another wrote does not ignore fs: it returned
    # without doing its work (a StateError swallowed, issue 22), judged by the invariants.
    wrote = any(c.kind is CallKind.SAVE and c.end != c.begin for c in calls)
    for call in calls:
        if call.kind is not CallKind.SAVE:
            continue
        if call.error is None and call.end == call.begin and not wrote:
            raise BadTarget(
                f"save returned but no file operation was recorded: target {name!r} "
                f"({call.label}) writes nowhere the harness can see (does it ignore fs?)"
            )
        if (
            call.error is not None
            and call.error == ErrorCode.STATE_SAVE_FAILED
            and all(op.errno is None for op in ops[call.begin : call.end])
        ):
            raise BadTarget(
                f"save raised state_save_failed on a clean run: target {name!r} "
                f"({call.label}) failed though no file operation of it failed"
            )


def explore_faults(
    workload: Workload,
    *,
    model: PersistenceModel | str = PROCESS_CRASH,
    target: Target | str | None = None,
    checker: Iterable[Invariant | str] | None = None,
    faults: Sequence[Fault] | None = None,
    shard: tuple[int, int] | None = None,
    crash_window: int | None = 1,
) -> EngineResult:
    """Run ``workload`` once per fault of :func:`fault_plan` (or ``faults``) and check
    F1, then every invariant at the crash points after the fault.

    ``crash_window``: how many crash points right after the failed operation are
    explored (default 1: a crash right after the failure), plus the end of the run
    (no crash: F1); None explores every crash point from the fault on.

    Returns the engine's result, whose ``faults`` counts the faulted runs.
    """
    (result,) = explore_faults_models(
        workload,
        models=(model,),
        target=target,
        checker=checker,
        faults=faults,
        shard=shard,
        crash_window=crash_window,
    )
    return result


@decode_memo()  # one content-addressed decode memo per exploration (issue 11)
def explore_faults_models(
    workload: Workload,
    *,
    models: Sequence[PersistenceModel | str],
    target: Target | str | None = None,
    checker: Iterable[Invariant | str] | None = None,
    faults: Sequence[Fault] | None = None,
    shard: tuple[int, int] | None = None,
    crash_window: int | None = 1,
) -> list[EngineResult]:
    """:func:`explore_faults` under each of ``models``, recording each faulted run
    once (a recording does not depend on the model): one result per model, in order,
    each the same as ``explore_faults`` gives for that model."""
    resolved = [resolve(m, target) for m in models]
    agent = resolved[0][1]
    plan = list(faults) if faults is not None else fault_plan(record(workload, agent).ops)
    return explore_agent(
        workload,
        models=[m for m, _ in resolved],
        target=agent,
        checker=checker,
        faults=plan,
        crashes=False,
        shard=shard,
        crash_window=crash_window,
    )

"""Exploration: record a workload once, derive every crash state, reboot, check.

:func:`explore` is the plain entry point (STYLE.md §8)::

    result = explore(SCENARIOS["three-saves"], model=PROCESS_CRASH)
    result.assert_no_violations()
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import math
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..core import AgentState, ErrorCode, FileStateStorage, encode_bytes
from ..core._codec import decode_memo
from ..faultfs import (
    PROCESS_CRASH,
    CrashState,
    Fault,
    MemoryFileSystem,
    Op,
    OpKind,
    PersistenceModel,
    RecordingFileSystem,
    crash_points,
    get_model,
)
from ._checkers import (
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
    severity_rank,
    v1_required,
)
from ._engine import judged_crash_states
from ._targets import TARGETS, Factory, Target, get_target
from ._usertarget import a_storage, exits_refused
from ._workload import BASE_DIR, Call, CallKind, Expect, Session, Workload

__all__ = ["SECRETS", "Checker", "ExplorationResult", "Recording", "Violation", "explore", "record"]

SECRETS: tuple[str, ...] = ("sk-crashpoint-test-SECRET-0001",)
"""Secret values a runtime holds (an API key); no file may ever contain one (S2)."""

_ROOT_DIRS = ("/data",)


@dataclass(frozen=True, slots=True)
class Violation:
    """A counterexample: one invariant failing in one crash state.

    Attributes:
        invariant: the invariant id (``"R1"`` ...).
        scenario: the workload's name.
        model: the persistence model's name.
        target: the storage's target name.
        crash_point: ``k``, the number of operations done before the crash.
        operation: the operation that did not run, rendered (``"(end of run)"`` if none).
        last_done: the last operation that did run, rendered.
        session_id: the session judged.
        crash_state: each session file, rendered (``{"s1.json": "empty", ...}``).
        state_digest: the crash state's identity.
        expected: what load had to give.
        got: what load gave.
        replay: one command that replays this counterexample.
        fault: the injected fault (``AT:NAME``), or ``""`` for a plain crash.
    """

    invariant: str
    scenario: str
    model: str
    target: str
    crash_point: int
    operation: str
    last_done: str
    session_id: str
    crash_state: Mapping[str, str]
    state_digest: str
    expected: str
    got: str
    replay: str
    fault: str = ""

    def where(self) -> str:
        """The crash point in words: between which operations the machine stopped, or
        that the run completed (or issued no operation) and no crash happened."""
        return crash_point_words(self.crash_point, self.last_done, self.operation)

    def render(self) -> str:
        inv = Invariant(self.invariant)
        files = render_files(self.crash_state)
        fault = f", injected fault {self.fault}" if self.fault else ""
        return (
            f"{self.invariant} ({inv.label}) violated in scenario {self.scenario!r} under "
            f"{self.model}{fault}, target {self.target}\n"
            f"  invariant ({inv.severity}): {inv.meaning}\n"
            f"  crash point {self.crash_point}: {self.where()}\n"
            f"  crash state:\n{files}\n"
            f"  {got_label(self.invariant, self.session_id)}: {self.got}\n"
            f"  expected: {self.expected}\n"
            f"  replay: {self.replay}"
        )


_NOTHING_DONE = "(nothing)"
_RUN_DONE = "(no crash: the run completed)"


def crash_point_words(k: int, last_done: str, operation: str) -> str:
    """Where crash point ``k`` lies, said plainly (``last_done``/``operation`` as a
    :class:`Violation` holds them)."""
    if operation == _RUN_DONE:
        if last_done == _NOTHING_DONE:
            return "no crash; the run issued no file operation (the disk as it started)"
        return f"no crash; the run completed (its last operation: {last_done})"
    if last_done == _NOTHING_DONE:
        return f"before the first operation, {operation} (nothing done yet)"
    return f"after {last_done}, before {operation}"


def got_label(invariant: str, session_id: str) -> str:
    """What the ``got`` of a finding is: what load returned, or for S1 and S2 (judged
    on the operations and the files themselves, not on a load) what was found."""
    if invariant in (Invariant.S1.value, Invariant.S2.value):
        return "found"
    return f"load({session_id!r}) returned"


def render_files(crash_state: Mapping[str, str], indent: str = "    ") -> str:
    """One line per file of a rendered crash state; an empty disk says so."""
    if not crash_state:
        return f"{indent}(empty: no files)"
    return "\n".join(f"{indent}{name}: {what}" for name, what in crash_state.items())


NO_SESSION = (
    "the workload made no storage call and its setup wrote no session: no load was "
    "judged, nothing about the storage was verified"
)


@dataclass(slots=True)
class ExplorationResult:
    """What exploring one workload under one model found.

    Attributes:
        scenario, model, target: what was explored.
        operations: mutating operations in the recorded run.
        crash_points: crash points examined (``operations + 1`` unless restricted).
        raw_states: crash states derived, before deduplication.
        distinct_states: distinct crash states rebooted and loaded.
        cut: combinations the model's enumeration bounds left out, an upper bound on
            the distinct crash states not explored (FAULT-MODEL.md §3; 0: exhaustive).
        invariants: ids of the invariants checked.
        violations: every counterexample, most severe first (SPEC.md §8 classes:
            security, data-loss, invalid-history, semantics, warning), then minimal
            (smallest crash point).
        seconds: wall time of the whole exploration.
        check_seconds: time spent rebooting, loading and judging crash states.
        faults: faulted re-runs explored (0: crashes only).
        state_ids: identities of the distinct crash states (to merge split runs).
        sessions: sessions judged, when known (:func:`explore` sets it: those the
            setup wrote and those the workload's storage calls named); 0 means no
            load was judged at all, so nothing about the storage was verified.
    """

    def merge(self, other: ExplorationResult) -> None:
        """Add ``other``, a disjoint part of the same exploration (another slice of the
        fault plan or of the crash-state space), into this result."""
        self.crash_points += other.crash_points
        self.raw_states += other.raw_states
        self.cut += other.cut
        self.faults += other.faults
        self.state_ids |= other.state_ids
        self.distinct_states = len(self.state_ids)
        self.violations = sorted([*self.violations, *other.violations], key=violation_order)
        self.seconds += other.seconds
        self.check_seconds += other.check_seconds
        if other.sessions is not None:
            self.sessions = max(self.sessions or 0, other.sessions)

    scenario: str
    model: str
    target: str
    operations: int = 0
    crash_points: int = 0
    raw_states: int = 0
    distinct_states: int = 0
    cut: int = 0
    invariants: tuple[str, ...] = ()
    violations: list[Violation] = field(default_factory=list)
    seconds: float = 0.0
    check_seconds: float = 0.0
    faults: int = 0
    state_ids: set[str] = field(default_factory=set, repr=False)
    sessions: int | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        return not self.violations

    @property
    def exhaustive(self) -> bool:
        """Whether every crash state of the model was explored (``cut == 0``); a
        bounded run is never called exhaustive."""
        return self.cut == 0

    def killed_by(self) -> list[str]:
        """The distinct invariant ids violated, most severe class first, in catalogue
        order within a class."""
        found = {v.invariant for v in self.violations}
        ids = [i.value for i in INVARIANTS if i.value in found]
        return sorted(ids, key=severity_rank)

    def assert_no_violations(self) -> None:
        """Raise ``AssertionError`` carrying the most severe, minimal counterexample, if
        any; or saying so when nothing was verified: no crash point examined (a crash
        point no run has, an empty shard), no invariant checked, or no session judged
        (the workload made no storage call)."""
        if self.violations:
            more = len(self.violations) - 1
            tail = f"\n  (and {more} more violation(s))" if more else ""
            raise AssertionError(self.violations[0].render() + tail)
        # a faulted exploration of a run without operations has no fault to inject
        nothing_to_fault = "F1" in self.invariants and not self.operations
        if not self.crash_points and not nothing_to_fault:
            raise AssertionError(
                f"{self.scenario} under {self.model}: no crash point was examined (a crash "
                "point or shard no run has): nothing was verified"
            )
        if not self.invariants:
            raise AssertionError(f"{self.scenario}: no invariant was checked: nothing verified")
        if self.sessions == 0:
            raise AssertionError(f"{self.scenario}: {NO_SESSION}")


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


def new_result(
    workload: Workload,
    model: PersistenceModel,
    target: Target,
    wanted: set[Invariant],
    *,
    operations: int,
    faults: int = 0,
) -> ExplorationResult:
    """An empty result for exploring ``workload`` (invariants in catalogue order)."""
    return ExplorationResult(
        workload.name,
        model.name,
        target.name,
        operations=operations,
        invariants=tuple(i.value for i in INVARIANTS if i in wanted),
        faults=faults,
    )


def _wanted(checker: Iterable[Invariant | str] | None, *, faults: bool) -> set[Invariant]:
    chosen = {Invariant(i) for i in (checker if checker is not None else INVARIANTS)}
    if not faults:
        chosen.discard(Invariant.F1)  # F1 needs injected faults (explore_faults)
    return chosen


@decode_memo()  # one content-addressed decode memo per exploration (issue 11)
def explore(
    workload: Workload,
    *,
    model: PersistenceModel | str = PROCESS_CRASH,
    target: Target | str | Factory | None = None,
    checker: Iterable[Invariant | str] | None = None,
    crash_point: int | None = None,
    shard: tuple[int, int] | None = None,
) -> ExplorationResult:
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
        an :class:`ExplorationResult`; violations sorted minimal first.
    """
    started = time.perf_counter()
    model, target = resolve(model, target)
    wanted = _wanted(checker, faults=False)
    from ._conformance import refuse_silent_saves

    with exits_refused():  # a target's os._exit must not end the run as a pass
        recording = record(workload, target)
        refuse_silent_saves(recording.calls, target, recording.ops)  # a user target's
        result = new_result(workload, model, target, wanted, operations=len(recording.ops))
        checker_run = Checker(workload, model, target, wanted)
        checker_run.check(recording, result, crash_point=crash_point, shard=shard)
    checker_run.finish(result)
    result.sessions = len(recording.sessions)
    result.seconds = time.perf_counter() - started
    return result


class Checker:
    """Judges recordings of one workload against one target under one model.

    Keeps the per-crash-state cache (reboot + load happen once per distinct state,
    across every recording it checks: the faulted re-runs of a workload share most
    of their crash states), keyed by the state's digest: it holds what the verdicts
    need (each load's outcome, equal loaded states and equal outcomes kept once), never
    a crash state's files, so its memory does not grow with them (issue 11).
    """

    def __init__(
        self,
        workload: Workload,
        model: PersistenceModel,
        target: Target,
        wanted: set[Invariant],
    ) -> None:
        self.workload = workload
        self.model = model
        self.target = target
        self.wanted = wanted
        # Per distinct crash state, by its identity (CrashState.digest): the verdict
        # material, never the state's files, and no decoded state of its own (equal
        # loaded states are kept once, in ``_states``): memory does not grow with the
        # files of the crash states (issue 11).
        self.observed: dict[str, _Probed] = {}
        self.probed: dict[str, object] = {}
        self.leaks: dict[str, list[tuple[str, str]]] = {}
        self.check_seconds = 0.0
        self._states = _EqualStates()
        self._digests = _FileDigests()
        self._loads = _LoadMemo(self._digests.file)
        # Violations of one recording share its known snapshots and their renderings.
        self._known_for: Recording | None = None
        self._known: dict[bytes, str] = {}
        self._rendered: dict[tuple[str, str], dict[str, str]] = {}

    def violation(
        self,
        recording: Recording,
        inv: Invariant,
        k: int,
        state: CrashState,
        sid: str,
        expected: str,
        got: str,
        *,
        extra: str = "",
    ) -> Violation:
        ops = recording.ops
        replay = (
            f"crashpoint explore --scenario {self.workload.name} --target {self.target.name} "
            f"--model {self.model.name}{extra} --crash-point {k}"
        )
        if recording is not self._known_for:
            self._known_for, self._known, self._rendered = recording, _known_blobs(recording), {}
        digest = self._digests.state(state)
        rendered = self._rendered.get((digest, sid))
        if rendered is None:
            storage = self.target(MemoryFileSystem(state), BASE_DIR)
            rendered = self._rendered[digest, sid] = _render_state(state, sid, storage, self._known)
        return Violation(
            inv.value,
            self.workload.name,
            self.model.name,
            self.target.name,
            k,
            ops[k].render() if k < len(ops) else _RUN_DONE,
            ops[k - 1].render() if k > 0 else _NOTHING_DONE,
            sid,
            rendered,
            digest,
            expected,
            got,
            replay,
            extra.removeprefix(" --fault ") if extra.startswith(" --fault ") else "",
        )

    def check(
        self,
        recording: Recording,
        result: ExplorationResult,
        *,
        crash_point: int | None = None,
        shard: tuple[int, int] | None = None,
        from_point: int = 0,
        only: Collection[int] | None = None,
        extra: str = "",
        end_invariant: Invariant | None = None,
    ) -> None:
        """Judge every crash point ``k >= from_point`` of ``recording`` into ``result``
        (only those in ``only``, when given).

        ``end_invariant``: the invariant a finding at the end of the run (no crash)
        is reported under (F1 for a faulted run), instead of R1/D1.
        """
        wanted = self.wanted
        ops = recording.ops
        sessions = recording.sessions
        for call in recording.calls:  # a load equal to a saved state shares its value
            if call.saved is not None and call.saved.state is not None:
                self._states.offer(call.saved.state)
        first = sessions[0] if sessions else ""
        out = result.violations

        def emit(inv: Invariant, k: int, st: CrashState, sid: str, exp: str, got: str) -> None:
            out.append(self.violation(recording, inv, k, st, sid, exp, got, extra=extra))

        # S1 judges the trace itself: an operation aimed outside the base directory is
        # a finding whether or not it succeeded and whether or not a crash follows it.
        if Invariant.S1 in wanted:
            for op in confinement_violations(ops, BASE_DIR):
                k = op.index + 1
                if k >= from_point and crash_point in (None, k):
                    failed = "" if op.errno is None else " (it failed, but was attempted)"
                    emit(
                        Invariant.S1,
                        k,
                        _state_after(recording, k),
                        _session_of(recording.calls, op.index, first),
                        f"no operation outside {BASE_DIR}",
                        op.render() + failed,
                    )
        # S2 judges every file of every crash state (SPEC.md §8): each leaking file is
        # reported once, at the first crash point and state where it holds the secret.
        leaked: set[tuple[str, str]] = set()

        begins = [c.begin for c in recording.calls]  # calls are sequential: both sorted
        ends = [math.inf if c.end is None else c.end for c in recording.calls]
        folded: dict[tuple[int, int], dict[str, Expectation]] = {}
        judged: dict[tuple[int, int], list[tuple[Invariant, str] | None]] = {}
        labelled: dict[int, Expect] = {}  # each save's outcome, shared by the folds
        workload = self.workload
        check_s2 = Invariant.S2 in wanted
        # The engine enumerates, filters and counts the crash states (it knows no
        # kind); judging them against SPEC.md §8 is this kind's part.
        for k, states in judged_crash_states(
            self.model,
            recording.initial,
            ops,
            result,
            from_point=from_point,
            only=only,
            crash_point=crash_point,
            shard=shard,
        ):
            t0 = time.perf_counter()
            # What was acknowledged changes only where a call begins or returns: fold
            # the calls once per such step, not once per crash point.
            step = (bisect.bisect_right(begins, k), bisect.bisect_right(ends, k))
            exps = folded.get(step)
            if exps is None:
                exps = folded[step] = {
                    sid: expectation(
                        recording.calls, recording.expects.get(sid), sid, k, labelled=labelled
                    )
                    for sid in sessions
                }
            at_end = k == len(ops)
            for state in states:
                result.raw_states += 1
                digest = self._digests.state(state)
                cached = self.observed.get(digest)
                if cached is None:
                    cached = _probe(state, sessions, self.target, wanted, self._states, self._loads)
                    cached = self.observed[digest] = self._states.shared(cached)
                obs_by_sid, c1_by_sid, v1_by_sid = cached
                if check_s2:
                    for path, secret in self._leaks(state, digest):
                        if (path, secret) not in leaked:
                            leaked.add((path, secret))
                            emit(
                                Invariant.S2,
                                k,
                                state,
                                first,
                                "no secret in any file",
                                f"{path} holds {secret[:6]}… ({len(secret)} characters)",
                            )
                # A state and a step judged before (equal probe results are one object,
                # kept in ``observed``; each step's expectations too) judge the same.
                verdicts = judged.get((id(cached), id(exps)))
                if verdicts is None:
                    verdicts = judged[id(cached), id(exps)] = [
                        judge(obs_by_sid[sid], exps[sid], v1=v1_by_sid[sid]) for sid in sessions
                    ]
                for sid, verdict in zip(sessions, verdicts, strict=True):
                    obs = obs_by_sid[sid]
                    if verdict is not None:
                        inv = verdict[0]
                        if (
                            end_invariant is not None
                            and at_end
                            and inv in (Invariant.R1, Invariant.D1)
                        ):
                            inv = end_invariant
                        if inv in wanted:
                            emit(inv, k, state, sid, verdict[1], obs.describe())
                    if c1_by_sid.get(sid):
                        emit(
                            Invariant.C1,
                            k,
                            state,
                            sid,
                            f"load_or_create raises {obs.code} and writes nothing",
                            "load_or_create wrote to the disk",
                        )
                if workload.probe is not None and workload.check is not None:
                    probed = self.probed.get(digest, _NOT_PROBED)
                    if probed is _NOT_PROBED:
                        probed = self.probed[digest] = workload.probe(state, self.target.factory)
                    marks = recording.marks_before(k)
                    for f in workload.check(probed, k, marks):
                        inv = Invariant(f.invariant)
                        if inv in wanted:
                            emit(inv, k, state, f.session_id, f.expected, f.got)
            self.check_seconds += time.perf_counter() - t0

    def _leaks(self, state: CrashState, digest: str) -> list[tuple[str, str]]:
        found = self.leaks.get(digest)
        if found is None:
            found = self.leaks[digest] = secrets_in_state(state, SECRETS) or _NO_LEAKS
        return found

    def finish(self, result: ExplorationResult) -> None:
        """Sort the violations (most severe, then minimal, first) and fill in the
        distinct-state count."""
        result.state_ids = set(self.observed)
        result.distinct_states = len(result.state_ids)
        result.violations.sort(key=violation_order)
        result.check_seconds = self.check_seconds


def violation_order(v: Violation) -> tuple[int, int, str, str, str, str, str]:
    """Most severe first (SPEC.md §8: security, data-loss, invalid-history, semantics,
    warning), then minimal (smallest crash point), then a total order, so a report
    does not depend on how the work was split."""
    return (
        severity_rank(v.invariant),
        v.crash_point,
        v.invariant,
        v.session_id,
        v.state_digest,
        v.replay,
        v.got,
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

_NOT_PROBED = object()
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

    def create(self, path: str) -> None:
        self.tainted = True
        self._fs.create(path)

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


def _state_after(recording: Recording, k: int) -> CrashState:
    for point in crash_points(PROCESS_CRASH, recording.initial, recording.ops[:k], points=(k,)):
        if point.index == k:
            return point.states[0]
    raise ValueError(k)


def _in_shard(state: CrashState, shard: tuple[int, int]) -> bool:
    k, n = shard
    return int(state.digest(), 16) % n == k - 1


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


class _FileDigests:
    """:meth:`CrashState.digest` with each file's sha256 remembered while its bytes are
    (crash states of neighbouring crash points share their ``bytes`` objects), and each
    state's digest while the state is (the same state recurs at many crash points); at
    most :attr:`LIMIT` bytes of contents are held by each memo, then it starts again."""

    LIMIT = 8 * 2**20

    __slots__ = ("_held", "_sha", "_state_held", "_states")

    def __init__(self) -> None:
        self._sha: dict[bytes, bytes] = {}
        self._held = 0
        self._states: dict[tuple[object, object], str] = {}
        self._state_held = 0

    def file(self, data: bytes) -> bytes:
        found = self._sha.get(data)
        if found is None:
            found = hashlib.sha256(data).digest()
            if self._held + len(data) > self.LIMIT:
                self._sha.clear()
                self._held = 0
            if len(data) <= self.LIMIT:
                self._sha[data] = found
                self._held += len(data)
        return found

    def state(self, state: CrashState) -> str:
        if type(state) is not CrashState:  # a subclass may digest otherwise
            return state.digest(self.file)
        key = (state.files, state.dirs)  # what CrashState equality compares
        try:
            found = self._states.get(key)
        except TypeError:  # a state built of lists: not hashable, not remembered
            return state.digest(self.file)
        if found is None:
            found = state.digest(self.file)
            size = sum(len(data) for _, data in state.files)
            if self._state_held + size > self.LIMIT:
                self._states.clear()
                self._state_held = 0
            if size <= self.LIMIT:
                self._states[key] = found
                self._state_held += size
        return found

"""The exploration engine: record → crash states → reboot → observe → judge (STYLE.md §15).

The engine knows no target kind. A *kind* (:class:`Kind`) says what a workload is
(``record``: run it once, crash-free or with one fault armed, on a recording
filesystem), how a rebooted crash state is observed (``observe``) and which
invariants judge it (``judge``, ``trace_findings``). The engine derives every
crash point's crash states under a persistence model
(:func:`~crashpoint.faultfs.crash_points`), observes each distinct state once,
collects every finding, and counts what it examined; it never imports agent state
or documents. Invariants are data: each kind registers its ids, labels, severities
and meanings with :func:`register_invariants` so reports can render any of them.
"""

from __future__ import annotations

import errno
import hashlib
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from ...faultfs import (
    PROCESS_CRASH,
    CrashPoint,
    CrashState,
    Fault,
    FaultKind,
    Op,
    OpKind,
    PersistenceModel,
    crash_points,
    device_default,
)
from ...faultfs._fresh import match_fresh_names, op_difference

__all__ = [
    "AGENT_TIEBREAK",
    "CONFINED",
    "NOTHING_DONE",
    "RUN_DONE",
    "SEVERITIES",
    "Counterexample",
    "CrashTrace",
    "EngineResult",
    "FileDigests",
    "Finding",
    "InvariantInfo",
    "Kind",
    "Run",
    "Step",
    "Tally",
    "counterexample_order",
    "crash_point_words",
    "detail_key",
    "explore_kind",
    "explore_models",
    "fault_spec",
    "got_label",
    "invariant_ids",
    "invariant_info",
    "judged_crash_states",
    "prefix_state",
    "recovery_points",
    "register_invariants",
    "severity_rank",
    "state_after",
]

SEVERITIES = ("security", "data-loss", "invalid-history", "semantics", "warning")
"""Severity classes, most severe first (SPEC.md §8 and §10); reports order findings so."""


@dataclass(frozen=True, slots=True)
class InvariantInfo:
    """One invariant as reports render it.

    Attributes:
        id: ``"R1"``, ``"A1"`` ...
        label: its short name (``"atomic"``).
        severity: one of :data:`SEVERITIES`.
        meaning: what it promises, one sentence (SPEC.md §8, §10).
    """

    id: str
    label: str
    severity: str
    meaning: str


_REGISTRY: dict[str, InvariantInfo] = {}


def register_invariants(infos: Iterable[InvariantInfo]) -> None:
    """Make invariants known to reports (a kind calls this once, at import).

    One meaning per id: registering an id again with other text raises ValueError
    (kinds that judge the same invariant share its one :class:`InvariantInfo`, as
    every kind shares :data:`CONFINED`)."""
    for info in infos:
        if info.severity not in SEVERITIES:
            raise ValueError(f"invariant {info.id}: unknown severity {info.severity!r}")
        known = _REGISTRY.setdefault(info.id, info)
        if known != info:
            raise ValueError(f"invariant {info.id} is registered already, as {known}")


def invariant_info(invariant_id: str) -> InvariantInfo:
    """The registered invariant ``invariant_id``. Raises KeyError if unknown (an
    unregistered id is an error, never rendered as a warning)."""
    try:
        return _REGISTRY[invariant_id]
    except KeyError:
        raise KeyError(f"unknown invariant {invariant_id!r}") from None


def severity_rank(invariant_id: str) -> int:
    """0 for the most severe class (security) to 4 (warning); see :data:`SEVERITIES`.
    Raises KeyError for an unregistered id."""
    return SEVERITIES.index(invariant_info(invariant_id).severity)


CONFINED = InvariantInfo(
    "S1",
    "confined",
    "security",
    "nothing outside the base directory is ever created, written, renamed or "
    "deleted, for any session id, through any of the six methods, whether or not the "
    "operation succeeded",
)
"""S1, which every kind judges on the operation trace (SPEC.md §8): defined once."""
register_invariants([CONFINED])


def invariant_ids() -> list[str]:
    """Every registered invariant id, in registration order."""
    return list(_REGISTRY)


@dataclass(slots=True)
class Step:
    """One call a workload made (a save, a load ...), as the engine sees it.

    Attributes:
        label: ``"save#2"``.
        begin: mutating operations issued before it began.
        end: operations issued when it returned or raised; None if it never ended.
        error: what it raised (``"OSError: [Errno 28] ..."``), None if it returned.
        payload: kind-specific (the value saved ...).
    """

    label: str
    begin: int
    end: int | None = None
    error: str | None = None
    payload: Any = None

    def acknowledged_by(self, k: int) -> bool:
        """Returned normally with at most ``k`` operations done."""
        return self.error is None and self.end is not None and self.end <= k


@dataclass(slots=True)
class Run:
    """One recorded run of a workload (crash-free, or with ``fault`` armed).

    Attributes:
        initial: the durable disk the run started from.
        ops: the mutating operations, ``ops[i].index == i``.
        steps: the workload's calls, in order.
        fault: the fault armed, or None.
        unsupported: calls the model cannot represent (verdict incomplete).
        escapes: paths outside the base directory the target tried to change (S1).
        subjects: how many subjects (sessions ...) the run's loads judge, when the
            kind counts them; 0 means nothing about the target was verified.
        data: kind-specific facts about the run.
        marks: the trace's marks (``OpKind.MARK``, ``index`` = operations done), for
            a counterexample's timeline; empty: one ``begin:`` mark per step.
        base: the directory the target was given (file names in a detail are shown
            relative to it); ``""``: paths as they are.
    """

    initial: CrashState
    ops: list[Op]
    steps: list[Step]
    fault: Fault | None = None
    unsupported: list[str] = field(default_factory=list)
    escapes: list[str] = field(default_factory=list)
    subjects: int | None = None
    data: Any = None
    marks: list[Op] = field(default_factory=list)
    base: str = ""

    def timeline_marks(self) -> list[Op]:
        """:attr:`marks`, or one ``begin:LABEL`` mark per step when the kind kept none."""
        if self.marks:
            return self.marks
        return [Op(s.begin, OpKind.MARK, label=f"begin:{s.label}") for s in self.steps]


@dataclass(frozen=True, slots=True)
class CrashTrace:
    """What a counterexample was found in, kept by the engine so report.html can show
    its operation timeline and files byte for byte without recording the run again
    (issue 19): the run's initial disk, operations, marks and steps (shared with every
    other counterexample of the run, never copied), its base directory, the crash
    state's crash point, digest and model (the state itself is derived again on demand,
    :attr:`state`: thousands of counterexamples of 64 KiB files must not each hold one)
    and what the kind observed of it (None for a finding on the trace itself: S1, F1)."""

    initial: CrashState
    ops: Sequence[Op]
    marks: Sequence[Op]
    base: str
    model: PersistenceModel
    crash_point: int
    digest: str
    steps: Sequence[Step] = ()
    observation: Any = None

    @property
    def state(self) -> CrashState:
        """The crash state: the one of ``model``'s states at ``crash_point`` (or the
        state after that many complete operations, a trace finding's) whose digest is
        ``digest``. Raises LookupError when none is (the trace is not its run's)."""
        k = self.crash_point
        for point in crash_points(self.model, self.initial, self.ops, points=(k,)):
            for state in point.states:
                if state.digest() == self.digest:
                    return state
        prefix = prefix_state(self.initial, self.ops, k)
        if prefix.digest() == self.digest:
            return prefix
        raise LookupError(f"no crash state {self.digest[:12]} at crash point {k}")


@dataclass(frozen=True, slots=True)
class Finding:
    """An invariant failing: what had to hold, what happened, and for what.

    Attributes:
        invariant: its registered id.
        expected, got: what had to hold; what load gave (or what was found).
        subject: what was judged (a session id); ``""``: the kind's one subject
            (:attr:`Kind.subject`).
    """

    invariant: str
    expected: str
    got: str
    subject: str = ""


NOTHING_DONE = "(nothing)"
"""``Counterexample.last_done`` at crash point 0."""
RUN_DONE = "(no crash: the run completed)"
"""``Counterexample.operation`` at the end of the run."""


def crash_point_words(k: int, last_done: str, operation: str) -> str:
    """Where crash point ``k`` lies, said plainly (``last_done``/``operation`` as a
    :class:`Counterexample` holds them)."""
    if operation == RUN_DONE:
        if last_done == NOTHING_DONE:
            return "no crash; the run issued no file operation (the disk as it started)"
        return f"no crash; the run completed (its last operation: {last_done})"
    if last_done == NOTHING_DONE:
        return f"before the first operation, {operation} (nothing done yet)"
    return f"after {last_done}, before {operation}"


@dataclass(frozen=True, slots=True)
class Counterexample:
    """One invariant failing in one crash state.

    Attributes:
        invariant: its id; ``broken``: every invariant this crash state breaks.
        workload, model, target: what was explored.
        crash_point: ``k``, operations done before the crash.
        operation, last_done: the operation that did not run / the last that did.
        subject: what was judged (a session id, ``"the document"``).
        crash_state: each file, rendered; ``state_digest``: the state's identity.
        expected, got: what had to hold, what load gave.
        replay: one command that replays it; ``fault``: ``AT:NAME`` or ``""``.
        trace: the run and crash state it was found in (:class:`CrashTrace`), when the
            engine found it; None for a finding made outside a run (an escape).
    """

    invariant: str
    broken: tuple[str, ...]
    workload: str
    model: str
    target: str
    crash_point: int
    operation: str
    last_done: str
    subject: str
    crash_state: dict[str, str]
    state_digest: str
    expected: str
    got: str
    replay: str
    fault: str = ""
    trace: CrashTrace | None = field(default=None, compare=False, repr=False)

    def where(self) -> str:
        """The crash point in words: between which operations the machine stopped, or
        that the run completed (or issued no operation) and no crash happened."""
        return crash_point_words(self.crash_point, self.last_done, self.operation)

    def render(self) -> str:
        info = invariant_info(self.invariant)
        files = "\n".join(f"    {n}: {w}" for n, w in self.crash_state.items()) or (
            "    (empty: no files)"
        )
        fault = f", injected fault {self.fault}" if self.fault else ""
        also = [i for i in self.broken if i != self.invariant]
        return (
            f"{self.invariant} ({info.label}) violated in workload {self.workload!r} under "
            f"{self.model}{fault}, target {self.target}\n"
            f"  invariant ({info.severity}): {info.meaning}\n"
            + (f"  this crash state also breaks: {', '.join(also)}\n" if also else "")
            + f"  crash point {self.crash_point}: {self.where()}\n"
            f"  crash state:\n{files}\n"
            f"  {self.got_label()}: {self.got}\n"
            f"  expected: {self.expected}\n"
            f"  replay: {self.replay}"
        )

    def got_label(self) -> str:
        """What ``got`` is (:func:`got_label`)."""
        return got_label(self.invariant, self.subject)


def got_label(invariant: str, subject: str) -> str:
    """What the ``got`` of a finding is: what load returned, or for S1 and S2 (judged
    on the operations and the files themselves, not on a load) what was found."""
    if invariant in ("S1", "S2"):
        return "found"
    return f"load({subject!r}) returned"


AGENT_TIEBREAK = ("subject", "state_digest", "replay", "got")
"""The order of findings of one invariant at one crash point, for reports (and the
agent-state kind's results): by subject, crash state, replay, what load gave."""


def counterexample_order(
    c: Counterexample, tiebreak: Sequence[str] = AGENT_TIEBREAK
) -> tuple[object, ...]:
    """Most severe first (SPEC.md §8: security, data-loss, invalid-history, semantics,
    warning), then minimal (smallest crash point), then by invariant and the fields
    ``tiebreak`` names (a kind's :attr:`Kind.tiebreak`): a total order, so a result
    and its report do not depend on how the work was split."""
    return (
        severity_rank(c.invariant),
        c.crash_point,
        c.invariant,
        *(getattr(c, name) for name in tiebreak),
    )


NO_SUBJECT = (
    "the workload made no storage call and its setup wrote no session: no load was "
    "judged, nothing about the storage was verified"
)


@dataclass(slots=True)
class EngineResult:
    """What exploring one workload under one model found (every kind's result).

    Attributes:
        workload, model, target: what was explored.
        operations: mutating operations in the crash-free run.
        crash_points: crash points examined; raw_states: crash states derived;
        cut: combinations the model's bounds left out, an upper bound on the distinct
            crash states not explored (FAULT-MODEL.md §3; 0: exhaustive for this model).
        invariants: ids judged.
        counterexamples: findings, most severe first, then minimal
            (:func:`counterexample_order`).
        warnings: findings of severity ``warning`` (never a violation).
        faults: faulted re-runs explored.
        unsupported: calls the model could not represent (verdict incomplete).
        seconds: wall time; check_seconds: rebooting, observing and judging.
        state_ids: identities of the distinct crash states.
        subjects: subjects judged (sessions), when the kind counts them; 0 means no
            load was judged, so nothing about the target was verified.
        owned_points, owned_cut: the crash points (and their cut) this result owns:
            all of them unsharded; in shard ``K/N``, those whose first crash state falls
            in it, so the N shards' owned counts add up to the unsharded run's
            ``crash_points`` and ``cut`` (a crash point with states in several shards is
            examined, and counted in ``crash_points``, by each).
        hypothetical: findings reachable only through the model's device options (an
            atomic write below the block, a drive that ignores flushes): their crash
            state is not one of the default device's (FAULT-MODEL.md §3). Listed apart,
            never in ``counterexamples``: not the headline, not the exit code.
        family: the model family whose rules derived the crash states (``ext4`` for
            the model ``power-loss``); options: the model's parameters
            (:meth:`~crashpoint.faultfs.PersistenceModel.options`). The verdict names
            what it assumed (issue 20).
        renamed: names the faulted re-runs created afresh, mapped onto the names the
            recording created at the same position (``{"from": re-run name, "to":
            recording name}``; issue 22): a re-run that differs only in them is judged.
        fault_points_skipped: crash points of the faulted runs, after their fault,
            that the fault window left out (past the recovery path and the next save,
            before the end; ``fault_window=None`` judges them): counted, never
            examined (issue 22).
        unsampled: digests of the distinct crash states the model's sample left out
            (:attr:`~crashpoint.faultfs.PersistenceModel.sample`, ``--sample``): derived,
            never loaded nor judged; :attr:`not_examined` counts them (issue 24).
    """

    workload: str
    model: str
    target: str
    operations: int = 0
    crash_points: int = 0
    raw_states: int = 0
    cut: int = 0
    invariants: tuple[str, ...] = ()
    counterexamples: list[Counterexample] = field(default_factory=list)
    warnings: list[Counterexample] = field(default_factory=list)
    faults: int = 0
    unsupported: list[str] = field(default_factory=list)
    seconds: float = 0.0
    check_seconds: float = 0.0
    state_ids: set[str] = field(default_factory=set, repr=False)
    subjects: int | None = field(default=None, repr=False)
    tiebreak: tuple[str, ...] = field(default=AGENT_TIEBREAK, repr=False)
    """The kind's order of findings past severity, crash point and invariant."""
    owned_points: int = field(default=0, repr=False)
    owned_cut: int = field(default=0, repr=False)
    family: str = ""
    options: dict[str, float | None] = field(default_factory=dict, repr=False)
    hypothetical: list[Counterexample] = field(default_factory=list)
    renamed: list[dict[str, str]] = field(default_factory=list)
    fault_points_skipped: int = 0
    unsampled: set[str] = field(default_factory=set, repr=False)

    def sort(self) -> None:
        """Order the findings: :func:`counterexample_order` with this kind's tiebreak."""
        key = self.order_key
        self.counterexamples.sort(key=key)
        self.warnings.sort(key=key)
        self.hypothetical.sort(key=key)

    def order_key(self, c: Counterexample) -> tuple[object, ...]:
        return counterexample_order(c, self.tiebreak)

    @property
    def distinct_states(self) -> int:
        return len(self.state_ids)

    @property
    def incomplete(self) -> bool:
        return bool(self.unsupported)

    @property
    def ok(self) -> bool:
        return not self.counterexamples and not self.unsupported

    @property
    def not_examined(self) -> int:
        """Distinct crash states derived but left out by the model's sample (0 unsampled)."""
        return len(self.unsampled)

    @property
    def exhaustive(self) -> bool:
        """Whether every crash state of the model was explored (``cut == 0`` and no state
        sampled out); a bounded or sampled run is never called exhaustive."""
        return self.cut == 0 and not self.unsampled

    def killed_by(self) -> list[str]:
        """The distinct invariant ids found, most severe class first, in registration
        order within a class."""
        found = {c.invariant for c in self.counterexamples}
        return sorted((i for i in invariant_ids() if i in found), key=severity_rank)

    def merge(self, other: EngineResult) -> None:
        """Add ``other``, a disjoint part of the same exploration (another slice of the
        fault plan or of the crash-state space), into this result."""
        self.crash_points += other.crash_points
        self.raw_states += other.raw_states
        self.cut += other.cut
        self.owned_points += other.owned_points
        self.owned_cut += other.owned_cut
        self.faults += other.faults
        self.fault_points_skipped += other.fault_points_skipped
        self.state_ids |= other.state_ids
        self.unsampled |= other.unsampled
        self.invariants = tuple(dict.fromkeys(self.invariants + other.invariants))
        self.counterexamples = [*self.counterexamples, *other.counterexamples]
        self.warnings = [*self.warnings, *other.warnings]
        self.hypothetical = [*self.hypothetical, *other.hypothetical]
        _note_renamed(self, other.renamed)
        self.sort()
        self.seconds += other.seconds
        self.check_seconds += other.check_seconds
        for u in other.unsupported:
            if u not in self.unsupported:
                self.unsupported.append(u)
        if other.subjects is not None:
            self.subjects = max(self.subjects or 0, other.subjects)

    def assert_no_violations(self) -> None:
        """Raise ``AssertionError`` carrying the most severe, minimal counterexample, if
        any; or saying so when nothing was verified: no crash point examined (a crash
        point no run has, an empty shard), no invariant checked, or no subject judged
        (the workload made no storage call)."""
        if self.counterexamples:
            more = len(self.counterexamples) - 1
            tail = f"\n  (and {more} more violation(s))" if more else ""
            raise AssertionError(self.counterexamples[0].render() + tail)
        # a faulted exploration of a run without operations has no fault to inject
        nothing_to_fault = "F1" in self.invariants and not self.operations
        if not self.crash_points and not nothing_to_fault:
            raise AssertionError(
                f"{self.workload} under {self.model}: no crash point was examined (a crash "
                "point or shard no run has): nothing was verified"
            )
        if not self.invariants:
            raise AssertionError(f"{self.workload}: no invariant was checked: nothing verified")
        if self.subjects == 0:
            raise AssertionError(f"{self.workload}: {NO_SUBJECT}")


class FileDigests:
    """:meth:`CrashState.digest` with each file's sha256 remembered while its bytes are
    (crash states of neighbouring crash points share their ``bytes`` objects), and each
    state's digest while the state is (the same state recurs at many crash points); at
    most :attr:`LIMIT` bytes of contents are held by each memo, then it starts again."""

    LIMIT = 8 * 2**20

    __slots__ = ("_held", "_last", "_sha", "_state_held", "_states")

    def __init__(self) -> None:
        self._sha: dict[bytes, bytes] = {}
        self._held = 0
        self._states: dict[tuple[object, object], str] = {}
        self._state_held = 0
        self._last: tuple[object, str] = (None, "")  # the state asked last (engine, then kind)

    def file(self, data: bytes) -> bytes:
        """sha256 of ``data`` (32 bytes)."""
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
        """``state.digest()``, hex."""
        last, known = self._last
        if last is state:
            return known
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
        self._last = (state, found)
        return found


W = TypeVar("W")
Obs = TypeVar("Obs")


class Kind(Protocol, Generic[W, Obs]):  # type: ignore[misc]
    """A target kind: what its workloads are, how a crash state is observed and judged.

    ``W`` is the kind's workload type, ``Obs`` its observation of a rebooted crash state.

    Optional: ``crash_points_of(run, model, points) -> Iterable[CrashPoint]``, the crash
    points of a recorded run as :func:`~crashpoint.faultfs.crash_points` derives them,
    for a kind that derived them already (``--exec`` loads every state ahead, in
    batches); the engine then does not derive them again.
    """

    name: str
    subject: str
    """What a finding without a subject of its own is about (``"the document"``)."""
    tiebreak: tuple[str, ...]
    """Counterexample fields ordering this kind's findings of one invariant at one
    crash point (:func:`counterexample_order`)."""

    def invariants(self, *, faults: bool) -> tuple[str, ...]:
        """The invariant ids this kind judges (with or without injected faults)."""

    def record(self, workload: W, fault: Fault | None) -> Run:
        """Run ``workload`` once on a recording filesystem, with ``fault`` armed."""

    def observe(self, state: CrashState) -> Obs:
        """Reboot ``state`` (a fresh filesystem, a fresh target) and observe it.

        Must depend on the state only: the engine caches it per distinct state."""

    def judge(self, run: Run, k: int, state: CrashState, observation: Obs) -> list[Finding]:
        """Every invariant the observation of ``state`` at crash point ``k`` breaks."""

    def trace_findings(self, run: Run) -> list[tuple[int, Finding]]:
        """Findings on the run itself (an escaping write, a failed call that did not
        fail cleanly), each with the crash point it is reported at."""

    def describe_state(self, state: CrashState, run: Run, subject: str) -> dict[str, str]:
        """Each file of ``state``, rendered for a report about ``subject``."""

    def replay(self, workload: W, model: PersistenceModel, k: int, fault: Fault | None) -> str:
        """One command that replays crash point ``k`` (with ``fault``)."""

    def workload_name(self, workload: W) -> str:
        """The workload's name as reports and replays spell it."""


def explore_kind(
    kind: Kind[W, Obs],
    workload: W,
    *,
    model: PersistenceModel = PROCESS_CRASH,
    target: str = "",
    faults: Sequence[Fault] = (),
    crashes: bool = True,
    fault_window: int | None = 1,
    crash_point: int | None = None,
    shard: tuple[int, int] | None = None,
    observed: dict[str, Obs] | None = None,
) -> EngineResult:
    """:func:`explore_models` under one model."""
    (result,) = explore_models(
        kind,
        workload,
        models=(model,),
        target=target,
        faults=faults,
        crashes=crashes,
        fault_window=fault_window,
        crash_point=crash_point,
        shard=shard,
        observed=observed,
    )
    return result


def explore_models(
    kind: Kind[W, Obs],
    workload: W,
    *,
    models: Sequence[PersistenceModel],
    target: str = "",
    faults: Sequence[Fault] = (),
    crashes: bool = True,
    fault_window: int | None = 1,
    crash_point: int | None = None,
    shard: tuple[int, int] | None = None,
    observed: dict[str, Obs] | None = None,
    digests: FileDigests | None = None,
) -> list[EngineResult]:
    """Explore ``workload`` of ``kind`` under each of ``models``: one result per model,
    in order, each run recorded once for all of them (a recording does not depend on
    the model).

    Records the crash-free run; when ``crashes``, judges every crash point of it;
    then, for each fault of ``faults``, records the run with that fault armed and
    judges the crash points right after it (``fault_window`` of them; None for all),
    every crash point of its recovery path and of the next call that writes
    (:func:`recovery_points`), and the end of the run. A crash state a faulted run
    leaves with the same calls begun, acknowledged and failed as one already judged
    in a faulted run of this exploration is not judged again (its findings are the
    first one's).

    Args:
        crash_point: only this crash point ``k``.
        shard: ``(K, N)``: only crash states whose identity falls in slice K of N.
        observed: a cache of observations by state digest, to share across
            explorations of one target.
        digests: the file and state digest memo, to share with the kind's own memos
            (each file's content is then hashed once).

    Returns:
        one :class:`EngineResult` per model.
    """
    started = time.perf_counter()
    name = kind.workload_name(workload)
    base = kind.record(workload, None)
    # a fault exploration (crashes=False) judges F1 even when its plan is empty
    invariants = kind.invariants(faults=bool(faults) or not crashes)
    cache: dict[str, Obs] = observed if observed is not None else {}
    digests = digests if digests is not None else FileDigests()
    judges = []
    for model in models:
        result = EngineResult(
            name,
            model.name,
            target,
            operations=len(base.ops),
            invariants=invariants,
            faults=len(faults),
            tiebreak=kind.tiebreak,
            family=model.family,
            options=model.options(),
        )
        if crashes:
            result.subjects = base.subjects
        _note_unsupported(result, base)
        judges.append(
            _Judge(kind, workload, model, target, result, cache, digests, crash_point, shard)
        )
    if crashes:
        for judge in judges:
            judge.run(base)
    for fault in faults:
        run = kind.record(workload, fault)
        diverged, renamed = _divergence(base, run, fault, getattr(kind, "recorder", ""))
        for judge in judges:
            _note_unsupported(judge.result, run)
            _note_renamed(judge.result, renamed)
            if diverged is not None:
                # A re-run that does not repeat its recording cannot be judged against it.
                _note_unsupported(judge.result, Run(run.initial, [], [], unsupported=[diverged]))
        if diverged is not None:
            continue
        end = len(run.ops)
        only = (
            None
            if fault_window is None
            else {*range(fault.at + 1, min(fault.at + 1 + fault_window, end + 1)), end}
            | recovery_points(run, fault)
        )
        skipped = (
            0 if only is None else sum(1 for k in range(fault.at + 1, end + 1) if k not in only)
        )
        for judge in judges:
            judge.run(run, from_point=fault.at + 1, only=only)
            if judge.crash_point is None:  # a replay of one crash point skips nothing
                judge.result.fault_points_skipped += skipped
    seconds = (time.perf_counter() - started) / max(len(judges), 1)
    results = []
    for judge in judges:
        result = judge.result
        result.sort()
        result.seconds = seconds
        results.append(result)
    return results


class Tally(Protocol):
    """Where :func:`judged_crash_states` counts (any result with these attributes)."""

    crash_points: int
    cut: int
    owned_points: int
    owned_cut: int


class _Uncounted:
    """A tally nobody reads (the default device's states, enumerated to tell
    hypothetical findings apart, are not the run's)."""

    def __init__(self) -> None:
        self.crash_points = 0
        self.cut = 0
        self.owned_points = 0
        self.owned_cut = 0


def judged_crash_states(
    model: PersistenceModel,
    initial: CrashState,
    ops: Sequence[Op],
    tally: Tally,
    *,
    from_point: int = 0,
    only: Collection[int] | None = None,
    crash_point: int | None = None,
    shard: tuple[int, int] | None = None,
    derive: Callable[[PersistenceModel, Collection[int] | None], Iterable[CrashPoint]]
    | None = None,
) -> Iterator[tuple[int, Sequence[CrashState]]]:
    """The crash points ``k`` of a trace to judge, each with its crash states under
    ``model`` (FAULT-MODEL.md §3), filtered: ``k >= from_point``, ``k`` in ``only``
    (when given), ``k == crash_point`` (when given), states in slice ``shard``.
    ``derive(model, points)``: the crash points of this trace when a kind already derived
    them (:meth:`Kind.crash_points_of`); :func:`~crashpoint.faultfs.crash_points` else.
    Counts every crash point yielded and its states cut by the model's bound into
    ``tally`` (never silently), and into ``owned_points``/``owned_cut`` those the shard
    owns (:class:`EngineResult`). The engine's judging loop runs on this."""
    points: Collection[int] | None = None
    if from_point > 0 or only is not None or crash_point is not None:
        points = {
            k
            for k in range(from_point, len(ops) + 1)
            if crash_point in (None, k) and (only is None or k in only)
        }  # the other crash points' states are never built
    derived = (
        crash_points(model, initial, ops, points=points)
        if derive is None
        else derive(model, points)
    )
    for point in derived:
        k = point.index
        states: Sequence[CrashState] = point.states
        # The point's owner: the shard of its first state (shard 1 for a point of none).
        if shard is None or (_in_shard(states[0], shard) if states else shard[0] == 1):
            tally.owned_points += 1
            tally.owned_cut += point.cut
        if shard is not None:
            states = tuple(s for s in states if _in_shard(s, shard))
            if not states:
                continue
        tally.crash_points += 1
        tally.cut += point.cut
        yield k, states


def recovery_points(run: Run, fault: Fault) -> set[int]:
    """The crash points of a faulted run after its fault through the end of the call the
    fault hit (its recovery path: a fallback that copies the file in place) and of the
    next call that issues an operation (the save after the failure), FAULT-MODEL.md §2.
    Empty when no call holds the fault (it hit the factory)."""
    hit = next(
        (s for s in run.steps if s.begin <= fault.at and (s.end is None or fault.at < s.end)),
        None,
    )
    if hit is None:
        return set()
    last = len(run.ops) if hit.end is None else hit.end
    later = [s for s in run.steps if s.begin >= last and s.end is not None and s.end > s.begin]
    if later:
        last = max(last, later[0].end or last)
    return set(range(fault.at + 1, min(last, len(run.ops)) + 1))


def _signature(run: Run, k: int) -> tuple[tuple[str, bool, bool, bool], ...]:
    """What a kind's judgement of a crash state at ``k`` rests on besides the state: each
    call begun, acknowledged, or failed by then."""
    return tuple(
        (
            s.label,
            s.begin <= k,
            s.acknowledged_by(k),
            s.error is not None and s.end is not None and s.end <= k,
        )
        for s in run.steps
    )


def _divergence(
    base: Run, run: Run, fault: Fault, recorder: str = ""
) -> tuple[str | None, list[dict[str, str]]]:
    """Why a faulted re-run is not the recorded run up to its fault, or None, with the
    renaming that maps its fresh names onto the recording's. ``recorder``: how the kind
    records a run, for the message (a kind's ``recorder`` attribute: ``"strace"``; ""
    for interception). Before operation
    ``fault.at`` it must issue the same operations (FAULT-MODEL.md §4: a seeded re-run
    issues the same trace), but for names created afresh, matched by the order of their
    creation (:func:`~crashpoint.faultfs._fresh.match_fresh_names`; issue 22)."""
    head = min(fault.at, len(base.ops))
    renaming, at = match_fresh_names(
        base.ops[:head],
        run.ops[:head],
        recorded_initial=base.initial,
        rerun_initial=run.initial,
    )
    renamed = renaming.as_list()
    if at is not None:
        mine, theirs = base.ops[at], renaming.op(run.ops[at])
        return (
            f"re-run diverged from its recording at operation {at} "
            f"({theirs.render()} instead of {mine.render()}; differs in "
            f"{op_difference(mine, theirs)}): the target is not deterministic "
            + (
                f"from run to run (recorded through {recorder})"
                if recorder
                else "under interception"
            )
        ), renamed
    if len(run.ops) < head:
        return (
            f"re-run diverged from its recording: it stopped after {len(run.ops)} operations",
            renamed,
        )
    return None, renamed


def _note_renamed(result: EngineResult, renamed: Iterable[dict[str, str]]) -> None:
    for pair in renamed:
        if pair not in result.renamed:
            result.renamed.append(pair)


def _note_unsupported(result: EngineResult, run: Run) -> None:
    for call in run.unsupported:
        if call not in result.unsupported:
            result.unsupported.append(call)


_UNOBSERVED = object()


class _Judge(Generic[W, Obs]):
    """The one loop that judges crash states (STYLE.md §15): for every crash point of a
    run, every crash state is observed once per distinct state (by its digest) and
    judged by the kind; findings are grouped per crash state into counterexamples."""

    def __init__(
        self,
        kind: Kind[W, Obs],
        workload: W,
        model: PersistenceModel,
        target: str,
        result: EngineResult,
        cache: dict[str, Obs],
        digests: FileDigests,
        crash_point: int | None,
        shard: tuple[int, int] | None,
    ) -> None:
        self.kind, self.workload, self.model, self.target = kind, workload, model, target
        self.result, self.cache, self.digests = result, cache, digests
        self.crash_point, self.shard = crash_point, shard
        self.judged: set[tuple[str, tuple[tuple[str, bool, bool, bool], ...]]] = set()
        """Crash states judged in faulted runs, with their calls' status (not judged again)."""

    def run(self, run: Run, *, from_point: int = 0, only: Collection[int] | None = None) -> None:
        kind, result, cache = self.kind, self.result, self.cache
        wanted = set(result.invariants)
        state_ids = result.state_ids
        digest_of = self.digests.state
        observe, judge = kind.observe, kind.judge
        # the findings of each (crash point, state digest), each with its crash state's
        # description (described at once: the state itself is not held)
        by_state: dict[tuple[int, str], list[tuple[dict[str, str], Finding]]] = {}
        describe = kind.describe_state
        faulted, judged = run.fault is not None, self.judged

        for k, finding in kind.trace_findings(run):
            invariant_info(finding.invariant)  # an unregistered id is a KeyError, no drop
            if k >= from_point and self.crash_point in (None, k) and finding.invariant in wanted:
                state = state_after(run, k)
                if self.shard is not None and not _in_shard(state, self.shard):
                    continue  # the shard holding its crash state reports it
                by_state.setdefault((k, digest_of(state)), []).append(
                    (describe(state, run, finding.subject or kind.subject), finding)
                )
        traced = set(by_state)  # judged on the state after k operations: never hypothetical
        # a kind that derived this run's crash points already (to load their states
        # ahead, ExecDocumentKind) hands them over instead of their being derived again
        derived_by_kind = getattr(kind, "crash_points_of", None)
        examines = None if self.model.sample >= 1.0 else self.model.examines
        unsampled = result.unsampled
        for k, states in judged_crash_states(
            self.model,
            run.initial,
            run.ops,
            result,
            from_point=from_point,
            only=only,
            crash_point=self.crash_point,
            shard=self.shard,
            derive=(
                None
                if derived_by_kind is None
                else lambda model, points: derived_by_kind(run, model, points)
            ),
        ):
            t0 = time.perf_counter()
            result.raw_states += len(states)
            for state in states:
                digest = digest_of(state)
                if examines is not None and not examines(digest):
                    unsampled.add(digest)  # counted, never loaded (--sample)
                    continue
                state_ids.add(digest)
                if faulted:
                    seen = (digest, _signature(run, k))
                    if seen in judged:
                        continue  # the same state, the same calls' status: judged already
                    judged.add(seen)
                obs = cache.get(digest, _UNOBSERVED)
                if obs is _UNOBSERVED:
                    obs = cache[digest] = observe(state)
                found = judge(run, k, state, obs)  # type: ignore[arg-type]
                if found:
                    for finding in found:
                        invariant_info(finding.invariant)  # unregistered: KeyError, no drop
                        if finding.invariant in wanted:
                            by_state.setdefault((k, digest), []).append(
                                (describe(state, run, finding.subject or kind.subject), finding)
                            )
            result.check_seconds += time.perf_counter() - t0
        real = self._real_states(run, from_point, only) if by_state else None
        marks = run.timeline_marks() if by_state else []  # built only for findings
        for (k, digest), pairs in by_state.items():
            broken = tuple(dict.fromkeys(f.invariant for _, f in pairs))
            hypothetical = (
                real is not None and (k, digest) not in traced and digest not in real.get(k, ())
            )
            for described, finding in pairs:
                c = self._counterexample(run, k, described, digest, finding, broken, marks)
                if invariant_info(finding.invariant).severity == "warning":
                    result.warnings.append(c)
                elif hypothetical:
                    result.hypothetical.append(c)
                else:
                    result.counterexamples.append(c)

    def _real_states(
        self, run: Run, from_point: int, only: Collection[int] | None
    ) -> dict[int, set[str]] | None:
        """The one rule of hypothetical findings, for every kind (FAULT-MODEL.md §3): under
        a model with device options (:attr:`PersistenceModel.hypothetical`), the digests
        of the crash states the default device leaves at each crash point judged
        (:func:`~crashpoint.faultfs.device_default`); a finding in any other state is
        reachable only through the options. None when the model has none (every state is
        real). A trace finding is judged on the state after ``k`` operations, which every
        model has."""
        if not self.model.hypothetical:
            return None
        digest_of = self.digests.state
        real: dict[int, set[str]] = {}
        for k, states in judged_crash_states(
            device_default(self.model),
            run.initial,
            run.ops,
            _Uncounted(),
            from_point=from_point,
            only=only,
            crash_point=self.crash_point,
        ):
            real[k] = {digest_of(state) for state in states}
        return real

    def _counterexample(
        self,
        run: Run,
        k: int,
        described: dict[str, str],
        digest: str,
        f: Finding,
        broken: tuple[str, ...],
        marks: Sequence[Op],
    ) -> Counterexample:
        ops = run.ops
        obs = self.cache.get(digest, _UNOBSERVED)
        subject = f.subject or self.kind.subject
        return Counterexample(
            f.invariant,
            broken,
            self.kind.workload_name(self.workload),
            self.model.name,
            self.target,
            k,
            ops[k].render() if k < len(ops) else RUN_DONE,
            ops[k - 1].render() if k > 0 else NOTHING_DONE,
            subject,
            described,
            digest,
            f.expected,
            f.got,
            self.kind.replay(self.workload, self.model, k, run.fault),
            fault_spec(run.fault) if run.fault is not None else "",
            CrashTrace(
                run.initial,
                run.ops,
                marks,
                run.base,
                self.model,
                k,
                digest,
                run.steps,
                None if obs is _UNOBSERVED else obs,
            ),
        )


def state_after(run: Run, k: int) -> CrashState:
    """The process-crash state after the first ``k`` operations of ``run``."""
    return prefix_state(run.initial, run.ops, k)


def prefix_state(initial: CrashState, ops: Sequence[Op], k: int) -> CrashState:
    """The process-crash state of ``initial`` after the first ``k`` of ``ops`` (every one
    of them complete). Raises ValueError when ``ops`` has fewer than ``k``."""
    for point in crash_points(PROCESS_CRASH, initial, ops[:k], points=(k,)):
        if point.index == k:
            return point.states[0]
    raise ValueError(k)


def fault_spec(fault: Fault) -> str:
    """``AT:NAME`` as ``--fault`` takes it: ``3:ENOSPC``, ``5:short-write``,
    ``5:short-count``, ``7:fsync-lost``."""
    if fault.kind is FaultKind.ERROR:
        return f"{fault.at}:{errno.errorcode[fault.errno]}"
    return f"{fault.at}:{fault.kind.value}"


def _in_shard(state: CrashState, shard: tuple[int, int]) -> bool:
    k, n = shard
    return int(state.digest(), 16) % n == k - 1


def detail_key(scenario: str, model: str, crash_point: int, digest: str) -> str:
    """The key of a counterexample's detail in ``details``."""
    return f"{scenario}|{model}|{crash_point}|{digest}"

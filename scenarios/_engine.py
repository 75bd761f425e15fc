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
import time
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from ..faultfs import (
    PROCESS_CRASH,
    CrashState,
    Fault,
    FaultKind,
    Op,
    PersistenceModel,
    crash_points,
)

__all__ = [
    "SEVERITIES",
    "Counterexample",
    "EngineResult",
    "Finding",
    "InvariantInfo",
    "Kind",
    "Run",
    "Step",
    "Tally",
    "explore_kind",
    "fault_spec",
    "invariant_ids",
    "invariant_info",
    "judged_crash_states",
    "register_invariants",
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
    """Make invariants known to reports (a kind calls this once, at import)."""
    for info in infos:
        if info.severity not in SEVERITIES:
            raise ValueError(f"invariant {info.id}: unknown severity {info.severity!r}")
        _REGISTRY.setdefault(info.id, info)


def invariant_info(invariant_id: str) -> InvariantInfo:
    """The registered invariant ``invariant_id``. Raises KeyError if unknown."""
    try:
        return _REGISTRY[invariant_id]
    except KeyError:
        raise KeyError(f"unknown invariant {invariant_id!r}") from None


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
        data: kind-specific facts about the run.
    """

    initial: CrashState
    ops: list[Op]
    steps: list[Step]
    fault: Fault | None = None
    unsupported: list[str] = field(default_factory=list)
    escapes: list[str] = field(default_factory=list)
    data: Any = None


@dataclass(frozen=True, slots=True)
class Finding:
    """An invariant failing: what had to hold, what happened, and for what."""

    invariant: str
    expected: str
    got: str
    subject: str = ""


@dataclass(frozen=True, slots=True)
class Counterexample:
    """One invariant failing in one crash state.

    Attributes:
        invariant: its id; ``broken``: every invariant this crash state breaks.
        workload, model, target: what was explored.
        crash_point: ``k``, operations done before the crash.
        operation, last_done: the operation that did not run / the last that did.
        subject: what was judged (a session id, a document).
        crash_state: each file, rendered; ``state_digest``: the state's identity.
        expected, got: what had to hold, what load gave.
        replay: one command that replays it; ``fault``: ``AT:NAME`` or ``""``.
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

    def render(self) -> str:
        info = invariant_info(self.invariant)
        files = "\n".join(f"    {n}: {w}" for n, w in self.crash_state.items()) or "    (no file)"
        fault = f", injected fault {self.fault}" if self.fault else ""
        also = [i for i in self.broken if i != self.invariant]
        return (
            f"{self.invariant} ({info.label}) violated in workload {self.workload!r} under "
            f"{self.model}{fault}, target {self.target}\n"
            f"  invariant: {info.meaning}\n"
            + (f"  this crash state also breaks: {', '.join(also)}\n" if also else "")
            + f"  crash point {self.crash_point}: after {self.last_done}, before {self.operation}\n"
            f"  crash state:\n{files}\n"
            f"  load returned: {self.got}\n"
            f"  expected: {self.expected}\n"
            f"  replay: {self.replay}"
        )


def _order(c: Counterexample) -> tuple[int, int, str, str, str, str]:
    severity = SEVERITIES.index(invariant_info(c.invariant).severity)
    return (severity, c.crash_point, c.invariant, c.fault, c.state_digest, c.got)


@dataclass(slots=True)
class EngineResult:
    """What exploring one workload under one model found.

    Attributes:
        workload, model, target: what was explored.
        operations: mutating operations in the crash-free run.
        crash_points: crash points examined; raw_states: crash states derived;
        cut: states the model's bound left out (0: exhaustive for this model).
        invariants: ids judged.
        counterexamples: findings, by severity then smallest crash point.
        warnings: findings of severity ``warning`` (never a violation).
        faults: faulted re-runs explored.
        unsupported: calls the model could not represent (verdict incomplete).
        seconds: wall time; check_seconds: rebooting, observing and judging.
        state_ids: identities of the distinct crash states.
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

    @property
    def distinct_states(self) -> int:
        return len(self.state_ids)

    @property
    def incomplete(self) -> bool:
        return bool(self.unsupported)

    @property
    def ok(self) -> bool:
        return not self.counterexamples and not self.unsupported

    def killed_by(self) -> list[str]:
        found = {c.invariant for c in self.counterexamples}
        return [i for i in invariant_ids() if i in found]


W = TypeVar("W")
Obs = TypeVar("Obs")


class Kind(Protocol, Generic[W, Obs]):  # type: ignore[misc]
    """A target kind: what its workloads are, how a crash state is observed and judged.

    ``W`` is the kind's workload type, ``Obs`` its observation of a rebooted crash state.
    """

    name: str

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

    def describe_state(self, state: CrashState, run: Run) -> dict[str, str]:
        """Each file of ``state``, rendered for a report."""

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
    observed: dict[CrashState, Obs] | None = None,
) -> EngineResult:
    """Explore ``workload`` of ``kind`` under ``model``.

    Records the crash-free run; when ``crashes``, judges every crash point of it;
    then, for each fault of ``faults``, records the run with that fault armed and
    judges the crash points right after it (``fault_window`` of them; None for all)
    and the end of the run.

    Args:
        crash_point: only this crash point ``k``.
        shard: ``(K, N)``: only crash states whose identity falls in slice K of N.
        observed: a cache of observations to share across explorations of one target.

    Returns:
        an :class:`EngineResult`.
    """
    started = time.perf_counter()
    name = kind.workload_name(workload)
    base = kind.record(workload, None)
    result = EngineResult(
        name,
        model.name,
        target,
        operations=len(base.ops),
        invariants=kind.invariants(faults=bool(faults)),
        faults=len(faults),
    )
    cache: dict[CrashState, Obs] = observed if observed is not None else {}
    judged = _Judge(kind, workload, model, target, result, cache, crash_point, shard)
    _note_unsupported(result, base)
    if crashes:
        judged.run(base)
    for fault in faults:
        run = kind.record(workload, fault)
        _note_unsupported(result, run)
        diverged = _divergence(base, run, fault)
        if diverged is not None:
            # A re-run that does not repeat its recording cannot be judged against it.
            _note_unsupported(result, Run(run.initial, [], [], unsupported=[diverged]))
            continue
        end = len(run.ops)
        only = (
            None
            if fault_window is None
            else {*range(fault.at + 1, min(fault.at + 1 + fault_window, end + 1)), end}
        )
        judged.run(run, from_point=fault.at + 1, only=only)
    result.counterexamples.sort(key=_order)
    result.warnings.sort(key=_order)
    result.seconds = time.perf_counter() - started
    return result


class Tally(Protocol):
    """Where :func:`judged_crash_states` counts (any result with these attributes)."""

    crash_points: int
    cut: int


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
) -> Iterator[tuple[int, Sequence[CrashState]]]:
    """The crash points ``k`` of a trace to judge, each with its crash states under
    ``model`` (FAULT-MODEL.md §3), filtered: ``k >= from_point``, ``k`` in ``only``
    (when given), ``k == crash_point`` (when given), states in slice ``shard``.
    Counts every crash point yielded and its states cut by the model's bound into
    ``tally`` (never silently). Every kind's judging loop runs on this."""
    points: Collection[int] | None = None
    if from_point > 0 or only is not None or crash_point is not None:
        points = {
            k
            for k in range(from_point, len(ops) + 1)
            if crash_point in (None, k) and (only is None or k in only)
        }  # the other crash points' states are never built
    for point in crash_points(model, initial, ops, points=points):
        k = point.index
        states: Sequence[CrashState] = point.states
        if shard is not None:
            states = tuple(s for s in states if _in_shard(s, shard))
            if not states:
                continue
        tally.crash_points += 1
        tally.cut += point.cut
        yield k, states


def _divergence(base: Run, run: Run, fault: Fault) -> str | None:
    """Why a faulted re-run is not the recorded run up to its fault, or None: before
    operation ``fault.at`` it must issue exactly the same operations (FAULT-MODEL.md
    §4: a seeded re-run issues the same trace)."""
    head = min(fault.at, len(base.ops))
    for mine, theirs in zip(base.ops[:head], run.ops[:head], strict=False):
        if (mine.kind, mine.path, mine.dst, mine.offset, mine.data, mine.size) != (
            theirs.kind,
            theirs.path,
            theirs.dst,
            theirs.offset,
            theirs.data,
            theirs.size,
        ):
            return (
                f"re-run diverged from its recording at operation {mine.index} "
                f"({theirs.render()} instead of {mine.render()}): the target is not "
                "deterministic under interception"
            )
    if len(run.ops) < head:
        return f"re-run diverged from its recording: it stopped after {len(run.ops)} operations"
    return None


def _note_unsupported(result: EngineResult, run: Run) -> None:
    for call in run.unsupported:
        if call not in result.unsupported:
            result.unsupported.append(call)


class _Judge(Generic[W, Obs]):
    def __init__(
        self,
        kind: Kind[W, Obs],
        workload: W,
        model: PersistenceModel,
        target: str,
        result: EngineResult,
        cache: dict[CrashState, Obs],
        crash_point: int | None,
        shard: tuple[int, int] | None,
    ) -> None:
        self.kind, self.workload, self.model, self.target = kind, workload, model, target
        self.result, self.cache = result, cache
        self.crash_point, self.shard = crash_point, shard

    def run(self, run: Run, *, from_point: int = 0, only: Collection[int] | None = None) -> None:
        kind, result = self.kind, self.result
        wanted = set(result.invariants)
        by_state: dict[tuple[int, str], list[tuple[CrashState, Finding]]] = {}

        def add(k: int, state: CrashState, finding: Finding) -> None:
            if finding.invariant in wanted:
                by_state.setdefault((k, state.digest()), []).append((state, finding))

        for k, finding in kind.trace_findings(run):
            if k >= from_point and self.crash_point in (None, k):
                add(k, state_after(run, k), finding)
        for k, states in judged_crash_states(
            self.model,
            run.initial,
            run.ops,
            result,
            from_point=from_point,
            only=only,
            crash_point=self.crash_point,
            shard=self.shard,
        ):
            t0 = time.perf_counter()
            for state in states:
                result.raw_states += 1
                result.state_ids.add(state.digest())
                if state not in self.cache:
                    self.cache[state] = kind.observe(state)
                for finding in kind.judge(run, k, state, self.cache[state]):
                    add(k, state, finding)
            result.check_seconds += time.perf_counter() - t0
        for (k, _digest), found in by_state.items():
            broken = tuple(dict.fromkeys(f.invariant for _, f in found))
            for state, finding in found:
                c = self._counterexample(run, k, state, finding, broken)
                if invariant_info(finding.invariant).severity == "warning":
                    result.warnings.append(c)
                else:
                    result.counterexamples.append(c)

    def _counterexample(
        self, run: Run, k: int, state: CrashState, f: Finding, broken: tuple[str, ...]
    ) -> Counterexample:
        ops = run.ops
        return Counterexample(
            f.invariant,
            broken,
            self.kind.workload_name(self.workload),
            self.model.name,
            self.target,
            k,
            ops[k].render() if k < len(ops) else "(no crash: the run completed)",
            ops[k - 1].render() if k > 0 else "(nothing)",
            f.subject,
            self.kind.describe_state(state, run),
            state.digest(),
            f.expected,
            f.got,
            self.kind.replay(self.workload, self.model, k, run.fault),
            fault_spec(run.fault) if run.fault is not None else "",
        )


def state_after(run: Run, k: int) -> CrashState:
    """The process-crash state after the first ``k`` operations of ``run``."""
    for point in crash_points(PROCESS_CRASH, run.initial, run.ops[:k]):
        if point.index == k:
            return point.states[0]
    raise ValueError(k)


def fault_spec(fault: Fault) -> str:
    """``AT:NAME`` as ``--fault`` takes it: ``3:ENOSPC``, ``5:short-write``, ``7:fsync-lost``."""
    if fault.kind is FaultKind.ERROR:
        return f"{fault.at}:{errno.errorcode[fault.errno]}"
    return f"{fault.at}:{fault.kind.value}"


def _in_shard(state: CrashState, shard: tuple[int, int]) -> bool:
    k, n = shard
    return int(state.digest(), 16) % n == k - 1

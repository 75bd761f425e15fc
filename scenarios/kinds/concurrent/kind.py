"""The concurrent kind: two or more actors on one directory, schedule by schedule, with
a crash at every point (SPEC.md §10.1, issue 25).

An *actor* is one instance of a document target's factory (nothing shared but the
disk, as separate processes). Its workloads (``--workload``):

* ``concurrent-saves``: each actor saves its own value once, into the empty directory;
* ``concurrent-update``: after a first value ``{"base": ...}`` is saved, each actor
  updates it: a target's own ``update(fn)`` is called with ``fn``; otherwise the
  harness composes ``load()``, one key changed (``actor<i>``), ``save()``;
* ``save-while-load``: after a first value is saved, actor 0 saves a new one while
  every other actor loads.

Each schedule (:mod:`crashpoint.scenarios.engine.schedule`) is one workload of the
engine: recorded once, its crash-free run judged for I8, L1, R2 and W1 (the run's own
findings), every crash state of it under every model judged for D2, all through
:func:`~crashpoint.scenarios.engine.explore.explore_models`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ....faultfs import CrashState, Fault, MemoryFileSystem, PersistenceModel, RecordingFileSystem
from ....faultfs._actors import YieldingFileSystem
from ...engine.explore import (
    EngineResult,
    Finding,
    InvariantInfo,
    Run,
    Step,
    explore_models,
    register_invariants,
)
from ...engine.schedule import (
    DEFAULT_PREEMPTIONS,
    Exploration,
    Outcome,
    Scheduler,
    SchedulerClock,
    explore_schedules,
    format_schedule,
)
from ...targets.user import Runner
from ..document.kind import DocObservation, DocumentKind

__all__ = [
    "CONCURRENT_INVARIANTS",
    "CONCURRENT_WORKLOADS",
    "ConcurrentKind",
    "ConcurrentResult",
    "ConcurrentWorkload",
    "explore_concurrent",
]

CONCURRENT_INVARIANTS = (
    InvariantInfo(
        "I8",
        "concurrent-atomic",
        "data-loss",
        "after a crash-free schedule, load returns exactly one actor's complete payload, and "
        "no save fails that would succeed alone",
    ),
    InvariantInfo(
        "L1",
        "no-lost-update",
        "data-loss",
        "every acknowledged read-modify-write update is reflected (unless last-writer-wins "
        "is declared)",
    ),
    InvariantInfo(
        "R2",
        "reader-sees-a-version",
        "data-loss",
        "a load concurrent with a save returns the old or the new value, never a torn, "
        "empty or invented one",
    ),
    InvariantInfo(
        "W1",
        "progress",
        "semantics",
        "no schedule deadlocks or spins for ever: every actor's call returns or fails "
        "within a bound of scheduler steps",
    ),
    InvariantInfo(
        "D2",
        "durable-linearizable",
        "data-loss",
        "after a crash, the recovered value is that of a linearisation of the acknowledged "
        "operations plus possibly some pending ones",
    ),
)
register_invariants(CONCURRENT_INVARIANTS)

CONCURRENT_WORKLOADS = ("concurrent-saves", "concurrent-update", "save-while-load")
"""The concurrent workloads, in the order verify runs them."""


@dataclass(frozen=True, slots=True)
class ConcurrentWorkload:
    """One schedule of one concurrent workload.

    Attributes:
        name: ``concurrent-saves`` ...
        actors: how many actors.
        schedule: the choices forced at the first choice points.
    """

    name: str
    actors: int = 2
    schedule: tuple[int, ...] = ()


@dataclass(slots=True)
class _ConcData:
    """Facts of one recorded schedule."""

    outcome: Outcome = field(default_factory=Outcome)
    final: DocObservation | None = None
    first: Any = None
    lanes: list[tuple[int, int, str]] = field(default_factory=list)
    """``(operations done, actor, what)``: each actor's calls and operations in order."""


def _actor_value(actor: int) -> dict[str, Any]:
    return {"actor": actor, "pad": "abcdefghijklmnopqrstuvwxyz"[actor % 26] * (200 + 40 * actor)}


_FIRST = {"base": "first"}
"""The value saved before ``concurrent-update`` and ``save-while-load`` begin."""


def declares_last_writer_wins(factory: object) -> bool:
    """Whether the target declares itself last-writer-wins: the factory attribute
    ``crashpoint_last_writer_wins = True`` (exactly True), as the user's
    ``--last-writer-wins`` does: L1 is not judged and D2 accepts any subset of the begun
    updates (SPEC.md §10.1, L1: "unless the user declares last-writer-wins")."""
    return getattr(factory, "crashpoint_last_writer_wins", False) is True


class ConcurrentKind:
    """The concurrent kind for one document target (see the module docstring).

    Args:
        runner: builds and calls the target (intercepted or protocol).
        target: the target's name as replays spell it.
        last_writer_wins: L1 is not judged (the user declares it).
        seed: the interception's seed.
    """

    name = "concurrent"
    subject = "the document"
    tiebreak: tuple[str, ...] = ("state_digest", "got")

    def __init__(
        self,
        runner: Runner,
        target: str,
        *,
        last_writer_wins: bool = False,
        seed: int = 0,
        preemptions: int = DEFAULT_PREEMPTIONS,
    ) -> None:
        self.runner = runner
        self.target = target
        self.last_writer_wins = last_writer_wins
        self.seed = seed
        self.preemptions = preemptions
        self.doc = DocumentKind(runner, target, seed=seed)
        self.base = runner.base_dir
        self.initial_state = self.doc.initial_state
        self._runs: dict[ConcurrentWorkload, Run] = {}

    # --- the kind -------------------------------------------------------------------
    def workload_name(self, workload: ConcurrentWorkload) -> str:
        return f"{workload.name}@{format_schedule(workload.schedule)}"

    def invariants(self, *, faults: bool) -> tuple[str, ...]:
        ids = ["S1", "I8", "L1", "R2", "W1", "D2"]
        if self.last_writer_wins:
            ids.remove("L1")
        return tuple(ids)

    def observe(self, state: CrashState) -> DocObservation:
        return self.doc.observe(state)

    def describe_state(self, state: CrashState, run: Run, subject: str = "") -> dict[str, str]:
        out: dict[str, str] = {}
        for path, blob in state.files:
            out[path.removeprefix(self.base.rstrip("/") + "/")] = f"{len(blob)} bytes"
        return out

    def replay(
        self, workload: ConcurrentWorkload, model: PersistenceModel, k: int, fault: Fault | None
    ) -> str:
        parts = [
            f"crashpoint verify {self.target} --workload {workload.name}",
            f"--actors {workload.actors} --preemptions {self.preemptions}",
            f"--schedule {format_schedule(workload.schedule)} --model {model.name}",
        ]
        if self.last_writer_wins:
            parts.append("--last-writer-wins")
        parts.append(f"--crash-point {k}")
        return " ".join(parts)

    def record(self, workload: ConcurrentWorkload, fault: Fault | None) -> Run:
        """Run the schedule ``workload.schedule`` once (faults are not armed: the
        concurrent workloads judge crashes and interleavings)."""
        run = self._runs.get(workload)
        if run is None:
            run = self._runs[workload] = self._record(workload)
        return run

    def _setup_state(self, workload: ConcurrentWorkload) -> CrashState:
        if workload.name == "concurrent-saves":
            return self.initial_state
        sched = Scheduler()
        fs = MemoryFileSystem(self.initial_state, clock=SchedulerClock(sched))
        runner = self.runner
        runner._fresh(fs)
        failed: list[BaseException] = []

        target_fs: Any = YieldingFileSystem(fs, sched) if runner.mode == "protocol" else fs

        def first() -> None:
            try:
                obj = runner.build_actor(target_fs)
                runner.call("save() (the first value)", lambda: obj.save(copy.deepcopy(_FIRST)))
            except Exception as exc:
                failed.append(exc)

        self._scheduled(sched, [first])
        if failed:
            raise failed[0]
        return fs.crash_state()  # the first value, taken as synced

    def _record(self, workload: ConcurrentWorkload) -> Run:
        initial = self._setup_state(workload)
        sched = Scheduler(workload.schedule, pid_base=2000 + self.seed % 1000)
        fs = MemoryFileSystem(initial, clock=SchedulerClock(sched))
        rec = RecordingFileSystem(fs)
        sched.counter = lambda: rec.op_count
        runner = self.runner
        runner.use(rec)
        runner._fresh(rec)
        # a protocol target calls its filesystem directly: each call a yield point
        target_fs: Any = YieldingFileSystem(rec, sched) if runner.mode == "protocol" else rec
        # Each actor builds its own instance in its own thread (its own pid, as a
        # separate process: filelock remembers the pid that made it).
        objs: list[Any] = [None] * workload.actors
        steps: list[Step] = []
        data = _ConcData(first=copy.deepcopy(_FIRST) if initial is not self.initial_state else None)
        lanes = data.lanes

        def call(actor: int, label: str, payload: tuple[Any, ...], fn: Callable[[], Any]) -> Any:
            sched.point(f"begin {label}")
            step = Step(f"a{actor}:{label}", rec.op_count, payload=payload)
            steps.append(step)
            lanes.append((rec.op_count, actor, f"begin {label}"))
            result = None
            try:
                result = runner.call(f"{label} (actor {actor})", fn)
            except Exception as exc:
                step.error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
            step.end = rec.op_count
            lanes.append((rec.op_count, actor, f"{'fail' if step.error else 'ack'} {label}"))
            return result

        def body(actor: int) -> Callable[[], None]:
            def go() -> None:
                try:
                    obj = objs[actor] = runner.build_actor(target_fs)
                except Exception as exc:
                    steps.append(
                        Step(
                            f"a{actor}:factory",
                            rec.op_count,
                            rec.op_count,
                            f"{type(exc).__name__}: {exc}",
                            ("factory",),
                        )
                    )
                    return
                if workload.name == "concurrent-saves":
                    value = _actor_value(actor)
                    call(actor, "save", ("save", value), lambda: obj.save(copy.deepcopy(value)))
                elif workload.name == "concurrent-update":
                    key, val = f"actor{actor}", actor

                    def change(v: Any) -> Any:
                        out = dict(v) if isinstance(v, dict) else {}
                        out[key] = val
                        return out

                    own = getattr(obj, "update", None)
                    if callable(own):
                        call(actor, "update", ("update", key, val), lambda: own(change))
                    else:

                        def composed() -> None:
                            obj.save(change(obj.load()))

                        call(actor, "update", ("update", key, val), composed)
                elif actor == 0:
                    value = _actor_value(0)
                    call(actor, "save", ("save", value), lambda: obj.save(copy.deepcopy(value)))
                else:
                    step_payload: list[Any] = ["load", None]

                    def load() -> None:
                        try:
                            step_payload[1] = DocObservation(value=obj.load())
                        except Exception as exc:
                            step_payload[1] = DocObservation(error=f"{type(exc).__name__}: {exc}")

                    call(actor, "load", ("load",), load)
                    steps_of = [s for s in steps if s.label == f"a{actor}:load"]
                    steps_of[-1].payload = tuple(step_payload)

            return go

        outcome = self._scheduled(sched, [body(i) for i in range(workload.actors)])
        data.outcome = outcome
        # The crash-free end: a fresh actor loads what the schedule left.
        if outcome.stuck is None:
            data.final = self.doc.observe(fs.crash_state())
        unsupported = runner.unsupported() + [
            f"threading: thread {name!r} started by the target is not scheduled as an actor"
            for name in sched.foreign
        ]
        return Run(
            initial,
            list(rec.trace.ops),
            steps,
            None,
            unsupported,
            runner.escapes(),
            data=data,
            base=self.base,
        )

    def _scheduled(self, sched: Scheduler, bodies: Sequence[Callable[[], None]]) -> Outcome:
        """Run ``bodies`` as actors under ``sched``, its hooks installed on the
        runner's interception (faultfs/_actors.py) for the while."""
        icpt = getattr(self.runner, "_icpt", None)
        before = icpt.actors if icpt is not None else None
        if icpt is not None:
            icpt.actors = sched
        try:
            return sched.run(bodies)
        finally:
            if icpt is not None:
                icpt.actors = before

    # --- judging ----------------------------------------------------------------------
    def _same(self, a: Any, b: Any) -> bool:
        return self.doc._same(a, b)

    def _last_values(self, steps: Sequence[Step], k: int | None) -> list[Any]:
        """Values a linearisation of the saves can end with, at crash point ``k``
        (None: the crash-free end): an acknowledged or pending save that no acknowledged
        save began after it ended (real-time order, Herlihy–Wing)."""
        saves = [s for s in steps if s.payload[0] == "save" and (k is None or s.begin <= k)]
        acked = [
            s for s in saves if s.error is None and s.end is not None and (k is None or s.end <= k)
        ]
        out = []
        for s in saves:
            done = s.end is not None and (k is None or s.end <= k) and s.error is None
            if done and any(o is not s and o.begin >= s.end for o in acked):  # type: ignore[operator]
                continue
            out.append(s.payload[1])
        return out

    def _update_allowed(self, obs: DocObservation, run: Run, k: int | None) -> bool:
        """``obs`` is the first value with a set of updates applied that holds every
        acknowledged one and only begun ones."""
        if obs.error is not None or not isinstance(obs.value, dict):
            return False
        ups = [s for s in run.steps if s.payload[0] == "update" and (k is None or s.begin <= k)]
        need = {
            s.payload[1]: s.payload[2]
            for s in ups
            if s.acknowledged_by(k if k is not None else 1 << 60)
        }
        may = {s.payload[1]: s.payload[2] for s in ups}
        if self.last_writer_wins:  # a later update may overwrite an earlier one's key
            need = {}
        value = dict(obs.value)
        for key, val in _FIRST.items():
            if value.pop(key, None) != val:
                return False
        return all(value.get(key) == val for key, val in need.items()) and all(
            may.get(key) == val for key, val in value.items()
        )

    def judge(self, run: Run, k: int, state: CrashState, obs: DocObservation) -> list[Finding]:
        """D2 on the crash state after ``k`` operations."""
        data: _ConcData = run.data
        got = self._describe(obs, run)
        has_updates = any(s.payload[0] == "update" for s in run.steps)
        if has_updates:
            if self._update_allowed(obs, run, k) or self._first_only(obs, run, k):
                return []
            return [Finding("D2", "the first value with every acknowledged update applied", got)]
        allowed = self._last_values(run.steps, k)
        acked_any = any(s.payload[0] == "save" and s.acknowledged_by(k) for s in run.steps)
        if not acked_any:
            allowed = [*allowed, data.first] if data.first is not None else allowed
            if data.first is None and self.doc._is_initial(obs):
                return []
        if obs.error is None and any(self._same(obs.value, v) for v in allowed):
            return []
        return [Finding("D2", "a value some linearisation of the saves ends with", got)]

    def _first_only(self, obs: DocObservation, run: Run, k: int) -> bool:
        acked = [s for s in run.steps if s.payload[0] == "update" and s.acknowledged_by(k)]
        return not acked and obs.error is None and self._same(obs.value, _FIRST)

    def trace_findings(self, run: Run) -> list[tuple[int, Finding]]:
        """I8, L1, R2, W1 and S1 on the crash-free schedule itself."""
        data: _ConcData = run.data
        end = len(run.ops)
        out: list[tuple[int, Finding]] = []
        for path in run.escapes:
            out.append((end, Finding("S1", f"no operation outside {self.base}", f"changed {path}")))
        if data.outcome.stuck is not None:
            out.append(
                (end, Finding("W1", "every actor's call returns or fails", data.outcome.stuck))
            )
            return out
        for s in run.steps:
            if s.error is not None and s.payload[0] in ("save", "update", "factory"):
                out.append(
                    (
                        s.end or end,
                        Finding("I8", f"{s.label} succeeds as it does alone", f"raised {s.error}"),
                    )
                )
        final = data.final
        if final is None:
            return out
        got = self._describe(final, run)
        kinds = {s.payload[0] for s in run.steps}
        if "update" in kinds:
            if final.error is not None or not isinstance(final.value, dict):
                out.append((end, Finding("I8", "load returns one actor's complete payload", got)))
            elif not self.last_writer_wins and not self._update_allowed(final, run, None):
                lost = [
                    s.label
                    for s in run.steps
                    if s.payload[0] == "update"
                    and s.error is None
                    and final.value.get(s.payload[1]) != s.payload[2]
                ]
                out.append(
                    (
                        end,
                        Finding(
                            "L1",
                            "every acknowledged update reflected",
                            f"{got}: lost {', '.join(lost)}",
                        ),
                    )
                )
        elif "save" in kinds:
            allowed = self._last_values(run.steps, None)
            if not (final.error is None and any(self._same(final.value, v) for v in allowed)):
                out.append((end, Finding("I8", "load returns one actor's complete payload", got)))
        for s in run.steps:
            if s.payload[0] != "load" or len(s.payload) < 2 or s.payload[1] is None:
                continue
            o: DocObservation = s.payload[1]
            saves = [
                x.payload[1]
                for x in run.steps
                if x.payload[0] == "save"
                and x.end is not None
                and s.end is not None
                and x.begin <= s.end
            ]
            ok = o.error is None and (
                self._same(o.value, data.first) or any(self._same(o.value, v) for v in saves)
            )
            if not ok:
                out.append(
                    (
                        s.end or end,
                        Finding("R2", "the old or the new value", self._describe(o, run)),
                    )
                )
        return out

    def _describe(self, obs: DocObservation, run: Run) -> str:
        if obs.error is not None:
            return f"raised {obs.error}"
        data: _ConcData = run.data
        for s in run.steps:
            if s.payload[0] == "save" and self._same(obs.value, s.payload[1]):
                return f"{s.label}'s value"
        if data.first is not None and self._same(obs.value, data.first):
            return "the first value"
        text = repr(obs.value)
        return text if len(text) <= 80 else text[:77] + "..."


@dataclass(slots=True)
class ConcurrentResult:
    """One concurrent workload explored: the schedules and, per model, the engine's
    results of every distinct schedule.

    Attributes:
        workload: its name.
        exploration: what the scheduler ran (the bound, what it left out).
        results: model name -> one :class:`EngineResult` per distinct schedule.
        runs: the kind's recorded runs by schedule (for lanes).
    """

    workload: str
    exploration: Exploration
    results: dict[str, list[EngineResult]] = field(default_factory=dict)
    schedules: list[ConcurrentWorkload] = field(default_factory=list)

    @property
    def crash_states(self) -> int:
        return sum(r.crash_points for rs in self.results.values() for r in rs)

    @property
    def findings(self) -> list[tuple[ConcurrentWorkload, EngineResult]]:
        return [
            (w, r)
            for rs in self.results.values()
            for w, r in zip(self.schedules, rs, strict=False)
            if r.counterexamples
        ]

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def incomplete(self) -> bool:
        return any(r.incomplete for rs in self.results.values() for r in rs)


def explore_concurrent(
    kind: ConcurrentKind,
    workload: str,
    *,
    actors: int = 2,
    models: Sequence[PersistenceModel],
    schedule: tuple[int, ...] | None = None,
    crash_point: int | None = None,
    max_schedules: int | None = 5000,
) -> ConcurrentResult:
    """Every schedule of ``workload`` within the kind's preemption bound (or only
    ``schedule``), deduplicated by trace, each judged through the engine under every
    one of ``models``.

    Raises KeyError for an unknown workload."""
    if workload not in CONCURRENT_WORKLOADS:
        raise KeyError(
            f"unknown concurrent workload {workload!r}; known: {', '.join(CONCURRENT_WORKLOADS)}"
        )

    def run_one(prefix: tuple[int, ...]) -> tuple[Any, Outcome]:
        w = ConcurrentWorkload(workload, actors, prefix)
        run = kind.record(w, None)
        key = tuple(
            (op.kind, op.path, op.dst, op.offset, op.data, op.size, op.errno) for op in run.ops
        ) + tuple(
            (
                s.label,
                s.begin,
                s.end,
                s.error,
                repr(s.payload[1:]) if s.payload[0] == "load" else "",
            )
            for s in run.steps
        )  # what each load returned is part of the trace (a read has no operation)
        return key, run.data.outcome

    if schedule is not None:
        _, out = run_one(schedule)
        exploration = Exploration(
            kind.preemptions, schedules=1, distinct=1, kept=[((), out)], replayed=True
        )
        picked = [schedule]
    else:
        exploration = explore_schedules(
            run_one, preemptions=kind.preemptions, max_schedules=max_schedules
        )
        picked = [out.choices for _, out in exploration.kept]
    result = ConcurrentResult(workload, exploration)
    for choices in picked:
        w = ConcurrentWorkload(workload, actors, tuple(choices))
        result.schedules.append(w)
        for model, r in zip(
            models,
            explore_models(kind, w, models=models, target=kind.target, crash_point=crash_point),
            strict=True,
        ):
            result.results.setdefault(model.name, []).append(r)
    return result

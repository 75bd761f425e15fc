"""The document kind: any code that saves and loads one value (SPEC.md §10).

A document target is ``factory(base_dir)`` (unmodified code, run intercepted) or
``factory(fs, base_dir)`` (written against the filesystem protocol) returning an
object with ``save(value)`` and ``load() -> value``. Its workloads are series of
saves; every crash state is rebooted (a fresh filesystem holding exactly that
state, a fresh target) and loaded once, and the load is judged against A1–A5 and
S1 using only what the recorded run says was saved and acknowledged.

Workloads (``--workload``): ``first-save`` (one save into the empty directory),
``resize`` (saves whose encoded size shrinks and grows across 4096-byte
boundaries), ``save-after-failure`` (a save fails with ENOSPC at its first write,
then the next one must work), ``random`` (saves of values drawn from the value
strategy by hypothesis; a failing list shrinks to the fewest saves that still
fail). ``resize:1,3`` is ``resize`` keeping only saves 1 and 3 (a shrunk workload).
"""

from __future__ import annotations

import copy
import dataclasses
import errno
import json
import posixpath
import random
import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ....faultfs import (
    CrashState,
    Fault,
    MemoryFileSystem,
    OpKind,
    PersistenceModel,
    RecordingFileSystem,
)
from ...engine.explore import Finding, InvariantInfo, Run, Step, fault_spec, register_invariants
from ...targets.user import Runner, TargetTimeout

__all__ = [
    "DOCUMENT_INVARIANTS",
    "DOC_BASE",
    "DOC_WORKLOADS",
    "EXTRA_WORKLOADS",
    "VALUE_STRATEGIES",
    "DocWorkload",
    "DocumentKind",
    "json_parses",
    "value_strategy",
]

DOC_BASE = "/data/store"
"""The base directory a document target is given (it exists, empty, before the run)."""

_ROOTS = ("/data/store", "/tmp")

DOCUMENT_INVARIANTS = (
    InvariantInfo(
        "A1",
        "atomic",
        "data-loss",
        "load returns a saved value or the initial value: never a mix, never a value "
        "nobody saved, never an exception on a state the target's own writes produced",
    ),
    InvariantInfo(
        "A2",
        "durable",
        "data-loss",
        "the loaded value is not older than the last acknowledged save (nor the initial "
        "value once a save was acknowledged)",
    ),
    InvariantInfo(
        "A3",
        "no-silent-reset",
        "data-loss",
        "load returns the initial value only when no complete saved value is on disk in "
        "the target's files, and its writes never make unrecoverable a complete value "
        "readable before them (a recovery that rolls back a save that had not returned, "
        "as SQLite's hot journal does, is none)",
    ),
    InvariantInfo(
        "A4",
        "clean-failure",
        "data-loss",
        "after a save that raised, load returns the last acknowledged value or the failed "
        "save's own value, and later saves and loads work",
    ),
    InvariantInfo(
        "A5",
        "no-stray-read",
        "warning",
        "a leftover file (one a crash-free run does not leave) is never read as data",
    ),
)
register_invariants(DOCUMENT_INVARIANTS)  # S1: the engine's CONFINED, shared by every kind

DOC_WORKLOADS = ("first-save", "resize", "save-after-failure", "random")
"""The document workloads, in the order verify runs them."""

_RESIZE_BYTES = (120, 5000, 300, 9000, 4000, 4200)
"""Approximate encoded sizes of ``resize``'s saves: across the 4096-byte boundaries."""

_TEN_SAVES_BYTES = (120, 5000, 300, 9000, 4000, 4200, 12500, 60, 8200, 4090)
"""``ten-saves`` (on request, not run by default; the benchmark's workload)."""

EXTRA_WORKLOADS = ("ten-saves",)
"""Document workloads run only when named (``--workload``)."""


# --- values ------------------------------------------------------------------------


def _json_strategy() -> Any:
    from hypothesis import strategies as st

    text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=40)
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-(2**53), 2**53)
        | st.floats(allow_nan=False, allow_infinity=False)
        | text
    )
    return st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=6) | st.dictionaries(text, inner, max_size=6),
        max_leaves=40,
    )


def _flat_strings_strategy() -> Any:
    from hypothesis import strategies as st

    key = st.from_regex(r"[A-Z][A-Z0-9_]{0,11}", fullmatch=True)
    value = st.text(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/@+-", max_size=60
    )
    return st.dictionaries(key, value, max_size=12)


VALUE_STRATEGIES: dict[str, Callable[[], Any]] = {
    "json": _json_strategy,
    "flat-strings": _flat_strings_strategy,
}
"""Named value strategies (``--values NAME``): JSON-able data (default), and flat
string maps for ``.env``/INI-like stores."""


def value_strategy(name: str) -> Any:
    """The hypothesis strategy called ``name``. Raises KeyError naming the known ones."""
    try:
        return VALUE_STRATEGIES[name]()
    except KeyError:
        raise KeyError(
            f"unknown value strategy {name!r}; known: {', '.join(VALUE_STRATEGIES)}"
        ) from None


def _sized(values: str, generation: int, nbytes: int) -> Any:
    """A value of the named strategy, about ``nbytes`` long when encoded."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    shift = generation % 26
    pad = ((letters[shift:] + letters[:shift]) * (nbytes // 26 + 1))[:nbytes]
    if values == "flat-strings":
        return {"GENERATION": str(generation), "PAD": pad}
    return {"generation": generation, "pad": pad}


# --- workloads -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DocWorkload:
    """A series of saves.

    Attributes:
        name: as ``--workload`` spells it (``resize``, ``resize:1,3`` ...).
        values: the values saved, in order.
        arm_failure: fail the second save at its first write (``save-after-failure``).
    """

    name: str
    values: tuple[Any, ...]
    arm_failure: bool = False

    def keep(self, indices: Sequence[int]) -> DocWorkload:
        """Only the saves at ``indices`` (a shrunk workload)."""
        base = self.name.split(":", 1)[0]
        kept = tuple(self.values[i] for i in indices)
        prior = _kept_indices(self.name, len(self.values))
        return DocWorkload(
            f"{base}:{','.join(str(prior[i]) for i in indices)}", kept, self.arm_failure
        )


def _kept_indices(name: str, n: int) -> list[int]:
    _, sep, rest = name.partition(":")
    if not sep:
        return list(range(n))
    return [int(x) for x in rest.split(",")]


@dataclass(slots=True)
class _RunData:
    """Document facts of one recorded run."""

    blobs: dict[bytes, str] = field(default_factory=dict)
    final_paths: frozenset[str] = frozenset()
    initial_paths: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class DocObservation:
    """What loading a rebooted crash state gave.

    Attributes:
        value: the value load returned (when ``error`` is None).
        error: what load (or the factory) raised, ``"Type: message"``; None if it returned.
        reads: paths load read.
        wrote: whether load changed or removed a file of the crash state.
        reloaded: when it ``wrote``, what a fresh load of the disk its writes left gave
            (A3 on states, SPEC.md §10: did the writes make a generation unrecoverable?).
    """

    value: Any = None
    error: str | None = None
    reads: frozenset[str] = frozenset()
    wrote: bool = False
    reloaded: DocObservation | None = None


class DocumentKind:
    """The document kind for one target (see the module docstring).

    Args:
        runner: builds and calls the target (protocol or intercepted).
        target: the target's name as replays spell it (``examples/store.py:Store``).
        values: the value strategy's name (``json``, ``flat-strings``), or ``custom``.
        strategy: the hypothesis strategy (default: the named one).
        equal: value equality (default ``==``).
        seed: the seed of generated workloads and of the interception.
    """

    name = "document"
    subject = "the document"
    tiebreak: tuple[str, ...] = ("fault", "state_digest", "got")

    def __init__(
        self,
        runner: Runner,
        target: str,
        *,
        values: str = "json",
        strategy: Any = None,
        equal: Callable[[Any, Any], bool] | None = None,
        seed: int = 0,
    ) -> None:
        self.runner = runner
        self.target = target
        self.values = values
        self.strategy = strategy if strategy is not None else value_strategy(values)
        self.equal = equal or (lambda a, b: bool(a == b))
        self.seed = seed
        self.examples = 20
        """Hypothesis examples of the ``random`` search (a replay repeats the search)."""
        self.base = runner.base_dir
        boot = MemoryFileSystem(dirs=_ROOTS)
        self.initial_state = boot.crash_state()
        self.initial: DocObservation | None = None
        self.leftovers: dict[str, int] = {}
        self._runs: dict[tuple[str, tuple[str, ...], Fault | None], Run] = {}
        self.observed: dict[str, DocObservation] = {}
        """Observations of crash states by digest, shared by every workload and model."""

    # --- workloads ------------------------------------------------------------------
    def workload(self, name: str) -> DocWorkload:
        """The workload called ``name`` (see the module docstring). Raises KeyError."""
        base, sep, rest = name.partition(":")
        if base not in DOC_WORKLOADS + EXTRA_WORKLOADS:
            known = ", ".join(DOC_WORKLOADS + EXTRA_WORKLOADS)
            raise KeyError(f"unknown document workload {name!r}; known: {known}")
        if base == "first-save":
            w = DocWorkload(base, (self._value(0, 300),))
        elif base == "resize":
            w = DocWorkload(base, tuple(self._value(i, n) for i, n in enumerate(_RESIZE_BYTES)))
        elif base == "ten-saves":
            w = DocWorkload(base, tuple(self._value(i, n) for i, n in enumerate(_TEN_SAVES_BYTES)))
        elif base == "save-after-failure":
            w = DocWorkload(base, tuple(self._value(i, 200 + 50 * i) for i in range(3)), True)
        else:
            raise KeyError("the random workload is drawn by hypothesis: see draw_random")
        if sep:
            try:
                indices = [int(x) for x in rest.split(",")]
                return DocWorkload(name, tuple(w.values[i] for i in indices), w.arm_failure)
            except (ValueError, IndexError):
                raise KeyError(f"bad workload selection {name!r}") from None
        return w

    def _value(self, generation: int, nbytes: int) -> Any:
        if self.values in VALUE_STRATEGIES:
            return _sized(self.values, generation, nbytes)
        # A strategy of the target's own: distinct values it draws, deterministically.
        from hypothesis import HealthCheck, find, settings
        from hypothesis import strategies as st

        drawn = find(
            st.lists(
                self.strategy, min_size=generation + 1, max_size=generation + 1, unique_by=repr
            ),
            lambda _: True,
            settings=settings(database=None, suppress_health_check=list(HealthCheck)),
            random=random.Random(self.seed),
        )
        return drawn[generation]

    def workload_name(self, workload: DocWorkload) -> str:
        return workload.name

    def armed_faults(self, workload: DocWorkload, base: Run) -> list[Fault]:
        """The fault ``save-after-failure`` arms: ENOSPC at the second save's first
        write (its first operation if it writes nothing)."""
        step = next((s for s in base.steps if s.label == "save#1"), None)
        if not workload.arm_failure or step is None:
            return []
        span = base.ops[step.begin : step.end]
        op = next((o for o in span if o.kind is OpKind.WRITE), span[0] if span else None)
        return [] if op is None else [Fault(op.index, errno.ENOSPC)]

    # --- the kind -------------------------------------------------------------------
    def invariants(self, *, faults: bool) -> tuple[str, ...]:
        ids = ("S1", "A1", "A2", "A3", "A4", "A5")
        return ids if faults else tuple(i for i in ids if i != "A4")

    def record(self, workload: DocWorkload, fault: Fault | None) -> Run:
        """Run ``workload`` (see :class:`~crashpoint.scenarios.engine.explore.Kind`); runs are
        deterministic (the interception is seeded again per run), so each (workload,
        fault) is recorded once and shared by every model."""
        key = (workload.name, tuple(map(repr, workload.values)), fault)
        run = self._runs.get(key)
        if run is None:
            run = self._runs[key] = self._record(workload, fault)
        return run

    def _record(self, workload: DocWorkload, fault: Fault | None) -> Run:
        fs = MemoryFileSystem(self.initial_state)
        rec = RecordingFileSystem(fs, fault=fault)
        runner = self.runner
        escapes0 = len(runner.escapes())
        try:
            obj = runner.call("the factory", lambda: runner.build(rec))
        except TargetTimeout:
            raise
        except Exception:
            if fault is None:
                raise
            # The armed fault hit the factory's own file operations (tinydb creates
            # db.json when it opens it): the run ends there, no save was called.
            obj = None
        steps: list[Step] = []
        data = _RunData(initial_paths=frozenset(p for p, _ in self.initial_state.files))
        for i, value in enumerate(workload.values if obj is not None else ()):
            label = f"save#{i}"
            step = Step(label, rec.op_count, payload=("save", value))
            before = fs.crash_state()
            rec.mark(f"begin:{label}")
            saved = copy.deepcopy(value)
            runner.use(rec)
            try:
                runner.call(f"save() ({label})", lambda v=saved: obj.save(v))  # type: ignore[misc]
            except TargetTimeout:
                raise
            except Exception as exc:
                step.error = f"{type(exc).__name__}: {_short(exc)}"
            step.end = rec.op_count
            rec.mark(f"{'fail' if step.error else 'ack'}:{label}")
            steps.append(step)
            if step.error is None:  # a complete generation: what an acknowledged save left
                old = dict(before.files)
                for path, blob in fs.crash_state().files:
                    if old.get(path) != blob and blob:
                        data.blobs.setdefault(blob, label)
            if step.error is not None:
                # "later saves and loads work" (A4): the same process loads at once.
                load = Step(f"load after {label}", rec.op_count)
                runner.use(rec)
                try:
                    got = runner.call(f"load() (after {label})", obj.load)
                    load.payload = ("load", DocObservation(value=got))
                except TargetTimeout:
                    raise
                except Exception as exc:
                    load.payload = ("load", DocObservation(error=_error(exc)))
                load.end = rec.op_count
                steps.append(load)
        final = frozenset(p for p, _ in fs.crash_state().files)
        # Leftovers are judged against the crash-free run of the same workload.
        if fault is None:
            data.final_paths = final
        else:
            data.final_paths = self.record(workload, None).data.final_paths
        return Run(
            self.initial_state,
            list(rec.trace.ops),
            steps,
            fault,
            runner.unsupported(),  # one interception per verify: every call it saw
            runner.escapes()[escapes0:],
            data=data,
            base=self.base,
        )

    def observe(self, state: CrashState) -> DocObservation:
        """Reboot ``state`` and load; when the load changed a file of it, load once more
        from the disk those writes left (:attr:`DocObservation.reloaded`)."""
        obs, left = self._load_once(state)
        if not obs.wrote:
            return obs
        return dataclasses.replace(obs, reloaded=self._load_once(left)[0])

    def _load_once(self, state: CrashState) -> tuple[DocObservation, CrashState]:
        """Load ``state`` once: what it gave, and the disk its writes left."""
        fs = MemoryFileSystem(state)
        rec = RecordingFileSystem(fs)
        runner = self.runner
        try:
            obj = runner.call("the factory (after a reboot)", lambda: runner.build(rec))
            runner.use(rec)
            value = runner.call("load() (after a reboot)", obj.load)
            error = None
        except TargetTimeout:
            raise
        except Exception as exc:
            value, error = None, _error(exc)
        reads = frozenset(e.path for e in rec.trace.events if e.kind is OpKind.READ)
        # "Writes over" (A3): a file of the crash state changed or removed. Creating a
        # file that was not there (tinydb creates an empty db.json) overwrites nothing.
        left = fs.crash_state()
        after = dict(left.files)
        wrote = any(after.get(path) != blob for path, blob in state.files)
        return DocObservation(value, error, reads, wrote), left

    def observe_initial(self) -> DocObservation:
        """Load on the empty base directory: the initial value (SPEC.md §10)."""
        if self.initial is None:
            self.initial = self.observe(self.initial_state)
        return self.initial

    # --- judging ----------------------------------------------------------------------
    def _same(self, a: Any, b: Any) -> bool:
        try:
            return self.equal(a, b)
        except Exception:
            return False

    def _is_initial(self, obs: DocObservation) -> bool:
        init = self.observe_initial()
        if init.error is not None:
            return obs.error is not None and obs.error.split(":")[0] == init.error.split(":")[0]
        return obs.error is None and self._same(obs.value, init.value)

    def _matches(self, obs: DocObservation, values: Sequence[Any]) -> bool:
        return obs.error is None and any(self._same(obs.value, v) for v in values)

    def judge(self, run: Run, k: int, state: CrashState, obs: DocObservation) -> list[Finding]:
        data: _RunData = run.data
        saves = [s for s in run.steps if s.payload[0] == "save"]
        init = self.observe_initial()
        got = self.describe(obs, run)
        out: list[Finding] = []
        is_initial = self._is_initial(obs)
        begun = [s for s in saves if s.begin <= k]
        acked = [s for s in saves if s.acknowledged_by(k)]
        if not is_initial and not self._matches(obs, [s.payload[1] for s in begun]):
            out.append(
                Finding(
                    "A1",
                    "load returns a saved value or the initial value",
                    got if obs.error else f"a value nobody saved: {got}",
                )
            )
        if acked:
            last = acked[-1]
            after = saves[saves.index(last) + 1 :]
            allowed = [last.payload[1]] + [s.payload[1] for s in after if s.begin <= k]
            if not self._matches(obs, allowed):
                out.append(Finding("A2", f"{last.label}'s value or a later save's", got))
        for failed in saves:
            if failed.error is None or failed.end is None or failed.end > k:
                continue
            i = saves.index(failed)
            prior = [s for s in saves[:i] if s.error is None]
            allowed = [failed.payload[1]] + [s.payload[1] for s in saves[i + 1 :] if s.begin <= k]
            ok = self._matches(obs, allowed) or (
                self._matches(obs, [prior[-1].payload[1]]) if prior else self._is_initial(obs)
            )
            if not ok:
                before = prior[-1].label + "'s value" if prior else "the initial value"
                out.append(
                    Finding("A4", f"{before} or {failed.label}'s own value after it failed", got)
                )
        on_disk = [
            label
            for path, blob in state.files
            if path in data.final_paths
            and not _outside(path, self.base)
            and (label := data.blobs.get(blob)) is not None
            and not self._initial_value_is(label, saves, init)
        ]
        rolled_back = self._rolled_back(k, obs, saves)
        if (
            is_initial
            and on_disk
            and not rolled_back
            and not self._newest_saved(k, state, obs, run)
        ):
            out.append(
                Finding(
                    "A3",
                    f"load reads the complete value on disk ({on_disk[0]}'s)",
                    f"{got} (the initial value)",
                )
            )
        lost = (
            self._lost_generation(run, k, state, obs, saves, init)
            if obs.wrote and not rolled_back
            else None
        )
        if lost is not None:
            out.append(
                Finding(
                    "A3",
                    f"load's writes leave {lost}'s complete value recoverable",
                    f"{got}, and load wrote: a fresh load then returned "
                    f"{self.describe(obs.reloaded or DocObservation(), run)}",
                )
            )
        leftovers = [
            p for p, _ in state.files if p not in data.final_paths and p not in data.initial_paths
        ]
        if leftovers:
            self.leftovers[state.digest()] = len(leftovers)
            read = sorted(set(leftovers) & obs.reads)
            if read:
                out.append(
                    Finding("A5", "a leftover is never read as data", f"load read {read[0]}")
                )
        return out

    def _newest_saved(self, k: int, state: CrashState, obs: DocObservation, run: Run) -> bool:
        """Whether the initial value load returned is also the value of a save at least
        as new as the newest complete generation on disk (begun by crash point ``k``): a
        last save of ``{}`` loaded as ``{}`` beside an older backup is no reset."""
        data: _RunData = run.data
        saves = [s for s in run.steps if s.payload[0] == "save"]
        order = {s.label: i for i, s in enumerate(saves)}
        labels = [
            label
            for path, blob in state.files
            if path in data.final_paths and (label := data.blobs.get(blob)) is not None
        ]
        if not labels:
            return False
        newest = max(order[label] for label in labels)
        return self._matches(obs, [s.payload[1] for s in saves[newest:] if s.begin <= k])

    def _rolled_back(self, k: int, obs: DocObservation, saves: Sequence[Step]) -> bool:
        """A recovery (SPEC.md §10, A3 on states): the load returned the last value
        acknowledged by crash point ``k`` (the initial value when none was) and its writes
        made that the disk's value (a fresh load returns it again): what SQLite's hot
        journal rollback does to a save that had not returned. No acknowledged value is
        lost (A2 promises only those), so the uncommitted generation it undid is none."""
        again = obs.reloaded
        if not obs.wrote or obs.error is not None or again is None or again.error is not None:
            return False
        acked = [s for s in saves if s.acknowledged_by(k)]
        if acked:
            last = acked[-1].payload[1]
            return self._matches(obs, [last]) and self._matches(again, [last])
        return self._is_initial(obs) and self._is_initial(again)

    def _lost_generation(
        self,
        run: Run,
        k: int,
        state: CrashState,
        obs: DocObservation,
        saves: Sequence[Step],
        init: DocObservation,
    ) -> str | None:
        """A3 on states (SPEC.md §10): the label of the newest complete generation on
        disk in ``state`` (a file as an acknowledged save left it, among the files of a
        crash-free run) that the load's writes made unrecoverable: a fresh load of the
        disk they left returns neither its value nor a later save's. None when none was
        on disk (a recovery rolling back an uncommitted change, SQLite's hot journal) or
        it is still recoverable."""
        data: _RunData = run.data
        order = {s.label: i for i, s in enumerate(saves)}
        labels = [
            label
            for path, blob in state.files
            if path in data.final_paths
            and not _outside(path, self.base)
            and (label := data.blobs.get(blob)) is not None
            and not self._initial_value_is(label, saves, init)
        ]
        if not labels:
            return None
        newest = max(labels, key=order.__getitem__)
        later = [s.payload[1] for s in saves[order[newest] :] if s.begin <= k]
        again = obs.reloaded
        if again is not None and self._matches(again, later):
            return None
        return newest

    def _initial_value_is(self, label: str, saves: Sequence[Step], init: DocObservation) -> bool:
        step = next((s for s in saves if s.label == label), None)
        return step is not None and init.error is None and self._same(step.payload[1], init.value)

    def trace_findings(self, run: Run) -> list[tuple[int, Finding]]:
        out: list[tuple[int, Finding]] = []
        for op in run.ops:
            for path in (op.path, op.dst):
                if path is not None and _outside(path, self.base):
                    out.append(
                        (
                            op.index + 1,
                            Finding("S1", f"no operation outside {self.base}", op.render()),
                        )
                    )
                    break
        for path in run.escapes:
            out.append(
                (
                    len(run.ops),
                    Finding("S1", f"no operation outside {self.base}", f"changed {path}"),
                )
            )
        saves = [s for s in run.steps if s.payload[0] == "save"]
        failed = next((s for s in saves if s.error is not None), None)
        if failed is not None and run.fault is not None:
            later = [s for s in saves if s.begin > failed.begin]
            for s in later:
                if s.error is not None and s.end is not None:
                    out.append(
                        (
                            s.end,
                            Finding(
                                "A4",
                                f"{s.label} works after {failed.label} failed",
                                f"{s.label} raised {s.error}",
                            ),
                        )
                    )
            for s in run.steps:
                if s.payload is not None and s.payload[0] == "load" and s.end is not None:
                    obs: DocObservation = s.payload[1]
                    i = saves.index(failed)
                    prior = [p for p in saves[:i] if p.error is None]
                    ok = self._matches(obs, [failed.payload[1]]) or (
                        self._matches(obs, [prior[-1].payload[1]])
                        if prior
                        else self._is_initial(obs)
                    )
                    if not ok:
                        out.append(
                            (
                                s.end,
                                Finding(
                                    "A4",
                                    f"{s.label} returns the last acknowledged value "
                                    f"or {failed.label}'s",
                                    self.describe(obs, run),
                                ),
                            )
                        )
        elif failed is not None and run.fault is None:
            pass  # a save raising on a clean run is a bad target (checked by verify)
        return out

    # --- rendering --------------------------------------------------------------------
    def describe(self, obs: DocObservation, run: Run) -> str:
        """What load gave, named after the save whose value it is, if any."""
        if obs.error is not None:
            return f"raised {obs.error}"
        for s in run.steps:
            if (
                s.payload is not None
                and s.payload[0] == "save"
                and self._same(obs.value, s.payload[1])
            ):
                return f"{s.label}'s value"
        init = self.observe_initial()
        if init.error is None and self._same(obs.value, init.value):
            return f"the initial value {_repr(obs.value)}"
        return _repr(obs.value)

    def describe_state(self, state: CrashState, run: Run, subject: str = "") -> dict[str, str]:
        data: _RunData = run.data
        out: dict[str, str] = {}
        for path, blob in state.files:
            name = posixpath.relpath(path, self.base) if not _outside(path, self.base) else path
            label = data.blobs.get(blob)
            if not blob:
                what = "empty"
            elif label is not None:
                what = f"{len(blob)} bytes: as {label} wrote it"
            else:
                prefix = next((lb for b, lb in data.blobs.items() if b.startswith(blob)), None)
                what = f"{len(blob)} bytes: " + (
                    f"a prefix of what {prefix} wrote" if prefix else "no save wrote exactly this"
                )
            if path not in data.final_paths and path not in data.initial_paths:
                what += " (leftover)"
            out[name] = what
        return out

    def replay(
        self, workload: DocWorkload, model: PersistenceModel, k: int, fault: Fault | None
    ) -> str:
        parts = [
            f"crashpoint verify {self.target} --kind document --workload {workload.name}",
            f"--model {model.name} --seed {self.seed}",
        ]
        if self.values not in ("json", "custom"):
            parts.append(f"--values {self.values}")
        if workload.name.split(":", 1)[0] == "random" and self.examples != 20:
            parts.append(f"--examples {self.examples}")
        if fault is not None:
            parts.append(f"--fault {fault_spec(fault)}")
        parts.append(f"--crash-point {k}")
        return " ".join(parts)


def _outside(path: str, base: str) -> bool:
    path = posixpath.normpath(path)
    return path != base and not path.startswith(base.rstrip("/") + "/")


def _short(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {_short(exc)}"


_REPR = reprlib.Repr()
_REPR.maxstring = 40
_REPR.maxother = 40
_REPR.maxdict = 4
_REPR.maxlist = 4


def _repr(value: Any) -> str:
    return _REPR.repr(value)


def json_parses(data: bytes) -> bool:
    """Whether ``data`` is UTF-8 JSON: a file a JSON document store would load."""
    try:
        json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return True

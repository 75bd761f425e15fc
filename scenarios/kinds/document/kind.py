"""The document kind: any code that saves and loads one value (SPEC.md §10).

A document target is ``factory(base_dir)`` (unmodified code, run intercepted) or
``factory(fs, base_dir)`` (written against the filesystem protocol) returning an
object with ``save(value)`` and ``load() -> value``. Its workloads are series of
saves; every crash state is rebooted (a fresh filesystem holding exactly that
state, a fresh target) and loaded once, and the load is judged against A1–A5 and
S1 using only what the recorded run says was saved and acknowledged.

Workloads (``--workload``): ``first-save`` (one save into the empty directory),
``resize`` (saves whose encoded size shrinks and grows across 4096-byte
boundaries), ``many-saves`` (16 saves whose sizes cross every size boundary of
``--sizes``, default 4 KiB and 64 KiB, growing and shrinking),
``save-after-failure`` (a save fails with ENOSPC at its first write, then the next
one must work), ``random`` (saves of values drawn from the value
strategy by hypothesis; a failing list shrinks to the fewest saves that still
fail). ``large-values`` (on request: values crossing 1 MiB, or the largest of
``--sizes`` above it) and ``ten-saves`` run only when named. ``resize:1,3`` is
``resize`` keeping only saves 1 and 3 (a shrunk workload).
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
from ....faultfs._fresh import match_fresh_names
from ...engine.explore import Finding, InvariantInfo, Run, Step, fault_spec, register_invariants
from ...targets.user import BadTarget, Runner, TargetTimeout, load_factory

__all__ = [
    "BASIC_WORKLOADS",
    "DEFAULT_SIZES",
    "DOCUMENT_INVARIANTS",
    "DOC_BASE",
    "DOC_WORKLOADS",
    "EXTRA_WORKLOADS",
    "PAGE_BOUNDARIES",
    "VALUE_STRATEGIES",
    "BadValues",
    "DocWorkload",
    "DocumentKind",
    "ValueSource",
    "encoded_size",
    "json_parses",
    "parse_sizes",
    "resolve_values",
    "value_bytes",
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

DOC_WORKLOADS = ("first-save", "resize", "many-saves", "save-after-failure", "random")
"""The document workloads, in the order verify runs them."""

BASIC_WORKLOADS = ("first-save", "resize", "save-after-failure", "random")
"""The default workloads of ``--exec`` (each save a process under strace: ``many-saves``
on request there) and the ones ``explain`` searches."""

DEFAULT_SIZES = (4096, 65536)
"""The size boundaries (bytes) ``many-saves`` crosses when ``--sizes`` is not given."""

MANY_SAVES = 16
"""Saves of ``many-saves``."""

LARGE_VALUE = 2**20
"""The boundary ``large-values`` crosses at least (1 MiB)."""

MAX_SIZE = 64 * 2**20
"""The largest boundary ``--sizes`` takes (64 MiB)."""

_RESIZE_BYTES = (120, 5000, 300, 9000, 4000, 4200)
"""Approximate encoded sizes of ``resize``'s saves: across the 4096-byte boundaries."""

_TEN_SAVES_BYTES = (120, 5000, 300, 9000, 4000, 4200, 12500, 60, 8200, 4090)
"""``ten-saves`` (on request, not run by default; the benchmark's workload)."""

EXTRA_WORKLOADS = ("ten-saves", "large-values")
"""Document workloads run only when named (``--workload``)."""

PROBE_WORKLOAD = "constant-files probe"
"""The name of the probe's recording (:meth:`DocumentKind._probe`; no ``--workload``)."""


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


PAGE_BOUNDARIES = (4096, 65536)
"""The sizes a value's encoding is reported against (``value_sizes``): a page and a
64 KiB extent; a value never larger than one never made a save cross it."""


class BadValues(BadTarget):
    """``--values V`` names no value source: not a built-in name, a ``.json`` file that
    is not a non-empty list, or a ``module:name`` that does not import or is neither a
    hypothesis strategy nor a callable (one line, exit 2)."""


@dataclass(frozen=True, slots=True)
class ValueSource:
    """Where the values saved come from (``--values V``).

    Attributes:
        name: ``V`` as given (``json``, ``values.json``, ``examples/values.py:ini``).
        strategy: the hypothesis strategy the ``random`` workload draws from.
        listed: the values of a ``.json`` file, else None.
        sized: a callable taking a size in bytes and returning a value, else None.
    """

    name: str
    strategy: Any
    listed: tuple[Any, ...] | None = None
    sized: Callable[[int], Any] | None = None


def resolve_values(spec: str) -> ValueSource:
    """``--values V`` (issue 22): a built-in name (:data:`VALUE_STRATEGIES`); ``V``
    ending ``.json``: a file holding a non-empty list of values; ``V`` with a colon: a
    hypothesis strategy, or a callable taking a size in bytes, resolved like a target
    (``module:name`` or ``path/file.py:name``; a function returning a strategy is
    called). Raises :class:`BadValues`."""
    from hypothesis import strategies as st
    from hypothesis.strategies import SearchStrategy

    if spec in VALUE_STRATEGIES:
        return ValueSource(spec, value_strategy(spec))
    if spec.endswith(".json"):
        try:
            with open(spec, encoding="utf-8") as f:
                listed = json.load(f)
        except (OSError, ValueError) as exc:
            raise BadValues(f"--values {spec!r}: cannot read a JSON list: {exc}") from None
        if not isinstance(listed, list) or not listed:
            raise BadValues(f"--values {spec!r}: the file holds no non-empty JSON list")
        return ValueSource(spec, st.sampled_from(listed), listed=tuple(listed))
    if ":" not in spec:
        raise BadValues(
            f"--values {spec!r}: not a value strategy; give a built-in name "
            f"({', '.join(VALUE_STRATEGIES)}), a file.json holding a list of values, or "
            "module:name / path/file.py:name of a hypothesis strategy or a callable taking "
            "a size in bytes"
        )
    try:
        found = load_factory(spec)
    except BadTarget as exc:
        raise BadValues(f"--values: {str(exc).replace('target ', '', 1)}") from None
    if isinstance(found, SearchStrategy):
        return ValueSource(spec, found)
    if callable(found):
        try:
            made = found()
        except TypeError:
            made = None  # it takes an argument: a size in bytes
        if isinstance(made, SearchStrategy):
            return ValueSource(spec, made)
        fn: Callable[[int], Any] = found
        return ValueSource(spec, st.integers(1, 2 * PAGE_BOUNDARIES[-1]).map(fn), sized=fn)
    raise BadValues(
        f"--values {spec!r}: {type(found).__name__} is neither a hypothesis strategy nor "
        "a callable taking a size in bytes"
    )


def encoded_size(value: Any) -> int:
    """The bytes of ``value`` as JSON (UTF-8; its ``repr`` when not JSON-able)."""
    try:
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    except (TypeError, ValueError):
        return len(repr(value).encode("utf-8", "surrogatepass"))


def _sized(values: str, generation: int, nbytes: int) -> Any:
    """A value of the named strategy, about ``nbytes`` long when encoded."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    shift = generation % 26
    pad = ((letters[shift:] + letters[:shift]) * (nbytes // 26 + 1))[:nbytes]
    if values == "flat-strings":
        return {"GENERATION": str(generation), "PAD": pad}
    return {"generation": generation, "pad": pad}


def parse_sizes(text: str) -> tuple[int, ...]:
    """The size boundaries ``--sizes`` names: comma-separated sizes, each a number of
    bytes with an optional ``K`` (KiB) or ``M`` (MiB) suffix (``4K,64K,1M``), at least
    512 bytes and at most 64 MiB; returned sorted, each once. Raises ValueError naming
    the bad part."""
    out: set[int] = set()
    for part in text.split(","):
        item = part.strip().upper().removesuffix("IB").removesuffix("B")
        scale = {"K": 2**10, "M": 2**20}.get(item[-1:], 1)
        digits = item[:-1] if scale > 1 else item
        if not digits.isascii() or not digits.isdigit():
            raise ValueError(
                f"--sizes: {part.strip()!r} is not a size (bytes, or a number with K or M: "
                "4K,64K,1M)"
            )
        size = int(digits) * scale
        if not 512 <= size <= MAX_SIZE:
            raise ValueError(f"--sizes: {part.strip()!r} is outside 512 bytes .. 64M")
        out.add(size)
    return tuple(sorted(out))


def value_bytes(value: Any) -> int:
    """A value's size as a JSON document store writes it (UTF-8 JSON; ``repr`` for a
    value JSON cannot encode): the bytes a workload's bounds are counted in."""
    try:
        return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError):
        return len(repr(value).encode("utf-8", "replace"))


def many_saves_bytes(sizes: Sequence[int]) -> tuple[int, ...]:
    """The approximate encoded sizes of ``many-saves``'s 16 saves: a small value and
    values just under and just over every boundary of ``sizes``, in an order where
    consecutive saves differ and cross boundaries both ways (deterministic)."""
    levels = [120]
    for b in sorted(sizes):
        levels += [b - 160, b + 200]
    order: list[int] = []
    rnd = random.Random(MANY_SAVES)
    while len(order) < MANY_SAVES:
        round_ = levels[:]
        rnd.shuffle(round_)
        if order and round_[0] == order[-1]:
            round_.append(round_.pop(0))
        order += round_
    return tuple(order[:MANY_SAVES])


def large_values_bytes(sizes: Sequence[int]) -> tuple[int, ...]:
    """``large-values``: across the largest boundary of ``sizes`` at or above 1 MiB
    (1 MiB if none is), growing then shrinking."""
    b = max([LARGE_VALUE, *sizes])
    return (300, b - 4096, b + 4096, 2000)


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
    changed: dict[str, dict[str, bytes]] = field(default_factory=dict)
    """Each acknowledged save's label → the files it changed (or made), with the bytes
    it left in them (what :meth:`DocumentKind._constant_paths` compares)."""
    final_paths: frozenset[str] = frozenset()
    initial_paths: frozenset[str] = frozenset()
    constant: frozenset[str] | None = None
    """The run's constant paths, once judging needed them (None: not worked out yet)."""
    constant_bytes: frozenset[bytes] | None = None
    """What the saves left in those paths (:meth:`DocumentKind._constant_bytes`)."""


_PLAIN = (dict, list, tuple, str, bytes, int, float, bool, type(None))
"""The types :meth:`DocumentKind._intern` shares loaded values of (their ``repr`` is
their value)."""


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
        sizes: the size boundaries (bytes) ``many-saves`` crosses (:func:`parse_sizes`).
    """

    name = "document"
    subject = "the document"
    probes = True
    """Whether constant paths may be learnt from a probe recording (:meth:`_probe`)."""
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
        sizes: Sequence[int] = DEFAULT_SIZES,
    ) -> None:
        self.runner = runner
        self.sizes = tuple(sizes)
        self.target = target
        self.values = values
        self.source: ValueSource | None = None
        if strategy is None and values != "custom":
            self.source = resolve_values(values)
            strategy = self.source.strategy
        self.strategy = strategy if strategy is not None else value_strategy(values)
        self.saved_sizes: list[int] = []
        """The smallest and largest value saved so far, in bytes (:func:`encoded_size`)."""
        self._drawn: dict[int, Any] = {}
        self._listed_used: set[str] = set()
        self.equal = equal or (lambda a, b: bool(a == b))
        self.seed = seed
        self.examples = 20
        """Hypothesis examples of the ``random`` search (a replay repeats the search)."""
        self._interned: dict[tuple[type, str], Any] = {}
        self.every_fault_point = False
        """Judge every crash point of a faulted run (``--fault-crash-points all``), not
        only its recovery path and next save (issue 22)."""
        self.base = runner.base_dir
        boot = MemoryFileSystem(dirs=_ROOTS)
        self.initial_state = boot.crash_state()
        self.initial: DocObservation | None = None
        self.leftovers: dict[str, int] = {}
        self._runs: dict[tuple[str, tuple[str, ...], Fault | None], Run] = {}
        self.observed: dict[str, DocObservation] = {}
        """Observations of crash states by digest, shared by every workload and model."""
        self._probe_run: Run | None = None
        self._probed = False

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
        elif base == "many-saves":
            w = DocWorkload(
                base,
                tuple(self._value(i, n) for i, n in enumerate(many_saves_bytes(self.sizes))),
            )
        elif base == "large-values":
            w = DocWorkload(
                base,
                tuple(self._value(i, n) for i, n in enumerate(large_values_bytes(self.sizes))),
            )
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
        """The value of save ``generation`` of a sized workload, about ``nbytes`` long:
        built-in strategies pad to it; a listed value nearest it (not used before); a
        callable is called with it; a strategy's first draw at least that large (else its
        largest), distinct from the earlier generations', deterministic for the seed."""
        if self.values in VALUE_STRATEGIES:
            return _sized(self.values, generation, nbytes)
        src = self.source
        if src is not None and src.sized is not None:
            return src.sized(nbytes)
        if src is not None and src.listed is not None:
            if generation == 0:  # a workload asks its generations in order, from 0
                self._listed_used = set()
            pool = [v for v in src.listed if repr(v) not in self._listed_used] or list(src.listed)
            chosen = min(pool, key=lambda v: abs(encoded_size(v) - nbytes))
            self._listed_used.add(repr(chosen))
            return chosen
        key = generation * 1_000_003 + nbytes
        if key in self._drawn:
            return self._drawn[key]
        from hypothesis import HealthCheck, Phase, find, settings
        from hypothesis.errors import NoSuchExample

        used = {repr(v) for k, v in self._drawn.items() if k != key}
        best: list[Any] = []

        def big_enough(v: Any) -> bool:
            if repr(v) in used:
                return False
            if not best or encoded_size(v) > encoded_size(best[0]):
                best[:] = [v]
            return encoded_size(v) >= nbytes

        try:
            value = find(
                self.strategy,
                big_enough,
                settings=settings(
                    database=None,
                    max_examples=200,
                    phases=[Phase.generate],
                    suppress_health_check=list(HealthCheck),
                ),
                random=random.Random(self.seed * 7919 + key),
            )
        except NoSuchExample:
            if not best:
                raise BadValues(f"--values {self.values!r}: the strategy drew no value") from None
            value = best[0]
        self._drawn[key] = value
        return value

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
            size = encoded_size(value)
            sizes = self.saved_sizes
            self.saved_sizes = [min([size, *sizes[:1]]), max([size, *sizes[1:]])]
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
                changed = data.changed.setdefault(label, {})
                for path, blob in fs.crash_state().files:
                    if old.get(path) != blob and blob:
                        data.blobs.setdefault(blob, label)
                        changed[path] = blob
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
        return dataclasses.replace(obs, reloaded=self._reload(left))

    def _reload(self, state: CrashState) -> DocObservation:
        """The fresh load of the disk a load's writes left (:attr:`DocObservation.reloaded`):
        the judging reads its value or error only."""
        return self._load_once(state)[0]

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
        if error is None:
            value = self._intern(value)
        reads = frozenset(e.path for e in rec.trace.events if e.kind is OpKind.READ)
        # "Writes over" (A3): a file of the crash state changed or removed. Creating a
        # file that was not there (tinydb creates an empty db.json) overwrites nothing.
        left = fs.crash_state()
        after = dict(left.files)
        wrote = any(after.get(path) != blob for path, blob in state.files)
        return DocObservation(value, error, reads, wrote), left

    def _intern(self, value: Any) -> Any:
        """One object for every equal loaded value of plain JSON types (compared by type
        and ``repr``): the observations of thousands of crash states that load the same
        64 KiB value share it instead of holding a copy each (the observation cache)."""
        if not isinstance(value, _PLAIN) or isinstance(value, (int, float, bool)):
            return value
        try:
            key = (type(value), repr(value))
        except Exception:
            return value
        return self._interned.setdefault(key, value)

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
        on_disk = self._on_disk(run, state, saves, init) if is_initial else []
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
        saves = [s for s in run.steps if s.payload[0] == "save"]
        order = {s.label: i for i, s in enumerate(saves)}
        labels = [label for _, label in self._generations(run, state)]
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
        order = {s.label: i for i, s in enumerate(saves)}
        labels = self._on_disk(run, state, saves, init)
        if not labels:
            return None
        newest = max(labels, key=order.__getitem__)
        later = [s.payload[1] for s in saves[order[newest] :] if s.begin <= k]
        again = obs.reloaded
        if again is not None and self._matches(again, later):
            return None
        return newest

    def _on_disk(
        self, run: Run, state: CrashState, saves: Sequence[Step], init: DocObservation
    ) -> list[str]:
        """The labels of the complete generations on disk in ``state`` (A3, SPEC.md
        §10), in file order: a file of a crash-free run, inside the base, holding what
        an acknowledged save left in some file, at a path that is not constant
        (:meth:`_constant_paths`: pytest's cache README is no value) and not the bytes of
        one (:meth:`_constant_bytes`); a save whose value is the initial value is left
        out."""
        return [
            label
            for path, label in self._generations(
                run,
                state,
                lambda path, label: (
                    not _outside(path, self.base) and not self._initial_value_is(label, saves, init)
                ),
            )
        ]

    def _generations(
        self,
        run: Run,
        state: CrashState,
        keep: Callable[[str, str], bool] | None = None,
    ) -> list[tuple[str, str]]:
        """``(path, label)`` of each file of ``state`` at a path of the crash-free run
        that holds what acknowledged save ``label`` left in some file (``keep``: which
        of those to look at further), at a path that is not constant
        (:meth:`_constant_paths`: pytest's cache README is no value) and not the bytes of
        one (:meth:`_constant_bytes`), in file order. The constant paths are worked out
        only when a file is left to judge."""
        data: _RunData = run.data
        found = [
            (path, blob, label)
            for path, blob in state.files
            if path in data.final_paths
            and (label := data.blobs.get(blob)) is not None
            and (keep is None or keep(path, label))
        ]
        if not found:
            return []
        constant, held = self._constant_paths(run), self._constant_bytes(run)
        return [
            (path, label)
            for path, blob, label in found
            if path not in constant and blob not in held
        ]

    def _constant_bytes(self, run: Run) -> frozenset[bytes]:
        """The bytes the run's saves left in its constant paths (:meth:`_constant_paths`):
        no generation wherever they sit. LMDB's lock file is 8 KiB of zeros at every
        save, and a crash under ext4 can leave data.mdb as 8 KiB of zeros (its size
        committed before its data): the same bytes at another path, still no value.
        Worked out once per run."""
        data: _RunData = run.data
        if data.constant_bytes is None:
            constant = self._constant_paths(run)
            data.constant_bytes = frozenset(
                blob
                for files in data.changed.values()
                for path, blob in files.items()
                if path in constant
            )
        return data.constant_bytes

    def _constant_paths(self, run: Run) -> frozenset[str]:
        """The paths of ``run`` whose bytes do not depend on the value saved (issue 22):
        every acknowledged save that changed the path left the same bytes in it, and
        saves of at least two different values did. A path the run's own saves cannot
        decide (changed by saves of one value only: a README written once) is decided
        with the probe's saves as well (:meth:`_probe`, its names matched onto the
        run's). Worked out once per run, and only when a judgement needs it."""
        data: _RunData = run.data
        if data.constant is not None:
            return data.constant
        writes = self._writes(run)
        undecided = [
            p
            for p, seen in writes.items()
            if p in data.final_paths
            and len({b for b, _ in seen}) == 1
            and not self._values_differ([v for _, v in seen])
        ]
        probe = self._probe() if undecided else None
        if probe is not None:
            renaming, _ = match_fresh_names(
                run.ops, probe.ops, recorded_initial=run.initial, rerun_initial=probe.initial
            )
            for path, seen in self._writes(probe).items():
                writes.setdefault(renaming.path(path) or path, []).extend(seen)
        data.constant = frozenset(
            p
            for p, seen in writes.items()
            if len({b for b, _ in seen}) == 1 and self._values_differ([v for _, v in seen])
        )
        return data.constant

    def _writes(self, run: Run) -> dict[str, list[tuple[bytes, Any]]]:
        """Path → (the bytes an acknowledged save left in it, the save's value), for
        every save of ``run`` that changed the path."""
        data: _RunData = run.data
        values = {s.label: s.payload[1] for s in run.steps if s.payload[0] == "save"}
        out: dict[str, list[tuple[bytes, Any]]] = {}
        for label, files in data.changed.items():
            for path, blob in files.items():
                out.setdefault(path, []).append((blob, values[label]))
        return out

    def _values_differ(self, values: Sequence[Any]) -> bool:
        return any(not self._same(values[0], v) for v in values[1:])

    def _probe(self) -> Run | None:
        """The probe (issue 22): one more crash-free recording of the target, saving two
        distinct values (:meth:`_probe_values`), once per target; never explored, no
        crash state of it is judged or counted. None when it cannot be made (the
        values are not two, the factory raised)."""
        if not self._probed and self.probes:
            self._probed = True
            runner = self.runner
            sizes = list(self.saved_sizes)  # value_sizes reports the workloads' values
            mark, before = runner.mark(), set(runner.unsupported())
            try:
                values = self._probe_values()
                if values is not None:
                    self._probe_run = self._record(DocWorkload(PROBE_WORKLOAD, values), None)
                if not set(runner.unsupported()) <= before:
                    self._probe_run = None  # a call the model could not follow: no evidence
            except TargetTimeout:
                raise
            except Exception:
                self._probe_run = None
            finally:
                runner.rewind(mark)
                self.saved_sizes = sizes
        return self._probe_run

    def _probe_values(self) -> tuple[Any, Any] | None:
        """Two distinct values of the workloads' own (no new draw), the first unlike
        the first value of ``first-save`` and of ``resize`` (a file only a first save
        writes, a README, is then written by saves of two values); None when the
        values are fewer than two."""
        first = self.workload("first-save").values
        resize = self.workload("resize").values
        firsts = [first[0], resize[0]]
        pool = [*resize[2:3], *resize[1:2], *resize[3:], *first, *resize[:1]]
        a = next((v for v in pool if not any(self._same(v, f) for f in firsts)), pool[0])
        b = next((v for v in [*first, *pool] if not self._same(v, a)), None)
        return None if b is None else (a, b)

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
        if self.sizes != DEFAULT_SIZES:
            parts.append(f"--sizes {','.join(_size_text(n) for n in self.sizes)}")
        if workload.name.split(":", 1)[0] == "random" and self.examples != 20:
            parts.append(f"--examples {self.examples}")
        if fault is not None:
            parts.append(f"--fault {fault_spec(fault)}")
        parts.append(f"--crash-point {k}")
        return " ".join(parts)


def _size_text(n: int) -> str:
    """``4K``, ``1M``, ``1000``: as ``--sizes`` takes it."""
    for suffix, scale in (("M", 2**20), ("K", 2**10)):
        if n % scale == 0:
            return f"{n // scale}{suffix}"
    return str(n)


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

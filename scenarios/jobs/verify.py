"""``verify``: judge a user's own storage code (SPEC.md §10, FAULT-MODEL.md §4).

:func:`verify` loads nothing itself: it takes the factory. The CLI
(``crashpoint verify TARGET``) loads ``package.module:factory`` or
``path/to/file.py:factory`` with :func:`~crashpoint.scenarios.targets.user.load_factory`
and calls it::

    result = verify(MyStore, kind="document", model="all", faults=True)
    result.assert_no_violations()

Errors: :class:`~crashpoint.scenarios.targets.user.BadTarget` when the target cannot
be judged (exit 2 in the CLI), :class:`~crashpoint.scenarios.targets.user.TargetTimeout`
when a call hangs past ``timeout`` seconds (exit 2), KeyError for an unknown model,
workload or value strategy.
"""

from __future__ import annotations

import random
import reprlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...faultfs import (
    CrashState,
    Fault,
    Image,
    MemoryFileSystem,
    PersistenceModel,
    RecordingFileSystem,
    parse_models,
)
from ..engine.explore import EngineResult, explore_kind
from ..engine.faults import fault_plan
from ..engine.pool import worker_pool
from ..kinds.agent.kind import AgentStateKind
from ..kinds.agent.workload import BASE_DIR
from ..kinds.document.kind import (
    DEFAULT_SIZES,
    DOC_BASE,
    DOC_WORKLOADS,
    PAGE_BOUNDARIES,
    DocumentKind,
    DocWorkload,
    json_parses,
    parse_sizes,
    value_bytes,
)
from ..kinds.registry import KindEntry, register_kind
from ..kinds.state_storage.conformance import selected_workloads, storage_target
from ..targets.user import BadTarget, Runner, load_factory, make_runner
from .plan import Plan, Transport, run_plan
from .storage import verify_state_storage
from .verdict import VerifyResult

__all__ = ["VerifyResult", "verify"]

FAULT_POINTS = ("recovery", "all")
"""``verify(fault_points=...)`` / ``--fault-crash-points``: which crash points of a faulted
run are judged (issue 22)."""


def verify(
    factory: Callable[..., Any],
    *,
    kind: str = "document",
    model: str | PersistenceModel | Sequence[str | PersistenceModel] = "process-crash",
    faults: bool = False,
    values: str | None = None,
    sizes: str | Sequence[int] | None = None,
    workloads: Iterable[str] | None = None,
    seed: int = 0,
    examples: int = 20,
    crash_point: int | None = None,
    fault: Fault | None = None,
    timeout: float | None = None,
    target: str | None = None,
    shrink: bool = True,
    reference_format: bool | None = None,
    jobs: int = 1,
    shard: tuple[int, int] | None = None,
    fault_points: str = "recovery",
) -> VerifyResult:
    """Verify ``factory``'s storage under every crash state of its workloads.

    Args:
        factory: ``factory(base_dir)`` (run intercepted) or ``factory(fs, base_dir)``.
        kind: ``"document"`` (``save(value)``/``load()``, SPEC.md §10) or
            ``"state-storage"`` (the six methods of SPEC.md §6).
        model: persistence model(s): a name, comma-separated names, ``"all"``.
        faults: also arm every fault at every operation (FAULT-MODEL.md §2).
        values: the value strategy's name (default: the factory's
            ``crashpoint_values`` attribute, else ``json``).
        sizes: document: the size boundaries ``many-saves`` crosses, ``"4K,64K,1M"``
            or bytes (default 4 KiB and 64 KiB; ``large-values`` crosses the largest at
            or above 1 MiB). Raises ValueError for a bad size.
        workloads: workload names (default: all of the kind).
        seed: seeds generated workloads and the interception.
        examples: hypothesis examples for the ``random`` workload (document), or
            programs of the storage state machine (state-storage).
        crash_point, fault: replay only that crash point / only that fault.
        timeout: seconds one call of the target may take.
        target: the name replays use (default: the factory's qualified name).
        shrink: shrink a failing workload to the fewest saves that still fail.
        reference_format: state-storage: the target keeps the reference's file layout
            (default: the factory's ``crashpoint_format == "reference"``).
        jobs: worker processes for a document target that ``target`` names loadably
            (``module:factory`` or ``file.py:factory``): one task per workload, merged
            in order; otherwise one process.
        shard: ``(K, N)``: only crash states whose identity falls in slice K of N
            (the N shards together judge every state once; pytest-xdist items).
        fault_points: with ``faults``, which crash points of a faulted run are judged:
            ``"recovery"`` (default) the one after the fault, the failing call's
            recovery path, the next save and the end, the rest counted in
            ``fault_points_not_examined``; ``"all"`` every one through the end (issue
            22; about 3.4 times the time of ``"recovery"`` on the JSON store). Raises
            ValueError for another value.

    Returns:
        a :class:`VerifyResult`. Raises BadTarget, TargetTimeout, KeyError.
    """
    if fault_points not in FAULT_POINTS:
        raise ValueError(f"fault_points must be one of {', '.join(FAULT_POINTS)}: {fault_points!r}")
    options: dict[str, Any] = {}
    if fault_points != "recovery":
        options["fault_points"] = fault_points
    if values is not None:
        options["values"] = values
    if sizes is not None:
        options["sizes"] = (
            parse_sizes(sizes) if isinstance(sizes, str) else tuple(sorted(set(sizes)))
        )
    if not shrink:
        options["shrink"] = False
    if reference_format is not None:
        options["reference_format"] = reference_format
    plan = Plan(
        kind,
        target or _name_of(factory),
        tuple(parse_models(model)),
        workloads=tuple(workloads) if workloads is not None else None,
        faults=faults,
        fault=fault,
        crash_point=crash_point,
        shard=shard,
        jobs=jobs,
        seed=seed,
        timeout=timeout,
        examples=examples,
        options=options,
    )
    return run_plan(plan, factory)


def _run_state_storage(plan: Plan, factory: Callable[..., Any]) -> VerifyResult:
    """``--kind state-storage``'s front end (:func:`~.storage.verify_state_storage`; a
    plan with a ``transport``, ``--exec``, through it)."""
    transport: Transport | None = plan.options.get("transport")
    if transport is not None:
        return transport.verify(plan)
    return verify_state_storage(
        factory,
        models=list(plan.models),
        faults=plan.faults,
        workloads=plan.workloads,
        crash_point=plan.crash_point,
        fault=plan.fault,
        timeout=plan.timeout,
        target=plan.target,
        seed=plan.seed,
        reference_format=plan.options.get("reference_format"),
        examples=plan.examples,
        shard=plan.shard,
    )


def _run_document(plan: Plan, factory: Callable[..., Any]) -> VerifyResult:
    """``--kind document``'s front end: each workload under every model, the ``random``
    one drawn and a failing one shrunk by hypothesis, leftovers counted (SPEC.md §10); a
    plan with a ``transport`` (``--exec``) through it."""
    transport: Transport | None = plan.options.get("transport")
    if transport is not None:
        return transport.verify(plan)
    models, name, workloads = list(plan.models), plan.target, plan.workloads
    faults, fault, crash_point, shard = plan.faults, plan.fault, plan.crash_point, plan.shard
    seed, examples, timeout, jobs = plan.seed, plan.examples, plan.timeout, plan.jobs
    kind = plan.kind
    values: str | None = plan.options.get("values")
    shrink: bool = plan.options.get("shrink", True)
    sizes: tuple[int, ...] = tuple(plan.options.get("sizes", DEFAULT_SIZES))
    names_all = list(dict.fromkeys(workloads)) if workloads is not None else list(DOC_WORKLOADS)
    tasks = [(w, ",".join(m.name for m in models)) for w in names_all]
    if jobs > 1 and len(tasks) > 1 and _loadable(name, factory):
        return _verify_parallel(
            name,
            tasks,
            jobs=jobs,
            options=dict(
                faults=faults,
                values=values,
                seed=seed,
                examples=examples,
                crash_point=crash_point,
                fault=fault,
                timeout=timeout,
                shrink=shrink,
                shard=shard,
                fault_points=plan.options.get("fault_points", "recovery"),
                **({"sizes": sizes} if "sizes" in plan.options else {}),
            ),
        )
    runner = make_runner(factory, DOC_BASE, spec=name, timeout=timeout, seed=seed)
    attr_values = getattr(factory, "crashpoint_values", None)
    strategy = None
    if values is None:
        if isinstance(attr_values, str):
            values = attr_values
        elif attr_values is not None:
            values, strategy = "custom", attr_values
        else:
            values = "json"
    equal = getattr(factory, "crashpoint_equal", None)
    names = list(dict.fromkeys(workloads)) if workloads is not None else list(DOC_WORKLOADS)
    result = VerifyResult(
        name, kind, runner.mode, [m.name for m in models], seed=seed, values=values
    )
    with runner:
        doc = DocumentKind(
            runner, name, values=values, strategy=strategy, equal=equal, seed=seed, sizes=sizes
        )
        doc.examples = examples
        doc.every_fault_point = plan.options.get("fault_points") == "all"
        _preflight(doc, runner, name)
        for wname in names:
            for m in models:
                result.results.append(
                    _verify_workload(
                        doc,
                        wname,
                        m,
                        faults=faults,
                        examples=examples,
                        crash_point=crash_point,
                        fault=fault,
                        shrink=shrink,
                        shrunk=result.shrunk,
                        shard=shard,
                        bounds=result.workload_bounds,
                    )
                )
        result.leftover_ids = set(doc.leftovers)
        result.leftovers = len(result.leftover_ids)
        result.value_sizes = value_sizes(doc.saved_sizes)
    return result


def value_sizes(sizes: Sequence[int]) -> dict[str, Any]:
    """``{"min", "max", "boundaries_not_crossed"}`` of the values saved (report key
    ``value_sizes``): their sizes in bytes as JSON, and each of
    :data:`~crashpoint.scenarios.kinds.document.kind.PAGE_BOUNDARIES` no value exceeded
    (a store that breaks past it was never shown one). Empty for no value."""
    if not sizes:
        return {}
    low, high = min(sizes), max(sizes)
    return {
        "min": low,
        "max": high,
        "boundaries_not_crossed": [b for b in PAGE_BOUNDARIES if high <= b],
    }


def merge_value_sizes(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    """The :func:`value_sizes` of two runs' values together."""
    if not a or not b:
        return dict(a or b)
    return value_sizes([a["min"], a["max"], b["min"], b["max"]])


def _loadable(spec: str, factory: Callable[..., Any]) -> bool:
    """Whether a worker process can load the same factory from ``spec``."""

    try:
        loaded = load_factory(spec)
    except BadTarget:
        return False
    return getattr(loaded, "__qualname__", None) == getattr(factory, "__qualname__", None)


def _verify_task(spec: str, workload: str, model: str, options: dict[str, Any]) -> VerifyResult:
    """One (workload, model) of a parallel verify, in a worker process."""

    return verify(load_factory(spec), workloads=[workload], model=model, target=spec, **options)


def _verify_parallel(
    spec: str, tasks: Sequence[tuple[str, str]], *, jobs: int, options: dict[str, Any]
) -> VerifyResult:
    """``verify`` split into one task per workload (every model in it, so its runs and
    observations are shared), run in ``jobs`` processes (each with its own
    interception) and merged in task order: the same report as ``jobs=1``. Errors
    (BadTarget, TargetTimeout) propagate from the first task; on any error or an
    interrupt the workers are killed (a hung one too), not waited for."""

    with worker_pool(min(jobs, len(tasks))) as pool:  # an error or interrupt: workers killed
        futures = [pool.submit(_verify_task, spec, w, m, options) for w, m in tasks]
        parts = [f.result() for f in futures]
    merged = parts[0]
    for part in parts[1:]:
        merged.results += part.results
        merged.shrunk.update(part.shrunk)
        merged.workload_bounds.update(part.workload_bounds)
        merged.leftover_ids |= part.leftover_ids
        merged.value_sizes = merge_value_sizes(merged.value_sizes, part.value_sizes)
    merged.leftovers = len(merged.leftover_ids)
    return merged


def _name_of(factory: Callable[..., Any]) -> str:
    module = getattr(factory, "__module__", None) or "?"
    return f"{module}:{getattr(factory, '__qualname__', None) or repr(factory)}"


def _preflight(doc: DocumentKind, runner: Runner, name: str) -> None:
    """A clean first save must work, write something and load back (no false green)."""

    probe = RecordingFileSystem(MemoryFileSystem(doc.initial_state))
    try:
        obj = runner.call("the factory", lambda: runner.build(probe))
    except BadTarget:
        raise
    except Exception as exc:
        raise BadTarget(f"target {name!r}: the factory raised {_err(exc)}") from None
    for attr in ("save", "load"):
        if not callable(getattr(obj, attr, None)):
            raise BadTarget(f"target {name!r}: the factory's object has no {attr}() method")
    init = doc.observe_initial()
    if init.error is not None and init.error.startswith(("TypeError", "AttributeError")):
        raise BadTarget(f"target {name!r}: load() on an empty directory raised {init.error}")
    workload = doc.workload("first-save")
    run = doc.record(workload, None)
    save = run.steps[0]
    if save.error is not None and not run.unsupported:
        raise BadTarget(f"target {name!r}: save() raised on a clean run: {save.error}")
    refused = [u for u in run.unsupported if u.startswith("real disk: ")]  # faultfs/_audit
    if not run.ops and not run.escapes and not refused:  # refused: an incomplete verdict
        if save.error is not None:  # it raised (a child process refused ...): never "returned"
            calls = ", ".join(run.unsupported)
            raise BadTarget(
                f"target {name!r}: save() raised on a clean run: {save.error}"
                + (f" (calls the model cannot represent: {calls})" if calls else "")
            )
        raise BadTarget(
            f"save returned but no file operation was recorded: target {name!r} "
            f"({runner.mode}) wrote nothing the harness can see"
        )

    final = _final_state(run)  # with the directories the save made (maildir's new/)
    if not run.escapes and not run.unsupported:
        obs = doc.observe(final)
        if obs.error is not None:
            raise BadTarget(f"target {name!r}: load() raised after a clean save: {obs.error}")
        if not doc._same(obs.value, workload.values[0]):
            shown = reprlib.Repr()
            shown.maxstring = shown.maxother = 120
            raise BadTarget(
                f"target {name!r}: load() after a clean save returned a different value: "
                f"saved {shown.repr(workload.values[0])}, load returned {shown.repr(obs.value)} "
                "(give a value strategy it round-trips: --values or crashpoint_values)"
            )


def _final_state(run: Any) -> CrashState:
    """The disk after a clean run: its files and every directory, those the run made
    included (a store that makes its directories on the first save loads from them)."""
    image = Image.from_crash_state(run.initial)
    for op in run.ops:
        if op.kind.mutating and not op.kind.barrier and op.errno is None:
            image.apply(op)
    return image.crash_state()


def _err(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"


def _verify_workload(
    doc: DocumentKind,
    wname: str,
    model: PersistenceModel,
    *,
    faults: bool,
    examples: int,
    crash_point: int | None,
    fault: Fault | None,
    shrink: bool,
    shrunk: dict[str, str],
    shard: tuple[int, int] | None = None,
    bounds: dict[str, dict[str, int]] | None = None,
) -> EngineResult:
    reached = {"saves": 0, "value_bytes": 0}
    if wname.split(":", 1)[0] == "random":
        workload, searched = _search_random(doc, model, examples, reached)
        reached.update(max_saves=RANDOM_SAVES, examples=examples)
    else:
        workload, searched = doc.workload(wname), None
        _reach(reached, workload.values)
    if bounds is not None:
        bounds.setdefault(wname, reached)
    result = _explore(
        doc, workload, model, faults=faults, crash_point=crash_point, fault=fault, shard=shard
    )
    if (
        shrink
        and crash_point is None
        and fault is None
        and searched is None
        and len(workload.values) > 1
        and ":" not in workload.name
    ):
        # A shard shrinks as the whole run does: on whether the whole workload fails
        # (every shard decides alike), its shrunk workload then explored in its slice.
        whole = result if shard is None else _explore(doc, workload, model, faults=faults)
        if whole.counterexamples:
            result = _shrunk_result(doc, workload, model, whole, result, shrunk, faults, shard)
    if searched is not None:
        # A replay (--crash-point, --fault) counts what it replayed, not the search that
        # chose its workload: a crash point or fault no run has must not pass for one
        # examined. The search is the same in every shard: shard 1 counts it.
        if crash_point is None and fault is None and (shard is None or shard[0] == 1):
            result.crash_points += searched.crash_points
            result.raw_states += searched.raw_states
            result.state_ids |= searched.state_ids
            result.cut += searched.cut
            result.owned_points += searched.owned_points
            result.owned_cut += searched.owned_cut
        result.seconds += searched.seconds
        for u in searched.unsupported:
            if u not in result.unsupported:
                result.unsupported.append(u)
    return result


def _explore(
    doc: DocumentKind,
    workload: DocWorkload,
    model: PersistenceModel,
    *,
    faults: bool,
    crash_point: int | None = None,
    fault: Fault | None = None,
    shard: tuple[int, int] | None = None,
) -> EngineResult:
    if fault is not None:
        plan, crashes = [fault], False
    else:
        base = doc.record(workload, None)
        plan = list(doc.armed_faults(workload, base))
        if faults:
            plan += [f for f in fault_plan(base.ops) if f not in plan]
        crashes = True
    return explore_kind(
        doc,
        workload,
        model=model,
        target=doc.target,
        faults=plan,
        crashes=crashes,
        crash_point=crash_point,
        fault_window=None if fault is not None or doc.every_fault_point else 1,
        observed=doc.observed,
        shard=shard,
    )


def _fails(result: EngineResult, invariants: set[str]) -> bool:
    return any(c.invariant in invariants for c in result.counterexamples)


def _shrunk_result(
    doc: DocumentKind,
    workload: DocWorkload,
    model: PersistenceModel,
    whole: EngineResult,
    result: EngineResult,
    shrunk: dict[str, str],
    faults: bool,
    shard: tuple[int, int] | None,
) -> EngineResult:
    """Shrink per invariant: each invariant the full workload broke keeps its own
    smallest workload that still breaks it, so no finding vanishes with a save another
    invariant did not need. When they all shrink to one workload, the result is that
    workload's exploration (``shrunk``: ``{"resize (ext4)": "resize:3"}``); otherwise the
    full workload's result, each invariant's counterexamples those of its own shrunk
    workload (``{"resize (ext4) A1": "resize:3", ...}``)."""
    memo: dict[tuple[int, ...], EngineResult] = {}
    order = list(dict.fromkeys(c.invariant for c in whole.counterexamples))
    smallest = {
        inv: _shrink(doc, workload, model, {inv}, faults=faults, memo=memo) for inv in order
    }
    names = {w.name for w in smallest.values()}
    if names == {workload.name}:
        return result
    if len(names) == 1:
        smaller = next(iter(smallest.values()))
        shrunk[f"{workload.name} ({model.name})"] = smaller.name
        return _explore(doc, smaller, model, faults=faults, shard=shard)
    found = []
    for inv, smaller in smallest.items():
        part = result
        if smaller is not workload:
            shrunk[f"{workload.name} ({model.name}) {inv}"] = smaller.name
            part = _explore(doc, smaller, model, faults=faults, shard=shard)
        found += [c for c in part.counterexamples if c.invariant == inv]
    result.counterexamples = found
    result.sort()
    return result


def _shrink(
    doc: DocumentKind,
    workload: DocWorkload,
    model: PersistenceModel,
    wanted: set[str],
    *,
    faults: bool,
    memo: dict[tuple[int, ...], EngineResult] | None = None,
) -> DocWorkload:
    """Greedy, deterministic: drop one save at a time (first to last) while the
    exploration still finds an invariant of ``wanted`` (the explorations of each kept
    set of saves remembered in ``memo``, shared by the invariants' shrinks)."""
    memo = {} if memo is None else memo
    keep = list(range(len(workload.values)))
    changed = True
    while changed and len(keep) > 1:
        changed = False
        for i in list(keep):
            trial = [j for j in keep if j != i]
            key = tuple(trial)
            if key not in memo:
                memo[key] = _explore(doc, workload.keep(trial), model, faults=faults)
            if _fails(memo[key], wanted):
                keep = trial
                changed = True
                break
    if len(keep) == len(workload.values):
        return workload
    return workload.keep(keep)


RANDOM_SAVES = 6
"""The most saves of one ``random`` workload (hypothesis draws 1 to 6)."""


def _reach(reached: dict[str, int], values: Sequence[Any]) -> None:
    """Count ``values`` (one workload's saves) into ``reached``."""
    reached["saves"] = max(reached["saves"], len(values))
    reached["value_bytes"] = max([reached["value_bytes"], *map(value_bytes, values)])


def _search_random(
    doc: DocumentKind,
    model: PersistenceModel,
    examples: int,
    reached: dict[str, int] | None = None,
) -> tuple[DocWorkload, EngineResult]:
    """Hypothesis draws lists of values and shrinks a failing one to the fewest,
    simplest saves (``find``, seeded: the same seed finds the same workload).
    Returns the minimal failing workload, or the last one tried, and what the
    search explored."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis import strategies as st
    from hypothesis.errors import NoSuchExample

    seen = EngineResult(
        "random", model.name, doc.target, family=model.family, options=model.options()
    )
    last: list[Any] = []

    def fails(values: list[Any]) -> bool:
        last[:] = values
        if reached is not None:
            _reach(reached, values)
        r = explore_kind(
            doc,
            DocWorkload("random", tuple(values)),
            model=model,
            target=doc.target,
            observed=doc.observed,
        )
        seen.crash_points += r.crash_points
        seen.raw_states += r.raw_states
        seen.cut += r.cut
        seen.owned_points += r.owned_points
        seen.owned_cut += r.owned_cut
        seen.state_ids |= r.state_ids
        seen.seconds += r.seconds
        seen.unsupported += [u for u in r.unsupported if u not in seen.unsupported]
        return bool(r.counterexamples)

    try:
        found = find(
            st.lists(doc.strategy, min_size=1, max_size=RANDOM_SAVES),
            fails,
            settings=settings(
                max_examples=max(1, examples),
                database=None,
                deadline=None,
                suppress_health_check=list(HealthCheck),
                phases=[Phase.generate, Phase.shrink],
            ),
            random=random.Random(doc.seed),
        )
    except NoSuchExample:
        found = list(last)
    return DocWorkload("random", tuple(found)), seen


def _make_document(runner: Runner, target: str, options: Mapping[str, Any]) -> DocumentKind:
    return DocumentKind(
        runner,
        target,
        values=options.get("values") or "json",
        sizes=options.get("sizes", DEFAULT_SIZES),
    )


def _make_state_storage(runner: Runner, target: str, options: Mapping[str, Any]) -> AgentStateKind:
    return AgentStateKind(storage_target(runner, target))


register_kind(
    KindEntry(
        "document",
        "save(value)/load() (default)",
        DOC_BASE,
        make=_make_document,
        workloads=DOC_WORKLOADS,
        run=_run_document,
        parses=json_parses,
        options=frozenset({"values", "shrink", "sizes", "transport", "fault_points"}),
    ),
    builtin=True,
)
register_kind(
    KindEntry(
        "state-storage",
        "the six methods of SPEC.md §6",
        BASE_DIR,
        make=_make_state_storage,
        workloads=tuple(w.name for w in selected_workloads(None, reference_format=False)),
        run=_run_state_storage,
        options=frozenset({"reference_format", "transport"}),
    ),
    builtin=True,
)

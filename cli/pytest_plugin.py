"""The crashpoint pytest plugin (registered under ``pytest11``).

Cheap to import: nothing of crashpoint is imported until a fixture or the marker
is used (STYLE.md §10).

Fixtures:

* ``crashpoint_fs``: a :class:`~crashpoint.faultfs.RecordingFileSystem` over a fresh
  :class:`~crashpoint.faultfs.MemoryFileSystem` (``/data`` exists), recording every
  operation;
* ``crashpoint_explorer``: an :class:`Explorer` bound to the test: ``explore(...)``
  returns an :class:`~crashpoint.scenarios.EngineResult`, ``check(...)`` also
  fails the test with the minimal counterexample; both honour ``--crashpoint-model``,
  ``--crashpoint-shard``, ``--crashpoint-crash-point`` and the item's shard, and the
  verdicts go to the test's ``user_properties`` (so ``--junitxml`` records them);
* ``crashpoint_shard``: ``(K, N)``, the slice of every crash-state space this item
  explores, or None for all of it;
* ``crashpoint_verify``: a :class:`Verifier` bound to the test: ``verify(factory,
  kind=...)`` judges your own storage (``crashpoint verify`` from Python, issue 8) and
  returns a :class:`~crashpoint.scenarios.jobs.verify.VerifyResult`; ``check(...)`` also
  fails the test with the most severe counterexample. Honours ``--crashpoint-model``,
  ``--crashpoint-faults``, ``--crashpoint-crash-point`` and the item's shard.

Marker ``@pytest.mark.crashpoint(shards="auto")`` makes one item per shard: with
pytest-xdist (``-n N``) one per worker, so a large exploration spreads over the
cores; without xdist a single item. A counterexample's replay line
(``pytest 'file::test' --crashpoint-model M --crashpoint-shard K/N
--crashpoint-crash-point P``) runs the one test, unsplit, on that shard at that crash
point. Example::

    def three_saves(s):
        for i in range(3):
            s.save(AgentState.new("s1", {"i": i}))

    @pytest.mark.crashpoint(shards="auto")
    def test_three_saves(crashpoint_explorer):
        crashpoint_explorer.check(three_saves, target="reference")
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from .faultfs import PersistenceModel, RecordingFileSystem
    from .scenarios import EngineResult, Invariant, Session, Target, Workload

__all__ = [
    "Explorer",
    "Verifier",
    "crashpoint_explorer",
    "crashpoint_fs",
    "crashpoint_shard",
    "crashpoint_verify",
    "parse_shard",
    "pytest_addoption",
    "pytest_configure",
    "pytest_generate_tests",
    "shard_count",
    "unsharded_nodeid",
]

_DEFAULT_MODEL = "process-crash"
_PROPERTY_KEYS = ("explorations", "crash_points", "distinct_states", "violations")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("crashpoint", "crash-consistency exploration (crashpoint)")
    group.addoption(
        "--crashpoint-model",
        action="store",
        default=_DEFAULT_MODEL,
        metavar="MODEL",
        help="persistence model(s) for crashpoint explorations: process-crash (default), "
        "ext4, xfs, btrfs, posix, power-loss and power-loss-reorder (aliases of ext4 and "
        "posix), a comma-separated list, or all (process-crash and the four families).",
    )
    group.addoption(
        "--crashpoint-faults",
        action="store_true",
        default=False,
        help="crashpoint_verify: also arm every fault at every operation.",
    )
    group.addoption(
        "--crashpoint-shard",
        action="store",
        default=None,
        metavar="K/N",
        help="explore only slice K of N of every crash-state space (CI matrices).",
    )
    group.addoption(
        "--crashpoint-crash-point",
        action="store",
        default=None,
        metavar="K",
        help="explore only crash point K (replay a counterexample); marked tests are not "
        "split into shards then: give the shard with --crashpoint-shard.",
    )


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` as ``(K, N)``, 1 ≤ K ≤ N. Raises ValueError otherwise (the CLI's
    ``--shard`` check)."""
    from ._options import parse_shard as parse

    return parse(text)


def _models_of(spec: str) -> tuple[str, ...]:
    """Model names for ``--crashpoint-model``: ``all`` or a comma-separated list, as
    the CLI's ``--model`` takes them. Raises ValueError naming the known models."""
    from ._options import parse_models

    return tuple(m.name for m in parse_models(spec))


def _crash_point_option(config: pytest.Config) -> int | None:
    """``--crashpoint-crash-point`` as an int ≥ 0, or None."""
    text = config.getoption("crashpoint_crash_point")
    if text is None:
        return None
    text = str(text).strip()
    if not (text.isascii() and text.isdigit()):
        raise ValueError(f"expected a crash point K >= 0 (an integer), got {text!r}")
    return int(text)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "crashpoint(shards=None, model=None, target=None): crashpoint exploration "
        'options for this test; shards="auto" (one item per xdist worker) or N splits '
        "its crash states into one test item per shard.",
    )
    model = config.getoption("crashpoint_model")
    if model != _DEFAULT_MODEL:
        try:
            _models_of(model)
        except ValueError as exc:
            raise pytest.UsageError(f"--crashpoint-model: {exc}") from None
    shard = config.getoption("crashpoint_shard")
    if shard is not None:
        try:
            parse_shard(shard)
        except ValueError as exc:
            raise pytest.UsageError(f"--crashpoint-shard: {exc}") from None
    try:
        _crash_point_option(config)
    except ValueError as exc:
        raise pytest.UsageError(f"--crashpoint-crash-point: {exc}") from None
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Summary(), "crashpoint-summary")


def pytest_report_header(config: pytest.Config) -> str | None:
    model = config.getoption("crashpoint_model")
    shard = config.getoption("crashpoint_shard")
    point = config.getoption("crashpoint_crash_point")
    if model == _DEFAULT_MODEL and shard is None and point is None:
        return None
    return (
        f"crashpoint: model={model}"
        + (f", shard={shard}" if shard else "")
        + (f", crash point={point}" if point is not None else "")
    )


def shard_count(config: pytest.Config, shards: int | str) -> int:
    """How many items a ``crashpoint(shards=...)`` test becomes.

    ``"auto"``: the pytest-xdist worker count (``workerinput["workercount"]`` on a
    worker, ``-n``/``--maxprocesses`` on the controller, so that every worker
    collects the same items); 1 without xdist. An int is used as it is.
    """
    if shards != "auto":
        if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
            raise ValueError(f'shards must be "auto" or a positive int, not {shards!r}')
        return shards
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return max(1, int(workerinput.get("workercount", 1)))
    numprocesses = getattr(config.option, "numprocesses", None)
    if isinstance(numprocesses, int) and numprocesses > 0:
        maxprocesses = getattr(config.option, "maxprocesses", None)
        return min(numprocesses, maxprocesses) if maxprocesses else numprocesses
    return 1


def _combine(
    outer: tuple[int, int] | None, inner: tuple[int, int] | None
) -> tuple[int, int] | None:
    """Shard ``inner`` of shard ``outer``: crash states whose identity ``d`` has
    ``d % N == K - 1`` (outer ``K/N``) and ``d // N % M == J - 1`` (inner ``J/M``)
    are ``d % (N*M) == K - 1 + N*(J - 1)``, so the inner shards of one outer shard
    cover it exactly once."""
    if outer is None:
        return inner
    if inner is None:
        return outer
    (k, n), (j, m) = outer, inner
    return k + n * (j - 1), n * m


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker("crashpoint")
    if marker is None or marker.kwargs.get("shards") is None:
        return
    # A collection error that shows its one line, not the hook machinery's traceback.
    problem = ""
    try:
        n = shard_count(metafunc.config, marker.kwargs["shards"])
    except ValueError as exc:
        n, problem = 0, str(exc)
    if n < 1:
        pytest.fail(f"{metafunc.definition.nodeid}: crashpoint marker: {problem}", pytrace=False)
    if "crashpoint_shard" not in metafunc.fixturenames:
        pytest.fail(
            f"{metafunc.definition.nodeid}: @pytest.mark.crashpoint(shards=...) needs the "
            "crashpoint_explorer, crashpoint_verify (or crashpoint_shard) fixture",
            pytrace=False,
        )
    if _crash_point_option(metafunc.config) is not None:
        return  # a replay: one item, on the shard --crashpoint-shard names
    if n > 1:
        metafunc.parametrize(
            "crashpoint_shard",
            [(k, n) for k in range(1, n + 1)],
            ids=[f"shard{k}of{n}" for k in range(1, n + 1)],
            indirect=True,
        )


@pytest.fixture
def crashpoint_shard(request: pytest.FixtureRequest) -> tuple[int, int] | None:
    """The slice of every crash-state space this item explores: ``--crashpoint-shard``
    combined with the item's marker shard; None for everything."""
    option = request.config.getoption("crashpoint_shard")
    outer = parse_shard(option) if option else None
    inner: tuple[int, int] | None = getattr(request, "param", None)
    return _combine(outer, inner)


@pytest.fixture
def crashpoint_fs() -> Iterator[RecordingFileSystem]:
    """A recording filesystem over a fresh in-memory disk on which ``/data`` exists:
    every operation lands in ``.trace``; ``.inner`` is the
    :class:`~crashpoint.faultfs.MemoryFileSystem`."""
    from .faultfs import MemoryFileSystem, RecordingFileSystem

    yield RecordingFileSystem(MemoryFileSystem(dirs=("/data",)))


@pytest.fixture
def crashpoint_explorer(
    request: pytest.FixtureRequest, crashpoint_shard: tuple[int, int] | None
) -> Iterator[Explorer]:
    """An :class:`Explorer` bound to this test; its verdicts are recorded as the
    test's ``crashpoint_*`` user properties when the test ends."""
    marker = request.node.get_closest_marker("crashpoint")
    options = dict(marker.kwargs) if marker is not None else {}
    model = options.get("model") or request.config.getoption("crashpoint_model")
    explorer = Explorer(
        request.node.nodeid,
        models=model,
        shard=crashpoint_shard,
        target=options.get("target"),
        crash_point=_crash_point_option(request.config),
    )
    yield explorer
    if explorer.explorations:
        node = request.node
        for key, value in explorer.properties().items():
            node.user_properties.append((f"crashpoint_{key}", value))


@pytest.fixture
def crashpoint_verify(
    request: pytest.FixtureRequest, crashpoint_shard: tuple[int, int] | None
) -> Iterator[Verifier]:
    """A :class:`Verifier` bound to this test (``--crashpoint-model``,
    ``--crashpoint-faults``, ``--crashpoint-crash-point``, the item's shard); its
    verdicts become the test's ``crashpoint_*`` user properties."""
    verifier = Verifier(
        request.node.nodeid,
        model=request.config.getoption("crashpoint_model"),
        faults=bool(request.config.getoption("crashpoint_faults")),
        shard=crashpoint_shard,
        crash_point=_crash_point_option(request.config),
    )
    yield verifier
    if verifier.results:
        for key, value in verifier.properties().items():
            request.node.user_properties.append((f"crashpoint_{key}", value))


class Verifier:
    """Verifies a user's storage on behalf of one test item (``crashpoint.verify``).

    Args:
        nodeid: the test's node id.
        model: ``"all"``, a model name or comma-separated names.
        faults: arm every fault at every operation.
        shard: ``(K, N)``: only that slice of each crash-state space.
        crash_point: only crash point K of each run (a replay); None for every one.

    Example::

        def test_my_store(crashpoint_verify):
            crashpoint_verify.check(MyStore, kind="document")
    """

    def __init__(
        self,
        nodeid: str = "",
        *,
        model: str = _DEFAULT_MODEL,
        faults: bool = False,
        shard: tuple[int, int] | None = None,
        crash_point: int | None = None,
    ) -> None:
        self.nodeid = nodeid
        self.model = model
        self.faults = faults
        self.shard = shard
        self.crash_point = crash_point
        self.results: list[Any] = []

    def verify(self, factory: Callable[..., Any], **options: Any) -> Any:
        """``crashpoint.verify(factory, **options)`` with this item's model, faults,
        shard and crash point unless given. Raises BadTarget (e.g. a save that writes
        nothing)."""
        from .scenarios.jobs.verify import verify

        options.setdefault("model", self.model)
        options.setdefault("faults", self.faults)
        options.setdefault("shard", self.shard)
        options.setdefault("crash_point", self.crash_point)
        result = verify(factory, **options)
        self.results.append(result)
        return result

    def check(self, factory: Callable[..., Any], **options: Any) -> Any:
        """:meth:`verify`, then fail the test with the most severe counterexample (or
        the unsupported calls of an incomplete verdict)."""
        __tracebackhide__ = True
        if options.get("actors", 1) > 1:
            return self._check_concurrent(factory, **options)
        result = self.verify(factory, **options)
        piece = options.get("shard") or self.shard
        if piece is not None and result.examined_nothing and not result.unsupported:
            _skip_empty_shard(piece)
        try:
            result.assert_no_violations()
        except AssertionError as exc:
            pytest.fail(f"crashpoint verify: {result.verdict}\n{exc}", pytrace=False)
        return result

    def _check_concurrent(
        self,
        factory: Callable[..., Any],
        *,
        actors: int,
        preemptions: int = 2,
        workload: str | None = None,
        last_writer_wins: bool = False,
        model: str | None = None,
    ) -> Any:
        """``check(factory, actors=N)``: the concurrent workloads (issue 25), failing
        the test with the first counterexample of each workload, or an incomplete
        verdict's calls; the bound is stated in the failure."""
        __tracebackhide__ = True
        from ._options import parse_models
        from .scenarios.jobs.concurrent import verify_concurrent

        results = verify_concurrent(
            factory,
            actors=actors,
            models=parse_models(model or self.model),
            workloads=[workload] if workload else None,
            preemptions=preemptions,
            last_writer_wins=last_writer_wins,
        )
        failures = []
        for res in results:
            for _, e in res.findings[:1]:
                failures.append(f"{res.exploration.words()}\n{e.counterexamples[0].render()}")
            if res.incomplete:
                failures.append(f"{res.workload}: incomplete verdict")
            if res.crash_states == 0:
                failures.append(f"{res.workload}: nothing examined")
        if failures:
            pytest.fail("crashpoint verify --actors: " + "\n".join(failures), pytrace=False)
        return results

    def properties(self) -> dict[str, object]:
        """The verdicts so far, as recorded in the test's user properties."""
        return {
            "explorations": sum(len(r.results) for r in self.results),
            "crash_points": sum(e.crash_points for r in self.results for e in r.results),
            "distinct_states": sum(e.distinct_states for r in self.results for e in r.results),
            "violations": sum(len(r.counterexamples) for r in self.results),
            "killed_by": ",".join(sorted({i for r in self.results for i in r.killed_by()})),
            "verdict": ",".join(dict.fromkeys(r.verdict for r in self.results)),
        }


class Explorer:
    """Explores workloads at every crash point on behalf of one test item.

    Args:
        nodeid: the test's node id (used in replay commands).
        models: ``"all"``, a model name, comma-separated names, or models.
        shard: ``(K, N)``: only that slice of each crash-state space; None for all.
        target: the default target (a name, a :class:`~crashpoint.scenarios.Target`
            or a factory ``factory(fs, base_dir)``); ``"reference"`` when None.
        crash_point: only this crash point (a replay); None for every one.

    Attributes:
        results: every exploration this explorer ran, in order.

    Example::

        def test_three_saves(crashpoint_explorer):
            result = crashpoint_explorer.explore(three_saves, target="mutant:delete-main-first")
            assert result.killed_by() == ["D1"]
    """

    def __init__(
        self,
        nodeid: str = "",
        *,
        models: str | PersistenceModel | Sequence[str | PersistenceModel] = _DEFAULT_MODEL,
        shard: tuple[int, int] | None = None,
        target: str | Target | Callable[..., Any] | None = None,
        crash_point: int | None = None,
    ) -> None:
        self.nodeid = nodeid
        self.models = models
        self.shard = shard
        self.target = target
        self.crash_point = crash_point
        self.results: list[EngineResult] = []
        self.unsharded_points = 0

    @property
    def explorations(self) -> int:
        return len(self.results)

    def explore(
        self,
        workload: Workload | Callable[[Session], None],
        *,
        target: str | Target | Callable[..., Any] | None = None,
        model: str | PersistenceModel | Sequence[str | PersistenceModel] | None = None,
        checker: Iterable[Invariant | str] | None = None,
        shard: tuple[int, int] | None = None,
    ) -> EngineResult:
        """Explore ``workload`` (a :class:`~crashpoint.scenarios.Workload` or a function
        taking a :class:`~crashpoint.scenarios.Session`) at every crash point.

        ``model`` defaults to ``--crashpoint-model`` (several models: one result,
        merged); ``shard`` to this item's shard. Returns the
        :class:`~crashpoint.scenarios.EngineResult`.
        """
        from .scenarios import explore

        chosen = self._resolve_target(target if target is not None else self.target)
        work = _as_workload(workload)
        models = _resolve_models(model if model is not None else self.models)
        piece = shard if shard is not None else self.shard
        results = [
            explore(
                work,
                model=m,
                target=chosen,
                checker=checker,
                shard=piece,
                crash_point=self.crash_point,
            )
            for m in models
        ]
        # The crash points of the whole exploration, whatever this item's shard holds.
        self.unsharded_points += sum(
            1 if self.crash_point is not None else r.operations + 1 for r in results
        )
        result = results[0]
        for other in results[1:]:
            result.merge(other)
        if len(results) > 1:
            result.model = ",".join(m.name for m in models)
        if not _registered(work, chosen):
            result.counterexamples = [
                _with_replay(v, self.replay(v.model, v.crash_point, piece))
                for v in result.counterexamples
            ]
        self.results.append(result)
        return result

    def replay(self, model: str, crash_point: int, shard: tuple[int, int] | None) -> str:
        """The pytest command that re-runs this test at one crash point of one shard:
        the node id without its shard parameter (a replay is not split), the shard as
        ``--crashpoint-shard``."""
        import shlex

        test = shlex.quote(unsharded_nodeid(self.nodeid)) if self.nodeid else "<this test>"
        piece = f" --crashpoint-shard {shard[0]}/{shard[1]}" if shard is not None else ""
        return (
            f"pytest {test} --crashpoint-model {model}{piece} "
            f"--crashpoint-crash-point {crash_point}"
        )

    def check(
        self,
        workload: Workload | Callable[[Session], None],
        **options: Any,
    ) -> EngineResult:
        """:meth:`explore`, then fail the test with the minimal counterexample (the
        model, crash point, crash state, what load gave and a replay) if any; fail it
        too when nothing was verified (a replay that examined no crash point; a
        workload that judged no session: it made no storage call)."""
        __tracebackhide__ = True
        result = self.explore(workload, **options)
        if not result.crash_points:
            # Never a green that examined nothing: a replay of a crash point the workload
            # does not have (or whose states lie in another shard) is a mistake; a shard
            # holding none of this workload's states verified nothing (skipped, said so).
            piece = options.get("shard") or self.shard
            if self.crash_point is not None:
                where = f" in shard {piece[0]}/{piece[1]}" if piece is not None else ""
                pytest.fail(
                    f"crashpoint: --crashpoint-crash-point {self.crash_point} examined no "
                    f"crash state{where}: the workload's crash points are 0..{result.operations}"
                    f"{' (or its states lie in another shard)' if where else ''}; "
                    "nothing was verified",
                    pytrace=False,
                )
            _skip_empty_shard(piece, " of this workload")
        if result.counterexamples:
            v = result.counterexamples[0]
            more = len(result.counterexamples) - 1
            tail = f"\n  (and {more} more violation(s))" if more else ""
            pytest.fail(
                f"crashpoint: {len(result.counterexamples)} violation(s), "
                f"{result.distinct_states} distinct crash states explored\n{v.render()}{tail}",
                pytrace=False,
            )
        if result.subjects == 0:
            from .scenarios.engine.explore import NO_SUBJECT

            pytest.fail(f"crashpoint: {NO_SUBJECT}", pytrace=False)
        return result

    def properties(self) -> dict[str, object]:
        """The verdicts so far, as recorded in the test's user properties."""
        return {
            "explorations": len(self.results),
            "crash_points": sum(r.crash_points for r in self.results),
            "crash_points_unsharded": self.unsharded_points,
            "distinct_states": sum(r.distinct_states for r in self.results),
            "violations": sum(len(r.counterexamples) for r in self.results),
            "killed_by": ",".join(sorted({i for r in self.results for i in r.killed_by()})),
            "model": ",".join(dict.fromkeys(r.model for r in self.results)),
            "shard": "all" if self.shard is None else f"{self.shard[0]}/{self.shard[1]}",
        }

    @staticmethod
    def _resolve_target(target: str | Target | Callable[..., Any] | None) -> Target:
        from .scenarios import TARGETS, Target, get_target

        if target is None:
            return TARGETS["reference"]
        if isinstance(target, Target):
            return target
        if isinstance(target, str):
            return get_target(target)
        name = getattr(target, "__qualname__", None) or repr(target)
        return Target(name, target, getattr(target, "__doc__", None) or "")


def _skip_empty_shard(piece: tuple[int, int] | None, of: str = "") -> NoReturn:
    """Skip a test whose shard ``piece`` holds none of its crash states (``of``: whose,
    e.g. " of this workload"): it verified nothing, and says so (the other shards cover
    the states; failing would punish a wide ``-n``)."""
    where = f" in shard {piece[0]}/{piece[1]}" if piece is not None else ""
    pytest.skip(f"crashpoint: no crash state{of}{where}: nothing verified")


def _resolve_models(
    models: str | PersistenceModel | Sequence[str | PersistenceModel],
) -> list[PersistenceModel]:
    from .faultfs import parse_models

    return parse_models(models)


def _as_workload(workload: Workload | Callable[[Session], None]) -> Workload:
    from .scenarios import Workload

    if isinstance(workload, Workload):
        return workload
    doc = (getattr(workload, "__doc__", None) or "").strip().split("\n")[0]
    name = getattr(workload, "__name__", None) or "workload"
    return Workload(name, doc, workload)


def unsharded_nodeid(nodeid: str) -> str:
    """``nodeid`` without the ``shardKofN`` parameter id the marker adds:
    ``t.py::test_x[shard2of3]`` → ``t.py::test_x``, ``t.py::test_x[a-shard1of2]`` →
    ``t.py::test_x[a]``."""
    if not nodeid.endswith("]") or "[" not in nodeid:
        return nodeid
    base, params = nodeid[:-1].split("[", 1)
    kept = [p for p in params.split("-") if not re.fullmatch(r"shard\d+of\d+", p)]
    return f"{base}[{'-'.join(kept)}]" if kept else base


def _registered(workload: Workload, target: Target) -> bool:
    """Whether the CLI can replay this exploration (catalogued workload and target)."""
    from .scenarios import SCENARIOS, get_target

    try:
        return SCENARIOS.get(workload.name) is workload and get_target(target.name) is target
    except KeyError:
        return False


def _with_replay(violation: Any, replay: str) -> Any:
    import dataclasses

    return dataclasses.replace(violation, replay=replay)


class _Summary:
    """Sums the crashpoint verdicts of every test (reports from xdist workers too)
    and prints them after the run.

    The shard items of one test split its crash states, not its explorations: each
    item runs the same explorations, and its ``crash_points`` counts the crash points
    where its shard has states. So explorations and the whole explorations' crash
    points (``crash_points_unsharded``) count once per test, distinct states and
    violations are summed: a sharded run's totals equal the unsharded run's."""

    def __init__(self) -> None:
        self.per_test: dict[str, dict[str, int]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "teardown":
            return
        values = {
            name[len("crashpoint_") :]: value
            for name, value in report.user_properties
            if name.startswith("crashpoint_") and isinstance(value, int)
        }
        if not values:
            return
        test = self.per_test.setdefault(
            unsharded_nodeid(report.nodeid), dict.fromkeys(_PROPERTY_KEYS, 0)
        )
        test["explorations"] = max(test["explorations"], values.get("explorations", 0))
        points = values.get("crash_points_unsharded", values.get("crash_points", 0))
        test["crash_points"] = max(test["crash_points"], points)
        for key in ("distinct_states", "violations"):
            test[key] += values.get(key, 0)

    @property
    def totals(self) -> dict[str, int]:
        return {k: sum(t[k] for t in self.per_test.values()) for k in _PROPERTY_KEYS}

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        totals = self.totals
        if totals["explorations"]:
            terminalreporter.write_sep("-", "crashpoint")
            terminalreporter.write_line(
                f"{totals['explorations']} explorations, {totals['crash_points']} crash "
                f"points, {totals['distinct_states']} distinct crash states, "
                f"{totals['violations']} violations"
            )

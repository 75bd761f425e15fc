"""The state-storage kind for user targets, and its conformance suite (SPEC.md §6, §9).

A user's state storage has the six methods of SPEC.md §6 and comes from
``factory(fs, base_dir)`` (protocol) or ``factory(base_dir)`` (unmodified code, run
intercepted). :func:`~crashpoint.scenarios.jobs.storage.verify_state_storage`
explores the storage workloads of the catalogue under each model (and faults) with the
agent-state checker, and runs the conformance suite: the seed's checklist §13.1–13.6
and §13.8 written once against *any* storage (:data:`CONFORMANCE`).

Checks and workloads that depend on the reference's own file layout (a
harness-written future-version main, corrupt main with a good bak, bak rotation,
media placeholders read back from the file) run only for targets that declare that
layout: the factory attribute ``crashpoint_format = "reference"`` or
``--format reference``.
"""

from __future__ import annotations

import contextlib
import errno
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ....core import (
    AgentState,
    ErrorCode,
    Message,
    PendingRunCheckpoint,
    StateError,
    TextPart,
    ToolCall,
    encode,
)
from ....faultfs import (
    Fault,
    FileSystem,
    MemoryFileSystem,
    PersistenceModel,
    RecordingFileSystem,
    makedirs,
    write_bytes,
)
from ...engine.explore import Counterexample
from ...targets.user import BadTarget, Runner
from ..agent.kind import record
from ..agent.targets import Target
from ..agent.workload import BASE_DIR, SCENARIOS, CallKind, Workload
from .machine import _settings, storage_state_machine

__all__ = [
    "CONFORMANCE",
    "LAYOUT_RULES",
    "REFERENCE_LAYOUT_SCENARIOS",
    "Check",
    "needs_reference_format",
    "run_conformance",
    "run_state_machine",
    "selected_workloads",
    "state_machine",
    "storage_target",
]

REFERENCE_LAYOUT_SCENARIOS = frozenset({"media-placeholder"})
"""Catalogue workloads whose checks assume the reference file layout (``S.json``,
``S.json.bak``, ``S.json.ended``); so does every workload whose setup writes files
into the base directory (:func:`needs_reference_format`)."""


def needs_reference_format(workload: Workload) -> bool:
    """Whether ``workload`` assumes the reference file layout: it is listed in
    :data:`REFERENCE_LAYOUT_SCENARIOS`, or its setup writes files into the base
    directory (a harness-written main, bak or marker)."""
    if workload.name in REFERENCE_LAYOUT_SCENARIOS:
        return True
    if workload.setup is None:
        return False
    fs = MemoryFileSystem(dirs=("/data",))
    workload.setup(fs, BASE_DIR)
    return any(path.startswith(BASE_DIR + "/") for path, _ in fs.crash_state().files)


Make = Callable[[FileSystem], Any]
"""Builds the storage under test on a filesystem."""


class _Proxy:
    """A storage built by ``factory(base_dir)``, run intercepted on ``fs``: each call
    first points the interception at ``fs`` (one interception for the whole run)."""

    def __init__(self, runner: Runner, fs: FileSystem) -> None:
        self._runner = runner
        self._fs = fs
        self._obj = runner.build(fs)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._obj, name)
        if not callable(attr):
            return attr
        runner, fs = self._runner, self._fs

        def call(*args: Any, **kwargs: Any) -> Any:
            runner.use(fs)
            return runner.call(f"{name}()", lambda: attr(*args, **kwargs))

        return call


def storage_target(runner: Runner, name: str) -> Target:
    """The :class:`~crashpoint.scenarios.Target` for a user's storage: each storage
    call runs on its own filesystem, under the runner's time limit."""

    def build(fs: FileSystem, base: str) -> Any:
        return _Proxy(runner, fs)

    return Target(name, build, f"user storage {name} ({runner.mode})")


# --- the conformance suite -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Check:
    """One conformance check.

    Attributes:
        id: the seed checklist item (``"13.1"`` ...).
        name: what it checks.
        run: ``run(make)`` raises AssertionError (or StateError) when it fails.
        reference_format: runs only for targets with the reference file layout.
    """

    id: str
    name: str
    run: Callable[[Make], None]
    reference_format: bool = False


def _state(sid: str = "s1", *texts: str, running: bool = False) -> AgentState:
    s = AgentState.new(sid)
    s.messages = [Message("user", (TextPart(t),)) for t in (texts or ("hello",))]
    s.is_running = running
    if running:
        s.pending_run_checkpoint = PendingRunCheckpoint("suspended", 1)
    return s


def _fresh() -> MemoryFileSystem:
    return MemoryFileSystem(dirs=("/data",))


def _code(fn: Callable[[], Any]) -> str | None:
    try:
        fn()
    except StateError as exc:
        return str(exc.code)
    return None


def _c13_1_round_trip(make: Make) -> None:
    st = make(_fresh())
    s = _state("s1", "a", "b", running=True)
    s.metadata = {"title": "chat", "n": [1, 2]}
    st.save(s)
    assert st.load("s1") == s, "load after save returns a different state"
    assert make(_fresh()).exists("s1") is False


def _c13_1_not_found(make: Make) -> None:
    code = _code(lambda: make(_fresh()).load("nobody"))
    assert code == ErrorCode.SESSION_NOT_FOUND, f"load of an unknown id: {code}"


def _c13_1_delete(make: Make) -> None:
    st = make(_fresh())
    st.save(_state())
    assert st.exists("s1"), "exists after save"
    st.delete("s1")
    assert not st.exists("s1"), "exists after delete"
    code = _code(lambda: st.load("s1"))
    assert code == ErrorCode.SESSION_NOT_FOUND, f"load after delete: {code}"


def _c13_1_load_or_create(make: Make) -> None:
    st = make(_fresh())
    created = st.load_or_create("new", {"title": "t"})
    assert created == AgentState.new("new", {"title": "t"}), "load_or_create of a new id"
    assert st.exists("new"), "load_or_create persists the new state"
    kept = _state("s1", "kept")
    st.save(kept)
    assert st.load_or_create("s1") == kept, "load_or_create of an existing id"


def _c13_1_survives_reboot(make: Make) -> None:
    fs = _fresh()
    make(fs).save(_state("s1", "one"))
    make(fs).save(_state("s1", "one", "two"))
    rebooted = make(MemoryFileSystem(fs.crash_state()))
    assert rebooted.load("s1") == _state("s1", "one", "two"), "a fresh storage loads it"


def _c13_2_failed_save(make: Make) -> None:
    """Every failing operation of a second save: state_save_failed (conditional), and
    load still gives the first state (or the second, past its commit point)."""
    base = _fresh()
    make(base).save(_state("s1", "one"))
    probe = RecordingFileSystem(MemoryFileSystem(base.crash_state()))
    make(probe).save(_state("s1", "one", "two"))
    first = len(probe.trace.ops)
    assert first > 0, "save returned but no file operation was recorded"
    for at in range(first):
        fs = MemoryFileSystem(base.crash_state())
        rec = RecordingFileSystem(fs, fault=Fault(at, errno.EIO))
        try:
            make(rec).save(_state("s1", "one", "two"))
        except StateError as exc:
            assert exc.code == ErrorCode.STATE_SAVE_FAILED, f"fault at op {at}: {exc.code}"
            assert str(exc.retryability) == "conditional", f"fault at op {at}: retryability"
        got = make(MemoryFileSystem(fs.crash_state())).load("s1")
        assert got in (_state("s1", "one"), _state("s1", "one", "two")), (
            f"EIO at operation {at}: load gives neither the last acknowledged state nor the new"
        )


def _seed(files: dict[str, bytes]) -> MemoryFileSystem:
    fs = _fresh()
    makedirs(fs, BASE_DIR)
    for name, data in files.items():
        write_bytes(fs, f"{BASE_DIR}/{name}", data)
    return fs


def _doc(version: int, text: str) -> bytes:
    obj = encode(_state("s1", text))
    obj["schemaVersion"] = version
    if version < 3:
        obj.pop("planReviewApproved", None)
        obj.pop("pendingPlanReview", None)
    return json.dumps(obj).encode()


def _c13_2_half_written_main(make: Make) -> None:
    fs = _fresh()
    st = make(fs)
    st.save(_state("s1", "one"))
    st.save(_state("s1", "one", "two"))
    whole = fs.read(f"{BASE_DIR}/s1.json")
    write_bytes(fs, f"{BASE_DIR}/s1.json", whole[: len(whole) // 2])
    assert make(fs).load("s1") == _state("s1", "one"), "a torn main falls back to bak"


def _c13_3_migration(make: Make) -> None:
    st = make(_seed({"s1.json": _doc(2, "old")}))
    assert st.load("s1").messages == _state("s1", "old").messages, "a v2 main loads migrated"


def _c13_4_unsupported(make: Make) -> None:
    fs = _seed({"s1.json": _doc(4, "future"), "s1.json.bak": _doc(2, "old")})
    assert _code(lambda: make(fs).load("s1")) == ErrorCode.SCHEMA_VERSION_UNSUPPORTED
    before = fs.mutations
    code = _code(lambda: make(fs).load_or_create("s1"))
    assert code == ErrorCode.SCHEMA_VERSION_UNSUPPORTED and fs.mutations == before, (
        "load_or_create writes over an unsupported main"
    )


def _c13_5_traversal(make: Make) -> None:
    for sid in ("../escape", "/abs", "a/b", "..", "", "a\\b", "x\x00y"):
        rec = RecordingFileSystem(_fresh())
        st = make(rec)
        for method, arg in (
            ("save", _state(sid)),
            ("load", sid),
            ("mark_not_resumable", sid),
            ("delete", sid),
        ):
            with contextlib.suppress(StateError):
                getattr(st, method)(arg)
        outside = [
            op.render()
            for op in rec.trace.ops
            if any(p is not None and not _confined(p) for p in (op.path, op.dst))
        ]
        assert not outside, f"id {sid!r} reached outside {BASE_DIR}: {outside[0]}"


def _confined(path: str) -> bool:
    """Inside the base directory, or one of its parents (``mkdir -p``)."""
    return (path + "/").startswith(BASE_DIR + "/") or BASE_DIR.startswith(path + "/")


def _c13_6_pairing(make: Make) -> None:
    rec = RecordingFileSystem(_fresh())
    st = make(rec)
    bad = _state()
    bad.messages.append(Message("assistant", (), tool_calls=(ToolCall("c1", "t", "{}"),)))
    code = _code(lambda: st.save(bad))
    assert code == ErrorCode.HISTORY_UNPAIRED, f"an unpaired history saved: {code}"
    assert not [op for op in rec.trace.ops if op.kind.value != "mkdir"], (
        "a refused save wrote a file"
    )


def _c13_8_empty_contents(make: Make) -> None:
    st = make(_fresh())
    s = _state()
    s.messages.append(Message("assistant", (), tool_calls=(ToolCall("c1", "t", "{}"),)))
    s.messages.append(Message("tool", (TextPart("done"),), tool_call_id="c1"))
    st.save(s)
    assert st.load("s1") == s, "an assistant message with tool calls and no content round-trips"


CONFORMANCE: tuple[Check, ...] = (
    Check("13.1", "save then load returns equal fields", _c13_1_round_trip),
    Check("13.1", "load of an unknown id raises session_not_found", _c13_1_not_found),
    Check("13.1", "delete: exists false, load not found", _c13_1_delete),
    Check("13.1", "load_or_create creates, then returns the existing state", _c13_1_load_or_create),
    Check("13.1", "a fresh storage on the same disk loads the last save", _c13_1_survives_reboot),
    Check(
        "13.2",
        "a failed save raises state_save_failed and keeps the last state",
        _c13_2_failed_save,
    ),
    Check("13.2", "a torn main falls back to bak", _c13_2_half_written_main, True),
    Check("13.3", "a v2 main loads migrated", _c13_3_migration, True),
    Check("13.4", "an unsupported main never falls back to bak", _c13_4_unsupported, True),
    Check("13.5", "hostile ids never reach outside the base directory", _c13_5_traversal),
    Check("13.6", "an unpaired history is refused and nothing written", _c13_6_pairing),
    Check("13.8", "a tool-call-only assistant message round-trips", _c13_8_empty_contents),
)
"""The seed's checklist §13.1–13.6, §13.8 against any storage (13.7, suspend/resume,
is the runtime's)."""


def run_conformance(
    make: Make, *, reference_format: bool = False
) -> list[tuple[Check, str | None]]:
    """Run every applicable check: ``[(check, None if it passed else why)]``."""
    out: list[tuple[Check, str | None]] = []
    for check in CONFORMANCE:
        if check.reference_format and not reference_format:
            continue
        try:
            check.run(make)
        except AssertionError as exc:
            out.append((check, str(exc) or "assertion failed"))
        except StateError as exc:
            out.append((check, f"raised {exc.code}: {exc.message}"))
        except Exception as exc:
            out.append((check, f"raised {type(exc).__name__}: {exc}"))
        else:
            out.append((check, None))
    return out


# --- the state machine, for any layout --------------------------------------------------

LAYOUT_RULES = ("corrupt", "future_version_writes_main")
"""State-machine rules that write the reference's files behind the storage's back."""


def state_machine(
    factory: Callable[[FileSystem, str], Any], *, reference_format: bool = False, **options: Any
) -> Any:
    """:func:`~crashpoint.scenarios.storage_state_machine` for ``factory``; unless the
    storage declares the reference file layout, without the rules that write the
    reference's files behind its back (:data:`LAYOUT_RULES`): a storage with a layout
    of its own is judged on everything else. Requires hypothesis."""

    machine = storage_state_machine(factory, **options)
    if reference_format:
        return machine
    # hypothesis collects rules from the class's members: a plain method of the same
    # name hides the rule (the subclass keeps every other rule and invariant).
    members: dict[str, Any] = {name: _no_rule for name in LAYOUT_RULES}
    members["__doc__"] = "The storage machine without the reference-layout rules."
    subclass: Any = type("LayoutFreeStorageMachine", (machine,), members)
    subclass.TestCase.settings = machine.TestCase.settings
    return subclass


def _no_rule(self: Any, *args: Any, **kwargs: Any) -> None:
    """Not a rule for this storage (it does not keep the reference file layout)."""


def run_state_machine(
    factory: Callable[[FileSystem, str], Any],
    *,
    reference_format: bool = False,
    max_examples: int = 25,
    seed: int = 0,
    models: Iterable[PersistenceModel | str] | None = None,
) -> str | None:
    """Run :func:`state_machine` for ``max_examples`` programs (seeded, no example
    database); None if it passed, else the failure (the shrunk program's message)."""
    from hypothesis import seed as use_seed
    from hypothesis.stateful import run_state_machine_as_test

    machine = use_seed(seed)(
        state_machine(factory, reference_format=reference_format, models=models)
    )
    try:
        run_state_machine_as_test(
            machine, settings=_settings(max_examples=max_examples, database=None)
        )
    except AssertionError as exc:
        return " ".join(str(exc).split())[:2000]
    except Exception as exc:
        # Hypothesis found several distinct failures: an exception group (Python 3.11's
        # ExceptionGroup, the backport's before it) of the machine's AssertionErrors.
        failures = _leaves(exc)
        if not failures or not all(isinstance(f, AssertionError) for f in failures):
            raise
        text = f"{len(failures)} distinct failures: " + " | ".join(
            " ".join(str(f).split()) for f in failures
        )
        return text[:2000]
    return None


def _leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside an exception group, nested groups flattened; [] for an
    exception that is not a group."""
    inner = getattr(exc, "exceptions", None)
    if not isinstance(inner, tuple):
        return []
    out: list[BaseException] = []
    for e in inner:
        out += _leaves(e) or [e]
    return out


# --- verify --kind state-storage ------------------------------------------------------------


def _escape(workload: str, model: str, spec: str, path: str) -> Counterexample:
    return Counterexample(
        "S1",
        ("S1",),
        workload,
        model,
        spec,
        0,
        "(intercepted)",
        "(intercepted)",
        "",
        {},
        "",
        f"no operation outside {BASE_DIR}",
        f"the target changed {path}",
        f"crashpoint verify {spec} --kind state-storage --workload {workload} --model {model}",
    )


def _preflight(target: Target, runner: Runner, spec: str) -> None:
    try:
        rec = record(SCENARIOS["first-save"], target)
    except BadTarget:
        raise
    except Exception as exc:
        raise BadTarget(
            f"target {spec!r}: the factory raised {type(exc).__name__}: {exc}"
        ) from None
    refused = [u for u in runner.unsupported() if u.startswith("real disk: ")]  # faultfs/_audit
    for call in rec.calls:
        if call.kind is CallKind.SAVE and call.error is not None and not refused:
            raise BadTarget(f"target {spec!r}: save() raised on a clean run: {call.error}")
        if (
            call.kind is CallKind.SAVE
            and call.error is None
            and call.end == call.begin
            and not runner.escapes()
        ):
            raise BadTarget(
                f"save returned but no file operation was recorded: target {spec!r} "
                f"({runner.mode}) wrote nothing the harness can see"
            )


def selected_workloads(names: Iterable[str] | None, *, reference_format: bool) -> list[Workload]:
    """The storage workloads a user storage is explored on. Raises KeyError."""
    chosen = [
        w
        for w in SCENARIOS.values()
        if "storage" in w.tags and (reference_format or not needs_reference_format(w))
    ]
    if names is None:
        return chosen
    out = []
    for name in dict.fromkeys(names):
        w = SCENARIOS.get(name)
        if w is None:
            raise KeyError(f"unknown workload {name!r} for --kind state-storage")
        if not reference_format and needs_reference_format(w):
            raise KeyError(
                f"workload {name!r} assumes the reference file layout: give --format reference"
            )
        out.append(w)
    return out

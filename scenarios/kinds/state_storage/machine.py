"""A hypothesis state machine for any storage: random programs, crashes, reboots.

Where :func:`~crashpoint.scenarios.explore` checks every crash point of one fixed
workload, the machine generates the workloads: ``save`` of generated valid states
(tool calls, frozen approval batches, media parts) or of the next user turn,
``mark_not_resumable``,
``delete``, ``load_or_create``, ``load``, *crash now* (the next storage call stops
at a drawn operation under a drawn persistence model, and the machine reboots on a
drawn crash state), *corrupt a file*, *a future version writes main* and a
*hostile call* (a traversal id through one of the six methods). After
every step it reboots the disk as it stands on a fresh storage and judges what
load gives with the harness's own checker (:func:`~crashpoint.scenarios.judge`,
SPEC.md §8: R1 V1 P1 E1 E2 D1 C1); every storage call's operations are judged for
S1 (nothing outside the base directory, failed attempts included) and every disk
it judges, swept crash states included, for S2 (no secret in any file). A failure
shrinks to a short program, printed by hypothesis, with each crash state rendered in
the notes (STYLE.md §6, §11).

The storage is built by ``factory(fs, base_dir)``, like a
:class:`~crashpoint.scenarios.Target`, so the machine runs against any storage with
the SPEC.md §6 methods; the corruption rules and the disk-derived checks (V1, bak
fallback) assume the SPEC.md §6 file layout (``S.json``, ``S.json.bak``).

Hypothesis is a test extra, not a dependency: it is imported when a machine is built.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ....core import (
    CURRENT_VERSION,
    AgentState,
    ErrorCode,
    Message,
    PendingRunCheckpoint,
    StateError,
    TextPart,
    decode_bytes,
    encode,
    safe_session_file_name,
    truncate_to_paired,
)
from ....faultfs import (
    MODELS,
    PROCESS_CRASH,
    CrashState,
    FileSystem,
    MemoryFileSystem,
    PersistenceModel,
    RecordingFileSystem,
    SimulatedCrash,
    crash_points,
    device_default,
    get_model,
)
from ...targets.user import a_storage
from ..agent.checkers import (
    Expectation,
    Invariant,
    Observation,
    confinement_violations,
    describe_file,
    judge,
    observe,
    secrets_in_state,
    v1_required,
)
from ..agent.checkers import expectation as fold_calls
from ..agent.kind import SECRETS
from ..agent.workload import BASE_DIR, Call, Expect, Session

if TYPE_CHECKING:
    from hypothesis.stateful import RuleBasedStateMachine

__all__ = ["MACHINE_INVARIANTS", "run_storage_machine", "storage_state_machine"]

Factory = Callable[[FileSystem, str], Any]

MACHINE_INVARIANTS: tuple[Invariant, ...] = (
    Invariant.R1,
    Invariant.V1,
    Invariant.P1,
    Invariant.E1,
    Invariant.E2,
    Invariant.D1,
    Invariant.C1,
    Invariant.S1,
    Invariant.S2,
)
"""The invariants the machine checks after every step (SPEC.md §8)."""

HOSTILE_IDS = ("../escape", "../../outside/x", "a/../../escape", "..", "/data/escape")
"""Session ids the *hostile call* rule sends through the six methods: each names a path
outside the base directory if joined as it comes (SPEC.md §4 refuses them all)."""

HOSTILE_METHODS = ("save", "load", "load_or_create", "exists", "mark_not_resumable", "delete")

VICTIM = "escape.json"
"""A file beside the base directory, there from the start (with its bak), which a
confined storage never touches: what ``../escape`` reaches when joined as it comes."""

CORRUPTIONS = ("truncate", "garbage", "empty")
"""How the *corrupt a file* rule damages a file: cut in half, replaced by bytes that
are not JSON, or emptied."""

_CRASHED = "crashed"
"""The error a call stopped by a crash is folded with: it may or may not have taken
effect (like state_save_failed, it is not a refusal)."""


@dataclass(frozen=True, slots=True)
class _Armed:
    model: PersistenceModel
    at: int
    pick: int


@dataclass(frozen=True, slots=True)
class _Look:
    obs: Observation
    v1: bool
    clean: bool
    c1_wrote: bool


class Snapshot:
    """A generated state, printed compactly in the replay: only the fields that
    differ from :meth:`AgentState.new`, as a call that rebuilds it."""

    __slots__ = ("state",)

    def __init__(self, state: AgentState) -> None:
        self.state = state

    def __repr__(self) -> str:
        fresh = AgentState.new(self.state.session_id)
        args = [repr(self.state.session_id)]
        for f in dataclasses.fields(AgentState):
            value = getattr(self.state, f.name)
            if f.name != "session_id" and value != getattr(fresh, f.name):
                args.append(f"{f.name}={value!r}")
        return f"AgentState({', '.join(args)})"


class _Harness:
    """The machine's state and its steps, without hypothesis (the rules delegate here).

    The disk is a :class:`MemoryFileSystem` booted from ``boot`` (durable by
    definition); the storage runs on a :class:`RecordingFileSystem` over it, so the
    operations since boot are the trace a crash's states are derived from.
    ``calls`` holds every storage call since the machine started, numbered by a
    global operation count (``offset`` operations before the current boot), so that
    :func:`~crashpoint.scenarios.kinds.agent.checkers.expectation` folds them into what load
    may give, exactly as for a recorded workload.
    """

    def __init__(
        self,
        factory: Factory,
        *,
        base_dir: str,
        session_ids: Sequence[str],
        invariants: Iterable[Invariant],
        sweep: bool = True,
    ) -> None:
        self.factory = factory
        self.sweep = sweep
        self.base_dir = base_dir
        self.session_ids = tuple(session_ids)
        self.wanted = frozenset(invariants)
        self.calls: list[Call] = []
        self.known: dict[bytes, str] = {}
        self.damaged: set[str] = set()
        self.armed: _Armed | None = None
        self.last_crash = ""
        self.offset = 0
        self._looks: dict[CrashState, dict[str, _Look]] = {}
        parent = posixpath.dirname(posixpath.normpath(base_dir)) or "/"
        first = MemoryFileSystem(dirs=(parent,) if parent != "/" else ())
        victim = posixpath.join(parent, VICTIM)
        for path in (victim, victim + ".bak"):
            first.create(path)
            first.write(path, 0, b'{"not": "the storage\'s"}')
        self._reboot(first.crash_state())

    # --- the disk and the storage ------------------------------------------------
    def _reboot(self, disk: CrashState) -> None:
        """A fresh process: a new filesystem holding exactly ``disk``, a new storage."""
        self.boot = disk
        self.mem = MemoryFileSystem(disk)
        self.rec = RecordingFileSystem(self.mem, record_reads=False)
        self.storage = a_storage(self.factory(self.rec, self.base_dir), "the storage factory")
        self.session = Session(self.storage, self.rec, self.base_dir)

    @property
    def now(self) -> int:
        """Operations issued since the machine started (kept ones only, across crashes)."""
        return self.offset + self.rec.op_count

    def main_path(self, session_id: str) -> str:
        return posixpath.join(self.base_dir, safe_session_file_name(session_id) + ".json")

    # --- storage calls -----------------------------------------------------------
    def call(self, method: str, session_id: str, *args: Any, live: str = "") -> Call:
        """Run one storage call through the recording session; with a crash armed,
        stop it at the drawn operation and reboot on a drawn crash state.

        ``live``: judge what the call returned (a load or load_or_create on the
        running storage), described so."""
        armed, self.armed = self.armed, None
        self.last_crash = ""
        begun = self.rec.op_count
        before = self.mem.crash_state() if self.sweep and armed is None else None
        if armed is not None:
            self.rec.crash_at = begun + armed.at
        crash: SimulatedCrash | None = None
        try:
            getattr(self.session, method)(*args)
        except SimulatedCrash as exc:
            crash = exc
        local = self.session.calls[-1]
        self._confined(f"{method}({session_id!r})", begun)
        call = dataclasses.replace(
            local,
            seq=len(self.calls),
            begin=local.begin + self.offset,
            end=None if local.end is None else local.end + self.offset,
        )
        self.calls.append(call)
        saved = call.saved
        if saved is not None and saved.data is not None and call.error in (None, _CRASHED):
            self.known.setdefault(saved.data, call.label)
        if call.error is not None and call.error.startswith("exception:"):
            raise AssertionError(
                f"{method}({session_id!r}) raised {call.error[len('exception:') :]}, "
                "not a StateError (SPEC.md §5)"
            )
        if live and crash is None:
            self._judge_live(call, live)
        if armed is not None:
            self._crash(armed, call, begun, crash)
        elif before is not None:
            self._sweep(call, before, begun)
        return call

    def _confined(self, what: str, begun: int) -> None:
        """S1: no operation of the call just made (failed ones included) reached
        outside the base directory."""
        if Invariant.S1 not in self.wanted:
            return
        escaped = confinement_violations(self.rec.trace.ops[begun:], self.base_dir)
        if escaped:
            op = escaped[0]
            failed = "" if op.errno is None else " (it failed, but was attempted)"
            raise AssertionError(
                f"S1 ({Invariant.S1.label}) violated: {what} issued {op.render()}{failed}\n"
                f"  expected: no operation outside {self.base_dir}\n"
                f"  disk:\n{self.render_disk(self.mem.crash_state())}"
            )

    def hostile(self, method: str, session_id: str) -> None:
        """A call with a hostile id (see :data:`HOSTILE_IDS`); judged for S1 only (the
        reference refuses it with invalid_session_id before any I/O)."""
        if method == "exists":
            begun = self.rec.op_count
            with contextlib.suppress(StateError):
                self.storage.exists(session_id)
            self._confined(f"exists({session_id!r})", begun)
            return
        args: tuple[Any, ...] = (session_id,)
        if method == "save":
            state = AgentState.new(session_id)
            state.messages = [Message("user", (TextPart("hostile"),))]
            args = (state,)
        elif method == "load_or_create":
            args = (session_id, None)
        self.call(method, session_id, *args)

    def _sweep(self, call: Call, before: CrashState, begun: int) -> None:
        """Judge a process crash at every operation of the call just made (as
        :func:`~crashpoint.scenarios.explore` does for a workload): the distinct
        crash states strictly inside it, each rebooted on a fresh storage."""
        ops = [dataclasses.replace(op, index=i) for i, op in enumerate(self.rec.trace.ops[begun:])]
        seen = {before, self.mem.crash_state()}  # checked before and after the step
        for point in crash_points(PROCESS_CRASH, before, ops):
            state = point.states[0]
            if state in seen:
                continue
            seen.add(state)
            j = point.index
            crash = (
                f"process crash during {call.label}({call.session_id!r}) after {j} of its "
                f"operations, before {ops[j].render()}; last operation done: "
                f"{ops[j - 1].render()}"
            )
            self._verify(
                state,
                at=self.offset + begun + j,
                what=f"load after a {crash}",
                crash="",
            )

    def _crash(self, armed: _Armed, call: Call, begun: int, crash: SimulatedCrash | None) -> None:
        """Reboot on crash state ``pick`` of the crash point: operation ``at`` of the
        call when it got that far (the SimulatedCrash stopped it there); else, the
        call having returned after ``n <= at`` operations, point ``at mod (n + 1)``
        of its recorded trace (the first operations are the same whether or not
        the machine stops after them; ``n`` is "right after it returned")."""
        ops = self.rec.trace.ops
        issued = len(ops) - begun
        j = issued if crash is not None else armed.at % (issued + 1)
        k = begun + j
        point = next(p for p in crash_points(armed.model, self.boot, ops[:k]) if p.index == k)
        states = point.states
        chosen = states[armed.pick % len(states)]
        if j < issued or crash is not None:
            stopped = ops[k].render() if crash is None else f"an operation on {crash.path}"
            where = f"after {j} of its operations, before {stopped}"
        else:
            where = f"right after it returned ({issued} operations)"
        done = ops[k - 1].render() if k else "(nothing since boot)"
        self.last_crash = (
            f"crash under {armed.model.name} during {call.label}({call.session_id!r}) "
            f"{where}; last operation done: {done}; crash state "
            f"{armed.pick % len(states) + 1} of {len(states)}"
            + (f" (+{point.cut} cut)" if point.cut else "")
            + ":\n"
            + self.render_disk(chosen)
        )
        _note(self.last_crash)
        if j < issued or call.end is None:
            call.end = self.offset + k
            call.error = _CRASHED
        self.offset += k
        self._reboot(chosen)

    def next_turn(self, session_id: str) -> AgentState:
        """The session's last saved state one turn on, as an agent run saves it: a user
        message appended (after dropping an unanswered approval batch), then either
        ``after_user_input`` (running, with a checkpoint) or complete (neither),
        alternately (SPEC.md §7)."""
        base = AgentState.new(session_id)
        for call in reversed(self.calls):
            saved = call.saved.state if call.saved is not None else None
            if call.session_id == session_id and call.error is None and saved is not None:
                base = saved.snapshot()
                break
        turn = len(base.messages)
        base.messages = [
            *truncate_to_paired(base.messages),
            Message("user", (TextPart(f"turn {turn}"),)),
        ]
        base.pending_approval = None
        base.is_running = turn % 2 == 0
        base.pending_run_checkpoint = (
            PendingRunCheckpoint("after_user_input", turn) if base.is_running else None
        )
        return base

    def arm(self, model: PersistenceModel | str, at: int, pick: int) -> None:
        """Arm a crash for the next storage call (see ``crash_now``)."""
        self.armed = _Armed(get_model(model) if isinstance(model, str) else model, at, pick)

    def _judge_live(self, call: Call, what: str) -> None:
        if call.result is not None:
            obs = Observation(state=call.result)
        elif call.error is not None:
            obs = Observation(code=call.error)
        else:
            return
        self._judge(obs, call.session_id, self.mem.crash_state(), what)

    # --- external events ---------------------------------------------------------
    def corrupt(self, session_id: str, which: str, how: str) -> None:
        disk = self.mem.crash_state()
        path = self.main_path(session_id) + (".bak" if which == "bak" else "")
        data = disk.file(path)
        if data is None:
            _note(f"nothing to corrupt: {posixpath.basename(path)} is absent")
            return
        if how == "truncate":
            damaged = data[: len(data) // 2]
        elif how == "garbage":
            damaged = b"\x00\xffnot json{" + data[len(data) // 2 :]
        else:
            damaged = b""
        self._external(session_id, disk, {path: damaged})
        _note(f"{posixpath.basename(path)}: {describe_file(damaged, self.known)}")

    def future_version_writes_main(self, session_id: str) -> None:
        """A newer version of the application saves the session (main → bak, a
        schema-v(CURRENT+1) main, marker removed), then this version restarts."""
        disk = self.mem.crash_state()
        main = self.main_path(session_id)
        old = disk.file(main)
        try:
            base = decode_bytes(old) if old is not None else AgentState.new(session_id)
        except StateError:
            base = AgentState.new(session_id)
        doc = encode(base)
        doc["schemaVersion"] = CURRENT_VERSION + 1
        doc["writtenBy"] = "a future version"
        data = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()
        self.known.setdefault(data, "the future version's save")
        changes: dict[str, bytes | None] = {main: data, main + ".ended": None}
        if old is not None:
            changes[main + ".bak"] = old
        self._external(session_id, disk, changes)

    def _external(
        self, session_id: str, disk: CrashState, changes: Mapping[str, bytes | None]
    ) -> None:
        """Another process changed the disk: this one stopped cleanly (its page cache
        reached the disk), the files changed, and it restarts on the result."""
        files = dict(disk.files)
        for path, data in changes.items():
            if data is None:
                files.pop(path, None)
            else:
                files[path] = data
        dirs = set(disk.dirs)
        parent = posixpath.dirname(self.main_path(session_id))
        while parent not in ("/", ""):
            dirs.add(parent)
            parent = posixpath.dirname(parent)
        self.offset += self.rec.op_count
        self.damaged.add(session_id)
        self.last_crash = ""
        self._reboot(CrashState(tuple(sorted(files.items())), tuple(sorted(dirs))))

    # --- checks ------------------------------------------------------------------
    def check(self) -> None:
        """Reboot the disk as it stands on a fresh storage; judge each session's load."""
        disk = self.mem.crash_state()
        for sid in self.session_ids:
            if sid in self.damaged and self._look(disk, sid).clean:
                self.damaged.discard(sid)
        self._verify(disk, what="load on a fresh storage over the disk")

    def _verify(
        self, disk: CrashState, *, what: str, at: int | None = None, crash: str | None = None
    ) -> None:
        """Judge every session's load on ``disk`` against the calls folded at global
        operation ``at`` (default: now); probe C1 where load fails; S2 on every file."""
        leaks = secrets_in_state(disk, SECRETS) if Invariant.S2 in self.wanted else []
        if leaks:
            path, secret = leaks[0]
            after = self.last_crash if crash is None else crash
            raise AssertionError(
                f"S2 ({Invariant.S2.label}) violated: {what}\n"
                f"  found: {path} holds {secret[:6]}… ({len(secret)} characters)\n"
                f"  expected: no secret in any file\n"
                f"  disk:\n{self.render_disk(disk)}" + (f"\n  after the {after}" if after else "")
            )
        for sid in self.session_ids:
            look = self._look(disk, sid)
            self._judge(look.obs, sid, disk, what, at=at, crash=crash)
            if look.c1_wrote:
                raise AssertionError(
                    self._message(
                        Invariant.C1,
                        sid,
                        disk,
                        what.replace("load ", "load_or_create ", 1),
                        got="load_or_create wrote to the disk",
                        expected=f"load_or_create raises {look.obs.code} and writes nothing",
                        crash=crash,
                    )
                )

    def _look(self, disk: CrashState, sid: str) -> _Look:
        """What a fresh storage and the codec make of ``sid`` on ``disk`` (memoised:
        most steps leave the disk as it was, and crashes bring earlier disks back)."""
        looks = self._looks.get(disk)
        if looks is None:
            if len(self._looks) >= 16:
                del self._looks[next(iter(self._looks))]
            looks = self._looks[disk] = {}
        look = looks.get(sid)
        if look is None:
            obs = observe(self.factory(MemoryFileSystem(disk), self.base_dir), sid)
            wrote = False
            if (
                Invariant.C1 in self.wanted
                and obs.state is None
                and obs.code != ErrorCode.SESSION_NOT_FOUND
            ):
                probe = MemoryFileSystem(disk)
                with contextlib.suppress(Exception):
                    self.factory(probe, self.base_dir).load_or_create(sid)
                wrote = probe.mutations > 0
            look = looks[sid] = _Look(
                obs,
                Invariant.V1 in self.wanted and v1_required(disk, self.base_dir, sid),
                self._clean(disk, sid),
                wrote,
            )
        return look

    def expectation(self, sid: str, disk: CrashState, at: int | None = None) -> Expectation:
        """What load of ``sid`` may give at global operation ``at`` (default now): the
        calls folded as for a recorded workload, plus, for a session whose files
        another process damaged, what SPEC.md §6's load gives on ``disk``."""
        exp = fold_calls(self.calls, None, sid, self.now if at is None else at)
        if sid in self.damaged:
            for outcome in self._as_specified(disk, sid):
                if outcome not in exp.allowed:
                    exp.allowed.append(outcome)
        return exp

    def _judge(
        self,
        obs: Observation,
        sid: str,
        disk: CrashState,
        what: str,
        *,
        at: int | None = None,
        crash: str | None = None,
    ) -> None:
        exp = self.expectation(sid, disk, at)
        verdict = judge(obs, exp, v1=self._look(disk, sid).v1)
        if verdict is not None and verdict[0] in self.wanted:
            raise AssertionError(
                self._message(
                    verdict[0],
                    sid,
                    disk,
                    what,
                    got=obs.describe(),
                    expected=verdict[1],
                    crash=crash,
                )
            )

    def _message(
        self,
        inv: Invariant,
        sid: str,
        disk: CrashState,
        what: str,
        *,
        got: str,
        expected: str,
        crash: str | None = None,
    ) -> str:
        text = (
            f"{inv.value} ({inv.label}) violated: {what}\n"
            f"  load({sid!r}) gave: {got}\n"
            f"  expected: {expected}\n"
            f"  disk:\n{self.render_disk(disk)}"
        )
        crash = self.last_crash if crash is None else crash
        if crash:
            text += f"\n  after the {crash}"
        return text

    def render_disk(self, disk: CrashState) -> str:
        """Each session's files (absent, empty, valid vN = which save, truncated,
        zero-filled, garbage, marker), then any other file."""
        if not disk.files:
            return "    (empty: no files)"
        lines = []
        shown = set()
        for sid in self.session_ids:
            main = self.main_path(sid)
            for suffix in ("", ".bak", ".tmp", ".ended"):
                path = main + suffix
                shown.add(path)
                data = disk.file(path)
                if data is not None or suffix in ("", ".bak"):
                    lines.append(
                        f"    {posixpath.basename(path)}: {describe_file(data, self.known)}"
                    )
        for path, data in disk.files:
            if path not in shown:
                lines.append(f"    {path}: {describe_file(data, self.known)}")
        return "\n".join(lines)

    def _clean(self, disk: CrashState, sid: str) -> bool:
        """Whether main and bak each are absent or a snapshot this version reads."""
        main = self.main_path(sid)
        for path in (main, main + ".bak"):
            data = disk.file(path)
            if data is None:
                continue
            try:
                if decode_bytes(data).session_id != sid:
                    return False
            except StateError:
                return False
        return True

    def _as_specified(self, disk: CrashState, sid: str) -> list[Expect]:
        """What SPEC.md §6's load gives on ``disk`` (the marker's effect either way)."""
        main = self.main_path(sid)

        def read(path: str) -> Expect | str:
            data = disk.file(path)
            if data is None:
                return "absent"
            try:
                state = decode_bytes(data)
            except StateError as exc:
                if exc.code == ErrorCode.SCHEMA_VERSION_UNSUPPORTED:
                    return "unsupported"
                return "bad"
            return Expect(state=state, data=data) if state.session_id == sid else "bad"

        found = read(main)
        if found in ("absent", "bad"):
            from_bak = read(main + ".bak")
            if from_bak == "absent":
                from_bak = "corrupt" if found == "bad" else "not-found"
            found = "corrupt" if from_bak == "bad" else from_bak
        if isinstance(found, Expect):
            return [found, dataclasses.replace(found, marked=True)]
        code = {
            "unsupported": ErrorCode.SCHEMA_VERSION_UNSUPPORTED,
            "corrupt": ErrorCode.STATE_CORRUPT,
            "not-found": ErrorCode.SESSION_NOT_FOUND,
        }[found]
        return [Expect(code=str(code))]


def _note(text: str) -> None:
    """``hypothesis.note`` when running under hypothesis (shown for the minimal
    failing example), nothing otherwise."""
    from hypothesis import note
    from hypothesis.errors import InvalidArgument

    with contextlib.suppress(InvalidArgument):
        note(text)


def _models(models: Iterable[PersistenceModel | str] | None) -> tuple[PersistenceModel, ...]:
    """The models the machine crashes under, each with the default device
    (:func:`~crashpoint.faultfs.device_default`): the machine picks one crash state and
    fails on it, so it cannot list a hypothetical finding apart (FAULT-MODEL.md §3); the
    engine's explorations judge the device options."""
    if models is None:
        return tuple(MODELS.values())
    chosen = tuple(device_default(get_model(m) if isinstance(m, str) else m) for m in models)
    if not chosen:
        raise ValueError("models must name at least one persistence model")
    return chosen


def storage_state_machine(
    factory: Factory,
    *,
    models: Iterable[PersistenceModel | str] | None = None,
    base_dir: str = BASE_DIR,
    session_ids: Sequence[str] = ("s1", "s2"),
    invariants: Iterable[Invariant | str] | None = None,
    max_crash_op: int = 15,
    stateful_step_count: int = 20,
    sweep: bool = True,
) -> type[RuleBasedStateMachine]:
    """A hypothesis ``RuleBasedStateMachine`` class testing the storage ``factory`` builds.

    Rules: ``save`` (a generated valid state; now and then an unpaired one, which
    must be refused), ``save_next_turn`` (the last saved state one user turn on, as
    an agent run saves it), ``mark_not_resumable``, ``delete``, ``load_or_create``,
    ``load``, ``crash_now``, ``corrupt`` (main or bak truncated, garbage or emptied)
    and ``future_version_writes_main``.

    ``crash_now(model, at, pick)`` arms a crash for the next storage call: it stops
    before its operation ``at`` (a :class:`~crashpoint.faultfs.SimulatedCrash`), or,
    if the call returned after ``n <= at`` operations, at point ``at mod (n + 1)`` of
    its recorded trace (``n``: right after it returned). The crash states of that
    point are derived under ``model`` from the operations since the last reboot,
    and the machine reboots on state ``pick mod len(states)``: a new
    :class:`~crashpoint.faultfs.MemoryFileSystem` holding it and a new storage
    from ``factory``.

    After every step the disk is rebooted on a fresh storage and each session's
    load is judged against the calls made so far (SPEC.md §8); with ``sweep``, so
    is a process crash at every operation of each storage call (as
    :func:`~crashpoint.scenarios.explore` does for a fixed workload).

    Args:
        factory: ``factory(fs, base_dir)`` builds the storage under test (a
            :class:`~crashpoint.scenarios.Target` will do).
        models: persistence models (or names) a crash is drawn under; default all.
        base_dir: the storage's directory; its parent exists before the first step.
        session_ids: the sessions the rules draw from (valid ids).
        invariants: the invariants checked; default :data:`MACHINE_INVARIANTS`.
        max_crash_op: a crash is armed at operation ``0..max_crash_op`` of the
            next call (past its end: right after it returns).
        stateful_step_count: steps per example, in the class's default settings.
        sweep: also judge a process crash at every operation of each storage call.

    Returns:
        the machine class; run it with ``run_state_machine_as_test(cls)``, or
        expose ``cls.TestCase`` to pytest or unittest. Requires hypothesis.

    Example::

        StorageMachine = storage_state_machine(TARGETS["reference"])
        TestStorage = StorageMachine.TestCase   # collected by pytest / unittest
    """
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

    from ..agent.strategies import json_objects, storage_states

    if max_crash_op < 0:
        raise ValueError(f"max_crash_op must be >= 0, not {max_crash_op}")
    chosen = _models(models)
    model_names = [m.name for m in chosen]
    by_name = {m.name: m for m in chosen}
    wanted = tuple(Invariant(i) for i in (MACHINE_INVARIANTS if invariants is None else invariants))
    ids = tuple(session_ids)
    if not ids:
        raise ValueError("session_ids must hold at least one session id")
    for sid in ids:
        safe_session_file_name(sid)  # raises invalid_session_id
    sessions = st.sampled_from(ids[:1] * 2 + ids)  # the first session most often
    valid = storage_states(session_id=sessions)
    snapshots = st.one_of(valid, valid, valid, storage_states(session_id=sessions, paired=False))

    class StorageMachine(RuleBasedStateMachine):
        """Random programs over one storage, with crashes and reboots
        (:func:`crashpoint.scenarios.storage_state_machine`)."""

        def __init__(self) -> None:
            super().__init__()
            self.harness = _Harness(
                factory, base_dir=base_dir, session_ids=ids, invariants=wanted, sweep=sweep
            )

        @rule(snapshot=snapshots.map(Snapshot))
        def save(self, snapshot: Snapshot) -> None:
            self.harness.call("save", snapshot.state.session_id, snapshot.state)

        @rule(sid=sessions)
        def save_next_turn(self, sid: str) -> None:
            self.harness.call("save", sid, self.harness.next_turn(sid))

        @rule(sid=sessions)
        def mark_not_resumable(self, sid: str) -> None:
            self.harness.call("mark_not_resumable", sid, sid)

        @rule(sid=sessions)
        def delete(self, sid: str) -> None:
            self.harness.call("delete", sid, sid)

        @rule(sid=sessions, metadata=st.one_of(st.none(), json_objects(2)))
        def load_or_create(self, sid: str, metadata: dict[str, Any] | None) -> None:
            live = f"load_or_create({sid!r}) on the running storage"
            self.harness.call("load_or_create", sid, sid, metadata, live=live)

        @rule(sid=sessions)
        def load(self, sid: str) -> None:
            self.harness.call("load", sid, sid, live=f"load({sid!r}) on the running storage")

        @rule(
            model=st.sampled_from(model_names),
            at=st.integers(0, max_crash_op),
            pick=st.integers(0, 255),
        )
        def crash_now(self, model: str, at: int, pick: int) -> None:
            # a name outside the chosen models (an alias: power-loss) is looked up
            self.harness.arm(by_name.get(model) or get_model(model), at, pick)

        @rule(
            sid=sessions,
            file=st.sampled_from(("main", "bak")),
            how=st.sampled_from(CORRUPTIONS),
        )
        def corrupt(self, sid: str, file: str, how: str) -> None:
            self.harness.corrupt(sid, file, how)

        @rule(sid=sessions)
        def future_version_writes_main(self, sid: str) -> None:
            self.harness.future_version_writes_main(sid)

        @rule(method=st.sampled_from(HOSTILE_METHODS), sid=st.sampled_from(HOSTILE_IDS))
        def hostile_call(self, method: str, sid: str) -> None:
            self.harness.hostile(method, sid)

        @invariant()
        def loads_as_expected(self) -> None:
            self.harness.check()

    StorageMachine.TestCase.settings = _settings(stateful_step_count=stateful_step_count)
    return StorageMachine


def _settings(**options: Any) -> Any:
    """hypothesis settings for the machine: no deadline (reboots vary), no health
    check for slow or large examples, and no ``explain`` phase (it traces coverage
    while shrinking, which makes shrinking a stateful program many times slower)."""
    from hypothesis import HealthCheck, Phase, settings

    return settings(
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
        **options,
    )


def run_storage_machine(
    factory: Factory,
    *,
    max_examples: int = 100,
    models: Iterable[PersistenceModel | str] | None = None,
    seed: int | None = None,
    base_dir: str = BASE_DIR,
    session_ids: Sequence[str] = ("s1", "s2"),
    invariants: Iterable[Invariant | str] | None = None,
    stateful_step_count: int = 20,
    sweep: bool = True,
) -> None:
    """Run the storage state machine for ``max_examples`` programs.

    Returns quietly, or raises the first failure of the minimal (shrunk) program:
    an ``AssertionError`` naming the invariant, what load gave and expected and the
    disk, with hypothesis's reproduction program and each crash state in its notes.
    ``seed`` fixes the run (None: hypothesis's randomness); no example database is
    written. The other options are those of :func:`storage_state_machine`.
    Requires hypothesis.

    Example::

        run_storage_machine(TARGETS["reference"], max_examples=50, seed=0)
    """
    from hypothesis import seed as use_seed
    from hypothesis.stateful import run_state_machine_as_test

    machine = storage_state_machine(
        factory,
        models=models,
        base_dir=base_dir,
        session_ids=session_ids,
        invariants=invariants,
        stateful_step_count=stateful_step_count,
        sweep=sweep,
    )
    if seed is not None:
        machine = use_seed(seed)(machine)
    run_state_machine_as_test(
        machine,
        settings=_settings(
            max_examples=max_examples, stateful_step_count=stateful_step_count, database=None
        ),
    )

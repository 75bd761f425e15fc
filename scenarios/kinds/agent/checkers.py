"""Invariants and the checker that judges a rebooted disk against them (SPEC.md §8).

The checker never trusts the storage under test to say what is right: what a
load must give at crash point ``k`` is derived from the workload's recorded calls
alone (:func:`expectation`), what is on disk from the crash state alone
(:func:`v1_required`), and what load gave from a fresh storage on a fresh
filesystem holding exactly that crash state (FAULT-MODEL.md §2, "reboot").
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ....core import (
    CURRENT_VERSION,
    AgentState,
    ErrorCode,
    StateError,
    decode_bytes,
    peek_schema_version,
    safe_session_file_name,
    state_is_paired,
)
from ....core._ids import session_file_stem
from ....faultfs import CrashState, Op, OpKind
from .workload import Call, CallKind, Expect

__all__ = [
    "INVARIANTS",
    "SEVERITIES",
    "Expectation",
    "Invariant",
    "Observation",
    "describe_alternatives",
    "describe_file",
    "expectation",
    "judge",
    "secrets_in_state",
    "severity_of",
    "severity_rank",
    "v1_required",
]


class Invariant(str, enum.Enum):
    """The invariant catalogue of SPEC.md §8 (value: its id)."""

    R1 = "R1"
    """recoverable: load returns the last acknowledged state or the in-flight one (data-loss)."""
    V1 = "V1"
    """no-unsupported-fallback: a future-version main never falls back to bak (data-loss)."""
    P1 = "P1"
    """paired: every state load returns has a paired history (invalid-history)."""
    E1 = "E1"
    """not-resumable-honoured: a condemned snapshot never loads resumable (semantics)."""
    E2 = "E2"
    """resumability-preserved: a running state not marked since loads running (semantics)."""
    D1 = "D1"
    """deleted-stays-deleted: after delete, not-found; never an older state (data-loss)."""
    C1 = "C1"
    """no-create-over-unreadable: load_or_create never writes over an unreadable session."""
    F1 = "F1"
    """clean-failure: a failed call raises state_save_failed and keeps the last state."""
    S1 = "S1"
    """confined: nothing outside the base directory is ever touched (security)."""
    S2 = "S2"
    """no-secrets: no runtime handle or secret reaches any file (security)."""
    I1 = "I1"
    """isolated: operations on one session never change what load returns for another
    session, colliding ids included (data-loss)."""
    N1 = "N1"
    """no-tool-rerun: a tool whose result was persisted is not executed again on resume."""
    H1 = "H1"
    """honest-resume: resume happens exactly when the loaded state says isRunning, and
    always starts with a fresh model call."""
    T1 = "T1"
    """terminal-honoured: once the terminal path returned, no load offers a resume."""

    @property
    def label(self) -> str:
        return _TITLES[self][0]

    @property
    def meaning(self) -> str:
        """What the invariant promises, in one sentence (SPEC.md §8)."""
        return _MEANINGS[self]

    @property
    def severity(self) -> str:
        return _TITLES[self][1]


_TITLES = {
    Invariant.R1: ("recoverable", "data-loss"),
    Invariant.V1: ("no-unsupported-fallback", "data-loss"),
    Invariant.P1: ("paired", "invalid-history"),
    Invariant.E1: ("not-resumable-honoured", "semantics"),
    Invariant.E2: ("resumability-preserved", "semantics"),
    Invariant.D1: ("deleted-stays-deleted", "data-loss"),
    Invariant.C1: ("no-create-over-unreadable", "data-loss"),
    Invariant.F1: ("clean-failure", "data-loss"),
    Invariant.S1: ("confined", "security"),
    Invariant.S2: ("no-secrets", "security"),
    Invariant.I1: ("isolated", "data-loss"),
    Invariant.N1: ("no-tool-rerun", "semantics"),
    Invariant.H1: ("honest-resume", "semantics"),
    Invariant.T1: ("terminal-honoured", "semantics"),
}

_MEANINGS = {
    Invariant.R1: "after a crash, load returns the last acknowledged state or the one being "
    "saved; never corrupt, never not-found once a save was acknowledged, never older",
    Invariant.V1: "a future-version main (or bak, main being bad) makes load raise "
    "schema_version_unsupported, never fall back to bak",
    Invariant.P1: "every state load returns has a tool-call paired history",
    Invariant.E1: "the snapshot condemned by mark_not_resumable never loads resumable",
    Invariant.E2: "a state saved with isRunning=true, not marked since, loads with isRunning=true",
    Invariant.D1: "after delete returned, load says not-found; a crash inside delete never "
    "yields an older state",
    Invariant.C1: "load_or_create never writes when load failed for a reason other than not-found",
    Invariant.F1: "a failed filesystem call makes the call raise state_save_failed "
    "(conditional) and leaves the last acknowledged state loadable",
    Invariant.S1: "nothing outside the base directory is ever created, written, renamed or "
    "deleted, for any session id, through any of the six methods, whether or not the "
    "operation succeeded",
    Invariant.S2: "no runtime handle or secret reaches any file: every file's content is "
    "judged in every crash state",
    Invariant.I1: "operations on one session never change what load returns for another "
    "session (colliding ids such as 'a b' and 'a_b' included)",
    Invariant.N1: "a tool whose result was persisted is not executed again on resume",
    Invariant.H1: "resume happens exactly when the loaded state says isRunning, and starts "
    "with a fresh model call",
    Invariant.T1: "once the terminal path returned, no load offers a resume",
}

INVARIANTS: tuple[Invariant, ...] = tuple(Invariant)
"""Every invariant, in catalogue order."""

SEVERITIES: tuple[str, ...] = ("security", "data-loss", "invalid-history", "semantics", "warning")
"""The severity classes of SPEC.md §8 and §10, most severe first: reports, the terminal,
``assert_no_violations`` and the pytest plugin order findings by them, then by crash point."""

_OTHER_SEVERITIES = {"A1": "data-loss", "A2": "data-loss", "A3": "data-loss", "A4": "data-loss"}
"""The document targets' invariants (SPEC.md §10); A5 and any id not known is a warning."""


def severity_of(invariant: str) -> str:
    """The severity class of an invariant id (SPEC.md §8, §10): ``"security"`` (S1, S2),
    ``"data-loss"`` (R1, V1, D1, C1, F1, I1, A1–A4), ``"invalid-history"`` (P1),
    ``"semantics"`` (E1, E2, N1, H1, T1), else ``"warning"`` (A5, unknown ids)."""
    try:
        return Invariant(invariant).severity
    except ValueError:
        return _OTHER_SEVERITIES.get(invariant, "warning")


def severity_rank(invariant: str) -> int:
    """0 for the most severe class (security) to 4 (warning); see :data:`SEVERITIES`."""
    return SEVERITIES.index(severity_of(invariant))


@dataclass(frozen=True, slots=True)
class Observation:
    """What loading one session gave on a rebooted disk.

    Attributes:
        state: the state returned, or None.
        code: the StateError code raised; ``"exception:<Type>"`` for anything else.
        detail: the error's message, for reports.
    """

    state: AgentState | None = None
    code: str | None = None
    detail: str = ""

    def describe(self) -> str:
        if self.state is None:
            return f"error {self.code}" + (f" ({self.detail})" if self.detail else "")
        return Expect(state=self.state).describe()


def observe(storage: object, session_id: str) -> Observation:
    """Call ``storage.load(session_id)`` and capture what happened (never raises
    an ``Exception``)."""
    try:
        state = storage.load(session_id)  # type: ignore[attr-defined]
    except StateError as exc:
        return Observation(code=str(exc.code), detail=exc.message)
    except Exception as exc:  # a loader that crashes is a finding, not a harness error
        return Observation(code=f"exception:{type(exc).__name__}", detail=str(exc))
    if not isinstance(state, AgentState):
        return Observation(code="exception:TypeError", detail=f"load returned {state!r}")
    return Observation(state=state)


@dataclass(slots=True)
class Expectation:
    """What load of one session may give after a crash at point ``k``.

    Attributes:
        allowed: acceptable outcomes (the acknowledged one, plus the in-flight
            call's effect).
        condemned: snapshots condemned by an acknowledged mark_not_resumable.
        condemned_data: their bytes (a byte-identical re-save is the same snapshot).
        deleting: the last call on the session was a delete, acknowledged or in flight.
        inflight: the call a crash interrupted, if any.
        collided: another session whose id maps to the same file name (SPEC.md §4:
            ``"a b"`` and ``"a_b"``) began a call that may write before the crash
            point; a wrong load is then that session's doing (I1).
    """

    allowed: list[Expect]
    condemned: list[Expect] = dataclasses.field(default_factory=list)
    condemned_data: set[bytes] = dataclasses.field(default_factory=set)
    deleting: bool = False
    inflight: Call | None = None
    collided: bool = False


def _dedup(outcomes: Iterable[Expect]) -> list[Expect]:
    out: list[Expect] = []
    for o in outcomes:
        if o not in out:
            out.append(o)
    return out


def _effect(
    call: Call,
    before: list[Expect],
    condemned_data: set[bytes],
    labelled: dict[int, Expect] | None = None,
) -> list[Expect]:
    """The outcomes after ``call`` took effect (``labelled``: see :func:`expectation`)."""
    kind = call.kind
    saved = None  # what a save or a creating load_or_create wrote, with its origin
    if call.saved is not None and (kind is CallKind.SAVE or kind is CallKind.LOAD_OR_CREATE):
        saved = None if labelled is None else labelled.get(id(call))
        if saved is None:
            saved = dataclasses.replace(call.saved, origin=call.label)
            if labelled is not None:
                labelled[id(call)] = saved
    if kind is CallKind.SAVE:
        if saved is None:
            return before
        if saved.data in condemned_data:
            return [saved, dataclasses.replace(saved, marked=True)]
        return [saved]
    if kind is CallKind.MARK_NOT_RESUMABLE:
        return [dataclasses.replace(o, marked=True) if o.state is not None else o for o in before]
    if kind is CallKind.DELETE:
        return [Expect.not_found()]
    if kind is CallKind.LOAD_OR_CREATE and saved is not None:
        return [saved if o.code == ErrorCode.SESSION_NOT_FOUND else o for o in before]
    return before


_NOTHING_WRITTEN = frozenset(
    {
        ErrorCode.HISTORY_UNPAIRED,
        ErrorCode.INVALID_SESSION_ID,
        ErrorCode.MESSAGE_EMPTY_CONTENTS,
        ErrorCode.SESSION_NOT_FOUND,
        ErrorCode.STATE_CORRUPT,
        ErrorCode.SCHEMA_VERSION_UNSUPPORTED,
        ErrorCode.JSON_TOO_DEEP,
        ErrorCode.SESSION_ID_COLLISION,  # SPEC.md §4: refused, nothing changed
        ErrorCode.STATE_LOAD_FAILED,  # SPEC.md §6: a read error, nothing written
    }
)

_COLLISION = str(ErrorCode.SESSION_ID_COLLISION.value)
_WRITERS = frozenset(
    {CallKind.SAVE, CallKind.DELETE, CallKind.MARK_NOT_RESUMABLE, CallKind.LOAD_OR_CREATE}
)


_stem = session_file_stem


def expectation(
    calls: Sequence[Call],
    initial: Expect | None,
    session_id: str,
    k: int,
    *,
    labelled: dict[int, Expect] | None = None,
) -> Expectation:
    """Fold the calls on ``session_id`` issued before crash point ``k``.

    ``labelled``: a memo of each call's written outcome with its origin, by the call's
    ``id`` (Expect is frozen: folds of the same calls may share them); the caller
    keeps ``calls`` alive while it keeps the memo.

    A call is acknowledged when it returned after at most ``k`` operations
    (``end <= k``) and in flight when it began but had not returned
    (``begin <= k < end``). A call that failed with state_save_failed may have
    taken effect past its commit point, so both outcomes stay allowed; a refusal
    (history_unpaired, invalid_session_id ...) wrote nothing.
    """
    if initial is None:
        try:
            safe_session_file_name(session_id)
            initial = Expect.not_found()
        except StateError as exc:
            initial = Expect(code=str(exc.code))
    elif initial.state is not None and not initial.origin:
        initial = dataclasses.replace(initial, origin="the setup's snapshot")
    exp = Expectation([initial])
    stem = _stem(session_id)
    for call in calls:
        if call.begin > k:
            break
        if call.session_id != session_id:
            if (
                stem is not None
                and call.kind in _WRITERS
                and call.error not in _NOTHING_WRITTEN
                and _stem(call.session_id) == stem
            ):
                exp.collided = True
            continue
        acked = call.end is not None and call.end <= k
        after = _effect(call, exp.allowed, exp.condemned_data, labelled)
        if not acked:
            exp.allowed = _dedup([*exp.allowed, *after])
            exp.inflight = call
            if call.kind is CallKind.DELETE:
                exp.deleting = True
            break
        if call.error is None:
            if call.kind is CallKind.MARK_NOT_RESUMABLE:
                for o in exp.allowed:
                    if o.state is not None and not o.marked:
                        exp.condemned.append(o)
                        if o.data is not None:
                            exp.condemned_data.add(o.data)
            exp.allowed = after
        elif call.error not in _NOTHING_WRITTEN:
            exp.allowed = _dedup([*exp.allowed, *after])
        if call.kind is CallKind.DELETE:
            exp.deleting = True
        elif call.kind is CallKind.SAVE and call.error is None:
            exp.deleting = False
    if exp.collided and any(o.code == ErrorCode.SESSION_NOT_FOUND for o in exp.allowed):
        # Nothing of this session's own can be lost: the other session's file under the
        # shared name may be refused as a collision instead (SPEC.md §4).
        exp.allowed.append(Expect(code=_COLLISION))
    return exp


def _ended(state: AgentState) -> AgentState:
    s = state.snapshot()
    s.is_running = False
    s.pending_run_checkpoint = None
    return s


def _matches(obs: Observation, outcome: Expect) -> bool:
    if outcome.state is None:
        return obs.state is None and obs.code == outcome.code
    if obs.state is None:
        return False
    return obs.state == (_ended(outcome.state) if outcome.marked else outcome.state)


def _resumable(state: AgentState) -> bool:
    return state.is_running or state.pending_run_checkpoint is not None


def v1_required(state: CrashState, base_dir: str, session_id: str) -> bool:
    """Whether the disk holds a future-version snapshot that load must refuse with
    schema_version_unsupported: main is of a future version, or main is absent or
    bad and bak is (SPEC.md §6, §8 V1)."""
    paths = _session_paths(base_dir, session_id)
    if paths is None:
        return False
    main, bak = paths
    main_data = bak_data = None
    for path, data in state.files:  # as state.file(main) and state.file(bak), in one pass
        if path == main:
            if main_data is None:
                main_data = data
        elif path == bak and bak_data is None:
            bak_data = data
    if main_data is not None and _future(main_data):
        return True
    if bak_data is None or not _future(bak_data):
        return False
    if main_data is None:
        return True
    try:  # bak is of a future version: does main decode (so load never reads bak)?
        return decode_bytes(main_data).session_id != session_id
    except StateError:
        return True


@functools.lru_cache(maxsize=4096)
def _session_paths(base_dir: str, session_id: str) -> tuple[str, str] | None:
    """The main and bak paths of ``session_id`` in ``base_dir``; None for an invalid id."""
    stem = session_file_stem(session_id)
    if stem is None:
        return None
    main = posixpath.join(base_dir, stem + ".json")
    return main, main + ".bak"


_CURRENT_FIRST = re.compile(rb'\{"schemaVersion":([0-9]{1,3})[,}]')


def _future(data: bytes) -> bool:
    """Whether ``data`` is a snapshot of a future version. Without a parse when the
    document opens with ``{"schemaVersion":N`` (N at most current, as encode writes
    it) and holds no other ``schemaVersion`` key, in any spelling (no ``\\u`` escape):
    whatever the rest, peek_schema_version gives N or None, neither of them future."""
    first = _CURRENT_FIRST.match(data)
    if (
        first is not None
        and int(first.group(1)) <= CURRENT_VERSION
        and data.count(b'"schemaVersion"') == 1
        and b"\\u" not in data
    ):
        return False
    version = peek_schema_version(data)
    return version is not None and version > CURRENT_VERSION


def judge(obs: Observation, exp: Expectation, *, v1: bool) -> tuple[Invariant, str] | None:
    """Judge one load against one expectation.

    Returns None when it holds, else the violated invariant and what was expected.
    Each finding is classified once, the most specific invariant first:
    V1, P1, then an exact match, then I1 (a session with a colliding id wrote),
    E1/E2 (the state is right but its resumability is not), D1 (a delete was
    under way or done), else R1.
    """
    if v1 and obs.code != ErrorCode.SCHEMA_VERSION_UNSUPPORTED:
        return Invariant.V1, "error schema_version_unsupported (a future version is on disk)"
    if obs.state is not None and not state_is_paired(obs.state):
        return Invariant.P1, "a state whose history is tool-call paired"
    if v1 or any(_matches(obs, o) for o in exp.allowed):
        return None
    expected = describe_alternatives(exp.allowed)
    if exp.collided:
        return Invariant.I1, expected + " (unchanged by the session whose id shares its file name)"
    if obs.state is not None:
        ended = _ended(obs.state)
        for outcome in exp.allowed:
            if outcome.state is not None and _ended(outcome.state) == ended:
                if outcome.marked or outcome in exp.condemned:
                    return Invariant.E1, expected
                return Invariant.E2, expected
        if _resumable(obs.state) and any(obs.state == c.state for c in exp.condemned):
            return Invariant.E1, expected
    if exp.deleting:
        return Invariant.D1, expected
    return Invariant.R1, expected


def describe_alternatives(outcomes: Sequence[Expect]) -> str:
    """The acceptable outcomes joined by ``or``; alternatives that would read the same
    are told apart by their snapshot's digest (``[sha256 1a2b3c4d]``)."""
    texts = [o.describe() for o in outcomes]
    for i, (text, o) in enumerate(zip(texts, outcomes, strict=True)):
        if texts.count(text) > 1:
            data = o.data if o.data is not None else (repr(o.state).encode() if o.state else b"")
            texts[i] = f"{text} [sha256 {_sha(data)[:8]}]"
    return " or ".join(texts)


@functools.lru_cache(maxsize=4096)  # a pure function of two strings, asked per operation
def outside(path: str, base_dir: str) -> bool:
    """Whether ``path`` lies outside ``base_dir`` (after normalisation)."""
    norm = posixpath.normpath(path)
    base = posixpath.normpath(base_dir)
    return norm != base and not norm.startswith(base + "/")


def confinement_violations(ops: Sequence[Op], base_dir: str) -> list[Op]:
    """Operations that created, wrote, renamed or deleted outside ``base_dir`` (S1),
    whether they succeeded or failed (a failed attempt was still aimed outside:
    SPEC.md §8). Syncs are not counted: they change no name and no content."""
    found = []
    for op in ops:
        if not op.kind.mutating or op.kind.barrier:
            continue
        # a link only reads its source: the new name is what it creates
        source = op.kind is not OpKind.LINK and outside(op.path, base_dir)
        if source or (op.dst is not None and outside(op.dst, base_dir)):
            found.append(op)
    return found


def secrets_in_state(state: CrashState, secrets: Sequence[str]) -> list[tuple[str, str]]:
    """``(path, secret)`` for each file of ``state`` whose content (or name) holds one of
    ``secrets`` (S2, SPEC.md §8: judged on whole files, so a secret written a few
    bytes at a time is found once the pieces are together)."""
    needles = [(s, s.encode()) for s in secrets if s]
    return [
        (path, secret)
        for path, data in state.files
        for secret, needle in needles
        if needle in data or secret in path
    ]


def describe_file(data: bytes | None, known: Mapping[bytes, str]) -> str:
    """Render one file of a crash state: absent, empty, zero-filled, valid vN (and
    which save wrote it), truncated at byte b, a marker, or garbage (FAULT-MODEL.md §5)."""
    if data is None:
        return "absent"
    if not data:
        return "empty"
    if data in known:
        version = peek_schema_version(data)
        if version is not None and version > CURRENT_VERSION:
            return f"v{version} (a future version), {len(data)} bytes (= {known[data]})"
        shown = "?" if version is None else version
        return f"valid v{shown}, {len(data)} bytes (= {known[data]})"
    if not data.strip(b"\0"):
        return f"zero-filled, {len(data)} bytes"
    if data.startswith(b"sha256:"):
        digest = data[7:].decode(errors="replace").strip()
        whose = next(
            (label for blob, label in known.items() if _sha(blob) == digest), "no known snapshot"
        )
        return f"ended marker sha256:{digest[:12]}… (condemns {whose})"
    if data.strip() == b"1":
        return "ended marker '1' (legacy: condemns any snapshot)"
    version = peek_schema_version(data)
    if version is not None:
        try:
            state = decode_bytes(data)
        except StateError as exc:
            if exc.code == ErrorCode.SCHEMA_VERSION_UNSUPPORTED:
                return f"v{version} (a future version this build cannot read), {len(data)} bytes"
            return f"v{version} document that does not decode ({exc.code}), {len(data)} bytes"
        if not state_is_paired(state):
            return f"v{version} document with an unpaired history, {len(data)} bytes"
        return f"valid v{version}, {len(data)} bytes"
    stored = data.rstrip(b"\0")
    for blob, label in known.items():
        if blob.startswith(stored) and len(data) < len(blob):
            return f"truncated at byte {len(stored)} of {label}"
    return f"garbage, {len(data)} bytes"


def _sha(blob: bytes) -> str:
    import hashlib

    return hashlib.sha256(blob).hexdigest()

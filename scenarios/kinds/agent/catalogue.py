"""The workload catalogue over the reference storage (SPEC.md §6, §8; seed §13).

Each workload is a short program; its docstring says what it exercises. Builders
at the top make small, valid agent states.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping

from ....core import (
    AgentState,
    MediaPart,
    Message,
    PendingApproval,
    PendingRunCheckpoint,
    StateError,
    TextPart,
    ToolCall,
    encode,
    encode_bytes,
)
from ....faultfs import FileSystem, makedirs, write_bytes
from .workload import Expect, Session, scenario

__all__ = ["assistant", "build_state", "tool_result", "user"]

SID = "s1"


def user(text: str) -> Message:
    return Message("user", (TextPart(text),))


def assistant(text: str = "", *calls: ToolCall) -> Message:
    contents = (TextPart(text),) if text else ()
    return Message("assistant", contents, tool_calls=tuple(calls))


def tool_result(call: ToolCall, text: str) -> Message:
    return Message("tool", (TextPart(text),), tool_call_id=call.id)


def build_state(
    *messages: Message,
    session_id: str = SID,
    running: bool = False,
    checkpoint: str | None = None,
    **fields: object,
) -> AgentState:
    """A state with ``messages``; ``running`` sets isRunning, ``checkpoint`` a
    pendingRunCheckpoint; other keyword arguments set AgentState fields."""
    state = AgentState.new(session_id)
    state.messages = list(messages)
    state.is_running = running
    state.total_loop_count = len(messages)
    if checkpoint is not None:
        state.pending_run_checkpoint = PendingRunCheckpoint(checkpoint, len(messages))
    for name, value in fields.items():
        setattr(state, name, value)
    return state


def _seed_files(fs: FileSystem, base: str, files: Mapping[str, bytes]) -> None:
    makedirs(fs, base)
    for name, data in files.items():
        write_bytes(fs, f"{base}/{name}", data)


def _doc(version: int, *texts: str, session_id: str = SID) -> bytes:
    """A snapshot document as an app of ``version`` would write it."""
    obj = encode(build_state(*(user(t) for t in texts), session_id=session_id))
    obj["schemaVersion"] = version
    if version < 3:
        obj.pop("planReviewApproved", None)
        obj.pop("pendingPlanReview", None)
    if version > 3:
        obj["futureField"] = {"added": f"in v{version}"}
    return json.dumps(obj, separators=(",", ":")).encode()


CALL_A = ToolCall("call_a", "read_file", '{"path": "notes.txt"}')
CALL_B = ToolCall("call_b", "search", '{"q": "crash consistency"}')
CALL_DANGER = ToolCall("call_rm", "delete_files", '{"glob": "*.tmp"}')


# --- saves ---------------------------------------------------------------------
@scenario("first-save", "a new session's first save (creates the directory)")
def first_save(s: Session) -> None:
    s.save(build_state(user("hello"), running=True))


def _existing(fs: FileSystem, base: str) -> Mapping[str, Expect]:
    older = build_state(user("v0"))
    current = build_state(user("v0"), assistant("hi"))
    _seed_files(fs, base, {"s1.json.bak": encode_bytes(older), "s1.json": encode_bytes(current)})
    return {SID: Expect.saved(current)}


@scenario(
    "three-saves", "three saves over an existing session (main and bak present)", setup=_existing
)
def three_saves(s: Session) -> None:
    history = [user("v0"), assistant("hi")]
    for i in range(1, 4):
        history += [user(f"question {i}"), assistant(f"answer {i}")]
        s.save(build_state(*history, running=i < 3))


@scenario("two-quick-saves", "two saves of a new session in quick succession")
def two_quick_saves(s: Session) -> None:
    s.save(build_state(user("one"), running=True))
    s.save(build_state(user("one"), assistant("two"), running=True))


@scenario(
    "stale-ended-marker",
    "save running, mark not resumable, save running again (a stale marker on disk)",
)
def stale_ended_marker(s: Session) -> None:
    s.save(build_state(user("go"), running=True, checkpoint="after_user_input"))
    s.mark_not_resumable(SID)
    s.save(
        build_state(
            user("go"),
            assistant("resumed"),
            user("next"),
            running=True,
            checkpoint="after_user_input",
        )
    )


@scenario("mark-then-load", "mark a running session not resumable, then load it")
def mark_then_load(s: Session) -> None:
    s.save(build_state(user("go"), running=True, checkpoint="suspended"))
    s.mark_not_resumable(SID)
    s.load(SID)


@scenario("delete", "two saves (main and bak), then delete the session")
def delete(s: Session) -> None:
    s.save(build_state(user("one")))
    s.save(build_state(user("one"), assistant("two")))
    s.delete(SID)
    s.load(SID)


# --- versions and corruption ---------------------------------------------------
def _future_main_v2_bak(fs: FileSystem, base: str) -> Mapping[str, Expect]:
    _seed_files(fs, base, {"s1.json": _doc(4, "from the future"), "s1.json.bak": _doc(2, "old")})
    return {SID: Expect(code="schema_version_unsupported")}


@scenario(
    "future-main",
    "main of a future version (v4) with a v2 bak: load, load_or_create",
    setup=_future_main_v2_bak,
)
def future_main(s: Session) -> None:
    s.load(SID)
    s.load_or_create(SID)


def _corrupt_main_good_bak(fs: FileSystem, base: str) -> Mapping[str, Expect]:
    good = build_state(user("kept"), running=True, checkpoint="suspended")
    whole = _doc(3, "lost")
    _seed_files(fs, base, {"s1.json": whole[: len(whole) // 2], "s1.json.bak": encode_bytes(good)})
    return {SID: Expect.saved(good)}


@scenario(
    "corrupt-main-good-bak",
    "half-written main with a good bak: load falls back; mark condemns the bak",
    setup=_corrupt_main_good_bak,
)
def corrupt_main_good_bak(s: Session) -> None:
    s.load(SID)
    s.mark_not_resumable(SID)
    s.load(SID)


def _corrupt_main_future_bak(fs: FileSystem, base: str) -> Mapping[str, Expect]:
    _seed_files(
        fs,
        base,
        {
            "s1.json": b'{"schemaVersion":3,"sessionId":"s1","hist',
            "s1.json.bak": _doc(5, "newer app"),
        },
    )
    return {SID: Expect(code="schema_version_unsupported")}


@scenario(
    "corrupt-main-future-bak",
    "corrupt main with a future-version bak: unsupported, never created over",
    setup=_corrupt_main_future_bak,
)
def corrupt_main_future_bak(s: Session) -> None:
    s.load(SID)
    s.load_or_create(SID)


def _both_corrupt(fs: FileSystem, base: str) -> Mapping[str, Expect]:
    _seed_files(fs, base, {"s1.json": b"\x00\x00\x00\x00", "s1.json.bak": b'{"sessionId":'})
    return {SID: Expect(code="state_corrupt")}


@scenario(
    "load-or-create-corrupt",
    "load_or_create over a session whose main and bak are both corrupt",
    setup=_both_corrupt,
)
def load_or_create_corrupt(s: Session) -> None:
    s.load_or_create(SID)
    s.load(SID)


@scenario("load-or-create-new", "load_or_create of a new session, then a save")
def load_or_create_new(s: Session) -> None:
    s.load_or_create(SID, {"title": "new chat"})
    s.save(build_state(user("first"), metadata={"title": "new chat"}))


# --- pairing -----------------------------------------------------------------------
@scenario(
    "tool-call-only-message",
    "an assistant turn with tool calls and no text, its results, then more",
)
def tool_call_only_message(s: Session) -> None:
    base = [
        user("read my notes"),
        assistant("", CALL_A, CALL_B),
        tool_result(CALL_A, "notes"),
        tool_result(CALL_B, "results"),
    ]
    s.save(build_state(*base, running=True, checkpoint="after_tool_batch"))
    s.save(build_state(*base, assistant("done")))


@scenario(
    "approval-frozen-batch",
    "a dangerous call frozen for approval (pendingApproval), then approved and run",
)
def approval_frozen_batch(s: Session) -> None:
    asked = [user("clean up"), assistant("I will delete temp files", CALL_DANGER)]
    s.save(build_state(*asked, running=True, pending_approval=PendingApproval((CALL_DANGER,))))
    s.save(build_state(*asked, tool_result(CALL_DANGER, "3 files deleted"), assistant("done")))


@scenario(
    "unpaired-refused",
    "a save with an unanswered tool call is refused, then the paired one is saved",
)
def unpaired_refused(s: Session) -> None:
    s.save(build_state(user("one")))
    s.save(build_state(user("one"), assistant("", CALL_A), running=True))
    s.save(build_state(user("one"), assistant("", CALL_A), tool_result(CALL_A, "ok")))


@scenario("media-placeholder", "a state with an image part saves a placeholder, not bytes")
def media_placeholder(s: Session) -> None:
    image = MediaPart("image", "image/png", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ")
    s.save(build_state(Message("user", (TextPart("look"), image)), assistant("a pixel")))


@scenario(
    "hostile-session-ids",
    "ids with spaces, unicode and traversal attempts: mapped or refused, never escaping",
)
def hostile_session_ids(s: Session) -> None:
    for sid in ("sess 1", "会话-001", "../escape", "a/b", "..", "ok.id_-9"):
        s.save(build_state(user(f"I am {sid}"), session_id=sid))


# --- issue 10: states the catalogue never produced -------------------------------------
HOSTILE_IDS = ("../victim", "../../outside/victim", "/data/victim", "..", "a/../../victim")
"""Ids that name a path outside the base directory if joined as they come; the reference
refuses each (invalid_session_id) before any I/O (SPEC.md §4)."""


def _victim_beside_base(fs: FileSystem, base: str) -> Mapping[str, Expect]:
    """``victim.json`` (and its bak and marker) beside the base directory: what a
    storage that joins ``../victim`` into a path would reach."""
    parent = base.rsplit("/", 1)[0]
    victim = encode_bytes(build_state(user("not yours"), session_id="victim"))
    for suffix in ("", ".bak", ".ended"):
        write_bytes(fs, f"{parent}/victim.json{suffix}", victim if suffix != ".ended" else b"1")
    return {}


@scenario(
    "hostile-ids-every-method",
    "traversal ids through all six methods (save, load, load_or_create, exists, "
    "mark_not_resumable, delete), with a victim file beside the base directory",
    setup=_victim_beside_base,
)
def hostile_ids_every_method(s: Session) -> None:
    s.save(build_state(user("mine")))  # creates the base directory
    for sid in HOSTILE_IDS:
        s.save(build_state(user(f"I am {sid}"), session_id=sid))
        s.load(sid)
        s.load_or_create(sid)
        with contextlib.suppress(StateError):  # refused: the expected answer
            s.storage.exists(sid)
        s.mark_not_resumable(sid)
        s.delete(sid)
    s.load(SID)


def _bak_only_corrupt(fs: FileSystem, base: str) -> Mapping[str, Expect]:
    _seed_files(fs, base, {"s1.json.bak": b"\x00\x01 not a snapshot {"})
    return {SID: Expect(code="state_corrupt")}


@scenario(
    "missing-main-corrupt-bak",
    "load_or_create where main is absent and bak is corrupt: state_corrupt, never created over",
    setup=_bak_only_corrupt,
)
def missing_main_corrupt_bak(s: Session) -> None:
    s.load_or_create(SID)
    s.load(SID)


UNPAIRED = build_state(user("read my notes"), assistant("", CALL_A), running=True)
"""A history whose tool call was never answered (SPEC.md §3): written by an older,
looser program, it must load as corrupt, never be returned."""


def _unpaired_main(fs: FileSystem, base: str) -> Mapping[str, Expect]:
    _seed_files(fs, base, {"s1.json": encode_bytes(UNPAIRED)})
    return {SID: Expect(code="state_corrupt")}


@scenario(
    "unpaired-main",
    "main holds an unpaired history and there is no bak: state_corrupt, never returned",
    setup=_unpaired_main,
)
def unpaired_main(s: Session) -> None:
    s.load(SID)
    s.load_or_create(SID)
    s.load(SID)


def _unpaired_main_good_bak(fs: FileSystem, base: str) -> Mapping[str, Expect]:
    good = build_state(user("read my notes"), running=True, checkpoint="after_user_input")
    _seed_files(fs, base, {"s1.json": encode_bytes(UNPAIRED), "s1.json.bak": encode_bytes(good)})
    return {SID: Expect.saved(good)}


@scenario(
    "unpaired-main-good-bak",
    "main holds an unpaired history beside a good bak: load falls back to the bak",
    setup=_unpaired_main_good_bak,
)
def unpaired_main_good_bak(s: Session) -> None:
    s.load(SID)
    s.load_or_create(SID)
    s.load(SID)


@scenario(
    "colliding-ids",
    "'a b' and 'a_b' share the file name a_b.json: saving, marking or deleting one never "
    "changes what the other loads (I1)",
)
def colliding_ids(s: Session) -> None:
    s.save(build_state(user("I am a b"), session_id="a b"))
    s.save(build_state(user("I am a_b"), session_id="a_b"))
    s.load("a b")
    s.load("a_b")
    s.mark_not_resumable("a_b")
    s.delete("a_b")
    s.load("a b")

"""Codec and load fuzz (issue 10, acceptance 1): valid, mutated and random documents,
deep nesting, huge and odd numbers, non-UTF-8 and duplicate keys go through
``decode_bytes``, ``decode``, ``peek_*`` and ``FileStateStorage.load`` (as main beside a
good bak, alone, and as bak). Nothing but the typed :class:`StateError` may come out, a
document that decodes round-trips (SPEC §2), and load returns the decoded main or the
bak, never anything else.

The default run draws a few thousand inputs; the long run (``-m long``) at least
100,000. Inputs are drawn from a seeded ``random.Random``, so a failure names the seed
and the input index that replays it.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from crashpoint.core import (
    AgentState,
    Episode,
    ErrorCode,
    FileStateStorage,
    MediaPart,
    Message,
    ModelUsage,
    PendingApproval,
    PendingPlanReview,
    PendingRunCheckpoint,
    StateError,
    SystemPromptEntry,
    TextPart,
    ToolCall,
    ToolsEntry,
    as_persisted,
    decode,
    decode_bytes,
    encode_bytes,
    peek_schema_version,
    peek_session_id,
    state_is_paired,
)
from crashpoint.faultfs import MemoryFileSystem, makedirs, write_bytes

BASE = "/data/sessions"
SID = "fuzz-session"
DEFAULT_INPUTS = 2_000
LONG_INPUTS = 110_000

_WORDS = ["hi", "", "ok", "日本語", "\U0001f600", 'q"uote', "back\\slash", "[{", "\n\t", "\x00"]


# --- valid states ---------------------------------------------------------------------------


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 3)))


def _json_value(rng: random.Random, depth: int = 0) -> object:
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        return rng.choice(
            [None, True, False, 0, -1, 2**53 + 1, 1.5, -0.0, 1e300, _text(rng), 10**100]
        )
    if roll < 0.75:
        return [_json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {_text(rng) or "k": _json_value(rng, depth + 1) for _ in range(rng.randint(0, 3))}


def _messages(rng: random.Random, counter: Iterator[int]) -> list[Message]:
    out: list[Message] = []
    for _ in range(rng.randint(0, 4)):
        kind = rng.random()
        if kind < 0.3:
            calls = tuple(
                ToolCall(f"c{next(counter)}", _text(rng) or "t", json.dumps(_json_value(rng)))
                for _ in range(rng.randint(1, 3))
            )
            out.append(Message("assistant", (TextPart(_text(rng)),) * rng.randint(0, 1), calls))
            out.extend(
                Message("tool", (TextPart(_text(rng)),), tool_call_id=c.id)
                for c in rng.sample(calls, len(calls))
            )
        elif kind < 0.4:
            kind_ = rng.choice(["image", "audio", "file"])
            part = MediaPart(kind_, "x/y", rng.choice(["", "QUJD"]))
            out.append(Message("user", (part,)))
        else:
            role = rng.choice(["system", "user", "assistant"])
            metadata = {"m": _json_value(rng)} if rng.random() < 0.3 else None
            out.append(Message(role, (TextPart(_text(rng)),), metadata=metadata))  # type: ignore[arg-type]
    return out


def valid_state(rng: random.Random, sid: str = SID) -> AgentState:
    counter = iter(range(10**9))
    s = AgentState(sid, schema_version=rng.randint(0, 3))
    s.messages = _messages(rng, counter)
    if rng.random() < 0.2:
        calls = tuple(ToolCall(f"c{next(counter)}", "danger", "{}") for _ in range(2))
        s.messages.append(Message("assistant", (), calls))
        answered = rng.randint(0, 1)
        s.messages.extend(
            Message("tool", (TextPart("r"),), tool_call_id=c.id) for c in calls[:answered]
        )
        s.pending_approval = PendingApproval(calls[answered:])
    if rng.random() < 0.3:
        s.episodic_memories = [Episode("e", _text(rng), tuple(_messages(rng, counter)))]
    s.usages = [ModelUsage(rng.randint(0, 10**6), rng.randint(0, 9), rng.choice([None, "m"]))]
    s.metadata = {"k": _json_value(rng)}
    s.plan = rng.choice([None, {"steps": [_text(rng)]}])
    s.active_skills = rng.choice([None, [], ["a", _text(rng)]])
    s.is_running = rng.random() < 0.5
    s.total_loop_count = rng.randint(0, 5)
    s.current_loop_count = rng.randint(0, 5)
    s.last_error = rng.choice([None, _text(rng)])
    s.system_reminders = {"r": _text(rng)}
    s.system_prompt_history = [SystemPromptEntry(1, _text(rng))]
    s.tools_history = [ToolsEntry(1, ({"name": _text(rng)},))]
    if rng.random() < 0.2:
        s.pending_run_checkpoint = PendingRunCheckpoint("suspended", 1)
    if rng.random() < 0.2:
        s.pending_plan_review = PendingPlanReview({"p": _json_value(rng)})
    s.plan_review_approved = rng.random() < 0.5
    return s


# --- hostile documents --------------------------------------------------------------------

_ODD_NUMBERS = [
    "4.0",
    "4e0",
    "1E1",
    "3.0",
    "-0",
    "-0.0",
    "1e400",
    "-1e400",
    "1e-400",
    "0.1",
    "1.5",
    "9" * 5000,
    "-" + "9" * 5000,
    "1" + "0" * 4000,
    "1." + "0" * 5000,
    "1e99999999999",
    "00",
    "+1",
    ".5",
    "1.",
    "0x10",
    "NaN",
    "Infinity",
    "-Infinity",
    "1_0",
    "9007199254740993",
    "1.0000000000000001",
    "3.9999999999999999",
]


def _deep(rng: random.Random) -> bytes:
    depth = rng.choice([63, 64, 65, 66, 100, 480, 1000, rng.randint(1, 5000)])
    if rng.random() < 0.02:
        depth = 100_000
    opener, closer = rng.choice([("[", "]"), ('{"a":', "}"), ("[{", "}]")])
    body = opener * depth + rng.choice(["1", '"x"', ""]) + closer * depth
    where = rng.choice(["metadata", "plan", "x", "history"])
    return ('{"sessionId":"' + SID + '","' + where + '":' + body + "}").encode()


def _odd_number(rng: random.Random, valid: bytes) -> bytes:
    doc = json.loads(valid)
    key = rng.choice(
        ["schemaVersion", "totalLoopCount", "currentLoopCount", "isRunning", "metadata"]
    )
    marker = "@@NUMBER@@"
    doc[key] = marker if key != "metadata" else {"n": marker}
    text = json.dumps(doc, ensure_ascii=False).replace(f'"{marker}"', rng.choice(_ODD_NUMBERS))
    return text.encode()


def _duplicate_keys(rng: random.Random, valid: bytes) -> bytes:
    text = valid.decode()
    key = rng.choice(["sessionId", "schemaVersion", "history", "isRunning", "metadata"])
    value = rng.choice(['"other"', "4", "null", "[]", "{}", "true", '"' + SID + '"'])
    return (text[:-1] + f',"{key}":{value}' + "}").encode()


def _non_utf8(rng: random.Random, valid: bytes) -> bytes:
    bad = rng.choice([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\xe3"])
    at = rng.randrange(len(valid) + 1)
    if rng.random() < 0.3:
        return valid.decode().encode("utf-16")
    if rng.random() < 0.3:
        return valid.replace(b"fuzz", b"\\ud800\\udfff\\ud800", 1)
    return valid[:at] + bad + valid[at:]


def _mutate(rng: random.Random, valid: bytes) -> bytes:
    data = bytearray(valid)
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        at = rng.randrange(len(data) + 1)
        if op < 0.25 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif op < 0.45:
            data[at:at] = rng.choice([b"[", b"{", b"]", b"}", b'"', b",", b":", b"\\", b"-", b"e9"])
        elif op < 0.6:
            del data[at : at + rng.randint(1, 20)]
        elif op < 0.75:
            data = data[:at]
        elif op < 0.9 and data:
            start = rng.randrange(len(data))
            data[at:at] = data[start : start + rng.randint(1, 40)]
        else:
            data[at:at] = rng.choice([b"null", b"true", b"[]", b"{}", b'""', b"1e400", b"NaN"])
    return bytes(data)


def _random_bytes(rng: random.Random) -> bytes:
    n = rng.choice([0, 1, 2, 8, 64, 512])
    if rng.random() < 0.5:
        return bytes(rng.randrange(256) for _ in range(n))
    return "".join(rng.choice('{}[]":,0123456789.eE-+ tnrufals\\') for _ in range(n)).encode()


KINDS = ["valid", "mutated", "random", "deep", "number", "non-utf8", "duplicate-key"]


def fuzz_input(rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(KINDS)
    if kind == "random":
        return kind, _random_bytes(rng)
    if kind == "deep":
        return kind, _deep(rng)
    valid = encode_bytes(valid_state(rng))
    if kind == "valid":
        return kind, valid
    if kind == "mutated":
        return kind, _mutate(rng, valid)
    if kind == "number":
        return kind, _odd_number(rng, valid)
    if kind == "non-utf8":
        return kind, _non_utf8(rng, valid)
    return kind, _duplicate_keys(rng, valid)


# --- the oracle ---------------------------------------------------------------------------

GOOD_BAK = encode_bytes(AgentState.new(SID))
CODES = frozenset(c.value for c in ErrorCode)


def _typed(call: Callable[[], object]) -> object:
    """The call's result or its StateError; anything else propagates (the failure)."""
    try:
        return call()
    except StateError as exc:
        assert exc.code in CODES, exc.code
        return exc


def check_one(data: bytes) -> str:
    """Run every entry point on ``data``; return the outcome of decode_bytes."""
    decoded = _typed(lambda: decode_bytes(data))
    peek_schema_version(data)
    peek_session_id(data)
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        parsed = None
    if parsed is not None:
        _typed(lambda: decode(parsed))
    if isinstance(decoded, AgentState):  # SPEC §2 round trip
        again = decode_bytes(encode_bytes(decoded))
        assert again == as_persisted(decoded)
        assert encode_bytes(again) == encode_bytes(decoded)

    fs = MemoryFileSystem()
    makedirs(fs, BASE)
    write_bytes(fs, f"{BASE}/{SID}.json", data)
    alone = _typed(lambda: FileStateStorage(fs, BASE).load(SID))
    write_bytes(fs, f"{BASE}/{SID}.json.bak", GOOD_BAK)
    beside = _typed(lambda: FileStateStorage(fs, BASE).load(SID))
    loadable = (
        isinstance(decoded, AgentState) and decoded.session_id == SID and state_is_paired(decoded)
    )
    if loadable:
        assert alone == decoded and beside == decoded
    elif isinstance(beside, AgentState):
        assert beside == decode_bytes(GOOD_BAK)
    else:
        assert isinstance(beside, StateError)
        assert beside.code in (
            ErrorCode.SCHEMA_VERSION_UNSUPPORTED,
            ErrorCode.SESSION_ID_COLLISION,
        ), beside.code
    fs2 = MemoryFileSystem()
    makedirs(fs2, BASE)
    write_bytes(fs2, f"{BASE}/{SID}.json.bak", data)
    _typed(lambda: FileStateStorage(fs2, BASE).load(SID))
    return "decoded" if isinstance(decoded, AgentState) else str(getattr(decoded, "code", "?"))


def run_fuzz(count: int, seed: int) -> Counter[str]:
    rng = random.Random(seed)
    outcomes: Counter[str] = Counter()
    for index in range(count):
        kind, data = fuzz_input(rng)
        try:
            outcome = check_one(data)
        except BaseException as exc:  # report the replay coordinates, then fail
            raise AssertionError(
                f"seed {seed}, input {index} ({kind}, {len(data)} bytes): "
                f"{type(exc).__name__}: {exc}"[:2000]
            ) from exc
        outcomes[kind] += 1
        outcomes[f"outcome:{outcome}"] += 1
    return outcomes


def test_codec_fuzz_default_run() -> None:
    outcomes = run_fuzz(DEFAULT_INPUTS, seed=20261201)
    assert sum(outcomes[k] for k in KINDS) == DEFAULT_INPUTS
    assert all(outcomes[k] > 0 for k in KINDS)
    assert outcomes["outcome:decoded"] > 0 and outcomes["outcome:json_too_deep"] > 0


@pytest.mark.long
@pytest.mark.parametrize("seed", range(10))
def test_codec_fuzz_long_run(seed: int) -> None:
    # 10 seeds x 11,000 = 110,000 inputs (issue 10 acceptance 1: at least 100,000)
    outcomes = run_fuzz(LONG_INPUTS // 10, seed=seed)
    print(f"seed {seed}: {dict(sorted(outcomes.items()))}")
    assert sum(outcomes[k] for k in KINDS) == LONG_INPUTS // 10

"""The AgentState JSON codec: whitelist encode/decode with version migration.

SPEC §2 (seed §5, §6). The document is a JSON object with camelCase keys (SPEC §1).

* :func:`encode` always writes ``schemaVersion: 3`` first, then every field, and
  omits absent optional fields. The persistence encoding (the default) replaces
  each media part carrying binary data by a text placeholder (:func:`media_placeholder`).
* :func:`decode` reads schemaVersion (absent: 0; not a non-negative integer:
  ``schema_version_invalid``), refuses versions above 3 (``schema_version_unsupported``),
  then decodes each known field (wrong type: a field-specific ``*_type`` code),
  ignores unknown keys and fills defaults for absent ones. Versions 0, 1 and 2 read
  losslessly: fields were only ever added.
* Encode and decode are symmetric: :func:`encode` checks its output with the
  decoder, so whatever it returns decodes, and ``decode(encode(s)) == as_persisted(s)``.
* A document nested deeper than :data:`MAX_DEPTH` (64) levels is ``json_too_deep``
  on both sides, found without recursion; the result of every entry point depends on
  its input only, never on how deep the caller's own stack is.

Every error is a :class:`~crashpoint.core.StateError` with ``layer="codec"`` and
``retryability=never``.

Decisions where the spec is silent:

* Integers are JSON integers: floats (even ``3.0``) and booleans are not integers,
  for schemaVersion and for every integer field.
* ``null`` for an *optional* field (plan, activeSkills, lastError, the three pending-*
  records, a message's toolCalls/toolCallId/metadata, a usage's model) reads as
  absent; ``null`` elsewhere is a type error. ``schemaVersion: null`` is invalid.
* A message without ``contents`` reads as having no content parts; all other keys
  of nested records (role, part fields, tool-call fields, token counts, ...) are required.
* Strings must be Unicode scalar values (no lone surrogates): anything else cannot
  be written as UTF-8, so it is refused on both sides.
* Only totalLoopCount and currentLoopCount must be non-negative; other integers
  (token counts, loopCount of records) may be any integer, as the spec says ``int``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import re
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from itertools import accumulate, count
from operator import attrgetter, is_, sub
from types import MappingProxyType
from typing import Any, Final, NoReturn, ParamSpec, TypeVar

from ._errors import ErrorCode, Retryability, StateError
from ._state import (
    SCHEMA_VERSION,
    AgentState,
    Episode,
    MediaPart,
    Message,
    ModelUsage,
    Part,
    PendingApproval,
    PendingPlanReview,
    PendingRunCheckpoint,
    SystemPromptEntry,
    TextPart,
    ToolCall,
    ToolsEntry,
)

__all__ = [
    "CURRENT_VERSION",
    "as_persisted",
    "decode",
    "decode_bytes",
    "decode_memo",
    "encode",
    "encode_bytes",
    "media_placeholder",
    "peek_schema_version",
    "peek_session_id",
]

CURRENT_VERSION: Final = SCHEMA_VERSION
"""The schema version encode writes and the highest one decode accepts (3)."""

_ROLES: Final = ("system", "user", "assistant", "tool")
_MEDIA_TYPES: Final = ("image", "audio", "file")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_MISSING: Final = object()

MAX_INT_DIGITS: Final = 4000
"""The most decimal digits an integer may have (decision: Python converts at most 4300
between text and int by default, and the other runtime's numbers are doubles)."""

_INT_BOUND: Final = 10**MAX_INT_DIGITS
_LONG_DIGITS: Final = re.compile(rf"\d{{{MAX_INT_DIGITS + 1}}}")

MAX_DEPTH: Final = 64
"""The deepest nesting of arrays and objects, counted from the root, that decode reads
and encode writes (SPEC §2); deeper is ``json_too_deep``."""

_TO_PARENS: Final = str.maketrans("[{]}()", "(())  ")
_RUNS: Final = re.compile(r"\(+|\)+")

_T = TypeVar("_T")
_P = ParamSpec("_P")


# --------------------------------------------------------------------------- errors


def _error(code: ErrorCode, message: str, cause: BaseException | None = None) -> StateError:
    return StateError(code, message, layer="codec", retryability=Retryability.NEVER, cause=cause)


def _fail(code: ErrorCode, where: str, expected: str) -> NoReturn:
    raise _error(code, f"{where} must be {expected}")


# --------------------------------------------------------------------------- placeholders


def media_placeholder(part: MediaPart) -> TextPart:
    """The text part that stands for ``part`` in the persistence encoding (SPEC §2).

    The text is exactly ``f"[{part.type} omitted: {part.mime_type}]"``, e.g.
    ``"[image omitted: image/png]"``. Only parts with non-empty ``data`` are replaced.
    """
    return TextPart(f"[{part.type} omitted: {part.mime_type}]")


def _persisted_message(message: Message) -> Message:
    if not any(isinstance(p, MediaPart) and p.data for p in message.contents):
        return message
    contents = tuple(
        media_placeholder(p) if isinstance(p, MediaPart) and p.data else p for p in message.contents
    )
    return Message(
        message.role, contents, message.tool_calls, message.tool_call_id, message.metadata
    )


def as_persisted(state: AgentState) -> AgentState:
    """What ``decode(encode(state))`` returns for a valid ``state`` (SPEC §2 round trip).

    A snapshot of ``state`` with ``schema_version=3`` and each media part carrying
    binary data (in messages and in episodes) replaced by :func:`media_placeholder`.
    """
    out = state.snapshot()
    out.schema_version = CURRENT_VERSION
    out.messages = [_persisted_message(m) for m in state.messages]
    out.episodic_memories = [
        Episode(e.id, e.summary, tuple(_persisted_message(m) for m in e.messages))
        for e in state.episodic_memories
    ]
    return out


# --------------------------------------------------------------------------- value checks


def _is_int(value: object) -> bool:
    """An integer the format can hold: not a bool, at most 4000 decimal digits."""
    return (
        isinstance(value, int) and not isinstance(value, bool) and -_INT_BOUND < value < _INT_BOUND
    )


class _BigNumber:
    """An integer literal of more than :data:`MAX_INT_DIGITS` digits, kept unconverted
    (Python refuses to convert more than 4300 digits). A version this large is
    unsupported (or invalid when negative); anywhere else it is a type error."""

    __slots__ = ("digits", "negative")

    def __init__(self, literal: str) -> None:
        self.negative = literal.startswith("-")
        self.digits = len(literal.lstrip("-"))

    def __repr__(self) -> str:
        return f"{'-' if self.negative else ''}<an integer of {self.digits} digits>"


def _parse_int(literal: str) -> int | _BigNumber:
    if len(literal) > MAX_INT_DIGITS and len(literal.lstrip("-")) > MAX_INT_DIGITS:
        return _BigNumber(literal)
    return int(literal)


def _is_text(value: object) -> bool:
    """A str of Unicode scalar values (encodable as UTF-8)."""
    return isinstance(value, str) and (value.isascii() or _SURROGATE.search(value) is None)


class _NotJSON(Exception):
    pass


class _TooDeep(Exception):
    pass


def _copy_json_value(value: object, depth: int) -> Any:
    """A deep copy of a JSON value that sits ``depth`` levels from the root."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        if not _is_text(value):
            raise _NotJSON("a string with a lone surrogate")
        return value if type(value) is str else str.__str__(value)
    if isinstance(value, int):
        if not _is_int(value):
            raise _NotJSON(f"an integer of more than {MAX_INT_DIGITS} digits")
        return int(value)
    if isinstance(value, _BigNumber):
        raise _NotJSON(f"an integer of more than {MAX_INT_DIGITS} digits")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJSON(f"a non-finite number {value!r}")
        return float(value)
    if isinstance(value, list):
        if depth > MAX_DEPTH:
            raise _TooDeep
        return [_copy_json_value(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return _copy_json_object(value, depth)
    raise _NotJSON(f"a value of type {type(value).__name__}")


def _copy_json_object(value: Mapping[Any, Any], depth: int) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise _TooDeep
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not _is_text(key):
            raise _NotJSON(f"a key of type {type(key).__name__}")
        out[key if type(key) is str else str.__str__(key)] = _copy_json_value(item, depth + 1)
    return out


def _json_object(value: object, code: ErrorCode, where: str, depth: int) -> dict[str, Any]:
    """Validate a JSON object (dict of str to JSON values) that sits ``depth`` levels
    from the root (the root object is level 1) and return a deep copy."""
    if not isinstance(value, dict):
        _fail(code, where, "a JSON object")
    try:
        return _copy_json_object(value, depth)
    except _NotJSON as exc:
        raise _error(code, f"{where} must be a JSON object; it holds {exc}") from None
    except _TooDeep:
        raise _too_deep(f"{where} nests deeper than {MAX_DEPTH} levels") from None


def _too_deep(message: str) -> StateError:
    return _error(ErrorCode.JSON_TOO_DEEP, message)


def _text_too_deep(text: str) -> bool:
    """Whether a JSON text nests arrays and objects deeper than :data:`MAX_DEPTH`,
    found without recursion. Strings are skipped: escaped backslashes and quotes are
    dropped (pairs of backslashes first, as a JSON reader pairs them), then every
    other quote-delimited piece is inside a string. On a text that is not JSON the
    answer may be either; the parser then fails on its own."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    if "\\" in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    brackets = "".join(text.split('"')[::2]).translate(_TO_PARENS)
    if "(" * (MAX_DEPTH + 1) in brackets:
        return True
    depth = 0  # by runs of openers and closers: far fewer steps than brackets
    for match in _RUNS.finditer(brackets):
        run = match.group()
        if run[0] == "(":
            depth += len(run)
            if depth > MAX_DEPTH:
                return True
        else:
            depth -= len(run)  # below zero only where the parser stops anyway
    return False


_PARENS_AND_QUOTES: Final = bytes.maketrans(b"[{]}", b"(())")
_ONLY_BRACKETS_AND_QUOTES: Final = bytes(sorted(set(range(256)) - set(b'[]{}"')))


def _bytes_too_deep(data: bytes) -> bool:
    """:func:`_text_too_deep` of ``data.decode("utf-8")``, on the bytes (the same answer
    for UTF-8: brackets, quotes and backslashes are single bytes that never occur
    inside a multi-byte sequence), at C speed (issue 11). Every byte but brackets and
    quotes is dropped first; then adjacent quotes (an empty string, or two strings with
    no bracket between them) go, which keeps the parity of every later quote; what is
    left between quotes is inside strings. A balanced bracket sequence that vanishes
    by at most 64 rounds of deleting ``()`` nests at most 64 deep; any other is
    measured exactly (the largest count of openers minus closers over its prefixes),
    and, where that is at most 64, searched for the text scan's run of 65 openers."""
    if len(data) <= MAX_DEPTH:  # too short for 65 openers
        return False
    brackets = data.translate(_PARENS_AND_QUOTES, _ONLY_BRACKETS_AND_QUOTES)
    if brackets.count(b"(") <= MAX_DEPTH:  # = text.count("[") + text.count("{")
        return False
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
        brackets = data.translate(_PARENS_AND_QUOTES, _ONLY_BRACKETS_AND_QUOTES)
    brackets = brackets.replace(b'""', b"")
    if b'"' in brackets:
        brackets = b"".join(brackets.split(b'"')[::2])
    rest = brackets
    for _ in range(MAX_DEPTH):
        shorter = rest.replace(b"()", b"")
        if not shorter:
            return False
        if len(shorter) == len(rest):
            break
        rest = shorter
    # depth at the end of the i-th run of openers = openers so far - i closers
    runs = map(len, brackets.split(b")"))
    deepest: int = max(map(sub, accumulate(runs), count()))
    if deepest > MAX_DEPTH:
        return True
    if b"(" * (MAX_DEPTH + 1) in brackets:
        # 65 openers in a row after more closers than openers (not JSON): the text scan
        # says True only when no other character stands between them; ask it (rare)
        return _text_too_deep(data.decode("utf-8", "replace"))
    return False


def _object_too_deep(obj: object) -> bool:
    """Whether a parsed document nests dicts and lists deeper than :data:`MAX_DEPTH`,
    found without recursion (a cycle counts as too deep)."""
    stack: list[tuple[object, int]] = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return False


def _fresh_stack(fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``fn(*args, **kwargs)``; if it runs out of stack (the caller was already deep in
    a recursion), once more on a new thread's empty stack. Inputs are at most
    :data:`MAX_DEPTH` deep, so the result depends on the input only (SPEC §2)."""
    try:
        return fn(*args, **kwargs)
    except RecursionError:
        pass
    box: list[Any] = []

    def run() -> None:
        try:
            box.append((True, fn(*args, **kwargs)))
        except BaseException as exc:  # handed to the caller's thread
            box.append((False, exc))

    thread = threading.Thread(target=run, name="crashpoint-codec", daemon=True)
    thread.start()
    thread.join()
    ok, value = box[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- decode


def _get(obj: Mapping[str, Any], key: str) -> Any:
    return obj.get(key, _MISSING)


def _optional(obj: Mapping[str, Any], key: str) -> Any:
    """The value of an optional key; ``None`` when absent or ``null``."""
    return obj.get(key)


def _text(value: object, code: ErrorCode, where: str) -> str:
    if not _is_text(value):
        _fail(code, where, "a string")
    assert isinstance(value, str)
    return value


def _int(value: object, code: ErrorCode, where: str, *, non_negative: bool = False) -> int:
    if not _is_int(value) or (non_negative and value < 0):  # type: ignore[operator]
        _fail(code, where, "a non-negative integer" if non_negative else "an integer")
    assert isinstance(value, int)
    return value


def _bool(value: object, code: ErrorCode, where: str) -> bool:
    if not isinstance(value, bool):
        _fail(code, where, "a boolean")
    return value


def _record(value: object, code: ErrorCode, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        _fail(code, where, "a JSON object")
    return value


def _array(
    value: object,
    code: ErrorCode,
    where: str,
    item: Callable[[object, str], _T],
) -> list[_T]:
    """Decode an array (absent means empty), each element with ``item(value, where)``."""
    if value is _MISSING:
        return []
    if not isinstance(value, list):
        _fail(code, where, "an array")
    return [item(v, f"{where}[{i}]") for i, v in enumerate(value)]


_HUGE: Final = -1
"""What :func:`_whole_number` returns for a whole number too large to hold."""


def _whole_number(value: object) -> int | None:
    """SPEC §2: the integer a JSON number stands for when its value is a whole number
    (``4.0``, ``4e0`` and ``1E1`` are 4, 4 and 10), as the other runtime reads it;
    :data:`_HUGE` for a non-negative one too large to hold (more than 4000 digits, or
    a literal beyond the double range such as ``1e400``); None for anything else
    (negative, fractional, NaN, not a number, booleans)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if value < 0:
            return None
        return value if value < _INT_BOUND else _HUGE
    if isinstance(value, _BigNumber):
        return None if value.negative else _HUGE
    if isinstance(value, float):
        if value == math.inf:
            return _HUGE
        if not math.isfinite(value) or not value.is_integer() or value < 0:
            return None
        return int(value)
    return None


def _read_version(obj: Mapping[str, Any]) -> int:
    """The schema version (absent: 0). Raises schema_version_invalid, or
    schema_version_unsupported for any whole number above 3 (SPEC §2)."""
    if "schemaVersion" not in obj:
        return 0
    raw = obj["schemaVersion"]
    version = _whole_number(raw)
    if version is None:
        raise _error(
            ErrorCode.SCHEMA_VERSION_INVALID,
            f"schemaVersion must be a non-negative whole number, got {_describe(raw)}",
        )
    if version == _HUGE or version > CURRENT_VERSION:
        raise _error(
            ErrorCode.SCHEMA_VERSION_UNSUPPORTED,
            f"unsupported AgentState schemaVersion {_describe(raw)}; current is {CURRENT_VERSION}",
        )
    return version


def _describe(value: object) -> str:
    if isinstance(value, int) and not -(10**40) < value < 10**40:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1
        return f"{'-' if value < 0 else ''}<an integer of about {digits} digits>"
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:37]}..."


def _decode_part(value: object, where: str) -> Part:
    part = _record(value, ErrorCode.PART_TYPE, where)
    kind = _get(part, "type")
    if kind == "text":
        return TextPart(_text(_get(part, "text"), ErrorCode.PART_TYPE, f"{where}.text"))
    if kind in _MEDIA_TYPES:
        return MediaPart(
            kind,
            _text(_get(part, "mimeType"), ErrorCode.PART_TYPE, f"{where}.mimeType"),
            _text(_get(part, "data"), ErrorCode.PART_TYPE, f"{where}.data"),
        )
    _fail(ErrorCode.PART_TYPE, f"{where}.type", '"text", "image", "audio" or "file"')


def _decode_tool_call(value: object, where: str) -> ToolCall:
    call = _record(value, ErrorCode.TOOL_CALL_TYPE, where)
    return ToolCall(
        _text(_get(call, "id"), ErrorCode.TOOL_CALL_TYPE, f"{where}.id"),
        _text(_get(call, "name"), ErrorCode.TOOL_CALL_TYPE, f"{where}.name"),
        _text(_get(call, "arguments"), ErrorCode.TOOL_CALL_TYPE, f"{where}.arguments"),
    )


def _decode_message(value: object, where: str, depth: int = 4) -> Message:
    """A message at ``depth`` levels from the root (4 in history, 6 in an episode)."""
    msg = _record(value, ErrorCode.MESSAGE_TYPE, where)
    role = _get(msg, "role")
    if role not in _ROLES:
        _fail(ErrorCode.MESSAGE_ROLE_TYPE, f"{where}.role", "system, user, assistant or tool")
    contents = _array(
        _get(msg, "contents"), ErrorCode.MESSAGE_CONTENTS_TYPE, f"{where}.contents", _decode_part
    )
    raw_calls = _optional(msg, "toolCalls")
    tool_calls = _array(
        _MISSING if raw_calls is None else raw_calls,
        ErrorCode.MESSAGE_TOOL_CALLS_TYPE,
        f"{where}.toolCalls",
        _decode_tool_call,
    )
    tool_call_id = _optional(msg, "toolCallId")
    if tool_call_id is not None:
        tool_call_id = _text(
            tool_call_id, ErrorCode.MESSAGE_TOOL_CALL_ID_TYPE, f"{where}.toolCallId"
        )
    metadata = _optional(msg, "metadata")
    if metadata is not None:
        metadata = _json_object(
            metadata, ErrorCode.MESSAGE_METADATA_TYPE, f"{where}.metadata", depth + 1
        )
    if not contents and not tool_calls:
        raise _error(
            ErrorCode.MESSAGE_EMPTY_CONTENTS,
            f"{where} has neither a content part nor a tool call",
        )
    return Message(role, tuple(contents), tuple(tool_calls), tool_call_id, metadata)


def _decode_messages(value: object, where: str, depth: int = 3) -> list[Message]:
    """An array of messages at ``depth`` levels from the root (3 in history, 5 in an
    episode)."""
    return _array(
        value, ErrorCode.MESSAGES_TYPE, where, lambda v, w: _decode_message(v, w, depth + 1)
    )


def _decode_episode(value: object, where: str) -> Episode:
    ep = _record(value, ErrorCode.EPISODE_TYPE, where)
    messages = _get(ep, "messages")
    if not isinstance(messages, list):
        _fail(ErrorCode.EPISODE_TYPE, f"{where}.messages", "an array")
    return Episode(
        _text(_get(ep, "id"), ErrorCode.EPISODE_TYPE, f"{where}.id"),
        _text(_get(ep, "summary"), ErrorCode.EPISODE_TYPE, f"{where}.summary"),
        tuple(_decode_messages(messages, f"{where}.messages", 5)),
    )


def _decode_usage(value: object, where: str) -> ModelUsage:
    usage = _record(value, ErrorCode.USAGE_TYPE, where)
    model = _optional(usage, "model")
    return ModelUsage(
        _int(_get(usage, "inputTokens"), ErrorCode.USAGE_TYPE, f"{where}.inputTokens"),
        _int(_get(usage, "outputTokens"), ErrorCode.USAGE_TYPE, f"{where}.outputTokens"),
        None if model is None else _text(model, ErrorCode.USAGE_TYPE, f"{where}.model"),
    )


def _decode_prompt_entry(value: object, where: str) -> SystemPromptEntry:
    code = ErrorCode.SYSTEM_PROMPT_HISTORY_ENTRY_TYPE
    entry = _record(value, code, where)
    return SystemPromptEntry(
        _int(_get(entry, "loopCount"), code, f"{where}.loopCount"),
        _text(_get(entry, "systemPrompt"), code, f"{where}.systemPrompt"),
    )


def _decode_tools_entry(value: object, where: str) -> ToolsEntry:
    code = ErrorCode.TOOLS_HISTORY_ENTRY_TYPE
    entry = _record(value, code, where)
    loop_count = _int(_get(entry, "loopCount"), code, f"{where}.loopCount")
    tools = _get(entry, "tools")
    if not isinstance(tools, list):
        _fail(code, f"{where}.tools", "an array")
    return ToolsEntry(
        loop_count,
        tuple(_json_object(t, code, f"{where}.tools[{i}]", 5) for i, t in enumerate(tools)),
    )


def _decode_skill(value: object, where: str) -> str:
    return _text(value, ErrorCode.ACTIVE_SKILLS_TYPE, where)


def decode(obj: object) -> AgentState:
    """Decode a parsed JSON document into an :class:`AgentState` (SPEC §2).

    Args:
        obj: the parsed document (``json.loads`` output); it is not modified, and
            the result shares no mutable object with it.

    Returns:
        The state, with ``schema_version`` set to the version that was read
        (0 when the key is absent) and defaults (SPEC §1) for absent fields.

    Raises:
        StateError: ``layer="codec"``, checked in this order: ``json_invalid`` (not a
            JSON object); ``schema_version_invalid``; ``schema_version_unsupported``
            (greater than 3); then per field in SPEC §1 order a ``<field>_type`` code
            (e.g. ``pending_plan_review_type``) or ``message_empty_contents``.
            ``json_too_deep`` first when ``obj`` nests deeper than 64 levels (a
            reference cycle counts as too deep). Never anything else, however deep
            the caller's own stack.
    """
    return _fresh_stack(_decode_checked, obj)


def _decode_checked(obj: object) -> AgentState:
    if _object_too_deep(obj):
        raise _too_deep(f"the document nests deeper than {MAX_DEPTH} levels")
    return _decode(obj)


def _decode(obj: object) -> AgentState:
    """:func:`decode` of a document known to be at most :data:`MAX_DEPTH` deep."""
    if not isinstance(obj, dict):
        raise _error(
            ErrorCode.JSON_INVALID,
            f"an AgentState document must be a JSON object, got {type(obj).__name__}",
        )
    version = _read_version(obj)

    session_id = _text(_get(obj, "sessionId"), ErrorCode.SESSION_ID_TYPE, "sessionId")

    history = _get(obj, "history")
    if history is _MISSING:
        history = {}
    history = _record(history, ErrorCode.HISTORY_TYPE, "history")
    messages = _decode_messages(_get(history, "messages"), "history.messages")
    episodes = _array(
        _get(history, "episodicMemories"),
        ErrorCode.EPISODIC_MEMORIES_TYPE,
        "history.episodicMemories",
        _decode_episode,
    )

    usages = _array(_get(obj, "usages"), ErrorCode.USAGES_TYPE, "usages", _decode_usage)
    metadata = _get(obj, "metadata")
    if metadata is _MISSING:
        metadata = {}
    metadata = _json_object(metadata, ErrorCode.METADATA_TYPE, "metadata", 2)
    plan = _optional(obj, "plan")
    if plan is not None:
        plan = _json_object(plan, ErrorCode.PLAN_TYPE, "plan", 2)
    skills = _optional(obj, "activeSkills")
    if skills is not None:
        skills = _array(skills, ErrorCode.ACTIVE_SKILLS_TYPE, "activeSkills", _decode_skill)
    is_running = _flag(obj, "isRunning", ErrorCode.IS_RUNNING_TYPE)
    total = _count(obj, "totalLoopCount", ErrorCode.TOTAL_LOOP_COUNT_TYPE)
    current = _count(obj, "currentLoopCount", ErrorCode.CURRENT_LOOP_COUNT_TYPE)
    loop_usages = _array(
        _get(obj, "currentLoopUsages"),
        ErrorCode.CURRENT_LOOP_USAGES_TYPE,
        "currentLoopUsages",
        _decode_usage,
    )
    last_error = _optional(obj, "lastError")
    if last_error is not None:
        last_error = _text(last_error, ErrorCode.LAST_ERROR_TYPE, "lastError")
    reminders = _get(obj, "systemReminders")
    reminders = {} if reminders is _MISSING else _decode_reminders(reminders)
    prompts = _array(
        _get(obj, "systemPromptHistory"),
        ErrorCode.SYSTEM_PROMPT_HISTORY_TYPE,
        "systemPromptHistory",
        _decode_prompt_entry,
    )
    tools = _array(
        _get(obj, "toolsHistory"),
        ErrorCode.TOOLS_HISTORY_TYPE,
        "toolsHistory",
        _decode_tools_entry,
    )

    return AgentState(
        session_id,
        schema_version=version,
        messages=messages,
        episodic_memories=episodes,
        usages=usages,
        metadata=metadata,
        plan=plan,
        active_skills=skills,
        is_running=is_running,
        total_loop_count=total,
        current_loop_count=current,
        current_loop_usages=loop_usages,
        last_error=last_error,
        system_reminders=reminders,
        system_prompt_history=prompts,
        tools_history=tools,
        pending_run_checkpoint=_decode_checkpoint(_optional(obj, "pendingRunCheckpoint")),
        pending_approval=_decode_approval(_optional(obj, "pendingApproval")),
        pending_plan_review=_decode_plan_review(_optional(obj, "pendingPlanReview")),
        plan_review_approved=_flag(obj, "planReviewApproved", ErrorCode.PLAN_REVIEW_APPROVED_TYPE),
    )


def _decode_reminders(value: object) -> dict[str, str]:
    code = ErrorCode.SYSTEM_REMINDERS_TYPE
    reminders = _record(value, code, "systemReminders")
    out: dict[str, str] = {}
    for key, text in reminders.items():
        if not _is_text(key):
            _fail(code, "systemReminders", "a JSON object with string keys")
        out[key] = _text(text, code, f"systemReminders[{key!r}]")
    return out


def _decode_checkpoint(value: object) -> PendingRunCheckpoint | None:
    if value is None:
        return None
    code = ErrorCode.PENDING_RUN_CHECKPOINT_TYPE
    record = _record(value, code, "pendingRunCheckpoint")
    return PendingRunCheckpoint(
        _text(_get(record, "checkpoint"), code, "pendingRunCheckpoint.checkpoint"),
        _int(_get(record, "loopCount"), code, "pendingRunCheckpoint.loopCount"),
    )


def _decode_approval(value: object) -> PendingApproval | None:
    if value is None:
        return None
    code = ErrorCode.PENDING_APPROVAL_TYPE
    record = _record(value, code, "pendingApproval")
    calls = _get(record, "toolCalls")
    if not isinstance(calls, list):
        _fail(code, "pendingApproval.toolCalls", "an array")
    return PendingApproval(
        tuple(_decode_tool_call(c, f"pendingApproval.toolCalls[{i}]") for i, c in enumerate(calls))
    )


def _decode_plan_review(value: object) -> PendingPlanReview | None:
    if value is None:
        return None
    code = ErrorCode.PENDING_PLAN_REVIEW_TYPE
    record = _record(value, code, "pendingPlanReview")
    return PendingPlanReview(_json_object(_get(record, "plan"), code, "pendingPlanReview.plan", 3))


def _flag(obj: Mapping[str, Any], key: str, code: ErrorCode) -> bool:
    """A boolean field that defaults to false."""
    value = _get(obj, key)
    return False if value is _MISSING else _bool(value, code, key)


def _count(obj: Mapping[str, Any], key: str, code: ErrorCode) -> int:
    """A non-negative integer field that defaults to 0."""
    value = _get(obj, key)
    return 0 if value is _MISSING else _int(value, code, key, non_negative=True)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def decode_bytes(data: bytes) -> AgentState:
    """Decode UTF-8 JSON bytes (a state file's content) into an :class:`AgentState`.

    A fast path (:mod:`crashpoint.core._fastdecode`, msgspec) returns the state for the
    documents it is sure of and otherwise leaves the bytes to the reference decoder
    below, so the result and every error are the reference decoder's (issue 11).
    Inside :func:`decode_memo`, bytes already decoded are not decoded again.

    Raises:
        StateError: ``json_too_deep`` (``layer="codec"``) when the document nests
            deeper than 64 levels (SPEC §2), found before parsing, so the result does
            not depend on the caller's stack depth; ``json_invalid`` when the bytes
            are not UTF-8 or not JSON (``NaN``/``Infinity`` included); otherwise any
            error of :func:`decode`.
    """
    memo = _MEMO
    if memo is not None and type(data) is bytes:
        return memo.decode(data)
    return _decode_bytes_any(data)


_FAST: Any = None
"""``crashpoint.core._fastdecode`` once imported: on first use, as msgspec's import
costs about as much as the rest of ``crashpoint.core`` (commands that decode nothing,
such as ``explore --list``, never pay it)."""


def _fast() -> Any:
    global _FAST
    if _FAST is None:
        from . import _fastdecode

        _FAST = _fastdecode
    return _FAST


def _decode_bytes_any(data: bytes) -> AgentState:
    """The fast path, else the reference decoder on a stack that cannot run out."""
    state: AgentState | None = (_FAST or _fast()).fast_decode(data, _json_object)
    if state is None:
        return _fresh_stack(_decode_bytes, data)
    return state


_LAST_UNPARSED: list[bytes | None] = [None]
"""The last ``bytes`` object :func:`_parse` refused (one slot): the peeks that storage
runs right after a failed decode of the same object answer at once. Exact: bytes are
immutable and the slot holds the object alive, so ``is`` means the same content."""


def _parse(data: bytes) -> Any:
    """The parsed JSON document; raises json_too_deep or json_invalid."""
    try:
        return _parse_exact(data)
    except StateError:
        if type(data) is bytes:
            _LAST_UNPARSED[0] = data
        raise


def _parse_exact(data: bytes) -> Any:
    raw = bytes(data)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _error(ErrorCode.JSON_INVALID, f"not UTF-8 JSON: {exc}", cause=exc) from exc
    if _bytes_too_deep(raw):
        raise _too_deep(f"the document nests deeper than {MAX_DEPTH} levels")
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        # the first error from the left: no integer literal before it is over the
        # int/str conversion limit (that one would have come first), so the reference
        # parse below (parse_int) stops at the same place with the same message
        raise _error(ErrorCode.JSON_INVALID, f"not UTF-8 JSON: {exc}", cause=exc) from exc
    except ValueError:  # NaN/Infinity, or an integer over the conversion limit
        return _loads_reference(text)
    shown = obj.get("schemaVersion") if type(obj) is dict else obj
    if type(shown) is int and not -_INT_BOUND < shown < _INT_BOUND:
        # an integer of 4001-4300 digits as the schemaVersion or as the document: the
        # reference reads it as a _BigNumber, which its error message describes
        # differently (anywhere else both forms give the same error)
        return _loads_reference(text)
    return obj


def _loads_reference(text: str) -> Any:
    """json.loads as the reference decoder calls it. Any other integer of 4001-4300
    digits reads the same with or without ``parse_int``: the decoder refuses both
    forms with the same message, and the peeks read both as too large."""
    # An integer literal of more than 4000 digits would make json raise ValueError
    # (Python's int/str conversion limit): keep it unconverted instead.
    parse_int = _parse_int if _LONG_DIGITS.search(text) else None
    try:
        return json.loads(text, parse_constant=_reject_constant, parse_int=parse_int)
    except ValueError as exc:
        raise _error(ErrorCode.JSON_INVALID, f"not UTF-8 JSON: {exc}", cause=exc) from exc


def _decode_bytes(data: bytes) -> AgentState:
    return _decode(_parse(data))


def _opens_an_object(data: bytes) -> bool:
    """Whether the first byte after JSON whitespace is ``{`` (else json.loads fails or
    returns something other than an object)."""
    return data[:1] == b"{" or data.lstrip(b" \t\n\r")[:1] == b"{"


def _fast_peek(data: bytes) -> tuple[Any, Any] | bool:
    """The raw top-level ``(schemaVersion, sessionId)`` (None when absent) of a
    ``bytes`` document the reference parser accepts; False for one it refuses; True
    when unsure (the peeks then parse as the reference does)."""
    if data is _LAST_UNPARSED[0] or not _opens_an_object(data):
        return False
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return False
    if _bytes_too_deep(data):
        return False
    peeked: tuple[Any, Any] | None = (_FAST or _fast()).fast_peek(data)
    return True if peeked is None else peeked


def peek_schema_version(data: bytes) -> int | None:
    """The ``schemaVersion`` of a JSON document as decode reads it, without decoding
    the rest (SPEC §2: a whole number in any spelling, ``4.0`` and ``1E1`` included).

    Returns ``None`` when ``data`` is not a UTF-8 JSON object (or nests deeper than
    64 levels) or its schemaVersion is absent or not a whole number (booleans,
    fractions, strings). A negative whole number is returned as it is; one too large
    to hold (more than 4000 digits, ``1e400``) as ``sys.maxsize``. Never raises. Used
    by the harness's V1 checker (SPEC §8). Cheap on ``bytes``: the document is
    validated and skipped by msgspec, not built (issue 11).
    """
    if type(data) is bytes:
        peeked = _fast_peek(data)
        if peeked is False:
            return None
        if peeked is not True and type(peeked[0]) is not float:
            return _version_of(peeked[0])
    try:
        obj = _fresh_stack(_parse, data)
    except (StateError, TypeError):
        return None
    if not isinstance(obj, dict) or "schemaVersion" not in obj:
        return None
    return _version_of(obj["schemaVersion"])


def _version_of(raw: object) -> int | None:
    """:func:`peek_schema_version` of a document whose schemaVersion is ``raw``."""
    version = _whole_number(raw)
    if version is None:
        if _is_int(raw) or (isinstance(raw, float) and raw.is_integer()):
            return int(raw)  # type: ignore[call-overload, no-any-return]  # negative
        return None
    return sys.maxsize if version == _HUGE else version


def peek_session_id(data: bytes) -> str | None:
    """The ``sessionId`` string of a JSON document, without decoding the rest.

    Returns ``None`` when ``data`` is not a UTF-8 JSON object (or nests deeper than 64
    levels) or its sessionId is absent or not a string. Never raises. Storage uses it to
    tell a file of another session (SPEC §4, ``session_id_collision``).
    """
    if type(data) is bytes:
        peeked = _fast_peek(data)
        if peeked is False:
            return None
        if peeked is not True:
            session_id = peeked[1]
            return session_id if type(session_id) is str else None
    try:
        obj = _fresh_stack(_parse, data)
    except (StateError, TypeError):
        return None
    if not isinstance(obj, dict):
        return None
    session_id = obj.get("sessionId")
    return session_id if _is_text(session_id) else None


# --------------------------------------------------------------------------- memo


class DecodeMemo:
    """A content-addressed memo of :func:`decode_bytes` (see :func:`decode_memo`).

    Keyed by the bytes themselves (equal bytes, equal key; a ``bytes`` hash is computed
    once per object). Holds at most ``max_entries`` results and at most ``max_bytes``
    bytes of keys; the least recently used go first. ``hits`` and ``misses`` count
    calls.
    """

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.hits = 0
        self.misses = 0
        self._entries: dict[bytes, AgentState | tuple[Any, ...]] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def decode(self, data: bytes) -> AgentState:
        """:func:`decode_bytes` of ``data``: a snapshot of the state decoded before
        (frozen values shared), a fresh equal StateError, or a first decode."""
        with self._lock:
            entry = self._entries.pop(data, None)
            if entry is not None:
                self._entries[data] = entry  # most recently used last
                self.hits += 1
        if entry is None:
            return self._first(data)
        if isinstance(entry, AgentState):
            return entry.snapshot()
        raise _rebuilt_error(entry)

    def _first(self, data: bytes) -> AgentState:
        with self._lock:
            self.misses += 1
        try:
            state = _decode_bytes_any(data)
        except StateError as exc:
            if type(exc) is StateError:
                self._put(data, _error_fields(exc))
            raise
        self._put(data, state)
        return state.snapshot()

    def _put(self, data: bytes, entry: AgentState | tuple[Any, ...]) -> None:
        size = len(data)
        if size > self.max_bytes or self.max_entries < 1:
            return
        with self._lock:
            if data in self._entries:
                return
            while self._entries and (
                len(self._entries) >= self.max_entries or self._bytes + size > self.max_bytes
            ):
                oldest = next(iter(self._entries))
                del self._entries[oldest]
                self._bytes -= len(oldest)
            self._entries[data] = entry
            self._bytes += size

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


def _error_fields(exc: StateError) -> tuple[Any, ...]:
    return (
        exc.code,
        exc.message,
        exc.layer,
        exc.retryability,
        exc.cause,
        exc.__cause__,
        exc.__suppress_context__,
    )


def _rebuilt_error(fields: tuple[Any, ...]) -> StateError:
    code, message, layer, retryability, cause, direct_cause, suppress = fields
    exc = StateError(code, message, layer=layer, retryability=retryability, cause=cause)
    exc.__cause__ = direct_cause
    exc.__suppress_context__ = suppress
    return exc


_MEMO: DecodeMemo | None = None
_MEMO_LOCK: Final = threading.Lock()

DEFAULT_MEMO_ENTRIES: Final = 4096
"""At most this many decoded documents in a :func:`decode_memo`."""

DEFAULT_MEMO_BYTES: Final = 16 * 2**20
"""At most this many bytes of documents (16 MiB) in a :func:`decode_memo`; a decoded
state takes about 2.5 times its document's size (a 140 KB state of 1,000 messages:
about 0.33 MiB), so the memo holds about 55 MiB at most."""


@contextlib.contextmanager
def decode_memo(
    max_entries: int = DEFAULT_MEMO_ENTRIES, max_bytes: int = DEFAULT_MEMO_BYTES
) -> Iterator[DecodeMemo]:
    """While active, :func:`decode_bytes` of ``bytes`` already decoded returns a
    snapshot of the state decoded then (:meth:`AgentState.snapshot`: the lists and
    dicts are the caller's own, frozen values are shared), or raises a fresh
    :class:`StateError` equal to the one raised then (same code, message, layer,
    retryability, cause and ``__cause__``). Off by default; one memo per exploration
    (issue 11). Nested uses share the outermost memo; it is emptied when the outermost
    exits. ``bytearray`` and ``memoryview`` inputs bypass it.

    Args:
        max_entries: at most this many results are kept (least recently used go first).
        max_bytes: at most this many bytes of documents are kept; a larger document is
            decoded without being kept.

    Yields:
        The :class:`DecodeMemo` (its ``hits`` and ``misses`` count decode calls).
    """
    global _MEMO
    with _MEMO_LOCK:
        outer = _MEMO
        if outer is None:
            _MEMO = DecodeMemo(max_entries, max_bytes)
        memo = _MEMO
    assert memo is not None
    try:
        yield memo
    finally:
        if outer is None:
            with _MEMO_LOCK:
                _MEMO = None
            memo.clear()


# --------------------------------------------------------------------------- encode


class _Encoder:
    """Builds the document of a state (:meth:`document`). ``exact`` stays True while
    every value it holds is plain JSON (:func:`_plain_json`), the condition under
    which msgspec writes the bytes :func:`json.dumps` writes (:func:`_dumps`);
    ``frozen`` while every message, part, tool call and episode is of exactly its
    frozen class, with tuples and read-only mappings inside (see :func:`_refs`)."""

    def __init__(self, persistence: bool) -> None:
        self.persistence = persistence
        self.exact = True
        self.frozen = True

    def part(self, part: object, where: str) -> dict[str, Any]:
        if isinstance(part, TextPart):
            return {"type": "text", "text": part.text}
        if not isinstance(part, MediaPart):
            _fail(ErrorCode.PART_TYPE, where, "a TextPart or MediaPart")
        if part.type not in _MEDIA_TYPES:
            _fail(ErrorCode.PART_TYPE, f"{where}.type", '"image", "audio" or "file"')
        if not _is_text(part.mime_type) or not _is_text(part.data):
            _fail(ErrorCode.PART_TYPE, where, "a media part with string mime_type and data")
        if self.persistence and part.data:
            return {"type": "text", "text": media_placeholder(part).text}
        return {"type": part.type, "mimeType": part.mime_type, "data": part.data}

    def tool_call(self, call: object, where: str) -> dict[str, Any]:
        if not isinstance(call, ToolCall):
            _fail(ErrorCode.TOOL_CALL_TYPE, where, "a ToolCall")
        if type(call) is not ToolCall:
            self.frozen = False
        if not type(call.id) is type(call.name) is type(call.arguments) is str:
            self.exact = False
        return {"id": call.id, "name": call.name, "arguments": call.arguments}

    def message(self, message: object, where: str, index: int, depth: int) -> dict[str, Any]:
        """The message at ``where[index]``; the path is formatted only for an error (the
        hot loop of a big history)."""
        if not isinstance(message, Message):
            _fail(ErrorCode.MESSAGE_TYPE, f"{where}[{index}]", "a Message")
        if (
            type(message) is not Message
            or type(message.contents) is not tuple
            or type(message.tool_calls) is not tuple
            or not (message.metadata is None or type(message.metadata) is MappingProxyType)
        ):
            self.frozen = False
        role = message.role
        if type(role) is not str:
            self.exact = False
        contents: list[dict[str, Any]] = []
        for i, p in enumerate(message.contents):
            if type(p) is TextPart:  # the common case, as part() encodes it
                text = p.text
                if type(text) is not str:
                    self.exact = False
                contents.append({"type": "text", "text": text})
            else:
                if type(p) is not MediaPart or not type(p.type) is type(p.mime_type) is str:
                    self.frozen = False
                item = self.part(p, f"{where}[{index}].contents[{i}]")
                if self.exact and not _plain_json(item):
                    self.exact = False
                contents.append(item)
        out: dict[str, Any] = {"role": role, "contents": contents}
        if message.tool_calls:
            out["toolCalls"] = [
                self.tool_call(c, f"{where}[{index}].toolCalls[{i}]")
                for i, c in enumerate(message.tool_calls)
            ]
        if message.tool_call_id is not None:
            if type(message.tool_call_id) is not str:
                self.exact = False
            out["toolCallId"] = message.tool_call_id
        if message.metadata is not None:
            out["metadata"] = metadata = _json_object(
                dict(message.metadata),
                ErrorCode.MESSAGE_METADATA_TYPE,
                f"{where}[{index}].metadata",
                depth + 1,
            )
            if metadata and self.exact and not _plain_json(metadata):
                self.exact = False
        return out

    def messages(
        self, messages: object, code: ErrorCode, where: str, depth: int
    ) -> list[dict[str, Any]]:
        """Messages of an array at ``depth`` levels from the root (3 or 5)."""
        message = self.message
        return [
            message(m, where, i, depth + 1) for i, m in enumerate(_sequence(messages, code, where))
        ]

    def episode(self, episode: object, where: str) -> dict[str, Any]:
        if not isinstance(episode, Episode):
            _fail(ErrorCode.EPISODE_TYPE, where, "an Episode")
        if type(episode) is not Episode or type(episode.messages) is not tuple:
            self.frozen = False
        if type(episode.id) is not str or type(episode.summary) is not str:
            self.exact = False
        return {
            "id": episode.id,
            "summary": episode.summary,
            "messages": self.messages(
                episode.messages, ErrorCode.EPISODE_TYPE, f"{where}.messages", 5
            ),
        }

    def document(self, state: AgentState) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "schemaVersion": CURRENT_VERSION,
            "sessionId": state.session_id,
            "history": {
                "messages": self.messages(
                    state.messages, ErrorCode.MESSAGES_TYPE, "history.messages", 3
                ),
                "episodicMemories": []
                if _empty_list(state.episodic_memories)
                else [
                    self.episode(e, f"history.episodicMemories[{i}]")
                    for i, e in enumerate(
                        _sequence(
                            state.episodic_memories,
                            ErrorCode.EPISODIC_MEMORIES_TYPE,
                            "history.episodicMemories",
                        )
                    )
                ],
            },
            "usages": []
            if _empty_list(state.usages)
            else _usages(state.usages, ErrorCode.USAGES_TYPE, "usages"),
            "metadata": {}
            if type(state.metadata) is dict and not state.metadata
            else _json_object(state.metadata, ErrorCode.METADATA_TYPE, "metadata", 2),
        }
        if state.plan is not None:
            obj["plan"] = _json_object(state.plan, ErrorCode.PLAN_TYPE, "plan", 2)
        if state.active_skills is not None:
            obj["activeSkills"] = list(
                _sequence(state.active_skills, ErrorCode.ACTIVE_SKILLS_TYPE, "activeSkills")
            )
        obj["isRunning"] = state.is_running
        obj["totalLoopCount"] = state.total_loop_count
        obj["currentLoopCount"] = state.current_loop_count
        obj["currentLoopUsages"] = (
            []
            if _empty_list(state.current_loop_usages)
            else _usages(
                state.current_loop_usages, ErrorCode.CURRENT_LOOP_USAGES_TYPE, "currentLoopUsages"
            )
        )
        if state.last_error is not None:
            obj["lastError"] = state.last_error
        reminders = state.system_reminders
        if not isinstance(reminders, dict):
            _fail(ErrorCode.SYSTEM_REMINDERS_TYPE, "systemReminders", "a dict of str to str")
        obj["systemReminders"] = dict(reminders)
        obj["systemPromptHistory"] = (
            []
            if _empty_list(state.system_prompt_history)
            else [
                _prompt_entry(e, f"systemPromptHistory[{i}]")
                for i, e in enumerate(
                    _sequence(
                        state.system_prompt_history,
                        ErrorCode.SYSTEM_PROMPT_HISTORY_TYPE,
                        "systemPromptHistory",
                    )
                )
            ]
        )
        obj["toolsHistory"] = (
            []
            if _empty_list(state.tools_history)
            else [
                _tools_entry(e, f"toolsHistory[{i}]")
                for i, e in enumerate(
                    _sequence(state.tools_history, ErrorCode.TOOLS_HISTORY_TYPE, "toolsHistory")
                )
            ]
        )
        if state.pending_run_checkpoint is not None:
            cp = state.pending_run_checkpoint
            if not isinstance(cp, PendingRunCheckpoint):
                _fail(ErrorCode.PENDING_RUN_CHECKPOINT_TYPE, "pendingRunCheckpoint", "a record")
            obj["pendingRunCheckpoint"] = {"checkpoint": cp.checkpoint, "loopCount": cp.loop_count}
        if state.pending_approval is not None:
            pa = state.pending_approval
            if not isinstance(pa, PendingApproval):
                _fail(ErrorCode.PENDING_APPROVAL_TYPE, "pendingApproval", "a PendingApproval")
            obj["pendingApproval"] = {
                "toolCalls": [
                    self.tool_call(c, f"pendingApproval.toolCalls[{i}]")
                    for i, c in enumerate(pa.tool_calls)
                ]
            }
        if state.pending_plan_review is not None:
            pr = state.pending_plan_review
            if not isinstance(pr, PendingPlanReview):
                _fail(ErrorCode.PENDING_PLAN_REVIEW_TYPE, "pendingPlanReview", "a record")
            obj["pendingPlanReview"] = {
                "plan": _json_object(
                    dict(pr.plan), ErrorCode.PENDING_PLAN_REVIEW_TYPE, "pendingPlanReview.plan", 3
                )
            }
        obj["planReviewApproved"] = state.plan_review_approved
        if self.exact:  # messages, episodes and pendingApproval are done
            self.exact = _plain_json([obj[key] for key in _CHECKED_KEYS if key in obj])
        return obj


_CHECKED_KEYS: Final = (
    "sessionId",
    "usages",
    "metadata",
    "plan",
    "activeSkills",
    "isRunning",
    "totalLoopCount",
    "currentLoopCount",
    "currentLoopUsages",
    "lastError",
    "systemReminders",
    "systemPromptHistory",
    "toolsHistory",
    "pendingRunCheckpoint",
    "pendingPlanReview",
    "planReviewApproved",
)
"""The keys of a document whose values :meth:`_Encoder.document` checks with
:func:`_plain_json` once it is built (the others are the constant schemaVersion, and
history and pendingApproval, checked as they are built)."""


def _plain_json(value: object) -> bool:
    """Whether ``value`` is plain JSON: dicts with str keys, lists, str, int (at most
    :data:`MAX_INT_DIGITS` digits), bool and None, each of exactly that type (no
    subclass, no float, no tuple), nested at most :data:`MAX_DEPTH` levels (so a cycle
    is not plain). For such a document msgspec writes exactly the bytes of
    ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))`` (see :func:`_dumps`)."""
    stack: list[tuple[Any, int]] = [([value], 0)]
    while stack:
        container, depth = stack.pop()
        if depth > MAX_DEPTH + 1:
            return False
        if type(container) is dict:
            if not all(type(key) is str for key in container):
                return False
            container = container.values()
        for item in container:
            kind = type(item)
            if kind is str or kind is bool or item is None:
                continue
            if kind is dict or kind is list:
                if item:  # empty: plain
                    stack.append((item, depth + 1))
            elif kind is not int or not -_INT_BOUND < item < _INT_BOUND:
                return False
    return True


def _empty_list(value: object) -> bool:
    """An empty list, which encodes as ``[]`` (the common case, without the loop)."""
    return type(value) is list and not value


def _sequence(value: object, code: ErrorCode, where: str) -> list[Any] | tuple[Any, ...]:
    if not isinstance(value, (list, tuple)):
        _fail(code, where, "a list")
    return value


def _usages(usages: object, code: ErrorCode, where: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, usage in enumerate(_sequence(usages, code, where)):
        if not isinstance(usage, ModelUsage):
            _fail(ErrorCode.USAGE_TYPE, f"{where}[{i}]", "a ModelUsage")
        item: dict[str, Any] = {
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
        }
        if usage.model is not None:
            item["model"] = usage.model
        out.append(item)
    return out


def _prompt_entry(entry: object, where: str) -> dict[str, Any]:
    if not isinstance(entry, SystemPromptEntry):
        _fail(ErrorCode.SYSTEM_PROMPT_HISTORY_ENTRY_TYPE, where, "a SystemPromptEntry")
    return {"loopCount": entry.loop_count, "systemPrompt": entry.system_prompt}


def _tools_entry(entry: object, where: str) -> dict[str, Any]:
    code = ErrorCode.TOOLS_HISTORY_ENTRY_TYPE
    if not isinstance(entry, ToolsEntry):
        _fail(code, where, "a ToolsEntry")
    return {
        "loopCount": entry.loop_count,
        "tools": [
            _json_object(dict(t), code, f"{where}.tools[{i}]", 5) for i, t in enumerate(entry.tools)
        ],
    }


def encode(state: AgentState, *, persistence: bool = True) -> dict[str, Any]:
    """Encode ``state`` as a JSON-ready dict with camelCase keys (SPEC §2).

    ``schemaVersion`` is always 3 and comes first; absent optional fields (plan,
    activeSkills, lastError, pendingRunCheckpoint, pendingApproval, pendingPlanReview;
    a message's empty toolCalls, None toolCallId and metadata; a usage's None model)
    are omitted. With ``persistence=True`` (the form written to disk) each media part
    with non-empty ``data`` becomes :func:`media_placeholder`. The result shares no
    mutable object with ``state``.

    Raises:
        StateError: ``layer="codec"``: whatever :func:`decode` would raise on the
            result (the output is checked with the decoder, so encode accepts exactly
            what decode reads back), e.g. ``message_empty_contents`` for a message with
            neither contents nor tool calls, ``metadata_type`` for a non-JSON value,
            or ``json_too_deep`` for a value nested deeper than 64 levels from the
            document's root (SPEC §2).
    """
    if not isinstance(state, AgentState):
        raise TypeError(f"encode() needs an AgentState, got {type(state).__name__}")
    return _fresh_stack(_encode, state, persistence)


def _encode(state: AgentState, persistence: bool) -> dict[str, Any]:
    encoder = _Encoder(persistence)
    obj = encoder.document(state)
    _checked_bytes(obj, encoder.exact)
    return obj


def encode_bytes(state: AgentState, *, persistence: bool = True) -> bytes:
    """Encode ``state`` as canonical UTF-8 JSON bytes (a state file's content).

    ``json.dumps(encode(state), ensure_ascii=False, separators=(",", ":"),
    allow_nan=False)`` encoded as UTF-8: no whitespace, keys in encode order, so the
    same state always gives the same bytes, and a decoded state re-encodes to
    identical bytes (SPEC §2).

    Raises:
        StateError: as :func:`encode`.
    """
    if not isinstance(state, AgentState):
        raise TypeError(f"encode() needs an AgentState, got {type(state).__name__}")
    if type(state) is not AgentState:
        return _fresh_stack(_encode_bytes, state, persistence)[0]
    refs = _refs(state)
    if refs is None:
        return _fresh_stack(_encode_bytes, state, persistence)[0]
    last = _LAST_ENCODED
    if (
        last is not None
        and last[0] is persistence
        and len(refs) == len(last[1])
        and all(map(is_, refs, last[1]))
    ):
        return last[2]
    data, memo = _fresh_stack(_encode_bytes, state, persistence)
    if memo:
        _remember(state, refs, persistence, data)
    return data


_LAST_ENCODED: tuple[bool, tuple[Any, ...], bytes] | None = None
"""The last encoding :func:`encode_bytes` may reuse: ``(persistence, refs, data)``."""

_IMMUTABLE_SCALARS: Final = frozenset({str, int, bool, type(None)})


_SCALARS: Final = attrgetter(
    "session_id",
    "is_running",
    "total_loop_count",
    "current_loop_count",
    "last_error",
    "plan_review_approved",
)
_FROZEN: Final = attrgetter("pending_run_checkpoint", "pending_approval", "pending_plan_review")
_LISTS: Final = attrgetter(
    "messages",
    "episodic_memories",
    "usages",
    "current_loop_usages",
    "system_prompt_history",
    "tools_history",
)
_OTHERS: Final = attrgetter("active_skills", "metadata", "plan", "system_reminders")
_SEQUENCE_TYPES: Final = frozenset({list, tuple})
_END: Final = object()
"""Ends each list and dict in :func:`_refs`: a position holds it in both or neither."""


def _refs(state: AgentState) -> tuple[Any, ...] | None:
    """Every object the encoding of ``state`` reads from it, in order: its scalars,
    its frozen values, the items of its lists, the keys and values of its dicts; None
    unless its lists are lists or tuples and its dicts dicts (exactly: iterating them
    has no effect and gives what the encoder reads). Two states whose refs are the same
    objects, position by position, encode to the same bytes when every one of those
    objects is immutable (:func:`_remember` checks), as ``snapshot()`` holds frozen
    values to be (issue 11: a harness encodes the state it hands to a storage's save,
    which encodes it again)."""
    lists = _LISTS(state)
    skills, metadata, plan, reminders = _OTHERS(state)
    if (
        type(metadata) is not dict
        or type(reminders) is not dict
        or not (plan is None or type(plan) is dict)
        or not (skills is None or type(skills) is list or type(skills) is tuple)
        or not _SEQUENCE_TYPES.issuperset(map(type, lists))
    ):
        return None
    messages, episodes, usages, loop_usages, prompts, tools = lists
    if plan is None:
        plan = {_END: _END}  # told apart from {}
    if skills is None:
        skills = (_END,)
    return (
        *_SCALARS(state),
        *_FROZEN(state),
        *messages,
        _END,
        *episodes,
        _END,
        *usages,
        _END,
        *loop_usages,
        _END,
        *prompts,
        _END,
        *tools,
        _END,
        *skills,
        _END,
        *metadata,
        _END,
        *metadata.values(),
        _END,
        *plan,
        _END,
        *plan.values(),
        _END,
        *reminders,
        _END,
        *reminders.values(),
    )


def _remember(state: AgentState, refs: tuple[Any, ...], persistence: bool, data: bytes) -> None:
    """Keep ``data`` as the encoding of ``refs`` when every object in them is immutable:
    scalars of exactly str, int, bool or None type, frozen values of exactly their
    class (whose JSON objects are read-only mappings, read-only all the way down as
    ``crashpoint.core._state`` documents them); otherwise forget the last encoding.
    Messages, parts, tool calls and episodes were checked by the encoder (``frozen``)."""
    global _LAST_ENCODED
    _LAST_ENCODED = (persistence, refs, data) if _immutable(state) else None


def _immutable(state: AgentState) -> bool:
    """:func:`_remember`'s check of what the encoder does not check (empty lists and
    dicts, the common case, cost nothing)."""
    immutable = _IMMUTABLE_SCALARS
    if not all(type(v) in immutable for v in _SCALARS(state)):
        return False
    checkpoint, approval, review = _FROZEN(state)
    if checkpoint is not None and type(checkpoint) is not PendingRunCheckpoint:
        return False
    if approval is not None and (
        type(approval) is not PendingApproval or type(approval.tool_calls) is not tuple
    ):
        return False
    if review is not None and (
        type(review) is not PendingPlanReview or type(review.plan) is not MappingProxyType
    ):
        return False
    _, _, usages, loop_usages, prompts, tools = _LISTS(state)
    for records, kind in (
        (usages, ModelUsage),
        (loop_usages, ModelUsage),
        (prompts, SystemPromptEntry),
        (tools, ToolsEntry),
    ):
        if records and not all(type(r) is kind for r in records):
            return False
    for entry in tools:
        if type(entry.tools) is not tuple or not all(
            type(m) is MappingProxyType for m in entry.tools
        ):
            return False
    for values in (
        state.active_skills,
        state.metadata.values(),
        None if state.plan is None else state.plan.values(),
        state.system_reminders.values(),
    ):
        if values and not all(type(v) in immutable for v in values):
            return False
    return True


_MSGSPEC_ENCODE: Any = None
"""``msgspec.json.encode`` once imported (on the first encode: see :data:`_FAST`)."""


def _dumps(obj: dict[str, Any], exact: bool) -> bytes:
    """``json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)``
    as UTF-8, by msgspec when the encoder found the document plain (``exact``, see
    :func:`_plain_json`): for plain JSON both write the same bytes (no whitespace, keys
    in insertion order, the same string escapes (only ``"``, ``\\`` and control
    characters; ``tests/core/test_encode_fast.py`` checks every code point), integers in
    decimal), and msgspec is about ten times faster (issue 11). Whatever msgspec
    refuses (a lone surrogate) goes through json, which raises as before."""
    global _MSGSPEC_ENCODE
    if exact:
        if _MSGSPEC_ENCODE is None:
            import msgspec

            _MSGSPEC_ENCODE = msgspec.json.encode
        try:
            return _MSGSPEC_ENCODE(obj)  # type: ignore[no-any-return]
        except Exception:  # json raises what encode_bytes reports
            pass
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode(
        "utf-8"
    )


_CHECKED: dict[bytes, None] = {}
"""Digests (blake2b, 16 bytes) of encodings whose document passed the decoder check."""
_CHECKED_MAX: Final = 4096


def _encode_bytes(state: AgentState, persistence: bool) -> tuple[bytes, bool]:
    """:func:`encode_bytes`, and whether the encoding may be remembered (a plain
    document of frozen values: :func:`_remember`)."""
    encoder = _Encoder(persistence)
    obj = encoder.document(state)
    return _checked_bytes(obj, encoder.exact), encoder.exact and encoder.frozen


def _checked_bytes(obj: dict[str, Any], exact: bool) -> bytes:
    """The bytes of a document the encoder built, after the decoder's check; the check
    runs once per distinct encoding (issue 11: a harness encodes the same states over
    and over). Exact: the decoder reads strings, numbers and booleans by
    ``isinstance``, and every other value the document holds is a list or dict the
    encoder built (or copied with :func:`_json_object`), so two documents with the same
    bytes get the same verdict; the one place where a key is not checked by the encoder
    (systemReminders) skips the cache unless every key is a plain str.

    Raises:
        StateError: what decode raises on the document.
    """
    try:
        data = _dumps(obj, exact)
    except (ValueError, TypeError) as exc:  # lone surrogates, NaN, cycles, odd types
        _decode_checked(obj)  # raises what decode raises on the document, as encode does
        raise _error(  # pragma: no cover - the check rejects all of these
            ErrorCode.JSON_INVALID, f"state cannot be serialized: {exc}", exc
        ) from exc
    plain = all(type(key) is str for key in obj["systemReminders"])
    digest = hashlib.blake2b(data, digest_size=16).digest()
    if not plain or digest not in _CHECKED:
        # the verdict is that of the same bytes (above): when the fast decoder takes
        # them, the reference decoder reads them, so the document passes the check
        if not plain or (_FAST or _fast()).fast_decode(data, _json_object) is None:
            _decode_checked(obj)
        if plain:
            if len(_CHECKED) >= _CHECKED_MAX:
                _CHECKED.clear()
            _CHECKED[digest] = None
    return data

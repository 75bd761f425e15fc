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

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Final, NoReturn, TypeVar

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
    "encode",
    "encode_bytes",
    "media_placeholder",
    "peek_schema_version",
]

CURRENT_VERSION: Final = SCHEMA_VERSION
"""The schema version encode writes and the highest one decode accepts (3)."""

_ROLES: Final = ("system", "user", "assistant", "tool")
_MEDIA_TYPES: Final = ("image", "audio", "file")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_MISSING: Final = object()

_T = TypeVar("_T")


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
    return isinstance(value, int) and not isinstance(value, bool)


def _is_text(value: object) -> bool:
    """A str of Unicode scalar values (encodable as UTF-8)."""
    return isinstance(value, str) and (value.isascii() or _SURROGATE.search(value) is None)


class _NotJSON(Exception):
    pass


def _copy_json_value(value: object) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        if not _is_text(value):
            raise _NotJSON("a string with a lone surrogate")
        return value if type(value) is str else str.__str__(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJSON(f"a non-finite number {value!r}")
        return float(value)
    if isinstance(value, list):
        return [_copy_json_value(v) for v in value]
    if isinstance(value, dict):
        return _copy_json_object(value)
    raise _NotJSON(f"a value of type {type(value).__name__}")


def _copy_json_object(value: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if not _is_text(key):
            raise _NotJSON(f"a key of type {type(key).__name__}")
        out[key if type(key) is str else str.__str__(key)] = _copy_json_value(item)
    return out


def _json_object(value: object, code: ErrorCode, where: str) -> dict[str, Any]:
    """Validate a JSON object (dict of str to JSON values) and return a deep copy."""
    if not isinstance(value, dict):
        _fail(code, where, "a JSON object")
    try:
        return _copy_json_object(value)
    except _NotJSON as exc:
        raise _error(code, f"{where} must be a JSON object; it holds {exc}") from None
    except RecursionError:
        raise _error(code, f"{where} is nested too deeply") from None


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


def _read_version(obj: Mapping[str, Any]) -> int:
    if "schemaVersion" not in obj:
        return 0
    version = obj["schemaVersion"]
    if not _is_int(version) or version < 0:
        raise _error(
            ErrorCode.SCHEMA_VERSION_INVALID,
            f"schemaVersion must be a non-negative integer, got {_describe(version)}",
        )
    assert isinstance(version, int)
    return version


def _describe(value: object) -> str:
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


def _decode_message(value: object, where: str) -> Message:
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
        metadata = _json_object(metadata, ErrorCode.MESSAGE_METADATA_TYPE, f"{where}.metadata")
    if not contents and not tool_calls:
        raise _error(
            ErrorCode.MESSAGE_EMPTY_CONTENTS,
            f"{where} has neither a content part nor a tool call",
        )
    return Message(role, tuple(contents), tuple(tool_calls), tool_call_id, metadata)


def _decode_messages(value: object, where: str) -> list[Message]:
    return _array(value, ErrorCode.MESSAGES_TYPE, where, _decode_message)


def _decode_episode(value: object, where: str) -> Episode:
    ep = _record(value, ErrorCode.EPISODE_TYPE, where)
    messages = _get(ep, "messages")
    if not isinstance(messages, list):
        _fail(ErrorCode.EPISODE_TYPE, f"{where}.messages", "an array")
    return Episode(
        _text(_get(ep, "id"), ErrorCode.EPISODE_TYPE, f"{where}.id"),
        _text(_get(ep, "summary"), ErrorCode.EPISODE_TYPE, f"{where}.summary"),
        tuple(_decode_messages(messages, f"{where}.messages")),
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
        loop_count, tuple(_json_object(t, code, f"{where}.tools[{i}]") for i, t in enumerate(tools))
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
    """
    if not isinstance(obj, dict):
        raise _error(
            ErrorCode.JSON_INVALID,
            f"an AgentState document must be a JSON object, got {type(obj).__name__}",
        )
    version = _read_version(obj)
    if version > CURRENT_VERSION:
        raise _error(
            ErrorCode.SCHEMA_VERSION_UNSUPPORTED,
            f"unsupported AgentState schemaVersion {version}; current is {CURRENT_VERSION}",
        )

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
    metadata = _json_object(metadata, ErrorCode.METADATA_TYPE, "metadata")
    plan = _optional(obj, "plan")
    if plan is not None:
        plan = _json_object(plan, ErrorCode.PLAN_TYPE, "plan")
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
    return PendingPlanReview(_json_object(_get(record, "plan"), code, "pendingPlanReview.plan"))


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

    Raises:
        StateError: ``json_invalid`` (``layer="codec"``) when the bytes are not
            UTF-8, not JSON (``NaN``/``Infinity`` included) or nested too deeply;
            otherwise any error of :func:`decode`.
    """
    try:
        obj = json.loads(bytes(data).decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise _error(ErrorCode.JSON_INVALID, f"not UTF-8 JSON: {exc}", cause=exc) from exc
    return decode(obj)


def peek_schema_version(data: bytes) -> int | None:
    """The integer ``schemaVersion`` of a JSON document, without decoding the rest.

    Returns ``None`` when ``data`` is not a UTF-8 JSON object or its schemaVersion is
    absent or not an integer (booleans and floats are not). Never raises. Used by
    the harness's V1 checker (SPEC §8).
    """
    try:
        obj = json.loads(bytes(data).decode("utf-8"), parse_constant=_reject_constant)
    except (ValueError, RecursionError, TypeError):
        return None
    if not isinstance(obj, dict):
        return None
    version = obj.get("schemaVersion")
    return version if isinstance(version, int) and not isinstance(version, bool) else None


# --------------------------------------------------------------------------- encode


class _Encoder:
    def __init__(self, persistence: bool) -> None:
        self.persistence = persistence

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
        return {"id": call.id, "name": call.name, "arguments": call.arguments}

    def message(self, message: object, where: str) -> dict[str, Any]:
        if not isinstance(message, Message):
            _fail(ErrorCode.MESSAGE_TYPE, where, "a Message")
        out: dict[str, Any] = {
            "role": message.role,
            "contents": [
                self.part(p, f"{where}.contents[{i}]") for i, p in enumerate(message.contents)
            ],
        }
        if message.tool_calls:
            out["toolCalls"] = [
                self.tool_call(c, f"{where}.toolCalls[{i}]")
                for i, c in enumerate(message.tool_calls)
            ]
        if message.tool_call_id is not None:
            out["toolCallId"] = message.tool_call_id
        if message.metadata is not None:
            out["metadata"] = _json_object(
                dict(message.metadata), ErrorCode.MESSAGE_METADATA_TYPE, f"{where}.metadata"
            )
        return out

    def messages(self, messages: object, code: ErrorCode, where: str) -> list[dict[str, Any]]:
        return [
            self.message(m, f"{where}[{i}]") for i, m in enumerate(_sequence(messages, code, where))
        ]

    def episode(self, episode: object, where: str) -> dict[str, Any]:
        if not isinstance(episode, Episode):
            _fail(ErrorCode.EPISODE_TYPE, where, "an Episode")
        return {
            "id": episode.id,
            "summary": episode.summary,
            "messages": self.messages(
                episode.messages, ErrorCode.EPISODE_TYPE, f"{where}.messages"
            ),
        }

    def document(self, state: AgentState) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "schemaVersion": CURRENT_VERSION,
            "sessionId": state.session_id,
            "history": {
                "messages": self.messages(
                    state.messages, ErrorCode.MESSAGES_TYPE, "history.messages"
                ),
                "episodicMemories": [
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
            "usages": _usages(state.usages, ErrorCode.USAGES_TYPE, "usages"),
            "metadata": _json_object(state.metadata, ErrorCode.METADATA_TYPE, "metadata"),
        }
        if state.plan is not None:
            obj["plan"] = _json_object(state.plan, ErrorCode.PLAN_TYPE, "plan")
        if state.active_skills is not None:
            obj["activeSkills"] = list(
                _sequence(state.active_skills, ErrorCode.ACTIVE_SKILLS_TYPE, "activeSkills")
            )
        obj["isRunning"] = state.is_running
        obj["totalLoopCount"] = state.total_loop_count
        obj["currentLoopCount"] = state.current_loop_count
        obj["currentLoopUsages"] = _usages(
            state.current_loop_usages, ErrorCode.CURRENT_LOOP_USAGES_TYPE, "currentLoopUsages"
        )
        if state.last_error is not None:
            obj["lastError"] = state.last_error
        reminders = state.system_reminders
        if not isinstance(reminders, dict):
            _fail(ErrorCode.SYSTEM_REMINDERS_TYPE, "systemReminders", "a dict of str to str")
        obj["systemReminders"] = dict(reminders)
        obj["systemPromptHistory"] = [
            _prompt_entry(e, f"systemPromptHistory[{i}]")
            for i, e in enumerate(
                _sequence(
                    state.system_prompt_history,
                    ErrorCode.SYSTEM_PROMPT_HISTORY_TYPE,
                    "systemPromptHistory",
                )
            )
        ]
        obj["toolsHistory"] = [
            _tools_entry(e, f"toolsHistory[{i}]")
            for i, e in enumerate(
                _sequence(state.tools_history, ErrorCode.TOOLS_HISTORY_TYPE, "toolsHistory")
            )
        ]
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
                    dict(pr.plan), ErrorCode.PENDING_PLAN_REVIEW_TYPE, "pendingPlanReview.plan"
                )
            }
        obj["planReviewApproved"] = state.plan_review_approved
        return obj


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
            _json_object(dict(t), code, f"{where}.tools[{i}]") for i, t in enumerate(entry.tools)
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
            neither contents nor tool calls, or ``metadata_type`` for a non-JSON value.
    """
    if not isinstance(state, AgentState):
        raise TypeError(f"encode() needs an AgentState, got {type(state).__name__}")
    obj = _Encoder(persistence).document(state)
    decode(obj)
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
    obj = encode(state, persistence=persistence)
    try:
        text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (ValueError, RecursionError) as exc:  # pragma: no cover - encode checked it
        raise _error(ErrorCode.JSON_INVALID, f"state cannot be serialized: {exc}", exc) from exc
    return text.encode("utf-8")

"""The fast path of :func:`~crashpoint.core.decode_bytes` (issue 11).

:func:`fast_decode` parses a state file with msgspec straight from bytes into typed
structs that mirror the v3 document (SPEC §1, §2), then builds the
:class:`~crashpoint.core.AgentState`. It either returns exactly the state that the
reference decoder (:func:`crashpoint.core._codec._decode_bytes`) returns for the same
bytes, or ``None`` ("declined"), and the reference decoder then runs and raises its
precise error. It never raises.

It declines on any doubt, e.g.:

* bytes that are not UTF-8; anything msgspec refuses (malformed JSON, ``NaN``, lone
  surrogates, control characters, integers of more than 4300 digits, ``1e400``, a
  type that does not fit a field: a float schemaVersion such as ``3.0``, ``null`` for
  a required field, a boolean for an integer);
* any key the v3 document does not define, at any level (the reference decoder
  ignores them; declining keeps the depth of the document bounded by the typed
  structs, so the only values that can nest deeply are the free-form JSON objects,
  which are checked at their depth from the root as the reference decoder does);
* schemaVersion outside 0..3, a negative loop count, an integer of more than 4000
  digits, a message with neither content nor tool calls, a free-form JSON object that
  the reference decoder refuses (:func:`~crashpoint.core._codec._json_object`);
* running out of stack (``RecursionError``): the reference decoder then runs on a
  fresh stack.

Messages and their parts are built without running their ``__init__`` (the hot
loop of a big history); the result is field-for-field the one the constructors give,
which ``tests/core/test_fastdecode.py`` checks against the reference decoder.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, Final, Literal, Union

import msgspec

from ._errors import ErrorCode, StateError
from ._state import (
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

__all__ = ["fast_decode", "fast_peek"]

_INT_BOUND: Final = 10**4000  # = _codec._INT_BOUND (MAX_INT_DIGITS digits)


class _Text(msgspec.Struct, tag_field="type", tag="text", forbid_unknown_fields=True, gc=False):
    text: str


class _Image(
    msgspec.Struct, tag_field="type", tag="image", forbid_unknown_fields=True, rename="camel"
):
    mime_type: str
    data: str


class _Audio(
    msgspec.Struct, tag_field="type", tag="audio", forbid_unknown_fields=True, rename="camel"
):
    mime_type: str
    data: str


class _File(
    msgspec.Struct, tag_field="type", tag="file", forbid_unknown_fields=True, rename="camel"
):
    mime_type: str
    data: str


class _ToolCall(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    id: str
    name: str
    arguments: str


class _Message(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    role: Literal["system", "user", "assistant", "tool"]
    contents: list[Union[_Text, _Image, _Audio, _File]] = []  # noqa: UP007 (msgspec, 3.10)
    tool_calls: list[_ToolCall] | None = None
    tool_call_id: str | None = None
    metadata: dict[str, Any] | None = None


class _Episode(msgspec.Struct, forbid_unknown_fields=True):
    id: str
    summary: str
    messages: list[_Message]


class _History(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    messages: list[_Message] = []
    episodic_memories: list[_Episode] = []


class _Usage(msgspec.Struct, forbid_unknown_fields=True, rename="camel", gc=False):
    input_tokens: int
    output_tokens: int
    model: str | None = None


class _PromptEntry(msgspec.Struct, forbid_unknown_fields=True, rename="camel", gc=False):
    loop_count: int
    system_prompt: str


class _ToolsEntry(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    loop_count: int
    tools: list[dict[str, Any]]


class _Checkpoint(msgspec.Struct, forbid_unknown_fields=True, rename="camel", gc=False):
    checkpoint: str
    loop_count: int


class _Approval(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    tool_calls: list[_ToolCall]


class _PlanReview(msgspec.Struct, forbid_unknown_fields=True):
    plan: dict[str, Any]


class _Document(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    session_id: str
    schema_version: int = 0
    history: _History = msgspec.field(default_factory=_History)
    usages: list[_Usage] = []
    metadata: dict[str, Any] = {}
    plan: dict[str, Any] | None = None
    active_skills: list[str] | None = None
    is_running: bool = False
    total_loop_count: int = 0
    current_loop_count: int = 0
    current_loop_usages: list[_Usage] = []
    last_error: str | None = None
    system_reminders: dict[str, str] = {}
    system_prompt_history: list[_PromptEntry] = []
    tools_history: list[_ToolsEntry] = []
    pending_run_checkpoint: _Checkpoint | None = None
    pending_approval: _Approval | None = None
    pending_plan_review: _PlanReview | None = None
    plan_review_approved: bool = False


class _Peek(msgspec.Struct):
    """Only the top-level schemaVersion and sessionId; every other key is skipped
    (validated as JSON, not built)."""

    schemaVersion: Any = None
    sessionId: Any = None


_DECODER: Final = msgspec.json.Decoder(_Document)
_PEEK: Final = msgspec.json.Decoder(_Peek)


class _Decline(Exception):
    """The fast path gives up; the reference decoder decides."""


# Building frozen slotted values without __init__: the slot descriptors set them.
_new = object.__new__


def _setter(cls: type, name: str) -> Callable[[object, Any], None]:
    """The ``__set__`` of the slot ``name`` of a slotted dataclass ``cls``."""
    return cls.__dict__[name].__set__  # type: ignore[no-any-return]


_set_text = _setter(TextPart, "text")
_set_role = _setter(Message, "role")
_set_contents = _setter(Message, "contents")
_set_tool_calls = _setter(Message, "tool_calls")
_set_tool_call_id = _setter(Message, "tool_call_id")
_set_metadata = _setter(Message, "metadata")
_set_call_id = _setter(ToolCall, "id")
_set_call_name = _setter(ToolCall, "name")
_set_call_arguments = _setter(ToolCall, "arguments")


def _int(value: int) -> int:
    if not -_INT_BOUND < value < _INT_BOUND:
        raise _Decline
    return value


def _count(value: int) -> int:
    if not 0 <= value < _INT_BOUND:
        raise _Decline
    return value


def _tool_calls(calls: list[_ToolCall]) -> tuple[ToolCall, ...]:
    out = []
    for c in calls:
        call = _new(ToolCall)
        _set_call_id(call, c.id)
        _set_call_name(call, c.name)
        _set_call_arguments(call, c.arguments)
        out.append(call)
    return tuple(out)


_MEDIA_TYPE: Final = {_Image: "image", _Audio: "audio", _File: "file"}


def _part(part: _Image | _Audio | _File) -> Part:
    return MediaPart(_MEDIA_TYPE[type(part)], part.mime_type, part.data)  # type: ignore[arg-type]


def _contents(parts: list[_Text | _Image | _Audio | _File]) -> tuple[Part, ...]:
    out: list[Part] = []
    for p in parts:
        if type(p) is _Text:
            part = _new(TextPart)
            _set_text(part, p.text)
            out.append(part)
        else:
            out.append(_part(p))  # type: ignore[arg-type]
    return tuple(out)


def _messages(raw: list[_Message], depth: int, json_object: Any) -> list[Message]:
    """Messages of an array at ``depth`` levels from the root (3 or 5)."""
    out: list[Message] = []
    append = out.append
    text_type = _Text
    new = _new
    set_text, set_role, set_contents = _set_text, _set_role, _set_contents
    set_tool_calls, set_tool_call_id, set_metadata = (
        _set_tool_calls,
        _set_tool_call_id,
        _set_metadata,
    )
    for m in raw:
        parts = m.contents
        if len(parts) == 1 and type(first := parts[0]) is text_type:  # the common message
            part = new(TextPart)
            set_text(part, first.text)
            contents: tuple[Part, ...] = (part,)
        else:
            contents = _contents(parts)
        calls = m.tool_calls
        tool_calls = _tool_calls(calls) if calls else ()
        if not contents and not tool_calls:
            raise _Decline
        metadata = m.metadata
        message = new(Message)
        set_role(message, m.role)
        set_contents(message, contents)
        set_tool_calls(message, tool_calls)
        set_tool_call_id(message, m.tool_call_id)
        if metadata is None:
            set_metadata(message, None)
        else:
            code = ErrorCode.MESSAGE_METADATA_TYPE
            copy = json_object(metadata, code, "metadata", depth + 2)
            set_metadata(message, types.MappingProxyType(copy))
        append(message)
    return out


def _usages(raw: list[_Usage]) -> list[ModelUsage]:
    return [ModelUsage(_int(u.input_tokens), _int(u.output_tokens), u.model) for u in raw]


def _build(doc: _Document, json_object: Any) -> AgentState:
    version = doc.schema_version
    if not 0 <= version <= 3:
        raise _Decline
    history = doc.history
    plan = doc.plan
    checkpoint = doc.pending_run_checkpoint
    approval = doc.pending_approval
    review = doc.pending_plan_review
    tools_code = ErrorCode.TOOLS_HISTORY_ENTRY_TYPE
    return AgentState(
        doc.session_id,
        schema_version=version,
        messages=_messages(history.messages, 3, json_object),
        episodic_memories=[
            Episode(e.id, e.summary, tuple(_messages(e.messages, 5, json_object)))
            for e in history.episodic_memories
        ],
        usages=_usages(doc.usages),
        metadata=json_object(doc.metadata, ErrorCode.METADATA_TYPE, "metadata", 2),
        plan=None if plan is None else json_object(plan, ErrorCode.PLAN_TYPE, "plan", 2),
        active_skills=doc.active_skills,
        is_running=doc.is_running,
        total_loop_count=_count(doc.total_loop_count),
        current_loop_count=_count(doc.current_loop_count),
        current_loop_usages=_usages(doc.current_loop_usages),
        last_error=doc.last_error,
        system_reminders=doc.system_reminders,
        system_prompt_history=[
            SystemPromptEntry(_int(e.loop_count), e.system_prompt)
            for e in doc.system_prompt_history
        ],
        tools_history=[
            ToolsEntry(
                _int(e.loop_count),
                tuple(json_object(t, tools_code, "tools", 5) for t in e.tools),
            )
            for e in doc.tools_history
        ],
        pending_run_checkpoint=None
        if checkpoint is None
        else PendingRunCheckpoint(checkpoint.checkpoint, _int(checkpoint.loop_count)),
        pending_approval=None
        if approval is None
        else PendingApproval(_tool_calls(approval.tool_calls)),
        pending_plan_review=None
        if review is None
        else PendingPlanReview(
            json_object(review.plan, ErrorCode.PENDING_PLAN_REVIEW_TYPE, "plan", 3)
        ),
        plan_review_approved=doc.plan_review_approved,
    )


def _utf8(data: bytes) -> bool:
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def fast_decode(data: bytes, json_object: Any) -> AgentState | None:
    """The state the reference decoder returns for ``data`` (a ``bytes`` object), or
    None when this path declines (see the module docstring). Never raises.

    ``json_object`` is the reference decoder's check-and-copy of a free-form JSON
    object (``_codec._json_object``: value, code, where, depth from the root); a
    StateError from it declines.
    """
    if type(data) is not bytes or not _utf8(data):
        return None
    try:
        return _build(_DECODER.decode(data), json_object)
    except (msgspec.MsgspecError, StateError, _Decline, RecursionError):
        return None


def fast_peek(data: bytes) -> tuple[Any, Any] | None:
    """``(schemaVersion, sessionId)``, the raw top-level values (None when absent) of
    a document that Python's json accepts, or None when msgspec refuses it (the
    reference parser decides then). The caller has checked that ``data`` is UTF-8 and
    at most 64 levels deep. Never raises.

    Sound because msgspec refuses every text that Python's json refuses (and more:
    NaN, lone surrogates, integers of more than 4300 digits: those decline), keeps the
    last of duplicate keys as json does, and reads the same ints, strings, booleans
    and null (floats: the caller leaves a float schemaVersion to the reference).
    """
    try:
        peek = _PEEK.decode(data)
    except (msgspec.MsgspecError, RecursionError):
        return None
    return peek.schemaVersion, peek.sessionId

"""The agent-state data model: schema v3 (SPEC §1, seed §2).

Values inside a history (:class:`Message`, its parts and tool calls, episodes,
usages, the pending-* records) are frozen slotted dataclasses, safe to share
between a live state and its snapshots. :class:`AgentState` itself is mutable:
the runtime appends to it between checkpoints.

JSON objects held by frozen values (``Message.metadata``, ``ToolsEntry.tools``,
``PendingPlanReview.plan``) are stored as read-only mappings
(:class:`types.MappingProxyType`) over a private deep copy of the caller's dict.
Treat their nested values as read-only too.

Python attributes are snake_case; the camelCase JSON keys of the on-disk format
are the business of :mod:`crashpoint.core._codec`.
"""

from __future__ import annotations

import copy
import types
from collections.abc import Iterable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, ClassVar, Literal

__all__ = [
    "SCHEMA_VERSION",
    "AgentState",
    "Episode",
    "MediaPart",
    "Message",
    "ModelUsage",
    "Part",
    "PendingApproval",
    "PendingPlanReview",
    "PendingRunCheckpoint",
    "Role",
    "SystemPromptEntry",
    "TextPart",
    "ToolCall",
    "ToolsEntry",
]

SCHEMA_VERSION = 3
"""The schema version this package writes (SPEC §1)."""

Role = Literal["system", "user", "assistant", "tool"]
"""A message's author. Tool results have role ``"tool"`` and a ``tool_call_id``."""

MediaType = Literal["image", "audio", "file"]


def _frozen_object(value: Mapping[str, Any]) -> Mapping[str, Any]:
    """A read-only mapping over a deep copy of ``value``."""
    return types.MappingProxyType(copy.deepcopy(dict(value)))


def _thawed(value: Mapping[str, Any]) -> dict[str, Any]:
    """A plain, independent dict with the content of a (frozen) JSON object."""
    return copy.deepcopy(dict(value))


@dataclass(frozen=True, slots=True)
class TextPart:
    """A text content part: JSON ``{"type": "text", "text": ...}``."""

    text: str
    type: ClassVar[Literal["text"]] = "text"


@dataclass(frozen=True, slots=True)
class MediaPart:
    """A media content part: JSON ``{"type": "image"|"audio"|"file", "mimeType", "data"}``.

    ``data`` is the base64 payload; ``""`` means the part carries no binary data.
    Persistence encoding replaces a part with non-empty ``data`` by a text
    placeholder (SPEC §2, see :func:`~crashpoint.core.media_placeholder`).
    """

    type: MediaType
    mime_type: str
    data: str = ""


Part = TextPart | MediaPart
"""A content part of a message."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A tool call issued by an assistant message: JSON ``{id, name, arguments}``.

    ``arguments`` is the model's JSON text, kept verbatim (it is not parsed).
    """

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Message:
    """One history message (SPEC §1).

    JSON ``{role, contents, toolCalls?, toolCallId?, metadata?}``. A message needs
    at least one content part or one tool call (SPEC §2, ``message_empty_contents``);
    an assistant message that only calls tools has empty ``contents``.

    ``contents`` and ``tool_calls`` are stored as tuples; ``metadata`` as a read-only
    mapping over a deep copy of the given dict.
    """

    role: Role
    contents: tuple[Part, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    metadata: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "contents", tuple(self.contents))
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))
        if self.metadata is not None:
            object.__setattr__(self, "metadata", _frozen_object(self.metadata))

    def __reduce__(self) -> tuple[Any, ...]:
        metadata = None if self.metadata is None else _thawed(self.metadata)
        return (Message, (self.role, self.contents, self.tool_calls, self.tool_call_id, metadata))


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """Token usage of one model call: JSON ``{inputTokens, outputTokens, model?}`` (tokens)."""

    input_tokens: int
    output_tokens: int
    model: str | None = None


@dataclass(frozen=True, slots=True)
class Episode:
    """An episodic-memory slot: JSON ``{id, summary, messages}`` (seed §2.3)."""

    id: str
    summary: str
    messages: tuple[Message, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", tuple(self.messages))


@dataclass(frozen=True, slots=True)
class SystemPromptEntry:
    """The system prompt in force from loop ``loop_count`` on.

    JSON ``{loopCount, systemPrompt}``.
    """

    loop_count: int
    system_prompt: str


@dataclass(frozen=True, slots=True)
class ToolsEntry:
    """The tool definitions in force from loop ``loop_count`` on: JSON ``{loopCount, tools}``.

    Each tool definition is a JSON object, stored as a read-only mapping.
    """

    loop_count: int
    tools: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tools", tuple(_frozen_object(t) for t in self.tools))

    def __reduce__(self) -> tuple[Any, ...]:
        return (ToolsEntry, (self.loop_count, tuple(_thawed(t) for t in self.tools)))


@dataclass(frozen=True, slots=True)
class PendingRunCheckpoint:
    """Where a suspended run stopped: JSON ``{checkpoint, loopCount}`` (SPEC §7)."""

    checkpoint: str
    loop_count: int


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A tool-call batch frozen while it waits for user approval: JSON ``{toolCalls}`` (v2+)."""

    tool_calls: tuple[ToolCall, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))


@dataclass(frozen=True, slots=True)
class PendingPlanReview:
    """A plan frozen while it waits for review: JSON ``{plan}`` (v3+).

    ``plan`` is a JSON object, stored as a read-only mapping.
    """

    plan: Mapping[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", _frozen_object(self.plan))

    def __reduce__(self) -> tuple[Any, ...]:
        return (PendingPlanReview, (_thawed(self.plan),))


@dataclass(slots=True)
class AgentState:
    """A serializable agent-session snapshot, schema v3 (SPEC §1, seed §2).

    Pure data only: a state never holds a network client, a tool executor, hooks,
    listeners, cancellation handles or secrets (seed §2.1). Those belong to the
    runtime; anything stored here may reach a file.

    ``session_id`` is positional; every other field is keyword-only and defaults to
    the value the codec fills in when the JSON key is absent. ``messages`` and
    ``episodic_memories`` together are the JSON ``history`` object.
    ``schema_version`` is the version that was read; encoding always writes 3.
    ``system_reminders`` keeps insertion order. Equality is field-by-field.

    Example::

        state = AgentState.new("sess-1")
        state.messages.append(Message("user", (TextPart("hi"),)))
    """

    session_id: str
    _: KW_ONLY
    schema_version: int = SCHEMA_VERSION
    messages: list[Message] = field(default_factory=list)
    episodic_memories: list[Episode] = field(default_factory=list)
    usages: list[ModelUsage] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] | None = None
    active_skills: list[str] | None = None
    is_running: bool = False
    total_loop_count: int = 0
    current_loop_count: int = 0
    current_loop_usages: list[ModelUsage] = field(default_factory=list)
    last_error: str | None = None
    system_reminders: dict[str, str] = field(default_factory=dict)
    system_prompt_history: list[SystemPromptEntry] = field(default_factory=list)
    tools_history: list[ToolsEntry] = field(default_factory=list)
    pending_run_checkpoint: PendingRunCheckpoint | None = None
    pending_approval: PendingApproval | None = None
    pending_plan_review: PendingPlanReview | None = None
    plan_review_approved: bool = False

    @classmethod
    def new(cls, session_id: str, metadata: Mapping[str, Any] | None = None) -> AgentState:
        """A fresh state: empty history, not running, ``metadata`` deep-copied (or ``{}``)."""
        return cls(session_id, metadata={} if metadata is None else _thawed(metadata))

    def snapshot(self) -> AgentState:
        """An independent copy for observers (SPEC §1, seed §2.4).

        Lists and dicts are copied (JSON objects deeply), frozen values (messages,
        episodes, usages, pending records) are shared. Mutating the copy never
        changes this state, and vice versa. The copy equals this state.
        """
        return AgentState(
            self.session_id,
            schema_version=self.schema_version,
            messages=list(self.messages),
            episodic_memories=list(self.episodic_memories),
            usages=list(self.usages),
            metadata=copy.deepcopy(self.metadata),
            plan=None if self.plan is None else copy.deepcopy(self.plan),
            active_skills=_list_or_none(self.active_skills),
            is_running=self.is_running,
            total_loop_count=self.total_loop_count,
            current_loop_count=self.current_loop_count,
            current_loop_usages=list(self.current_loop_usages),
            last_error=self.last_error,
            system_reminders=dict(self.system_reminders),
            system_prompt_history=list(self.system_prompt_history),
            tools_history=list(self.tools_history),
            pending_run_checkpoint=self.pending_run_checkpoint,
            pending_approval=self.pending_approval,
            pending_plan_review=self.pending_plan_review,
            plan_review_approved=self.plan_review_approved,
        )


def _list_or_none(values: Iterable[str] | None) -> list[str] | None:
    return None if values is None else list(values)

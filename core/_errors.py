"""The one exception type of the state layer, its codes and its retry advice.

SPEC §5 (seed §4.2): one exception type carries ``layer``, ``code``, ``message``
and ``retryability``. Codes are plain strings so that files, logs and other
implementations (the original runs on ArkTS) agree on them; :class:`ErrorCode`
lists every code this package produces.

The error tree::

    Exception
     +-- StateError                          code, message, layer, retryability, cause
          layer="storage"                    (raised by a StateStorage, SPEC §6)
           +-- session_not_found             never
           +-- state_corrupt                 never; cause = the decode error, if any
           +-- state_save_failed             conditional; cause = the OSError
           +-- state_load_failed             conditional; cause = the OSError (a read
                                             error is not corruption: no bak fallback)
           +-- invalid_session_id            never (SPEC §4)
           +-- history_unpaired              never (SPEC §3)
           +-- session_id_collision          never: the file holds another session's id
                                             (SPEC §4)
          layer="codec"                      (raised by encode/decode, SPEC §2)
           +-- json_invalid                  never
           +-- json_too_deep                 never (deeper than 64 levels, SPEC §2)
           +-- schema_version_unsupported    never; load passes it through unwrapped
           +-- schema_version_invalid        never
           +-- message_empty_contents        never
           +-- <field>_type                  never; one code per field, e.g.
                                             pending_plan_review_type

``StateError`` pickles with all its attributes, so test workers (pytest-xdist)
can send it back to the controller.
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["ErrorCode", "Retryability", "StateError"]


class Retryability(str, enum.Enum):
    """Whether retrying the failed call may succeed (SPEC §5)."""

    NEVER = "never"
    """Retrying the same call gives the same error: the input or the stored data is bad."""

    CONDITIONAL = "conditional"
    """Retrying may succeed if the cause was temporary (a full disk, a transient I/O error)."""

    ALWAYS = "always"
    """The failure is transient by nature; retrying is expected to succeed."""

    def __str__(self) -> str:
        return self.value


class ErrorCode(str, enum.Enum):
    """Every error code of :class:`StateError` (SPEC §5).

    Members are ``str``, so ``exc.code == ErrorCode.STATE_CORRUPT`` and
    ``exc.code == "state_corrupt"`` both hold.
    """

    # --- storage layer (SPEC §5, §6) ---
    SESSION_NOT_FOUND = "session_not_found"
    """load: neither the main file nor the bak file exists."""

    STATE_CORRUPT = "state_corrupt"
    """load: unparseable JSON, a failed decode, a sessionId mismatch, or main and bak both bad.
    The decode error, if any, is the ``cause``."""

    STATE_SAVE_FAILED = "state_save_failed"
    """save / mark_not_resumable: a write, rename, delete or sync failed. Conditional retry."""

    STATE_LOAD_FAILED = "state_load_failed"
    """load: reading main or bak failed with an I/O error (EIO, EMFILE, EACCES ...). Not
    corruption, so load does not fall back to bak (SPEC §6). Conditional retry; the
    ``cause`` is the OSError."""

    INVALID_SESSION_ID = "invalid_session_id"
    """The session id is empty, contains ``..``, ``/``, ``\\`` or NUL, or maps to ``.``/``..``
    (SPEC §4)."""

    HISTORY_UNPAIRED = "history_unpaired"
    """save: the history has an unanswered tool call or an orphan tool result (SPEC §3)."""

    SESSION_ID_COLLISION = "session_id_collision"
    """The session's file holds another session's id: two ids that map to one file name
    (``"a b"`` and ``"a_b"``). load, save, delete and mark_not_resumable refuse and change
    nothing; load never falls back to bak (SPEC §4)."""

    # --- codec layer (SPEC §2) ---
    JSON_INVALID = "json_invalid"
    """The bytes are not UTF-8 JSON, or the document is not a JSON object."""

    JSON_TOO_DEEP = "json_too_deep"
    """The document nests arrays and objects deeper than 64 levels, counted from the
    root (SPEC §2); encode refuses the same depth."""

    SCHEMA_VERSION_UNSUPPORTED = "schema_version_unsupported"
    """schemaVersion is greater than the current version (3): written by a newer program."""

    SCHEMA_VERSION_INVALID = "schema_version_invalid"
    """schemaVersion is present but not a non-negative integer (floats and booleans included)."""

    MESSAGE_EMPTY_CONTENTS = "message_empty_contents"
    """A message has neither a content part nor a tool call."""

    # --- codec layer: one code per field whose value has the wrong type ---
    SESSION_ID_TYPE = "session_id_type"
    """sessionId is absent or not a string."""

    HISTORY_TYPE = "history_type"
    """history is not a JSON object."""

    MESSAGES_TYPE = "messages_type"
    """history.messages (or an episode's messages) is not an array."""

    EPISODIC_MEMORIES_TYPE = "episodic_memories_type"
    """history.episodicMemories is not an array."""

    EPISODE_TYPE = "episode_type"
    """An episode is not an object, or its id, summary or messages have the wrong type."""

    MESSAGE_TYPE = "message_type"
    """A message is not a JSON object."""

    MESSAGE_ROLE_TYPE = "message_role_type"
    """A message's role is absent or not one of system, user, assistant, tool."""

    MESSAGE_CONTENTS_TYPE = "message_contents_type"
    """A message's contents is not an array."""

    PART_TYPE = "part_type"
    """A content part is not an object, has an unknown type, or a field of the wrong type."""

    MESSAGE_TOOL_CALLS_TYPE = "message_tool_calls_type"
    """A message's toolCalls is not an array."""

    TOOL_CALL_TYPE = "tool_call_type"
    """A tool call is not an object, or its id, name or arguments is not a string."""

    MESSAGE_TOOL_CALL_ID_TYPE = "message_tool_call_id_type"
    """A message's toolCallId is not a string."""

    MESSAGE_METADATA_TYPE = "message_metadata_type"
    """A message's metadata is not a JSON object."""

    USAGES_TYPE = "usages_type"
    """usages is not an array."""

    CURRENT_LOOP_USAGES_TYPE = "current_loop_usages_type"
    """currentLoopUsages is not an array."""

    USAGE_TYPE = "usage_type"
    """A model usage is not an object, its token counts are not integers, or model not a string."""

    METADATA_TYPE = "metadata_type"
    """metadata is not a JSON object."""

    PLAN_TYPE = "plan_type"
    """plan is not a JSON object."""

    ACTIVE_SKILLS_TYPE = "active_skills_type"
    """activeSkills is not an array of strings."""

    IS_RUNNING_TYPE = "is_running_type"
    """isRunning is not a boolean."""

    TOTAL_LOOP_COUNT_TYPE = "total_loop_count_type"
    """totalLoopCount is not a non-negative integer."""

    CURRENT_LOOP_COUNT_TYPE = "current_loop_count_type"
    """currentLoopCount is not a non-negative integer."""

    LAST_ERROR_TYPE = "last_error_type"
    """lastError is not a string."""

    SYSTEM_REMINDERS_TYPE = "system_reminders_type"
    """systemReminders is not a JSON object of string values."""

    SYSTEM_PROMPT_HISTORY_TYPE = "system_prompt_history_type"
    """systemPromptHistory is not an array."""

    SYSTEM_PROMPT_HISTORY_ENTRY_TYPE = "system_prompt_history_entry_type"
    """A systemPromptHistory entry is not ``{loopCount: int, systemPrompt: str}``."""

    TOOLS_HISTORY_TYPE = "tools_history_type"
    """toolsHistory is not an array."""

    TOOLS_HISTORY_ENTRY_TYPE = "tools_history_entry_type"
    """A toolsHistory entry is not ``{loopCount: int, tools: object[]}``."""

    PENDING_RUN_CHECKPOINT_TYPE = "pending_run_checkpoint_type"
    """pendingRunCheckpoint is not ``{checkpoint: str, loopCount: int}``."""

    PENDING_APPROVAL_TYPE = "pending_approval_type"
    """pendingApproval is not ``{toolCalls: ToolCall[]}``."""

    PENDING_PLAN_REVIEW_TYPE = "pending_plan_review_type"
    """pendingPlanReview is not ``{plan: object}``."""

    PLAN_REVIEW_APPROVED_TYPE = "plan_review_approved_type"
    """planReviewApproved is not a boolean."""

    def __str__(self) -> str:
        return self.value


class StateError(Exception):
    """A failure of the state layer: storage, codec or session-id validation.

    Args:
        code: the error code, a plain string; see :class:`ErrorCode`.
        message: a human-readable explanation. Session ids appear only through
            :func:`~crashpoint.core.redact`.
        layer: ``"storage"`` or ``"codec"``.
        retryability: whether retrying may succeed.
        cause: the underlying exception, if any; also set as ``__cause__``.

    ``str(exc)`` is ``"<code>: <message>"``. Source: SPEC §5.
    """

    code: str
    message: str
    layer: str
    retryability: Retryability
    cause: BaseException | None

    def __init__(
        self,
        code: str,
        message: str,
        *,
        layer: str = "storage",
        retryability: Retryability = Retryability.NEVER,
        cause: BaseException | None = None,
    ) -> None:
        super().__init__(code, message)
        if type(code) is str:
            self.code = code
        else:  # an enum member's value (ErrorCode's are plain strings), or str() of it
            self.code = code._value_ if isinstance(code, enum.Enum) else str(code)
        self.message = message
        self.layer = layer
        self.retryability = (
            retryability if type(retryability) is Retryability else Retryability(retryability)
        )
        self.cause = cause
        if cause is not None:
            self.__cause__ = cause

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, message={self.message!r}, "
            f"layer={self.layer!r}, retryability={self.retryability.value!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_state_error,
            (type(self), self.code, self.message, self.layer, self.retryability, self.cause),
        )


def _rebuild_state_error(
    cls: type[StateError],
    code: str,
    message: str,
    layer: str,
    retryability: Retryability,
    cause: BaseException | None,
) -> StateError:
    """Unpickle a :class:`StateError` (keyword-only arguments need a helper)."""
    return cls(code, message, layer=layer, retryability=retryability, cause=cause)

"""The reference agent-state model: data, codec, pairing, session ids and storage.

What the harness checks storage implementations against (SPEC §1-§6):

* :class:`AgentState` and its frozen values (SPEC §1);
* :func:`encode` / :func:`decode` and their byte forms, schema v0-v3 (SPEC §2);
* :func:`tool_calls_paired` and :func:`truncate_to_paired` (SPEC §3);
* :func:`safe_session_file_name` and :func:`redact` (SPEC §4);
* :class:`StateError` with its codes (SPEC §5);
* :class:`FileStateStorage` and :class:`MemoryStateStorage` (SPEC §6);
* :class:`AgentRuntime`, the agent-run lifecycle, with its protocols and scripted
  fakes :class:`ScriptedModel` and :class:`ScriptedTools` (SPEC §7).
"""

from __future__ import annotations

from ._codec import (
    CURRENT_VERSION,
    as_persisted,
    decode,
    decode_bytes,
    encode,
    encode_bytes,
    media_placeholder,
    peek_schema_version,
    peek_session_id,
)
from ._errors import ErrorCode, Retryability, StateError
from ._ids import redact, safe_session_file_name
from ._pairing import state_is_paired, tool_calls_paired, truncate_to_paired, unanswered_calls
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
    Role,
    SystemPromptEntry,
    TextPart,
    ToolCall,
    ToolsEntry,
)

__all__ = [
    "CURRENT_VERSION",
    "AgentState",
    "Episode",
    "ErrorCode",
    "MediaPart",
    "Message",
    "ModelUsage",
    "Part",
    "PendingApproval",
    "PendingPlanReview",
    "PendingRunCheckpoint",
    "Retryability",
    "Role",
    "StateError",
    "SystemPromptEntry",
    "TextPart",
    "ToolCall",
    "ToolsEntry",
    "as_persisted",
    "decode",
    "decode_bytes",
    "encode",
    "encode_bytes",
    "media_placeholder",
    "peek_schema_version",
    "peek_session_id",
    "redact",
    "safe_session_file_name",
    "state_is_paired",
    "tool_calls_paired",
    "truncate_to_paired",
    "unanswered_calls",
]

# --- storage (core/_storage.py) -------------------------------------------------------
from ._storage import DEFAULT_LOCK_TIMEOUT, FileStateStorage, MemoryStateStorage, StateStorage

__all__ += ["DEFAULT_LOCK_TIMEOUT", "FileStateStorage", "MemoryStateStorage", "StateStorage"]

# --- runtime (core/_runtime.py, core/_fakes.py) ----------------------------------------
from ._fakes import Reply, ScriptedModel, ScriptedTools, Step  # noqa: E402
from ._runtime import (  # noqa: E402
    AgentRuntime,
    Checkpoint,
    EventKind,
    Listener,
    ModelChunk,
    ModelClient,
    ModelError,
    RunConflict,
    RunEvent,
    RunOutcome,
    RunStatus,
    ToolExecutor,
    ToolInterrupted,
)

__all__ += [
    "AgentRuntime",
    "Checkpoint",
    "EventKind",
    "Listener",
    "ModelChunk",
    "ModelClient",
    "ModelError",
    "Reply",
    "RunConflict",
    "RunEvent",
    "RunOutcome",
    "RunStatus",
    "ScriptedModel",
    "ScriptedTools",
    "Step",
    "ToolExecutor",
    "ToolInterrupted",
]
__all__.sort()

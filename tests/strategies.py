"""Hypothesis strategies for valid :class:`~crashpoint.core.AgentState` objects.

Shared by the core, storage and state-machine tests. Everything generated here
encodes without error (SPEC §2); with ``paired=True`` the history is also paired
(SPEC §3), so storage accepts it.

Main entry points: :func:`agent_states`, :func:`paired_histories`,
:func:`messages`, :func:`session_ids`, :func:`json_objects`.
"""

from __future__ import annotations

import base64
import json
import string
from typing import Any

from crashpoint.core import (
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
from hypothesis import strategies as st

__all__ = [
    "SAFE_ID_ALPHABET",
    "agent_states",
    "any_session_ids",
    "episodes",
    "json_objects",
    "json_values",
    "media_parts",
    "messages",
    "model_usages",
    "paired_histories",
    "parts",
    "session_ids",
    "text_parts",
    "texts",
    "tool_calls",
]

SAFE_ID_ALPHABET = string.ascii_letters + string.digits + "._-"
"""The characters :func:`~crashpoint.core.safe_session_file_name` keeps."""


def texts(max_size: int = 12) -> st.SearchStrategy[str]:
    """Unicode text without surrogates (any string a state may hold)."""
    return st.text(max_size=max_size)


def session_ids() -> st.SearchStrategy[str]:
    """Valid session ids that ``safe_session_file_name`` maps to themselves.

    Distinct ids therefore never share a file, which keeps storage models simple.
    """
    return st.text(SAFE_ID_ALPHABET, min_size=1, max_size=16).filter(
        lambda s: ".." not in s and s != "."
    )


def any_session_ids() -> st.SearchStrategy[str]:
    """Arbitrary strings, valid or not as session ids (traversal attempts included)."""
    return st.one_of(
        st.text(max_size=16),
        st.sampled_from(["", ".", "..", "../etc", "a/b", "a\\b", "a\0b", "/abs", "会话-001"]),
        st.lists(st.sampled_from(["..", "/", "\\", "\0", ".", "a", " ", "会"]), max_size=6).map(
            "".join
        ),
    )


_json_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    texts(),
)


def json_values(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """JSON values as ``json.loads`` returns them (dict, list, str, int, float, bool, None)."""
    return st.recursive(
        _json_scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.dictionaries(texts(8), children, max_size=3),
        ),
        max_leaves=max_leaves,
    )


def json_objects(max_leaves: int = 8) -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects (``dict[str, JSON]``)."""
    return st.dictionaries(texts(8), json_values(max_leaves), max_size=3)


def text_parts() -> st.SearchStrategy[TextPart]:
    return st.builds(TextPart, texts())


def media_parts(*, with_data: bool | None = None) -> st.SearchStrategy[MediaPart]:
    """Media parts; ``with_data`` forces (True) or forbids (False) a binary payload."""
    payload = st.binary(min_size=1, max_size=12).map(lambda b: base64.b64encode(b).decode())
    if with_data is None:
        data = st.one_of(st.just(""), payload)
    elif with_data:
        data = payload
    else:
        data = st.just("")
    return st.builds(
        MediaPart,
        st.sampled_from(["image", "audio", "file"]),
        st.sampled_from(["image/png", "image/jpeg", "audio/wav", "application/pdf", "x/é"]),
        data,
    )


def parts() -> st.SearchStrategy[Part]:
    """Text parts mostly, media parts (with and without data) sometimes."""
    return st.one_of(text_parts(), text_parts(), media_parts())


def tool_calls(ids: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[ToolCall]:
    arguments = st.one_of(st.just("{}"), json_objects(4).map(_dumps), texts())
    return st.builds(ToolCall, texts(8) if ids is None else ids, texts(8), arguments)


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


_message_metadata = st.one_of(st.none(), json_objects(4))


def messages(role: str | None = None) -> st.SearchStrategy[Message]:
    """Any valid message: at least one content part or one tool call; pairing not respected."""

    @st.composite
    def build(draw: st.DrawFn) -> Message:
        r = draw(st.sampled_from(["system", "user", "assistant", "tool"])) if role is None else role
        contents = draw(st.lists(parts(), max_size=3))
        calls = draw(st.lists(tool_calls(), min_size=0 if contents else 1, max_size=2))
        call_id = draw(st.one_of(st.none(), texts(8)))
        return Message(r, tuple(contents), tuple(calls), call_id, draw(_message_metadata))

    return build()


@st.composite
def paired_histories(
    draw: st.DrawFn, *, frozen_batch: bool | None = None, max_turns: int = 5
) -> tuple[list[Message], PendingApproval | None]:
    """A paired history (SPEC §3) and the pending approval that goes with it.

    Turns are system/user/assistant text messages and tool batches (an assistant
    message with 1-3 calls, then one tool message per call in any order). Tool-call
    ids are unique. With ``frozen_batch`` (drawn when None) the history ends in an
    assistant batch of which only some calls are answered, and the approval is
    ``PendingApproval`` of that batch's calls; otherwise the approval is None.
    """
    counter = iter(range(10**9))

    def new_call() -> ToolCall:
        call = draw(tool_calls(ids=st.just("")))
        suffix = draw(st.text(max_size=4))
        return ToolCall(f"call_{next(counter)}{suffix}", call.name, call.arguments)

    def tool_result(call: ToolCall) -> Message:
        contents = draw(st.lists(parts(), min_size=1, max_size=2))
        return Message("tool", tuple(contents), (), call.id, draw(_message_metadata))

    def batch() -> tuple[Message, list[ToolCall]]:
        calls = [new_call() for _ in range(draw(st.integers(1, 3)))]
        contents = draw(st.lists(parts(), max_size=1))
        return Message("assistant", tuple(contents), tuple(calls)), calls

    history: list[Message] = []
    for _ in range(draw(st.integers(0, max_turns))):
        kind = draw(st.sampled_from(["system", "user", "assistant", "tools", "tools"]))
        if kind == "tools":
            assistant, calls = batch()
            history.append(assistant)
            history.extend(tool_result(c) for c in draw(st.permutations(calls)))
        else:
            contents = draw(st.lists(parts(), min_size=1, max_size=2))
            history.append(Message(kind, tuple(contents), (), None, draw(_message_metadata)))
    if frozen_batch is None:
        frozen_batch = draw(st.booleans())
    if not frozen_batch:
        return history, None
    assistant, calls = batch()
    history.append(assistant)
    answered = draw(st.integers(0, len(calls) - 1))
    history.extend(tool_result(c) for c in draw(st.permutations(calls))[:answered])
    return history, PendingApproval(tuple(calls))


def model_usages() -> st.SearchStrategy[ModelUsage]:
    return st.builds(
        ModelUsage,
        st.integers(0, 10**6),
        st.integers(0, 10**6),
        st.one_of(st.none(), st.sampled_from(["gpt", "claude", "glm-4"])),
    )


def episodes() -> st.SearchStrategy[Episode]:
    return st.builds(Episode, texts(8), texts(), st.lists(messages(), max_size=2).map(tuple))


@st.composite
def agent_states(
    draw: st.DrawFn,
    session_id: str | st.SearchStrategy[str] | None = None,
    paired: bool = True,
    frozen_batch: bool | None = None,
) -> AgentState:
    """A valid :class:`AgentState` with every field exercised.

    Args:
        session_id: a fixed id, a strategy for ids, or None for :func:`session_ids`.
        paired: generate a paired history (SPEC §3), possibly ending in a frozen
            approval batch with ``pending_approval`` set. With False the history is
            arbitrary valid messages (usually unpaired) and ``pending_approval`` random.
        frozen_batch: with ``paired``, force (True) or forbid (False) the frozen batch.

    ``schema_version`` is drawn from 0-3 (encode writes 3 whatever it is).
    """
    if session_id is None:
        sid = draw(session_ids())
    elif isinstance(session_id, str):
        sid = session_id
    else:
        sid = draw(session_id)
    if paired:
        history, approval = draw(paired_histories(frozen_batch=frozen_batch))
    else:
        history = draw(st.lists(messages(), max_size=6))
        approval = draw(
            st.one_of(
                st.none(),
                st.lists(tool_calls(), max_size=2).map(lambda c: PendingApproval(tuple(c))),
            )
        )
    return AgentState(
        sid,
        schema_version=draw(st.integers(0, 3)),
        messages=history,
        episodic_memories=draw(st.lists(episodes(), max_size=2)),
        usages=draw(st.lists(model_usages(), max_size=3)),
        metadata=draw(json_objects()),
        plan=draw(st.one_of(st.none(), json_objects(4))),
        active_skills=draw(st.one_of(st.none(), st.lists(texts(8), max_size=3))),
        is_running=draw(st.booleans()),
        total_loop_count=draw(st.integers(0, 1000)),
        current_loop_count=draw(st.integers(0, 1000)),
        current_loop_usages=draw(st.lists(model_usages(), max_size=2)),
        last_error=draw(st.one_of(st.none(), texts())),
        system_reminders=draw(st.dictionaries(texts(8), texts(), max_size=3)),
        system_prompt_history=draw(
            st.lists(st.builds(SystemPromptEntry, st.integers(0, 100), texts()), max_size=2)
        ),
        tools_history=draw(
            st.lists(
                st.builds(ToolsEntry, st.integers(0, 100), st.lists(json_objects(4), max_size=2)),
                max_size=2,
            )
        ),
        pending_run_checkpoint=draw(
            st.one_of(
                st.none(),
                st.builds(
                    PendingRunCheckpoint,
                    st.sampled_from(["after_user_input", "after_tool_batch", "suspended"]),
                    st.integers(0, 100),
                ),
            )
        ),
        pending_approval=approval,
        pending_plan_review=draw(st.one_of(st.none(), json_objects(4).map(PendingPlanReview))),
        plan_review_approved=draw(st.booleans()),
    )

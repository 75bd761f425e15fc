"""Hypothesis strategies for valid :class:`~crashpoint.core.AgentState` objects.

Used at run time by the storage state machine
(:mod:`crashpoint.scenarios.kinds.state_storage.machine`) and re-exported for the tests
by ``tests/strategies.py``. Importing this module imports hypothesis (a test extra, not
a dependency of crashpoint).

Everything generated here encodes without error (SPEC §2); with ``paired=True``
the history is also paired (SPEC §3), so storage accepts it.

Main entry points: :func:`agent_states`, :func:`paired_histories`,
:func:`messages`, :func:`session_ids`, :func:`json_objects`.
"""

from __future__ import annotations

import base64
import functools
import json
import string
from typing import Any, cast

from hypothesis import strategies as st

from ....core import (
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
    "storage_states",
    "text_parts",
    "texts",
    "tool_calls",
]

SAFE_ID_ALPHABET = string.ascii_letters + string.digits + "._-"
"""The characters :func:`~crashpoint.core.safe_session_file_name` keeps."""


@functools.cache
def texts(max_size: int = 12) -> st.SearchStrategy[str]:
    """Unicode text without surrogates (any string a state may hold)."""
    return st.text(max_size=max_size)


@functools.cache
def session_ids() -> st.SearchStrategy[str]:
    """Valid session ids that ``safe_session_file_name`` maps to themselves.

    Distinct ids therefore never share a file, which keeps storage models simple.
    """
    return st.text(SAFE_ID_ALPHABET, min_size=1, max_size=16).filter(
        lambda s: ".." not in s and s != "."
    )


@functools.cache
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


@functools.cache
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


@functools.cache
def json_objects(max_leaves: int = 8) -> st.SearchStrategy[dict[str, Any]]:
    """JSON objects (``dict[str, JSON]``)."""
    return st.dictionaries(texts(8), json_values(max_leaves), max_size=3)


@functools.cache
def text_parts() -> st.SearchStrategy[TextPart]:
    return st.builds(TextPart, texts())


@functools.cache
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


@functools.cache
def parts() -> st.SearchStrategy[Part]:
    """Text parts mostly, media parts (with and without data) sometimes."""
    return st.one_of(text_parts(), text_parts(), media_parts())


@functools.cache
def tool_calls(ids: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[ToolCall]:
    """Tool calls; ``arguments`` is JSON text mostly, arbitrary text sometimes."""
    return st.builds(ToolCall, texts(8) if ids is None else ids, texts(8), _arguments)


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


_arguments = st.one_of(st.just("{}"), json_objects(4).map(_dumps), texts())
_message_metadata = st.one_of(st.none(), st.none(), json_objects(4))
_roles: st.SearchStrategy[Role] = st.sampled_from(("system", "user", "assistant", "tool"))
_call_ids = st.one_of(st.none(), texts(8))
_contents = st.lists(parts(), max_size=3)
_some_contents = st.lists(parts(), min_size=1, max_size=2)
_some_tool_calls = st.lists(tool_calls(), min_size=1, max_size=2)
_maybe_tool_calls = st.lists(tool_calls(), max_size=2)


@functools.cache
def messages(role: str | None = None) -> st.SearchStrategy[Message]:
    """Any valid message: at least one content part or one tool call; pairing not respected."""
    roles = _roles if role is None else st.just(cast(Role, role))

    @st.composite
    def build(draw: st.DrawFn) -> Message:
        contents = draw(_contents)
        calls = draw(_maybe_tool_calls if contents else _some_tool_calls)
        return Message(
            draw(roles), tuple(contents), tuple(calls), draw(_call_ids), draw(_message_metadata)
        )

    return build()


_call_names = texts(8)
_id_suffixes = st.text(max_size=4)
_turn_kinds = st.sampled_from(["system", "user", "assistant", "tools", "tools"])
_batch_sizes = st.integers(1, 3)
_batch_contents = st.lists(parts(), max_size=1)
_sort_keys = {n: st.lists(st.integers(0, 7), min_size=n, max_size=n) for n in range(1, 4)}
_answered = {n: st.integers(0, n - 1) for n in range(1, 4)}


@st.composite
def _paired_histories(
    draw: st.DrawFn, frozen_batch: bool | None, max_turns: int
) -> tuple[list[Message], PendingApproval | None]:
    counter = iter(range(10**9))

    def new_call() -> ToolCall:
        call_id = f"call_{next(counter)}{draw(_id_suffixes)}"
        return ToolCall(call_id, draw(_call_names), draw(_arguments))

    def tool_result(call: ToolCall) -> Message:
        return Message("tool", tuple(draw(_some_contents)), (), call.id, draw(_message_metadata))

    def batch() -> tuple[Message, list[ToolCall]]:
        calls = [new_call() for _ in range(draw(_batch_sizes))]
        return Message("assistant", tuple(draw(_batch_contents)), tuple(calls)), calls

    def shuffled(calls: list[ToolCall]) -> list[ToolCall]:
        keys = draw(_sort_keys[len(calls)])
        return [c for _, c in sorted(zip(keys, calls, strict=True), key=lambda kc: kc[0])]

    history: list[Message] = []
    for _ in range(draw(st.integers(0, max_turns))):
        kind = draw(_turn_kinds)
        if kind == "tools":
            assistant, calls = batch()
            history.append(assistant)
            history.extend(tool_result(c) for c in shuffled(calls))
        else:
            contents = tuple(draw(_some_contents))
            role = cast(Role, kind)
            history.append(Message(role, contents, (), None, draw(_message_metadata)))
    if frozen_batch is None:
        frozen_batch = draw(st.booleans())
    if not frozen_batch:
        return history, None
    assistant, calls = batch()
    history.append(assistant)
    answered = shuffled(calls)[: draw(_answered[len(calls)])]
    history.extend(tool_result(c) for c in answered)
    # SPEC §3: the pending approval lists exactly the unanswered calls, in batch order
    return history, PendingApproval(tuple(c for c in calls if c not in answered))


@functools.cache
def paired_histories(
    *, frozen_batch: bool | None = None, max_turns: int = 5
) -> st.SearchStrategy[tuple[list[Message], PendingApproval | None]]:
    """A paired history (SPEC §3) and the pending approval that goes with it.

    Turns are system/user/assistant text messages and tool batches (an assistant
    message with 1-3 calls, then one tool message per call in any order). Tool-call
    ids are unique. With ``frozen_batch`` (drawn when None) the history ends in an
    assistant batch of which only some calls are answered, and the approval is
    ``PendingApproval`` of that batch's unanswered calls, in batch order (exactly what
    SPEC §3 allows); otherwise the approval is None.
    """
    return _paired_histories(frozen_batch, max_turns)


@functools.cache
def model_usages() -> st.SearchStrategy[ModelUsage]:
    return st.builds(
        ModelUsage,
        st.integers(0, 10**6),
        st.integers(0, 10**6),
        st.one_of(st.none(), st.sampled_from(["gpt", "claude", "glm-4"])),
    )


@functools.cache
def episodes() -> st.SearchStrategy[Episode]:
    return st.builds(Episode, texts(8), texts(), st.lists(messages(), max_size=2).map(tuple))


_unpaired_history = st.lists(messages(), max_size=6)
_any_approval = st.one_of(
    st.none(), st.lists(tool_calls(), max_size=2).map(lambda c: PendingApproval(tuple(c)))
)
_fields: dict[str, st.SearchStrategy[Any]] = {
    "schema_version": st.integers(0, 3),
    "episodic_memories": st.lists(episodes(), max_size=2),
    "usages": st.lists(model_usages(), max_size=3),
    "metadata": json_objects(),
    "plan": st.one_of(st.none(), json_objects(4)),
    "active_skills": st.one_of(st.none(), st.lists(texts(8), max_size=3)),
    "is_running": st.booleans(),
    "total_loop_count": st.integers(0, 1000),
    "current_loop_count": st.integers(0, 1000),
    "current_loop_usages": st.lists(model_usages(), max_size=2),
    "last_error": st.one_of(st.none(), texts()),
    "system_reminders": st.dictionaries(texts(8), texts(), max_size=3),
    "system_prompt_history": st.lists(
        st.builds(SystemPromptEntry, st.integers(0, 100), texts()), max_size=2
    ),
    "tools_history": st.lists(
        st.builds(ToolsEntry, st.integers(0, 100), st.lists(json_objects(4), max_size=2)),
        max_size=2,
    ),
    "pending_run_checkpoint": st.one_of(
        st.none(),
        st.builds(
            PendingRunCheckpoint,
            st.sampled_from(["after_user_input", "after_tool_batch", "suspended"]),
            st.integers(0, 100),
        ),
    ),
    "pending_plan_review": st.one_of(st.none(), json_objects(4).map(PendingPlanReview)),
    "plan_review_approved": st.booleans(),
}


def _draw_session_id(draw: st.DrawFn, session_id: str | st.SearchStrategy[str] | None) -> str:
    if session_id is None:
        return draw(session_ids())
    if isinstance(session_id, str):
        return session_id
    return draw(session_id)


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
    sid = _draw_session_id(draw, session_id)
    if paired:
        history, approval = draw(paired_histories(frozen_batch=frozen_batch))
    else:
        history, approval = draw(_unpaired_history), draw(_any_approval)
    values = {name: draw(strategy) for name, strategy in _fields.items()}
    return AgentState(sid, messages=history, pending_approval=approval, **values)


_small_texts = st.text(max_size=6)
_small_parts: st.SearchStrategy[Part] = st.one_of(
    st.builds(TextPart, _small_texts),
    st.builds(TextPart, _small_texts),
    media_parts(),
)
_small_roles: st.SearchStrategy[Role] = st.sampled_from(("user", "assistant", "system"))
_small_turns = st.sampled_from(("text", "text", "tools"))
_small_checkpoints = st.one_of(
    st.none(),
    st.builds(
        PendingRunCheckpoint,
        st.sampled_from(["after_user_input", "after_tool_batch", "suspended"]),
        st.integers(0, 9),
    ),
)
_small_metadata = st.dictionaries(st.sampled_from(["title", "n"]), st.integers(0, 9), max_size=2)


@st.composite
def storage_states(
    draw: st.DrawFn,
    session_id: str | st.SearchStrategy[str] | None = None,
    paired: bool = True,
) -> AgentState:
    """Small valid states for storage tests, cheap to generate and to shrink.

    Up to three turns (text messages, media parts, tool batches answered in any
    order), sometimes a trailing frozen approval batch with ``pending_approval``;
    ``is_running``, ``pending_run_checkpoint`` and a little ``metadata`` drawn.
    With ``paired=False`` an unanswered tool call is appended and no approval is
    set, so the history is never paired (save must refuse it, SPEC §3).
    Use :func:`agent_states` to exercise every field.
    """
    sid = _draw_session_id(draw, session_id)
    counter = iter(range(10**6))

    def batch(size: int) -> tuple[Message, list[ToolCall]]:
        calls = [ToolCall(f"call_{next(counter)}", draw(_small_texts), "{}") for _ in range(size)]
        return Message("assistant", (), tuple(calls)), calls

    def answer(call: ToolCall) -> Message:
        return Message("tool", (draw(_small_parts),), (), call.id)

    history: list[Message] = []
    for _ in range(draw(st.integers(0, 3))):
        if draw(_small_turns) == "tools":
            assistant, calls = batch(draw(st.integers(1, 2)))
            history.append(assistant)
            history.extend(answer(c) for c in draw(st.permutations(calls)))
        else:
            history.append(Message(draw(_small_roles), (draw(_small_parts),)))
    approval = None
    if not paired:
        history.append(batch(1)[0])
    elif draw(st.integers(0, 3)) == 0:
        assistant, calls = batch(draw(st.integers(1, 2)))
        history.append(assistant)
        answered = draw(st.integers(0, len(calls) - 1))
        history.extend(answer(c) for c in calls[:answered])
        approval = PendingApproval(tuple(calls[answered:]))  # exactly the unanswered (SPEC §3)
    return AgentState(
        sid,
        messages=history,
        pending_approval=approval,
        is_running=draw(st.booleans()),
        pending_run_checkpoint=draw(_small_checkpoints),
        metadata=draw(_small_metadata),
    )

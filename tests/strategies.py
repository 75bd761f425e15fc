"""Hypothesis strategies for valid :class:`~crashpoint.core.AgentState` objects.

The strategies live in the package (``crashpoint.scenarios.kinds.agent.strategies``), where the
storage state machine uses them at run time; this module re-exports them for the
core, storage and state-machine tests (``from strategies import agent_states``).
"""

from __future__ import annotations

from crashpoint.scenarios.kinds.agent.strategies import (
    SAFE_ID_ALPHABET,
    agent_states,
    any_session_ids,
    episodes,
    json_objects,
    json_values,
    media_parts,
    messages,
    model_usages,
    paired_histories,
    parts,
    session_ids,
    text_parts,
    texts,
    tool_calls,
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
    "text_parts",
    "texts",
    "tool_calls",
]

"""The tool-call pairing invariant: the persistence boundary is the pairing boundary.

SPEC §3 (seed §8). Model APIs require every tool call to be answered by exactly one
tool result and every tool result to answer a call, so a history that breaks this
must never be written (storage's ``history_unpaired``) nor returned by a load
(invariant P1).
"""

from __future__ import annotations

from collections.abc import Sequence

from ._state import AgentState, Message, ToolCall

__all__ = ["state_is_paired", "tool_calls_paired", "truncate_to_paired", "unanswered_calls"]


def tool_calls_paired(messages: Sequence[Message], awaiting_approval: bool = False) -> bool:
    """Whether the tool calls and tool results of ``messages`` pair up (SPEC §3).

    True exactly when:

    * every tool-call id of an assistant message has exactly one **later** tool
      message with that ``tool_call_id`` (so tool-call ids are unique in the history);
    * every tool message answers a call that is still pending (no orphan results,
      no second answer, no ``tool_call_id`` of ``None``);
    * unanswered calls remain only if ``awaiting_approval`` is true, and then they
      all belong to the **last** assistant message that has tool calls (the batch
      frozen for approval) and only tool messages follow that message. An
      unanswered call in an earlier batch is never allowed (the seed allowed any).

    Tool calls carried by non-assistant messages are ignored, as in the seed.
    """
    pending: dict[str, int] = {}  # call id -> index of the assistant message
    seen: set[str] = set()
    last_batch = -1  # index of the last assistant message with tool calls
    for index, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            last_batch = index
            for call in message.tool_calls:
                if call.id in seen:
                    return False
                seen.add(call.id)
                pending[call.id] = index
        elif message.role == "tool":
            if message.tool_call_id is None or message.tool_call_id not in pending:
                return False
            del pending[message.tool_call_id]
    if not pending:
        return True
    if not awaiting_approval:
        return False
    if any(index != last_batch for index in pending.values()):
        return False
    return all(m.role == "tool" for m in messages[last_batch + 1 :])


def truncate_to_paired(messages: Sequence[Message]) -> list[Message]:
    """The longest prefix of ``messages`` that is paired (``awaiting_approval=False``).

    Drops messages from the tail until the rest is paired (SPEC §3, seed §8.3):
    better to lose a half-finished tool batch than to persist it. Returns a new list;
    ``messages`` is not modified. The empty list is always paired.
    """
    result = list(messages)
    while result and not tool_calls_paired(result):
        result.pop()
    return result


def unanswered_calls(messages: Sequence[Message]) -> tuple[ToolCall, ...]:
    """The calls of the last assistant message with tool calls that no later tool
    message answers, in the order of that message: the frozen batch still awaiting
    approval (SPEC §3). Empty when there is no such message or all are answered."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant" and message.tool_calls:
            answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
            return tuple(c for c in message.tool_calls if c.id not in answered)
    return ()


def state_is_paired(state: AgentState) -> bool:
    """Whether ``state.messages`` is paired, awaiting approval iff ``pending_approval`` is set,
    and a pending approval lists exactly the unanswered calls of the frozen batch (same
    ids, same order; SPEC §3), so approving can never run a call twice.

    This is the check storage's ``save`` applies (SPEC §3, ``history_unpaired``), and
    the reference's load treats a file that fails it as undecodable.
    """
    approval = state.pending_approval
    if approval is None:
        return tool_calls_paired(state.messages)
    if not tool_calls_paired(state.messages, awaiting_approval=True):
        return False
    pending = [c.id for c in approval.tool_calls]
    return pending == [c.id for c in unanswered_calls(state.messages)]

"""Scripted fakes for the runtime's two protocols (SPEC §7; httpx's ``MockTransport`` idea).

:class:`ScriptedModel` answers from a script and streams each reply in chunks;
:class:`ScriptedTools` runs tool calls by returning canned results. Both count what
they did, so tests and checkers can tell a new model call from a replay and see
whether a tool ran again after a restart.

Example::

    model = ScriptedModel([[ToolCall("c1", "read", "{}")], "done"])
    tools = ScriptedTools({"c1": "file contents"})
    AgentRuntime(storage, "s1", model, tools).run("read it")
    assert model.calls == 2 and tools.executions["c1"] == 1
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from ._runtime import ModelChunk, ModelError, ToolInterrupted
from ._state import Message, ModelUsage, ToolCall

__all__ = ["Reply", "ScriptedModel", "ScriptedTools", "Step"]


@dataclass(frozen=True, slots=True)
class Reply:
    """A scripted reply with text and tool calls (either may be empty, not both)."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "tool_calls", tuple(self.tool_calls))


Step = str | Sequence[ToolCall] | Reply | ModelError
"""One scripted model reply: a text, a batch of tool calls, a :class:`Reply`, or a
:class:`~crashpoint.core.ModelError` the call fails with."""


class ScriptedModel:
    """A :class:`~crashpoint.core.ModelClient` that replies from a script.

    The reply to a call is ``script[n]`` where ``n`` is the number of assistant
    messages in the history sent: the model is a function of the history, so a fresh
    ``ScriptedModel`` with the same script continues a resumed run exactly where the
    persisted history stands. A call past the end of the script fails with
    :class:`~crashpoint.core.ModelError`.

    Args:
        script: the replies, in conversation order (see :data:`Step`).
        chunk_size: characters of text per streamed chunk (≥ 1); each tool call is
            one chunk, and a last chunk carries the usage.
        api_key: when set, a call with a different key fails (``401``).
        journal: a shared list to which each call appends ``"model"`` (with a
            :class:`ScriptedTools` journal, the order of calls and executions).

    Attributes:
        calls: model calls opened (``stream`` calls: each a new connection).
        completed: streams read to their end.
        abandoned: streams closed before their end.
        requests: the history sent with each call.

    Raises:
        ValueError: ``chunk_size`` < 1.
    """

    def __init__(
        self,
        script: Iterable[Step],
        *,
        chunk_size: int = 8,
        api_key: str | None = None,
        journal: list[str] | None = None,
    ) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, not {chunk_size}")
        self.script: tuple[Step, ...] = tuple(script)
        self.chunk_size = chunk_size
        self._key = api_key
        self.journal = journal
        self.calls = 0
        self.completed = 0
        self.abandoned = 0
        self.requests: list[tuple[Message, ...]] = []

    def __repr__(self) -> str:
        return f"ScriptedModel(steps={len(self.script)}, calls={self.calls})"

    def stream(
        self, messages: Sequence[Message], *, api_key: str | None = None
    ) -> Iterator[ModelChunk]:
        """Open a new call with ``messages``; the reply streams from the iterator."""
        self.calls += 1
        self.requests.append(tuple(messages))
        if self.journal is not None:
            self.journal.append("model")
        step = sum(1 for m in messages if m.role == "assistant")
        authorized = self._key is None or api_key == self._key
        return self._chunks(step, len(messages), authorized)

    def _chunks(self, n: int, size: int, authorized: bool) -> Iterator[ModelChunk]:
        if not authorized:
            raise ModelError("401 unauthorized: wrong or missing API key")
        if n >= len(self.script):
            raise ModelError(f"script exhausted: no reply number {n} ({len(self.script)} scripted)")
        step = self.script[n]
        if isinstance(step, ModelError):
            raise ModelError(*step.args)
        if isinstance(step, Reply):
            reply = step
        elif isinstance(step, str):
            reply = Reply(step)
        else:
            reply = Reply("", tuple(step))
        out = 0
        try:
            for i in range(0, len(reply.text), self.chunk_size):
                piece = reply.text[i : i + self.chunk_size]
                out += 1
                yield ModelChunk(text=piece)
            for call in reply.tool_calls:
                out += 1
                yield ModelChunk(tool_call=call)
            yield ModelChunk(usage=ModelUsage(size, out, "scripted"))
        except GeneratorExit:
            self.abandoned += 1
            raise
        self.completed += 1


class ScriptedTools:
    """A :class:`~crashpoint.core.ToolExecutor` with canned results.

    Args:
        results: result text by tool-call id or by tool name (id first); default
            ``"<name>: ok"``.
        dangerous: tool names that need approval.
        interrupt: call ids whose **first** execution stops without a result
            (:class:`~crashpoint.core.ToolInterrupted`), like a tool that hangs once.
        journal: a shared list to which each execution appends ``"tool:<id>"``.

    Attributes:
        executions: how many times each call id was executed (interrupted ones too).
    """

    def __init__(
        self,
        results: Mapping[str, str] | None = None,
        *,
        dangerous: Iterable[str] = (),
        interrupt: Iterable[str] = (),
        journal: list[str] | None = None,
    ) -> None:
        self.results = dict(results or {})
        self.dangerous = frozenset(dangerous)
        self.interrupt = frozenset(interrupt)
        self.journal = journal
        self.executions: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"ScriptedTools(executions={dict(self.executions)})"

    def is_dangerous(self, call: ToolCall) -> bool:
        return call.name in self.dangerous

    def execute(self, call: ToolCall) -> str:
        self.executions[call.id] += 1
        if self.journal is not None:
            self.journal.append(f"tool:{call.id}")
        if call.id in self.interrupt and self.executions[call.id] == 1:
            raise ToolInterrupted(f"{call.name} did not finish")
        return self.results.get(call.id, self.results.get(call.name, f"{call.name}: ok"))

"""Where an interception hands control to a scheduler of concurrent actors (SPEC.md §10.1).

faultfs knows nothing of who the actors are or how the next one is chosen: an
:class:`~crashpoint.faultfs.Interception` whose :attr:`actors` is set calls these
hooks, and whoever installed them (the harness's deterministic scheduler) decides.

* :meth:`ActorHooks.before_call` runs before every intercepted file call (an outermost
  one: a fake's own nested calls do not yield), so a schedule can switch actors only
  between two calls, never inside one.
* :meth:`ActorHooks.flock` is ``fcntl.flock``/``lockf`` on a modelled descriptor: a
  lock table of the model's files shared by the actors (a held lock blocks the
  other actor in the scheduler, a non-blocking try raises ``BlockingIOError``).
* :meth:`ActorHooks.sleep` and :meth:`ActorHooks.monotonic` are the target's
  ``time.sleep``/``time.monotonic``/``time.perf_counter``: virtual time.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["ActorHooks", "YieldingFileSystem"]


@runtime_checkable
class ActorHooks(Protocol):
    """What an interception calls when actors share it (see the module docstring)."""

    def before_call(self) -> None:
        """A file call is about to run: the scheduler may let another actor go first."""

    def flock(self, path: str, exclusive: bool, blocking: bool, unlock: bool) -> None:
        """Lock (or with ``unlock`` release) the model file ``path`` for the calling
        actor. Raises ``BlockingIOError`` (EWOULDBLOCK) for a non-blocking try on a lock
        another actor holds; a blocking one waits in the scheduler."""

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` of virtual time pass for the calling actor."""

    def monotonic(self) -> float:
        """Virtual seconds since the schedule began."""

    def pid(self) -> int | None:
        """The calling actor's process id (``os.getpid``), None outside an actor."""


class YieldingFileSystem:
    """``inner`` (a :class:`~crashpoint.faultfs.FileSystem`) whose every method call is
    first a yield point of ``hooks``: a protocol target (``factory(fs, base_dir)``)
    calls the filesystem directly, not through the interception, and is scheduled by
    this. Attributes other than methods are ``inner``'s."""

    __slots__ = ("_hooks", "_inner")

    def __init__(self, inner: Any, hooks: ActorHooks) -> None:
        self._inner = inner
        self._hooks = hooks

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name.startswith("_") or not callable(value):
            return value
        hooks = self._hooks

        def call(*args: Any, **kwargs: Any) -> Any:
            hooks.before_call()
            return value(*args, **kwargs)

        return call

"""Advisory whole-file locks and the clock their timeouts are measured on (SPEC.md §6).

The reference storage locks ``S.json.lock`` around its writes (SPEC.md §6, "Concurrent
writers"). A filesystem's ``lock(path, timeout)`` tries the lock, and while another
holder has it waits in short steps on a :class:`Clock` until ``timeout`` seconds have
passed, then raises ``TimeoutError`` (``ETIMEDOUT``). The clock is injectable so the
harness can make waiting virtual (SPEC.md §10.1: lock timeouts advance a clock, they do
not wait): :class:`SystemClock` really sleeps, :class:`VirtualClock` only advances.
"""

from __future__ import annotations

import errno
import math
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from ._image import os_error

__all__ = ["Clock", "SystemClock", "VirtualClock", "check_timeout", "wait_for"]

POLL_FIRST = 0.001
"""The first wait between two tries of a held lock, in seconds (doubled up to
:data:`POLL_MAX`)."""
POLL_MAX = 0.05
"""The longest wait between two tries, in seconds."""


@runtime_checkable
class Clock(Protocol):
    """Monotonic time and sleeping, in seconds."""

    def monotonic(self) -> float:
        """Seconds since an arbitrary origin; never decreases."""

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` (>= 0) pass."""


class SystemClock:
    """The real clock: :func:`time.monotonic` and :func:`time.sleep`."""

    __slots__ = ()

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class VirtualClock:
    """A clock that never waits: :meth:`sleep` advances :attr:`now` at once.

    Attributes:
        now: the current time in seconds (starts at ``start``).
        slept: the total of every sleep, in seconds.
    """

    __slots__ = ("now", "slept")

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self.slept = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


def check_timeout(timeout: float) -> float:
    """``timeout`` as a float: a finite number of seconds >= 0.

    Raises:
        ValueError: a negative, infinite or NaN timeout, or not a number.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ValueError(f"a lock timeout is a number of seconds, not {timeout!r}")
    value = float(timeout)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"a lock timeout is a finite number of seconds >= 0, not {timeout!r}")
    return value


def wait_for(take: Callable[[], bool], path: str, timeout: float, clock: Clock) -> None:
    """Call ``take()`` until it returns True or ``timeout`` seconds have passed on ``clock``.

    ``take`` is tried at once, then after waits of 1 ms doubling up to 50 ms (never
    past the deadline); a timeout of 0 tries once.

    Raises:
        TimeoutError: ``OSError(ETIMEDOUT, ..., path)`` when the deadline passed with
            the lock still held by another.
        ValueError: an invalid ``timeout`` (see :func:`check_timeout`).
    """
    timeout = check_timeout(timeout)
    deadline = clock.monotonic() + timeout
    step = POLL_FIRST
    while not take():
        left = deadline - clock.monotonic()
        if left <= 0:
            raise os_error(errno.ETIMEDOUT, path)
        clock.sleep(min(step, left))
        step = min(step * 2, POLL_MAX)

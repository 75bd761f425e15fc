"""The virtual clock a target run under interception sees (FAULT-MODEL.md §4).

A re-run must issue the same trace, so every clock a target reads is seeded and
advances deterministically: the wall clock (``time.time``) starts on 2026-01-01 plus
the seed, the monotonic and performance counters (``time.monotonic``,
``time.perf_counter``) at a seeded value; each reading advances all of them by one
tick (1 ms), and ``time.sleep(s)`` advances them by ``s`` and returns at once. One
small class, so any runner (the interception, a concurrency driver) can share it.
"""

from __future__ import annotations

__all__ = ["EPOCH", "TICK_NS", "VirtualClock"]

EPOCH = 1_767_225_600
"""2026-01-01T00:00:00Z, in seconds: the wall clock's start (plus the seed)."""

TICK_NS = 1_000_000
"""How far one reading advances the clock: 1 ms."""

_MONOTONIC_START_NS = 10_000 * 10**9
"""The monotonic counters' start before the seed is added (an uptime of 10,000 s)."""


class VirtualClock:
    """A seeded clock: ``wall_ns`` and ``monotonic_ns`` advance together.

    Args:
        seed: seeds both starts (``seed % 1_000_000`` seconds added).
    """

    __slots__ = ("_offset_ns", "_wall_ns")

    def __init__(self, seed: int = 0) -> None:
        self._wall_ns = 0
        self._offset_ns = 0
        self.reset(seed)

    def reset(self, seed: int) -> None:
        """Start again from the seeded values (a new run)."""
        start = seed % 1_000_000
        self._wall_ns = (EPOCH + start) * 10**9
        self._offset_ns = (EPOCH - _MONOTONIC_START_NS // 10**9) * 10**9  # wall - monotonic

    def wall_ns(self, *, advance: bool = True) -> int:
        """The wall clock, nanoseconds since the epoch; a reading advances it one tick
        (``advance=False``: a file's timestamp, read without advancing)."""
        if advance:
            self._wall_ns += TICK_NS
        return self._wall_ns

    def monotonic_ns(self) -> int:
        """The monotonic (and performance) counter, nanoseconds; advances one tick."""
        return self.wall_ns() - self._offset_ns

    def sleep(self, seconds: float) -> None:
        """Advance the clock by ``seconds`` (at once). Raises ValueError if negative,
        as ``time.sleep`` does."""
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        self._wall_ns += int(seconds * 1e9)

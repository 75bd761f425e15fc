"""The virtual clock a target sees under interception (issue 22): the monotonic and
performance counters are seeded like the wall clock, advance deterministically, and
``time.sleep`` advances the clock and returns at once."""

from __future__ import annotations

import itertools
import threading
import time
from time import monotonic as bound_monotonic  # bound before any patch: still virtual

from crashpoint.faultfs import MemoryFileSystem, RecordingFileSystem, intercept

BASE = "/base"


def _recording() -> RecordingFileSystem:
    return RecordingFileSystem(MemoryFileSystem(dirs=(BASE,)))


def _readings() -> list[float]:
    out = [time.monotonic(), time.perf_counter(), bound_monotonic()]
    out += [time.monotonic_ns() / 1e9, time.perf_counter_ns() / 1e9]
    time.sleep(0.5)  # at once, on the virtual clock
    out.append(time.monotonic())
    return out


def test_monotonic_and_perf_counters_are_seeded_and_advance_one_tick_per_reading() -> None:
    with intercept(_recording(), root=BASE, seed=5) as icpt:
        first = _readings()
        icpt.switch(_recording())
        again = _readings()
        icpt.switch(_recording(), seed=6)
        other = _readings()
    assert first == again  # a re-run reads the same clocks
    assert other != first  # the seed moves them
    steps = [round(b - a, 6) for a, b in itertools.pairwise(first)]
    assert steps[:4] == [0.001] * 4  # one tick (1 ms) per reading, every counter alike
    assert round(first[-1] - first[-2], 6) == 0.501  # the half second slept, then a tick


def test_sleep_returns_at_once_and_threads_of_the_target_sleep_for_real() -> None:
    slept: list[float] = []
    real = time.perf_counter()  # the harness's clock: real, outside the patch
    with intercept(_recording(), root=BASE) as icpt:
        before = icpt.clock.monotonic_ns()
        time.sleep(10_000)
        after = icpt.clock.monotonic_ns()

        def worker() -> None:  # a polling thread must not spin: it sleeps for real
            t0 = icpt.clock.monotonic_ns()
            time.sleep(0.01)
            slept.append(icpt.clock.monotonic_ns() - t0)

        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert after - before >= 10_000 * 10**9  # the clock moved by the sleep ...
    assert time.perf_counter() - real < 10_000  # ... the process did not wait for it
    assert slept and slept[0] == 10**6  # the thread's sleep did not move the clock (1 read)

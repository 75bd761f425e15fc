"""Worker processes for any plan (``--jobs N``): a standard-library process pool whose
workers leave Ctrl-C and SIGTERM to the parent, and that is killed, not waited for, when
the run is interrupted or a task fails."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

__all__ = ["default_jobs", "ignore_interrupts", "stop_workers", "worker_pool"]


def default_jobs() -> int:
    """All cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def ignore_interrupts() -> None:
    """Worker initializer: Ctrl-C reaches the whole process group; the parent alone
    handles it (and stops the workers), so a worker prints no traceback of its own.
    SIGTERM ends a worker at once, as by default (not the handler a forked worker
    inherits from the command line)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Stop ``pool`` now: drop the queued tasks and kill the running workers (an
    interrupted run exits in well under a second instead of finishing the queue).

    Python 3.14 has ``ProcessPoolExecutor.kill_workers``; before it, the pool's worker
    processes are reached through its ``_processes`` table. The pool's pending work is
    dropped first: Python 3.11's manager thread would otherwise fail a traceback onto
    stderr setting "broken pool" on futures that ``map`` had already cancelled."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # shutdown drops it
    manager = getattr(pool, "_executor_manager_thread", None)  # and this
    pending = getattr(pool, "_pending_work_items", None)
    work_ids = getattr(pool, "_work_ids", None)
    if work_ids is not None:
        # Drain the queue of ids first: the manager thread looks each id it takes up in
        # the pending table, and an id whose item was dropped is a KeyError traceback.
        with contextlib.suppress(Exception):
            while True:
                work_ids.get_nowait()
    if isinstance(pending, dict):
        pending.clear()
    kill = getattr(pool, "kill_workers", None)
    if callable(kill):  # pragma: no cover - Python 3.14+
        kill()
    else:
        for process in processes:
            if process.is_alive():
                process.kill()
    for process in processes:
        process.join(timeout=2)
    pool.shutdown(wait=False, cancel_futures=True)
    # Let the manager thread finish closing its wakeup pipe now: at exit, Python 3.11's
    # ``_python_exit`` writes to that pipe without the pool's lock, and a manager thread
    # closing it at the same moment is an "Exception ignored ... Bad file descriptor"
    # traceback on stderr (fixed with a lock in later CPython releases).
    if manager is not None:
        manager.join(timeout=2)


@contextlib.contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A process pool of ``workers`` whose workers leave Ctrl-C to the parent
    (:func:`ignore_interrupts`). Leaving the block normally waits for the pool; any
    exception (Ctrl-C, SIGTERM, a task's error) kills the workers first
    (:func:`stop_workers`), a hung one too, instead of waiting for them."""
    from concurrent.futures import ProcessPoolExecutor  # only for a pool

    pool = ProcessPoolExecutor(max_workers=workers, initializer=ignore_interrupts)
    try:
        yield pool
    except BaseException:
        stop_workers(pool)
        raise
    pool.shutdown(wait=True)

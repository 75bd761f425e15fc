"""Field-bug stores for concurrent writers (issue 25, SPEC.md §10.1).

Each is a document target (``factory(base_dir)`` with ``save``/``load``) run as two
actors on one directory by ``crashpoint verify ... --actors 2``:

* :class:`SharedTmpStore`: every writer uses one fixed ``doc.json.tmp`` (several ML
  and sync tools, 2020–2026): a second writer's ``os.replace`` finds the temporary
  gone (FileNotFoundError) or renames the other's payload (I8);
* :class:`UnlockedUpdateStore`: atomic saves with a pid-suffixed temporary, but an
  update is load, change, save with no lock between: one actor's update is lost (L1);
  its saves alone pass I8 (``PidTmpStore`` is the same class);
* :class:`LockedUpdateStore`: tmp + fsync + rename + directory fsync, and ``update``
  holding a ``filelock.FileLock`` across the read and the write: passes I8, L1, R2,
  W1 and D2 under every model;
* :class:`PortalockerUpdateStore`: the same, the lock a ``portalocker.Lock`` (4.4.2:
  ``fcntl.flock(LOCK_EX|LOCK_NB)`` on the lock file, polled with ``time.sleep``
  against ``time.perf_counter``): passes under every model;
  :class:`PortalockerUnlockedUpdateStore` is it with the lock removed from ``update``
  (L1);
* :class:`InPlaceStore`: the writer truncates the document and writes it in place: a
  concurrent reader sees an empty or torn file (R2).

Usage::

    crashpoint verify examples/concurrency/stores.py:SharedTmpStore --actors 2
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

import filelock
import portalocker

__all__ = [
    "InPlaceStore",
    "LockedUpdateStore",
    "PidTmpStore",
    "PortalockerUnlockedUpdateStore",
    "PortalockerUpdateStore",
    "SharedTmpStore",
    "UnlockedUpdateStore",
]


class _Base:
    name = "doc.json"

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.path = os.path.join(base_dir, self.name)

    def load(self) -> Any:
        """The saved value, or None before the first save."""
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def _write_tmp(self, tmp: str, value: Any) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f)
            f.flush()
            os.fsync(f.fileno())

    def _sync_dir(self) -> None:
        fd = os.open(self.base_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class SharedTmpStore(_Base):
    """Atomic and durable alone; every writer shares ``doc.json.tmp``."""

    def save(self, value: Any) -> None:
        tmp = self.path + ".tmp"
        self._write_tmp(tmp, value)
        os.replace(tmp, self.path)
        self._sync_dir()


class UnlockedUpdateStore(_Base):
    """A pid-suffixed temporary (writers never collide), no lock around updates."""

    def save(self, value: Any) -> None:
        tmp = f"{self.path}.{os.getpid()}.tmp"
        self._write_tmp(tmp, value)
        os.replace(tmp, self.path)
        self._sync_dir()


PidTmpStore = UnlockedUpdateStore
"""The pid-suffixed temporary with ``os.replace``: passes I8, fails L1 without a lock."""


class LockedUpdateStore(UnlockedUpdateStore):
    """:class:`UnlockedUpdateStore` whose saves and updates hold ``doc.json.lock``
    (``filelock.FileLock``: ``fcntl.flock`` polled with sleeps)."""

    def __init__(self, base_dir: str) -> None:
        super().__init__(base_dir)
        self.lock = filelock.FileLock(self.path + ".lock", timeout=10)

    def save(self, value: Any) -> None:
        with self.lock:
            super().save(value)

    def update(self, fn: Callable[[Any], Any]) -> None:
        """``save(fn(load()))`` with the lock held across the read and the write."""
        with self.lock:
            super().save(fn(self.load()))


class PortalockerUpdateStore(UnlockedUpdateStore):
    """:class:`UnlockedUpdateStore` whose saves and updates hold ``doc.json.lock`` through
    ``portalocker.Lock`` (pinned 4.4.2; portalocker/utils.py ``Lock.acquire``: open the
    file in mode ``a``, ``portalocker.lock(fh, LOCK_EX | LOCK_NB)`` =
    ``fcntl.flock`` on its descriptor, retried every ``check_interval`` with
    ``time.sleep`` until ``time.perf_counter`` passes ``timeout``; ``release`` is
    ``fcntl.flock(LOCK_UN)`` and ``close``). A ``Lock`` holds one file handle, so each
    call makes its own."""

    timeout = 10.0

    def _lock(self) -> portalocker.Lock:
        return portalocker.Lock(self.path + ".lock", timeout=self.timeout)

    def save(self, value: Any) -> None:
        with self._lock():
            super().save(value)

    def update(self, fn: Callable[[Any], Any]) -> None:
        """``save(fn(load()))`` with the lock held across the read and the write."""
        with self._lock():
            UnlockedUpdateStore.save(self, fn(self.load()))


class PortalockerUnlockedUpdateStore(PortalockerUpdateStore):
    """:class:`PortalockerUpdateStore` with the lock taken out of ``update`` (each save
    still locked): two updates read the same value and one is lost (L1)."""

    def update(self, fn: Callable[[Any], Any]) -> None:
        """``save(fn(load()))``; only the save holds the lock."""
        self.save(fn(self.load()))


class InPlaceStore(_Base):
    """Truncates and rewrites the document in place (no temporary)."""

    def save(self, value: Any) -> None:
        with open(self.path, "w", encoding="utf-8") as f:
            data = json.dumps(value)
            half = len(data) // 2
            f.write(data[:half])
            f.flush()
            f.write(data[half:])
            f.flush()
            os.fsync(f.fileno())

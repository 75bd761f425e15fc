"""A document store that renames a directory into place, for ``crashpoint verify --kind
document``: each save fills a fresh directory ``next/`` with ``doc.json``, moves the
current directory aside (``current`` -> ``old``), renames ``next`` to ``current`` and
removes ``old`` (``unlink`` + ``rmdir``), as stores that publish a whole tree at once do.

* :class:`DirSwapStore` fsyncs the file, ``next/`` and the base directory at each step:
  it passes every persistence model, with faults (``load`` falls back to ``old/`` when
  a crash fell between the two renames);
* :class:`DirSwapNoFsyncStore` fsyncs nothing: under a process crash each state is one
  of the two documents, but after a power cut the acknowledged save may be gone or the
  document empty (A1/A2 under the power-loss families).

Usage::

    crashpoint verify examples/stores/dirswap.py:DirSwapStore --model all --faults
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

__all__ = ["DirSwapNoFsyncStore", "DirSwapStore"]


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_tree(path: str) -> None:
    """Remove ``path`` (a directory of plain files), if it exists."""
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(path):
            os.unlink(os.path.join(path, name))
        os.rmdir(path)


class DirSwapStore:
    """One document in ``base_dir/current/doc.json``, published by a directory rename."""

    durable = True

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.current = os.path.join(base_dir, "current")
        self.old = os.path.join(base_dir, "old")
        self.next = os.path.join(base_dir, "next")

    def load(self) -> Any:
        """The document of ``current/``, else of ``old/`` (a crash between the renames),
        else None."""
        for d in (self.current, self.old):
            try:
                with open(os.path.join(d, "doc.json"), encoding="utf-8") as f:
                    return json.load(f)
            except FileNotFoundError:
                continue
        return None

    def _sync(self, path: str) -> None:
        if self.durable:
            _fsync_dir(path)

    def save(self, value: Any) -> None:
        """Fill ``next/``, move ``current`` aside, rename ``next`` into place, remove
        the old directory."""
        _remove_tree(self.next)  # a save cut short before its rename
        if os.path.isdir(self.current):
            # a save cut short after its first rename left both; the rename that made
            # current may not be durable yet (its directory fsync failed): make it so
            # before removing the copy a power cut would fall back to
            self._sync(self.base_dir)
            _remove_tree(self.old)
        os.mkdir(self.next)
        with open(os.path.join(self.next, "doc.json"), "w", encoding="utf-8") as f:
            json.dump(value, f)
            f.flush()
            if self.durable:
                os.fsync(f.fileno())
        self._sync(self.next)
        self._sync(self.base_dir)
        if os.path.isdir(self.current):
            os.rename(self.current, self.old)
        os.rename(self.next, self.current)
        self._sync(self.base_dir)
        _remove_tree(self.old)
        self._sync(self.base_dir)


class DirSwapNoFsyncStore(DirSwapStore):
    """:class:`DirSwapStore` without any fsync."""

    durable = False

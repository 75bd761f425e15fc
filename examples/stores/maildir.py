"""A maildir-style document store: each save is a new file committed by ``link()`` +
``unlink()`` (the way maildir delivers a message: write it in ``tmp/``, hard-link it into
``new/``, remove the ``tmp/`` name), for ``crashpoint verify --kind document``.

* :class:`MaildirStore` writes ``tmp/N.json``, fsyncs it, links it to ``new/N.json``,
  unlinks the temporary name, fsyncs ``new/`` and ``tmp/``, then removes the older
  ``new/`` entries (and fsyncs ``new/`` again): it passes every persistence model, with
  faults;
* :class:`MaildirNoDirFsyncStore` is the same without the directory fsyncs: the link is
  never made durable, so after a power cut the acknowledged save may be gone (A2 under
  every power-loss family) although a process crash never loses it.

``load`` returns the value of the highest-numbered file in ``new/`` (None before the
first save). Usage::

    crashpoint verify examples/stores/maildir.py:MaildirStore --model all --faults
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

__all__ = ["MaildirNoDirFsyncStore", "MaildirStore"]


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class MaildirStore:
    """One document in ``base_dir/new/N.json`` (the highest ``N``), committed by a link."""

    sync_dirs = True

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.tmp = os.path.join(base_dir, "tmp")
        self.new = os.path.join(base_dir, "new")

    def _numbers(self) -> list[int]:
        try:
            names = os.listdir(self.new)
        except FileNotFoundError:
            return []
        return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())

    def load(self) -> Any:
        """The value of the newest committed file, or None before the first save."""
        numbers = self._numbers()
        if not numbers:
            return None
        with open(os.path.join(self.new, f"{numbers[-1]:08d}.json"), encoding="utf-8") as f:
            return json.load(f)

    def save(self, value: Any) -> None:
        """Write ``value`` to ``tmp/``, make it durable, link it into ``new/``, drop the
        temporary name, make the link durable, then remove the older files."""
        for d in (self.tmp, self.new):
            if not os.path.isdir(d):
                os.mkdir(d)
        if self.sync_dirs:  # every save: an earlier save's fsync may have failed (EIO)
            _fsync_dir(self.base_dir)
        older = self._numbers()
        name = f"{(older[-1] + 1) if older else 1:08d}.json"
        tmp = os.path.join(self.tmp, name)
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(value, f)
                f.flush()
                os.fsync(f.fileno())
            os.link(tmp, os.path.join(self.new, name))
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if self.sync_dirs:
            _fsync_dir(self.new)
            _fsync_dir(self.tmp)
        for n in older:
            os.unlink(os.path.join(self.new, f"{n:08d}.json"))
        if older and self.sync_dirs:
            _fsync_dir(self.new)


class MaildirNoDirFsyncStore(MaildirStore):
    """:class:`MaildirStore` without its directory fsyncs: the link into ``new/`` (and
    the removal of the older files) may not survive a power cut."""

    sync_dirs = False

"""A JSON document store written the ordinary way: ``open``, ``os.fsync``, ``os.replace``.

Three variants of one store, for ``crashpoint verify --kind document``:

* :class:`JsonStore` writes a temporary file, flushes and fsyncs it, renames it over
  the document with ``os.replace`` and fsyncs the directory: it passes every
  persistence model, with faults;
* :class:`NoFsyncJsonStore` is the same without the two fsyncs: after a power loss
  the renamed document can be empty (A2, ``power-loss``);
* :class:`InPlaceJsonStore` overwrites the document in place: a crash in the middle
  leaves a torn document (A1, ``process-crash``);
* :class:`FdatasyncJsonStore` writes a temporary file, ``fdatasync``s it, renames it over
  the document and ``fdatasync``s the document, as database-style code does: no call
  commits the rename, so after a power cut under ``ext4`` or ``posix`` the document is old
  and the temporary new (A2; issue 20: 3 of 3 real ext4 cuts lost the save), while
  ``power-loss`` before issue 20 passed it; :class:`FdatasyncDirJsonStore` adds the fsync
  of the directory and passes every family.

Usage::

    crashpoint verify examples/stores/jsonstore.py:JsonStore --model all --faults
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

__all__ = [
    "FdatasyncDirJsonStore",
    "FdatasyncJsonStore",
    "InPlaceJsonStore",
    "JsonStore",
    "NoFsyncJsonStore",
]


class JsonStore:
    """One JSON document in ``base_dir/doc.json``, replaced atomically and durably."""

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

    def save(self, value: Any) -> None:
        """Write ``value`` to a temporary file, make it durable, rename it over the
        document and make the rename durable."""
        tmp = self.path + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(value, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        fd = os.open(self.base_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class NoFsyncJsonStore(JsonStore):
    """:class:`JsonStore` without its fsyncs: atomic under a process crash, not durable
    under a power loss (the rename can reach the disk before the data)."""

    def save(self, value: Any) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f)
        os.replace(tmp, self.path)


class InPlaceJsonStore(JsonStore):
    """:class:`JsonStore` writing the document in place: a crash between the
    truncation and the last ``write(2)`` leaves a torn document."""

    def save(self, value: Any) -> None:
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(value, f)
            f.flush()
            os.fsync(f.fileno())


class FdatasyncJsonStore(JsonStore):
    """tmp -> ``fdatasync`` -> rename -> ``fdatasync(main)``: the data is durable, the
    rename is not (``fdatasync`` of a file whose size did not change since its last sync
    commits no metadata; issue 20)."""

    def save(self, value: Any) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f)
            f.flush()
            os.fdatasync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)


class FdatasyncDirJsonStore(FdatasyncJsonStore):
    """:class:`FdatasyncJsonStore` followed by an fsync of the directory, which commits
    the rename under every family."""

    def save(self, value: Any) -> None:
        super().save(value)
        fd = os.open(self.base_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

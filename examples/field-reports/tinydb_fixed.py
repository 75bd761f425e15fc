"""tinydb with an atomic storage: the fix for the merged tail (issue 12).

tinydb's ``JSONStorage.write`` seeks to 0, writes, flushes, fsyncs and *then*
truncates: a crash between the write and the truncate leaves the new content followed
by the tail of the old one (``examples/field-reports/merged-tail``). This storage
writes a temporary file, fsyncs it, renames it over the database and fsyncs the
directory, so a crash leaves the old database or the new one.

Usage::

    crashpoint explain examples/field-reports/merged-tail/document \\
        --target examples/field-reports/tinydb_fixed.py:factory
"""

from __future__ import annotations

import json
import os
from typing import Any

from tinydb import TinyDB
from tinydb.storages import Storage
from tinydb.table import Document

__all__ = ["AtomicJSONStorage", "factory"]


class AtomicJSONStorage(Storage):  # type: ignore[misc]
    """A tinydb storage that replaces its JSON file atomically and durably."""

    def __init__(self, path: str) -> None:
        self.path = path

    def read(self) -> dict[str, Any] | None:
        try:
            with open(self.path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            return None
        return json.loads(text) if text else None

    def write(self, data: dict[str, Any]) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(os.path.dirname(self.path), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        return None


class FixedTinyDBDocument:
    """One value in ``base_dir/db.json`` through ``TinyDB`` on :class:`AtomicJSONStorage`."""

    def __init__(self, base_dir: str) -> None:
        self.db = TinyDB(os.path.join(base_dir, "db.json"), storage=AtomicJSONStorage)

    def save(self, value: Any) -> None:
        self.db.upsert(Document({"value": value}, doc_id=1))

    def load(self) -> Any:
        doc = self.db.get(doc_id=1)
        return None if doc is None else doc["value"]


def factory(base_dir: str) -> FixedTinyDBDocument:
    """The tinydb document target of ``examples/libraries/tinydb_target.py``, fixed."""
    return FixedTinyDBDocument(base_dir)

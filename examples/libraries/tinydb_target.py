"""tinydb's ``JSONStorage`` (the default storage of ``TinyDB(path)``) as a document target.

The document is one TinyDB document (id 1) holding ``{"value": value}``: each save is
one ``Table.upsert``, which reads the table and writes the whole database once through
``JSONStorage.write`` (seek(0), write, flush, fsync, truncate). Load opens the database
afresh and returns the value, or None before the first save.

Usage::

    crashpoint verify examples/libraries/tinydb_target.py:factory --model all --faults
"""

from __future__ import annotations

import os
from typing import Any

from tinydb import TinyDB
from tinydb.table import Document

__all__ = ["TinyDBDocument", "factory"]


class TinyDBDocument:
    """One value in ``base_dir/db.json`` through ``TinyDB(path)`` (JSONStorage)."""

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(base_dir, "db.json")
        self.db = TinyDB(self.path)

    def save(self, value: Any) -> None:
        """Upsert document 1 as ``{"value": value}``: one JSONStorage.write."""
        self.db.upsert(Document({"value": value}, doc_id=1))

    def load(self) -> Any:
        """Document 1's value, or None when there is none."""
        doc = self.db.get(doc_id=1)
        return None if doc is None else doc["value"]


def factory(base_dir: str) -> TinyDBDocument:
    """``TinyDB(base_dir/db.json)`` wrapped as a document target."""
    return TinyDBDocument(base_dir)

"""The standard library's ``dbm.dumb`` (and ``shelve`` over it) as document targets:
one key of a database opened with flag ``"c"``, as the documentation shows, for both
saving and loading.

``dbm.dumb`` (CPython 3.11, ``Lib/dbm/dumb.py``) keeps values in ``<name>.dat`` and the
index in ``<name>.dir``; ``_Database`` holds ``os`` and ``io`` as class attributes
(``_os``, ``_io``), which crashpoint's interception reaches (issue 21). A value is
written into ``.dat`` in place; ``_commit`` (on close) unlinks ``.bak``, renames ``.dir``
to ``.bak`` and writes a new ``.dir``; nothing is fsynced, and on open a missing ``.dir``
is created empty (``.bak`` is never read back).

Usage::

    crashpoint verify examples/libraries/dbm_dumb_target.py:factory --model all --faults
    crashpoint verify examples/libraries/dbm_dumb_target.py:shelf --model all --faults
"""

from __future__ import annotations

import dbm.dumb
import json
import os
import shelve
from typing import Any

__all__ = ["DumbDocument", "ShelfDocument", "factory", "shelf"]


class DumbDocument:
    """One JSON value under key ``doc`` of ``dbm.dumb.open(base_dir/db, "c")``."""

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(base_dir, "db")

    def save(self, value: Any) -> None:
        """``db[b"doc"] = json`` and close (which commits the index)."""
        with dbm.dumb.open(self.path, "c") as db:
            db[b"doc"] = json.dumps(value).encode()

    def load(self) -> Any:
        """``db[b"doc"]`` decoded, or None when the key is absent."""
        with dbm.dumb.open(self.path, "c") as db:
            return json.loads(db[b"doc"]) if b"doc" in db else None


class ShelfDocument:
    """One value under key ``doc`` of ``shelve.Shelf(dbm.dumb.open(base_dir/shelf, "c"))``."""

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(base_dir, "shelf")

    def save(self, value: Any) -> None:
        """``shelf["doc"] = value`` and close."""
        with shelve.Shelf(dbm.dumb.open(self.path, "c")) as s:
            s["doc"] = value

    def load(self) -> Any:
        """``shelf.get("doc")``."""
        with shelve.Shelf(dbm.dumb.open(self.path, "c")) as s:
            return s.get("doc")


def factory(base_dir: str) -> DumbDocument:
    """``dbm.dumb`` as a document target."""
    return DumbDocument(base_dir)


def shelf(base_dir: str) -> ShelfDocument:
    """``shelve`` over ``dbm.dumb`` as a document target."""
    return ShelfDocument(base_dir)

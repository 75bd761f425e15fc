"""pickledb as a document target, for both of its APIs: 0.9.x (``pickledb.load(path,
auto_dump=True)``, ``db.set``/``db.get``) and 1.x (``PickleDB(path)``, ``db.set`` then
``db.save()``; ``db.load()``/``db.get``). The document is the value of one key, ``doc``.

pickledb 0.9.2's ``dump`` does ``json.dump(self.db, open(path, 'wt'))`` and then the
same again in a ``Thread``: the file is truncated and rewritten in place, twice, never
fsynced. pickledb 1.6's ``save`` writes ``<path>.tmp`` through ``aiofiles`` and
``os.replace``s it over the file, never fsyncing either; ``load`` reads an empty or
missing file as an empty database.

Usage::

    crashpoint verify examples/libraries/pickledb_target.py:factory --model all --faults
"""

from __future__ import annotations

import os
from typing import Any

import pickledb

__all__ = ["PickleDocument", "factory"]

KEY = "doc"


class PickleDocument:
    """The value of ``doc`` in ``base_dir/pickle.db``."""

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(base_dir, "pickle.db")
        self.legacy = hasattr(pickledb, "load")

    def save(self, value: Any) -> None:
        """0.9: ``pickledb.load(path, True).set("doc", value)``; 1.x: ``set`` then ``save()``."""
        if self.legacy:
            pickledb.load(self.path, True, False).set(KEY, value)
        else:
            db = pickledb.PickleDB(self.path)
            db.load()
            db.set(KEY, value)
            db.save()

    def load(self) -> Any:
        """``db.get("doc")`` on a freshly opened database (None when absent)."""
        if self.legacy:
            got = pickledb.load(self.path, False, False).get(KEY)
            return None if got is False else got
        db = pickledb.PickleDB(self.path)
        db.load()
        return db.get(KEY, None)


def factory(base_dir: str) -> PickleDocument:
    """``base_dir/pickle.db`` through pickledb."""
    return PickleDocument(base_dir)

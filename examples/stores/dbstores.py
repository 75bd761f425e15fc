"""Document stores on the standard library's databases, for ``--runner strace`` (issue 23).

Their I/O is not all Python file calls (``sqlite3`` is C), so they are verified at the
system-call level::

    crashpoint verify examples/stores/dbstores.py:DumbDbmStore --runner strace --model all

* :class:`DumbDbmStore` keeps the JSON document under one key of a ``dbm.dumb``
  database: ``dbm.dumb`` appends the value to its ``.dat`` file, then rewrites its ``.dir``
  index in place (``_commit``: open ``"w"``, truncate, write every key) and fsyncs
  nothing; the index and data can disagree after a crash.
* :class:`ShelveStore` is the same over :mod:`shelve` (pickle over ``dbm.dumb``).
* :class:`SqliteStore` keeps it in one row of an ``sqlite3`` database (rollback journal,
  ``journal_mode=DELETE``, ``synchronous=FULL``): each save is one transaction.
* :class:`PidNamedStore` writes its temporary file under a name made of ``os.getpid()``
  and ``time.time_ns()`` (as npm's write-file-atomic does), fsyncs it and renames it
  over the document, then fsyncs the directory: a name that differs run to run.
"""

from __future__ import annotations

import contextlib
import dbm.dumb
import json
import os
import shelve
import sqlite3
import time
from typing import Any

__all__ = ["DumbDbmStore", "PidNamedStore", "ShelveStore", "SqliteStore"]


class DumbDbmStore:
    """The document under the key ``doc`` of ``dbm.dumb`` database ``base_dir/db``."""

    def __init__(self, base_dir: str) -> None:
        self.base = base_dir
        self.path = os.path.join(base_dir, "db")

    def save(self, value: Any) -> None:
        os.makedirs(self.base, exist_ok=True)
        with contextlib.closing(dbm.dumb.open(self.path, "c")) as db:
            db[b"doc"] = json.dumps(value).encode()

    def load(self) -> Any:
        if not os.path.exists(self.path + ".dir"):
            return None
        with contextlib.closing(dbm.dumb.open(self.path, "r")) as db:
            raw = db.get(b"doc")
        return None if raw is None else json.loads(raw)


class ShelveStore:
    """The document under the key ``doc`` of a :mod:`shelve` over ``dbm.dumb``."""

    def __init__(self, base_dir: str) -> None:
        self.base = base_dir
        self.path = os.path.join(base_dir, "shelf")

    def _open(self, flag: str) -> shelve.Shelf[Any]:
        return shelve.Shelf(dbm.dumb.open(self.path, flag))

    def save(self, value: Any) -> None:
        os.makedirs(self.base, exist_ok=True)
        with self._open("c") as shelf:
            shelf["doc"] = value

    def load(self) -> Any:
        if not os.path.exists(self.path + ".dir"):
            return None
        with self._open("r") as shelf:
            return shelf.get("doc")


class SqliteStore:
    """The document in the one row of table ``doc`` of ``base_dir/doc.sqlite``."""

    def __init__(self, base_dir: str) -> None:
        self.base = base_dir
        self.path = os.path.join(base_dir, "doc.sqlite")

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, isolation_level=None)
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("PRAGMA synchronous=FULL")
        return con

    def save(self, value: Any) -> None:
        os.makedirs(self.base, exist_ok=True)
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            con.execute("CREATE TABLE IF NOT EXISTS doc (id INTEGER PRIMARY KEY, body TEXT)")
            con.execute("INSERT OR REPLACE INTO doc VALUES (1, ?)", (json.dumps(value),))
            con.execute("COMMIT")
        finally:
            con.close()

    def load(self) -> Any:
        if not os.path.exists(self.path):
            return None
        con = self._connect()
        try:
            tables = con.execute("SELECT name FROM sqlite_master WHERE name = 'doc'").fetchall()
            if not tables:
                return None
            row = con.execute("SELECT body FROM doc WHERE id = 1").fetchone()
        finally:
            con.close()
        return None if row is None else json.loads(row[0])


class PidNamedStore:
    """Atomic replace through a temporary named after the pid and the clock."""

    def __init__(self, base_dir: str) -> None:
        self.base = base_dir
        self.path = os.path.join(base_dir, "doc.json")

    def save(self, value: Any) -> None:
        os.makedirs(self.base, exist_ok=True)
        tmp = os.path.join(self.base, f".doc-{os.getpid()}-{time.time_ns()}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(value, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.base, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def load(self) -> Any:
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

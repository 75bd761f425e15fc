"""ZODB ``FileStorage`` (pure Python; it locks with ``zc.lockfile``).

A save is one ``transaction.commit()`` replacing the root's records (:mod:`_codec`);
the load opens the storage as an application does, read-write (FileStorage checks the
last transaction's header and length on open and truncates an incomplete one: its
recovery; read-only it refuses an empty file, which the application would not see) and
reads the root.
``factory`` gives the same store as a document target for the in-process runner
(``crashpoint verify examples/engines/zodb_engine.py:factory``).
"""

from __future__ import annotations

import os
from typing import Any

import _codec
import transaction
import ZODB
import ZODB.FileStorage

NAME = "zodb"
CONFIGS: dict[str, None] = {"filestorage": None}
DEFAULT = "filestorage"
RUNNER = "exec"
"""``run.py``'s runner for ZODB: ``drive.py``'s commands. Under the fork server
(``--runner strace``) its process-crash run (3 s against 13 s) shows three A3, unjudged, at
k = 2-4: ``Data.fs.lock`` holds the saving process's pid, which differs from one forked
child to the next, so the constant-files probe (issue 22) does not see it as constant and
its bytes read as a generation on disk; a one-shot process in its own PID namespace writes
the same pid every time. Until forked children get pids as stable, the fuller verdict wins
over the speed (docs/decisions.md, 2026-12-07)."""


def version() -> str:
    """ZODB's version."""
    from importlib.metadata import version as v

    return v("ZODB")


def save(path: str, value: Any, config: str = DEFAULT) -> None:
    """Commit ``value`` as one transaction. Raises ZODB's errors."""
    storage = ZODB.FileStorage.FileStorage(os.path.join(path, "Data.fs"))
    db = ZODB.DB(storage)
    try:
        tm = transaction.TransactionManager()
        conn = db.open(tm)
        root = conn.root()
        for k in list(root):
            del root[k]
        root.update(_codec.records(value))
        tm.commit()
        conn.close()
    finally:
        db.close()


def load(path: str, config: str = DEFAULT) -> Any:
    """The committed value (``None`` before the first commit). Raises IntegrityError
    (FileStorage refuses the file), ValueError (a torn transaction)."""
    where = os.path.join(path, "Data.fs")
    if not os.path.exists(where):
        return None
    try:
        storage = ZODB.FileStorage.FileStorage(where)
    except Exception as exc:
        raise IntegrityError(f"FileStorage: {type(exc).__name__}: {exc}") from None
    db = ZODB.DB(storage)
    try:
        conn = db.open()
        recs = dict(conn.root())
        conn.close()
    finally:
        db.close()
    return _codec.value(recs)


class IntegrityError(Exception):
    """FileStorage refused a crash state."""


class Store:
    """The document target: ``save(value)``, ``load()`` on ``base_dir`` (SPEC.md §10)."""

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir

    def save(self, value: Any) -> None:
        save(self.base_dir, value)

    def load(self) -> Any:
        return load(self.base_dir)


def factory(base_dir: str) -> Store:
    """A ZODB document target on ``base_dir``."""
    return Store(base_dir)

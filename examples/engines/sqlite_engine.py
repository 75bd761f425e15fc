"""SQLite (the standard library's ``sqlite3``) under every configuration of issue 24.

One table ``kv(k TEXT PRIMARY KEY, v BLOB)``; a save is one ``BEGIN IMMEDIATE`` ...
``COMMIT`` replacing every record (:mod:`_codec`); a load reads the committed records
and runs ``PRAGMA integrity_check`` (anything but ``ok`` is the engine's own checker
failing: exit 3, an atomicity finding). The configuration names the journal mode, the
``synchronous`` level and the locking mode, e.g. ``wal-normal``, ``delete-full``.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

import _codec

NAME = "sqlite"
FILE = "db.sqlite"

CONFIGS: dict[str, tuple[str, str, str]] = {
    # name: (journal_mode, synchronous, locking_mode)
    "delete": ("DELETE", "FULL", "NORMAL"),  # the Python default is synchronous=FULL
    "delete-extra": ("DELETE", "EXTRA", "NORMAL"),
    "delete-normal": ("DELETE", "NORMAL", "NORMAL"),
    "delete-off": ("DELETE", "OFF", "NORMAL"),
    "truncate": ("TRUNCATE", "FULL", "NORMAL"),
    "persist": ("PERSIST", "FULL", "NORMAL"),
    "wal": ("WAL", "FULL", "NORMAL"),
    "wal-normal": ("WAL", "NORMAL", "NORMAL"),
    "wal-exclusive": ("WAL", "FULL", "EXCLUSIVE"),
    "journal-off": ("OFF", "FULL", "NORMAL"),
    "journal-memory": ("MEMORY", "FULL", "NORMAL"),
}
DEFAULT = "delete"


def volatile(config: str) -> tuple[str, ...]:
    """The files of ``config`` SQLite rebuilds after a crash and never trusts
    (``crashpoint verify --volatile``): in WAL mode the wal-index ``db.sqlite-shm``, a
    shared writable mmap. The first connection truncates it (os_unix.c
    ``unixLockSharedMemory``: ``robust_ftruncate(pShmNode->hShm, 3)``) and, its header
    checksums failing, rebuilds it from the WAL (wal.c ``walIndexReadHdr`` ->
    ``walIndexRecover``); docs/models.md, "SQLite's -shm". Declared for every WAL
    configuration (a glob matching no file changes nothing: ``wal-exclusive`` keeps its
    wal-index in heap memory when EXCLUSIVE is set before WAL, wal.html §8)."""
    return (FILE + "-shm",) if CONFIGS[config][0] == "WAL" else ()


def version() -> str:
    """The SQLite library's version (not the module's)."""
    return sqlite3.sqlite_version


def _connect(path: str, config: str, *, load: bool = False) -> sqlite3.Connection:
    """A connection in ``config``. The load sets no journal mode: WAL is persistent (the
    file's header says it), and setting it would write the header of an empty file, a
    write of the load's own; a hot journal is rolled back in any mode."""
    journal, sync, locking = CONFIGS[config]
    con = sqlite3.connect(os.path.join(path, FILE), isolation_level=None)
    con.execute(f"PRAGMA locking_mode={locking}")
    if not load:
        con.execute(f"PRAGMA journal_mode={journal}")
    con.execute(f"PRAGMA synchronous={sync}")
    return con


def save(path: str, value: Any, config: str = DEFAULT) -> None:
    """Commit ``value`` as one transaction. Raises sqlite3.Error."""
    con = _connect(path, config)
    try:
        con.execute("CREATE TABLE IF NOT EXISTS kv(k TEXT PRIMARY KEY, v BLOB)")
        con.execute("BEGIN IMMEDIATE")
        con.execute("DELETE FROM kv")
        con.executemany("INSERT INTO kv VALUES (?, ?)", sorted(_codec.records(value).items()))
        con.execute("COMMIT")
    finally:
        con.close()


def load(path: str, config: str = DEFAULT) -> Any:
    """The committed value (``None`` before the first commit). Raises IntegrityError
    (``PRAGMA integrity_check`` not ``ok``, or SQLite calling the file malformed),
    ValueError (a torn transaction)."""
    if not os.path.exists(os.path.join(path, FILE)):
        return None
    try:
        con = _connect(path, config, load=True)
        try:
            check = [r[0] for r in con.execute("PRAGMA integrity_check")]
            if check != ["ok"]:
                raise IntegrityError("PRAGMA integrity_check: " + "; ".join(map(str, check[:3])))
            has = con.execute("SELECT 1 FROM sqlite_master WHERE name='kv'").fetchone()
            if has is None:
                return None
            recs = {k: bytes(v) for k, v in con.execute("SELECT k, v FROM kv")}
        finally:
            con.close()
    except sqlite3.DatabaseError as exc:
        raise IntegrityError(f"{type(exc).__name__}: {exc}") from None
    return _codec.value(recs)


class IntegrityError(Exception):
    """The engine's own integrity check failed on a crash state."""

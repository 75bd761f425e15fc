"""RocksDB (``rocksdict``, which bundles its RocksDB): WAL on (synced) and off.

A save is one ``WriteBatch`` replacing every record (:mod:`_codec`). ``wal`` writes it
with ``WriteOptions.sync = True``; ``nowal`` with ``disable_wal = True`` (RocksDB
documents that such writes live only in the memtable until a flush: they may be lost
on any crash). The load opens with ``paranoid_checks`` and reads every record.
"""

from __future__ import annotations

import os
from typing import Any

import _codec
import rocksdict

NAME = "rocksdb"
CONFIGS: dict[str, dict[str, bool]] = {
    "wal": {"sync": True},
    "nowal": {"disable_wal": True},
}
DEFAULT = "wal"


def version() -> str:
    """rocksdict's version (its RocksDB is bundled)."""
    from importlib.metadata import version as v

    return v("rocksdict")


def _options(create: bool) -> Any:
    opt = rocksdict.Options(raw_mode=True)
    opt.create_if_missing(create)
    opt.set_paranoid_checks(True)
    return opt


def save(path: str, value: Any, config: str = DEFAULT) -> None:
    """Commit ``value`` as one write batch. Raises Exception (rocksdict's errors)."""
    db = rocksdict.Rdict(os.path.join(path, "db"), _options(True))
    try:
        wb = rocksdict.WriteBatch(raw_mode=True)
        for k in list(db.keys()):
            wb.delete(k)
        for k, v in _codec.records(value).items():
            wb.put(k.encode(), v)
        wo = rocksdict.WriteOptions()
        for name, flag in CONFIGS[config].items():
            setattr(wo, name, flag)
        db.write(wb, wo)
    finally:
        db.close()


def load(path: str, config: str = DEFAULT) -> Any:
    """The committed value (``None`` before the first commit). Raises IntegrityError
    (RocksDB refuses to open), ValueError (a torn transaction)."""
    where = os.path.join(path, "db")
    if not os.path.exists(os.path.join(where, "CURRENT")):
        return None
    try:
        db = rocksdict.Rdict(where, _options(False))
    except Exception as exc:
        raise IntegrityError(f"open: {exc}") from None
    try:
        recs = {bytes(k).decode(): bytes(v) for k, v in db.items()}
    finally:
        db.close()
    return _codec.value(recs)


class IntegrityError(Exception):
    """RocksDB's own checks refused a crash state."""

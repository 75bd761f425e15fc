"""LevelDB (``plyvel``): ``sync=True`` and ``sync=False`` write batches.

A save is one ``WriteBatch`` replacing every record (:mod:`_codec`); LevelDB applies a
batch atomically (its log record is checksummed). The load opens with
``paranoid_checks=True`` (LevelDB's own integrity checking: a corrupt log or table is
an error, not skipped) and reads every record.
"""

from __future__ import annotations

import os
from typing import Any

import _codec
import plyvel

NAME = "leveldb"
CONFIGS: dict[str, bool] = {"sync": True, "nosync": False}
DEFAULT = "sync"


def version() -> str:
    """plyvel's version (its wheel bundles libleveldb 1.22.0, in ``plyvel.libs``)."""
    return str(plyvel.__version__)


def save(path: str, value: Any, config: str = DEFAULT) -> None:
    """Commit ``value`` as one write batch. Raises plyvel.Error."""
    db = plyvel.DB(os.path.join(path, "db"), create_if_missing=True)
    try:
        with db.write_batch(sync=CONFIGS[config]) as wb:
            for k, _ in db:
                wb.delete(k)
            for k, v in _codec.records(value).items():
                wb.put(k.encode(), v)
    finally:
        db.close()


def load(path: str, config: str = DEFAULT) -> Any:
    """The committed value (``None`` before the first commit). Raises IntegrityError
    (LevelDB refuses to open: corruption), ValueError (a torn transaction)."""
    where = os.path.join(path, "db")
    if not os.path.exists(os.path.join(where, "CURRENT")):
        return None
    try:
        db = plyvel.DB(where, paranoid_checks=True)
    except plyvel.Error as exc:
        raise IntegrityError(f"open: {exc}") from None
    try:
        recs = {k.decode(): v for k, v in db}
    finally:
        db.close()
    return _codec.value(recs)


class IntegrityError(Exception):
    """LevelDB's own checks refused a crash state."""

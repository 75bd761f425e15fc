"""LMDB (``lmdb``, the py-lmdb binding and its bundled liblmdb): default, ``sync=False``,
``metasync=False``, and ``locked`` (the default with ``lock=True``, py-lmdb's own default).

One write transaction replaces every record (:mod:`_codec`). The environment is opened
with ``lock=False`` but in ``locked``: the driver is one process at a time, and the lock
file is a shared writable mapping that the strace replay can only name (issue 23), not
model. ``locked`` declares it volatile (:func:`volatile`; docs/models.md, "LMDB's
lock.mdb"): the first opener, holding the exclusive lock, initialises the lock region
again (mdb.c ``mdb_env_setup_locks``); the data
file is written with ``pwrite`` (``writemap=False``, the default) and read through a
read-only mapping, which is harmless. LMDB has no integrity checker of its own
(``mdb_stat`` only prints); a load that cannot open the environment is an atomicity
finding.
"""

from __future__ import annotations

import os
from typing import Any

import _codec
import lmdb

NAME = "lmdb"
CONFIGS: dict[str, dict[str, bool]] = {
    "default": {},
    "nosync": {"sync": False},
    "nometasync": {"metasync": False},
    "locked": {"lock": True},
}
DEFAULT = "default"


def version() -> str:
    """liblmdb's version, as the binding reports it."""
    return ".".join(map(str, lmdb.version()))


def volatile(config: str) -> tuple[str, ...]:
    """The files of ``config`` liblmdb rebuilds when it opens them first and never trusts
    (``crashpoint verify --volatile``): ``lock.mdb`` when the environment is locked. With
    no other process holding it, ``mdb_env_setup_locks`` takes the exclusive lock and
    writes the lock region's magic, format, txnid and reader count afresh (the reader
    slots past the count are never read); docs/models.md, "LMDB's lock.mdb"."""
    return ("lock.mdb",) if CONFIGS[config].get("lock") else ()


def _open(path: str, config: str, readonly: bool = False) -> Any:
    options = {"lock": False, **CONFIGS[config]}
    return lmdb.open(path, map_size=1 << 24, readonly=readonly, **options)


def save(path: str, value: Any, config: str = DEFAULT) -> None:
    """Commit ``value`` as one write transaction. Raises lmdb.Error."""
    env = _open(path, config)
    try:
        with env.begin(write=True) as txn:
            for k, _ in list(txn.cursor()):
                txn.delete(k)
            for k, v in _codec.records(value).items():
                txn.put(k.encode(), v)
    finally:
        env.close()


def load(path: str, config: str = DEFAULT) -> Any:
    """The committed value (``None`` before the first commit). Raises IntegrityError
    (the environment cannot be opened or read), ValueError (a torn transaction)."""
    data = os.path.join(path, "data.mdb")
    if not os.path.exists(data) or os.path.getsize(data) == 0:
        # An empty data.mdb (a crash between its creation and mdb_env_init_meta's write)
        # is no environment yet: mdb_env_read_header reads nothing and returns ENOENT,
        # and mdb_env_open2 then makes a new one, which a writable open does (checked:
        # lmdb.open on an empty data.mdb opens with 0 entries). Only a read-only open
        # refuses it (mdb_env_init_meta's pwrite on a read-only descriptor: EBADF), a
        # refusal of LMDB's design, not a crash bug: the load answers what the first
        # writable open would, the initial value.
        return None
    try:
        env = _open(path, config, readonly=True)
    except lmdb.Error as exc:
        raise IntegrityError(f"lmdb.open: {exc}") from None
    try:
        with env.begin() as txn:
            recs = {bytes(k).decode(): bytes(v) for k, v in txn.cursor()}
    except lmdb.Error as exc:
        raise IntegrityError(f"read: {exc}") from None
    finally:
        env.close()
    return _codec.value(recs)


class IntegrityError(Exception):
    """The engine could not open or read a crash state."""

"""A one-file-per-key store: each key of the saved mapping is a file ``keys/KEY`` holding
its JSON value, for ``crashpoint verify --kind document`` (issue 22, acceptance 3).

``load`` lists ``keys/`` and reads every file (``{}`` before the first save). Each file is
replaced atomically (a temporary file, fsync, rename), then the keys no longer saved are
deleted and ``keys/`` is fsynced; but a save changes many files one after the other, so a
crash in the middle leaves some keys new and some old: a mix no save made.

* :class:`PerKeyStore`: the store above. Expected findings: A1 (a mix of two saves' keys)
  under every model, at a crash point between two keys' renames, on a workload that changes
  at least two keys; durable (each rename and the directory are fsynced).
* :class:`PerKeyNoDirFsyncStore`: the same without the directory fsyncs: an acknowledged
  save's renames can vanish at a power cut (A2 under the power-loss families), never at a
  process crash.

Its values are mappings of file-name-safe keys to JSON values
(``examples/values.py:perkey_values``)::

    crashpoint verify examples/stores/perkey.py:PerKeyStore \\
        --values examples/values.py:perkey_values
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["PerKeyNoDirFsyncStore", "PerKeyStore"]


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class PerKeyStore:
    """A mapping stored as one file per key in ``base_dir/keys/``."""

    sync_dirs = True

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.keys = os.path.join(base_dir, "keys")

    def load(self) -> dict[str, Any]:
        """Every key's value; ``{}`` before the first save. Temporary files are skipped."""
        try:
            names = sorted(os.listdir(self.keys))
        except FileNotFoundError:
            return {}
        out: dict[str, Any] = {}
        for name in names:
            if name.endswith(".tmp"):
                continue
            with open(os.path.join(self.keys, name), encoding="utf-8") as f:
                out[name] = json.load(f)
        return out

    def save(self, value: dict[str, Any]) -> None:
        """Write each key's file, then delete the keys ``value`` no longer has.
        Raises TypeError for a value that is not a mapping of file-name-safe keys."""
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and k and "/" not in k and not k.startswith(".") for k in value
        ):
            raise TypeError("PerKeyStore saves a mapping of file-name-safe string keys")
        if not os.path.isdir(self.keys):
            os.mkdir(self.keys)
            if self.sync_dirs:
                _fsync_dir(self.base_dir)
        for key, item in value.items():
            path = os.path.join(self.keys, key)
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                f.write(json.dumps(item))
                f.flush()
                os.fsync(f.fileno())
            os.replace(path + ".tmp", path)
        for name in os.listdir(self.keys):
            if name not in value and not name.endswith(".tmp"):
                os.unlink(os.path.join(self.keys, name))
        if self.sync_dirs:
            _fsync_dir(self.keys)


class PerKeyNoDirFsyncStore(PerKeyStore):
    """:class:`PerKeyStore` without its directory fsyncs (A2 under power loss)."""

    sync_dirs = False

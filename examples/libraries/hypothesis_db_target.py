"""hypothesis's ``DirectoryBasedExampleDatabase`` (the example database every hypothesis
run keeps in ``.hypothesis/examples``) as a document target: each save stores the value
under one key with a sequence number and deletes the older values; load fetches the
key's values and returns the newest. crashpoint itself runs on hypothesis; the target's
calls into it are intercepted all the same (issue 21).

``DirectoryBasedExampleDatabase.save`` (hypothesis 6.170, ``hypothesis/database.py``)
writes each value to ``tempfile.mkstemp()`` in the system temporary directory, then
renames it to ``<db>/<hash(key)>/<hash(value)>``; nothing is fsynced, and a failure is
swallowed (``except OSError: pass``). ``delete`` unlinks the value's file.

Usage::

    crashpoint verify examples/libraries/hypothesis_db_target.py:factory --model all --faults
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis.database import DirectoryBasedExampleDatabase

__all__ = ["HypothesisDbDocument", "factory"]

KEY = b"crashpoint-doc"


class HypothesisDbDocument:
    """The newest of ``KEY``'s values in ``base_dir/examples``."""

    def __init__(self, base_dir: str) -> None:
        self.db = DirectoryBasedExampleDatabase(os.path.join(base_dir, "examples"))

    def _values(self) -> list[tuple[int, Any, bytes]]:
        found = []
        for raw in self.db.fetch(KEY):
            record = json.loads(raw)  # a value the database returns is whole, or a finding
            found.append((record["n"], record["value"], raw))
        return sorted(found, key=lambda r: r[0])

    def save(self, value: Any) -> None:
        """Store ``{"n": newest + 1, "value": value}``, then delete the older values."""
        older = self._values()
        n = older[-1][0] + 1 if older else 0
        self.db.save(KEY, json.dumps({"n": n, "value": value}).encode())
        for _, _, raw in older:
            self.db.delete(KEY, raw)

    def load(self) -> Any:
        """The newest value, or None when the key has none."""
        values = self._values()
        return values[-1][1] if values else None


def factory(base_dir: str) -> HypothesisDbDocument:
    """hypothesis's directory database under ``base_dir/examples`` as a document target."""
    return HypothesisDbDocument(base_dir)

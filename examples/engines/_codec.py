"""How every engine of the catalogue stores one JSON value as one transaction.

A value is encoded as JSON and cut into ``CHUNK``-byte records (``0000``, ``0001`` ...)
plus a header record ``n`` (how many chunks): a save replaces every record in one
transaction, so a transaction grows with the value (the ``resize`` workload's 9 KB save
is 37 records) and a half-applied one is seen by the load as a mix (SPEC.md §10, A1).
"""

from __future__ import annotations

import json
from typing import Any

CHUNK = 256
"""Bytes of encoded JSON per record."""


def records(value: Any) -> dict[str, bytes]:
    """``value`` as the records one transaction writes: ``{"n": b"3", "0000": ..., ...}``."""
    text = json.dumps(value, sort_keys=True).encode()
    parts = [text[i : i + CHUNK] for i in range(0, len(text), CHUNK)] or [b""]
    out = {f"{i:04d}": p for i, p in enumerate(parts)}
    out["n"] = str(len(parts)).encode()
    return out


def value(recs: dict[str, bytes]) -> Any:
    """The value a committed set of records holds; ``None`` when there is none (the
    initial value). Raises ValueError on a set that no save wrote (a torn transaction)."""
    if "n" not in recs:
        if recs:
            raise ValueError(f"{len(recs)} records without a header: a torn transaction")
        return None
    n = int(recs["n"])
    missing = [f"{i:04d}" for i in range(n) if f"{i:04d}" not in recs]
    if missing:
        raise ValueError(f"header says {n} records, {len(missing)} missing: a torn transaction")
    return json.loads(b"".join(recs[f"{i:04d}"] for i in range(n)))

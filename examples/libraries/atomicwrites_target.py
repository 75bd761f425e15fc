"""python-atomicwrites' ``atomic_write(path, overwrite=True)`` as a document target: the
control. It writes a ``tempfile.mkstemp`` file beside the target, flushes and fsyncs
it, renames it over the target and fsyncs the directory.

Usage::

    crashpoint verify examples/libraries/atomicwrites_target.py:factory --model all --faults
"""

from __future__ import annotations

import json
import os
from typing import Any

from atomicwrites import atomic_write

__all__ = ["AtomicWritesDocument", "factory"]


class AtomicWritesDocument:
    """One JSON value in ``base_dir/doc.json`` written with ``atomic_write``."""

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(base_dir, "doc.json")

    def save(self, value: Any) -> None:
        """``json.dump`` into ``atomic_write(path, overwrite=True)``."""
        with atomic_write(self.path, overwrite=True, encoding="utf-8") as f:
            json.dump(value, f)

    def load(self) -> Any:
        """The saved value, or None before the first save."""
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None


def factory(base_dir: str) -> AtomicWritesDocument:
    """``atomic_write(base_dir/doc.json, overwrite=True)`` as a document target."""
    return AtomicWritesDocument(base_dir)

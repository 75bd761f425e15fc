"""safer's ``safer.open(path, "w")`` as a document target, both ways it can write.

* :func:`factory`: the default (``temp_file=False``): writes are cached in memory and,
  when the file is closed without an exception, written out;
* :func:`temp_file_factory`: ``temp_file=True``: writes go to a temporary file beside
  the target, renamed over it on a clean close.

The document is JSON (``json.dump`` into the stream); load reads it with the built-in
``open`` and returns None before the first save.

Usage::

    crashpoint verify examples/libraries/safer_target.py:factory --model all --faults
    crashpoint verify examples/libraries/safer_target.py:temp_file_factory --model all --faults
"""

from __future__ import annotations

import json
import os
from typing import Any

import safer

__all__ = ["SaferDocument", "factory", "temp_file_factory"]


class SaferDocument:
    """One JSON value in ``base_dir/doc.json`` written with ``safer.open``."""

    def __init__(self, base_dir: str, *, temp_file: bool) -> None:
        self.path = os.path.join(base_dir, "doc.json")
        self.temp_file = temp_file

    def save(self, value: Any) -> None:
        """``json.dump`` into ``safer.open(path, "w", temp_file=...)``."""
        with safer.open(self.path, "w", encoding="utf-8", temp_file=self.temp_file) as f:
            json.dump(value, f)

    def load(self) -> Any:
        """The saved value, or None before the first save."""
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None


def factory(base_dir: str) -> SaferDocument:
    """``safer.open`` with its defaults (``temp_file=False``)."""
    return SaferDocument(base_dir, temp_file=False)


def temp_file_factory(base_dir: str) -> SaferDocument:
    """``safer.open(..., temp_file=True)``."""
    return SaferDocument(base_dir, temp_file=True)

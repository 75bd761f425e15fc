"""python-dotenv's ``set_key`` as a document target.

``set_key`` writes one key: it copies the ``.env`` file into a
``tempfile.NamedTemporaryFile`` beside it with that key's line replaced (or
appended) and renames the copy over the file with ``os.replace``. So that each save
is exactly one ``set_key`` call (a map written key by key would be torn between two
calls by the adapter, not by the library), the document is the string value of one
key, ``DOCUMENT``; load is ``dotenv_values(path).get("DOCUMENT")`` (None before the
first save). Values: strings without quotes, backslashes, ``$`` or newlines (what a
``.env`` value usually holds), given as the factory's ``crashpoint_values``.

Usage::

    crashpoint verify examples/libraries/dotenv_target.py:factory --model all --faults
"""

from __future__ import annotations

import os
from typing import Any

from dotenv import dotenv_values, set_key

__all__ = ["DotenvDocument", "factory", "values"]

KEY = "DOCUMENT"
_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.,:/@+-= "


def values() -> Any:
    """The hypothesis strategy of saved values: ``.env``-safe strings up to 200 characters."""
    from hypothesis import strategies as st

    return st.text(_ALPHABET, max_size=200)


class DotenvDocument:
    """The value of ``DOCUMENT`` in ``base_dir/.env``, written with ``set_key``."""

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(base_dir, ".env")

    def save(self, value: str) -> None:
        """``set_key(path, "DOCUMENT", value)`` (quote_mode "always", the default)."""
        set_key(self.path, KEY, value)

    def load(self) -> str | None:
        """``DOCUMENT``'s value, or None when the file or the key is missing."""
        return dotenv_values(self.path).get(KEY)


def factory(base_dir: str) -> DotenvDocument:
    """``base_dir/.env`` through ``set_key``/``dotenv_values``."""
    return DotenvDocument(base_dir)


factory.crashpoint_values = values()  # type: ignore[attr-defined]

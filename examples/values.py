"""Value sources for ``crashpoint verify --values`` (issue 22): what the example stores of
``examples/stores/`` save.

* :func:`ini_values`: a hypothesis strategy of INI documents (``configparser``: sections
  of string options) for ``examples/stores/inistore.py``;
* :func:`perkey_values`: a callable taking a size in bytes, called once per sized workload,
  returning a mapping of file-name-safe keys for ``examples/stores/perkey.py`` (its values
  reach the page boundaries the size asks for).

Usage::

    crashpoint verify examples/stores/inistore.py:IniStore \\
        --values examples/values.py:ini_values
    crashpoint verify examples/stores/perkey.py:PerKeyStore \\
        --values examples/values.py:perkey_values
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

__all__ = ["ini_values", "perkey_values"]

_NAME = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
_TEXT = st.text("abcdefghijklmnopqrstuvwxyz0123456789 _.,:/@+-", max_size=2000).map(str.strip)


def ini_values() -> Any:
    """INI documents as ``configparser`` keeps them: ``{section: {option: value}}``,
    lower-case names (``configparser`` lower-cases options), values stripped of the
    outer spaces it drops, no section named ``DEFAULT``."""
    return st.dictionaries(_NAME, st.dictionaries(_NAME, _TEXT, max_size=8), max_size=6)


def perkey_values(nbytes: int) -> dict[str, Any]:
    """About ``nbytes`` of JSON spread over several keys (at least three, so a save
    changes several files), distinct for each size."""
    keys = max(3, min(12, nbytes // 1000))
    each = max(1, nbytes // keys - 12)
    letters = "abcdefghijklmnopqrstuvwxyz"
    shift = nbytes % 26
    pad = (letters[shift:] + letters[:shift]) * (each // 26 + 1)
    return {f"key{i:02d}": {"size": nbytes, "pad": pad[:each]} for i in range(keys)}

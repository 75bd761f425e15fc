"""pytest's cache provider (``_pytest.cacheprovider.Cache``, what a plugin reaches as
``config.cache``) as a document target: ``cache.set(key, value)`` and
``cache.get(key, None)`` under ``base_dir/.pytest_cache``. crashpoint itself runs on
pytest; the target's calls into it are intercepted all the same (issue 21).

``Cache.set`` (pytest 9.2, ``_pytest/cacheprovider.py``) makes the cache directory once
(a temporary directory with README.md, .gitignore and CACHEDIR.TAG, renamed into place),
then ``path.write_text(json)``: the value file is truncated and rewritten in place, never
fsynced; ``Cache.get`` returns the default for a file it cannot parse.

Usage::

    crashpoint verify examples/libraries/pytest_cache_target.py:factory --model all --faults
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _pytest.cacheprovider import Cache

__all__ = ["PytestCacheDocument", "factory"]

KEY = "crashpoint/doc"


class _Config:
    """What ``Cache`` asks of pytest's ``Config`` on these paths: ``hook``, which
    ``Cache.warn`` passes to ``warnings.warn`` as its category when a write fails
    (None: the warning's own class, ``PytestCacheWarning``)."""

    hook = None


class PytestCacheDocument:
    """One JSON value under ``KEY`` in ``base_dir/.pytest_cache``."""

    def __init__(self, base_dir: str) -> None:
        self.cache = Cache(Path(base_dir) / ".pytest_cache", _Config(), _ispytest=True)  # type: ignore[arg-type]

    def save(self, value: Any) -> None:
        """``cache.set(KEY, value)``."""
        self.cache.set(KEY, value)

    def load(self) -> Any:
        """``cache.get(KEY, None)``: the saved value, or None."""
        return self.cache.get(KEY, None)


def factory(base_dir: str) -> PytestCacheDocument:
    """pytest's ``Cache`` over ``base_dir/.pytest_cache`` as a document target."""
    return PytestCacheDocument(base_dir)

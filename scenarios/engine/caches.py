"""crashpoint's own libraries keep no files: hypothesis's caches stay in memory.

Hypothesis keeps best-effort caches under ``.hypothesis/`` in the working directory (its
Unicode table, the constants it collects from local modules' source) the first time a
strategy needs them. For crashpoint that is a write outside the directory the user
named, and the canary (:mod:`crashpoint.faultfs._canary`) rightly calls it a change of
the real disk. While :func:`hypothesis_keeps_no_files` holds, hypothesis's home
directory is a path that cannot be created (``/dev/null/…``): its cache writes fail,
which it tolerates by design (``hypothesis/internal/charmap.py``: "best-effort caching
in the face of … unwritable filesystems"), and the table is rebuilt in memory (about
0.1 s). A home directory the user chose (``HYPOTHESIS_STORAGE_DIRECTORY``) is kept.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from hypothesis import configuration

__all__ = ["NOWHERE", "hypothesis_keeps_no_files"]

NOWHERE = Path(os.devnull) / "crashpoint-hypothesis"
"""A home directory no process can create (a path below a character device)."""

_HOME = "__hypothesis_home_directory"  # hypothesis.configuration's module global


@contextlib.contextmanager
def hypothesis_keeps_no_files() -> Iterator[None]:
    """While inside, hypothesis writes none of its caches (see the module's doc);
    the home directory it had is restored on leaving. Nested uses are harmless."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    before = vars(configuration).get(_HOME)
    configuration.set_hypothesis_home_dir(NOWHERE)
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(before)

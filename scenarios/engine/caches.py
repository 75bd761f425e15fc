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

hypothesis is not imported for this (half a second, on every command that needs no
strategy: ``crashpoint explore``): until something imports it, the home is given through
``HYPOTHESIS_STORAGE_DIRECTORY``, which hypothesis reads when it first needs a directory
(``hypothesis/configuration.py``, ``storage_directory``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

__all__ = ["NOWHERE", "hypothesis_keeps_no_files"]

NOWHERE = Path(os.devnull) / "crashpoint-hypothesis"
"""A home directory no process can create (a path below a character device)."""

_HOME = "__hypothesis_home_directory"  # hypothesis.configuration's module global
_VARIABLE = "HYPOTHESIS_STORAGE_DIRECTORY"


@contextlib.contextmanager
def hypothesis_keeps_no_files() -> Iterator[None]:
    """While inside, hypothesis writes none of its caches (see the module's doc);
    the home directory it had is restored on leaving. Nested uses are harmless."""
    if os.environ.get(_VARIABLE):
        yield
        return
    configuration = sys.modules.get("hypothesis.configuration")
    before = vars(configuration).get(_HOME) if configuration is not None else None
    if configuration is not None:
        configuration.set_hypothesis_home_dir(NOWHERE)
    os.environ[_VARIABLE] = str(NOWHERE)  # for an import of hypothesis while inside
    try:
        yield
    finally:
        os.environ.pop(_VARIABLE, None)
        configuration = sys.modules.get("hypothesis.configuration")
        if configuration is not None:  # imported before or while inside
            configuration.set_hypothesis_home_dir(before)

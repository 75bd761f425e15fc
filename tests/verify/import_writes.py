"""A store whose module writes at import time, as many do (creating their default data
directory and a marker file in it), tolerating a failure; then it saves durably into
``base_dir``. ``tests/verify/test_escapes.py`` checks that the import's writes never land
and that the verdict names them."""

from __future__ import annotations

import contextlib
import os

from escapes import NoEscapeStore

__all__ = ["DEFAULT_DIR", "ImportWritingStore"]

DEFAULT_DIR = os.path.join(os.environ["CRASHPOINT_ESCAPE_DIR"], "default-data")

with contextlib.suppress(OSError):
    os.makedirs(DEFAULT_DIR, exist_ok=True)
with contextlib.suppress(OSError), open(os.path.join(DEFAULT_DIR, "created"), "w") as f:
    f.write("at import")


class ImportWritingStore(NoEscapeStore):
    """Saves durably; its module wrote at import time."""

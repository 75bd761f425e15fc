"""A notebook-like document store: copy to a backup, then rewrite in place (issue 12).

Jupyter's plain (non-atomic) writing copies the notebook (``nb.ipynb``) to a backup
(``.~nb.ipynb``), rewrites the notebook in place and removes the backup once the write
returned; nothing is fsynced. A crash between the truncation and the write (a kill is
enough; a power cut too) leaves the notebook empty while the backup holds the previous
value (``examples/field-reports/backup-holds-previous``; here ``notebook.json``).

* :class:`NotebookStore` is that pattern: ``crashpoint explain`` finds the state
  under ``process-crash`` and A1 failing there (load raises on a state the store's own
  writes produced);
* :class:`FixedNotebookStore` fsyncs the backup before touching the notebook and the
  notebook before removing the backup, and loads the backup when the notebook does
  not parse: the same state then loads the previous value.

Usage::

    crashpoint explain examples/field-reports/backup-holds-previous/document \\
        --target examples/field-reports/notebook_store.py:NotebookStore
"""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["FixedNotebookStore", "NotebookStore"]


class NotebookStore:
    """One JSON document in ``base_dir/notebook.json``; backup ``.~notebook.json`` while saving."""

    name = "notebook.json"

    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.path = os.path.join(base_dir, self.name)
        self.backup = os.path.join(base_dir, ".~" + self.name)

    def load(self) -> Any:
        """The saved value, or None before the first save."""
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def save(self, value: Any) -> None:
        """Copy the notebook to the backup, rewrite it in place, remove the backup."""
        if os.path.exists(self.path):
            with open(self.path, "rb") as src, open(self.backup, "wb") as dst:
                dst.write(src.read())
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(value, f)
        if os.path.exists(self.backup):
            os.remove(self.backup)


class FixedNotebookStore(NotebookStore):
    """:class:`NotebookStore` with the backup and the notebook fsynced, and load falling
    back to the backup when the notebook does not parse."""

    def load(self) -> Any:
        try:
            return super().load()
        except ValueError:
            if not os.path.exists(self.backup):
                return None  # the first save was in flight: nothing was saved yet
            with open(self.backup, encoding="utf-8") as f:
                return json.load(f)

    def save(self, value: Any) -> None:
        if os.path.exists(self.path):
            with open(self.path, "rb") as src, open(self.backup, "wb") as dst:
                dst.write(src.read())
                dst.flush()
                os.fsync(dst.fileno())
            _sync_dir(self.base_dir)
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(value, f)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(self.backup):
            os.remove(self.backup)
            _sync_dir(self.base_dir)


def _sync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

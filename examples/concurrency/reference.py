"""The reference storage (SPEC.md §6) as a document target with two writers on one
session (issue 25, acceptance 3).

``factory(fs, base_dir)`` targets on the filesystem protocol: the value is kept as JSON
in the metadata of session ``s1``.

* :class:`ReferenceDocument`: ``FileStateStorage`` as the reference is built
  (``sync="full"``, strict): its writers lock ``S.json.lock`` (SPEC.md §6), so two
  saves never interleave; a second writer waits on the filesystem's clock (virtual
  under the scheduler), then raises ``state_save_failed``;
* :class:`SeedDocument`: the published design (``seed``: ``sync="none"``, legacy
  marker, not strict): it does not lock, and two writers share ``S.json.tmp``.

Usage::

    crashpoint verify examples/concurrency/reference.py:ReferenceDocument --actors 2 \\
        --workload concurrent-saves
"""

from __future__ import annotations

import json
from typing import Any

from crashpoint.core import AgentState, FileStateStorage, StateError
from crashpoint.faultfs import FileSystem

__all__ = ["ReferenceDocument", "SeedDocument"]

SESSION = "s1"


class ReferenceDocument:
    """One value in session ``s1`` of the reference storage.

    Declared last-writer-wins (``crashpoint_last_writer_wins``): SPEC.md §6 locks each
    save, delete and mark, not a load and the save after it, and a save replaces the whole
    snapshot, so of two read-modify-write updates racing, the later save wins (L1 is not
    judged; D2 accepts any subset of the begun updates). Run with ``--actors 2`` its
    writers never interleave a save, and no crash loses an acknowledged one.
    """

    crashpoint_last_writer_wins = True

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        self.storage = self._storage(fs, base_dir)

    def _storage(self, fs: FileSystem, base_dir: str) -> FileStateStorage:
        return FileStateStorage(fs, base_dir, sync="full", ended_marker="scoped")

    def save(self, value: Any) -> None:
        """Save ``value`` (JSON-able) as session ``s1``'s snapshot."""
        self.storage.save(AgentState.new(SESSION, metadata={"doc": json.dumps(value)}))

    def load(self) -> Any:
        """The value saved last, None before the first save."""
        try:
            state = self.storage.load(SESSION)
        except StateError as exc:
            if exc.code == "session_not_found":
                return None
            raise
        return json.loads(state.metadata["doc"])


class SeedDocument(ReferenceDocument):
    """The same on the published design (``seed``), which does not lock (it declares
    last-writer-wins too: it is caught without L1)."""

    def _storage(self, fs: FileSystem, base_dir: str) -> FileStateStorage:
        return FileStateStorage(fs, base_dir, sync="none", ended_marker="legacy", strict=False)

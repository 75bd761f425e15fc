"""Known-bad storages ("mutants"): each stands for a real bug and must be caught.

Each is a small subclass of the reference :class:`~crashpoint.core.FileStateStorage`
changing one step. ``@mutant`` records which invariant, under which persistence
model, must kill it; ``crashpoint explore --target mutant:NAME`` explores one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core import AgentState, ErrorCode, FileStateStorage, StateError
from ..faultfs import FileSystem, write_bytes
from ._targets import mutant

__all__: list[str] = []


class _Mutant(FileStateStorage):
    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        super().__init__(fs, base_dir)


@mutant("unsupported-fallback", invariant="V1", model="process-crash")
class UnsupportedFallback(_Mutant):
    """The seed's pre-fix load (its pitfall two, §7): a main file of a future version
    is treated like a corrupt one, so load silently returns the older bak and the
    next save overwrites the newer app's data."""

    def load(self, session_id: str) -> AgentState:
        main = self.path(session_id)
        try:
            return super().load(session_id)
        except StateError as exc:
            if exc.code != ErrorCode.SCHEMA_VERSION_UNSUPPORTED or not self.fs.exists(
                main + ".bak"
            ):
                raise
            return self._read_snapshot(main + ".bak", main, session_id)


@mutant("empty-contents-rejected", invariant="R1", model="process-crash")
class EmptyContentsRejected(_Mutant):
    """The seed's pre-fix decode (its pitfall one, §6): a message with no content parts
    is rejected even when it carries tool calls, so a tool-call-only assistant turn
    saves fine and then never loads again ("reload corrupt")."""

    def _decode_file(self, path: str, session_id: str) -> tuple[bytes, AgentState]:
        data, state = super()._decode_file(path, session_id)
        if any(not m.contents for m in state.messages):
            raise StateError(
                ErrorCode.MESSAGE_EMPTY_CONTENTS, "message without contents", layer="codec"
            )
        return data, state


@mutant("delete-main-first", invariant="D1", model="process-crash")
class DeleteMainFirst(_Mutant):
    """delete removes main before bak: a crash in between resurrects the previous
    snapshot of a session the user deleted."""

    def _delete_files(self, main: str) -> None:
        for path in (main, main + ".bak", main + ".tmp", main + ".ended"):
            if self.fs.exists(path):
                self.fs.unlink(path)
        self._sync_dir()


@mutant("write-main-in-place", invariant="R1", model="process-crash")
class WriteMainInPlace(_Mutant):
    """save truncates and rewrites main in place (no tmp, no rename): a crash mid-write
    leaves a half-written main, and load falls back to an older bak or fails."""

    def _commit(self, main: str, data: bytes) -> None:
        write_bytes(self.fs, main, data)
        self.fs.fsync(main)
        self._sync_dir()
        self._clear_marker(main + ".ended")


@mutant("create-over-unreadable", invariant="C1", model="process-crash")
class CreateOverUnreadable(_Mutant):
    """load_or_create treats every load error as "not found" and saves a fresh state
    over a session it merely failed to read (corrupt, or written by a newer version)."""

    def load_or_create(
        self, session_id: str, initial_metadata: Mapping[str, Any] | None = None
    ) -> AgentState:
        try:
            return self.load(session_id)
        except StateError:
            state = AgentState.new(session_id, dict(initial_metadata or {}))
            self.save(state)
            return state

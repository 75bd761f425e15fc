"""Known-bad storages ("mutants"): each stands for a real bug and must be caught.

Each is a small subclass of the reference :class:`~crashpoint.core.FileStateStorage`
changing one step. ``@mutant`` records which invariant, under which persistence
model, must kill it; ``crashpoint explore --target mutant:NAME`` explores one.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from typing import Any, cast

from ....core import AgentState, ErrorCode, FileStateStorage, StateError, encode
from ....faultfs import FileSystem, makedirs, write_bytes
from .kind import SECRETS
from .targets import mutant

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


@mutant("rename-without-bak", invariant="R1", model="process-crash")
class RenameWithoutBak(_Mutant):
    """save deletes main and renames tmp over it without keeping a bak: between the
    delete and the rename no current snapshot exists, and load returns an older bak
    or nothing."""

    def _commit(self, main: str, data: bytes) -> None:
        tmp = main + ".tmp"
        write_bytes(self.fs, tmp, data)
        self.fs.fsync(tmp)
        if self.fs.exists(main):
            self.fs.unlink(main)
        self.fs.rename(tmp, main)
        self._sync_dir()
        self._clear_marker(main + ".ended")


@mutant("unpaired-history-saved", invariant="P1", model="process-crash")
class UnpairedHistorySaved(_Mutant):
    """save skips the pairing check (SPEC.md §3): a history with an unanswered tool
    call reaches the disk and the next model request is invalid after a restart."""

    def _check_pairing(self, state: AgentState) -> None:
        pass


@mutant("ended-cleared-before-rename", invariant="E1", model="process-crash")
class EndedClearedBeforeRename(_Mutant):
    """save deletes the ended marker before the new snapshot is in place: a crash in
    between makes the condemned snapshot resumable again."""

    def _commit(self, main: str, data: bytes) -> None:
        self._clear_marker(main + ".ended")
        super()._commit(main, data)


@mutant("ended-unscoped", invariant="E2", model="process-crash")
class EndedUnscoped(FileStateStorage):
    """The legacy ``1`` marker in otherwise hardened storage: a stale marker left by a
    crash before save deletes it condemns the fresh, resumable snapshot."""

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        super().__init__(fs, base_dir, sync="full", ended_marker="legacy")


@mutant("unsanitized-session-id", invariant="S1", model="process-crash")
class UnsanitizedSessionId(_Mutant):
    """Session ids joined into paths as they come (the seed's pitfall six): an id like
    ``../escape`` writes outside the base directory."""

    def path(self, session_id: str, suffix: str = "") -> str:
        if not session_id:
            return super().path(session_id, suffix)
        return posixpath.join(self.base_dir, session_id + ".json" + suffix)


@mutant("runtime-handle-serialized", invariant="S2", model="process-crash")
class RuntimeHandleSerialized(_Mutant):
    """A runtime handle serialized with the state "for convenience" (the seed's seventh
    problem): the model client's API key reaches the file in plain text."""

    def encode(self, state: AgentState) -> bytes:
        obj = encode(state)
        obj["runtime"] = {"client": {"baseUrl": "https://api.example", "apiKey": SECRETS[0]}}
        return json.dumps(obj, separators=(",", ":")).encode()


@mutant("chunked-secret-writer", invariant="S2", model="process-crash")
class ChunkedSecretWriter(RuntimeHandleSerialized):
    """The runtime handle serialized with the state, the API key written 8 bytes at a
    time (a writer flushing small blocks): no single write holds the key, but the file
    does once the pieces are together (issue 10: S2 judged single writes)."""

    def _commit(self, main: str, data: bytes) -> None:
        from itertools import pairwise

        real = self.fs
        needle = SECRETS[0].encode()

        class Chunked:
            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def write(self, path: str, offset: int, chunk: bytes) -> int:
                at = chunk.find(needle)
                if at < 0:
                    return int(real.write(path, offset, chunk))
                end = at + len(needle)
                cuts = [0, *range(at, end, 8), end, len(chunk)]
                for a, b in pairwise(cuts):
                    if b > a:
                        real.write(path, offset + a, chunk[a:b])
                return len(chunk)

        self.fs = Chunked()
        try:
            super()._commit(main, data)
        finally:
            self.fs = real


@mutant("unsanitized-delete", invariant="S1", model="process-crash")
class UnsanitizedDelete(_Mutant):
    """save sanitizes the session id but delete joins it into the path as it comes:
    ``delete("../victim")`` removes ``victim.json`` beside the base directory
    (issue 10: no workload sent a hostile id through anything but save)."""

    def delete(self, session_id: str) -> None:
        if not session_id:
            super().delete(session_id)
            return
        main = posixpath.join(self.base_dir, session_id + ".json")
        try:
            if self.fs.exists(self.base_dir):
                self._begin(create=False)
                self._delete_files(main)
                self._done()
        except OSError as exc:
            raise StateError(ErrorCode.STATE_SAVE_FAILED, "delete failed", cause=exc) from exc


@mutant("create-when-main-absent", invariant="C1", model="process-crash")
class CreateWhenMainAbsent(_Mutant):
    """load_or_create takes "no main file" for "no session": with main gone (a crash
    between the renames, a user's clean-up) and bak unreadable it saves a fresh state
    instead of reporting state_corrupt, and the next save rotates that over the bak,
    the session's last evidence."""

    def load_or_create(
        self, session_id: str, initial_metadata: Mapping[str, Any] | None = None
    ) -> AgentState:
        if not self.fs.exists(self.path(session_id)):
            state = AgentState.new(session_id, dict(initial_metadata or {}))
            self.save(state)
            return state
        return super().load_or_create(session_id, initial_metadata)


@mutant("load-skips-pairing", invariant="P1", model="process-crash")
class LoadSkipsPairing(_Mutant):
    """save refuses an unpaired history but load does not check it (the defect issue 10
    found in the reference): a file written by a looser program loads as it is, and
    the next model request is invalid; beside a good bak, the bak is never tried."""

    _saving = False

    def save(self, state: AgentState) -> None:
        self._saving = True
        try:
            super().save(state)
        finally:
            self._saving = False

    def _check_pairing(self, state: AgentState) -> None:
        if self._saving:
            super()._check_pairing(state)


@mutant("overwrites-colliding-id", invariant="I1", model="process-crash")
class OverwritesCollidingId(_Mutant):
    """save, delete and mark_not_resumable do not look whose file the name holds (the
    published behaviour, SPEC.md §4): ``"a b"`` and ``"a_b"`` share ``a_b.json``, so
    saving one rotates the other's snapshot away and deleting one deletes the other."""

    def _check_owner(self, main: str, session_id: str) -> None:
        pass


@mutant("no-fsync-before-rename", invariant="R1", model="ext4")
class NoFsyncBeforeRename(_Mutant):
    """tmp is renamed over main without an fsync of its data first: on ext4 with
    delayed allocation a power cut persists the rename but not the data, leaving a
    zero-length main (the 2009 ext4 "zero-length file" reports)."""

    def _sync_data(self, path: str) -> None:
        pass


@mutant("no-dir-fsync", invariant="R1", model="posix")
class NoDirFsync(_Mutant):
    """The directory is never fsynced after the renames: save returns before its new
    directory entries are durable, so a power cut can bring back the previous main
    (ALICE: renames are not persisted in order without a directory fsync)."""

    def _sync_dir(self) -> None:
        pass

    def _ensure_base(self) -> None:
        makedirs(self.fs, self.base_dir)

    def _begin(self, *, create: bool = True) -> None:
        if create:
            self._ensure_base()


@mutant("marker-not-synced", invariant="E1", model="ext4")
class MarkerNotSynced(_Mutant):
    """mark_not_resumable writes the ended marker and returns without fsyncing it or
    its directory: after a power cut the marker is gone and the terminal snapshot is
    offered for resume again."""

    def _write_marker(self, ended: str, content: bytes) -> None:
        write_bytes(self.fs, ended, content)


@mutant("cleanup-deletes-main", invariant="F1", model="fault")
class CleanupDeletesMain(_Mutant):
    """The failure path of save "cleans up" by deleting main as well as tmp: a full disk
    during the tmp write destroys the last acknowledged snapshot."""

    def _discard(self, tmp: str) -> None:
        super()._discard(tmp)
        if tmp.endswith(".json.tmp"):
            try:
                if self.fs.exists(tmp[: -len(".tmp")]):
                    self.fs.unlink(tmp[: -len(".tmp")])
            except OSError:
                pass


class _CountIgnored:
    """``fs`` as seen by code that drops ``write``'s return value: every write claims
    all its bytes were written, whatever the disk took."""

    def __init__(self, fs: FileSystem) -> None:
        self._fs = fs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fs, name)

    def write(self, path: str, offset: int, data: bytes) -> int:
        self._fs.write(path, offset, data)
        return len(data)


@mutant("ignores-short-write", invariant="R1", model="fault")
class IgnoresShortWrite(_Mutant):
    """Writes ignore the count ``write(2)`` returns (the bug issue 9 found in
    ``OsFileSystem.write``): on a full disk the first write that reaches the end
    stores a prefix and returns its length with no error, so save renames a cut tmp
    over main and acknowledges it, and the next load silently returns the older bak."""

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        super().__init__(cast(FileSystem, _CountIgnored(fs)), base_dir)

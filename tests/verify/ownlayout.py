"""A correct state storage with a file layout of its own (issue 8, acceptance 6).

One file per session, ``<base>/sessions/<name>.state``, where ``<name>`` is the
reference's safe file name; no bak, no marker file. A save writes
``<name>.state.new``, fsyncs it, renames it over the state file and fsyncs the
directory; ``mark_not_resumable`` rewrites the snapshot with the ended effect the
same way. Nothing here knows the reference's ``S.json``/``S.json.bak``/``S.json.ended``.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
from collections.abc import Mapping
from typing import Any

from crashpoint.core import (
    AgentState,
    ErrorCode,
    Retryability,
    StateError,
    decode_bytes,
    encode_bytes,
    safe_session_file_name,
    state_is_paired,
)
from crashpoint.faultfs import FileSystem, makedirs


def _owner(data: bytes) -> str | None:
    """The sessionId a file records, if it is a JSON object with one."""
    try:
        obj = json.loads(data)
    except ValueError:
        return None
    owner = obj.get("sessionId") if isinstance(obj, dict) else None
    return owner if isinstance(owner, str) else None


def _collision(session_id: str) -> StateError:
    # another id maps to the same file name (SPEC.md §4: never overwrite its file)
    return StateError("session_id_collision", "the file holds another session's id")


def _failed(what: str, exc: OSError) -> StateError:
    return StateError(
        ErrorCode.STATE_SAVE_FAILED,
        f"{what} failed: {exc.strerror}",
        retryability=Retryability.CONDITIONAL,
        cause=exc,
    )


class OwnLayoutStorage:
    """The six methods of SPEC.md §6 over ``fs`` (see the module docstring)."""

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        self.fs = fs
        self.dir = posixpath.join(base_dir, "sessions")
        self._dir_durable = False

    def _path(self, session_id: str, suffix: str = "") -> str:
        return posixpath.join(self.dir, safe_session_file_name(session_id) + ".state" + suffix)

    def _ensure_dir(self) -> None:
        """``mkdir -p`` the directory, and make every entry on its way durable once
        (a call that failed half-way may have left a directory entry volatile)."""
        makedirs(self.fs, self.dir)
        if not self._dir_durable:
            base = posixpath.dirname(self.dir)
            for directory in (posixpath.dirname(base), base):
                self.fs.fsync_dir(directory)
            self._dir_durable = True

    def _replace(self, path: str, data: bytes) -> None:
        tmp = path + ".new"
        try:
            self._ensure_dir()
            self.fs.create(tmp)
            offset = 0
            while offset < len(data):
                offset += self.fs.write(tmp, offset, data[offset:])
            self.fs.fsync(tmp)
            self.fs.rename(tmp, path)
            self.fs.fsync_dir(self.dir)
        except OSError as exc:
            with contextlib.suppress(OSError):
                if self.fs.exists(tmp):
                    self.fs.unlink(tmp)
            raise _failed("save", exc) from exc

    def _read(self, session_id: str) -> AgentState:
        path = self._path(session_id)
        try:
            if not self.fs.exists(path):
                raise StateError(ErrorCode.SESSION_NOT_FOUND, "no such session")
            data = self.fs.read(path)
        except OSError as exc:
            raise StateError(
                "state_load_failed",
                f"read failed: {exc.strerror}",
                cause=exc,
                retryability=Retryability.CONDITIONAL,
            ) from exc
        try:
            state = decode_bytes(data)
        except StateError as exc:
            if exc.code == ErrorCode.SCHEMA_VERSION_UNSUPPORTED:
                raise
            raise StateError(ErrorCode.STATE_CORRUPT, "undecodable", cause=exc) from exc
        if state.session_id != session_id:
            raise _collision(session_id)
        if not state_is_paired(state):
            raise StateError(ErrorCode.STATE_CORRUPT, "unpaired")
        return state

    # --- SPEC.md §6 -------------------------------------------------------------------
    def save(self, state: AgentState) -> None:
        path = self._path(state.session_id)
        if not state_is_paired(state):
            raise StateError(ErrorCode.HISTORY_UNPAIRED, "tool calls not paired")
        self._refuse_other_owner(path, state.session_id)
        self._replace(path, encode_bytes(state))

    def _refuse_other_owner(self, path: str, session_id: str) -> None:
        try:
            data = self.fs.read(path) if self.fs.exists(path) else None
        except OSError as exc:
            raise _failed("read", exc) from exc
        owner = None if data is None else _owner(data)
        if owner is not None and owner != session_id:
            raise _collision(session_id)

    def load(self, session_id: str) -> AgentState:
        return self._read(session_id)

    def exists(self, session_id: str) -> bool:
        self._path(session_id)
        try:
            self._read(session_id)
        except StateError as exc:
            return exc.code != ErrorCode.SESSION_NOT_FOUND
        return True

    def load_or_create(
        self, session_id: str, initial_metadata: Mapping[str, Any] | None = None
    ) -> AgentState:
        try:
            return self._read(session_id)
        except StateError as exc:
            if exc.code != ErrorCode.SESSION_NOT_FOUND:
                raise
        state = AgentState.new(session_id, dict(initial_metadata or {}))
        self.save(state)
        return state

    def delete(self, session_id: str) -> None:
        path = self._path(session_id)
        self._refuse_other_owner(path, session_id)
        try:
            for p in (path, path + ".new"):
                if self.fs.exists(p):
                    self.fs.unlink(p)
            if self.fs.exists(self.dir):
                self.fs.fsync_dir(self.dir)
        except OSError as exc:
            raise _failed("delete", exc) from exc

    def mark_not_resumable(self, session_id: str) -> None:
        path = self._path(session_id)
        try:
            state = self._read(session_id)
        except StateError as exc:
            if exc.code == ErrorCode.SESSION_NOT_FOUND:
                return
            raise
        state.is_running = False
        state.pending_run_checkpoint = None
        self._replace(path, encode_bytes(state))


def own_layout(fs: FileSystem, base_dir: str) -> OwnLayoutStorage:
    """``factory(fs, base_dir)`` for verify."""
    return OwnLayoutStorage(fs, base_dir)

"""State storages: in memory, and files over the injectable filesystem (SPEC.md §6).

File layout per session, with ``S = safe_session_file_name(id)`` in ``base_dir``::

    S.json        main: the current snapshot
    S.json.bak    the snapshot before it
    S.json.tmp    a save in progress
    S.json.ended  the not-resumable marker (SPEC.md §6, mark_not_resumable)
    S.json.ended.tmp  a scoped marker being written (renamed over S.json.ended)
    S.json.lock   the writers' lock (reference only: created if absent, never removed,
                  content meaningless; SPEC.md §6, "Concurrent writers")

Every error is a :class:`~crashpoint.core.StateError`; a simulated crash
(``BaseException``) passes through untouched.
"""

from __future__ import annotations

import contextlib
import hashlib
import posixpath
from collections.abc import Iterator, Mapping
from typing import Any, Literal, Protocol, runtime_checkable

from ..faultfs._lock import check_timeout
from ..faultfs._protocol import FileSystem, makedirs, write_bytes
from ._codec import decode_bytes, encode_bytes, peek_session_id
from ._errors import ErrorCode, Retryability, StateError
from ._ids import redact, safe_session_file_name
from ._pairing import state_is_paired
from ._state import AgentState

__all__ = ["DEFAULT_LOCK_TIMEOUT", "FileStateStorage", "MemoryStateStorage", "StateStorage"]

DEFAULT_LOCK_TIMEOUT = 10.0
"""How long a writer waits for another writer's lock, in seconds (SPEC.md §6)."""

SyncMode = Literal["full", "none"]
EndedMarker = Literal["scoped", "legacy"]
_SCOPED_PREFIX = b"sha256:"
_NO_FALLBACK = frozenset(
    {
        ErrorCode.SCHEMA_VERSION_UNSUPPORTED,
        ErrorCode.STATE_LOAD_FAILED,
        ErrorCode.SESSION_ID_COLLISION,
    }
)
"""Load errors raised as they are, never answered with bak (SPEC.md §6)."""

_ROTATABLE: dict[bytes, bool] = {}
"""The reference's :meth:`FileStateStorage._rotatable` verdict by the digest (blake2b,
16 bytes) of main's bytes: whether they decode to a paired state depends on the bytes
alone (issue 11: each save of a session reads and decodes the snapshot the last one
wrote)."""
_ROTATABLE_MAX = 4096


@runtime_checkable
class StateStorage(Protocol):
    """The storage SPI (SPEC.md §6; the seed's §3.1): six methods.

    Errors are :class:`StateError` with the codes of SPEC.md §5.
    """

    def load(self, session_id: str) -> AgentState:
        """The session's snapshot. Raises session_not_found, state_corrupt,
        schema_version_unsupported, invalid_session_id, state_load_failed (an I/O
        error reading a file: conditional, no bak fallback), session_id_collision
        (the file holds another session's id, SPEC.md §4)."""

    def save(self, state: AgentState) -> None:
        """Persist ``state``. Raises invalid_session_id, history_unpaired,
        message_empty_contents, session_id_collision, state_save_failed (conditional)."""

    def delete(self, session_id: str) -> None:
        """Remove every file of the session. Raises invalid_session_id,
        session_id_collision, state_save_failed."""

    def exists(self, session_id: str) -> bool:
        """True exactly when ``load`` would not raise session_not_found."""

    def mark_not_resumable(self, session_id: str) -> None:
        """Condemn the current snapshot: it will load with ``is_running=False`` and
        no ``pending_run_checkpoint``. Raises invalid_session_id, session_id_collision,
        state_save_failed."""

    def load_or_create(
        self, session_id: str, initial_metadata: Mapping[str, Any] | None = None
    ) -> AgentState:
        """``load``, or a fresh saved state when (and only when) the session is not found."""


_VANISHED_RETRIES = 3
"""Reads of a load whose file vanished between its existence check and its read (a
concurrent writer's rotation) before the load fails with state_load_failed."""


def _not_found(session_id: str) -> StateError:
    return StateError(ErrorCode.SESSION_NOT_FOUND, f"no session {redact(session_id)}")


def _unpaired(state: AgentState) -> StateError:
    return StateError(
        ErrorCode.HISTORY_UNPAIRED,
        f"session {redact(state.session_id)}: history has unpaired tool calls; nothing written",
    )


def _collision(session_id: str, owner: str, role: str = "main") -> StateError:
    return StateError(
        ErrorCode.SESSION_ID_COLLISION,
        f"the {role} file of session {redact(session_id)} belongs to session "
        f"{redact(owner)} (both ids map to one file name); nothing changed",
    )


def _save_failed(session_id: str, what: str, exc: OSError) -> StateError:
    return StateError(
        ErrorCode.STATE_SAVE_FAILED,
        f"{what} of session {redact(session_id)} failed: {exc.strerror or type(exc).__name__}",
        retryability=Retryability.CONDITIONAL,
        cause=exc,
    )


def _load_or_create(
    storage: StateStorage, session_id: str, initial_metadata: Mapping[str, Any] | None
) -> AgentState:
    """SPEC.md §6: a fresh state, saved, only when load says session_not_found; any
    other load error is raised and nothing is written (C1)."""
    try:
        return storage.load(session_id)
    except StateError as exc:
        if exc.code != ErrorCode.SESSION_NOT_FOUND:
            raise
    state = AgentState.new(session_id, dict(initial_metadata or {}))
    storage.save(state)
    return state


def _role(path: str) -> str:
    """``main``, ``bak``, ``tmp`` or ``ended``: a session file named without its id
    (error messages show ids only through :func:`redact`, SPEC §4)."""
    for suffix, role in ((".bak", "bak"), (".tmp", "tmp"), (".ended", "ended"), (".lock", "lock")):
        if path.endswith(suffix):
            return role
    return "main"


def _end_effect(state: AgentState) -> AgentState:
    state.is_running = False
    state.pending_run_checkpoint = None
    return state


class FileStateStorage:
    """Snapshots as files: tmp → bak → main (SPEC.md §6; the seed's §3.3–§3.5).

    Args:
        fs: the filesystem; the real OS (:class:`~crashpoint.faultfs.OsFileSystem`)
            when None.
        base_dir: absolute directory holding the session files; created on first
            save. Required: there is no default directory.
        sync: ``"full"`` (default) fsyncs tmp before its rename and the directory
            after the renames and deletions; ``"none"`` is the seed's exact sequence.
        ended_marker: ``"scoped"`` (default) writes ``sha256:<hex>`` of the condemned
            snapshot's bytes, so the marker applies to that snapshot only;
            ``"legacy"`` writes ``1``, applying to whatever is loaded.
        strict: True (default) is the hardened reference. False keeps the rules of the
            published algorithm that SPEC.md §8 ("Which fixes the seed target keeps")
            lists: load does not check pairing and falls back to bak on every failure
            but an unsupported version, read errors included; colliding session ids
            overwrite each other; save rotates whatever main holds. Parsing robustness
            (the depth limit, version spellings, huge numbers, long ids) applies to
            both. Only the reference (strict) locks (below).
        lock_timeout: seconds a writer waits for the lock another writer holds
            (SPEC.md §6, default :data:`DEFAULT_LOCK_TIMEOUT`, 10 s), measured on the
            filesystem's clock. save, delete and mark_not_resumable hold an exclusive
            ``fs.lock`` on ``S.json.lock`` around everything they read and write; when
            the wait runs out they raise ``state_save_failed`` (conditional) with the
            message "session locked by another writer". load and exists do not lock.

    Raises:
        ValueError: ``base_dir`` is not an absolute path, an option is unknown, or
            ``lock_timeout`` is not a finite number of seconds >= 0.

    Example::

        storage = FileStateStorage(MemoryFileSystem(), "/data")
        storage.save(AgentState.new("s1"))
        assert storage.load("s1").session_id == "s1"
    """

    def __init__(
        self,
        fs: FileSystem | None,
        base_dir: str,
        *,
        sync: SyncMode = "full",
        ended_marker: EndedMarker = "scoped",
        strict: bool = True,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        if not isinstance(base_dir, str) or not posixpath.isabs(base_dir):
            raise ValueError(
                f"base_dir must be an absolute path, not {base_dir!r} "
                "(for a directory relative to the working directory, pass os.path.abspath(...))"
            )
        if sync not in ("full", "none"):
            raise ValueError(f"sync must be 'full' or 'none', not {sync!r}")
        if ended_marker not in ("scoped", "legacy"):
            raise ValueError(f"ended_marker must be 'scoped' or 'legacy', not {ended_marker!r}")
        if fs is None:
            from ..faultfs._os import OsFileSystem

            fs = OsFileSystem()
        self.fs = fs
        self.base_dir = base_dir
        self.sync = sync
        self.ended_marker = ended_marker
        self.strict = strict
        self.lock_timeout = check_timeout(lock_timeout)
        self._base_synced = False
        self._dir_pending = False

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_dir={self.base_dir!r}, sync={self.sync!r}, "
            f"ended_marker={self.ended_marker!r}, strict={self.strict!r})"
        )

    # --- paths -----------------------------------------------------------------
    def path(self, session_id: str, suffix: str = "") -> str:
        """The path of a session file: suffix ``""`` (main), ``".bak"``, ``".tmp"``,
        ``".ended"``, ``".lock"``. Raises invalid_session_id."""
        return posixpath.join(self.base_dir, safe_session_file_name(session_id) + ".json" + suffix)

    @property
    def _full(self) -> bool:
        return self.sync == "full"

    def _begin(self, *, create: bool = True) -> None:
        """Before a mutating call: create the base directory; with sync="full", first
        make durable what an earlier call that failed part-way left pending. Were its
        renames still volatile, this call's deletions could persist without them
        (power-loss-reorder) and leave no snapshot at all."""
        if create:
            self._ensure_base()
        if self._full and self._dir_pending:
            self.fs.fsync_dir(self.base_dir)
        self._dir_pending = True

    def _done(self) -> None:
        self._dir_pending = False

    def _ensure_base(self) -> None:
        """mkdir -p the base directory. With sync="full", the first successful call of
        this storage also fsyncs the parent of each directory it created (or, if none,
        of the base directory): an earlier process may have created it and died, or
        failed, before that fsync, and a power cut could then take the directory and
        every acknowledged snapshot in it (power-loss-reorder)."""
        created = makedirs(self.fs, self.base_dir)
        if self._full and not self._base_synced:
            for directory in created or [self.base_dir]:
                self.fs.fsync_dir(posixpath.dirname(directory) or "/")
            self._base_synced = True

    def _sync_data(self, path: str) -> None:
        """With sync="full", make a file's data durable before it is renamed into place."""
        if self._full:
            self.fs.fsync(path)

    def _sync_dir(self) -> None:
        if self._full:
            self.fs.fsync_dir(self.base_dir)

    @contextlib.contextmanager
    def _locked(self, session_id: str, main: str, what: str) -> Iterator[None]:
        """Hold the session's writers' lock, ``S.json.lock`` (SPEC.md §6), around the
        block; the base directory must exist. The published algorithm (strict=False)
        does not lock. Raises state_save_failed: "session locked by another writer"
        when the lock stays held for ``lock_timeout`` seconds, or the OS's error."""
        if not self.strict:
            yield
            return
        path = main + ".lock"
        try:
            handle = self.fs.lock(path, self.lock_timeout)
        except TimeoutError as exc:
            raise StateError(
                ErrorCode.STATE_SAVE_FAILED,
                f"{what} of session {redact(session_id)} failed: session locked by another "
                f"writer (waited {self.lock_timeout:g} s)",
                retryability=Retryability.CONDITIONAL,
                cause=exc,
            ) from exc
        except OSError as exc:
            raise _save_failed(session_id, what, exc) from exc
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                self.fs.unlock(path, handle)

    def _prepare_base(self, session_id: str, what: str) -> None:
        """Create the base directory before locking in it (strict); OSError ->
        state_save_failed."""
        if self.strict:
            try:
                self._ensure_base()
            except OSError as exc:
                raise _save_failed(session_id, what, exc) from exc

    # --- save ------------------------------------------------------------------
    def save(self, state: AgentState) -> None:
        main = self.path(state.session_id)
        self._check_pairing(state)
        data = self.encode(state)
        self._prepare_base(state.session_id, "save")
        with self._locked(state.session_id, main, "save"):
            try:
                self._check_owner(main, state.session_id)
            except OSError as exc:
                raise _save_failed(state.session_id, "save", exc) from exc
            try:
                self._begin()
                self._commit(main, data)
                self._done()
            except OSError as exc:
                self._discard(main + ".tmp")
                raise _save_failed(state.session_id, "save", exc) from exc

    def _check_pairing(self, state: AgentState) -> None:
        """The persistence boundary is the pairing boundary (SPEC.md §3): save refuses
        an unpaired state, and (strict) load treats an unpaired file as undecodable."""
        if not state_is_paired(state):
            raise _unpaired(state)

    def encode(self, state: AgentState) -> bytes:
        """The bytes a save writes for ``state`` (the codec's persistence encoding)."""
        return encode_bytes(state)

    def _write_temporary(self, tmp: str, data: bytes) -> None:
        """Write a temporary file whole. The reference (strict) first unlinks a stale one
        (a crashed save's, or anything planted there), then creates it ``O_CREAT|O_EXCL|
        O_NOFOLLOW`` (SPEC.md §6): a symlink or a hard link planted at the name is never
        followed or truncated; one planted again in between fails the call (EEXIST). The
        published algorithm (strict=False) truncates whatever is there."""
        fs = self.fs
        if not self.strict:
            write_bytes(fs, tmp, data)
            return
        if fs.exists(tmp):
            fs.unlink(tmp)
        write_bytes(fs, tmp, data, exclusive=True)

    def _commit(self, main: str, data: bytes) -> None:
        fs, tmp, bak = self.fs, main + ".tmp", main + ".bak"
        self._write_temporary(tmp, data)
        self._sync_data(tmp)
        if fs.exists(main) and self._rotatable(main):
            if fs.exists(bak):
                fs.unlink(bak)
            fs.rename(main, bak)
        fs.rename(tmp, main)
        self._sync_dir()
        self._clear_marker(main + ".ended")

    def _check_owner(self, main: str, session_id: str) -> None:
        """Before save, delete or mark_not_resumable change anything: refuse when main
        or bak records another session's id (SPEC.md §4, ``session_id_collision``). A
        file without a readable sessionId belongs to no one. The published algorithm
        (strict=False) does not look. Raises OSError when a file cannot be read."""
        if not self.strict:
            return
        for path in (main, main + ".bak"):
            if self.fs.exists(path):
                owner = peek_session_id(self.fs.read(path))
                if owner is not None and owner != session_id:
                    raise _collision(session_id, owner, _role(path))

    def _rotatable(self, main: str) -> bool:
        """Whether save may rotate ``main`` to bak: only when it decodes (SPEC.md §6).
        An undecodable main rotated over a good bak would leave nothing loadable if a
        crash came before ``rename(tmp, main)``; it is replaced directly instead. The
        published algorithm (strict=False) rotates whatever main holds. A read error
        is raised (OSError: the save fails, nothing touched but tmp)."""
        if not self.strict:
            return True
        data = self.fs.read(main)
        digest = None
        if type(data) is bytes and type(self)._check_pairing is FileStateStorage._check_pairing:
            digest = hashlib.blake2b(data, digest_size=16).digest()
            known = _ROTATABLE.get(digest)
            if known is not None:
                return known
        try:
            self._check_pairing(decode_bytes(data))
            verdict = True
        except StateError:
            verdict = False
        if digest is not None:
            if len(_ROTATABLE) >= _ROTATABLE_MAX:
                _ROTATABLE.clear()
            _ROTATABLE[digest] = verdict
        return verdict

    def _clear_marker(self, ended: str) -> None:
        # After the directory sync: were the unlink to persist without the renames
        # (power-loss-reorder), the condemned snapshot would load as resumable (E1).
        if self.fs.exists(ended):
            self.fs.unlink(ended)
            self._sync_dir()

    def _discard(self, tmp: str) -> None:
        try:
            if self.fs.exists(tmp):
                self.fs.unlink(tmp)
        except OSError:
            pass

    # --- load ------------------------------------------------------------------
    # explore's read-set memo of loads relies on this: load is a deterministic function of
    # the session id, the options and what it reads through ``fs``; it writes nothing and
    # changes no attribute (scenarios/_explore.py, _LoadMemo). Keep it so.
    def load(self, session_id: str) -> AgentState:
        # A file seen to exist that is gone when read was moved by another writer's
        # rotation (main -> bak, tmp -> main: SPEC.md §6 "concurrent writers"; load takes
        # no lock): read again, a bounded number of times, instead of failing the load
        # (found by issue 25's save-while-load, R2). The seed reads once.
        for _ in range(_VANISHED_RETRIES if self.strict else 0):
            try:
                return self._load_once(session_id)
            except StateError as exc:
                if exc.code != ErrorCode.STATE_LOAD_FAILED or not isinstance(
                    exc.cause, FileNotFoundError
                ):
                    raise
        return self._load_once(session_id)

    def _load_once(self, session_id: str) -> AgentState:
        main = self.path(session_id)
        bak = main + ".bak"
        fs = self.fs
        main_error: StateError | None = None
        main_exists = fs.exists(main)
        if main_exists:
            try:
                return self._read_snapshot(main, main, session_id)
            except StateError as exc:
                if exc.code in _NO_FALLBACK:
                    raise
                main_error = exc
        if not fs.exists(bak):
            if main_error is not None:
                raise self._corrupt(session_id, "main is corrupt and there is no bak", main_error)
            raise _not_found(session_id)
        try:
            return self._read_snapshot(bak, main, session_id)
        except StateError as exc:
            if exc.code in _NO_FALLBACK:
                raise
            why = "main and bak corrupt" if main_exists else "bak is corrupt and there is no main"
            raise self._corrupt(session_id, why, exc) from exc

    @staticmethod
    def _corrupt(session_id: str, why: str, cause: BaseException) -> StateError:
        return StateError(
            ErrorCode.STATE_CORRUPT, f"session {redact(session_id)}: {why}: {cause}", cause=cause
        )

    def _read_snapshot(self, path: str, main: str, session_id: str) -> AgentState:
        """Decode one snapshot file and apply an ended marker that condemns it."""
        data, state = self._decode_file(path, session_id)
        marker = self._read_marker(main + ".ended")
        if marker is not None and self._marker_applies(marker, data):
            _end_effect(state)
        return state

    def _decode_file(self, path: str, session_id: str) -> tuple[bytes, AgentState]:
        role = _role(path)
        try:
            data = self.fs.read(path)
        except OSError as exc:
            # SPEC.md §6: a read error is not corruption (strict); the seed treats it
            # like a corrupt file and falls back to bak.
            raise StateError(
                ErrorCode.STATE_LOAD_FAILED if self.strict else ErrorCode.STATE_CORRUPT,
                f"cannot read the {role} file of session {redact(session_id)}: "
                f"{exc.strerror or type(exc).__name__}",
                retryability=Retryability.CONDITIONAL if self.strict else Retryability.NEVER,
                cause=exc,
            ) from exc
        try:
            state = decode_bytes(data)
        except StateError:
            # another session's file that does not decode (a future version, say) is
            # still theirs: a collision, never answered with bak
            owner = peek_session_id(data) if self.strict else None
            if owner is not None and owner != session_id:
                raise _collision(session_id, owner, role) from None
            raise
        if self.strict and state.session_id != session_id:
            raise _collision(session_id, state.session_id, role)
        if state.session_id != session_id:  # the published rule: a corrupt file
            raise StateError(
                ErrorCode.STATE_CORRUPT,
                f"the {role} file of session {redact(session_id)} holds session "
                f"{redact(state.session_id)}",
            )
        if self.strict:
            # SPEC.md §3: the persistence boundary is the pairing boundary both ways; an
            # unpaired file is undecodable for load (bak fallback applies).
            try:
                self._check_pairing(state)
            except StateError as exc:
                raise StateError(
                    ErrorCode.HISTORY_UNPAIRED,
                    f"the {role} file of session {redact(session_id)} has unpaired tool calls",
                ) from exc
        return data, state

    def _read_marker(self, ended: str) -> bytes | None:
        if not self.fs.exists(ended):
            return None
        try:
            return self.fs.read(ended)
        except OSError:
            return b""  # unreadable: err on the side of "not resumable"

    def _marker_applies(self, marker: bytes, snapshot: bytes) -> bool:
        """SPEC.md §6: ``sha256:<hex>`` applies to exactly those bytes; ``1``, empty or
        anything unrecognized applies to any file. A legacy storage obeys any marker."""
        if self.ended_marker == "legacy":
            return True
        text = marker.strip()
        if text.startswith(_SCOPED_PREFIX):
            digest = text[len(_SCOPED_PREFIX) :]
            if len(digest) == 64 and all(c in b"0123456789abcdef" for c in digest):
                return digest.decode() == hashlib.sha256(snapshot).hexdigest()
        return True

    # --- mark_not_resumable ----------------------------------------------------
    def mark_not_resumable(self, session_id: str) -> None:
        main = self.path(session_id)
        self._prepare_base(session_id, "mark_not_resumable")
        with self._locked(session_id, main, "mark_not_resumable"):
            self._mark(main, session_id)

    def _mark(self, main: str, session_id: str) -> None:
        try:
            self._check_owner(main, session_id)
            content = self._marker_content(main, session_id)
        except OSError as exc:
            raise _save_failed(session_id, "mark_not_resumable", exc) from exc
        except StateError as exc:
            if exc.code != ErrorCode.STATE_LOAD_FAILED or not isinstance(exc.cause, OSError):
                raise
            # the snapshot to condemn cannot be read: a guess could condemn the wrong one
            raise _save_failed(session_id, "mark_not_resumable", exc.cause) from exc
        try:
            self._begin()
            self._write_marker(main + ".ended", content)
            self._done()
        except OSError as exc:
            raise _save_failed(session_id, "mark_not_resumable", exc) from exc

    def _marker_content(self, main: str, session_id: str) -> bytes:
        if self.ended_marker == "legacy":
            return b"1"
        for path in (main, main + ".bak"):
            try:
                if self.fs.exists(path):
                    data, _ = self._decode_file(path, session_id)
                    return _SCOPED_PREFIX + hashlib.sha256(data).hexdigest().encode()
            except StateError as exc:
                if exc.code == ErrorCode.STATE_LOAD_FAILED:
                    raise
                continue  # not what load would return: try bak
        # Nothing loadable: name the empty file, which never decodes, so the marker
        # condemns nothing (a "1" here would condemn the next save if a crash kept it).
        return _SCOPED_PREFIX + hashlib.sha256(b"").hexdigest().encode()

    def _write_marker(self, ended: str, content: bytes) -> None:
        """The scoped marker is written whole or not at all (tmp, fsync, rename): an empty
        or torn marker applies to any snapshot, so one left behind by a failed or
        interrupted mark would condemn the next save too (E2). The legacy marker is
        written in place, as the seed does."""
        if self.ended_marker == "legacy":
            write_bytes(self.fs, ended, content)
            if self._full:
                self.fs.fsync(ended)
            self._sync_dir()
            return
        tmp = ended + ".tmp"
        try:
            self._write_temporary(tmp, content)
            if self._full:
                self.fs.fsync(tmp)
            self.fs.rename(tmp, ended)
        except OSError:
            self._discard(tmp)
            raise
        self._sync_dir()

    # --- delete / exists / load_or_create --------------------------------------
    def delete(self, session_id: str) -> None:
        main = self.path(session_id)
        try:
            if not self.fs.exists(self.base_dir):
                return  # nothing to delete; the base directory is not created for it
        except OSError as exc:
            raise _save_failed(session_id, "delete", exc) from exc
        with self._locked(session_id, main, "delete"):
            try:
                self._check_owner(main, session_id)
                self._begin(create=False)
                self._delete_files(main)
                self._done()
            except OSError as exc:
                raise _save_failed(session_id, "delete", exc) from exc

    def _delete_files(self, main: str) -> None:
        # bak before main, so a crash never brings back an older snapshot (D1);
        # the marker last, so a condemned main never loads as resumable (E1).
        for group in (
            (main + ".bak",),
            (main, main + ".tmp"),
            (main + ".ended", main + ".ended.tmp"),
        ):
            removed = False
            for path in group:
                if self.fs.exists(path):
                    self.fs.unlink(path)
                    removed = True
            if removed:
                self._sync_dir()

    def exists(self, session_id: str) -> bool:
        main = self.path(session_id)
        return self.fs.exists(main) or self.fs.exists(main + ".bak")

    def load_or_create(
        self, session_id: str, initial_metadata: Mapping[str, Any] | None = None
    ) -> AgentState:
        return _load_or_create(self, session_id, initial_metadata)


class MemoryStateStorage:
    """The same contract in a dict: no crashes, instances isolated (SPEC.md §6).

    Snapshots are kept as encoded bytes, so what loads is exactly what a file
    storage would load (media placeholders included). Keys are file-name stems, as
    on disk, so two ids that share one (``"a b"``, ``"a_b"``) collide here too and
    are refused the same way (``session_id_collision``, SPEC.md §4).
    """

    def __init__(self) -> None:
        self._snapshots: dict[str, bytes] = {}
        self._owners: dict[str, str] = {}
        self._ended: set[str] = set()

    def _name(self, session_id: str) -> str:
        """The stem of ``session_id``; raises session_id_collision when another
        session's snapshot holds it."""
        name = safe_session_file_name(session_id)
        owner = self._owners.get(name)
        if owner is not None and owner != session_id:
            raise _collision(session_id, owner)
        return name

    def save(self, state: AgentState) -> None:
        safe_session_file_name(state.session_id)
        if not state_is_paired(state):
            raise _unpaired(state)
        data = encode_bytes(state)
        name = self._name(state.session_id)
        self._snapshots[name] = data
        self._owners[name] = state.session_id
        self._ended.discard(name)

    def load(self, session_id: str) -> AgentState:
        name = self._name(session_id)
        data = self._snapshots.get(name)
        if data is None:
            raise _not_found(session_id)
        state = decode_bytes(data)
        return _end_effect(state) if name in self._ended else state

    def delete(self, session_id: str) -> None:
        name = self._name(session_id)
        self._snapshots.pop(name, None)
        self._owners.pop(name, None)
        self._ended.discard(name)

    def exists(self, session_id: str) -> bool:
        return safe_session_file_name(session_id) in self._snapshots

    def mark_not_resumable(self, session_id: str) -> None:
        self._ended.add(self._name(session_id))

    def load_or_create(
        self, session_id: str, initial_metadata: Mapping[str, Any] | None = None
    ) -> AgentState:
        return _load_or_create(self, session_id, initial_metadata)

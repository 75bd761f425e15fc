"""Session ids are data, never paths (SPEC §4, seed §4).

:func:`safe_session_file_name` turns a session id into a file-name stem that can
only name a file directly inside the storage's base directory;
:func:`redact` is how ids appear in logs and error messages.
"""

from __future__ import annotations

from typing import Final

from ._errors import ErrorCode, StateError

__all__ = ["redact", "safe_session_file_name"]

_SAFE: Final = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz._-")
_FORBIDDEN: Final = ("..", "/", "\\", "\0")
_REDACT_KEEP: Final = 8
_LONGEST_SUFFIX: Final = ".json.ended.tmp"

MAX_STEM_BYTES: Final = 255 - len(_LONGEST_SUFFIX)
"""The longest file-name stem (240 bytes, ASCII): the longest session file name,
``S.json.ended.tmp``, must fit the 255-byte limit of common filesystems (SPEC §4)."""


def redact(session_id: str) -> str:
    """``session_id`` as shown in logs and errors: ids longer than 8 characters are cut
    to their first 8 characters plus ``"..."`` (SPEC §4). Characters are code points.

    >>> redact("session-00042")
    'session-...'
    """
    if len(session_id) <= _REDACT_KEEP:
        return session_id
    return f"{session_id[:_REDACT_KEEP]}..."


def _invalid(session_id: str, why: str) -> StateError:
    return StateError(
        ErrorCode.INVALID_SESSION_ID,
        f"invalid session id {redact(session_id)!r}: {why}",
        layer="storage",
    )


def safe_session_file_name(session_id: str) -> str:
    """The file-name stem for ``session_id`` (SPEC §4).

    Rejects an empty id and any id containing ``..``, ``/``, ``\\`` or NUL; maps every
    character outside ``[0-9A-Za-z._-]`` to ``_``; rejects a result of ``.`` or ``..``,
    and a result longer than 240 bytes (:data:`MAX_STEM_BYTES`): the longest file
    name, ``S.json.ended.tmp``, must fit in 255 bytes, so a long id is refused before
    any I/O instead of failing as a retryable save error.
    A character outside the Basic Multilingual Plane (two UTF-16 code units) maps to
    ``__``, as in the seed, so both implementations choose the same file name.

    >>> safe_session_file_name("sess 1")
    'sess_1'
    >>> safe_session_file_name("会话-001")
    '__-001'

    Raises:
        StateError: ``invalid_session_id`` (``layer="storage"``, never retryable);
            the message shows the id through :func:`redact`.
    """
    if type(session_id) is not str:  # a subclass may hash or compare its own way
        return _safe_stem(session_id)
    known = _STEMS.get(session_id)
    if known is not None:
        return known
    why = _REFUSED.get(session_id)
    if why is not None:
        raise StateError(ErrorCode.INVALID_SESSION_ID, why, layer="storage")
    try:
        known = _safe_stem(session_id)
    except StateError as exc:
        _remember(_REFUSED, session_id, exc.message)
        raise
    _remember(_STEMS, session_id, known)
    return known


def session_file_stem(session_id: str) -> str | None:
    """:func:`safe_session_file_name` of ``session_id``, or None where it raises
    (for a checker asking of many ids: no exception is built for a refused one)."""
    if type(session_id) is str:
        known = _STEMS.get(session_id)
        if known is not None:
            return known
        if session_id in _REFUSED:
            return None
    try:
        return safe_session_file_name(session_id)
    except StateError:
        return None


_STEMS: dict[str, str] = {}
"""Stems already computed (a pure function of the id; explorations ask for the same
few ids thousands of times)."""
_REFUSED: dict[str, str] = {}
"""Ids already refused, with the message of their invalid_session_id (raised afresh
each time, equal to the first: same code, message and layer)."""
_STEMS_MAX = 4096


def _remember(memo: dict[str, str], session_id: str, value: str) -> None:
    if len(memo) >= _STEMS_MAX:
        memo.clear()
    memo[session_id] = value


def _safe_stem(session_id: str) -> str:
    if not isinstance(session_id, str):
        raise StateError(
            ErrorCode.INVALID_SESSION_ID,
            f"session id must be a string, got {type(session_id).__name__}",
            layer="storage",
        )
    if not session_id:
        raise _invalid(session_id, "empty")
    for forbidden in _FORBIDDEN:
        if forbidden in session_id:
            raise _invalid(session_id, f"contains {forbidden!r}")
    if len(session_id) > MAX_STEM_BYTES:  # every character maps to at least one byte
        raise _invalid(session_id, f"longer than {MAX_STEM_BYTES} characters")
    safe = "".join(ch if ch in _SAFE else ("__" if ord(ch) > 0xFFFF else "_") for ch in session_id)
    if safe in (".", ".."):
        raise _invalid(session_id, f"maps to {safe!r}")
    if len(safe) > MAX_STEM_BYTES:
        raise _invalid(session_id, f"its file name stem would exceed {MAX_STEM_BYTES} bytes")
    return safe

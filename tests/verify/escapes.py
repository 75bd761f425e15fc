"""Stores that reach the real disk past the interception (issue 21): with functions bound
before the patch. Each saves its value durably into ``base_dir`` (intercepted, judged)
and also makes one real change under ``$CRASHPOINT_ESCAPE_DIR`` through a captured
function; ``tests/verify/test_escapes.py`` checks from outside that it never lands."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import io
import json
import os
from typing import Any, ClassVar

__all__ = [
    "ClassAttrStore",
    "CtypesStore",
    "HeldDictStore",
    "IoOpenStore",
    "OpenerStore",
    "PartialStore",
]

# bound at import, before any patch (a module global bound to a real function is
# patched by the interception itself; a dict's values, a partial and a class attribute
# are not)
_HELD = {"rename": os.rename, "mkdir": os.mkdir, "open": os.open, "io.open": io.open}
_OPEN_FOR_WRITING = functools.partial(os.open, mode=0o644)
_CLOSE = os.close


def escape_dir() -> str:
    return os.environ["CRASHPOINT_ESCAPE_DIR"]


class _Durable:
    def __init__(self, base_dir: str) -> None:
        self.base_dir = base_dir
        self.path = os.path.join(base_dir, "doc.json")

    def load(self) -> Any:
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def save(self, value: Any) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(value))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.base_dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self.escape()

    def escape(self) -> None:
        raise NotImplementedError


class HeldDictStore(_Durable):
    """``os.rename`` held in a dict: renames a real file (``src`` → ``dst``)."""

    def escape(self) -> None:
        d = escape_dir()
        if os.path.exists(os.path.join(d, "dst")):
            return
        _HELD["rename"](os.path.join(d, "src"), os.path.join(d, "dst"))


class PartialStore(_Durable):
    """``functools.partial(os.open, ...)``: creates a real file."""

    def escape(self) -> None:
        path = os.path.join(escape_dir(), "partial")
        _CLOSE(_OPEN_FOR_WRITING(path, os.O_WRONLY | os.O_CREAT))


class ClassAttrStore(_Durable):
    """A class attribute ``_os = os``, as ``dbm.dumb`` keeps it: creates a real
    directory and a real file."""

    _os = os

    def escape(self) -> None:
        d = escape_dir()
        # a library that tolerates a failed mkdir (exists, refused) goes on
        with contextlib.suppress(OSError):
            self._os.mkdir(os.path.join(d, "classattr-dir"))
        fd = self._os.open(os.path.join(d, "classattr"), os.O_WRONLY | os.O_CREAT, 0o644)
        self._os.close(fd)


class OpenerStore(_Durable):
    """``open(path, "w", opener=...)`` with the real ``os.open`` as opener."""

    def escape(self) -> None:
        path = os.path.join(escape_dir(), "opener")
        with open(path, "w", opener=lambda p, flags: _HELD["open"](p, flags, 0o644)) as f:
            f.write("escaped")


class IoOpenStore(_Durable):
    """``io.open`` held in a dict."""

    def escape(self) -> None:
        with _HELD["io.open"](os.path.join(escape_dir(), "io-open"), "w") as f:
            f.write("escaped")


_LIBC = ctypes.CDLL(None, use_errno=True)  # bound at import; C code raises no audit event


class CtypesStore(_Durable):
    """Creates the real file ``$CRASHPOINT_CANARY_PATH`` through libc's ``open`` (ctypes):
    nothing Python can intercept or audit; only the canary sees it."""

    def escape(self) -> None:
        path = os.environ["CRASHPOINT_CANARY_PATH"].encode()
        fd = _LIBC.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        if fd >= 0:
            _LIBC.close(fd)


class HeldOnlyStore:
    """Every file call through functions held in a dict: its writes reach nothing the
    interception sees (the refusals are all there is to say)."""

    _OS: ClassVar[dict[str, Any]] = {
        "open": os.open,
        "write": os.write,
        "close": os.close,
        "read": os.read,
    }

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(escape_dir(), "held-only.json")

    def save(self, value: Any) -> None:
        fd = self._OS["open"](self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            self._OS["write"](fd, json.dumps(value).encode())
        finally:
            self._OS["close"](fd)

    def load(self) -> Any:
        try:
            fd = self._OS["open"](self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            return json.loads(self._OS["read"](fd, 1 << 20) or b"null")
        finally:
            self._OS["close"](fd)


def escaping_reference(base_dir: str) -> Any:
    """The reference storage (a state-storage target) whose save also makes a real
    directory through a held ``os.mkdir``."""
    from crashpoint.core import FileStateStorage
    from crashpoint.faultfs import OsFileSystem

    storage = FileStateStorage(OsFileSystem(), base_dir)
    save = storage.save

    def escaping_save(state: Any) -> None:
        save(state)
        with contextlib.suppress(FileExistsError):
            _HELD["mkdir"](os.path.join(escape_dir(), "state-storage"))

    storage.save = escaping_save  # type: ignore[method-assign]
    return storage

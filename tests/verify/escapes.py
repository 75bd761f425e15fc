"""Stores that try to reach the real disk past the interception (issue 21): with functions
bound before the patch. Each saves its value durably into ``base_dir`` (intercepted,
judged) and also makes one change under ``$CRASHPOINT_ESCAPE_DIR`` through a captured
function, tolerating its failure as a cache would. The patch reaches a dict's values, a
class attribute, a closure's cells, a partial's function and an ``opener=``, so those
changes go into the model (an S1 finding naming the path); a list's element and an
instance attribute set before the patch stay out of its reach, so the audit layer
refuses them (an incomplete verdict naming the path). ``tests/verify/test_escapes.py``
checks from outside that nothing lands."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
from typing import Any, ClassVar

__all__ = [
    "ClassAttrStore",
    "ClosureStore",
    "HeldDictStore",
    "HeldInListStore",
    "InstanceAttrStore",
    "IoOpenStore",
    "OpenerStore",
    "PartialStore",
    "RealOpenerStore",
]

# bound at import, before any patch (a module global bound to a real function is
# patched by the interception itself; a dict's values, a partial and a class attribute
# are not)
_HELD = {"rename": os.rename, "mkdir": os.mkdir, "open": os.open, "io.open": io.open}
_OPEN_FOR_WRITING = functools.partial(os.open, mode=0o644)
_CLOSE = os.close
_IN_A_LIST = [os.open, os.close]  # out of the patch's reach: the audit layer refuses
_IN_A_LIST_MKDIR = [os.mkdir]


def _closure() -> Any:
    opener, closer = os.open, os.close

    def escape(directory: str) -> None:
        closer(opener(os.path.join(directory, "closure"), os.O_WRONLY | os.O_CREAT, 0o644))

    return escape


_CLOSED_OVER = _closure()  # its cells hold the real os.open, bound before any patch


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
        self.escape_tolerantly()

    def escape(self) -> None:
        raise NotImplementedError

    def escape_tolerantly(self) -> None:
        with contextlib.suppress(OSError):  # as a cache would: a failure is no error
            self.escape()


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


class ClosureStore(_Durable):
    """The real ``os.open`` in a closure's cell: creates a real file."""

    def escape(self) -> None:
        _CLOSED_OVER(escape_dir())


class HeldInListStore(_Durable):
    """The real ``os.open`` in a list (the patch does not look into lists): creates a
    real file; the audit layer refuses it."""

    def escape(self) -> None:
        path = os.path.join(escape_dir(), "in-list")
        _IN_A_LIST[1](_IN_A_LIST[0](path, os.O_WRONLY | os.O_CREAT, 0o644))


class InstanceAttrStore(_Durable):
    """An object made at import, before the patch, holding ``os`` as an attribute: its
    ``os`` is the real one; the audit layer refuses the file it creates."""

    def escape(self) -> None:
        path = os.path.join(escape_dir(), "instance")
        _MADE_BEFORE.os.close(_MADE_BEFORE.os.open(path, os.O_WRONLY | os.O_CREAT, 0o644))


class OpenerStore(_Durable):
    """``open(path, "w", opener=...)`` with the real ``os.open`` as opener."""

    def escape(self) -> None:
        path = os.path.join(escape_dir(), "opener")
        with open(path, "w", opener=lambda p, flags: _HELD["open"](p, flags, 0o644)) as f:
            f.write("escaped")


class RealOpenerStore(_Durable):
    """``open(path, "w", opener=os.open)`` with the real ``os.open`` itself (taken from a
    list, out of the module scan's reach): ``open`` gives the model's instead."""

    def escape(self) -> None:
        with open(os.path.join(escape_dir(), "real-opener"), "w", opener=_IN_A_LIST[0]) as f:
            f.write("escaped")


class IoOpenStore(_Durable):
    """``io.open`` held in a dict."""

    def escape(self) -> None:
        with _HELD["io.open"](os.path.join(escape_dir(), "io-open"), "w") as f:
            f.write("escaped")


class _Holder:
    def __init__(self) -> None:
        self.os = os


_MADE_BEFORE = _Holder()


class HeldOnlyStore:
    """Every file call through functions held in a list inside a class attribute (out
    of the patch's reach): its writes reach nothing the interception sees (the audit
    layer's refusals are all there is to say)."""

    _FUNCTIONS: ClassVar[list[Any]] = [os.open, os.write, os.close, os.read]
    _OS: ClassVar[dict[str, Any]] = {}

    def __init__(self, base_dir: str) -> None:
        self.path = os.path.join(escape_dir(), "held-only.json")
        self._OS = dict(zip(("open", "write", "close", "read"), self._FUNCTIONS, strict=True))

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
    directory through an ``os.mkdir`` held in a list (refused by the audit layer)."""
    from crashpoint.core import FileStateStorage
    from crashpoint.faultfs import OsFileSystem

    storage = FileStateStorage(OsFileSystem(), base_dir)
    save = storage.save

    def escaping_save(state: Any) -> None:
        save(state)
        with contextlib.suppress(OSError):
            _IN_A_LIST_MKDIR[0](os.path.join(escape_dir(), "state-storage"))

    storage.save = escaping_save  # type: ignore[method-assign]
    return storage


class NoEscapeStore(_Durable):
    """The control: a durable save and nothing else."""

    def escape(self) -> None:
        return None

"""The layer under interception that Python code cannot bypass (issue 21; FAULT-MODEL.md §4).

Interception replaces the names a target looks up (``os.rename``, ``open`` ...). A
function bound before the patch (held in a dict, a class attribute such as
``dbm.dumb``'s ``_Database._os``, a closure, a :func:`functools.partial`) or an
``opener=`` still reaches the real ``posix`` functions, and every one of those raises a
CPython audit event (PEP 578). While a target runs inside :func:`contained`, one
``sys.addaudithook`` hook refuses every such event that would change the real disk:

* ``open`` for writing (a mode with ``w``, ``a``, ``x`` or ``+``; flags with
  ``O_WRONLY``, ``O_RDWR``, ``O_CREAT``, ``O_TRUNC`` or ``O_APPEND``);
* ``os.rename`` (``os.replace`` too), ``os.remove`` (``os.unlink``), ``os.mkdir``,
  ``os.rmdir``, ``os.chmod``, ``os.chown``, ``os.truncate``, ``os.link``,
  ``os.symlink``, ``os.utime``.

The refused call raises :class:`RealDiskRefused` (a ``PermissionError``, EACCES, naming
the path), so the real file is never touched, and the refusal is listed in
:attr:`Containment.refused`, which makes the verdict incomplete with the path named even
when the target swallows the error. Reads stay allowed (imports need them), and so do
``/dev/null``, ``/dev/zero`` and ``/dev/tty``. The model's own operations never reach
these events (pyfakefs's fake ``os`` and ``open`` do not call the real ones for model
paths), and crashpoint's work outside :func:`contained` is not affected: the gate is a
:class:`contextvars.ContextVar`, one lookup per event when no target runs. Python's own
bytecode cache (a ``.pyc`` written while the target imports a module) is refused
quietly: the import goes on without it, and it is no finding of the target's.

Limits: threads the target starts with :class:`threading.Thread` begin with an empty
context, so they are not contained (``asyncio.to_thread`` and ``contextvars.copy_context``
keep it); ``ctypes``, ``posix.write`` on an already open descriptor, ``readline``'s
history file and other C code raise no such event. What can be seen of those is named
(:data:`LIMITS`, :attr:`Containment.limits`): a contained call that loads or looks up C
code through ``ctypes`` (``ctypes.dlopen``, ``ctypes.dlsym``, ``ctypes.call_function``)
or talks over a socket (``socket.connect``, ``bind``, ``sendto``, ``sendmsg``) is listed,
so the verdict is incomplete and says why; a target module that imports ``ctypes``,
``socket``, ``readline`` or ``posix`` is named the same way when it is loaded
(``scenarios/targets/user.py``).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["LIMITS", "Containment", "RealDiskRefused", "contained", "installed"]

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_HARMLESS = frozenset({"/dev/null", "/dev/zero", "/dev/tty", "/dev/full"})
_BYTECODE = "<frozen importlib._bootstrap_external>"

#: The documented limits (FAULT-MODEL.md §4), as the verdict names them.
LIMITS = {
    "ctypes": "ctypes: C code, whose file calls neither interception nor audit sees "
    "(only the canary looks)",
    "socket": "socket: network I/O, not modelled",
    "readline": "readline: its history file is written by C code, unseen",
    "posix": "posix: its functions called on a descriptor are neither intercepted nor audited",
}


class RealDiskRefused(PermissionError):
    """A contained target tried to change the real disk: ``OSError(EACCES)`` naming the
    path (``filename``) and the audit event that was refused (``event``)."""

    def __init__(self, event: str, path: str) -> None:
        super().__init__(
            errno.EACCES,
            f"crashpoint refused {event} on the real disk while the target runs",
            path,
        )
        self.event = event


class Containment:
    """What one contained run refused.

    Attributes:
        refused: ``(event, path)`` pairs in order, without repeats, e.g.
            ``("os.rename", "/home/u/data/s.json")``.
        limits: names of :data:`LIMITS` the contained code reached (``"ctypes"``), in
            order, without repeats.
    """

    __slots__ = ("limits", "refused")

    def __init__(self) -> None:
        self.refused: list[tuple[str, str]] = []
        self.limits: list[str] = []

    def descriptions(self) -> list[str]:
        """One line per refusal, for a verdict: ``real disk: os.rename /path``; then one
        per limit reached: ``limit: ctypes: ...``."""
        refused = [f"real disk: {event} {path}" for event, path in self.refused]
        return refused + [f"limit: {LIMITS[name]}" for name in self.limits]

    def limit(self, name: str) -> None:
        """Note that the contained code reached the limit ``name`` (a key of LIMITS)."""
        if name not in self.limits:
            self.limits.append(name)

    def _refuse(self, event: str, path: str) -> None:
        if _from_bytecode_cache():
            raise RealDiskRefused(event, path)  # the import goes on without its .pyc
        if (event, path) not in self.refused:
            self.refused.append((event, path))
        raise RealDiskRefused(event, path)


_GUARD: contextvars.ContextVar[Containment | None] = contextvars.ContextVar(
    "crashpoint_containment", default=None
)
_INSTALLED: list[bool] = []


def installed() -> bool:
    """True once the audit hook is in place (it cannot be removed: PEP 578)."""
    return bool(_INSTALLED)


@contextlib.contextmanager
def contained(containment: Containment | None = None) -> Iterator[Containment]:
    """Refuse real-disk changes made by code running in this context (see the module).

    Nests: the innermost containment collects. Yields the :class:`Containment`.
    """
    if not _INSTALLED:
        sys.addaudithook(_hook)
        _INSTALLED.append(True)
    guard = containment if containment is not None else Containment()
    previous = _GUARD.get()
    _GUARD.set(guard)
    try:
        yield guard
    finally:
        # Only while it is still ours: a generator suspended inside this context and
        # finalized later by the garbage collector (hypothesis's, a target's) must not
        # put back a guard whose context ended long ago (it would refuse the reports).
        if _GUARD.get() is guard:
            _GUARD.set(previous)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    guard = _GUARD.get()
    if guard is None:
        return
    check = _CHECKS.get(event)
    if check is not None:
        check(guard, event, args)


def _path(value: Any, dir_fd: Any = None) -> str | None:
    """The real absolute path an audit argument names, or None for a descriptor that
    names none we can read."""
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            return os.readlink(f"/proc/self/fd/{value}")
        except OSError:
            return f"<descriptor {value}>"
    try:
        path = os.fsdecode(value)
    except TypeError:
        return None
    if isinstance(dir_fd, int) and not os.path.isabs(path):
        base = _path(dir_fd) or f"<descriptor {dir_fd}>"
        return os.path.join(base, path)
    return os.path.abspath(path)


def _refuse_path(guard: Containment, event: str, value: Any, dir_fd: Any = None) -> None:
    path = _path(value, dir_fd)
    if path is None or path in _HARMLESS:
        return
    guard._refuse(event, path)


def _check_open(guard: Containment, event: str, args: tuple[Any, ...]) -> None:
    path, mode, flags = (*args, None, None, None)[:3]
    writing = False
    if isinstance(mode, str):
        writing = any(c in mode for c in "wax+")
    if isinstance(flags, int) and flags & _WRITE_FLAGS:
        writing = True
    if writing and not (isinstance(path, int) and not isinstance(path, bool)):
        _refuse_path(guard, "open for writing", path)


def _first(guard: Containment, event: str, args: tuple[Any, ...]) -> None:
    dir_fd = args[-1] if event in ("os.remove", "os.rmdir", "os.mkdir", "os.chmod") else None
    _refuse_path(guard, event, args[0], dir_fd)


def _both(guard: Containment, event: str, args: tuple[Any, ...]) -> None:
    # rename/link: the source changes (or gains a name) and the destination is created
    src_fd = args[2] if len(args) > 2 else None
    dst_fd = args[3] if len(args) > 3 else src_fd
    _refuse_path(guard, event, args[1], dst_fd)
    _refuse_path(guard, event, args[0], src_fd)


def _symlink(guard: Containment, event: str, args: tuple[Any, ...]) -> None:
    _refuse_path(guard, event, args[1], args[2] if len(args) > 2 else None)


def _limit(guard: Containment, event: str, args: tuple[Any, ...]) -> None:
    guard.limit(event.partition(".")[0])


_CHECKS: dict[str, Callable[[Containment, str, tuple[Any, ...]], None]] = {
    "ctypes.dlopen": _limit,
    "ctypes.dlsym": _limit,
    "ctypes.call_function": _limit,
    "socket.connect": _limit,
    "socket.bind": _limit,
    "socket.sendto": _limit,
    "socket.sendmsg": _limit,
    "open": _check_open,
    "os.rename": _both,
    "os.link": _both,
    "os.symlink": _symlink,
    "os.remove": _first,
    "os.rmdir": _first,
    "os.mkdir": _first,
    "os.chmod": _first,
    "os.chown": _first,
    "os.truncate": _first,
    "os.utime": _first,
}


def _from_bytecode_cache() -> bool:
    """True when the refused call is Python writing a module's ``.pyc``."""
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        if frame.f_code.co_filename == _BYTECODE and frame.f_code.co_name in (
            "_write_atomic",
            "set_data",
            "_cache_bytecode",
        ):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False

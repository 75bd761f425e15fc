"""Stores that use the documented limits of interception (issue 21; FAULT-MODEL.md §4):
each saves durably into ``base_dir`` (judged) and also uses ``ctypes``, ``socket``,
``readline`` or ``posix``; the verdict must name the limit. ``CtypesStore`` creates the
real file ``$CRASHPOINT_CANARY_PATH`` through libc, which only the canary can see."""

from __future__ import annotations

import ctypes
import os
import posix
import readline
import socket

from escapes import _Durable

__all__ = ["CtypesStore", "PosixStore", "ReadlineStore", "SocketStore"]

_LIBC = ctypes.CDLL(None, use_errno=True)  # bound at import; C code raises no audit event


class CtypesStore(_Durable):
    """Creates ``$CRASHPOINT_CANARY_PATH`` through libc's ``open`` (ctypes): nothing
    Python can intercept or audit."""

    def escape(self) -> None:
        path = os.environ["CRASHPOINT_CANARY_PATH"].encode()
        fd = _LIBC.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        if fd >= 0:
            _LIBC.close(fd)


class SocketStore(_Durable):
    """Binds a socket on the loopback interface (network I/O is not modelled)."""

    def escape(self) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))


class ReadlineStore(_Durable):
    """Writes readline's history into ``$CRASHPOINT_CANARY_PATH`` (C code: unseen but
    by the canary)."""

    def escape(self) -> None:
        readline.write_history_file(os.environ["CRASHPOINT_CANARY_PATH"])


class PosixStore(_Durable):
    """Holds the ``posix`` module itself (its functions on a descriptor are neither
    intercepted nor audited); asks it only for the pid."""

    def escape(self) -> None:
        posix.getpid()

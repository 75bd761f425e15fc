"""The child process of ``verify --runner strace`` with a Python TARGET (issue 23).

Run as ``python -B .../strace_driver.py`` (by path: it imports only the standard
library, so a child starts without crashpoint's own start-up cost) under strace by the
exec runner (``scenarios/jobs/exec.py``), so a store whose I/O interception cannot
see (``sqlite3``, ``dbm``, a C extension) is recorded at the system-call level with no
wrapper written by the user::

    ... strace_driver document TARGET save DIR VALUE_FILE
    ... strace_driver document TARGET load DIR
    ... strace_driver document TARGET load-batch   (a JSON array of DIRs on stdin)
    ... strace_driver storage TARGET DIR      (a JSON request, or an array, on stdin)
    ... strace_driver serve TARGET FD         (the fork server: :func:`serve`)

``document``: the factory's object ``save(value)``s the JSON value of ``VALUE_FILE``, or
``load()``s and prints the value as JSON (exit 1 with the error on stderr when load
raises: it could not load). ``storage``: the six methods of SPEC.md §6 speaking the
``--exec`` state-storage protocol (``examples/exec/seed_storage.js``): one reply per
request, ``{"ok": false, "code": C, "message": M, "retryability": R}`` for a
``StateError`` (``internal`` for any other exception). A factory ``factory(base_dir)``
is called with ``DIR``; ``factory(fs, base_dir)`` with the real disk
(:class:`~crashpoint.faultfs.OsFileSystem`). Exit 2 for bad arguments or a bad target
(``DriverError``; the parent checked TARGET with ``load_factory`` first).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import sys
from typing import Any

__all__ = ["MARK", "answer", "build", "main", "serve"]


class DriverError(Exception):
    """A bad TARGET or bad arguments: one line on stderr, exit 2."""


_FACTORIES: dict[str, Any] = {}

_INLINE: dict[str, str] = {}
"""A fork server's child: the value file's text, sent with the request (``"value"``), by
the path the command line names; read from the file otherwise. The file's reads are the
driver's, not the target's: a child that makes none is stopped by its tracer less."""


def _factory(spec: str) -> Any:
    """``module:attr`` or ``path/file.py:attr`` imported as ``load_factory`` does (the
    file's directory first on ``sys.path``, a module from the current directory), once
    per process."""
    if spec in _FACTORIES:
        return _FACTORIES[spec]
    module_part, sep, attr = spec.rpartition(":")
    if not sep or not module_part or not attr:
        raise DriverError(f"target {spec!r}: expected package.module:factory or file.py:factory")
    if module_part.endswith(".py") or "/" in module_part or os.sep in module_part:
        path = os.path.abspath(module_part)
        sys.path.insert(0, os.path.dirname(path))
        name = "crashpoint_target_" + os.path.splitext(os.path.basename(path))[0]
        found = importlib.util.spec_from_file_location(name, path)
        if found is None or found.loader is None:
            raise DriverError(f"target {spec!r}: cannot import {module_part!r}")
        module = importlib.util.module_from_spec(found)
        sys.modules[name] = module
        found.loader.exec_module(module)
    else:
        sys.path.insert(0, os.getcwd())
        module = importlib.import_module(module_part)
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    _FACTORIES[spec] = obj
    return obj


def _protocol(factory: Any) -> bool:
    """``factory(fs, base_dir)`` (two required positional parameters)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return len([p for p in params if p.kind in kinds and p.default is p.empty]) == 2


def build(spec: str, base_dir: str) -> Any:
    """The target's object on the real directory ``base_dir``."""
    factory = _factory(spec)
    if _protocol(factory):
        # the real disk, imported only for a protocol factory (every traced child starts
        # this module: it stays on the standard library otherwise)
        from crashpoint.faultfs import OsFileSystem

        return factory(OsFileSystem(), base_dir)
    return factory(base_dir)


def answer(storage: Any, request: Any) -> dict[str, Any]:
    """The protocol reply of ``storage`` (the six methods of SPEC.md §6) to one request."""
    from crashpoint.core import StateError, decode, encode  # (the storage form only)

    try:
        if not isinstance(request, dict):
            raise ValueError("a request is a JSON object")
        op, sid = request.get("op"), request.get("sessionId")
        if op == "save":
            storage.save(decode(request.get("state")))
            return {"ok": True}
        if op == "load":
            return {"ok": True, "state": encode(storage.load(sid))}
        if op == "load_or_create":
            fresh = request.get("state")
            meta = dict(decode(fresh).metadata) if fresh is not None else {}
            return {"ok": True, "state": encode(storage.load_or_create(sid, meta))}
        if op == "delete":
            storage.delete(sid)
            return {"ok": True}
        if op == "exists":
            return {"ok": True, "exists": bool(storage.exists(sid))}
        if op == "mark_not_resumable":
            storage.mark_not_resumable(sid)
            return {"ok": True}
        raise ValueError(f"unknown op {op!r}")
    except StateError as exc:
        return {
            "ok": False,
            "code": exc.code,
            "message": exc.message,
            "retryability": exc.retryability.value,
        }
    except Exception as exc:
        return {"ok": False, "code": "internal", "message": f"{type(exc).__name__}: {exc}"}


def load_batch(spec: str, dirs: list[str]) -> list[dict[str, Any]]:
    """``document TARGET load-batch``: each directory of ``dirs`` (a JSON array on stdin)
    loaded by a fresh object of the factory, in order, in this one process: ``{"ok": true,
    "value": V}`` or ``{"ok": false, "error": "load raised T: M"}`` (the line a single
    load prints on stderr) per directory (issue 23: one process per batch of crash
    images)."""
    out: list[dict[str, Any]] = []
    for base in dirs:
        try:
            value = build(spec, base).load()
            json.dumps(value)  # a value that is not JSON fails here, as a single load does
        except DriverError:
            raise
        except Exception as exc:
            out.append({"ok": False, "error": f"load raised {type(exc).__name__}: {exc}"})
            continue
        out.append({"ok": True, "value": value})
    return out


MARK = "/proc/self/crashpoint-driver-request"
"""The path a forked request child opens (it does not exist: ENOENT) once its
descriptors are set up: what it does after this call is what a one-shot driver process
does, and the parent keeps only that part of its trace."""


def serve(sock_fd: int, spec: str) -> int | None:
    """The fork server of ``--runner strace`` (issue 23): import TARGET once, then, for
    each request on the ``SOCK_SEQPACKET`` socket ``sock_fd`` (a JSON object
    ``{"argv": [...]}`` carrying three descriptors, the request's standard input, output
    and error), fork a child that runs ``main(argv)`` on them as a fresh one-shot driver
    process would: the server sends ``{"pid": P}`` (as its tracer sees it) when the child
    runs and ``{"status": S}`` (an exit status, or minus the signal that killed it) when it
    is gone, its process group killed. First message: ``{"ready": true, "pid": P}``, or
    ``{"error": E}`` (a bad TARGET: exit 2). Returns None in the server (the socket
    closed: exit 0) and the child's exit status in the child (its caller exits with it, so
    the interpreter ends as a one-shot process's does)."""
    import contextlib
    import signal
    import socket  # (the server only: a one-shot child stays as light as before)

    sock = socket.socket(fileno=sock_fd)
    try:
        factory = _factory(spec)
        if _protocol(factory):
            from crashpoint.faultfs import OsFileSystem  # noqa: F401  (once, not per child)
    except Exception as exc:
        sock.send(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
        sock.close()
        return 2
    import gc

    gc.collect()
    std = [sys.stdin, sys.stdout, sys.stderr, sock]
    std += [getattr(f, "buffer", None) for f in std]
    std += [getattr(f, "raw", None) for f in std]
    mine = {id(f) for f in std if f is not None}
    held = any(hasattr(type(o), "__del__") and id(o) not in mine for o in gc.get_objects())
    if not held:
        # What the server holds (the interpreter, TARGET's module, none of it garbage
        # nor with a finalizer but the standard streams) is frozen: a child's collections
        # leave those pages shared, and gc.get_objects() lists what the child made. A
        # child that does not end at once unfreezes it first: its exit then finalises
        # what a one-shot process's would (frozen objects are never collected).
        gc.freeze()
    with contextlib.suppress(OSError):
        os.open(MARK + ".ready", os.O_RDONLY)  # the parent's log is whole to here
    sock.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, 3)
        except OSError:
            return None
        if not msg:
            return None
        try:
            request = json.loads(msg.decode("utf-8"))
            argv = [str(a) for a in request["argv"]]
            inline = request.get("value")
        except (ValueError, KeyError, TypeError, AttributeError):
            argv, inline = [], None
        if len(fds) != 3 or not argv:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": "a request is {argv} with 3 descriptors"}).encode())
            continue
        pid = os.fork()
        if pid == 0:
            sock.close()
            os.setpgid(0, 0)
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            before = set(os.listdir("/proc/self/fd"))
            with contextlib.suppress(OSError):
                os.open(MARK, os.O_RDONLY)
            sys.argv[1:] = argv
            if isinstance(inline, str) and len(argv) == 5:
                _INLINE[argv[4]] = inline
            status = main(argv)
            if not held:
                _quiet_exit(status, before)
                gc.unfreeze()
            return status
        for fd in fds:
            os.close(fd)
        sock.send(json.dumps({"pid": pid}).encode())
        os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # its group id stays taken
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)  # what it left running, as a one-shot run's end
        _pid, status = os.waitpid(pid, 0)
        sock.send(json.dumps({"status": os.waitstatus_to_exitcode(status)}).encode())


def _quiet_exit(status: int, before: set[str]) -> None:
    """End a request child at once (``os._exit(status)``) when its interpreter's exit could
    do no I/O: no thread but this one, no atexit callback, no descriptor opened since the
    fork (``before``), and no object made since (the server's are frozen) with a finalizer
    (``__del__``: a file, a generator, a store's own; the server's objects are frozen,
    so ``gc.get_objects()`` lists the child's); its standard streams are flushed first, as
    that exit would. Otherwise return (the caller unfreezes the server's objects and the
    child exits as a one-shot process does). Calls between :data:`MARK` ``.exit`` and
    ``.resume`` are this check's, not the target's (the parent drops them). Python's own
    exit touches the whole heap, a copy of each page shared with the server (about 1,400
    page faults, 5-7 ms of CPU measured); this one touches none."""
    import atexit
    import contextlib
    import gc

    threading = sys.modules.get("threading")
    if (threading is not None and threading.active_count() > 1) or atexit._ncallbacks():
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except Exception:
        return
    with contextlib.suppress(OSError):
        os.open(MARK + ".exit", os.O_RDONLY)
    if set(os.listdir("/proc/self/fd")) <= before and not any(
        hasattr(type(o), "__del__") for o in gc.get_objects()
    ):
        os._exit(status)
    with contextlib.suppress(OSError):
        os.open(MARK + ".resume", os.O_RDONLY)


def _print(value: Any) -> None:
    """``value`` as JSON on standard output in one write: ``json.dump`` writes each piece
    of its encoding apart, one ``write(2)`` each when the stream is unbuffered
    (``PYTHONUNBUFFERED``, ``-u``), every one a stop of the tracer."""
    sys.stdout.write(json.dumps(value))


def main(argv: list[str]) -> int:
    """The driver's command line (see the module docstring); returns the exit status."""
    try:
        if len(argv) >= 3 and argv[0] == "document":
            spec, op = argv[1], argv[2]
            if op == "load-batch" and len(argv) == 3:
                _print(load_batch(spec, json.loads(sys.stdin.read())))
                return 0
            if len(argv) < 4:
                raise DriverError("document TARGET save|load DIR ...")
            base = argv[3]
            doc = build(spec, base)
            if op == "save" and len(argv) == 5:
                text = _INLINE.pop(argv[4], None)
                if text is None:
                    with open(argv[4], encoding="utf-8") as f:
                        text = f.read()
                doc.save(json.loads(text))
                return 0
            if op == "load" and len(argv) == 4:
                try:
                    value = doc.load()
                except Exception as exc:
                    print(f"load raised {type(exc).__name__}: {exc}", file=sys.stderr)
                    return 1
                _print(value)
                return 0
        elif len(argv) == 3 and argv[0] == "storage":
            storage = build(argv[1], argv[2])
            request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
            if isinstance(request, list):
                reply: Any = [answer(storage, r) for r in request]
            else:
                reply = answer(storage, request)
            _print(reply)
            return 0
    except DriverError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    print(
        "usage: strace_driver document TARGET save DIR VALUE | document TARGET load DIR | "
        "storage TARGET DIR",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]  # run by path: this package's modules must not shadow the target's
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        served = serve(int(sys.argv[3]), sys.argv[2])
        sys.exit(0 if served is None else served)
    sys.exit(main(sys.argv[1:]))

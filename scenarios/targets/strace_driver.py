"""The child process of ``verify --runner strace`` with a Python TARGET (issue 23).

Run as ``python -B .../strace_driver.py`` (by path: it imports only the standard
library, so a child starts without crashpoint's own start-up cost) under strace by the
exec runner (``scenarios/jobs/exec.py``), so a store whose I/O interception cannot
see (``sqlite3``, ``dbm``, a C extension) is recorded at the system-call level with no
wrapper written by the user::

    ... strace_driver document TARGET save DIR VALUE_FILE
    ... strace_driver document TARGET load DIR
    ... strace_driver storage TARGET DIR      (a JSON request, or an array, on stdin)

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

__all__ = ["answer", "build", "main"]


class DriverError(Exception):
    """A bad TARGET or bad arguments: one line on stderr, exit 2."""


def _factory(spec: str) -> Any:
    """``module:attr`` or ``path/file.py:attr`` imported as ``load_factory`` does (the
    file's directory first on ``sys.path``, a module from the current directory)."""
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


def main(argv: list[str]) -> int:
    """The driver's command line (see the module docstring); returns the exit status."""
    try:
        if len(argv) >= 4 and argv[0] == "document":
            spec, op, base = argv[1], argv[2], argv[3]
            doc = build(spec, base)
            if op == "save" and len(argv) == 5:
                with open(argv[4], encoding="utf-8") as f:
                    doc.save(json.load(f))
                return 0
            if op == "load" and len(argv) == 4:
                try:
                    value = doc.load()
                except Exception as exc:
                    print(f"load raised {type(exc).__name__}: {exc}", file=sys.stderr)
                    return 1
                json.dump(value, sys.stdout)
                return 0
        elif len(argv) == 3 and argv[0] == "storage":
            storage = build(argv[1], argv[2])
            request = json.loads(sys.stdin.buffer.read().decode("utf-8"))
            if isinstance(request, list):
                reply: Any = [answer(storage, r) for r in request]
            else:
                reply = answer(storage, request)
            json.dump(reply, sys.stdout)
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
    sys.exit(main(sys.argv[1:]))

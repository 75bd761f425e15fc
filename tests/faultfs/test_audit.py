"""The audit-hook layer (faultfs/_audit.py; issue 21): while a target runs contained, every
real-disk change is refused with the path named, reads stay allowed, and nothing outside
the containment (crashpoint's own work) nor the model's own operations are affected."""

from __future__ import annotations

import contextvars
import errno
import functools
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from crashpoint.faultfs import MemoryFileSystem, RecordingFileSystem, intercept
from crashpoint.faultfs._audit import RealDiskRefused, contained

HELD_OPEN = functools.partial(os.open, mode=0o644)


def _changes(d: Path) -> dict[str, Callable[[], Any]]:
    f, g = d / "file", d / "sub"
    return {
        "open for writing": lambda: open(d / "new", "w"),
        "os.open": lambda: HELD_OPEN(str(d / "new2"), os.O_WRONLY | os.O_CREAT),
        "os.rename": lambda: os.rename(f, d / "moved"),
        "os.replace": lambda: os.replace(f, d / "moved"),
        "os.remove": lambda: os.remove(f),
        "os.unlink": lambda: os.unlink(f),
        "os.mkdir": lambda: os.mkdir(d / "newdir"),
        "os.rmdir": lambda: os.rmdir(g),
        "os.chmod": lambda: os.chmod(f, 0o600),
        "os.truncate": lambda: os.truncate(f, 0),
        "os.link": lambda: os.link(f, d / "hard"),
        "os.symlink": lambda: os.symlink(f, d / "soft"),
        "os.utime": lambda: os.utime(f, (0, 0)),
        "append": lambda: open(f, "a"),
        "r+": lambda: open(f, "r+b"),
    }


def _snapshot(d: Path) -> list[tuple[str, bytes | None, int, float]]:
    return sorted(
        (p.name, p.read_bytes() if p.is_file() else None, p.stat().st_mode, p.stat().st_mtime)
        for p in d.iterdir()
    )


@pytest.mark.parametrize("name", sorted(_changes(Path("/"))))
def test_every_real_change_is_refused_naming_the_path(tmp_path: Path, name: str) -> None:
    (tmp_path / "file").write_bytes(b"real bytes")
    (tmp_path / "sub").mkdir()
    before = _snapshot(tmp_path)
    with contained() as guard:
        with pytest.raises(RealDiskRefused) as exc:
            _changes(tmp_path)[name]()
        assert (tmp_path / "file").read_bytes() == b"real bytes"  # reads stay allowed
        with open(os.devnull, "w") as null:  # harmless devices too
            null.write("x")
    assert exc.value.errno == errno.EACCES
    assert isinstance(exc.value, PermissionError)
    assert str(exc.value.filename).startswith(str(tmp_path))
    assert _snapshot(tmp_path) == before
    assert len(guard.refused) == 1 and guard.refused[0][1] == exc.value.filename
    assert guard.descriptions()[0].startswith("real disk: ")


def test_outside_the_containment_nothing_is_refused(tmp_path: Path) -> None:
    with contained():
        pass
    (tmp_path / "x").write_text("crashpoint's own work")
    os.rename(tmp_path / "x", tmp_path / "y")
    assert (tmp_path / "y").read_text() == "crashpoint's own work"

    # a context copied into a worker keeps it; a plain thread starts without (a limit)
    seen: dict[str, bool] = {}

    def attempt(key: str) -> None:
        try:
            os.mkdir(tmp_path / key)
            seen[key] = True
        except RealDiskRefused:
            seen[key] = False

    with contained():
        ctx = contextvars.copy_context()
        worker = threading.Thread(target=lambda: ctx.run(attempt, "copied"))
        worker.start()
        worker.join()
        plain = threading.Thread(target=attempt, args=("plain",))
        plain.start()
        plain.join()
    assert seen == {"copied": False, "plain": True}


def test_the_models_own_operations_are_not_refused() -> None:
    fs = RecordingFileSystem(MemoryFileSystem(dirs=("/base",)))
    with intercept(fs, root="/base"), contained() as guard:
        with open("/base/doc.json.tmp", "w") as f:
            f.write("model")
        os.replace("/base/doc.json.tmp", "/base/doc.json")
        os.mkdir("/base/d")
        os.chmod("/base/doc.json", 0o600)
    assert guard.refused == []
    assert fs.read("/base/doc.json") == b"model"
    assert not os.path.exists("/base/doc.json")


def test_pythons_own_bytecode_cache_is_refused_quietly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib
    import sys

    (tmp_path / "lazily_imported_by_a_target.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    importlib.invalidate_caches()
    with contained() as guard:
        module = importlib.import_module("lazily_imported_by_a_target")
    monkeypatch.delitem(sys.modules, "lazily_imported_by_a_target")
    assert module.VALUE == 1
    assert guard.refused == []  # no finding of the target's
    assert not (tmp_path / "__pycache__").exists()  # and nothing written


def test_ctypes_and_socket_calls_are_named_limits_and_asyncio_is_not() -> None:
    import asyncio
    import ctypes
    import socket

    from crashpoint.faultfs._audit import LIMITS, Containment

    libc = ctypes.CDLL(None)  # outside: crashpoint's own work is not named
    quiet = Containment()
    with contained(quiet):
        asyncio.run(asyncio.sleep(0))  # its event loop makes a socketpair: no network I/O
    assert quiet.limits == []
    guard = Containment()
    with contained(guard):
        libc.getppid()  # a symbol looked up: ctypes.dlsym
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
    assert guard.limits == ["ctypes", "socket"]
    assert guard.descriptions() == [f"limit: {LIMITS['ctypes']}", f"limit: {LIMITS['socket']}"]
    assert guard.refused == []

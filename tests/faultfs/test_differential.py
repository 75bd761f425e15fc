"""Differential tests: the model filesystem against the real one (STYLE.md §11).

The same operation scripts run on a :class:`MemoryFileSystem` with base ``/base``
and on an :class:`OsFileSystem` rooted in a temporary directory; every call must
agree on ``(exception class, errno, result)`` and the final trees must be equal.
The operating system is the reference.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from crashpoint.faultfs import FileSystem, MemoryFileSystem, OsFileSystem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BASE = "/base"

Call = tuple[Any, ...]  # (method name, *args); path arguments start with "/base"


class Mapped:
    """An OsFileSystem whose paths are the model's, rooted at ``root``."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.fs = OsFileSystem()

    def call(self, name: str, *args: Any) -> Any:
        mapped = [self.root + a if isinstance(a, str) and a.startswith("/") else a for a in args]
        return getattr(self.fs, name)(*mapped)


class _Rooted:
    """Just enough of the FileSystem reads over a :class:`Mapped` for :func:`tree`."""

    def __init__(self, mapped: Mapped) -> None:
        self.mapped = mapped

    def listdir(self, path: str) -> list[str]:
        result: list[str] = self.mapped.call("listdir", path)
        return result

    def is_dir(self, path: str) -> bool:
        return bool(self.mapped.call("is_dir", path))

    def read(self, path: str) -> bytes:
        data: bytes = self.mapped.call("read", path)
        return data


def outcome(call: Any) -> tuple[Any, ...]:
    try:
        return ("ok", call())
    except OSError as exc:
        return (type(exc), exc.errno)


def tree(fs: FileSystem | _Rooted, path: str = BASE) -> list[tuple[str, bytes | None]]:
    """Every entry under ``path``: (path, content) with None for directories."""
    out: list[tuple[str, bytes | None]] = []
    for name in fs.listdir(path):
        child = f"{path}/{name}"
        if fs.is_dir(child):
            out.append((child, None))
            out.extend(tree(fs, child))
        else:
            out.append((child, fs.read(child)))
    return out


def os_tree(root: str) -> list[tuple[str, bytes | None]]:
    """The same listing taken with ``os.walk`` (not through the wrapper)."""
    out: list[tuple[str, bytes | None]] = []
    top = root + BASE
    for dirpath, dirnames, filenames in os.walk(top):
        rel = BASE + dirpath[len(top) :]
        out.extend((f"{rel}/{d}", None) for d in dirnames)
        for f in filenames:
            out.append((f"{rel}/{f}", Path(dirpath, f).read_bytes()))
    return sorted(out)


def run_both(root: str, script: Sequence[Call]) -> None:
    """Run ``script`` on both backends, asserting agreement call by call and at the end."""
    os.makedirs(root + BASE)
    mem = MemoryFileSystem(dirs=(BASE,))
    real = Mapped(root)
    for step, (name, *args) in enumerate(script):
        expected = outcome(lambda n=name, a=args: real.call(n, *a))
        got = outcome(lambda n=name, a=args: getattr(mem, n)(*a))
        assert got == expected, f"step {step}: {name}{tuple(args)}: memory {got}, os {expected}"
    expected_tree = os_tree(root)
    assert sorted(tree(mem)) == expected_tree
    assert sorted(tree(_Rooted(real))) == expected_tree


SCRIPTS: dict[str, list[Call]] = {
    "mkdir existing": [("mkdir", "/base/d"), ("mkdir", "/base/d"), ("mkdir", "/base")],
    "mkdir missing parent": [("mkdir", "/base/x/y"), ("exists", "/base/x")],
    "mkdir under a file": [("create", "/base/f"), ("mkdir", "/base/f/d"), ("mkdir", "/base/f/d/e")],
    "mkdir over a file": [("create", "/base/f"), ("mkdir", "/base/f")],
    "create on a directory": [("mkdir", "/base/d"), ("create", "/base/d")],
    "create with missing parent": [("create", "/base/x/f"), ("create", "/base/x/y/f")],
    "create under a file": [("create", "/base/f"), ("create", "/base/f/g")],
    "create truncates": [
        ("create", "/base/f"),
        ("write", "/base/f", 0, b"hello"),
        ("create", "/base/f"),
        ("read", "/base/f"),
        ("size", "/base/f"),
    ],
    "write beyond size leaves a zero gap": [
        ("create", "/base/f"),
        ("write", "/base/f", 0, b"ab"),
        ("write", "/base/f", 10, b"cd"),
        ("read", "/base/f"),
        ("size", "/base/f"),
    ],
    "write overwrites in the middle": [
        ("create", "/base/f"),
        ("write", "/base/f", 0, b"abcdef"),
        ("write", "/base/f", 2, b"XY"),
        ("write", "/base/f", 5, b"long tail"),
        ("read", "/base/f"),
    ],
    "write empty data": [("create", "/base/f"), ("write", "/base/f", 3, b""), ("size", "/base/f")],
    "write errors": [
        ("write", "/base/missing", 0, b"x"),
        ("mkdir", "/base/d"),
        ("write", "/base/d", 0, b"x"),
        ("create", "/base/f"),
        ("write", "/base/f", -1, b"x"),
        ("write", "/base/f/g", 0, b"x"),
    ],
    "truncate extends and shrinks": [
        ("create", "/base/f"),
        ("write", "/base/f", 0, b"abcdef"),
        ("truncate", "/base/f", 3),
        ("read", "/base/f"),
        ("truncate", "/base/f", 8),
        ("read", "/base/f"),
        ("truncate", "/base/f", 0),
        ("size", "/base/f"),
    ],
    "truncate errors": [
        ("truncate", "/base/missing", 1),
        ("mkdir", "/base/d"),
        ("truncate", "/base/d", 1),
        ("create", "/base/f"),
        ("truncate", "/base/f", -1),
        ("truncate", "/base/f/g", 0),
    ],
    "rename over existing": [
        ("create", "/base/a"),
        ("write", "/base/a", 0, b"new"),
        ("create", "/base/b"),
        ("write", "/base/b", 0, b"old"),
        ("rename", "/base/a", "/base/b"),
        ("exists", "/base/a"),
        ("read", "/base/b"),
        ("listdir", "/base"),
    ],
    "rename missing source": [
        ("rename", "/base/a", "/base/b"),
        ("mkdir", "/base/d"),
        ("rename", "/base/a", "/base/d"),
        ("rename", "/base/x/a", "/base/b"),
    ],
    "rename onto itself": [
        ("create", "/base/a"),
        ("write", "/base/a", 0, b"x"),
        ("rename", "/base/a", "/base/a"),
        ("read", "/base/a"),
    ],
    "rename into directories": [
        ("create", "/base/a"),
        ("mkdir", "/base/d"),
        ("rename", "/base/a", "/base/d/a"),
        ("rename", "/base/d/a", "/base/missing/a"),
        ("create", "/base/f"),
        ("rename", "/base/d/a", "/base/f/a"),
        ("rename", "/base/d/a", "/base/d"),
        ("listdir", "/base/d"),
    ],
    "rename a directory is refused": [("mkdir", "/base/d"), ("rename", "/base/d", "/base/e")],
    "unlink": [
        ("unlink", "/base/missing"),
        ("mkdir", "/base/d"),
        ("unlink", "/base/d"),
        ("create", "/base/f"),
        ("unlink", "/base/f/g"),
        ("unlink", "/base/f"),
        ("exists", "/base/f"),
        ("unlink", "/base/f"),
    ],
    "reads": [
        ("mkdir", "/base/d"),
        ("read", "/base/d"),
        ("read", "/base/missing"),
        ("create", "/base/f"),
        ("read", "/base/f/g"),
        ("size", "/base/d"),
        ("size", "/base/missing"),
        ("size", "/base/f/g"),
        ("exists", "/base/f/g"),
        ("is_dir", "/base/d"),
        ("is_dir", "/base/f"),
        ("is_dir", "/base/missing"),
    ],
    "listdir": [
        ("create", "/base/f"),
        ("listdir", "/base/f"),
        ("listdir", "/base/missing"),
        ("listdir", "/base/f/g"),
        ("mkdir", "/base/d"),
        ("mkdir", "/base/d/e"),
        ("create", "/base/d/z"),
        ("create", "/base/d/e/deep"),
        ("listdir", "/base/d"),
        ("listdir", "/base"),
    ],
    "fsync": [
        ("fsync", "/base/missing"),
        ("mkdir", "/base/d"),
        ("fsync", "/base/d"),
        ("create", "/base/f"),
        ("fsync", "/base/f"),
        ("fsync", "/base/f/g"),
    ],
    "fsync_dir": [
        ("create", "/base/f"),
        ("fsync_dir", "/base/f"),
        ("fsync_dir", "/base/missing"),
        ("fsync_dir", "/base/f/g"),
        ("fsync_dir", "/base"),
    ],
}

# --- FAULT-MODEL §1, 2026-12-02: rmdir, link, fdatasync, the rename of a directory ------
SCRIPTS.update(
    {
        "rmdir": [
            ("rmdir", "/base/missing"),
            ("create", "/base/f"),
            ("rmdir", "/base/f"),
            ("rmdir", "/base/f/g"),
            ("mkdir", "/base/d"),
            ("mkdir", "/base/d/e"),
            ("rmdir", "/base/d"),  # not empty
            ("rmdir", "/base/d/e"),
            ("rmdir", "/base/d"),
            ("exists", "/base/d"),
            ("mkdir", "/base/d"),  # the name is free again (it was EEXIST before)
            ("create", "/base/d/x"),
            ("rmdir", "/base/d"),
            ("unlink", "/base/d/x"),
            ("rmdir", "/base/d"),
            ("listdir", "/base"),
        ],
        "link": [
            ("create", "/base/f"),
            ("write", "/base/f", 0, b"one"),
            ("link", "/base/f", "/base/g"),
            ("read", "/base/g"),
            ("write", "/base/g", 3, b" two"),  # one inode: both names read it
            ("read", "/base/f"),
            ("link", "/base/f", "/base/g"),  # EEXIST
            ("link", "/base/missing", "/base/h"),
            ("link", "/base/f", "/base/missing/h"),
            ("link", "/base/f/x", "/base/h"),
            ("mkdir", "/base/d"),
            ("link", "/base/d", "/base/e"),  # EPERM: no link to a directory
            ("link", "/base/f", "/base/d"),  # EEXIST
            ("link", "/base/f", "/base/d/f"),
            ("unlink", "/base/f"),  # the inode keeps its other names
            ("read", "/base/g"),
            ("truncate", "/base/d/f", 2),
            ("read", "/base/g"),
            ("rename", "/base/g", "/base/d/f"),  # two names of one inode: nothing happens
            ("exists", "/base/g"),
            ("create", "/base/h"),
            ("rename", "/base/h", "/base/g"),  # replaces one name only
            ("read", "/base/d/f"),
            ("unlink", "/base/d/f"),
            ("listdir", "/base"),
        ],
        "fdatasync": [
            ("fdatasync", "/base/missing"),
            ("mkdir", "/base/d"),
            ("fdatasync", "/base/d"),
            ("create", "/base/f"),
            ("write", "/base/f", 0, b"data"),
            ("fdatasync", "/base/f"),
            ("fdatasync", "/base/f/g"),
            ("read", "/base/f"),
        ],
        "rename of a directory": [
            ("mkdir", "/base/d"),
            ("mkdir", "/base/d/sub"),
            ("create", "/base/d/sub/f"),
            ("write", "/base/d/sub/f", 0, b"deep"),
            ("create", "/base/d/g"),
            ("rename", "/base/d", "/base/e"),  # the subtree moves
            ("read", "/base/e/sub/f"),
            ("exists", "/base/d"),
            ("rename", "/base/e", "/base/e/sub/x"),  # EINVAL: into itself
            ("rename", "/base/e", "/base/e"),
            ("mkdir", "/base/empty"),
            ("rename", "/base/e", "/base/empty"),  # replaces an empty directory
            ("mkdir", "/base/full"),
            ("create", "/base/full/x"),
            ("rename", "/base/empty", "/base/full"),  # ENOTEMPTY
            ("create", "/base/file"),
            ("rename", "/base/empty", "/base/file"),  # ENOTDIR
            ("rename", "/base/file", "/base/full"),  # EISDIR
            ("rename", "/base/empty/sub", "/base"),  # the target is an ancestor
            ("rename", "/base/empty/sub", "/base/missing/x"),
            ("rename", "/base/empty/sub", "/base/top"),
            ("listdir", "/base/top"),
            ("rmdir", "/base/empty"),  # g is still in it
        ],
    }
)

# --- NAME_MAX: 255 bytes per component (ENAMETOOLONG once the lookup reaches it) --------
LONG = "n" * 256  # one byte over NAME_MAX
FITS = "m" * 255  # exactly NAME_MAX
WIDE = "é" * 128  # 128 characters, 256 bytes in UTF-8: bytes count, not characters
SCRIPTS.update(
    {
        "NAME_MAX: a 255-byte name fits, 256 bytes do not": [
            ("create", f"/base/{FITS}"),
            ("write", f"/base/{FITS}", 0, b"x"),
            ("create", f"/base/{LONG}"),
            ("create", f"/base/{WIDE}"),
            ("create", f"/base/{'é' * 127}a"),
            ("mkdir", f"/base/{LONG}"),
            ("listdir", "/base"),
        ],
        "NAME_MAX: every call on a long name": [
            ("write", f"/base/{LONG}", 0, b"x"),
            ("write", f"/base/{LONG}", -1, b"x"),
            ("truncate", f"/base/{LONG}", 0),
            ("truncate", f"/base/{LONG}", -1),
            ("unlink", f"/base/{LONG}"),
            ("fsync", f"/base/{LONG}"),
            ("fsync_dir", f"/base/{LONG}"),
            ("read", f"/base/{LONG}"),
            ("size", f"/base/{LONG}"),
            ("listdir", f"/base/{LONG}"),
            ("exists", f"/base/{LONG}"),
            ("is_dir", f"/base/{LONG}"),
        ],
        "NAME_MAX: a failed lookup before the long name reports itself": [
            ("create", f"/base/missing/{LONG}"),
            ("create", "/base/f"),
            ("create", f"/base/f/{LONG}"),
            ("mkdir", f"/base/f/x/{LONG}"),
            ("create", f"/base/{LONG}/x"),
            ("read", f"/base/{LONG}/x"),
            ("mkdir", "/base/d"),
            ("create", f"/base/d/{LONG}"),
            ("create", f"/base/d/{FITS}"),
            ("listdir", "/base/d"),
        ],
        "NAME_MAX: rename looks up both parents, then the source, then the target": [
            ("create", "/base/f"),
            ("mkdir", "/base/d"),
            ("rename", "/base/missing", f"/base/{LONG}"),
            ("rename", "/base/f", f"/base/{LONG}"),
            ("rename", f"/base/{LONG}", "/base/f"),
            ("rename", f"/base/{LONG}", "/base/missing/x"),
            ("rename", "/base/f", f"/base/missing/{LONG}"),
            ("rename", "/base/missing/x", f"/base/{LONG}"),
            ("rename", f"/base/{LONG}/x", "/base/g"),
            ("rename", "/base/f", f"/base/{LONG}/x"),
            ("rename", "/base/d", f"/base/{LONG}"),
            ("rename", "/base/f", f"/base/{FITS}"),
            ("read", f"/base/{FITS}"),
        ],
    }
)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_script_agrees_with_the_os(name: str, tmp_path: Path) -> None:
    run_both(str(tmp_path), SCRIPTS[name])


# --- PATH_MAX: 4096 bytes with the NUL, on the very path the OS sees --------------------
def run_same(root: str, script: Sequence[Call]) -> None:
    """Like :func:`run_both`, but the model gets the OS's own absolute paths (under
    ``root``), so a length limit on the whole path is compared byte for byte."""
    os.makedirs(root + BASE)
    mem = MemoryFileSystem(dirs=(root + BASE,))
    real = OsFileSystem()
    for step, (name, *args) in enumerate(script):
        mapped = [root + a if isinstance(a, str) and a.startswith("/") else a for a in args]
        expected = outcome(lambda n=name, a=mapped: getattr(real, n)(*a))
        got = outcome(lambda n=name, a=mapped: getattr(mem, n)(*a))
        assert got == expected, f"step {step}: {name}: memory {got}, os {expected}"
    assert sorted(tree(mem, root + BASE)) == [(root + p, c) for p, c in os_tree(root)]


def padded(root: str, total: int, name: str = "f") -> str:
    """``/base/././…/name``, ``total`` bytes long once ``root`` is put in front
    (``./`` components: the kernel counts the path as given, not as normalised)."""
    pad = total - len(os.fsencode(root + BASE + "/" + name))
    assert pad >= 0
    return BASE + "/" + "./" * (pad // 2) + "/" * (pad % 2) + name


@pytest.mark.parametrize("total", [4094, 4095, 4096, 4097])
def test_path_max_agrees_with_the_os(total: int, tmp_path: Path) -> None:
    root = str(tmp_path)
    path = padded(root, total)
    assert len(os.fsencode(root + path)) == total
    run_same(
        root,
        [
            ("create", path),
            ("write", path, 0, b"data"),
            ("read", path),
            ("size", path),
            ("truncate", path, 2),
            ("fsync", path),
            ("exists", path),
            ("is_dir", path),
            ("rename", path, "/base/g"),
            ("create", "/base/h"),
            ("rename", "/base/h", path),
            ("unlink", path),
            ("mkdir", padded(root, total, "d")),
            ("listdir", padded(root, total, "d")),
            ("fsync_dir", padded(root, total, "d")),
        ],
    )


@pytest.mark.parametrize("extra", [0, 1])
def test_path_max_on_a_deep_real_tree(extra: int, tmp_path: Path) -> None:
    """Nested 200-byte directories up to 4095 bytes (fits) and 4096 (does not)."""
    root = str(tmp_path)
    script: list[Call] = []
    path = BASE
    while len(os.fsencode(root + path)) + 201 + 10 < 4095:
        path += "/" + "d" * 200
        script.append(("mkdir", path))
    name = "f" * (4095 + extra - len(os.fsencode(root + path + "/")))
    assert 0 < len(name) <= 255
    script += [("create", f"{path}/{name}"), ("listdir", path), ("size", f"{path}/{name}")]
    run_same(root, script)


# --- random scripts ------------------------------------------------------------------

PATHS = [
    "/base/a",
    "/base/b",
    "/base/d",
    "/base/d/a",
    "/base/a/x",
    f"/base/{LONG}",
    f"/base/{FITS}",
]
paths = st.sampled_from(PATHS)
small = st.binary(max_size=6)
calls = st.one_of(
    st.tuples(st.just("mkdir"), paths),
    st.tuples(st.just("create"), paths),
    st.tuples(st.just("write"), paths, st.integers(0, 8), small),
    st.tuples(st.just("truncate"), paths, st.integers(0, 8)),
    st.tuples(st.just("rename"), paths, paths),
    st.tuples(st.just("unlink"), paths),
    st.tuples(st.just("rmdir"), paths),
    st.tuples(st.just("link"), paths, paths),
    st.tuples(st.just("fsync"), paths),
    st.tuples(st.just("fdatasync"), paths),
    st.tuples(st.just("fsync_dir"), st.sampled_from([*PATHS, "/base"])),
    st.tuples(st.just("read"), paths),
    st.tuples(st.just("exists"), paths),
    st.tuples(st.just("is_dir"), paths),
    st.tuples(st.just("listdir"), st.sampled_from([*PATHS, "/base"])),
    st.tuples(st.just("size"), paths),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(calls, max_size=25))
def test_random_scripts_agree_with_the_os(script: list[Call]) -> None:
    with tempfile.TemporaryDirectory() as root:
        run_both(root, script)

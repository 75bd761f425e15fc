"""Intercepted save patterns against the kernel: the same code under ``strace`` on a real
directory issues the same mutating calls, one by one (issue 8: "what reaches the trace is
what the kernel would see")."""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable

import pytest
from crashpoint.faultfs import MemoryFileSystem, RecordingFileSystem, intercept
from crashpoint.faultfs._strace import StraceReplay, parse_log

BASE = "/base"
VALUE = {f"k{i:04d}": "v" * 80 for i in range(100)}  # about 9 KB of JSON


def plain_write(base: str) -> None:
    with open(base + "/a.txt", "w") as f:
        f.write("hello\n")


def text_9k_json_dump(base: str) -> None:
    with open(base + "/doc.json", "w", encoding="utf-8") as f:
        json.dump(VALUE, f)


def text_9k_one_write(base: str) -> None:
    with open(base + "/doc.json", "w", encoding="utf-8") as f:
        f.write(json.dumps(VALUE, indent=1))


def small_binary_writes(base: str) -> None:
    with open(base + "/chunks", "wb") as f:
        for i in range(120):
            f.write(bytes([i]) * (37 + i))


def atomic_replace(base: str) -> None:
    tmp, main = base + "/s.json.tmp", base + "/s.json"
    for round_ in range(2):
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"round": round_, **VALUE}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, main)
        fd = os.open(base, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def named_temporary_replace(base: str) -> None:
    with tempfile.NamedTemporaryFile("w", dir=base, delete=False, suffix=".tmp") as t:
        t.write(json.dumps(VALUE))
        t.flush()
        os.fsync(t.fileno())
    os.replace(t.name, base + "/named.json")


def pathlib_write_text(base: str) -> None:
    p = pathlib.Path(base) / "p.txt"
    p.write_text("pathlib " * 1000)
    p.write_bytes(b"bytes")


def append_log(base: str) -> None:
    for i in range(5):
        with open(base + "/log", "a") as f:
            f.write(f"entry {i}\n" * (i + 1))
    fd = os.open(base + "/log", os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"raw\n")
    os.fsync(fd)
    os.close(fd)


def descriptor_calls(base: str) -> None:
    fd = os.open(base + "/d", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"0123456789" * 500)
    os.pwrite(fd, b"xx", 4093)
    os.ftruncate(fd, 4096)
    os.replace(base + "/d", base + "/e")
    os.fdatasync(fd)  # follows its inode: syncs e
    os.close(fd)
    os.makedirs(base + "/sub/deeper")
    shutil.copyfile(base + "/e", base + "/sub/copy")
    os.unlink(base + "/e")


def links_and_directories(base: str) -> None:
    """maildir-style: a message written in tmp/, fdatasynced, linked into new/ and
    unlinked from tmp/; a directory renamed and removed; a directory fsync."""
    os.mkdir(base + "/tmp")
    os.mkdir(base + "/new")
    fd = os.open(base + "/tmp/m", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"mail")
    os.fdatasync(fd)
    os.close(fd)
    os.link(base + "/tmp/m", base + "/new/m")
    os.unlink(base + "/tmp/m")
    os.rename(base + "/tmp", base + "/old")
    os.rmdir(base + "/old")
    dfd = os.open(base + "/new", os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)


PATTERNS: dict[str, Callable[[str], None]] = {
    f.__name__: f
    for f in (
        plain_write,
        text_9k_json_dump,
        text_9k_one_write,
        small_binary_writes,
        atomic_replace,
        named_temporary_replace,
        pathlib_write_text,
        append_log,
        descriptor_calls,
        links_and_directories,
    )
}

# --- strace ------------------------------------------------------------------------------

_LINE = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\w+)\((.*)\)\s+=\s+(-?\d+)")
_STR = re.compile(r'"((?:[^"\\]|\\.)*)"')

Call = tuple[str, str, str | None, int, int]  # kind, path, dst, offset, bytes or size


def _strace_available() -> str | None:
    if shutil.which("strace") is None:
        return "strace is not installed"
    probe = subprocess.run(
        ["strace", "-qq", "-e", "trace=close", "true"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return f"strace cannot trace here: {probe.stderr.strip()[:200]}"
    return None


def _under_strace(name: str, base: str, out: str) -> None:
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('patterns', {__file__!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        f"m.PATTERNS[{name!r}]({base!r})\n"
    )
    trace = "trace=%file,write,pwrite64,fsync,fdatasync,ftruncate,close,sendfile"
    subprocess.run(
        ["strace", "-f", "-qq", "-s", "0", "-e", trace, "-o", out, sys.executable, "-c", code],
        check=True,
        capture_output=True,
    )


def _parse(lines: list[str], base: str) -> list[Call]:
    """The protocol operations a strace log of a run under ``base`` amounts to."""
    fds: dict[tuple[str, int], list[object]] = {}  # (pid, fd) -> [path, pos, append, is_dir]
    sizes: dict[str, int] = {}
    dirs = {base}
    calls: list[Call] = []

    def inside(p: str) -> bool:
        return p == base or p.startswith(base + "/")

    for line in lines:
        m = _LINE.match(line)
        if not m:
            continue
        pid, call, args, result = m.group(1), m.group(2), m.group(3), int(m.group(4))
        if result < 0:
            continue
        paths = [os.path.normpath(s) for s in _STR.findall(args)]
        parts = [a.strip() for a in args.split(",")]
        if call in ("open", "openat", "creat"):
            path = paths[0]
            if not inside(path):
                continue
            flags = next(p for p in parts if p.startswith("O_"))
            if path in dirs:
                fds[(pid, result)] = [path, 0, False, True]
                continue
            created = "O_CREAT" in flags and path not in sizes
            if "O_CREAT" in flags and ("O_TRUNC" in flags or created):
                calls.append(("create", path, None, 0, 0))
                sizes[path] = 0
            elif "O_TRUNC" in flags:
                calls.append(("truncate", path, None, 0, 0))
                sizes[path] = 0
            fds[(pid, result)] = [path, 0, "O_APPEND" in flags, False]
        elif call in ("write", "pwrite64", "sendfile"):
            entry = fds.get((pid, int(parts[0])))
            if entry is None or result == 0:
                continue
            path = str(entry[0])
            if call == "pwrite64":
                offset = sizes[path] if entry[2] else int(parts[-1])
            else:
                offset = sizes[path] if entry[2] else int(str(entry[1]))
                entry[1] = offset + result
            sizes[path] = max(sizes[path], offset + result)
            calls.append(("write", path, None, offset, result))
        elif call in ("fsync", "fdatasync"):
            entry = fds.get((pid, int(parts[0])))
            if entry is not None:
                kind = "fsync_dir" if entry[3] else call  # fdatasync is its own op
                calls.append((kind, str(entry[0]), None, 0, 0))
        elif call == "ftruncate":
            entry = fds.get((pid, int(parts[0])))
            if entry is not None:
                size = int(parts[1])
                calls.append(("truncate", str(entry[0]), None, 0, size))
                sizes[str(entry[0])] = size
        elif call == "close":
            fds.pop((pid, int(parts[0])), None)
        elif call in ("rename", "renameat", "renameat2"):
            src, dst = paths[0], paths[1]
            if not (inside(src) or inside(dst)):
                continue
            calls.append(("rename", src, dst, 0, 0))
            if src in dirs:  # a directory: its subtree moves
                moved = {p for p in dirs | set(sizes) if p == src or p.startswith(src + "/")}
                for p in moved:
                    if p in dirs:
                        dirs.discard(p)
                        dirs.add(dst + p[len(src) :])
                    else:
                        sizes[dst + p[len(src) :]] = sizes.pop(p)
                continue
            sizes[dst] = sizes.pop(src)
            for entry in fds.values():
                if entry[0] == src:
                    entry[0] = dst
        elif call in ("link", "linkat") and inside(paths[1]):
            calls.append(("link", paths[0], paths[1], 0, 0))
            sizes[paths[1]] = sizes[paths[0]]
        elif (call == "rmdir" or "AT_REMOVEDIR" in args) and inside(paths[0]):
            calls.append(("rmdir", paths[0], None, 0, 0))
            dirs.discard(paths[0])
        elif call in ("unlink", "unlinkat") and inside(paths[0]):
            calls.append(("unlink", paths[0], None, 0, 0))
            sizes.pop(paths[0], None)
        elif call in ("mkdir", "mkdirat") and inside(paths[0]):
            calls.append(("mkdir", paths[0], None, 0, 0))
            dirs.add(paths[0])
    return calls


def _normalise(calls: list[Call], base: str) -> list[Call]:
    """Paths relative to ``base``; tempfile's random names numbered by appearance."""
    names: dict[str, str] = {}

    def rel(p: str | None) -> str | None:
        if p is None:
            return None
        r = os.path.relpath(p, base)
        leaf = os.path.basename(r)
        if leaf.startswith("tmp"):
            leaf = names.setdefault(leaf, f"<tmp{len(names)}>")
            r = os.path.join(os.path.dirname(r), leaf)
        return r

    return [(k, rel(p) or "", rel(d), off, n) for k, p, d, off, n in calls]


def _intercepted(name: str) -> list[Call]:
    fs = RecordingFileSystem(MemoryFileSystem(dirs=(BASE,)))
    with intercept(fs, root=BASE) as icpt:
        PATTERNS[name](BASE)
    assert icpt.unsupported == [] and icpt.escapes == []
    calls = [
        (o.kind.value, o.path, o.dst, o.offset, len(o.data) if o.data else o.size)
        for o in fs.trace.ops
    ]
    return _normalise(calls, BASE)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_intercepted_calls_match_strace_one_by_one(name: str, tmp_path: pathlib.Path) -> None:
    reason = _strace_available()
    if reason is not None:
        pytest.skip(reason)
    base = str(tmp_path / "base")
    os.mkdir(base)
    out = str(tmp_path / "strace.txt")
    _under_strace(name, base, out)
    with open(out) as f:
        kernel = _normalise(_parse(f.read().splitlines(), base), base)
    assert kernel, "strace saw no call under the base directory"
    assert _intercepted(name) == kernel


def test_the_replay_records_rmdir_link_fdatasync_and_a_directory_rename() -> None:
    """A canned log (the format of :func:`strace_argv`: ``-y``, ``-X raw``, ``-xx``)."""

    def x(text: str) -> str:
        return "".join(f"\\x{b:02x}" for b in text.encode())

    r = "/r/dir"
    cwd = f"-100<{x('/w')}>"
    log = "\n".join(
        [
            f'7 mkdir("{x(r + "/tmp")}", 0777) = 0',
            f'7 mkdir("{x(r + "/new")}", 0777) = 0',
            f'7 openat({cwd}, "{x(r + "/tmp/m")}", 0xc1, 0644) = 3<{x(r + "/tmp/m")}>',
            f'7 write(3<{x(r + "/tmp/m")}>, "{x("mail")}", 4) = 4',
            f"7 fdatasync(3<{x(r + '/tmp/m')}>) = 0",
            f'7 linkat({cwd}, "{x(r + "/tmp/m")}", {cwd}, "{x(r + "/new/m")}", 0) = 0',
            f"7 fsync(3<{x(r + '/new/m')}>) = 0",
            f"7 close(3<{x(r + '/new/m')}>) = 0",
            f'7 unlink("{x(r + "/tmp/m")}") = 0',
            f'7 link("{x(r + "/new/m")}", "{x(r + "/new/n")}") = 0',
            f'7 rename("{x(r + "/tmp")}", "{x(r + "/old")}") = 0',
            f'7 mkdir("{x(r + "/old/sub")}", 0777) = 0',
            f'7 rmdir("{x(r + "/old/sub")}") = 0',
            f'7 unlinkat({cwd}, "{x(r + "/old")}", 0x200) = 0',
            "7 +++ exited with 0 +++",
        ]
    )
    fs = RecordingFileSystem(MemoryFileSystem(dirs=("/m",)))
    replay = StraceReplay(fs, r, "/m", cwd="/w")
    replay.feed(parse_log(log))
    assert replay.unsupported == [] and replay.escapes == [] and replay.mismatched == []
    assert [(o.kind.value, o.path, o.dst) for o in fs.trace.ops] == [
        ("mkdir", "/m/tmp", None),
        ("mkdir", "/m/new", None),
        ("create", "/m/tmp/m", None),
        ("write", "/m/tmp/m", None),
        ("fdatasync", "/m/tmp/m", None),
        ("link", "/m/tmp/m", "/m/new/m"),
        ("fsync", "/m/tmp/m", None),  # the descriptor still names tmp/m: one inode
        ("unlink", "/m/tmp/m", None),
        ("link", "/m/new/m", "/m/new/n"),
        ("rename", "/m/tmp", "/m/old"),
        ("mkdir", "/m/old/sub", None),
        ("rmdir", "/m/old/sub", None),
        ("rmdir", "/m/old", None),
    ]
    assert fs.listdir("/m") == ["new"] and fs.read("/m/new/n") == b"mail"


def test_parser_reads_a_strace_log() -> None:
    # pins the parser on a log of a tmp + fsync + rename + directory fsync save
    log = [
        '7 openat(AT_FDCWD, "/b/s.tmp", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 3',
        '7 write(3, ""..., 8192) = 8192',
        '7 write(3, ""..., 10) = 10',
        "7 fsync(3) = 0",
        "7 close(3) = 0",
        '7 rename("/b/s.tmp", "/b/s") = 0',
        '7 openat(AT_FDCWD, "/b", O_RDONLY|O_CLOEXEC) = 3',
        "7 fsync(3) = 0",
        '7 openat(AT_FDCWD, "/elsewhere", O_WRONLY|O_CREAT, 0666) = 4',
        '7 write(4, ""..., 5) = 5',
        '7 unlink("/b/gone") = -1 ENOENT (No such file or directory)',
    ]
    assert _parse(log, "/b") == [
        ("create", "/b/s.tmp", None, 0, 0),
        ("write", "/b/s.tmp", None, 0, 8192),
        ("write", "/b/s.tmp", None, 8192, 10),
        ("fsync", "/b/s.tmp", None, 0, 0),
        ("rename", "/b/s.tmp", "/b/s", 0, 0),
        ("fsync_dir", "/b", None, 0, 0),
    ]

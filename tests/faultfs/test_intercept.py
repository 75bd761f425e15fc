"""Interception of unmodified standard-library file code, and the descriptor table
(FAULT-MODEL.md §4; issue 8 item 1, issue 9 descriptor semantics)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import functools
import gc
import io
import json
import mmap
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import types
import uuid
from collections.abc import Callable
from os import fsync as bound_fsync  # bound before any patch: must still be intercepted
from os import replace as bound_replace
from os.path import exists as bound_exists
from typing import Any

import pytest
from crashpoint.core import AgentState, FileStateStorage, Message, TextPart
from crashpoint.faultfs import (
    DescriptorTable,
    FileSystem,
    MemoryFileSystem,
    Op,
    OpKind,
    OsFileSystem,
    RecordingFileSystem,
    SimulatedCrash,
    intercept,
)

BASE = "/base"


def _to_thread(func: Callable[..., Any]) -> Callable[..., Any]:
    """aiofiles's way: a coroutine function wrapping the real function, made at import."""

    @functools.wraps(func)
    async def run(*args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(
            None, functools.partial(func, *args, **kwargs)
        )

    return run


async_replace = _to_thread(os.replace)  # named like os.replace, __module__ "posix"
async_open = _to_thread(open)
# out of the patch's reach (issue 21: it points the values of a dict at the fakes, not a
# read-only mapping's)
REAL = types.MappingProxyType({"os": os})


def recording(*, crash_at: int | None = None) -> RecordingFileSystem:
    return RecordingFileSystem(MemoryFileSystem(dirs=(BASE,)), crash_at=crash_at)


def ops(fs: RecordingFileSystem) -> list[tuple[str, str, str | None, int, bytes, int]]:
    return [(o.kind.value, o.path, o.dst, o.offset, o.data, o.size) for o in fs.trace.ops]


def run(code: Callable[[str], Any], *, seed: int = 0) -> tuple[RecordingFileSystem, Any]:
    fs = recording()
    with intercept(fs, root=BASE, seed=seed) as icpt:
        code(BASE)
    return fs, icpt


# --- the descriptor table --------------------------------------------------------------


def test_descriptor_follows_its_inode_across_a_rename() -> None:
    fs = recording()
    table = DescriptorTable(fs)
    fd = table.open("/base/s.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    table.write(fd, b"new")
    table.rename("/base/s.tmp", "/base/s.json")
    table.write(fd, b"!")
    table.fsync(fd)
    assert table.path(fd) == "/base/s.json"
    assert [(o.kind, o.path) for o in fs.trace.ops[-2:]] == [
        (OpKind.WRITE, "/base/s.json"),
        (OpKind.FSYNC, "/base/s.json"),
    ]
    assert fs.read("/base/s.json") == b"new!"


def test_descriptor_of_a_replaced_or_unlinked_file_writes_nowhere() -> None:
    fs = recording()
    table = DescriptorTable(fs)
    for name in ("a", "b"):
        fd = table.open(f"/base/{name}", os.O_WRONLY | os.O_CREAT)
        table.write(fd, name.encode() * 3)
        table.close(fd)
    old = table.open("/base/b", os.O_RDWR)
    gone = table.open("/base/a", os.O_RDWR)
    table.rename("/base/a", "/base/b")  # b's old inode loses its name; gone now is b
    table.unlink("/base/b")
    n = len(fs.trace.ops)
    assert table.write(old, b"X") == 1
    table.fsync(old)
    assert table.pread(old, -1, 0) == b"Xbb"
    assert table.pread(gone, -1, 0) == b"aaa"
    assert len(fs.trace.ops) == n  # nothing recorded: no name, no crash state sees it
    assert table.path(old) == ""


def test_append_truncate_excl_and_errors_as_on_linux() -> None:
    fs = recording()
    t = DescriptorTable(fs)
    fd = t.open("/base/log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    t.write(fd, b"one\n")
    t.lseek(fd, 0, os.SEEK_SET)
    t.write(fd, b"two\n")  # O_APPEND: at the end, not at the offset
    t.pwrite(fd, b"3", 0)  # Linux: pwrite on O_APPEND appends too
    assert fs.read("/base/log") == b"one\ntwo\n3"
    with pytest.raises(OSError) as exc:
        t.open("/base/log", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    assert exc.value.errno == errno.EEXIST
    with pytest.raises(OSError) as exc:
        t.open("/base/none", os.O_RDONLY)
    assert exc.value.errno == errno.ENOENT
    with pytest.raises(OSError) as exc:
        t.open("/base", os.O_WRONLY)
    assert exc.value.errno == errno.EISDIR
    with pytest.raises(OSError) as exc:
        t.open("/base/log", os.O_RDONLY | os.O_DIRECTORY)
    assert exc.value.errno == errno.ENOTDIR
    with pytest.raises(OSError) as exc:
        t.write(t.open("/base/log", os.O_RDONLY), b"x")
    assert exc.value.errno == errno.EBADF
    before = len(fs.trace.ops)
    t.open("/base/log", os.O_WRONLY | os.O_TRUNC)  # no O_CREAT: a truncate
    t.open("/base/log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)  # open(p, "wb"): create
    t.open("/base/log", os.O_WRONLY | os.O_CREAT)  # exists: nothing
    assert [o.kind for o in fs.trace.ops[before:]] == [OpKind.TRUNCATE, OpKind.CREATE]
    dfd = t.open("/base", os.O_RDONLY)
    t.fsync(dfd)
    assert fs.trace.ops[-1].kind is OpKind.FSYNC_DIR


# --- differential: the same code on a real directory and intercepted ---------------------


def _descriptor_program(base: str) -> list[Any]:
    """Descriptor calls whose results and errors must match Linux."""
    out: list[Any] = []

    def attempt(call: Callable[[], Any]) -> None:
        try:
            out.append(call())
        except OSError as exc:
            out.append(("error", exc.errno))

    p = base + "/f"
    fd = os.open(p, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    out.append(os.write(fd, b"hello world"))
    out.append(os.lseek(fd, 0, os.SEEK_CUR))
    out.append(os.pwrite(fd, b"HE", 0))
    os.lseek(fd, 6, os.SEEK_SET)
    out.append(os.read(fd, 100))
    os.ftruncate(fd, 4)
    out.append(os.fstat(fd).st_size)
    os.replace(p, base + "/g")
    os.write(fd, b"++")  # offset 11: a hole
    os.fsync(fd)
    os.close(fd)
    attempt(lambda: os.open(base + "/g", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    attempt(lambda: os.open(base + "/missing", os.O_RDONLY))
    attempt(lambda: os.open(base, os.O_WRONLY))
    attempt(lambda: os.open(base + "/g/x", os.O_RDONLY))
    attempt(lambda: os.rename(base + "/nope", base + "/g"))
    attempt(lambda: os.unlink(base + "/nope"))
    attempt(lambda: os.mkdir(base + "/g"))
    attempt(lambda: os.close(os.open(base + "/g", os.O_WRONLY | os.O_APPEND)))
    fd = os.open(base + "/g", os.O_WRONLY | os.O_APPEND)
    os.write(fd, b"end")
    os.close(fd)
    fd = os.open(base + "/g", os.O_WRONLY | os.O_TRUNC)
    os.close(fd)
    fd = os.open(base + "/h", os.O_WRONLY | os.O_CREAT)
    os.write(fd, b"h")
    os.unlink(base + "/h")
    out.append(os.write(fd, b"after unlink"))
    os.close(fd)
    d = os.open(base, os.O_RDONLY)
    os.fsync(d)
    os.close(d)
    os.makedirs(base + "/x/y/z")
    os.makedirs(base + "/x/y", exist_ok=True)
    attempt(lambda: os.makedirs(base + "/x/y"))
    out.append(sorted(os.listdir(base)))
    out.append(sorted((e.name, e.is_dir(), e.is_file()) for e in os.scandir(base)))
    out.append([(os.path.relpath(r, base), sorted(ds), sorted(fs)) for r, ds, fs in os.walk(base)])
    out.append((os.path.exists(base + "/g"), os.path.isfile(base + "/g"), os.path.isdir(base)))
    out.append((os.path.getsize(base + "/g"), os.stat(base + "/g").st_size))
    os.truncate(base + "/g", 2)
    return out


def _file_object_program(base: str) -> list[Any]:
    out: list[Any] = []
    with open(base + "/t.txt", "w", encoding="utf-8") as f:
        f.write("line one\n")
        f.writelines(["a\n", "b\n"])
        f.flush()
        out.append(f.tell())
        f.seek(0)
        f.write("LINE")
    with open(base + "/t.txt", "a", encoding="utf-8") as f:
        f.write("appended\n")
    with open(base + "/t.txt", encoding="utf-8") as f:
        out.append(f.read())
    with open(base + "/b.bin", "wb") as f:
        f.write(b"\0" * 5000)
        f.truncate(100)
        out.append(f.tell())
        out.append(isinstance(f.fileno(), int))
    with open(base + "/b.bin", "r+b") as f:
        f.seek(10)
        f.write(b"xyz")
        out.append(f.read(3))
    with open(base + "/u.bin", "wb", buffering=0) as f:
        out.append(f.write(b"unbuffered"))
    with open(base + "/u.bin", "rb") as f:
        out.append(f.read())
    try:
        open(base + "/u.bin", "x")  # noqa: SIM115 - it fails
    except FileExistsError as exc:
        out.append(exc.errno)
    try:
        open(base, "w")  # noqa: SIM115 - it fails
    except IsADirectoryError as exc:
        out.append(exc.errno)
    with open(base + "/new.txt", "x") as f:
        f.write("x")
    p = pathlib.Path(base) / "p.txt"
    p.write_text("path text")
    p.write_bytes(b"path bytes")
    out.append((p.read_bytes(), p.read_text(), p.exists(), (p.parent / "no").exists()))
    (pathlib.Path(base) / "dir" / "sub").mkdir(parents=True)
    (pathlib.Path(base) / "dir").mkdir(exist_ok=True)
    (pathlib.Path(base) / "dir" / "touched").touch()
    (pathlib.Path(base) / "dir" / "touched").touch()
    p.rename(pathlib.Path(base) / "p2.txt")
    (pathlib.Path(base) / "p2.txt").replace(pathlib.Path(base) / "p3.txt")
    (pathlib.Path(base) / "new.txt").unlink()
    out.append(sorted(x.name for x in pathlib.Path(base).iterdir()))
    shutil.copyfile(base + "/p3.txt", base + "/c1")
    shutil.copy(base + "/p3.txt", base + "/dir")
    shutil.copy2(base + "/p3.txt", base + "/c2")
    shutil.copymode(base + "/p3.txt", base + "/c2")
    shutil.move(base + "/c2", base + "/c3")
    return out


def _real_tree(base: str) -> dict[str, bytes | None]:
    tree: dict[str, bytes | None] = {}
    for root, dirs, files in os.walk(base):
        for d in dirs:
            tree[os.path.relpath(os.path.join(root, d), base)] = None
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                tree[os.path.relpath(os.path.join(root, name), base)] = f.read()
    return tree


def _model_tree(fs: FileSystem, base: str) -> dict[str, bytes | None]:
    tree: dict[str, bytes | None] = {}
    todo = [base]
    while todo:
        d = todo.pop()
        for name in fs.listdir(d):
            p = d + "/" + name
            if fs.is_dir(p):
                tree[p[len(base) + 1 :]] = None
                todo.append(p)
            else:
                tree[p[len(base) + 1 :]] = fs.read(p)
    return tree


@pytest.mark.parametrize("program", [_descriptor_program, _file_object_program])
def test_intercepted_code_behaves_as_on_a_real_directory(
    program: Callable[[str], list[Any]], tmp_path: pathlib.Path
) -> None:
    real = program(str(tmp_path))
    fs = recording()
    with intercept(fs, root=BASE) as icpt:
        model = program(BASE)
    assert model == real
    assert _model_tree(fs, BASE) == _real_tree(str(tmp_path))
    assert icpt.unsupported == []
    assert icpt.escapes == []


def test_names_bound_before_the_patch_are_intercepted() -> None:
    def save(base: str) -> None:
        with open(base + "/s.tmp", "wb") as f:
            f.write(b"v")
            bound_fsync(f.fileno())
        bound_replace(base + "/s.tmp", base + "/s")
        assert bound_exists(base + "/s")

    fs, _ = run(save)
    # no flush before the fsync: CPython's buffer reaches the file only at close
    assert [o[0] for o in ops(fs)] == ["create", "fsync", "write", "rename"]


def test_directory_fsync_and_fsync_after_rename_reach_the_trace() -> None:
    def save(base: str) -> None:
        fd = os.open(base + "/s.tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, b"data")
        os.replace(base + "/s.tmp", base + "/s")
        os.fsync(fd)  # the descriptor followed its inode: syncs main
        os.close(fd)
        d = os.open(base, os.O_RDONLY)
        os.fsync(d)
        os.close(d)

    fs, _ = run(save)
    assert [(o[0], o[1]) for o in ops(fs)][-2:] == [("fsync", "/base/s"), ("fsync_dir", "/base")]


def test_a_buffered_text_save_writes_where_cpython_flushes() -> None:
    # 9 KB of JSON through json.dump: the C TextIOWrapper gathers 8192-byte chunks and
    # the 4096-byte BufferedWriter passes them on; close flushes the rest.
    value = {f"k{i:04d}": "v" * 80 for i in range(100)}

    def save(base: str) -> None:
        with open(base + "/doc.json", "w", encoding="utf-8") as f:
            json.dump(value, f)

    fs, _ = run(save)
    writes = [o for o in fs.trace.ops if o.kind is OpKind.WRITE]
    assert len(writes) > 1
    assert b"".join(w.data for w in writes) == json.dumps(value).encode()
    assert [w.offset for w in writes] == [
        sum(len(x.data) for x in writes[:i]) for i in range(len(writes))
    ]


def test_tempfile_surface(tmp_path: pathlib.Path) -> None:
    def save(base: str) -> list[str]:
        fd, _ = tempfile.mkstemp(dir=base, suffix=".tmp")
        os.write(fd, b"m")
        os.close(fd)
        with tempfile.NamedTemporaryFile("w", dir=base, delete=False) as t:
            t.write("named")
        os.replace(t.name, base + "/named")
        with tempfile.NamedTemporaryFile(dir=base) as gone:
            gone.write(b"dropped")
        with tempfile.TemporaryDirectory(dir=base) as d:
            pathlib.Path(d, "f").write_text("in temp dir")
        return sorted(os.listdir(base))

    fs, icpt = run(save)
    names = _model_tree(fs, BASE)
    assert names["named"] == b"named"
    assert sum(1 for n in names if n.endswith(".tmp")) == 1
    assert not any(v == b"dropped" for v in names.values())  # deleted on close
    # TemporaryDirectory's cleanup removes its directory (rmdir is an operation)
    assert icpt.unsupported == []
    assert [n for n in fs.listdir(BASE) if fs.is_dir(BASE + "/" + n)] == []
    assert "rmdir" in [o.kind.value for o in fs.trace.ops]


def test_attribute_changes_are_accepted_without_a_trace_op() -> None:
    def code(base: str) -> tuple[int, float]:
        with open(base + "/f", "w") as f:
            f.write("x")
        os.chmod(base + "/f", 0o600)
        os.utime(base + "/f", (1.0, 2.0))
        return os.stat(base + "/f").st_mode & 0o777, os.stat(base + "/f").st_mtime

    fs = recording()
    with intercept(fs, root=BASE):
        mode, mtime = code(BASE)
        with pytest.raises(FileNotFoundError):
            os.chmod(BASE + "/missing", 0o600)
    assert (mode, mtime) == (0o600, 2.0)
    assert [o[0] for o in ops(fs)] == ["create", "write"]


# --- crashes, faults, switching -------------------------------------------------------------


def _atomic_save(base: str, value: bytes = b"payload" * 1000) -> None:
    tmp = base + "/s.json.tmp"
    with open(tmp, "wb") as f:
        f.write(value)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, base + "/s.json")
    d = os.open(base, os.O_RDONLY)
    try:
        os.fsync(d)
    finally:
        os.close(d)


def test_simulated_crash_propagates_unchanged_at_every_point() -> None:
    full, _ = run(_atomic_save)
    n = len(full.trace.ops)
    assert n == 5  # create, write, fsync, rename, fsync_dir
    for k in range(n):
        fs = recording(crash_at=k)
        with intercept(fs, root=BASE), pytest.raises(SimulatedCrash) as exc:
            _atomic_save(BASE)
        assert exc.value is fs.crashed
        assert exc.value.op_index == k
        assert ops(fs) == ops(full)[:k]


def test_switch_runs_again_without_repatching_and_retires_old_files() -> None:
    first, second = recording(), recording()
    with intercept(first, root=BASE) as icpt:
        leaked = open(BASE + "/leak", "wb")  # noqa: SIM115 - left open across the switch
        leaked.write(b"buffered, never flushed")
        _atomic_save(BASE)
        icpt.switch(second)
        _atomic_save(BASE)
        leaked.close()  # belongs to the first run: changes nothing now
    assert ops(first)[1:] == ops(second)
    assert not second.exists(BASE + "/leak")
    assert first.read(BASE + "/leak") == b""


def test_reruns_are_deterministic() -> None:
    def save(base: str) -> None:
        with tempfile.NamedTemporaryFile("w", dir=base, delete=False, prefix="t") as t:
            t.write(json.dumps({"t": time.time(), "pid": os.getpid(), "id": str(uuid.uuid4())}))
        os.replace(t.name, base + "/s.json")
        fd, _ = tempfile.mkstemp(dir=base)
        os.close(fd)

    # Garbage of earlier tests in this worker, finalised at a random collection inside a
    # run, may read the (seeded, advancing) clock there: collect it first and keep the
    # collector off while the runs are compared (the target itself makes no garbage cycle).
    gc.collect()
    gc.disable()
    try:
        _compare_reruns(save)
    finally:
        gc.enable()


def _compare_reruns(save: Callable[[str], None]) -> None:
    a, _ = run(save, seed=7)
    b, _ = run(save, seed=7)
    c, _ = run(save, seed=8)
    assert ops(a) == ops(b)
    assert ops(a) != ops(c)
    fs = recording()
    with intercept(fs, root=BASE, seed=7) as icpt:
        save(BASE)
        icpt.switch(second := recording())
        save(BASE)
    assert ops(fs) == ops(second) == ops(a)


# --- confinement, unsupported calls, the harness -------------------------------------------


def test_writes_outside_root_are_escapes_and_still_go_to_the_model() -> None:
    fs = RecordingFileSystem(MemoryFileSystem(dirs=(BASE, "/etc")))
    with intercept(fs, root=BASE) as icpt:
        with open("/etc/crashpoint-escape", "w") as f:
            f.write("x")
        os.rename("/etc/crashpoint-escape", "/etc/moved")
        os.unlink("/etc/moved")
        with pytest.raises(FileNotFoundError):
            os.mkdir("/data/sessions")  # no such parent in the model
        with open(BASE + "/inside", "w") as f:
            f.write("ok")
        assert os.getcwd() == BASE
        with open("relative", "w") as f:  # relative to the base directory
            f.write("r")
    assert icpt.escapes == ["/etc/crashpoint-escape", "/etc/moved", "/data/sessions"]
    assert ("unlink", "/etc/moved") in [(o[0], o[1]) for o in ops(fs)]
    assert fs.exists(BASE + "/relative")
    assert not os.path.exists("/etc/crashpoint-escape")


def test_unsupported_calls_are_reported_by_name_in_order() -> None:
    def code(base: str) -> None:
        with open(base + "/f", "wb") as f:
            f.write(b"x" * 10)
        with pytest.raises(OSError):
            os.symlink(base + "/f", base + "/g")
        fd = os.open(base + "/f", os.O_RDWR)
        with pytest.raises(OSError):
            mmap.mmap(fd, 10)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.close(fd)
        sqlite3.connect(base + "/db.sqlite").execute("create table t (x)")
        with pytest.raises(OSError):
            subprocess.run(["true"])
        os.sync()
        with pytest.raises(OSError):
            os.symlink(base + "/f", base + "/h")  # called again: reported once

    fs, icpt = run(code)
    assert icpt.unsupported == [
        "os.symlink",
        "mmap.mmap",
        "fcntl.flock",
        "sqlite3.connect",
        "subprocess.Popen",
        "os.sync",
    ]
    assert not fs.exists(BASE + "/db.sqlite")


def test_worker_thread_calls_are_followed_and_concurrent_ones_reported() -> None:
    async def save_async(base: str) -> None:
        await asyncio.to_thread(_atomic_save, base)

    sync_fs, _ = run(_atomic_save)
    fs, icpt = run(lambda base: asyncio.run(save_async(base)))
    assert ops(fs) == ops(sync_fs)
    assert icpt.unsupported == []

    # Two threads' file calls overlap for certain: thread a opens through a path whose
    # __fspath__ (run inside the interception's file call) holds that call until thread
    # b's call has overlapped it and been reported; then both append 300 lines. (Left to
    # the scheduler, a loaded machine may run one thread's calls all before the other's.)
    fs = recording()
    with intercept(fs, root=BASE) as icpt:
        inside = threading.Event()
        tick = threading.Event()  # never set: its wait is a real-time sleep

        class HeldPath:
            def __fspath__(self) -> str:
                inside.set()
                for _ in range(20_000):  # at most about 20 s
                    if icpt.unsupported:
                        break
                    tick.wait(0.001)
                return f"{BASE}/a"

        def writer(name: str) -> None:
            if name == "a":
                os.close(os.open(HeldPath(), os.O_WRONLY | os.O_CREAT | os.O_APPEND))
            else:
                assert inside.wait(20)
            for i in range(300):
                fd = os.open(f"{BASE}/{name}", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
                os.write(fd, b"%d\n" % i)
                os.close(fd)

        threads = [threading.Thread(target=writer, args=(n,)) for n in "ab"]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert icpt.unsupported == ["threading: concurrent file calls"]
    assert fs.read(BASE + "/a").count(b"\n") == 300
    assert fs.read(BASE + "/b").count(b"\n") == 300


def test_harness_modules_keep_the_real_os() -> None:
    import crashpoint.faultfs._image as image_module
    import crashpoint.faultfs._os as os_backend

    with intercept(recording(), root=BASE):
        assert image_module.os is REAL["os"]  # the harness: real
        assert os_backend.os is os is not REAL["os"]  # the OS backend is target code
        assert pytest.__name__ == "pytest"
        assert isinstance(io.open, type(open))


# --- acceptance: the reference through OsFileSystem, intercepted, gives its protocol trace ----


def _reference_workload(storage: FileStateStorage) -> None:
    state = AgentState.new("s1", {"k": "v"})
    storage.save(state)
    for i in range(3):
        state.messages.append(Message("user", (TextPart("hello " * (300 * i + 1)),)))
        storage.save(state)
    other = AgentState.new("s2")
    storage.save(other)
    storage.mark_not_resumable("s1")
    assert storage.load("s1").session_id == "s1"
    storage.delete("s2")
    storage.save(AgentState.new("s3"))
    storage.delete("s3")


@pytest.mark.parametrize("sync", ["full", "none"])
def test_reference_intercepted_trace_equals_its_protocol_trace(sync: Any) -> None:
    direct = recording()
    _reference_workload(FileStateStorage(direct, BASE + "/sessions", sync=sync))
    intercepted = recording()
    with intercept(intercepted, root=BASE) as icpt:
        _reference_workload(FileStateStorage(OsFileSystem(), BASE + "/sessions", sync=sync))
    assert len(direct.trace.ops) > 20
    assert ops(intercepted) == ops(direct)
    assert icpt.unsupported == [] and icpt.escapes == []


def test_reference_intercepted_crashes_like_its_protocol_run() -> None:
    full = recording()
    _reference_workload(FileStateStorage(full, BASE + "/sessions"))
    for k in range(0, len(full.trace.ops), 5):
        direct, intercepted = recording(crash_at=k), recording(crash_at=k)
        with pytest.raises(SimulatedCrash):
            _reference_workload(FileStateStorage(direct, BASE + "/sessions"))
        with intercept(intercepted, root=BASE), pytest.raises(SimulatedCrash):
            _reference_workload(FileStateStorage(OsFileSystem(), BASE + "/sessions"))
        assert ops(intercepted) == ops(direct)
        assert intercepted.inner.crash_state() == direct.inner.crash_state()  # type: ignore[attr-defined]


def test_op_rendering_of_an_intercepted_trace_is_the_protocol_one() -> None:
    fs, _ = run(_atomic_save)
    assert [o.render() for o in fs.trace.ops][:2] == [
        Op(0, OpKind.CREATE, "/base/s.json.tmp").render(),
        Op(1, OpKind.WRITE, "/base/s.json.tmp", data=b"payload" * 1000).render(),
    ]


# --- nothing escapes: an audit hook sees every real file change ------------------------------

_AUDIT: dict[str, list[tuple[str, tuple[Any, ...]]] | None] = {"events": None}
_CHANGING = (
    "os.remove",
    "os.rename",
    "os.mkdir",
    "os.rmdir",
    "os.truncate",
    "os.chmod",
    "os.chown",
    "os.utime",
    "os.link",
    "os.symlink",
    "os.setxattr",
    "os.removexattr",
    "os.system",
    "os.fork",
    "os.posix_spawn",
    "os.exec",
    "subprocess.Popen",
    "mmap.__new__",
)
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _audit(event: str, args: tuple[Any, ...]) -> None:
    events = _AUDIT["events"]
    if events is None:
        return
    if event == "open":
        _path, mode, flags = args
        writes = any(c in mode for c in "wax+") if isinstance(mode, str) else flags & _WRITE_FLAGS
        if writes:
            events.append((event, args))
    elif event in _CHANGING or (event == "sqlite3.connect" and args[0] != ":memory:"):
        events.append((event, args))


def _audited(code: Callable[[], Any]) -> list[tuple[str, tuple[Any, ...]]]:
    if not getattr(_audited, "installed", False):
        sys.addaudithook(_audit)
        _audited.installed = True  # type: ignore[attr-defined]
    events: list[tuple[str, tuple[Any, ...]]] = []
    _AUDIT["events"] = events
    try:
        code()
    finally:
        _AUDIT["events"] = None
    return events


def _all_kinds_of_target(base: str) -> None:
    _atomic_save(base)
    _file_object_program(base)
    _descriptor_program(base + "/x" if os.path.isdir(base + "/x") else base)
    outside = f"/tmp/crashpoint-escape-{REAL['os'].getpid()}"
    for attempt in (
        lambda: open(outside, "w").close(),
        lambda: os.makedirs("/data/sessions"),
        lambda: shutil.copyfile(base + "/p3.txt", outside + ".copy"),
        lambda: os.link(base + "/p3.txt", base + "/hard"),  # modelled: into the model
        lambda: os.symlink(base + "/p3.txt", base + "/soft"),
        lambda: subprocess.run(["touch", outside + ".child"]),
        lambda: os.system("touch " + outside + ".system"),
        lambda: sqlite3.connect(base + "/db.sqlite").execute("create table t (x)"),
        lambda: mmap.mmap(os.open(base + "/p3.txt", os.O_RDWR), 4),
        lambda: pathlib.Path(outside + ".path").write_text("x"),
        lambda: os.chmod(outside, 0o777),
    ):
        with contextlib.suppress(OSError):
            attempt()
    with tempfile.TemporaryDirectory() as d:  # the default /tmp: an escape, in the model
        pathlib.Path(d, "f").write_text("x")


def test_nothing_touches_the_real_disk_while_intercepted(tmp_path: pathlib.Path) -> None:
    # the hook catches a real write: the check can fail
    assert _audited(lambda: (tmp_path / "real").write_text("x"))
    fs = RecordingFileSystem(MemoryFileSystem(dirs=(BASE, "/tmp")))
    holder: list[Any] = []

    def target() -> None:
        with intercept(fs, root=BASE) as icpt:
            holder.append(icpt)
            _all_kinds_of_target(BASE)

    assert _audited(target) == []
    icpt = holder[0]
    outside = f"/tmp/crashpoint-escape-{os.getpid()}"
    assert outside in icpt.escapes and "/data/sessions" in icpt.escapes
    assert fs.exists(outside)  # the escape went to the model
    assert not any(os.path.exists(outside + s) for s in ("", ".copy", ".child", ".system", ".path"))
    assert {"os.symlink", "subprocess.Popen", "os.system", "sqlite3.connect", "mmap.mmap"} <= set(
        icpt.unsupported
    )
    assert "os.link" not in icpt.unsupported and fs.exists(BASE + "/hard")


def test_harness_code_inside_the_block_keeps_the_real_disk(tmp_path: pathlib.Path) -> None:
    # code whose module is the harness's (a report writer, hypothesis's database) calls
    # the same patched stdlib as the target, yet reaches the real disk
    harness_code = (
        "def write_report(d):\n"
        "    import os, pathlib, shutil, tempfile\n"
        "    pathlib.Path(d, 'report.md').write_text('report')\n"
        "    with open(os.path.join(d, 'report.json'), 'w') as f:\n"
        "        f.write('{}')\n"
        "    shutil.copyfile(os.path.join(d, 'report.md'), os.path.join(d, 'copy.md'))\n"
        "    fd, name = tempfile.mkstemp(dir=d)\n"
        "    os.close(fd)\n"
        "    return sorted(os.listdir(d))\n"
    )
    namespace: dict[str, Any] = {"__name__": "crashpoint.reports._probe"}
    exec(compile(harness_code, "<crashpoint.reports._probe>", "exec"), namespace)
    fs = recording()
    with intercept(fs, root=BASE) as icpt:
        _atomic_save(BASE)
        listed = namespace["write_report"](str(tmp_path))
        _atomic_save(BASE)
    assert len(listed) == 4 and {"report.md", "report.json", "copy.md"} <= set(listed)
    assert (tmp_path / "copy.md").read_text() == "report"
    assert [o[0] for o in ops(fs)] == ["create", "write", "fsync", "rename", "fsync_dir"] * 2
    assert icpt.escapes == [] and icpt.unsupported == []


def test_skip_names_match_packages_not_prefixes() -> None:
    from crashpoint.faultfs._intercept import _SkipName

    assert _SkipName("pytest").startswith("pytest")
    assert _SkipName("crashpoint").startswith("crashpoint.core._storage")
    assert not _SkipName("crashpoint").startswith("crashpoint.faultfs._os")  # target code
    assert not _SkipName("pytest").startswith("py")  # a user module called "py..."
    assert not _SkipName("xdist").startswith("x")


def test_faults_reach_the_target_as_oserrors_and_reruns_repeat_the_trace() -> None:
    from crashpoint.faultfs import Fault, FaultKind

    full, _ = run(_atomic_save)
    for at, kind in [(1, FaultKind.ERROR), (1, FaultKind.SHORT_WRITE), (2, FaultKind.ERROR)]:
        traces = []
        for _ in range(2):
            fs = RecordingFileSystem(
                MemoryFileSystem(dirs=(BASE,)), fault=Fault(at, errno.ENOSPC, kind)
            )
            with intercept(fs, root=BASE), pytest.raises(OSError) as exc:
                _atomic_save(BASE)
            assert exc.value.errno == errno.ENOSPC
            assert fs.trace.ops[at].errno == errno.ENOSPC
            traces.append(ops(fs))
        assert traces[0] == traces[1]
        assert [o[:2] for o in traces[0][:at]] == [o[:2] for o in ops(full)[:at]]


def test_unnamed_temporary_files_fall_back_to_a_named_one() -> None:
    def code(base: str) -> bytes:
        with tempfile.TemporaryFile(dir=base) as t:
            t.write(b"scratch")
            t.seek(0)
            return t.read()

    fs = recording()
    with intercept(fs, root=BASE) as icpt:
        assert code(BASE) == b"scratch"
    assert [o[0] for o in ops(fs)] == ["create", "unlink"]  # mkstemp, unlinked at once
    assert fs.listdir(BASE) == []
    assert icpt.unsupported == []


def test_a_harness_module_first_imported_inside_the_block_stays_imported() -> None:
    name = "crashpoint.scenarios._probe_imported_inside"
    sys.modules.pop(name, None)
    import importlib.abc
    import importlib.util

    class Loader(importlib.abc.Loader):
        def create_module(self, spec: Any) -> None:
            return None

        def exec_module(self, module: Any) -> None:
            exec("import os\ndef cwd():\n    return os.getcwd()\n", module.__dict__)

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
            if fullname == name:
                return importlib.util.spec_from_loader(name, Loader())
            return None

    finder = Finder()
    sys.meta_path.append(finder)
    try:
        with intercept(recording(), root=BASE):
            module = importlib.import_module(name)
            assert module.cwd() == REAL["os"].getcwd()  # harness: the real working directory
        assert sys.modules[name] is module
        assert module.cwd() == REAL["os"].getcwd()
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop(name, None)


def test_the_real_modules_stay_real_and_harness_imports_inside_the_block_work() -> None:
    real_time = time.time
    namespace: dict[str, Any] = {"__name__": "crashpoint._probe_clock"}
    with intercept(recording(), root=BASE, seed=3):
        assert sys.modules["time"].time() < 2_000_000_000  # the target's seeded clock
        exec("import time, subprocess\nnow = time.time()\nrun = subprocess.run", namespace)
        assert abs(namespace["now"] - real_time()) < 60  # the harness's clock is real
        assert REAL["os"].stat is REAL["os"].__dict__["stat"]
    assert time.time is real_time
    assert namespace["run"].__name__ == "run"


def test_decorators_made_before_the_patch_reach_the_model() -> None:
    async def save(base: str) -> None:
        f = await async_open(base + "/s.tmp", "w")
        f.write("x")
        f.close()
        await async_replace(base + "/s.tmp", base + "/s")

    fs, icpt = run(lambda base: asyncio.run(save(base)))
    assert [o[0] for o in ops(fs)] == ["create", "write", "rename"]
    assert icpt.unsupported == []
    cells = [c.cell_contents for c in async_replace.__closure__ or ()]
    assert os.replace in cells  # the captured function is the real one again


class _ShortWrites(MemoryFileSystem):
    """A disk that stores at most 1000 bytes per write and says so (a short count)."""

    def write(self, path: str, offset: int, data: bytes) -> int:
        return super().write(path, offset, data[:1000])


def test_a_short_count_makes_cpython_write_the_rest_as_the_kernel_would_see() -> None:
    fs = RecordingFileSystem(_ShortWrites(dirs=(BASE,)))
    with intercept(fs, root=BASE):
        with open(BASE + "/big", "wb") as f:
            f.write(b"x" * 5000)
        fd = os.open(BASE + "/raw", os.O_WRONLY | os.O_CREAT)
        n = os.write(fd, b"y" * 5000)  # os.write reports the short count to the caller
        os.close(fd)
    assert n == 1000
    assert fs.read(BASE + "/big") == b"x" * 5000
    big = [(o.offset, len(o.data)) for o in fs.trace.ops if o.path == BASE + "/big" and o.data]
    assert [off for off, _ in big] == [0, 1000, 2000, 3000, 4000]


def test_reads_outside_the_base_directory_fall_back_to_the_real_disk_read_only() -> None:
    here = os.path.abspath(__file__)
    with open(here, "rb") as f:
        original = f.read()
    fs = recording()
    with intercept(fs, root=BASE) as icpt:
        with open(here, "rb") as f:
            assert f.read() == original
        assert pathlib.Path(here).read_bytes() == original
        assert os.path.exists(here) and os.path.isfile(here)
        assert os.path.basename(here) in os.listdir(os.path.dirname(here))
        with pytest.raises(FileNotFoundError):  # a write goes to the model (no such dir)
            open(here, "ab")  # noqa: SIM115
        assert not os.path.exists(BASE + "/nothing")  # inside: the model only
    assert here in icpt.outside_reads and here in icpt.escapes
    with open(here, "rb") as f:
        assert f.read() == original


def test_rmdir_link_fdatasync_and_directory_renames_are_operations() -> None:
    """FAULT-MODEL §1 (2026-12-02): recorded, and a descriptor follows its inode across a
    directory rename and onto its other name once the first is unlinked."""

    def code(base: str) -> None:
        os.makedirs(base + "/a/b")
        with open(base + "/a/b/f", "wb") as f:
            f.write(b"x")
            f.flush()
            os.fdatasync(f.fileno())
        fd = os.open(base + "/a/b/f", os.O_WRONLY)
        os.rename(base + "/a", base + "/c")
        os.write(fd, b"y")  # the inode now lives at c/b/f
        os.link(base + "/c/b/f", base + "/g")
        os.unlink(base + "/c/b/f")
        os.fsync(fd)  # the inode's remaining name
        os.close(fd)
        os.removedirs(base + "/c/b")  # c/b, then c; never the base directory

    fs, icpt = run(code)
    assert icpt.unsupported == [] and icpt.escapes == []
    assert [(o.kind.value, o.path, o.dst) for o in fs.trace.ops] == [
        ("mkdir", "/base/a", None),
        ("mkdir", "/base/a/b", None),
        ("create", "/base/a/b/f", None),
        ("write", "/base/a/b/f", None),
        ("fdatasync", "/base/a/b/f", None),
        ("rename", "/base/a", "/base/c"),
        ("write", "/base/c/b/f", None),
        ("link", "/base/c/b/f", "/base/g"),
        ("unlink", "/base/c/b/f", None),
        ("fsync", "/base/g", None),
        ("rmdir", "/base/c/b", None),
        ("rmdir", "/base/c", None),
    ]
    assert fs.listdir(BASE) == ["g"] and fs.read(BASE + "/g") == b"y"


def test_an_rmdir_of_a_non_empty_directory_fails_as_on_linux() -> None:
    def code(base: str) -> None:
        os.mkdir(base + "/d")
        open(base + "/d/f", "w").close()
        with pytest.raises(OSError) as info:
            os.rmdir(base + "/d")
        assert info.value.errno == errno.ENOTEMPTY
        with pytest.raises(NotADirectoryError):
            os.rmdir(base + "/d/f")

    fs, icpt = run(code)
    assert icpt.unsupported == [] and fs.is_dir(BASE + "/d")
    assert [o.errno for o in fs.trace.ops if o.kind is OpKind.RMDIR] == [
        errno.ENOTEMPTY,
        errno.ENOTDIR,
    ]


# --- issue 21: functions bound before the patch, libraries the target uses ---------------

HELD = {"replace": os.replace, "open": os.open}  # a dict's values: reached
PARTIAL_OPEN = functools.partial(os.open, mode=0o644)  # a partial's function: reached


class _HoldsOs:
    _os = os  # a class attribute, as dbm.dumb's _Database keeps it: reached
    _write = os.write


def _make_closure() -> Callable[[str], None]:
    closer = os.close

    def close_it(path: str) -> None:
        closer(_HoldsOs._os.open(path, os.O_RDONLY))

    return close_it


CLOSE_IT = _make_closure()  # a closure's cell: reached


def _model_under(tmp_path: pathlib.Path) -> tuple[str, RecordingFileSystem]:
    """A base path absent from the real disk, under ``tmp_path``: should the patch not
    hold (the behaviour these tests catch), a real write lands nowhere but there."""
    base = str(tmp_path / "model")
    return base, RecordingFileSystem(MemoryFileSystem(dirs=(base, "/tmp")))


def test_functions_held_before_the_patch_reach_the_model_and_are_put_back(
    tmp_path: pathlib.Path,
) -> None:
    def save(base: str) -> None:
        fd = PARTIAL_OPEN(base + "/a", os.O_WRONLY | os.O_CREAT)
        _HoldsOs._write(fd, b"held")
        _HoldsOs._os.fsync(fd)
        os.close(fd)
        HELD["replace"](base + "/a", base + "/b")
        CLOSE_IT(base + "/b")
        with open(base + "/c", "w", opener=HELD["open"]) as f:  # the real os.open
            f.write("opened")

    base, fs = _model_under(tmp_path)
    with intercept(fs, root=base) as icpt:
        save(base)
    assert [o[0] for o in ops(fs)] == ["create", "write", "fsync", "rename", "create", "write"]
    assert fs.read(base + "/b") == b"held" and fs.read(base + "/c") == b"opened"
    assert icpt.unsupported == [] and icpt.escapes == []
    assert not REAL["os"].path.lexists(base)
    # after the block every captured value is the real one again
    assert HELD["replace"] is os.replace and HELD["open"] is os.open
    assert _HoldsOs.__dict__["_os"] is os and _HoldsOs.__dict__["_write"] is os.write
    assert PARTIAL_OPEN.func is os.open
    assert os.close in [c.cell_contents for c in CLOSE_IT.__closure__ or ()]


def test_dbm_dumb_class_attributes_reach_the_model(tmp_path: pathlib.Path) -> None:
    import dbm.dumb

    def save(base: str) -> None:
        with dbm.dumb.open(base + "/db", "c") as db:
            db[b"k"] = b"v"
        with dbm.dumb.open(base + "/db", "c") as db:  # a second commit renames .dir
            db[b"k"] = b"w"

    base, fs = _model_under(tmp_path)
    with intercept(fs, root=base) as icpt:
        save(base)
    kinds = [o[0] for o in ops(fs)]
    assert "rename" in kinds and "create" in kinds  # _commit's self._os.rename, in the model
    assert sorted(fs.listdir(base)) == ["db.bak", "db.dat", "db.dir"]
    assert icpt.unsupported == [] and not REAL["os"].path.lexists(base)
    assert dbm.dumb._Database._os is os and dbm.dumb._Database._io is io


def test_a_shared_package_is_intercepted_for_the_target_and_real_for_the_harness(
    tmp_path: pathlib.Path,
) -> None:
    from hypothesis.database import DirectoryBasedExampleDatabase

    real_dir = tmp_path / "harness-db"
    harness_db = DirectoryBasedExampleDatabase(str(real_dir))
    base, fs = _model_under(tmp_path)  # with mkstemp's /tmp
    with intercept(fs, root=base):
        # the target (this test's frame) uses hypothesis's database: the model
        DirectoryBasedExampleDatabase(base + "/examples").save(b"k", b"target")
        # the harness (a crashpoint frame) uses it: the real disk
        namespace: dict[str, Any] = {"__name__": "crashpoint.scenarios.jobs", "db": harness_db}
        exec("db.save(b'k', b'harness')", namespace)
    assert [o.kind.value for o in fs.trace.ops][-3:] == ["create", "write", "rename"]
    assert fs.exists(base + "/examples") and not REAL["os"].path.lexists(base)
    assert list(harness_db.fetch(b"k")) == [b"harness"]  # on the real disk
    assert list(DirectoryBasedExampleDatabase(str(real_dir)).fetch(b"k")) == [b"harness"]

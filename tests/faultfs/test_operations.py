"""rmdir, link, fdatasync and the rename of a directory in traces and crash states
(FAULT-MODEL.md §1, 2026-12-02; issue 20)."""

from __future__ import annotations

import contextlib
import dataclasses
import posixpath
from collections.abc import Callable

from crashpoint.faultfs import (
    PROCESS_CRASH,
    CrashState,
    FileSystem,
    MemoryFileSystem,
    Op,
    OpKind,
    RecordingFileSystem,
    crash_points,
    durable_at,
    effective,
    write_bytes,
)
from crashpoint.faultfs._power import JOURNALED, JOURNALED_REORDER
from hypothesis import given, settings
from hypothesis import strategies as st

BASE = "/base"


def record(script: Callable[[FileSystem], None]) -> tuple[CrashState, list[Op]]:
    mem = MemoryFileSystem(dirs=(BASE,))
    initial = mem.crash_state()
    fs = RecordingFileSystem(mem)
    script(fs)
    return initial, fs.trace.ops


def final(model: object, script: Callable[[FileSystem], None]) -> tuple[CrashState, ...]:
    initial, ops = record(script)
    return list(crash_points(model, initial, ops))[-1].states  # type: ignore[arg-type]


def names(state: CrashState) -> dict[str, bytes]:
    return dict(state.files)


def test_the_new_operations_are_recorded_with_their_kind() -> None:
    def script(fs: FileSystem) -> None:
        fs.mkdir("/base/d")
        write_bytes(fs, "/base/d/f", b"x")
        fs.fdatasync("/base/d/f")
        fs.link("/base/d/f", "/base/g")
        fs.rename("/base/d", "/base/e")
        fs.unlink("/base/e/f")
        fs.rmdir("/base/e")

    _, ops = record(script)
    assert [o.kind for o in ops] == [
        OpKind.MKDIR,
        OpKind.CREATE,
        OpKind.WRITE,
        OpKind.FDATASYNC,
        OpKind.LINK,
        OpKind.RENAME,
        OpKind.UNLINK,
        OpKind.RMDIR,
    ]
    assert ops[4].render() == "link('/base/d/f', '/base/g')"
    assert OpKind.FDATASYNC.barrier and not OpKind.FDATASYNC.metadata
    assert OpKind.LINK.metadata and OpKind.RMDIR.metadata
    # process-crash: every prefix, in order
    states = [p.states[0] for p in crash_points(PROCESS_CRASH, *record(script))]
    assert names(states[5]) == {"/base/d/f": b"x", "/base/g": b"x"}
    assert states[6].dirs == ("/base", "/base/e") and "/base/e/f" in names(states[6])
    assert names(states[-1]) == {"/base/g": b"x"} and states[-1].dirs == ("/base",)


def test_an_rmdir_frees_the_name() -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    mem.mkdir("/base/d")
    mem.rmdir("/base/d")
    assert not mem.exists("/base/d")
    mem.mkdir("/base/d")  # it was EEXIST when rmdir left the directory
    assert mem.is_dir("/base/d")


def test_a_hard_link_is_one_inode_with_a_link_count() -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    write_bytes(mem, "/base/f", b"one")
    mem.link("/base/f", "/base/g")
    assert mem.links("/base/f") == mem.links("/base/g") == 2
    mem.write("/base/g", 3, b"+")
    assert mem.read("/base/f") == b"one+"
    mem.unlink("/base/f")
    assert mem.links("/base/g") == 1 and mem.read("/base/g") == b"one+"


def test_maildir_style_link_then_unlink_under_power_loss() -> None:
    """tmp/x written and fsynced, linked into new/, unlinked from tmp/: before the
    directory fsync a power cut leaves a journal prefix; after it, only new/x."""

    def commit(fs: FileSystem, *, dirsync: bool) -> None:
        fs.mkdir("/base/tmp")
        fs.mkdir("/base/new")
        fs.fsync_dir(BASE)
        write_bytes(fs, "/base/tmp/x", b"mail")
        fs.fsync("/base/tmp/x")
        fs.link("/base/tmp/x", "/base/new/x")
        fs.unlink("/base/tmp/x")
        if dirsync:
            fs.fsync_dir("/base/new")

    pending = {
        tuple(sorted(names(s))) for s in final(JOURNALED, lambda fs: commit(fs, dirsync=False))
    }
    assert pending == {
        ("/base/tmp/x",),
        ("/base/new/x", "/base/tmp/x"),
        ("/base/new/x",),
    }
    for state in final(JOURNALED, lambda fs: commit(fs, dirsync=False)):
        assert set(names(state).values()) == {b"mail"}  # the data was fsynced
    synced = final(JOURNALED, lambda fs: commit(fs, dirsync=True))
    assert [names(s) for s in synced] == [{"/base/new/x": b"mail"}]


def test_two_names_of_one_inode_read_the_same_bytes_in_every_crash_state() -> None:
    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/f", b"a" * 10)
        fs.fsync("/base/f")
        fs.link("/base/f", "/base/g")
        fs.fsync_dir(BASE)
        fs.write("/base/g", 0, b"b" * 10)  # pending: lost, whole or torn, for both names

    model = dataclasses.replace(JOURNALED_REORDER, block_size=4, max_states=10**6)
    states = final(model, script)
    seen = set()
    for state in states:
        files = names(state)
        assert files["/base/f"] == files["/base/g"]
        seen.add(files["/base/f"])
    assert {b"a" * 10, b"b" * 10, b"bbbbaaaaaa"} <= seen


def test_an_unsynced_directory_rename_moves_the_whole_subtree_or_nothing() -> None:
    def script(fs: FileSystem) -> None:
        fs.mkdir("/base/d")
        write_bytes(fs, "/base/d/f", b"v")
        fs.fsync("/base/d/f")
        fs.fsync_dir("/base/d")
        fs.fsync_dir(BASE)
        fs.rename("/base/d", "/base/e")

    for model in (JOURNALED, JOURNALED_REORDER):
        got = {(s.dirs, tuple(names(s))) for s in final(model, script)}
        assert got == {
            (("/base", "/base/d"), ("/base/d/f",)),
            (("/base", "/base/e"), ("/base/e/f",)),
        }, model.name


def test_fdatasync_is_a_barrier_of_the_power_loss_family() -> None:
    """The journaled family commits globally: fdatasync commits what fsync commits
    (the ext4/xfs/btrfs/posix families tell them apart)."""

    def script(sync: str) -> Callable[[FileSystem], None]:
        def run(fs: FileSystem) -> None:
            write_bytes(fs, "/base/f", b"data")
            getattr(fs, sync)("/base/f")

        return run

    for model in (JOURNALED, JOURNALED_REORDER):
        assert final(model, script("fdatasync")) == final(model, script("fsync"))
    _, ops = record(script("fdatasync"))
    assert durable_at(JOURNALED, ops, 3) == [True, True, True]


PATHS = ["/base/a", "/base/b", "/base/d", "/base/d/a", "/base/e", "/base/e/a"]
paths = st.sampled_from(PATHS)
dirs = st.sampled_from(["/base/d", "/base/e"])
calls = st.one_of(
    st.tuples(st.just("mkdir"), dirs),
    st.tuples(st.just("rmdir"), dirs),
    st.tuples(st.just("create"), paths),
    st.tuples(st.just("write"), paths, st.integers(0, 6), st.binary(min_size=1, max_size=6)),
    st.tuples(st.just("truncate"), paths, st.integers(0, 6)),
    st.tuples(st.just("rename"), paths, paths),
    st.tuples(st.just("link"), paths, paths),
    st.tuples(st.just("unlink"), paths),
    st.tuples(st.just("fsync"), paths),
    st.tuples(st.just("fdatasync"), paths),
    st.tuples(st.just("fsync_dir"), st.sampled_from([BASE, "/base/d", "/base/e"])),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(calls, max_size=12))
def test_properties_of_crash_states_with_the_new_operations(
    script: list[tuple[object, ...]],
) -> None:
    def run(fs: FileSystem) -> None:
        for name, *args in script:
            with contextlib.suppress(OSError):
                getattr(fs, str(name))(*args)

    initial, ops = record(run)
    seen = [p.states[0] for p in crash_points(PROCESS_CRASH, initial, ops)]
    model = dataclasses.replace(JOURNALED, block_size=4, max_states=10**6)
    reorder = dataclasses.replace(model, name="r", reorder=True)
    replay = MemoryFileSystem(initial)
    plain = list(crash_points(model, initial, ops))
    reordered = list(crash_points(reorder, initial, ops))
    for k, (p, r) in enumerate(zip(plain, reordered, strict=True)):
        assert p.cut == 0 and r.cut == 0
        assert p.states[0] == seen[k]  # nothing lost is possible, and comes first
        assert replay.durable_state() in p.states
        assert set(p.states) <= set(r.states)
        for state in r.states:
            for path, _ in state.files:  # no file without its directory
                assert posixpath.dirname(path) in (BASE, *state.dirs)
            for d in state.dirs:
                assert posixpath.dirname(d) in ("/", BASE, *state.dirs)
        if k < len(ops) and effective(ops[k]):
            replay.apply(ops[k])

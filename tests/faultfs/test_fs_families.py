"""The file-system families ``ext4``, ``xfs``, ``btrfs`` and ``posix`` (issue 20,
acceptance 1-3 at the faultfs level; FAULT-MODEL.md §3, families of 2026-12-02)."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable

import pytest
from crashpoint.faultfs import (
    FAMILIES,
    FS_MODELS,
    CrashState,
    Fault,
    FaultKind,
    FileSystem,
    MemoryFileSystem,
    Op,
    PersistenceModel,
    RecordingFileSystem,
    crash_points,
    durable_at,
    get_model,
    write_bytes,
)
from crashpoint.faultfs._power import JOURNALED, JOURNALED_REORDER
from hypothesis import given, settings
from hypothesis import strategies as st

BASE = "/base"
BLOCK = 4096
OLD, NEW = b"o" * BLOCK, b"n" * BLOCK
ALL = ("ext4", "xfs", "btrfs", "posix")

Script = Callable[[FileSystem], None]


def record(script: Script, *, setup: Script | None = None) -> tuple[CrashState, list[Op]]:
    """The trace of ``script`` on a disk where ``setup`` ran and everything is durable."""
    mem = MemoryFileSystem(dirs=(BASE,))
    if setup is not None:
        setup(mem)
    initial = mem.crash_state()
    fs = RecordingFileSystem(MemoryFileSystem(initial))
    script(fs)
    return initial, fs.trace.ops


def final(name: str, script: Script, *, setup: Script | None = None) -> tuple[CrashState, ...]:
    initial, ops = record(script, setup=setup)
    point = list(crash_points(get_model(name), initial, ops))[-1]
    assert point.cut == 0, f"{name}: the enumeration must be exhaustive here"
    return point.states


def main_old(fs: FileSystem) -> None:
    write_bytes(fs, "/base/main", b"old")


def test_the_families_are_registered_models() -> None:
    assert list(FS_MODELS) == list(ALL)
    for name in ALL:
        model = get_model(name)
        assert model.family == name and FAMILIES[name].name == name
    assert get_model("posix").reorder and not get_model("ext4").reorder


# --- acceptance 1: tmp -> fdatasync -> rename -> fdatasync(main) ----------------------------


def fdatasync_store(*, dirsync: bool) -> Script:
    def save(fs: FileSystem) -> None:
        write_bytes(fs, "/base/main.tmp", b"new")
        fs.fdatasync("/base/main.tmp")
        fs.rename("/base/main.tmp", "/base/main")
        fs.fdatasync("/base/main")
        if dirsync:
            fs.fsync_dir(BASE)

    return save


@pytest.mark.parametrize("name", ["ext4", "posix"])
def test_fdatasync_after_the_rename_does_not_commit_it(name: str) -> None:
    states = final(name, fdatasync_store(dirsync=False), setup=main_old)
    files = [dict(s.files) for s in states]
    # the acknowledged save lost: main old, the temporary new
    assert {"/base/main": b"old", "/base/main.tmp": b"new"} in files
    assert {"/base/main": b"new"} in files


@pytest.mark.parametrize("name", ALL)
def test_a_directory_fsync_after_the_rename_makes_it_durable(name: str) -> None:
    states = final(name, fdatasync_store(dirsync=True), setup=main_old)
    assert [dict(s.files) for s in states] == [{"/base/main": b"new"}]


# --- acceptance 2: two pending overwrites, blocks 0 and 2 -----------------------------------


def three_old_blocks(fs: FileSystem) -> None:
    write_bytes(fs, "/base/f", OLD * 3)


def overwrite_blocks_0_and_2(fs: FileSystem) -> None:
    fs.write("/base/f", 0, NEW)
    fs.write("/base/f", 2 * BLOCK, NEW)


@pytest.mark.parametrize("name", ALL)
def test_old_old_new_is_a_state_of_every_family_but_btrfs(name: str) -> None:
    states = final(name, overwrite_blocks_0_and_2, setup=three_old_blocks)
    contents = {s.file("/base/f") for s in states}
    assert (OLD + OLD + NEW in contents) is (name != "btrfs")
    # every family: nothing, everything, and the first block alone
    assert {OLD * 3, NEW + OLD + NEW, NEW + OLD + OLD} <= contents


# --- acceptance 3: fsync of an unchanged file after an unsynced rename ----------------------


def two_files(fs: FileSystem) -> None:
    write_bytes(fs, "/base/a", b"A")
    write_bytes(fs, "/base/f", b"F")


def rename_then_fsync_unchanged(fs: FileSystem) -> None:
    fs.rename("/base/a", "/base/b")
    fs.fsync("/base/f")  # f's inode is clean: nothing to commit


@pytest.mark.parametrize("name", ALL)
def test_fsync_of_an_unchanged_file_may_lose_an_earlier_rename(name: str) -> None:
    states = final(name, rename_then_fsync_unchanged, setup=two_files)
    assert {tuple(p for p, _ in s.files) for s in states} == {
        ("/base/a", "/base/f"),
        ("/base/b", "/base/f"),
    }


def test_fsync_of_a_changed_file_commits_the_rename_on_ext4_and_xfs_only() -> None:
    def script(fs: FileSystem) -> None:
        fs.rename("/base/a", "/base/b")
        fs.write("/base/f", 1, b"G")  # the size changes: the inode is dirty
        fs.fsync("/base/f")

    for name in ALL:
        names = {tuple(p for p, _ in s.files) for s in final(name, script, setup=two_files)}
        committed = names == {("/base/b", "/base/f")}
        assert committed is (name in ("ext4", "xfs")), name


def test_a_same_size_overwrite_may_or_may_not_dirty_the_inode() -> None:
    """ext4: fsync after an overwrite within one timestamp tick did not commit an earlier
    rename (issue 20): both outcomes are states."""

    def script(fs: FileSystem) -> None:
        fs.rename("/base/a", "/base/b")
        fs.write("/base/f", 0, b"G")  # same size
        fs.fsync("/base/f")

    for name in ("ext4", "xfs"):
        states = final(name, script, setup=two_files)
        assert {tuple(p for p, _ in s.files) for s in states} == {
            ("/base/a", "/base/f"),
            ("/base/b", "/base/f"),
        }
        assert {s.file("/base/f") for s in states} == {b"G"}  # the data is durable


def test_fsync_of_an_unrelated_directory_commits_on_ext4_only() -> None:
    def script(fs: FileSystem) -> None:
        fs.rename("/base/a", "/base/b")
        fs.fsync_dir("/base/other")

    def setup(fs: FileSystem) -> None:
        two_files(fs)
        fs.mkdir("/base/other")

    for name in ALL:
        names = {tuple(p for p, _ in s.files) for s in final(name, script, setup=setup)}
        assert (names == {("/base/b", "/base/f")}) is (name == "ext4"), name


def test_data_survives_while_an_earlier_rename_is_lost() -> None:
    def script(fs: FileSystem) -> None:
        fs.rename("/base/a", "/base/b")
        fs.write("/base/f", 0, b"G")

    for name in ALL:
        states = final(name, script, setup=two_files)
        assert any(s.file("/base/a") == b"A" and s.file("/base/f") == b"G" for s in states)


def test_truncate_then_overwrite_may_reach_the_disk_before_the_truncate() -> None:
    def script(fs: FileSystem) -> None:
        fs.truncate("/base/f", 0)
        fs.write("/base/f", 0, NEW * 3)

    for name in ("ext4", "xfs", "posix"):
        contents = {s.file("/base/f") for s in final(name, script, setup=three_old_blocks)}
        assert NEW + OLD + OLD in contents, name  # 12288 bytes [new, old, old]


def test_the_writeback_bound_is_counted_never_exhaustive() -> None:
    def script(fs: FileSystem) -> None:
        for block in (0, 2, 4, 6):
            fs.write("/base/f", block * BLOCK, NEW)

    def setup(fs: FileSystem) -> None:
        write_bytes(fs, "/base/f", OLD * 8)

    initial, ops = record(script, setup=setup)
    model = dataclasses.replace(get_model("ext4"), max_states=10**6)
    full = list(crash_points(model, initial, ops))[-1]
    assert full.cut == 0 and len(full.states) == 16  # 2**4 orders
    bounded = list(crash_points(dataclasses.replace(model, writeback_bound=2), initial, ops))[-1]
    assert set(bounded.states) < set(full.states)
    assert bounded.cut >= len(set(full.states) - set(bounded.states))


def test_durable_at_under_the_families() -> None:
    _, ops = record(fdatasync_store(dirsync=False), setup=main_old)
    # create, write, fdatasync, rename, fdatasync
    assert durable_at(get_model("ext4"), ops, 5) == [True, True, True, False, True]
    assert durable_at(get_model("posix"), ops, 5) == [False, True, True, False, True]
    _, ops = record(fdatasync_store(dirsync=True), setup=main_old)
    for name in ALL:
        assert durable_at(get_model(name), ops, 6) == [True] * 6, name


# --- every state of ext4, xfs and btrfs is a state of posix ---------------------------------

PATHS = ["/base/a", "/base/b", "/base/d/a"]
paths = st.sampled_from(PATHS)
calls = st.one_of(
    st.tuples(st.just("mkdir"), st.just("/base/d")),
    st.tuples(st.just("rmdir"), st.just("/base/d")),
    st.tuples(st.just("create"), paths),
    st.tuples(st.just("write"), paths, st.integers(0, 9), st.binary(min_size=1, max_size=6)),
    st.tuples(st.just("truncate"), paths, st.integers(0, 9)),
    st.tuples(st.just("rename"), paths, paths),
    st.tuples(st.just("link"), paths, paths),
    st.tuples(st.just("unlink"), paths),
    st.tuples(st.just("fsync"), paths),
    st.tuples(st.just("fdatasync"), paths),
    st.tuples(st.just("fsync_dir"), st.sampled_from([BASE, "/base/d"])),
)


def small(name: str) -> PersistenceModel:
    return dataclasses.replace(get_model(name), block_size=4, max_states=10**6)


@settings(max_examples=120, deadline=None)
@given(st.lists(calls, max_size=10))
def test_every_family_state_is_a_posix_state(script: list[tuple[object, ...]]) -> None:
    def run(fs: FileSystem) -> None:
        for name, *args in script:
            with contextlib.suppress(OSError):
                getattr(fs, str(name))(*args)

    initial, ops = record(run, setup=lambda fs: write_bytes(fs, "/base/a", b"0123456789"))
    posix = list(crash_points(small("posix"), initial, ops))
    assert all(p.cut == 0 for p in posix)
    for name in ("ext4", "xfs", "btrfs"):
        for k, (p, f) in enumerate(
            zip(posix, crash_points(small(name), initial, ops), strict=True)
        ):
            assert f.cut == 0
            assert set(f.states) <= set(p.states), f"{name}, crash point {k}"
            assert f.states[0] == p.states[0]  # nothing lost comes first


def test_data_an_fsync_lost_is_gone_for_good_under_every_family() -> None:
    """fsyncgate (FAULT-MODEL §2): the failed fsync dropped the dirty pages; a later
    write of other bytes does not bring them back."""
    mem = MemoryFileSystem(dirs=(BASE,))
    write_bytes(mem, "/base/f", b"old!")
    initial = mem.crash_state()
    fs = RecordingFileSystem(MemoryFileSystem(initial), fault=Fault(1, kind=FaultKind.FSYNC_LOST))
    fs.write("/base/f", 0, b"NEW!")
    with contextlib.suppress(OSError):
        fs.fsync("/base/f")
    fs.write("/base/f", 4, b"tail")
    fs.fsync("/base/f")
    for name in ALL:
        point = list(crash_points(get_model(name), initial, fs.trace.ops))[-1]
        assert {s.file("/base/f") for s in point.states} == {b"old!tail"}, name


@settings(max_examples=120, deadline=None)
@given(st.lists(calls, max_size=10))
def test_the_families_are_never_stronger_than_the_models_reality_validated(
    script: list[tuple[object, ...]],
) -> None:
    """Every ``power-loss`` state (validated by real ext4 and XFS cuts, docs/reality.md) is
    an ``ext4`` and an ``xfs`` state; every ``power-loss-reorder`` state a ``posix`` one."""

    def run(fs: FileSystem) -> None:
        for name, *args in script:
            with contextlib.suppress(OSError):
                getattr(fs, str(name))(*args)

    initial, ops = record(run, setup=lambda fs: write_bytes(fs, "/base/a", b"0123456789"))
    for old, new in (
        (JOURNALED, "ext4"),
        (JOURNALED, "xfs"),
        (JOURNALED_REORDER, "posix"),
    ):
        validated = dataclasses.replace(old, block_size=4, max_states=10**6)
        pairs = zip(
            crash_points(validated, initial, ops),
            crash_points(small(new), initial, ops),
            strict=True,
        )
        for o, f in pairs:
            assert o.cut == 0 and f.cut == 0
            assert set(o.states) <= set(f.states), f"{old.name} vs {new}, point {o.index}"


@settings(max_examples=60, deadline=None)
@given(st.lists(calls, max_size=10), st.integers(0, 2), st.integers(0, 2))
def test_a_bounded_enumeration_counts_at_least_the_states_it_misses(
    script: list[tuple[object, ...]], reorder: int, writeback: int
) -> None:
    def run(fs: FileSystem) -> None:
        for name, *args in script:
            with contextlib.suppress(OSError):
                getattr(fs, str(name))(*args)

    initial, ops = record(run, setup=lambda fs: write_bytes(fs, "/base/a", b"0123456789"))
    for name in ALL:
        full = list(crash_points(small(name), initial, ops))
        for bounded_model in (
            dataclasses.replace(small(name), reorder_bound=reorder, writeback_bound=writeback),
            dataclasses.replace(small(name), max_states=3),
        ):
            for f, b in zip(full, crash_points(bounded_model, initial, ops), strict=True):
                assert f.cut == 0
                assert set(b.states) <= set(f.states)
                assert len(b.states) <= bounded_model.max_states
                missed = len(set(f.states) - set(b.states))
                assert missed <= b.cut, (name, f.index)
                assert (b.cut == 0) <= (missed == 0)


def test_the_command_line_takes_a_family_by_name_and_all_is_the_families() -> None:
    from crashpoint._options import parse_models

    assert parse_models("ext4, POSIX") == [FS_MODELS["ext4"], FS_MODELS["posix"]]
    assert [m.name for m in parse_models("all")] == [
        "process-crash",
        "ext4",
        "xfs",
        "btrfs",
        "posix",
    ]
    # the names of before issue 20: kept as asked, judged by their family's rules
    old = parse_models("power-loss,power-loss-reorder")
    assert [(m.name, m.family) for m in old] == [
        ("power-loss", "ext4"),
        ("power-loss-reorder", "posix"),
    ]
    with pytest.raises(
        ValueError, match=r"known: process-crash, ext4, xfs, btrfs, posix, power-loss, "
    ):
        parse_models("zfs")


def test_posix_keeps_a_synced_directorys_entries_whenever_the_directory_survives() -> None:
    """A directory's fsync makes its entries durable; whether the directory itself
    survives is its parent's fsync's business. A new ``d`` (its parent never synced) may
    vanish with everything in it, but no posix state holds ``d`` without the entries its
    fsync covered (LevelDB's and RocksDB's ``db/``: CURRENT naming a MANIFEST whose name
    was fsynced cannot lose that name while CURRENT stays)."""

    def script(fs: FileSystem) -> None:
        fs.mkdir("/base/d")
        write_bytes(fs, "/base/d/manifest", b"m")
        fs.fsync("/base/d/manifest")
        write_bytes(fs, "/base/d/current", b"c")
        fs.fsync("/base/d/current")
        fs.fsync_dir("/base/d")

    states = final("posix", script)
    holding = [s for s in states if "/base/d" in s.dirs or s.file("/base/d/current") is not None]
    assert any("/base/d" not in s.dirs for s in states)  # the directory itself may go
    assert holding
    for s in holding:
        assert s.file("/base/d/manifest") == b"m" and s.file("/base/d/current") == b"c"

"""Persistence models: which crash states a trace may leave (FAULT-MODEL.md §3)."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import posixpath
import subprocess
import sys
from collections.abc import Callable

import pytest
from crashpoint.faultfs import (
    ALIASES,
    MODELS,
    POWER_LOSS,
    POWER_LOSS_REORDER,
    PROCESS_CRASH,
    CrashPoint,
    CrashState,
    Fault,
    FaultKind,
    FileSystem,
    MemoryFileSystem,
    Op,
    OpKind,
    PersistenceModel,
    RecordingFileSystem,
    _power,
    canonical,
    crash_points,
    effective,
    get_model,
    write_bytes,
)
from crashpoint.faultfs._power import JOURNALED, JOURNALED_REORDER, reorder_bound
from hypothesis import given, settings
from hypothesis import strategies as st

BASE = "/base"
Script = Callable[[FileSystem], None]


def record(script: Script, *, fault: Fault | None = None) -> tuple[CrashState, list[Op]]:
    mem = MemoryFileSystem(dirs=(BASE,))
    initial = mem.crash_state()
    fs = RecordingFileSystem(mem, fault=fault)
    script(fs)
    return initial, fs.trace.ops


def points(
    model: PersistenceModel, script: Script, *, fault: Fault | None = None
) -> list[CrashPoint]:
    initial, ops = record(script, fault=fault)
    return list(crash_points(model, initial, ops))


def final(model: PersistenceModel, script: Script) -> tuple[CrashState, ...]:
    return points(model, script)[-1].states


def contents(states: tuple[CrashState, ...], path: str) -> set[bytes | None]:
    return {s.file(path) for s in states}


def volatile(initial: CrashState, ops: list[Op]) -> list[CrashState]:
    """What the running code saw after each prefix: ``[state after 0 ops, ...]``."""
    return [p.states[0] for p in crash_points(PROCESS_CRASH, initial, ops)]


# --- the registry ----------------------------------------------------------------------


def test_the_named_models() -> None:
    assert list(MODELS) == ["process-crash", "ext4", "xfs", "btrfs", "posix"]
    # issue 20: the old names are aliases judged by a family's rules
    assert get_model("power-loss") is POWER_LOSS and POWER_LOSS.family == "ext4"
    assert get_model("power-loss-reorder") is POWER_LOSS_REORDER
    assert POWER_LOSS_REORDER.family == "posix"
    assert canonical("power-loss") == "ext4" and canonical("power-loss-reorder") == "posix"
    assert canonical("xfs") == "xfs"
    assert "power-loss" not in MODELS and set(ALIASES) == {"power-loss", "power-loss-reorder"}
    # the journaled engine of before, kept unnamed (the families are compared with it)
    assert JOURNALED.volatile_data and not JOURNALED.reorder
    assert JOURNALED_REORDER.volatile_data and JOURNALED_REORDER.reorder
    assert JOURNALED.family == "journaled" and "journaled" not in MODELS
    assert all(m.source for m in (*MODELS.values(), *ALIASES.values()))
    with pytest.raises(KeyError, match="power-loss"):
        get_model("power-cut")


def test_an_alias_has_the_states_of_its_family() -> None:
    mem = MemoryFileSystem(dirs=("/base",))
    initial = mem.crash_state()
    fs = RecordingFileSystem(mem)
    write_bytes(fs, "/base/f", b"x" * 9000)
    fs.rename("/base/f", "/base/g")
    for alias in ALIASES.values():
        family = MODELS[alias.family]
        got = [p.states for p in crash_points(alias, initial, fs.trace.ops)]
        assert got == [p.states for p in crash_points(family, initial, fs.trace.ops)]


@pytest.mark.parametrize("model", [JOURNALED, JOURNALED_REORDER], ids=lambda m: m.name)
def test_model_bounds_must_be_positive(model: PersistenceModel) -> None:
    bad = dataclasses.replace(model, block_size=0)
    with pytest.raises(ValueError, match="block_size"):
        list(crash_points(bad, CrashState(()), []))


def test_a_trace_from_another_disk_is_refused() -> None:
    ops = [Op(0, OpKind.WRITE, "/base/nowhere", data=b"x")]
    with pytest.raises(ValueError, match="does not replay"):
        list(crash_points(JOURNALED, CrashState((), ("/base",)), ops))


# --- process crash ---------------------------------------------------------------------


def test_process_crash_gives_the_k_plus_one_prefixes() -> None:
    def script(fs: FileSystem) -> None:
        fs.mkdir("/base/d")
        write_bytes(fs, "/base/d/a", b"aa")
        fs.rename("/base/d/a", "/base/b")
        fs.truncate("/base/b", 1)

    initial, ops = record(script)
    result = list(crash_points(PROCESS_CRASH, initial, ops))
    assert [p.index for p in result] == list(range(len(ops) + 1))
    assert [p.op for p in result] == [*ops, None]
    assert all(len(p.states) == 1 and p.cut == 0 for p in result)
    mem = MemoryFileSystem(initial)
    for k, point in enumerate(result):
        assert point.states[0] == mem.crash_state()
        if k < len(ops):
            mem.apply(ops[k])
    assert result[-1].states[0].files == (("/base/b", b"a"),)


# --- power loss: data ------------------------------------------------------------------


def save_without_fsync(fs: FileSystem) -> None:
    write_bytes(fs, "/base/tmp", b"payload")
    fs.rename("/base/tmp", "/base/main")


def test_rename_without_fsync_can_leave_the_file_empty() -> None:
    """ext4 delayed allocation: the rename is committed, the data is not."""
    states = final(JOURNALED, save_without_fsync)
    assert b"" in contents(states, "/base/main")
    assert contents(states, "/base/main") >= {b"payload", b"", bytes(7), None}
    # process-crash cannot lose it
    assert contents(final(PROCESS_CRASH, save_without_fsync), "/base/main") == {b"payload"}


def test_fsync_before_rename_keeps_the_data() -> None:
    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/tmp", b"payload")
        fs.fsync("/base/tmp")
        fs.rename("/base/tmp", "/base/main")

    result = points(JOURNALED, script)
    after_fsync = result[3:]
    for point in after_fsync:
        for state in point.states:
            assert {state.file("/base/main"), state.file("/base/tmp")} - {None} == {b"payload"}
    assert contents(result[-1].states, "/base/main") == {b"payload", None}


def test_torn_writes_persist_whole_blocks_and_read_back_zero_filled() -> None:
    model = dataclasses.replace(JOURNALED, block_size=4)
    states = final(model, lambda fs: write_bytes(fs, "/base/f", b"abcdefghij"))
    assert contents(states, "/base/f") == {
        None,  # the create was not committed
        b"abcdefghij",  # every block
        b"",  # none: delayed allocation's empty file
        bytes(10),  # the size, zero-filled
        b"abcd" + bytes(6),  # torn, the size kept: zero-filled (XFS, data=writeback)
        b"abcdefgh" + bytes(2),
        b"abcd",  # torn, the size advanced with the data (ext4 delayed allocation)
        b"abcdefgh",
    }


def test_a_file_smaller_than_a_block_tears_to_zeros() -> None:
    states = final(JOURNALED, lambda fs: write_bytes(fs, "/base/f", b"tiny"))
    assert contents(states, "/base/f") == {None, b"tiny", b"", b"\0\0\0\0"}


def test_a_torn_append_keeps_the_synced_blocks() -> None:
    model = dataclasses.replace(JOURNALED, block_size=4)

    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/f", b"AAAABB")
        fs.fsync("/base/f")
        fs.write("/base/f", 6, b"BBCCCCDD")

    assert contents(final(model, script), "/base/f") == {
        b"AAAABB",
        b"AAAABBBBCCCCDD",
        b"AAAABB" + bytes(8),
        b"AAAABBBB" + bytes(6),
        b"AAAABBBBCCCC" + bytes(2),
        b"AAAABBBB",
        b"AAAABBBBCCCC",
    }


def test_data_belongs_to_the_inode_and_moves_with_rename() -> None:
    def synced_then_renamed(fs: FileSystem) -> None:
        write_bytes(fs, "/base/a", b"data")
        fs.fsync("/base/a")
        fs.rename("/base/a", "/base/b")

    states = final(JOURNALED, synced_then_renamed)
    assert {s.files for s in states} == {(("/base/a", b"data"),), (("/base/b", b"data"),)}

    def written_after_rename(fs: FileSystem) -> None:
        fs.create("/base/a")
        fs.fsync("/base/a")
        fs.rename("/base/a", "/base/b")
        fs.write("/base/b", 0, b"late")

    states = final(JOURNALED, written_after_rename)
    assert contents(states, "/base/b") >= {b"late", b""}
    # a journal replays a prefix: the write's size change comes after the rename, so
    # with the rename lost the write is lost too (issue 9) ...
    assert contents(states, "/base/a") == {None, b""}
    # ... unless size changes reorder like other metadata (ALICE)
    reordered = final(JOURNALED_REORDER, written_after_rename)
    assert (("/base/a", b"late"),) in {s.files for s in reordered}


def test_truncate_is_metadata_committed_by_a_barrier() -> None:
    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/f", b"0123456789")
        fs.fsync("/base/f")
        fs.truncate("/base/f", 4)
        fs.fsync_dir(BASE)

    result = points(JOURNALED, script)
    assert contents(result[3].states, "/base/f") == {b"0123456789"}
    assert contents(result[4].states, "/base/f") == {b"0123456789", b"0123"}
    assert contents(result[5].states, "/base/f") == {b"0123"}


def test_failed_operations_did_not_happen() -> None:
    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/f", b"data")
        fs.fsync("/base/f")
        with pytest.raises(OSError):
            fs.rename("/base/f", "/base/g")  # EXDEV: armed below
        fs.fsync_dir(BASE)

    states = points(JOURNALED, script, fault=Fault(3, errno.EXDEV))[-1].states
    assert [s.files for s in states] == [(("/base/f", b"data"),)]


def test_a_short_write_leaves_its_prefix() -> None:
    def script(fs: FileSystem) -> None:
        fs.create("/base/f")
        fs.fsync("/base/f")
        with pytest.raises(OSError):
            fs.write("/base/f", 0, b"0123456789")
        fs.fsync("/base/f")

    states = points(JOURNALED, script, fault=Fault(2, kind=FaultKind.SHORT_WRITE))[-1].states
    assert contents(states, "/base/f") == {b"01234"}


def test_lost_fsync_data_never_becomes_durable_through_a_retry() -> None:
    """fsyncgate: the failed fsync dropped the dirty pages; the retry succeeds."""

    def retried(fs: FileSystem) -> None:
        write_bytes(fs, "/base/f", b"data")
        with pytest.raises(OSError):
            fs.fsync("/base/f")
        fs.fsync("/base/f")
        fs.fsync_dir(BASE)

    fault = Fault(2, kind=FaultKind.FSYNC_LOST)
    result = points(JOURNALED, retried, fault=fault)
    assert result[-1].states[0].file("/base/f") == b""
    for point in result[3:]:
        assert b"data" not in contents(point.states, "/base/f")

    def rewritten(fs: FileSystem) -> None:
        retried(fs)
        fs.write("/base/f", 0, b"data")
        fs.fsync("/base/f")

    assert contents(points(JOURNALED, rewritten, fault=fault)[-1].states, "/base/f") == {b"data"}


def test_without_volatile_data_only_metadata_is_at_risk() -> None:
    model = dataclasses.replace(JOURNALED_REORDER, name="metadata-only", volatile_data=False)
    assert contents(final(model, save_without_fsync), "/base/main") == {b"payload", None}


# --- power loss: metadata ----------------------------------------------------------------


def test_metadata_persists_as_a_prefix_reaching_the_last_barrier() -> None:
    def script(fs: FileSystem) -> None:
        fs.mkdir("/base/a")
        fs.mkdir("/base/b")
        fs.fsync_dir(BASE)
        fs.mkdir("/base/c")
        fs.mkdir("/base/d")

    dirs = {s.dirs for s in final(JOURNALED, script)}
    prefix = ("/base", "/base/a", "/base/b")
    assert dirs == {prefix, (*prefix, "/base/c"), (*prefix, "/base/c", "/base/d")}


def test_the_r1_seed_both_main_and_bak_empty() -> None:
    """SPEC §8 R1 in miniature: two quick saves with a backup rename, no fsync."""

    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/tmp", b"v1")
        fs.rename("/base/tmp", "/base/main")
        write_bytes(fs, "/base/tmp", b"v2")
        fs.rename("/base/main", "/base/bak")
        fs.rename("/base/tmp", "/base/main")

    states = final(JOURNALED, script)
    assert (("/base/bak", b""), ("/base/main", b"")) in {s.files for s in states}


# --- reordering ------------------------------------------------------------------------


def two_renames(fs: FileSystem) -> None:
    fs.create("/base/a")
    fs.create("/base/b")
    fs.fsync_dir(BASE)
    fs.rename("/base/a", "/base/a2")
    fs.rename("/base/b", "/base/b2")
    fs.fsync("/base/b2")


def names(states: tuple[CrashState, ...]) -> set[tuple[str, ...]]:
    return {tuple(p for p, _ in s.files) for s in states}


def test_reorder_can_drop_an_unsynced_rename_and_keep_a_later_one() -> None:
    kept_later = ("/base/a", "/base/b2")
    assert kept_later in names(final(JOURNALED_REORDER, two_renames))
    assert kept_later not in names(final(JOURNALED, two_renames))
    assert names(final(JOURNALED, two_renames)) == {("/base/a2", "/base/b2")}


def test_reorder_never_keeps_an_operation_whose_create_was_dropped() -> None:
    def script(fs: FileSystem) -> None:
        fs.mkdir("/base/d")
        write_bytes(fs, "/base/d/x", b"SECRET")
        fs.fsync("/base/d/x")
        fs.rename("/base/d/x", "/base/d/y")
        fs.fsync_dir("/base/d")
        write_bytes(fs, "/base/z", b"other")
        fs.fsync("/base/z")

    states = final(JOURNALED_REORDER, script)
    assert ("/base/z",) in names(states)  # mkdir and everything under it dropped
    for state in states:
        for path, data in state.files:
            parent = posixpath.dirname(path)
            assert parent in (BASE, *state.dirs), state
            if data == b"SECRET":
                assert path in ("/base/d/x", "/base/d/y")


def test_after_fsync_dir_nothing_before_it_is_lost() -> None:
    def script(fs: FileSystem) -> None:
        for name in ("a", "b", "c"):
            write_bytes(fs, f"/base/{name}", name.encode())
            fs.fsync(f"/base/{name}")
        fs.rename("/base/a", "/base/a2")
        fs.unlink("/base/b")
        fs.fsync_dir(BASE)
        fs.create("/base/later")

    result = points(JOURNALED_REORDER, script)
    synced = (("/base/a2", b"a"), ("/base/c", b"c"))
    assert [s.files for s in result[-2].states] == [synced]
    assert {s.files for s in result[-1].states} == {synced, (*synced, ("/base/later", b""))}


def test_reorder_includes_every_power_loss_state() -> None:
    def script(fs: FileSystem) -> None:
        save_without_fsync(fs)
        fs.mkdir("/base/d")
        write_bytes(fs, "/base/d/f", b"f")

    initial, ops = record(script)
    plain = list(crash_points(JOURNALED, initial, ops))
    reordered = list(crash_points(JOURNALED_REORDER, initial, ops))
    assert any(len(r.states) > len(p.states) for p, r in zip(plain, reordered, strict=True))
    for p, r in zip(plain, reordered, strict=True):
        assert set(p.states) <= set(r.states)


def creates(count: int) -> Script:
    def script(fs: FileSystem) -> None:
        for i in range(count):
            fs.create(f"/base/f{i:02}")
        fs.fsync("/base/f00")

    return script


def test_reorder_is_exhaustive_up_to_sixteen_pending() -> None:
    """2**12 combinations of omitted creates: every subset of the names is a state."""
    model = dataclasses.replace(JOURNALED_REORDER, max_states=10**6)
    point = points(model, creates(12))[-1]
    assert point.cut == 0
    assert len(names(point.states)) == 2**12


def test_reorder_bound_counts_what_it_leaves_out() -> None:
    model = dataclasses.replace(JOURNALED_REORDER, max_states=10**6, reorder_bound=2)
    point = points(model, creates(12))[-1]
    got = names(point.states)
    assert not any(len(n) < 10 for n in got)
    assert len(got) == 1 + 12 + 66
    assert point.cut == 2**12 - (1 + 12 + 66)  # the creates are metadata only: no data
    single = dataclasses.replace(model, reorder_bound=1)
    assert not any(len(n) < 3 for n in names(points(single, creates(4))[-1].states))


def test_reorder_default_bound() -> None:
    assert reorder_bound(JOURNALED_REORDER, 16) == 16  # 2**16 combinations: exhaustive
    # sum(C(17, i) for i <= 8) == 2**16; sum(C(18, i) for i <= 7) == 63004
    assert reorder_bound(JOURNALED_REORDER, 17) == 8
    assert reorder_bound(JOURNALED_REORDER, 18) == 7
    assert reorder_bound(dataclasses.replace(JOURNALED_REORDER, reorder_bound=3), 18) == 3
    assert reorder_bound(dataclasses.replace(JOURNALED_REORDER, reorder_bound=30), 18) == 18


def test_reorder_beyond_the_limit_is_bounded_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_power, "REORDER_COMBINATIONS", 2**4)
    model = dataclasses.replace(JOURNALED_REORDER, max_states=10**6)
    point = points(model, creates(6))[-1]
    assert len(names(point.states)) == 1 + 6  # 2**6 > 2**4: at most one omitted
    assert point.cut == 2**6 - 7
    assert points(model, creates(4))[-1].cut == 0  # 2**4 combinations: exhaustive


# --- enumeration -----------------------------------------------------------------------


def many_files(fs: FileSystem) -> None:
    for i in range(4):
        write_bytes(fs, f"/base/f{i}", b"%d" % i * 5000)


def test_cut_is_reported_when_the_bound_is_reached() -> None:
    initial, ops = record(many_files)
    small = list(crash_points(dataclasses.replace(JOURNALED, max_states=5), initial, ops))
    large = list(crash_points(dataclasses.replace(JOURNALED, max_states=10**6), initial, ops))
    assert all(p.cut == 0 for p in large)
    assert large[-1].cut == 0 and len(large[-1].states) > 100
    for s, big in zip(small, large, strict=True):
        assert len(s.states) == min(5, len(big.states))
        assert s.states == big.states[: len(s.states)]  # the same order, cut short
        assert len(big.states) - len(s.states) <= s.cut  # nothing left out uncounted
        assert (s.cut > 0) == (len(big.states) > 5)


def test_the_fairest_states_come_first() -> None:
    """Every metadata prefix with all data whole, then with all data lost, then the rest."""
    initial, ops = record(many_files)
    point = list(crash_points(dataclasses.replace(JOURNALED, max_states=6), initial, ops))[-1]
    whole = volatile(initial, ops)[-1]
    assert point.states[0] == whole
    full = dict(whole.files)
    # the four creates persist as a prefix: 4, 3, 2, 1, 0 files, all data whole
    assert [len(s.files) for s in point.states[:5]] == [4, 3, 2, 1, 0]
    assert all(data == full[path] for s in point.states[:5] for path, data in s.files)
    assert point.states[5].files == tuple((p, b"") for p, _ in whole.files)  # all data lost
    assert point.cut > 0


def test_states_are_distinct() -> None:
    for model in (JOURNALED, JOURNALED_REORDER):
        for point in points(model, many_files):
            assert len(set(point.states)) == len(point.states)


def digests(model: PersistenceModel) -> list[list[str]]:
    initial, ops = record(many_files)
    return [[s.digest() for s in p.states] for p in crash_points(model, initial, ops)]


def test_enumeration_is_deterministic_across_hash_seeds() -> None:
    here = digests(JOURNALED_REORDER)
    assert here == digests(JOURNALED_REORDER)
    code = (
        "import sys, json; sys.path.insert(0, sys.argv[1]); import test_models as t; "
        "print(json.dumps(t.digests(t.JOURNALED_REORDER)))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, os.path.dirname(__file__)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == here


# --- the memory filesystem's durable layer ---------------------------------------------------


def test_memory_filesystem_logs_barriers_without_counting_them() -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    write_bytes(mem, "/base/f", b"x")
    mem.fsync("/base/f")
    mem.fsync_dir(BASE)
    assert mem.mutations == 2
    assert [(op.index, op.kind) for op in mem.log] == [
        (0, OpKind.CREATE),
        (1, OpKind.WRITE),
        (2, OpKind.FSYNC),
        (3, OpKind.FSYNC_DIR),
    ]
    with pytest.raises(FileNotFoundError):
        mem.fsync("/base/missing")
    assert len(mem.log) == 4
    assert mem.boot_state == CrashState((), ("/base",))


def test_durable_state_is_the_most_pessimistic_power_loss_state() -> None:
    mem = MemoryFileSystem(dirs=(BASE,))
    write_bytes(mem, "/base/f", b"v1")
    assert mem.durable_state() == mem.boot_state  # nothing committed yet
    mem.fsync("/base/f")
    assert mem.durable_state().files == (("/base/f", b"v1"),)
    mem.write("/base/f", 0, b"v2")
    write_bytes(mem, "/base/g", b"g")
    mem.fsync_dir(BASE)
    assert mem.durable_state().files == (("/base/f", b"v1"), ("/base/g", b""))
    assert mem.crash_state().files == (("/base/f", b"v2"), ("/base/g", b"g"))


# --- properties over random traces ---------------------------------------------------------

PATHS = ["/base/a", "/base/b", "/base/d/a", "/base/d/b"]
paths = st.sampled_from(PATHS)
calls = st.one_of(
    st.tuples(st.just("mkdir"), st.just("/base/d")),
    st.tuples(st.just("create"), paths),
    st.tuples(st.just("write"), paths, st.integers(0, 6), st.binary(min_size=1, max_size=6)),
    st.tuples(st.just("truncate"), paths, st.integers(0, 6)),
    st.tuples(st.just("rename"), paths, paths),
    st.tuples(st.just("unlink"), paths),
    st.tuples(st.just("fsync"), paths),
    st.tuples(st.just("fsync_dir"), st.sampled_from([BASE, "/base/d"])),
)


def run_calls(fs: FileSystem, script: list[tuple[object, ...]]) -> None:
    for name, *args in script:
        with contextlib.suppress(OSError):
            getattr(fs, str(name))(*args)


@settings(max_examples=60, deadline=None)
@given(st.lists(calls, max_size=12))
def test_properties_of_power_loss_states(script: list[tuple[object, ...]]) -> None:
    initial, ops = record(lambda fs: run_calls(fs, script))
    model = dataclasses.replace(JOURNALED, block_size=4, max_states=10**6)
    reorder = dataclasses.replace(model, name="r", reorder=True)
    seen = volatile(initial, ops)
    replay = MemoryFileSystem(initial)
    plain = list(crash_points(model, initial, ops))
    reordered = list(crash_points(reorder, initial, ops))
    for k, (p, r) in enumerate(zip(plain, reordered, strict=True)):
        assert p.cut == 0 and r.cut == 0
        assert len(set(p.states)) == len(p.states)
        assert p.states[0] == seen[k]  # nothing lost is always possible, and comes first
        assert replay.durable_state() in p.states
        assert set(p.states) <= set(r.states)
        for state in r.states:
            for path, _ in state.files:
                assert posixpath.dirname(path) in (BASE, *state.dirs)
        if k < len(ops):
            op = ops[k]
            if effective(op):
                replay.apply(op)

"""Issue 9, model fixes: partial writes under process-crash, journaled size changes and
both torn forms under power-loss, exhaustive or counted reordering (FAULT-MODEL.md §2-§3).

The reorder checks compare the model with an independent brute-force enumerator
written here: every subset of the pending operations, replayed inode by inode.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import posixpath
from collections.abc import Callable, Iterator

from crashpoint.core import FileStateStorage
from crashpoint.faultfs import (
    MODELS,
    PROCESS_CRASH,
    CrashState,
    FileSystem,
    Image,
    MemoryFileSystem,
    Op,
    OpKind,
    RecordingFileSystem,
    crash_points,
    effective,
    write_bytes,
)
from crashpoint.faultfs._power import JOURNALED, JOURNALED_REORDER
from crashpoint.scenarios import Target, Workload, explore
from crashpoint.scenarios.kinds.agent.catalogue import assistant, build_state, user
from crashpoint.scenarios.kinds.agent.workload import Session
from hypothesis import example, given, settings
from hypothesis import strategies as st

BASE = "/base"
PAGE = 4096


def record(script: Callable[[FileSystem], None]) -> tuple[CrashState, list[Op]]:
    mem = MemoryFileSystem(dirs=(BASE,))
    initial = mem.crash_state()
    fs = RecordingFileSystem(mem)
    script(fs)
    return initial, fs.trace.ops


def contents(states: tuple[CrashState, ...], path: str) -> list[bytes | None]:
    return [s.file(path) for s in states]


# --- process-crash: a killed write lands in whole pages ----------------------------------


def test_a_multi_page_write_lands_page_by_page_at_the_point_it_did_not_run() -> None:
    data = bytes(range(256)) * 40  # 10240 bytes: 3 pages
    initial, ops = record(lambda fs: write_bytes(fs, "/base/f", data))
    result = list(crash_points(PROCESS_CRASH, initial, ops))
    assert ops[1].kind is OpKind.WRITE
    # crash point 1: the create done, the write (ops[1]) did not complete
    assert result[1].op is ops[1]
    assert contents(result[1].states, "/base/f") == [b"", data[:4096], data[:8192]]
    assert [len(p.states) for p in result] == [1, 3, 1]
    assert all(p.cut == 0 for p in result)


def test_pages_are_aligned_on_file_offsets_and_keep_the_old_tail() -> None:
    old = b"o" * 12000

    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/f", old)
        fs.write("/base/f", 1000, b"n" * 8000)  # bytes 1000..8999: three pages

    initial, ops = record(script)
    point = list(crash_points(PROCESS_CRASH, initial, ops))[2]
    assert (
        contents(point.states, "/base/f")
        == [
            old,
            old[:1000] + b"n" * 3096 + old[4096:],  # up to the first page boundary
            old[:1000] + b"n" * 7192 + old[8192:],
        ]
    )


def test_a_write_within_one_page_is_atomic() -> None:
    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/f", b"x" * 100)
        fs.write("/base/f", 4000, b"y" * 96)  # ends exactly at the page boundary
        fs.write("/base/f", 5000, b"z" * 4096)  # one page long, across a boundary

    initial, ops = record(script)
    result = list(crash_points(PROCESS_CRASH, initial, ops))
    assert [len(p.states) for p in result] == [1, 1, 1, 2, 1]


def test_a_very_large_write_offers_first_last_and_a_seeded_sample() -> None:
    data = b"d" * (100 * PAGE)  # 99 page boundaries
    model = dataclasses.replace(PROCESS_CRASH, max_partial_writes=10)
    initial, ops = record(lambda fs: write_bytes(fs, "/base/f", data))
    point = list(crash_points(model, initial, ops))[1]
    sizes = [len(c or b"") for c in contents(point.states, "/base/f")]
    assert sizes[:2] == [0, PAGE] and sizes[-1] == 99 * PAGE
    assert len(sizes) == 11 and sizes == sorted(set(sizes))
    assert all(s % PAGE == 0 for s in sizes)
    assert point.cut == 99 - 10
    again = list(crash_points(model, initial, ops))[1]
    assert again.states == point.states  # the sample is seeded


class OverwriteInPlace(FileStateStorage):
    """After the first save, main is overwritten in place with one write (no tmp, no
    rename): fine if a write were atomic, broken by a kill in the middle of it."""

    def __init__(self, fs: FileSystem, base_dir: str) -> None:
        super().__init__(fs, base_dir, sync="full", ended_marker="scoped")

    def _commit(self, main: str, data: bytes) -> None:
        if not self.fs.exists(main):
            super()._commit(main, data)
            return
        self.fs.write(main, 0, data)
        self.fs.truncate(main, len(data))
        self.fs.fsync(main)
        self._clear_marker(main + ".ended")


def growing_saves(s: Session) -> None:
    history = [user("q" * 6000)]
    for i in range(3):
        history += [assistant(f"answer {i} " + "a" * 5000)]
        s.save(build_state(*history))


def test_a_storage_overwriting_main_with_one_large_write_is_caught() -> None:
    workload = Workload("growing-saves", "saves of a growing multi-page state", growing_saves)
    target = Target("test:overwrite-in-place", OverwriteInPlace, "overwrites main in place")
    result = explore(workload, model=PROCESS_CRASH, target=target)
    assert "R1" in result.killed_by()
    from crashpoint.scenarios import record as record_workload

    recording = record_workload(workload, target)
    prefix = {
        p.index: p.states[0] for p in crash_points(PROCESS_CRASH, recording.initial, recording.ops)
    }
    for v in result.counterexamples:
        op = recording.ops[v.crash_point]
        # caught only in a state where the large write landed in part
        assert op.kind is OpKind.WRITE and len(op.data) > PAGE
        assert v.state_digest != prefix[v.crash_point].digest()
    # the reference, which writes a tmp file and renames it, survives the same workload,
    # with its partial writes and both torn forms of multi-page files, under every model
    for model in MODELS.values():
        explore(workload, model=model, target="reference").assert_no_violations()


# --- power-loss: size changes are journaled in order ----------------------------------------


def test_a_later_write_never_extends_a_file_whose_truncation_was_lost() -> None:
    """Issue 9's false alarm: ``OLD`` then zeros up to the new size."""

    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/f", b"OLD")
        fs.fsync("/base/f")
        fs.create("/base/f")  # truncate to 0: metadata
        fs.write("/base/f", 0, b"NEW-AND-LONGER")

    initial, ops = record(script)
    got = set(contents(list(crash_points(JOURNALED, initial, ops))[-1].states, "/base/f"))
    assert b"OLD" + bytes(11) not in got
    assert got == {b"OLD", b"NEW-AND-LONGER", b"", bytes(14)}


def test_both_torn_forms_of_an_extending_write() -> None:
    data = bytes(range(1, 256)) * 40  # 10200 bytes, no zero byte
    initial, ops = record(lambda fs: write_bytes(fs, "/base/f", data))
    got = set(contents(list(crash_points(JOURNALED, initial, ops))[-1].states, "/base/f"))
    for p in (PAGE, 2 * PAGE):
        assert data[:p] in got  # ext4 delayed allocation: size advanced with the data
        assert data[:p] + bytes(len(data) - p) in got  # XFS: whole size, the rest zero


# --- properties over generated traces -------------------------------------------------------

PATHS = ["/base/a", "/base/b", "/base/d/a"]
paths = st.sampled_from(PATHS)
calls = st.one_of(
    st.tuples(st.just("mkdir"), st.just("/base/d")),
    st.tuples(st.just("create"), paths),
    st.tuples(st.just("write"), paths, st.integers(0, 6), st.binary(min_size=1, max_size=9)),
    st.tuples(st.just("truncate"), paths, st.integers(0, 9)),
    st.tuples(st.just("rename"), paths, paths),
    st.tuples(st.just("unlink"), paths),
    st.tuples(st.just("fsync"), paths),
    st.tuples(st.just("fsync_dir"), st.sampled_from([BASE, "/base/d"])),
)


def run_calls(fs: FileSystem, script: list[tuple[object, ...]]) -> None:
    for name, *args in script:
        with contextlib.suppress(OSError):
            getattr(fs, str(name))(*args)


@dataclasses.dataclass
class MetaOp:
    """A metadata operation of the trace as the brute force sees it."""

    index: int  # position in the trace
    kind: str  # mkdir, new, trunc, rename, unlink
    path: str
    inode: int
    dst: str = ""
    size: int = 0
    deps: frozenset[int] = frozenset()  # metadata positions that created its names
    waits: set[str] = dataclasses.field(default_factory=set)  # what must be fsynced


class Brute:
    """An independent reading of FAULT-MODEL.md §3 for one crash point: the trace is
    replayed on inodes; every choice is replayed from scratch."""

    def __init__(self, initial: CrashState, ops: list[Op]) -> None:
        image = Image.from_crash_state(initial)
        self.initial = image.copy()
        self.meta: list[MetaOp] = []
        self.writes: list[tuple[int, int, int, bytes, int]] = []  # index, inode, off, data, q
        self.committed = 0
        self.history: list[dict[int, int]] = []  # sizes of every inode, before each op
        creator: dict[str, int] = {}
        for op in ops:
            self.history.append({i: len(d) for i, d in image.data.items()})
            if not effective(op):
                continue
            kind = op.kind
            position = len(self.meta)
            if kind is OpKind.WRITE:
                self.writes.append((op.index, image.names[op.path], op.offset, op.data, position))
            elif kind is OpKind.FSYNC:
                inode = image.names.get(op.path)
                for m in self.meta:
                    m.waits.discard(f"inode {inode}")
                self.committed = position
            elif kind is OpKind.FSYNC_DIR:
                for m in self.meta:
                    m.waits.discard(op.path)
                self.committed = position
            else:
                parent = posixpath.dirname(op.path)
                dst = op.dst or ""
                if kind is OpKind.MKDIR:
                    m = MetaOp(op.index, "mkdir", op.path, 0, waits={parent})
                    used = [parent]
                elif kind is OpKind.CREATE and op.path not in image.names:
                    m = MetaOp(op.index, "new", op.path, image.next_inode, waits={parent})
                    used = [parent]
                elif kind in (OpKind.CREATE, OpKind.TRUNCATE):
                    inode = image.names[op.path]
                    m = MetaOp(op.index, "trunc", op.path, inode, size=op.size)
                    m.waits = {f"inode {inode}"}
                    used = [op.path]
                elif kind is OpKind.RENAME:
                    m = MetaOp(op.index, "rename", op.path, image.names[op.path], dst=dst)
                    m.waits = {parent, posixpath.dirname(dst)}
                    used = [op.path, posixpath.dirname(dst)]
                else:
                    m = MetaOp(op.index, "unlink", op.path, image.names[op.path], waits={parent})
                    used = [op.path]
                m.deps = frozenset(creator[n] for n in used if n in creator)
                if m.kind == "rename":
                    creator.pop(op.path, None)
                    creator[dst] = position
                elif m.kind == "unlink":
                    creator.pop(op.path, None)
                elif m.kind in ("mkdir", "new"):
                    creator[op.path] = position
                self.meta.append(m)
            image.apply(op)
        self.history.append({i: len(d) for i, d in image.data.items()})
        self.pending = [i for i, m in enumerate(self.meta) if m.waits]

    def closure(self, omitted: set[int]) -> set[int]:
        dropped = set(omitted)
        for i, m in enumerate(self.meta):
            if m.deps & dropped:
                dropped.add(i)
        return dropped

    def state(
        self, kept: Callable[[int], bool], write_kept: Callable[[int, int], bool]
    ) -> CrashState:
        """Replay the metadata positions ``kept`` and the writes ``write_kept(q, inode)``."""
        names = dict(self.initial.names)
        data = dict(self.initial.data)
        dirs = set(self.initial.dirs)
        events: list[tuple[int, int, object]] = [(m.index, 0, i) for i, m in enumerate(self.meta)]
        events += [(w[0], 1, w) for w in self.writes]
        for _, what, item in sorted(events, key=lambda e: e[0]):
            if what == 1:
                _, inode, offset, chunk, q = item  # type: ignore[misc]
                if write_kept(q, inode):
                    old = data.get(inode, b"")
                    old += bytes(max(0, offset - len(old)))
                    data[inode] = old[:offset] + chunk + old[offset + len(chunk) :]
                continue
            assert isinstance(item, int)
            if not kept(item):
                continue
            m = self.meta[item]
            if m.kind == "mkdir":
                dirs.add(m.path)
            elif m.kind == "new":
                names[m.path] = m.inode
                data[m.inode] = b""
            elif m.kind == "trunc":
                old = data.get(m.inode, b"")
                data[m.inode] = old[: m.size] + bytes(max(0, m.size - len(old)))
            elif m.kind == "rename":
                if names.get(m.path) == m.inode:
                    del names[m.path]
                names[m.dst] = m.inode
            elif names.get(m.path) == m.inode:
                del names[m.path]
        files = tuple(sorted((p, data.get(i, b"")) for p, i in names.items()))
        return CrashState(files, tuple(sorted(dirs - {"/"})))

    def name_map(self, c: int) -> dict[str, int]:
        """path -> inode after the metadata prefix ``c``."""
        names = dict(self.initial.names)
        for m in self.meta[:c]:
            if m.kind == "new":
                names[m.path] = m.inode
            elif m.kind == "rename":
                if names.get(m.path) == m.inode:
                    del names[m.path]
                names[m.dst] = m.inode
            elif m.kind == "unlink" and names.get(m.path) == m.inode:
                del names[m.path]
        return names

    def prefix_states(self) -> Iterator[CrashState]:
        for c in range(self.committed, len(self.meta) + 1):
            yield self.state(lambda i, c=c: i < c, lambda q, _inode, c=c: q <= c)

    def omission_state(self, omitted: set[int]) -> CrashState:
        dropped = self.closure(omitted)
        lost_truncs = {(self.meta[i].inode, i) for i in dropped if self.meta[i].kind == "trunc"}

        def write_kept(q: int, inode: int) -> bool:
            # a write after a lost truncation of its own file is lost with it
            return not any(ino == inode and t < q for ino, t in lost_truncs)

        return self.state(lambda i: i not in dropped, write_kept)

    def subsets(self) -> Iterator[set[int]]:
        for size in range(len(self.pending) + 1):
            for combo in itertools.combinations(self.pending, size):
                yield set(combo)


METADATA_ONLY = dataclasses.replace(
    JOURNALED_REORDER, name="metadata-only", volatile_data=False, max_states=10**6
)


PENDING_EXAMPLE = [
    ("mkdir", "/base/d"),
    ("create", "/base/a"),
    ("create", "/base/b"),
    ("create", "/base/d/a"),
    ("fsync", "/base/b"),
    ("truncate", "/base/a", 3),
    ("write", "/base/a", 0, b"xyz"),
    ("rename", "/base/b", "/base/d/b"),
]


@settings(max_examples=80, deadline=None)
@example(PENDING_EXAMPLE, 1)
@example(PENDING_EXAMPLE, 2)
@given(st.lists(calls, max_size=12), st.integers(0, 4))
def test_reorder_matches_a_brute_force_enumeration(
    script: list[tuple[object, ...]], bound: int
) -> None:
    initial, ops = record(lambda fs: run_calls(fs, script))
    brute = Brute(initial, ops)
    assert len(brute.pending) <= 12
    everything = set(brute.prefix_states())
    # An in-order prefix loses the writes issued after it; an omission keeps them, so a
    # prefix never stands for an omission set: every set over the bound is left out.
    left_out = 0
    for omitted in brute.subsets():
        everything.add(brute.omission_state(omitted))
        if len(omitted) > bound:
            left_out += 1
    exhaustive = list(crash_points(METADATA_ONLY, initial, ops))[-1]
    assert exhaustive.cut == 0
    assert set(exhaustive.states) == everything
    bounded = list(
        crash_points(dataclasses.replace(METADATA_ONLY, reorder_bound=bound), initial, ops)
    )[-1]
    assert bounded.cut == left_out  # every combination the bound left out, counted
    assert set(bounded.states) <= everything
    assert len(everything - set(bounded.states)) <= bounded.cut


@settings(max_examples=60, deadline=None)
@given(st.lists(calls, max_size=12), st.integers(0, 2))
def test_a_bounded_reorder_counts_at_least_the_states_it_misses(
    script: list[tuple[object, ...]], bound: int
) -> None:
    initial, ops = record(lambda fs: run_calls(fs, script))
    model = dataclasses.replace(JOURNALED_REORDER, block_size=4, max_states=10**6)
    full = list(crash_points(model, initial, ops))
    bounded = list(crash_points(dataclasses.replace(model, reorder_bound=bound), initial, ops))
    for f, b in zip(full, bounded, strict=True):
        assert f.cut == 0
        assert set(b.states) <= set(f.states)
        assert len(set(f.states) - set(b.states)) <= b.cut
        if b.cut == 0:
            assert b.states == f.states


@settings(max_examples=80, deadline=None)
@given(st.lists(calls, max_size=12))
def test_no_power_loss_state_keeps_a_size_change_whose_earlier_metadata_was_lost(
    script: list[tuple[object, ...]],
) -> None:
    """Every state has the names of some metadata prefix ``c`` reaching the last
    barrier, and no file in it is longer than its inode ever was before metadata
    operation ``c`` (the first lost one) was issued."""
    initial, ops = record(lambda fs: run_calls(fs, script))
    model = dataclasses.replace(JOURNALED, block_size=4, max_states=10**6)
    for point in crash_points(model, initial, ops):
        brute = Brute(initial, ops[: point.index])
        prefixes = []
        for c in range(brute.committed, len(brute.meta) + 1):
            issued = brute.meta[c].index if c < len(brute.meta) else point.index
            largest: dict[int, int] = {}
            for sizes in brute.history[: issued + 1]:
                for inode, size in sizes.items():
                    largest[inode] = max(largest.get(inode, 0), size)
            names = brute.state(lambda i, c=c: i < c, lambda q, _i: False)
            prefixes.append((names, brute.name_map(c), largest))
        for state in point.states:
            assert any(
                tuple(p for p, _ in state.files) == tuple(p for p, _ in names.files)
                and state.dirs == names.dirs
                and all(len(data) <= largest.get(inodes[path], 0) for path, data in state.files)
                for names, inodes, largest in prefixes
            ), state


@settings(max_examples=40, deadline=None)
@given(
    st.integers(1, 6),  # block size
    st.binary(max_size=10),  # synced content
    st.binary(min_size=1, max_size=30).filter(lambda b: 0 not in b),  # the appended data
)
def test_both_torn_forms_appear(block: int, synced: bytes, data: bytes) -> None:
    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/f", synced)
        fs.fsync("/base/f")
        fs.write("/base/f", len(synced), data)

    initial, ops = record(script)
    model = dataclasses.replace(JOURNALED, block_size=block, max_states=10**6)
    got = set(contents(list(crash_points(model, initial, ops))[-1].states, "/base/f"))
    whole = synced + data
    for p in range(block, len(whole), block):
        if p > len(synced):
            assert whole[:p] in got  # size advanced as far as the persisted blocks
            assert whole[:p] + bytes(len(whole) - p) in got  # whole size, rest zero

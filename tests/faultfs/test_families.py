"""Model families as registered values (issue 19): one registry, dispatch through the
family, ``durable_at`` as the one answer to "what is durable at crash point k"."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import pathlib
import posixpath
from collections.abc import Callable, Sequence

import pytest
from crashpoint import faultfs
from crashpoint.faultfs import (
    FAMILIES,
    MODELS,
    PROCESS_CRASH,
    CrashPoint,
    CrashState,
    FileSystem,
    MemoryFileSystem,
    Op,
    OpKind,
    PersistenceModel,
    RecordingFileSystem,
    crash_points,
    durable_at,
    get_family,
    register_family,
    write_bytes,
)
from crashpoint.faultfs._power import JOURNALED, JOURNALED_REORDER
from hypothesis import given, settings
from hypothesis import strategies as st

BASE = "/base"
FAULTFS = pathlib.Path(faultfs.__file__).parent


def record(script: Callable[[FileSystem], None]) -> tuple[CrashState, list[Op]]:
    mem = MemoryFileSystem(dirs=(BASE,))
    initial = mem.crash_state()
    fs = RecordingFileSystem(mem)
    script(fs)
    return initial, fs.trace.ops


def test_every_named_model_names_a_registered_family() -> None:
    assert {m.family for m in MODELS.values()} <= set(FAMILIES)
    assert get_family(PROCESS_CRASH.family).name == "process-crash"
    assert get_family(JOURNALED.family) is get_family(JOURNALED_REORDER.family)
    with pytest.raises(KeyError, match="known: process-crash"):
        get_family("ntfs")


def test_crash_points_asks_the_models_family() -> None:
    calls: list[tuple[str, int]] = []

    @dataclasses.dataclass(frozen=True)
    class Everything:
        """A toy family: each crash point's one state is the initial disk."""

        name: str = "toy-nothing-survives"

        def crash_points(
            self, model: PersistenceModel, initial: CrashState, ops: object, points: object
        ) -> list[CrashPoint]:
            assert isinstance(ops, list)
            calls.append((model.name, len(ops)))
            return [CrashPoint(k, None, (initial,)) for k in range(len(ops) + 1)]

        def durable(self, model: PersistenceModel, ops: object, k: int) -> list[bool]:
            return [False] * k

    family = Everything()
    register_family(family)
    try:
        assert get_family(family.name) is family
        with pytest.raises(ValueError, match="already registered"):
            register_family(Everything())  # another object under the same name
        model = PersistenceModel("toy", family=family.name)
        initial, ops = record(lambda fs: write_bytes(fs, "/base/f", b"x"))
        got = list(crash_points(model, initial, ops))
        assert calls == [("toy", 2)]
        assert [p.states for p in got] == [(initial,)] * 3
        assert durable_at(model, ops, 2) == [False, False]
    finally:
        del FAMILIES[family.name]


def test_a_family_refuses_parameters_it_does_not_implement() -> None:
    initial, ops = record(lambda fs: write_bytes(fs, "/base/f", b"x"))
    wrong = dataclasses.replace(JOURNALED, family=PROCESS_CRASH.family)
    with pytest.raises(ValueError, match="process-crash"):
        list(crash_points(wrong, initial, ops))
    with pytest.raises(KeyError, match="unknown model family"):
        crash_points(dataclasses.replace(JOURNALED, family="zfs"), initial, ops)


def _imports(path: pathlib.Path) -> tuple[set[str], list[int]]:
    """The faultfs modules ``path`` imports at module level, and the lines of imports
    inside functions."""
    tree = ast.parse(path.read_text())
    top = {
        node.module or ""
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1
    }
    nested = [
        inner.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for inner in ast.walk(node)
        if isinstance(inner, ast.Import | ast.ImportFrom)
    ]
    return top, nested


def test_the_families_import_down_the_stack_only() -> None:
    """``_family`` at the bottom, the families on it, ``_models`` (the registry) on top:
    no family imports the registry, and no import hides inside a function."""
    for name in ("_family", "_process", "_power", "_models"):
        top, nested = _imports(FAULTFS / f"{name}.py")
        assert nested == [], f"{name}: imports inside functions at lines {nested}"
        if name != "_models":
            assert "_models" not in top, name
    assert "_power" not in _imports(FAULTFS / "_family.py")[0]
    assert "_process" not in _imports(FAULTFS / "_power.py")[0]


# --- durable_at agrees with what explain derived on its own ------------------------------

PATHS = ["/base/a", "/base/b", "/base/d/a"]
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


@settings(max_examples=80, deadline=None)
@given(st.lists(calls, max_size=12), st.integers(0, 12))
def test_durable_at_is_what_explain_derives(script: list[tuple[object, ...]], k: int) -> None:
    def run(fs: FileSystem) -> None:
        for name, *args in script:
            with contextlib.suppress(OSError):
                getattr(fs, str(name))(*args)

    _, ops = record(run)
    k = min(k, len(ops))
    for model in (PROCESS_CRASH, JOURNALED, JOURNALED_REORDER):  # the oracle's three models
        got = durable_at(model, ops, k)
        assert len(got) == k
        assert got == _durable(model, ops, k), model.name


def test_durable_at_under_power_loss() -> None:
    def script(fs: FileSystem) -> None:
        write_bytes(fs, "/base/t", b"new")  # create 0, write 1
        fs.fsync("/base/t")  # 2
        fs.rename("/base/t", "/base/m")  # 3
        write_bytes(fs, "/base/u", b"u")  # create 4, write 5

    _, ops = record(script)
    assert durable_at(PROCESS_CRASH, ops, 6) == [True] * 6
    assert durable_at(JOURNALED, ops, 6) == [True, True, True, False, False, False]
    assert durable_at(JOURNALED_REORDER, ops, 6) == [False, True, True, False, False, False]
    assert durable_at(JOURNALED, ops, 2) == [False, False]  # no barrier ran yet


def _durable(model: PersistenceModel, ops: Sequence[Op], k: int) -> list[bool]:
    """The rules explain derived itself before it asked the family (kept here as an
    independent oracle): process-crash every completed operation; power loss: data
    fsynced since, metadata before the last barrier; reorder: a directory operation only
    after an fsync of its parent, a truncation after an fsync of its file."""
    done = ops[:k]
    if not model.volatile_data and not model.reorder:
        return [True] * len(done)
    out: list[bool] = []
    for i, op in enumerate(done):
        later = done[i + 1 :]
        if op.kind.barrier:
            out.append(op.errno is None)
            continue
        if op.kind is OpKind.WRITE:
            path = op.path
            durable = False
            for nxt in later:
                if nxt.kind is OpKind.FSYNC and nxt.path == path and nxt.errno is None:
                    durable = True
                    break
                if nxt.kind is OpKind.RENAME and nxt.path == path and nxt.dst:
                    path = nxt.dst  # data belongs to the inode and moves with it
            out.append(durable)
            continue
        if model.reorder:
            parents = {posixpath.dirname(op.path)}
            if op.dst:
                parents.add(posixpath.dirname(op.dst))
            if op.kind is OpKind.TRUNCATE:
                durable = any(n.kind is OpKind.FSYNC and n.path == op.path for n in later)
            else:
                durable = all(
                    any(n.kind is OpKind.FSYNC_DIR and n.path == p for n in later) for p in parents
                )
            out.append(durable)
        else:
            out.append(any(n.kind.barrier and n.errno is None for n in later))
    return out

"""The checker's memos (issue 11) change no verdict: a load is given what it gave
before only when it read the same, digests are the states' own, and a refused
session id is refused the same way every time."""

from __future__ import annotations

import pytest
from crashpoint.core import FileStateStorage, StateError, safe_session_file_name
from crashpoint.core._ids import session_file_stem
from crashpoint.faultfs import CrashState, MemoryFileSystem
from crashpoint.scenarios import SCENARIOS, TARGETS, Target, explore
from crashpoint.scenarios.engine.explore import FileDigests as _FileDigests
from crashpoint.scenarios.kinds.agent import kind as explore_module
from crashpoint.scenarios.kinds.agent.checkers import Observation
from crashpoint.scenarios.kinds.agent.kind import _Loaded, _LoadMemo, _TracingFS

STORAGE = [name for name, w in SCENARIOS.items() if "storage" in w.tags]


def _findings(target: str | Target, model: str) -> list[tuple[object, ...]]:
    out: list[tuple[object, ...]] = []
    for name in STORAGE:
        r = explore(SCENARIOS[name], model=model, target=target)
        out.append((name, r.raw_states, r.distinct_states, sorted(r.state_ids)))
        out.extend((name, v.render(), v.state_digest) for v in r.counterexamples)
    return out


@pytest.mark.parametrize("model", ["process-crash", "power-loss"])
@pytest.mark.parametrize("target", ["reference", "seed"])
def test_the_load_memo_changes_no_finding(
    target: str, model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    hits: list[object] = []
    find = _LoadMemo.find

    def counted(self: _LoadMemo, *args: object) -> object:
        found = find(self, *args)  # type: ignore[arg-type]
        hits.append(found is not None)
        return found

    monkeypatch.setattr(_LoadMemo, "find", counted)
    remembered = _findings(target, model)
    assert any(hits), "the memo was never used"
    monkeypatch.setattr(_LoadMemo, "config", lambda self, storage, fs: None)
    assert _findings(target, model) == remembered
    if target == "seed":
        assert any(len(f) == 3 for f in remembered)  # the seed's findings are compared


def test_a_storage_over_another_filesystem_is_not_memoised() -> None:
    """A target that wraps the filesystem it is given is explored by real loads, and
    finds what the reference target finds."""

    class Passing:
        def __init__(self, fs: MemoryFileSystem) -> None:
            self.fs = fs

        def __getattr__(self, name: str) -> object:
            return getattr(self.fs, name)

    wrapped = Target(
        "wrapped",
        lambda fs, base: FileStateStorage(Passing(fs), base),  # type: ignore[arg-type]
        "the reference over a pass-through filesystem",
    )
    plain = explore(SCENARIOS["three-saves"], model="power-loss", target="reference")
    other = explore(SCENARIOS["three-saves"], model="power-loss", target=wrapped)
    assert other.state_ids == plain.state_ids
    assert [v.render() for v in other.counterexamples] == []


def test_a_storage_the_memo_does_not_apply_to_loads_over_the_probe_filesystem() -> None:
    """The first probe builds the target over the tracer to learn whether the memo
    applies; a storage it does not apply to is built again over the probe's own
    MemoryFileSystem before it loads (as --exec's storage needs: it materialises that
    filesystem's crash state)."""
    given: list[type] = []

    class Checking(FileStateStorage):
        def load(self, session_id: str) -> object:  # type: ignore[override]
            given.append(type(self.fs))
            if not isinstance(self.fs, MemoryFileSystem):
                raise TypeError(f"not the model's filesystem: {type(self.fs).__name__}")
            return super().load(session_id)

    checking = Target("checking", Checking, "the reference, asking what it was given")
    plain = explore(SCENARIOS["three-saves"], model="power-loss", target="reference")
    other = explore(SCENARIOS["three-saves"], model="power-loss", target=checking)
    assert given and set(given) == {MemoryFileSystem}
    assert other.state_ids == plain.state_ids
    assert [v.render() for v in other.counterexamples] == []


def _state(main: bytes | None, tmp: bytes = b"") -> CrashState:
    files = [("/data/s1.json.tmp", tmp)]
    if main is not None:
        files.insert(0, ("/data/s1.json", main))
    return CrashState(tuple(files), ("/data",))


def _traced_load(memo: _LoadMemo, state: CrashState) -> tuple[object, _TracingFS, Observation]:
    fs = MemoryFileSystem(state)
    storage = FileStateStorage(fs, "/data")
    config = memo.config(storage, fs)
    assert config is not None
    tracer = memo.trace(storage, fs)
    assert storage.fs is tracer
    try:
        got = Observation(state=storage.load("s1"))
    except StateError as exc:
        got = Observation(code=exc.code, detail=exc.message)
    return config, tracer, got


def test_a_load_is_remembered_by_what_it_read_only() -> None:
    memo = _LoadMemo(_FileDigests().file)
    config, tracer, got = _traced_load(memo, _state(b"garbage", tmp=b"one"))
    assert [(read.__name__, path) for read, path, _ in tracer.log] == [
        ("exists", "/data/s1.json"),
        ("read", "/data/s1.json"),
        ("exists", "/data/s1.json.bak"),
    ]
    loaded = _Loaded(got)
    memo.add(config, "s1", tracer.log, loaded)
    # the tmp file is never read: another tmp gives the same load
    assert memo.find(MemoryFileSystem(_state(b"garbage", tmp=b"two")), config, "s1") is loaded
    # another main, or none, is another load
    assert memo.find(MemoryFileSystem(_state(b"garbagE")), config, "s1") is None
    assert memo.find(MemoryFileSystem(_state(None)), config, "s1") is None
    assert memo.find(MemoryFileSystem(_state(b"garbage")), config, "s2") is None
    assert not memo.off


def test_a_load_that_reads_otherwise_after_the_same_answers_turns_the_memo_off() -> None:
    memo = _LoadMemo(_FileDigests().file)
    config, tracer, got = _traced_load(memo, _state(None))
    memo.add(config, "s1", tracer.log, _Loaded(got))
    memo.add(config, "s1", [(MemoryFileSystem.read, "/data/s1.json", ("raised", ()))], _Loaded(got))
    assert memo.off


def test_the_memo_applies_to_a_file_storage_exactly_over_the_probe_filesystem() -> None:
    memo = _LoadMemo(_FileDigests().file)
    fs = MemoryFileSystem(dirs=("/data",))

    class Sub(FileStateStorage):
        pass

    assert memo.config(Sub(fs, "/data"), fs) is None
    assert memo.off
    memo = _LoadMemo(_FileDigests().file)
    assert memo.config(FileStateStorage(MemoryFileSystem(), "/data"), fs) is None  # not fs
    assert memo.off
    memo = _LoadMemo(_FileDigests().file)
    fs.create("/data/a")  # the target wrote while building its storage
    assert memo.config(FileStateStorage(fs, "/data"), fs) is None
    assert memo.off
    memo = _LoadMemo(_FileDigests().file)
    assert memo.config(FileStateStorage(MemoryFileSystem(), "/data"), MemoryFileSystem()) is None


def test_writes_and_calls_past_the_protocol_taint_a_traced_filesystem() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    tracer = _TracingFS(fs, _FileDigests().file)
    assert tracer.exists("/data/a") is False
    assert not tracer.tainted
    tracer.create("/data/a")
    assert tracer.tainted and fs.exists("/data/a")
    other = _TracingFS(fs, _FileDigests().file)
    assert other.mutations == 1
    assert other.tainted
    with pytest.raises(FileNotFoundError):
        other.read("/data/b")
    assert other.log[-1][0] is MemoryFileSystem.read


def test_builtin_targets_are_the_ones_whose_c1_is_known_once() -> None:
    assert explore_module._REFERENCE is TARGETS["reference"]
    assert explore_module._SEED is TARGETS["seed"]


def test_state_digests_are_the_states_own() -> None:
    digests = _FileDigests()
    a = _state(b"x" * 100, tmp=b"t")
    same = CrashState(tuple(a.files), tuple(a.dirs))
    b = _state(b"x" * 100, tmp=b"u")
    assert digests.state(a) == a.digest()
    assert digests.state(same) == a.digest()
    assert digests.state(b) == b.digest() != a.digest()
    listed = CrashState(list(a.files), a.dirs)  # type: ignore[arg-type]
    assert digests.state(listed) == a.digest()  # not hashable: computed, not kept


def test_a_refused_session_id_is_refused_the_same_way_each_time() -> None:
    errors = []
    for _ in range(2):
        with pytest.raises(StateError) as info:
            safe_session_file_name("../x")
        errors.append((info.value.code, info.value.message, info.value.layer))
    assert errors[0] == errors[1]
    assert errors[0][0] == "invalid_session_id"
    assert session_file_stem("../x") is None
    assert session_file_stem("a b") == "a_b" == safe_session_file_name("a b")
    assert session_file_stem("") is None


def test_a_reboot_knows_the_disk_it_booted_from_after_writing() -> None:
    state = CrashState((("/data/b", b"2"), ("/data/a", b"1")), ("/data",))  # unsorted
    fs = MemoryFileSystem(state)
    fs.write("/data/a", 0, b"9")
    fs.unlink("/data/b")
    assert fs.boot_state == CrashState((("/data/a", b"1"), ("/data/b", b"2")), ("/data",))
    assert MemoryFileSystem(state).boot_state == fs.boot_state


@pytest.mark.parametrize("options", [{"crash_point": 999}, {"crash_point": -3}, {"checker": []}])
def test_an_exploration_that_verified_nothing_does_not_pass(options: dict[str, object]) -> None:
    # the seed loses data under power-loss; a restriction that examines nothing must not
    # turn that into a pass (never a false green)
    result = explore(SCENARIOS["three-saves"], model="power-loss", target="seed", **options)  # type: ignore[arg-type]
    assert not result.counterexamples
    with pytest.raises(AssertionError, match="nothing"):
        result.assert_no_violations()

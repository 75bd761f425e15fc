"""Issue: power loss, torn writes, reordering, injected errors, and the mutant zoo."""

from __future__ import annotations

import contextlib
import errno
import json
import pathlib

import pytest
from crashpoint._cli import main
from crashpoint.core import AgentState, FileStateStorage
from crashpoint.faultfs import (
    MODELS,
    POWER_LOSS,
    PROCESS_CRASH,
    Fault,
    FaultKind,
    MemoryFileSystem,
    RecordingFileSystem,
    SimulatedCrash,
    crash_points,
    parse_models,
)
from crashpoint.scenarios import (
    FAULT_COLUMN,
    MUTANTS,
    SCENARIOS,
    TARGETS,
    Target,
    explore,
    explore_faults,
    fault_plan,
    kill_matrix,
    parse_fault,
)
from crashpoint.scenarios.jobs.zoo import ZOO_MODELS
from crashpoint.scenarios.kinds.agent.catalogue import build_state, user


@pytest.mark.parametrize("model", list(MODELS))
def test_reference_passes_every_scenario_under_every_model(model: str) -> None:
    """Issue 20, acceptance 6: nothing the reference acknowledges is lost under any family,
    and the claim is over every crash state (no bound cut any)."""
    for w in SCENARIOS.values():
        result = explore(w, model=MODELS[model], target=TARGETS["reference"])
        result.assert_no_violations()
        assert result.exhaustive, (w.name, result.cut)


def test_model_all_is_process_crash_and_every_file_system_family() -> None:
    """Issue 20, What to build 1: ``--model all`` is process-crash plus the four families."""
    models = parse_models("all")
    assert [m.name for m in models] == ["process-crash", "ext4", "xfs", "btrfs", "posix"]
    assert [m.family for m in models] == ["process-crash", "ext4", "xfs", "btrfs", "posix"]


@pytest.mark.parametrize("model", ["ext4", "xfs", "btrfs", "posix"])
def test_seed_under_every_family_brings_back_a_state_older_than_the_one_deleted(
    model: str,
) -> None:
    """Issue 20, acceptance 6 (the seed's findings per family): the seed's delete unlinks main
    with nothing fsynced, so a power cut inside it can leave bak's older save as the session:
    D1 (SPEC §8) under every family, never under process-crash (the page cache survives)."""
    result = explore(SCENARIOS["delete"], model=MODELS[model], target=TARGETS["seed"])
    older = [c for c in result.counterexamples if c.invariant == "D1"]
    assert older, result.killed_by()
    first = min(older, key=lambda c: c.crash_point)
    assert first.crash_state["s1.json"] == "absent"
    assert first.crash_state["s1.json.bak"].startswith("valid")
    assert result.exhaustive or model == "posix"
    calm = explore(SCENARIOS["delete"], model=PROCESS_CRASH, target=TARGETS["seed"])
    assert "D1" not in calm.killed_by()


@pytest.mark.parametrize("model", list(MODELS))
def test_reference_passes_every_fault_under_every_model(model: str) -> None:
    runs = 0
    for w in SCENARIOS.values():
        result = explore_faults(w, model=MODELS[model], target=TARGETS["reference"])
        result.assert_no_violations()
        assert result.exhaustive, (w.name, result.cut)
        runs += result.faults
    assert runs > 100


def test_seed_under_power_loss_loses_both_main_and_bak() -> None:
    """SPEC §8: two quick saves, a power cut, main and bak both empty: state_corrupt (R1)."""
    result = explore(SCENARIOS["two-quick-saves"], model=POWER_LOSS, target=TARGETS["seed"])
    assert "R1" in result.killed_by()
    both_lost = [
        v
        for v in result.counterexamples
        if v.crash_state["s1.json"] in ("empty",) or v.crash_state["s1.json"].startswith("zero")
        if v.crash_state["s1.json.bak"] in ("empty",)
        or v.crash_state["s1.json.bak"].startswith("zero")
    ]
    assert both_lost, [v.crash_state for v in result.counterexamples]
    v = min(both_lost, key=lambda v: v.crash_point)
    assert v.invariant == "R1"
    assert v.got.startswith("error state_corrupt")
    # after the second save was acknowledged: nothing was fsynced, all data can be lost
    assert v.crash_point == result.operations
    assert explore(SCENARIOS["two-quick-saves"], model=POWER_LOSS).ok


def test_seed_cli_power_loss_exits_1(tmp_path: pathlib.Path) -> None:
    code = main(["explore", "--target", "seed", "--model", "power-loss", "--out", str(tmp_path)])
    assert code == 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["model"] == "power-loss"
    assert "R1" in {i for s in report["scenarios"] for i in s["killed_by"]}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_each_mutant_is_killed_by_its_expected_invariant_under_its_model(name: str) -> None:
    target = MUTANTS[name]
    assert target.expected is not None and target.description, "each mutant says what bug it is"
    invariant, column = target.expected
    models = [] if column == FAULT_COLUMN else [MODELS[column]]
    rows, _ = kill_matrix(targets=[target], models=models, faults=column == FAULT_COLUMN)
    assert invariant in rows[0].killed[column], rows[0].killed
    assert rows[0].verdict == "killed"


def test_zoo_cli_exits_0_and_writes_the_matrix(tmp_path: pathlib.Path) -> None:
    assert main(["explore", "--zoo", "--out", str(tmp_path)]) == 0
    zoo = json.loads((tmp_path / "report.json").read_text())["zoo"]
    assert zoo["ok"] is True
    # issue 20: the zoo explores process-crash, ext4 and posix by default
    assert zoo["models"] == ["process-crash", "ext4", "posix", FAULT_COLUMN]
    assert [m.name for m in ZOO_MODELS] == zoo["models"][:-1]
    rows = {r["target"]: r for r in zoo["rows"]}
    assert rows["reference"]["verdict"] == "clean"
    assert len(rows) == len(MUTANTS) + 1
    assert all(r["verdict"] == "killed" for t, r in rows.items() if t != "reference")


def test_a_mutant_expected_under_ext4_is_killed_in_the_column_of_its_alias() -> None:
    target = MUTANTS["no-fsync-before-rename"]
    assert target.expected == ("R1", "ext4")
    rows, _ = kill_matrix(
        targets=[target], models=[POWER_LOSS], workloads=[SCENARIOS["three-saves"]], faults=False
    )
    assert "R1" in rows[0].killed["power-loss"] and rows[0].verdict == "killed"
    # and a column of another family does not count for it
    rows, _ = kill_matrix(
        targets=[target], models=[PROCESS_CRASH], workloads=[SCENARIOS["three-saves"]], faults=False
    )
    assert rows[0].verdict == "not-run"


def test_zoo_in_parallel_gives_the_same_matrix_as_serially() -> None:
    targets = [TARGETS["reference"], MUTANTS["delete-main-first"], MUTANTS["no-dir-fsync"]]
    workloads = [SCENARIOS["delete"], SCENARIOS["three-saves"]]
    serial, ref1 = kill_matrix(targets=targets, workloads=workloads, jobs=1)
    parallel, ref2 = kill_matrix(targets=targets, workloads=workloads, jobs=2)
    assert [(r.target, r.killed, r.violations, r.verdict) for r in serial] == [
        (r.target, r.killed, r.violations, r.verdict) for r in parallel
    ]
    assert [r.verdict for r in serial] == ["clean", "killed", "killed"]
    assert [r.distinct_states for r in ref1] == [r.distinct_states for r in ref2]


def test_zoo_exits_1_when_a_mutant_survives(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The zoo's own check has teeth: a "mutant" that is really the reference survives.
    On a part of the catalogue (``--scenario``) a survivor may only be unexercised: said."""
    fake = Target(
        "mutant:not-really", TARGETS["reference"].factory, "the reference", ("R1", "process-crash")
    )
    MUTANTS["not-really"] = fake
    try:
        assert (
            main(
                [
                    "explore",
                    "--zoo",
                    "--model",
                    "process-crash",
                    "--scenario",
                    "first-save",
                    "--out",
                    str(tmp_path),
                ]
            )
            == 1
        )
        assert "a mutant shown as survived may only be left unexercised" in capsys.readouterr().out
    finally:
        del MUTANTS["not-really"]


# --- faults ----------------------------------------------------------------------------
class _SwallowsFsyncErrors(FileStateStorage):
    """Ignores a failing fsync, as code that "can't do anything about it" does."""

    def __init__(self, fs: object, base_dir: str) -> None:
        super().__init__(fs, base_dir)  # type: ignore[arg-type]

    def _commit(self, main: str, data: bytes) -> None:
        fs = self.fs
        real = fs.fsync

        def tolerant(path: str) -> None:
            with contextlib.suppress(OSError):
                real(path)

        fs.fsync = tolerant  # type: ignore[method-assign]
        try:
            super()._commit(main, data)
        finally:
            del fs.fsync  # type: ignore[attr-defined]


def test_f1_catches_a_storage_that_acknowledges_despite_a_failed_fsync() -> None:
    target = Target("mutant:swallows-fsync", _SwallowsFsyncErrors, "test")
    result = explore_faults(SCENARIOS["first-save"], target=target)
    f1 = [v for v in result.counterexamples if v.invariant == "F1"]
    assert f1 and "returned normally" in f1[0].got
    assert "--fault" in f1[0].replay


def test_fault_plan_covers_every_operation_with_its_errnos() -> None:
    from crashpoint.scenarios import record

    rec = record(SCENARIOS["first-save"], TARGETS["reference"])
    plan = fault_plan(rec.ops)
    assert {f.at for f in plan} == {op.index for op in rec.ops}
    kinds = {(f.errno, f.kind) for f in plan}
    assert (errno.ENOSPC, FaultKind.SHORT_WRITE) in kinds
    assert (errno.EIO, FaultKind.FSYNC_LOST) in kinds
    assert (errno.EXDEV, FaultKind.ERROR) in kinds


@pytest.mark.parametrize("text", ["3:ENOSPC", "5:short-write", "7:fsync-lost", "0:EXDEV"])
def test_parse_fault_round_trips(text: str) -> None:
    from crashpoint.scenarios.engine.faults import fault_spec

    assert fault_spec(parse_fault(text)) == text


@pytest.mark.parametrize("text", ["x:ENOSPC", "3", "3:ENOTANERRNO", ":EIO"])
def test_parse_fault_rejects_bad_input(text: str) -> None:
    with pytest.raises(ValueError):
        parse_fault(text)


def test_failed_save_raises_state_save_failed_and_keeps_main_and_bak() -> None:
    fs = MemoryFileSystem(dirs=("/data",))
    st = FileStateStorage(fs, "/data/s")
    st.save(build_state(user("a")))
    st.save(build_state(user("a"), user("b")))
    before = fs.crash_state()
    for at in range(6):
        rec = RecordingFileSystem(MemoryFileSystem(before), fault=Fault(at, errno.ENOSPC))
        storage = FileStateStorage(rec, "/data/s")  # type: ignore[arg-type]
        try:
            storage.save(build_state(user("a"), user("b"), user("c")))
        except Exception as exc:
            assert getattr(exc, "code", None) == "state_save_failed"
            assert str(getattr(exc, "retryability", "")) == "conditional"
        after = rec.inner.crash_state()  # type: ignore[attr-defined]
        for name in ("/data/s/s1.json", "/data/s/s1.json.bak"):
            if rec.trace.ops[at].kind.value not in ("rename", "unlink", "fsync_dir"):
                assert after.file(name) == before.file(name), (at, name)
        assert FileStateStorage(MemoryFileSystem(after), "/data/s").load("s1").messages[-1] in (
            user("b"),
            user("c"),
        )


# --- SimulatedCrash cannot be swallowed ----------------------------------------------------
class _Swallower(FileStateStorage):
    """``except BaseException: pass`` and a ``finally:`` that tries to clean up."""

    def save(self, state: AgentState) -> None:
        try:
            super().save(state)
        except BaseException:
            pass
        finally:
            with contextlib.suppress(BaseException):
                self.fs.unlink(self.path(state.session_id, ".tmp"))
            with contextlib.suppress(BaseException):
                self.fs.create("/data/s/cleanup-was-here")


def test_simulated_crash_cannot_be_swallowed_and_leaves_the_frozen_state() -> None:
    initial = MemoryFileSystem(dirs=("/data",)).crash_state()
    probe = RecordingFileSystem(MemoryFileSystem(initial))
    FileStateStorage(probe, "/data/s").save(build_state(user("x")))  # type: ignore[arg-type]
    expected = [p.states[0] for p in crash_points(PROCESS_CRASH, initial, probe.trace.ops)]
    for k in range(len(probe.trace.ops)):
        rec = RecordingFileSystem(MemoryFileSystem(initial), crash_at=k)
        storage = _Swallower(rec, "/data/s")  # type: ignore[arg-type]
        storage.save(build_state(user("x")))  # swallowed: returns normally
        assert isinstance(rec.crashed, SimulatedCrash)
        assert rec.inner.crash_state() == expected[k]  # type: ignore[attr-defined]
        with pytest.raises(SimulatedCrash):
            rec.exists("/data")


@pytest.mark.long
@pytest.mark.parametrize("model", list(MODELS))
def test_reference_survives_a_crash_at_every_point_after_every_fault(model: str) -> None:
    for w in SCENARIOS.values():
        explore_faults(
            w, model=MODELS[model], target=TARGETS["reference"], crash_window=None
        ).assert_no_violations()

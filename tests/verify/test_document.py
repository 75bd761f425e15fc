"""The document kind through the Python API (SPEC.md §10): every invariant A1–A5 and
S1 is shown to catch a deliberately broken store; correct stores pass. Findings are
pinned by invariant, model and crash state, never by wording."""

from __future__ import annotations

import os

import crashpoint
import honesty_stores
import pytest
import stores

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "stores", "jsonstore.py")


def example(name: str) -> object:
    from crashpoint.scenarios.targets.user import load_factory

    return load_factory(f"{os.path.abspath(EXAMPLE)}:{name}")


def test_the_durable_store_passes_every_model() -> None:
    # With --faults too: tests/verify/test_verify_cli.py (acceptance 2, through the CLI).
    result = crashpoint.verify(
        example("JsonStore"), model="all", workloads=["first-save", "save-after-failure"]
    )
    result.assert_no_violations()
    assert result.mode == "intercepted" and result.verdict == "clean"
    assert {r.model for r in result.results} == {
        "process-crash",
        "ext4",
        "xfs",
        "btrfs",
        "posix",
    }
    assert all(r.crash_points > 0 and r.distinct_states > 0 for r in result.results)
    assert sum(r.faults for r in result.results) == 5  # its armed fault, once per model
    assert result.leftovers > 0  # the temporary file of a save cut short is counted


def test_in_place_write_breaks_atomicity_under_process_crash() -> None:
    result = crashpoint.verify(example("InPlaceJsonStore"), workloads=["first-save"])
    assert result.killed_by() == ["A1"]
    first = result.counterexamples[0]
    assert first.model == "process-crash"
    assert first.crash_state == {"doc.json": "empty"}  # truncated, nothing written yet
    with pytest.raises(AssertionError):
        result.assert_no_violations()


def test_missing_fsyncs_break_durability_under_power_loss_only() -> None:
    crash = crashpoint.verify(example("NoFsyncJsonStore"), workloads=["first-save", "resize"])
    assert crash.ok
    power = crashpoint.verify(
        example("NoFsyncJsonStore"), model="power-loss", workloads=["first-save"]
    )
    assert "A2" in power.killed_by()
    a2 = next(c for c in power.counterexamples if c.invariant == "A2")
    assert a2.operation == "(no crash: the run completed)"  # acknowledged, then lost
    assert a2.crash_state == {"doc.json": "empty"}
    assert "A2" in a2.broken and "A1" in a2.broken  # every invariant the state breaks


def test_a_load_that_resets_over_a_complete_backup_breaks_no_silent_reset() -> None:
    result = crashpoint.verify(stores.BakResetStore, workloads=["resize"], shrink=False)
    assert "A3" in result.killed_by()
    a3 = next(c for c in result.counterexamples if c.invariant == "A3")
    assert "doc.json.bak" in a3.crash_state


def test_a_failed_save_that_deletes_the_document_breaks_clean_failure() -> None:
    result = crashpoint.verify(stores.FailureDeletesStore, workloads=["save-after-failure"])
    assert "A4" in result.killed_by()
    a4 = next(c for c in result.counterexamples if c.invariant == "A4")
    assert a4.fault.endswith(":ENOSPC")
    assert "doc.json" not in a4.crash_state


def test_a_load_that_writes_over_an_unreadable_document_breaks_no_silent_reset() -> None:
    # first-save's crash states hold no acknowledged value: its "repair" loses none
    result = crashpoint.verify(stores.LoadRepairsStore, workloads=["resize"], shrink=False)
    assert "A3" in result.killed_by()
    # torn by the crash, the complete backup beside it: load returned the initial value
    # (A3) and deleted the backup (A3 again: its writes lost the generation)
    torn = [
        c
        for c in result.counterexamples
        if c.invariant == "A3" and set(c.crash_state) == {"doc.json", "doc.json.bak"}
    ]
    assert torn and all(c.model == "process-crash" for c in torn)
    per_state: dict[tuple[int, str], int] = {}
    for c in torn:
        per_state[c.crash_point, c.state_digest] = (
            per_state.get((c.crash_point, c.state_digest), 0) + 1
        )
    assert 2 in per_state.values()


def test_saves_that_stop_working_after_a_failure_break_clean_failure() -> None:
    result = crashpoint.verify(stores.StuckAfterFailureStore, workloads=["save-after-failure"])
    assert result.killed_by() == ["A4"]
    a4 = result.counterexamples[0]
    assert a4.fault.endswith(":ENOSPC") and "save#2" in a4.got


def test_reading_a_leftover_is_a_warning_not_a_violation() -> None:
    result = crashpoint.verify(stores.StrayReadStore, workloads=["resize"])
    assert result.ok and result.verdict == "clean"
    assert {w.invariant for w in result.warnings} == {"A5"}
    assert all(any(name.endswith(".tmp") for name in w.crash_state) for w in result.warnings)


def test_writing_outside_the_base_directory_breaks_confinement() -> None:
    result = crashpoint.verify(stores.OutsideStore, workloads=["first-save"])
    assert result.killed_by() == ["S1"]
    s1 = result.counterexamples[0]
    assert "/data/elsewhere.json" in s1.got


def test_a_save_that_writes_nothing_is_refused() -> None:
    from crashpoint.scenarios.targets.user import BadTarget

    with pytest.raises(BadTarget, match="save returned but no file operation was recorded"):
        crashpoint.verify(stores.SilentStore)


@pytest.mark.parametrize(
    "factory", [stores.RaisingSaveStore, stores.raising_factory, stores.wrong_signature]
)
def test_a_target_that_cannot_run_cleanly_is_a_bad_target(factory: object) -> None:
    from crashpoint.scenarios.targets.user import BadTarget

    with pytest.raises(BadTarget):
        crashpoint.verify(factory)  # type: ignore[arg-type]


def test_a_hanging_save_is_stopped_by_the_timeout() -> None:
    from crashpoint.scenarios.targets.user import TargetTimeout

    with pytest.raises(TargetTimeout) as e:
        crashpoint.verify(stores.HangingStore, timeout=0.5)
    assert "save()" in e.value.call


@pytest.mark.parametrize(
    ("factory", "call"),
    [(stores.LinkStore, "os.symlink"), (stores.SubprocessStore, "subprocess.Popen")],
)
def test_an_unsupported_call_makes_the_verdict_incomplete(factory: object, call: str) -> None:
    result = crashpoint.verify(factory, workloads=["first-save"])  # type: ignore[arg-type]
    assert result.verdict == "incomplete" and not result.ok
    assert call in result.unsupported
    with pytest.raises(AssertionError):
        result.assert_no_violations()


def test_a_re_run_that_diverges_from_its_recording_is_reported_not_compared() -> None:
    # a counter in a name is matched by creation order (issue 22); one in the bytes is not
    result = crashpoint.verify(
        honesty_stores.CounterInDataStore, workloads=["save-after-failure"], shrink=False
    )
    assert result.verdict == "incomplete"
    assert any("diverged from its recording" in u for u in result.unsupported)


def test_a_protocol_target_that_ignores_fs_still_writes_only_into_the_model() -> None:
    assert not os.path.exists("/data/store/doc.json")
    result = crashpoint.verify(stores.IgnoresFsStore, model="all", workloads=["first-save"])
    assert result.mode == "protocol"
    result.assert_no_violations()  # judged on the model, not refused, not on the disk
    assert result.results[0].operations > 0
    assert not os.path.exists("/data/store/doc.json")


def test_protocol_targets_run_on_the_recording_filesystem() -> None:
    result = crashpoint.verify(
        stores.ProtocolStore,
        model="power-loss",
        faults=True,
        workloads=["first-save", "save-after-failure"],
    )
    assert result.mode == "protocol"
    result.assert_no_violations()


def test_flat_string_values_for_env_like_stores() -> None:
    result = crashpoint.verify(stores.EnvStore, workloads=["first-save", "random"], examples=5)
    assert result.values == "flat-strings"  # the factory's crashpoint_values
    result.assert_no_violations()


def test_a_failing_workload_shrinks_to_the_fewest_saves() -> None:
    # per invariant (issue 22): A1 (a torn first save) needs one save, A2 (an acknowledged
    # save lost by the next one's truncation) two; each keeps its own smallest workload
    result = crashpoint.verify(example("InPlaceJsonStore"), workloads=["resize"])
    shrunk = {k.rsplit(" ", 1)[1]: v for k, v in result.shrunk.items()}
    assert set(shrunk) == {"A1", "A2"}
    assert len(shrunk["A1"].split(":", 1)[1].split(",")) == 1
    assert len(shrunk["A2"].split(":", 1)[1].split(",")) == 2
    assert sorted(result.killed_by()) == ["A1", "A2"]


def test_the_random_workload_is_drawn_and_shrunk_by_hypothesis_deterministically() -> None:
    one = crashpoint.verify(example("InPlaceJsonStore"), workloads=["random"], seed=3)
    two = crashpoint.verify(example("InPlaceJsonStore"), workloads=["random"], seed=3)
    assert one.killed_by() == ["A1"]
    assert [c.replay for c in one.counterexamples] == [c.replay for c in two.counterexamples]
    assert one.results[0].operations == two.results[0].operations


def test_a_replay_finds_the_same_counterexample_at_its_crash_point() -> None:
    full = crashpoint.verify(
        example("NoFsyncJsonStore"), model="power-loss", workloads=["first-save"]
    )
    first = full.counterexamples[0]
    again = crashpoint.verify(
        example("NoFsyncJsonStore"),
        model="power-loss",
        workloads=["first-save"],
        crash_point=first.crash_point,
    )
    assert {c.crash_point for c in again.counterexamples} == {first.crash_point}
    assert first.state_digest in {c.state_digest for c in again.counterexamples}


@pytest.mark.parametrize(
    "options",
    [{"workloads": []}, {"model": []}, {"crash_point": 9999}],
    ids=["no-workload", "no-model", "no-such-crash-point"],
)
def test_a_verify_that_examined_nothing_is_never_clean(options: dict[str, object]) -> None:
    # a broken store: nothing examined must not read as a pass (never a false green)
    result = crashpoint.verify(example("InPlaceJsonStore"), **options)  # type: ignore[arg-type]
    assert result.examined_nothing and result.verdict == "incomplete" and not result.ok
    with pytest.raises(AssertionError, match="nothing was verified"):
        result.assert_no_violations()


def test_a_replayed_fault_no_run_has_examines_nothing() -> None:
    from crashpoint.scenarios.engine.faults import parse_fault

    result = crashpoint.verify(example("InPlaceJsonStore"), fault=parse_fault("999:ENOSPC"))
    assert result.examined_nothing and result.verdict == "incomplete"


def test_tmp_fdatasync_rename_fdatasync_main_is_caught_under_ext4_and_posix() -> None:
    """Issue 20, acceptance 1: fdatasync commits no rename; the acknowledged save is lost
    (the document old, the temporary new) under ext4 and posix, as on a real ext4 power
    cut. The journaled model power-loss named before issue 20 passed it (a false green);
    with an fsync of the directory after the rename every family passes."""
    from crashpoint.faultfs._power import JOURNALED

    workloads = ["first-save", "resize"]
    result = crashpoint.verify(example("FdatasyncJsonStore"), model="all", workloads=workloads)
    assert result.verdict == "violation" and not result.unsupported
    by_model = {(c.model, c.invariant) for c in result.counterexamples}
    assert {("ext4", "A2"), ("posix", "A2")} <= by_model
    assert not [c for c in result.counterexamples if c.model == "process-crash"]
    for model in ("ext4", "posix"):
        # the document as before the save (absent: the initial value), the temporary new
        assert [
            c
            for c in result.counterexamples
            if c.model == model
            and "doc.json" not in c.crash_state
            and c.crash_state.get("doc.json.tmp", "").endswith("as save#0 wrote it (leftover)")
            and c.got == "the initial value None"
        ], model
    assert (
        crashpoint.verify(
            example("FdatasyncJsonStore"), model=[JOURNALED], workloads=workloads
        ).verdict
        == "clean"
    )
    fixed = crashpoint.verify(example("FdatasyncDirJsonStore"), model="all", workloads=workloads)
    fixed.assert_no_violations()
    assert {r.model for r in fixed.results} == {"process-crash", "ext4", "xfs", "btrfs", "posix"}


STORES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "stores")
FAMILIES = {"ext4", "xfs", "btrfs", "posix"}


def store(module: str, name: str) -> object:
    from crashpoint.scenarios.targets.user import load_factory

    return load_factory(f"{os.path.abspath(os.path.join(STORES_DIR, module))}:{name}")


@pytest.mark.parametrize(
    ("module", "name"), [("maildir.py", "MaildirStore"), ("dirswap.py", "DirSwapStore")]
)
def test_link_unlink_and_directory_rename_stores_pass_every_model_with_faults(
    module: str, name: str
) -> None:
    """Issue 20, acceptance 5: a maildir-style store (link() + unlink() to commit) and one
    that renames a directory into place (then unlink + rmdir) are judged, not refused: a
    complete verdict, every state enumerated, under process-crash and the four families,
    with every fault armed."""
    result = crashpoint.verify(
        store(module, name),
        model="all",
        faults=True,
        workloads=["first-save", "resize", "save-after-failure"],
    )
    assert result.unsupported == [] and not result.incomplete
    assert result.verdict == "clean"
    result.assert_no_violations()
    assert {r.model for r in result.results} == {"process-crash", *FAMILIES}
    assert all(r.exhaustive for r in result.results)
    assert sum(r.faults for r in result.results) > 0


def test_a_maildir_store_without_directory_fsyncs_loses_the_linked_save() -> None:
    """Without an fsync of new/ the link is never durable: after the acknowledged save
    a power cut leaves only the temporary name (A2), under every family; never under a
    process crash."""
    result = crashpoint.verify(
        store("maildir.py", "MaildirNoDirFsyncStore"), model="all", workloads=["first-save"]
    )
    assert result.unsupported == [] and result.verdict == "violation"
    assert {(c.model, c.invariant) for c in result.counterexamples} == {(m, "A2") for m in FAMILIES}
    for model in FAMILIES:
        lost = [
            c
            for c in result.counterexamples
            if c.model == model
            and c.crash_state == {"tmp/00000001.json": "328 bytes: as save#0 wrote it (leftover)"}
        ]
        assert lost and all(c.got == "the initial value None" for c in lost), model
        assert all(c.crash_point == 7 for c in lost)  # the run completed: save acknowledged


def test_a_directory_swap_without_fsyncs_loses_or_empties_the_document() -> None:
    """Without fsyncs the renamed directory may be lost (next/ left, A2) or hold an empty
    document (A1), under every family; a process crash never sees either."""
    result = crashpoint.verify(
        store("dirswap.py", "DirSwapNoFsyncStore"), model="all", workloads=["first-save"]
    )
    assert result.unsupported == [] and result.verdict == "violation"
    assert {(c.model, c.invariant) for c in result.counterexamples} == {
        (m, i) for m in FAMILIES for i in ("A1", "A2")
    }
    for model in FAMILIES:
        states = [c.crash_state for c in result.counterexamples if c.model == model]
        assert {"current/doc.json": "empty"} in states  # the rename in, the data not
        assert {"next/doc.json": "328 bytes: as save#0 wrote it (leftover)"} in states

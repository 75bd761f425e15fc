"""The pytest plugin through ``pytester`` (STYLE.md §10): fixtures, the failure
message, junit properties, ``--crashpoint-model``, ``--crashpoint-shard`` and
sharding over xdist workers."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
from crashpoint.core import AgentState, ErrorCode, FileStateStorage, Retryability, StateError
from crashpoint.faultfs import POWER_LOSS
from crashpoint.pytest_plugin import Explorer, _combine, parse_shard, shard_count
from crashpoint.scenarios import SCENARIOS, Session, Workload, explore
from crashpoint.scenarios.targets.user import BadTarget, TargetExit

USER_TESTS = """
import pytest
from crashpoint.core import AgentState


def three_saves(s):
    for i in range(3):
        s.save(AgentState.new("s1", {"i": i}))


def save_save_delete(s):
    s.save(AgentState.new("s1", {"i": 1}))
    s.save(AgentState.new("s1", {"i": 2}))
    s.delete("s1")


def test_reference_is_consistent(crashpoint_explorer):
    result = crashpoint_explorer.check(three_saves, target="reference")
    assert result.crash_points > 10


def test_fs_records_every_operation(crashpoint_fs):
    crashpoint_fs.create("/data/x")
    crashpoint_fs.write("/data/x", 0, b"hi")
    assert [op.kind.value for op in crashpoint_fs.trace.ops] == ["create", "write"]


def test_mutant_is_inconsistent(crashpoint_explorer):
    crashpoint_explorer.check(save_save_delete, target="mutant:delete-main-first")


@pytest.mark.crashpoint(shards="auto")
def test_sharded(crashpoint_explorer):
    crashpoint_explorer.check(three_saves)
"""


def properties(junit: Path) -> dict[str, dict[str, str]]:
    """``{test name: {property: value}}`` from a junit xml file."""
    out: dict[str, dict[str, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        out[case.get("name", "")] = props
    return out


@pytest.fixture
def user_tests(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


# --- fixtures, failure message, junit ------------------------------------------------------
def test_reference_passes_and_mutant_fails_with_a_readable_counterexample(
    user_tests: pytest.Pytester,
) -> None:
    result = user_tests.runpytest_inprocess("-p", "no:cacheprovider", "--junitxml=out.xml")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_mutant_is_inconsistent _*",
            "crashpoint: * violation(s), * distinct crash states explored",
            "D1 (deleted-stays-deleted) violated in workload 'save_save_delete' under "
            "process-crash, target mutant:delete-main-first",
            "*crash point *: after unlink('/data/sessions/s1.json'), before unlink(*s1.json.bak')",
            "*crash state:",
            "    s1.json: absent",
            "    s1.json.bak: valid v3, * bytes (= save#0)",
            "*load('s1')*: state with 0 messages (isRunning=false)",
            "*expected: * or error session_not_found",
            "*replay: pytest test_user.py::test_mutant_is_inconsistent --crashpoint-model "
            "process-crash --crashpoint-crash-point *",
        ]
    )
    assert "Traceback" not in result.stdout.str()  # the counterexample, not plugin internals
    result.stdout.fnmatch_lines(
        [
            "*- crashpoint -*",
            "3 explorations, * crash points, * distinct crash states, * violations",
        ]
    )
    props = properties(user_tests.path / "out.xml")
    ok = props["test_reference_is_consistent"]
    assert ok["crashpoint_violations"] == "0" and int(ok["crashpoint_crash_points"]) > 10
    assert ok["crashpoint_model"] == "process-crash" and ok["crashpoint_shard"] == "all"
    bad = props["test_mutant_is_inconsistent"]
    assert int(bad["crashpoint_violations"]) >= 1 and bad["crashpoint_killed_by"] == "D1"
    assert int(bad["crashpoint_distinct_states"]) >= 1
    assert "crashpoint_violations" not in props["test_fs_records_every_operation"]


def test_model_option_all_explores_every_model(user_tests: pytest.Pytester) -> None:
    result = user_tests.runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        "--crashpoint-model",
        "all",
        "--junitxml=out.xml",
        "-k",
        "reference",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["crashpoint: model=all"])
    props = properties(user_tests.path / "out.xml")["test_reference_is_consistent"]
    assert props["crashpoint_model"] == "process-crash,ext4,xfs,btrfs,posix"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--crashpoint-shard", "3/2"], "--crashpoint-shard: shard K/N needs 1 <= K <= N"),
        (["--crashpoint-shard", "x"], "--crashpoint-shard: a shard looks like K/N"),
        (["--crashpoint-model", "tape"], "--crashpoint-model: unknown persistence model 'tape'"),
    ],
)
def test_bad_options_are_usage_errors(
    user_tests: pytest.Pytester, option: list[str], message: str
) -> None:
    result = user_tests.runpytest_inprocess("-p", "no:cacheprovider", *option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_shards_marker_without_the_explorer_is_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.crashpoint(shards=2)
        def test_nothing():
            pass
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret != pytest.ExitCode.OK
    assert "needs the crashpoint_explorer" in result.stdout.str() + result.stderr.str()


# --- sharding --------------------------------------------------------------------------------
def test_xdist_workers_split_a_marked_test_into_one_item_per_shard(
    user_tests: pytest.Pytester,
) -> None:
    whole = user_tests.runpytest_inprocess(
        "-p", "no:cacheprovider", "-k", "sharded", "--junitxml=whole.xml"
    )
    whole.assert_outcomes(passed=1)
    result = user_tests.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "-v", "--junitxml=split.xml"
    )
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines_random(
        ["*PASSED*test_sharded?shard1of2?*", "*PASSED*test_sharded?shard2of2?*"]
    )
    split = properties(user_tests.path / "split.xml")
    parts = [split["test_sharded[shard1of2]"], split["test_sharded[shard2of2]"]]
    assert [p["crashpoint_shard"] for p in parts] == ["1/2", "2/2"]
    unsharded = properties(user_tests.path / "whole.xml")["test_sharded"]
    assert sum(int(p["crashpoint_distinct_states"]) for p in parts) == int(
        unsharded["crashpoint_distinct_states"]
    )
    assert split["test_mutant_is_inconsistent"]["crashpoint_killed_by"] == "D1"


def test_crashpoint_shard_option_covers_the_states_exactly_once(
    user_tests: pytest.Pytester,
) -> None:
    def run(*args: str) -> dict[str, dict[str, str]]:
        user_tests.runpytest_inprocess("-p", "no:cacheprovider", "--junitxml=out.xml", *args)
        return properties(user_tests.path / "out.xml")

    whole = run()
    parts = [run("--crashpoint-shard", f"{k}/3") for k in (1, 2, 3)]
    for name in ("test_reference_is_consistent", "test_mutant_is_inconsistent"):
        for key in ("crashpoint_distinct_states", "crashpoint_violations"):
            assert sum(int(p[name][key]) for p in parts) == int(whole[name][key]), (name, key)
    assert [p["test_reference_is_consistent"]["crashpoint_shard"] for p in parts] == [
        "1/3",
        "2/3",
        "3/3",
    ]


def two_sessions(s: Session) -> None:
    for i in range(3):
        s.save(AgentState.new("s1", {"i": i}))
        s.save(AgentState.new("s2", {"i": i}))
    s.mark_not_resumable("s1")
    s.delete("s2")


def save_save_delete(s: Session) -> None:
    s.save(AgentState.new("s1", {"i": 1}))
    s.save(AgentState.new("s1", {"i": 2}))
    s.delete("s1")


@pytest.mark.parametrize(
    ("workload", "target"),
    [
        (two_sessions, "reference"),
        (two_sessions, "mutant:delete-main-first"),
        (save_save_delete, "mutant:no-fsync-before-rename"),
    ],
)
def test_n_shards_together_equal_the_unsharded_run(workload: Any, target: str) -> None:
    """The union of the shards' state identities is the whole run's, the shards are
    disjoint, and the violations add up; also for the shards of a shard (a CI
    matrix of machines, each running ``-n auto``)."""
    whole = Explorer(models=[POWER_LOSS]).explore(workload, target=target)
    assert whole.distinct_states > 20
    assert whole.counterexamples or target == "reference"
    n = 4
    parts = [
        Explorer(models=[POWER_LOSS], shard=(k, n)).explore(workload, target=target)
        for k in range(1, n + 1)
    ]
    assert set().union(*(p.state_ids for p in parts)) == whole.state_ids
    assert sum(len(p.state_ids) for p in parts) == len(whole.state_ids)
    assert sum(len(p.counterexamples) for p in parts) == len(whole.counterexamples)
    nested = [
        Explorer(models=[POWER_LOSS], shard=_combine((k, 2), (j, 3))).explore(
            workload, target=target
        )
        for k in (1, 2)
        for j in (1, 2, 3)
    ]
    assert set().union(*(p.state_ids for p in nested)) == whole.state_ids
    assert sum(len(p.state_ids) for p in nested) == len(whole.state_ids)
    assert sum(len(p.counterexamples) for p in nested) == len(whole.counterexamples)


# --- the explorer and helpers ----------------------------------------------------------------
def test_explorer_accepts_a_factory_and_a_catalogue_workload() -> None:
    explorer = Explorer("tests/x.py::test_y")
    result = explorer.explore(
        SCENARIOS["three-saves"],
        target=lambda fs, base: FileStateStorage(fs, base, sync="none", ended_marker="legacy"),
        model="power-loss",
    )
    assert result.model == "power-loss" and result.target.endswith("<lambda>")
    assert result.counterexamples and all(
        v.replay.startswith("pytest ") for v in result.counterexamples
    )
    catalogued = explorer.explore(SCENARIOS["delete"], target="mutant:delete-main-first")
    assert catalogued.counterexamples[0].replay.startswith("crashpoint explore --scenario delete")
    assert explorer.properties()["explorations"] == 2


class _NeverSaves(FileStateStorage):
    """Refuses every save on a healthy disk: nothing is ever acknowledged, so no
    invariant can fail; without the refusal this store would pass."""

    def save(self, state: AgentState) -> None:
        raise StateError(
            ErrorCode.STATE_SAVE_FAILED, "disk busy", retryability=Retryability.CONDITIONAL
        )


def test_a_store_whose_save_fails_on_a_clean_run_is_refused_not_passed() -> None:
    with pytest.raises(BadTarget, match=r"save raised state_save_failed on a clean run.*save#0"):
        Explorer().explore(SCENARIOS["three-saves"], target=_NeverSaves, model="power-loss")
    with pytest.raises(BadTarget, match="save raised state_save_failed on a clean run"):
        explore(SCENARIOS["first-save"], target=_NeverSaves)
    # the registered targets are the harness's own: a mutant that fails a save is judged
    result = explore(SCENARIOS["hostile-session-ids"], target="mutant:unsanitized-session-id")
    assert result.counterexamples


class _ExitsAfterSaving(FileStateStorage):
    def save(self, state: AgentState) -> None:
        super().save(state)
        os._exit(0)  # the test process would end here with code 0: a green run


def test_a_store_that_calls_os_exit_raises_and_the_process_goes_on() -> None:
    real = os._exit
    with pytest.raises(TargetExit, match=r"os\._exit\(0\)"):
        Explorer().explore(SCENARIOS["three-saves"], target=_ExitsAfterSaving)
    assert os._exit is real  # restored


class _ForksAHelper(FileStateStorage):
    """Forks a child that ends with os._exit(7) (as a worker does) before saving."""

    statuses: ClassVar[list[int]] = []

    def save(self, state: AgentState) -> None:
        pid = os.fork()
        if pid == 0:
            os._exit(7)  # the child's own exit: not the target's, not refused
        _, status = os.waitpid(pid, 0)
        self.statuses.append(os.waitstatus_to_exitcode(status))
        super().save(state)


def test_a_child_forked_by_the_target_exits_as_it_asks() -> None:
    result = Explorer().explore(SCENARIOS["first-save"], target=_ForksAHelper)
    assert not result.counterexamples and _ForksAHelper.statuses
    assert set(_ForksAHelper.statuses) == {7}


def _no_storage_call(s: Session) -> None:
    s.storage.exists("s1")  # past the session: no call is recorded, no session named


def test_a_workload_that_judges_no_session_is_not_a_pass() -> None:
    result = explore(Workload("idle", "", _no_storage_call))
    assert result.crash_points == 1 and not result.counterexamples and result.subjects == 0
    with pytest.raises(AssertionError, match=r"made no storage call.*nothing about the storage"):
        result.assert_no_violations()
    with pytest.raises(pytest.fail.Exception, match="made no storage call"):
        Explorer().check(_no_storage_call)
    # a workload that only loads what its setup wrote judges that session: a pass
    loads = explore(SCENARIOS["future-main"])
    assert loads.subjects == 1 and not loads.operations
    loads.assert_no_violations()
    merged = Explorer(models="all").check(two_sessions)
    assert merged.subjects == 2


def test_explorer_merges_several_models_into_one_result() -> None:
    result = Explorer(models="all").explore(Workload("w", "", two_sessions))
    assert result.model == "process-crash,ext4,xfs,btrfs,posix"
    single = Explorer().explore(two_sessions)
    assert result.crash_points == 5 * single.crash_points
    assert result.state_ids >= single.state_ids


def test_parse_shard() -> None:
    assert parse_shard("2/5") == (2, 5)
    for bad in ("0/2", "3/2", "1", "a/b", "1/0"):
        with pytest.raises(ValueError):
            parse_shard(bad)


def config(**option: Any) -> Any:
    workerinput = option.pop("workerinput", None)
    cfg = SimpleNamespace(option=SimpleNamespace(**option))
    if workerinput is not None:
        cfg.workerinput = workerinput
    return cfg


def test_shard_count_follows_the_xdist_worker_count() -> None:
    assert shard_count(config(), "auto") == 1
    assert shard_count(config(numprocesses=None), "auto") == 1
    assert shard_count(config(numprocesses=0), "auto") == 1
    assert shard_count(config(numprocesses=4, maxprocesses=None), "auto") == 4
    assert shard_count(config(numprocesses=4, maxprocesses=3), "auto") == 3
    assert shard_count(config(workerinput={"workercount": 6}), "auto") == 6
    assert shard_count(config(numprocesses=8), 3) == 3
    for bad in (0, -1, "two", True):
        with pytest.raises(ValueError):
            shard_count(config(), bad)


def test_combined_shards_partition_every_outer_shard() -> None:
    n, m = 3, 4
    for d in range(200):
        outer = [k for k in range(1, n + 1) if d % n == k - 1]
        inner = [
            (k, j)
            for k in range(1, n + 1)
            for j in range(1, m + 1)
            if d % (n * m) == _combine((k, n), (j, m))[0] - 1  # type: ignore[index]
        ]
        assert len(inner) == 1 and inner[0][0] == outer[0]
    assert _combine(None, (1, 2)) == (1, 2) and _combine((1, 2), None) == (1, 2)


def test_importing_the_plugin_imports_nothing_of_crashpoint() -> None:
    code = (
        "import sys, crashpoint.pytest_plugin; "
        "print(sorted(m for m in sys.modules if m.startswith('crashpoint')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['crashpoint', 'crashpoint.pytest_plugin']"


# --- issue 10: replay lines that run, clear marker errors, totals that add up ----------------
SHARDED_TESTS = """
import pytest
from crashpoint.core import AgentState


def save_save_delete(s):
    s.save(AgentState.new("s1", {"i": 1}))
    s.save(AgentState.new("s1", {"i": 2}))
    s.delete("s1")


@pytest.mark.crashpoint(shards=SHARDS)
def test_mutant(crashpoint_explorer):
    crashpoint_explorer.check(save_save_delete, target="mutant:delete-main-first")


@pytest.mark.crashpoint(shards=SHARDS)
def test_reference(crashpoint_explorer):
    crashpoint_explorer.check(save_save_delete)
"""


def _summary(result: pytest.RunResult) -> str:
    lines = [line for line in result.outlines if " explorations, " in line]
    assert len(lines) == 1, result.outlines
    return lines[0]


def test_the_replay_line_of_a_sharded_item_runs_and_reproduces_the_violation(
    pytester: pytest.Pytester,
) -> None:
    import shlex

    pytester.makepyfile(test_user=SHARDED_TESTS.replace("SHARDS", "3"))
    first = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--junitxml=first.xml")
    outcomes = first.parseoutcomes()
    assert outcomes["failed"] >= 1 and outcomes["passed"] + outcomes["failed"] == 6
    replays = [line.split("replay: ", 1)[1] for line in first.outlines if "replay: pytest" in line]
    assert replays, first.outlines
    found = properties(pytester.path / "first.xml")
    for replay in replays:
        argv = shlex.split(replay)
        assert argv[0] == "pytest" and "--crashpoint-shard" in argv
        assert "--crashpoint-crash-point" in argv
        again = pytester.runpytest_inprocess(
            "-p", "no:cacheprovider", "--junitxml=again.xml", *argv[1:]
        )
        again.assert_outcomes(failed=1)  # the one item, at the one crash point
        props = properties(pytester.path / "again.xml")["test_mutant"]
        assert props["crashpoint_killed_by"] == "D1"
        shard = argv[argv.index("--crashpoint-shard") + 1]
        assert props["crashpoint_shard"] == shard
        k = shard.split("/")[0]
        original = found[f"test_mutant[shard{k}of3]"]
        assert 1 <= int(props["crashpoint_violations"]) <= int(original["crashpoint_violations"])


def test_shard_totals_add_up_to_the_unsharded_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=SHARDED_TESTS.replace("SHARDS", "None"))
    whole = _summary(pytester.runpytest_inprocess("-p", "no:cacheprovider"))
    pytester.makepyfile(test_user=SHARDED_TESTS.replace("SHARDS", "3"))
    sharded = _summary(pytester.runpytest_inprocess("-p", "no:cacheprovider"))
    assert sharded == whole


@pytest.mark.parametrize("shards", ["0", "-2", "'two'", "True"])
def test_a_bad_shards_value_is_a_clear_collection_error(
    pytester: pytest.Pytester, shards: str
) -> None:
    pytester.makepyfile(
        f"""
        import pytest

        @pytest.mark.crashpoint(shards={shards})
        def test_x(crashpoint_explorer):
            pass
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret != pytest.ExitCode.OK
    out = result.stdout.str() + result.stderr.str()
    assert 'shards must be "auto" or a positive int' in out
    assert "pluggy/" not in out and "Traceback" not in out and "_pytest/" not in out


@pytest.mark.parametrize("value", ["-1", "x", "1.5"])
def test_a_bad_crash_point_option_is_a_usage_error(user_tests: pytest.Pytester, value: str) -> None:
    result = user_tests.runpytest_inprocess(
        "-p", "no:cacheprovider", f"--crashpoint-crash-point={value}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--crashpoint-crash-point" in result.stderr.str()


def test_the_crash_point_option_explores_that_crash_point_only() -> None:
    whole = Explorer().explore(save_save_delete, target="mutant:delete-main-first")
    k = whole.counterexamples[0].crash_point
    one = Explorer(crash_point=k).explore(save_save_delete, target="mutant:delete-main-first")
    assert one.counterexamples and {v.crash_point for v in one.counterexamples} == {k}
    assert one.distinct_states < whole.distinct_states


def test_the_model_option_takes_the_clis_comma_lists(user_tests: pytest.Pytester) -> None:
    result = user_tests.runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        "--crashpoint-model",
        " Power-Loss , process-crash",
        "--junitxml=out.xml",
        "-k",
        "reference",
    )
    result.assert_outcomes(passed=1)
    props = properties(user_tests.path / "out.xml")["test_reference_is_consistent"]
    assert props["crashpoint_model"] == "power-loss,process-crash"


def test_a_replay_past_the_workloads_crash_points_fails_never_a_silent_pass(
    user_tests: pytest.Pytester,
) -> None:
    result = user_tests.runpytest_inprocess(
        "-p", "no:cacheprovider", "--crashpoint-crash-point", "99999", "-k", "is_consistent"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*--crashpoint-crash-point 99999 examined no crash state*nothing was verified*"]
    )


def test_a_shard_holding_no_state_of_the_workload_is_skipped_and_says_so(
    pytester: pytest.Pytester,
) -> None:
    # one save of a fresh session: a handful of distinct states over 64 shards leaves
    # some shards empty; those verified nothing and say so (skipped), never a pass
    pytester.makepyfile(
        test_tiny="""
from crashpoint.core import AgentState

def one_save(s):
    s.save(AgentState.new("s1"))

def test_tiny(crashpoint_explorer):
    crashpoint_explorer.check(one_save)
"""
    )
    outcomes = {"passed": 0, "skipped": 0}
    for k in range(1, 65):
        result = pytester.runpytest_inprocess(
            "-p", "no:cacheprovider", "--crashpoint-shard", f"{k}/64", "-rs"
        )
        got = result.parseoutcomes()
        assert not got.get("failed"), result.stdout.str()
        for key in outcomes:
            outcomes[key] += got.get(key, 0)
        if got.get("skipped"):
            result.stdout.fnmatch_lines(["*no crash state of this workload in shard*"])
    assert outcomes["passed"] > 0 and outcomes["skipped"] > 0, outcomes


def test_a_factory_returning_none_is_a_bad_target_not_data_loss() -> None:
    from crashpoint.scenarios.targets.user import BadTarget

    with pytest.raises(BadTarget, match="returned None"):
        Explorer().explore(save_save_delete, target=lambda fs, base: None)

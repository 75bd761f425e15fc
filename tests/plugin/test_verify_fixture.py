"""The ``crashpoint_verify`` fixture and ``--crashpoint-faults`` through ``pytester``,
and no false green for a user's protocol target in ``crashpoint_explorer``."""

from __future__ import annotations

import pytest

USER_TESTS = '''
import contextlib
import json
import os

from crashpoint.core import AgentState


class Durable:
    def __init__(self, base_dir):
        self.path = os.path.join(base_dir, "doc.json")
        self.base_dir = base_dir

    def load(self):
        try:
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def save(self, value):
        with open(self.path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(value, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(self.path + ".tmp", self.path)
        fd = os.open(self.base_dir, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)


class InPlace(Durable):
    def save(self, value):
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(value, f)


class DeletesOnFailure(Durable):
    def save(self, value):
        try:
            super().save(value)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            raise


class IgnoresFs:
    """A protocol storage that keeps its states in memory: it writes nothing."""

    def __init__(self, fs, base_dir):
        self.states = {}

    def save(self, state):
        self.states[state.session_id] = state

    def load(self, session_id):
        return self.states[session_id]


def test_durable(crashpoint_verify):
    result = crashpoint_verify.check(Durable, workloads=["first-save"])
    assert result.verdict == "clean"


def test_in_place(crashpoint_verify):
    crashpoint_verify.check(InPlace, workloads=["first-save"])


def test_deletes_on_failure(crashpoint_verify):
    crashpoint_verify.check(DeletesOnFailure, workloads=["resize:0,1"])


def test_ignores_fs(crashpoint_explorer):
    crashpoint_explorer.explore(lambda s: s.save(AgentState.new("s1")), target=IgnoresFs)
'''


@pytest.fixture
def user_tests(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def test_verify_fixture_passes_and_fails_and_refuses_a_silent_target(
    user_tests: pytest.Pytester,
) -> None:
    result = user_tests.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, failed=2)
    text = result.stdout.str()
    assert "A1 (atomic)" in text  # the in-place store's counterexample
    assert "save returned but no file operation was recorded" in text


def test_faults_option_arms_every_fault(user_tests: pytest.Pytester) -> None:
    result = user_tests.runpytest("-p", "no:cacheprovider", "-k", "deletes_on_failure")
    result.assert_outcomes(passed=1)
    result = user_tests.runpytest(
        "-p", "no:cacheprovider", "-k", "deletes_on_failure", "--crashpoint-faults"
    )
    result.assert_outcomes(failed=1)
    assert "A4 (clean-failure)" in result.stdout.str() or "A2 (durable)" in result.stdout.str()


def test_verify_fixture_fails_what_examined_nothing_and_skips_an_empty_shard(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_nothing=USER_TESTS.split("def test_durable")[0]
        + """
def test_no_workload(crashpoint_verify):
    crashpoint_verify.check(InPlace, workloads=[])


def test_one_shard(crashpoint_verify):
    crashpoint_verify.check(Durable, workloads=["first-save"], shard=(64, 64))
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1, result.stdout.str()
    result.stdout.fnmatch_lines(["*nothing was verified*"])
    assert outcomes.get("skipped") == 1  # first-save's few states leave shard 64/64 empty
    result.stdout.fnmatch_lines(["*no crash state in shard 64/64*"])


def test_crash_point_option_replays_one_crash_point_of_the_verify_fixture(
    user_tests: pytest.Pytester,
) -> None:
    # the in-place store's A1 lies at crash point 1 (created, not yet written)
    run = ("-p", "no:cacheprovider", "-k", "in_place", "--crashpoint-crash-point")
    result = user_tests.runpytest(*run, "1")
    result.assert_outcomes(failed=1)
    assert "A1 (atomic)" in result.stdout.str() and "crash point 1:" in result.stdout.str()
    user_tests.runpytest(*run, "0").assert_outcomes(passed=1)  # the empty disk loads
    result = user_tests.runpytest(*run, "99")  # a point no run has verifies nothing
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*nothing was verified*"])

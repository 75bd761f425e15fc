"""Issue 10, the checkers under attack: each evasion is a broken storage the checker
must catch, by the invariant of SPEC.md §8 that should have caught it."""

from __future__ import annotations

import errno
import json
import pathlib
from typing import Any

import pytest
from crashpoint._cli import main
from crashpoint.core import AgentState, FileStateStorage, encode_bytes
from crashpoint.faultfs import MODELS, PROCESS_CRASH, CrashState, Op, OpKind
from crashpoint.scenarios import MUTANTS, SCENARIOS, TARGETS, Target, explore, get_target, record
from crashpoint.scenarios.engine.explore import crash_point_words
from crashpoint.scenarios.kinds.agent.catalogue import (
    HOSTILE_IDS,
    build_state,
    stale_ended_marker,
    user,
)
from crashpoint.scenarios.kinds.agent.checkers import (
    SEVERITIES,
    Invariant,
    confinement_violations,
    describe_alternatives,
    describe_file,
    secrets_in_state,
    severity_of,
    severity_rank,
)
from crashpoint.scenarios.kinds.agent.kind import SECRETS
from crashpoint.scenarios.kinds.agent.mutants import DeleteMainFirst, EndedUnscoped
from crashpoint.scenarios.kinds.agent.workload import Expect, Session, Workload


def only(name: str, target: str, *, model: str = "process-crash") -> list[str]:
    return explore(SCENARIOS[name], model=MODELS[model], target=get_target(target)).killed_by()


# --- S2: every file in every crash state, not single writes -----------------------------
def test_s2_finds_a_secret_written_in_8_byte_chunks() -> None:
    rec = record(SCENARIOS["first-save"], MUTANTS["chunked-secret-writer"])
    needle = SECRETS[0].encode()
    writes = [op for op in rec.ops if op.kind is OpKind.WRITE]
    assert not any(needle in op.data for op in writes)  # the evasion: no single write holds it
    assert any(op.data == needle[:8] for op in writes)  # the key went out 8 bytes at a time
    result = explore(SCENARIOS["first-save"], target=MUTANTS["chunked-secret-writer"])
    s2 = [v for v in result.counterexamples if v.invariant == "S2"]
    assert s2, result.killed_by()
    # found as soon as the last piece is on disk, before the rest of the file is written
    assert "/data/sessions/s1.json.tmp" in s2[0].got
    assert s2[0].crash_state["s1.json.tmp"] != "absent"
    assert s2[0].crash_point < result.operations
    assert result.counterexamples[0].invariant == "S2"  # security comes first


def test_secrets_in_state_judges_whole_files_and_names() -> None:
    secret = SECRETS[0]
    state = CrashState(
        (
            ("/d/a.json", b"{" + secret.encode() + b"}"),
            ("/d/b.json", b"clean"),
            (f"/d/{secret}.json", b""),
        ),
        ("/d",),
    )
    found = secrets_in_state(state, SECRETS)
    assert [path for path, _ in found] == ["/d/a.json", f"/d/{secret}.json"]
    assert secrets_in_state(state, ()) == []


def test_reference_and_seed_write_no_secret_anywhere() -> None:
    for target in ("reference", "seed"):
        for name in ("first-save", "three-saves"):
            assert "S2" not in only(name, target)


# --- S1: failed operations count; hostile ids through all six methods -------------------
def test_s1_counts_a_failed_operation_outside_the_base_directory() -> None:
    ops = [
        Op(0, OpKind.CREATE, "/nowhere/x.json.tmp", errno=errno.ENOENT),
        Op(1, OpKind.CREATE, "/data/sessions/s1.json.tmp"),
        Op(2, OpKind.FSYNC_DIR, "/data"),
        Op(3, OpKind.RENAME, "/data/sessions/a", dst="/data/b", errno=errno.EXDEV),
    ]
    assert [op.index for op in confinement_violations(ops, "/data/sessions")] == [0, 3]


class _EscapingMark(FileStateStorage):
    """mark_not_resumable writes its marker at the id joined as it comes; the only
    hostile id used names a directory that does not exist, so the write fails."""

    def __init__(self, fs: Any, base_dir: str) -> None:
        super().__init__(fs, base_dir)

    def mark_not_resumable(self, session_id: str) -> None:
        if "/" not in session_id:
            super().mark_not_resumable(session_id)
            return
        self.fs.create(f"{self.base_dir}/{session_id}.json.ended")


def _mark_escape(s: Session) -> None:
    s.save(build_state(user("mine")))
    s.mark_not_resumable("../../nowhere/x")


def test_s1_reports_an_escape_that_failed() -> None:
    work = Workload("mark-escape", "a hostile mark whose write fails", _mark_escape)
    result = explore(work, target=Target("mutant:escaping-mark", _EscapingMark, "test"))
    s1 = [v for v in result.counterexamples if v.invariant == "S1"]
    assert len(s1) == 1, result.counterexamples
    assert s1[0].got.startswith("create('/nowhere/x.json.ended')")
    assert s1[0].subject == "../../nowhere/x"
    assert explore(work, target=TARGETS["reference"]).ok


class _Spy(FileStateStorage):
    def __init__(self, fs: Any, base_dir: str) -> None:
        super().__init__(fs, base_dir)
        self.seen: dict[str, set[str]] = {}

    def __getattribute__(self, name: str) -> Any:
        attr = super().__getattribute__(name)
        methods = ("save", "load", "load_or_create", "exists", "mark_not_resumable", "delete")
        if name in methods:
            seen = super().__getattribute__("seen")

            def spy(*args: Any) -> Any:
                sid = args[0].session_id if isinstance(args[0], AgentState) else args[0]
                seen.setdefault(name, set()).add(sid)
                return attr(*args)

            return spy
        return attr


def test_hostile_ids_go_through_all_six_methods() -> None:
    spies: list[_Spy] = []

    def factory(fs: Any, base: str) -> _Spy:
        spies.append(_Spy(fs, base))
        return spies[-1]

    record(SCENARIOS["hostile-ids-every-method"], Target("spy", factory, "spy"))
    seen = spies[0].seen
    assert set(seen) == {"save", "load", "load_or_create", "exists", "mark_not_resumable", "delete"}
    assert all(set(HOSTILE_IDS) <= ids for ids in seen.values()), seen


def test_unsanitized_delete_is_caught_by_s1_and_only_through_the_new_workload() -> None:
    result = explore(SCENARIOS["hostile-ids-every-method"], target=MUTANTS["unsanitized-delete"])
    first = result.counterexamples[0]
    assert first.invariant == "S1"
    assert first.subject == "../victim"
    assert "/data/victim.json" in first.got
    # the old catalogue sent hostile ids through save only: the mutant passed it
    assert "S1" not in only("hostile-session-ids", "mutant:unsanitized-delete")
    for target in ("reference", "seed"):
        assert only("hostile-ids-every-method", target) == []


# --- C1: main absent, bak corrupt -------------------------------------------------------
def test_create_when_main_absent_is_caught_by_c1_on_a_missing_main_and_corrupt_bak() -> None:
    assert "C1" in only("missing-main-corrupt-bak", "mutant:create-when-main-absent")
    for target in ("reference", "seed"):
        assert only("missing-main-corrupt-bak", target) == []
    # before this workload, nothing in the catalogue had main absent and bak corrupt
    others = [n for n in SCENARIOS if n != "missing-main-corrupt-bak"]
    assert all(
        "C1" not in only(n, "mutant:create-when-main-absent")
        for n in others
        if "storage" in SCENARIOS[n].tags
    )


# --- P1: an unpaired file on disk ---------------------------------------------------------
@pytest.mark.parametrize("name", ["unpaired-main", "unpaired-main-good-bak"])
def test_load_skipping_the_pairing_check_is_caught_by_p1(name: str) -> None:
    result = explore(SCENARIOS[name], target=MUTANTS["load-skips-pairing"])
    v = result.counterexamples[0]
    assert v.invariant == "P1" and v.crash_point == 0
    assert v.crash_state["s1.json"].startswith("v3 document with an unpaired history")
    assert only(name, "reference") == []
    assert "P1" in only(name, "seed")  # SPEC.md §8: the seed keeps its load without the check


# --- I1: colliding ids ---------------------------------------------------------------------
def test_seed_loses_data_to_a_colliding_id_and_the_reference_refuses() -> None:
    seed = explore(SCENARIOS["colliding-ids"], target=TARGETS["seed"])
    assert seed.killed_by() == ["I1"]
    assert {v.subject for v in seed.counterexamples} == {"a b", "a_b"}
    # the end of the run: delete("a_b") took "a b"'s snapshot with it
    end = [v for v in seed.counterexamples if v.crash_point == seed.operations]
    assert [v.subject for v in end] == ["a b"]
    assert end[0].got.startswith("error session_not_found")
    ref = explore(SCENARIOS["colliding-ids"], target=TARGETS["reference"])
    assert ref.ok, ref.counterexamples[:1]
    refused = [c for c in record(SCENARIOS["colliding-ids"], TARGETS["reference"]).calls]
    assert [c.error for c in refused if c.session_id == "a_b"] == ["session_id_collision"] * 4


def test_overwrites_colliding_id_is_caught_by_i1() -> None:
    result = explore(SCENARIOS["colliding-ids"], target=MUTANTS["overwrites-colliding-id"])
    assert result.killed_by() == ["I1"], result.killed_by()


def test_i1_is_a_data_loss_finding_classified_before_r1() -> None:
    from crashpoint.scenarios.kinds.agent.checkers import Observation, expectation, judge
    from crashpoint.scenarios.kinds.agent.workload import Call, CallKind

    mine = Expect.saved(build_state(user("mine"), session_id="a b"))
    calls = [
        Call(0, CallKind.SAVE, "a b", 0, 3, saved=mine),
        Call(1, CallKind.DELETE, "a_b", 4, 6),
    ]
    exp = expectation(calls, None, "a b", 6)
    assert exp.collided
    verdict = judge(Observation(code="session_not_found"), exp, v1=False)
    assert verdict is not None and verdict[0] is Invariant.I1
    # before the other session's call began, the same loss is R1
    early = expectation(calls, None, "a b", 3)
    assert not early.collided
    assert judge(Observation(code="session_not_found"), early, v1=False)[0] is Invariant.R1  # type: ignore[index]
    # a session with nothing of its own may load the other's file as a collision
    other = expectation(calls[:1], None, "a_b", 3)
    assert judge(Observation(code="session_id_collision"), other, v1=False) is None
    assert severity_of("I1") == "data-loss"


def test_seed_cli_shows_i1_besides_e2(tmp_path: pathlib.Path) -> None:
    assert main(["explore", "--target", "seed", "--out", str(tmp_path)]) == 1
    report = json.loads((tmp_path / "report.json").read_text())
    killed = {i for s in report["scenarios"] for i in s["killed_by"]}
    assert {"I1", "E2"} <= killed
    entry = next(s for s in report["scenarios"] if s["name"] == "colliding-ids")
    assert entry["killed_by"] == ["I1"]


# --- severity ordering (SPEC.md §8) -----------------------------------------------------
def test_severity_classes_follow_spec_section_8() -> None:
    assert SEVERITIES == ("security", "data-loss", "invalid-history", "semantics", "warning")
    classes = {
        "security": {"S1", "S2"},
        "data-loss": {"R1", "V1", "D1", "C1", "F1", "I1", "A1", "A2", "A3", "A4"},
        "invalid-history": {"P1"},
        "semantics": {"E1", "E2", "N1", "H1", "T1"},
        "warning": {"A5"},
    }
    for cls, ids in classes.items():
        assert {severity_of(i) for i in ids} == {cls}
    assert {i.value for i in Invariant} <= set().union(*classes.values())
    assert severity_rank("S1") < severity_rank("R1") < severity_rank("P1") < severity_rank("E1")
    assert severity_rank("E1") < severity_rank("A5")


def test_seed_under_power_loss_headlines_r1_not_e1(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["explore", "--target", "seed", "--model", "power-loss", "--out", str(tmp_path)])
    assert code == 1
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["format"] == 2
    assert report["counterexample"]["invariant"] == "R1"
    out = capsys.readouterr().out
    assert "R1 (recoverable, data-loss)" in out
    for scenario in report["scenarios"]:
        ranks = [severity_rank(v["invariant"]) for v in scenario["violations"]]
        assert ranks == sorted(ranks), scenario["name"]
    md = (tmp_path / "report.md").read_text()
    assert md.index("## Minimal counterexample") < md.index("#### R1 (recoverable, data-loss)")


class _TwoBugs(DeleteMainFirst, EndedUnscoped):
    """A stale legacy marker (E2, semantics) and a delete that removes main first (D1,
    data loss): the E2 crash point comes first in the run."""


def _e2_then_d1(s: Session) -> None:
    s.save(build_state(user("one"), session_id="s2"))
    s.save(build_state(user("one"), user("two"), session_id="s2"))
    stale_ended_marker(s)
    s.delete("s2")


TWO_BUGS = Target("mutant:two-bugs", _TwoBugs, "E2 early, D1 late")
E2_THEN_D1 = Workload("e2-then-d1", "an E2 crash point before a D1 one", _e2_then_d1)


def test_assert_no_violations_raises_the_most_severe_first() -> None:
    result = explore(E2_THEN_D1, target=TWO_BUGS)
    assert set(result.killed_by()) == {"D1", "E2"}
    e2 = min(v.crash_point for v in result.counterexamples if v.invariant == "E2")
    d1 = min(v.crash_point for v in result.counterexamples if v.invariant == "D1")
    assert e2 < d1  # by crash point alone, E2 would headline
    with pytest.raises(AssertionError) as info:
        result.assert_no_violations()
    assert str(info.value).startswith("D1 (")
    assert result.counterexamples[0].crash_point == d1
    assert result.killed_by() == ["D1", "E2"]


def test_the_plugin_fails_with_the_most_severe_counterexample() -> None:
    from crashpoint.pytest_plugin import Explorer

    explorer = Explorer("test_x", models="process-crash", target=TWO_BUGS)
    with pytest.raises(pytest.fail.Exception) as info:
        explorer.check(E2_THEN_D1)
    assert str(info.value).split("\n")[1].startswith("D1 (deleted-stays-deleted)")


# --- counterexample renderings ----------------------------------------------------------
def test_a_future_version_file_is_not_rendered_valid_v3() -> None:
    doc = json.loads(encode_bytes(AgentState.new("s1")))
    doc["schemaVersion"] = 4
    data = json.dumps(doc).encode()
    assert "v3" not in describe_file(data, {})
    assert describe_file(data, {}).startswith("v4 (a future version")
    known = describe_file(data, {data: "the future version's save"})
    assert known.startswith("v4 (a future version)") and "valid" not in known


def test_alternatives_that_read_the_same_are_told_apart() -> None:
    a = Expect.saved(build_state(metadata={"title": "one"}))
    b = Expect.saved(build_state(metadata={"title": "two"}))
    assert a.describe() == b.describe()
    text = describe_alternatives([a, b])
    left, right = text.split(" or ")
    assert left != right
    assert describe_alternatives([Expect.not_found()]) == "error session_not_found"


def test_message_counts_are_singular_and_plural() -> None:
    assert "with 1 message (" in Expect.saved(build_state(user("a"))).describe()
    assert "with 2 messages (" in Expect.saved(build_state(user("a"), user("b"))).describe()
    assert "with 0 messages (" in Expect.saved(build_state()).describe()


def test_condemned_is_explained() -> None:
    state = build_state(user("a"), running=True, checkpoint="suspended")
    text = Expect(state=state, marked=True).describe()
    assert "marked not resumable" in text
    assert text.startswith("state with 1 message (isRunning=false")
    assert "saved with isRunning=true, checkpoint=suspended" in text


def test_an_empty_disk_and_an_empty_run_are_said_plainly() -> None:
    def nothing(s: Session) -> None:
        s.load("../s1")  # no file name: nothing to list but the disk's files

    work = Workload("nothing", "a load of nothing", nothing)

    class Ghost(FileStateStorage):
        def __init__(self, fs: Any, base_dir: str) -> None:
            super().__init__(fs, base_dir)

        def load(self, session_id: str) -> AgentState:
            return build_state(user("ghost"), session_id=session_id)

    result = explore(work, target=Target("mutant:ghost", Ghost, "loads a state nobody saved"))
    v = result.counterexamples[0]
    assert v.invariant == "R1" and v.crash_point == 0
    text = v.render()
    assert "(empty: no files)" in text
    assert "after (nothing)" not in text and "no crash: the run completed" not in text
    assert "no crash; the run issued no file operation" in text
    assert crash_point_words(3, "write(x)", "fsync(x)") == "after write(x), before fsync(x)"
    assert crash_point_words(0, "(nothing)", "create(x)").startswith("before the first operation")
    assert crash_point_words(5, "rename(a, b)", "(no crash: the run completed)") == (
        "no crash; the run completed (its last operation: rename(a, b))"
    )
    assert PROCESS_CRASH.name == v.model

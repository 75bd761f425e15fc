"""Every front end builds a Plan and runs it with ``run_plan`` (issue 19: one plan, one
runner of plans): ``explore`` (kind ``agent``, the catalogue's targets) and the zoo's rows
as ``verify`` does."""

from __future__ import annotations

from typing import Any

import pytest
from crashpoint._cli import main
from crashpoint.faultfs import get_model
from crashpoint.scenarios import kind_names
from crashpoint.scenarios.jobs import plan as plan_module
from crashpoint.scenarios.jobs.explore import KIND, plan_run_id, run_explore
from crashpoint.scenarios.jobs.plan import Plan, run_plan


def test_explore_runs_its_plan_through_run_plan(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    seen: list[Plan] = []
    real = plan_module.run_plan

    def spy(plan: Plan, factory: Any = None, **kw: Any) -> Any:
        seen.append(plan)
        return real(plan, factory, **kw)

    monkeypatch.setattr(plan_module, "run_plan", spy)
    code = main(
        ["explore", "--scenario", "three-saves", "--model", "process-crash", "--out", str(tmp_path)]
    )
    assert code == 0
    assert [(p.kind, p.target, p.workloads) for p in seen] == [
        (KIND, "reference", ("three-saves",))
    ]


def test_the_agent_kind_is_explores_own() -> None:
    # run by explore; never offered as `verify --kind` / `explain --kind`
    assert "agent" not in kind_names()
    assert main(["verify", "examples/stores/jsonstore.py:JsonStore", "--kind", "agent"]) == 2


def test_run_plan_of_the_agent_kind_is_run_explore() -> None:
    plan = Plan(KIND, "seed", (get_model("ext4"),), workloads=("three-saves",))
    via_plan = run_plan(plan)
    direct = run_explore(plan)
    assert via_plan.kind == KIND == "agent" and via_plan.run_id == plan_run_id(plan)
    assert [c.invariant for c in via_plan.counterexamples] == [
        c.invariant for c in direct.counterexamples
    ]
    assert via_plan.results and all(r.crash_points for r in via_plan.results)


def test_each_zoo_row_is_plans_run_by_run_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    from crashpoint.scenarios import MUTANTS, SCENARIOS, kill_matrix
    from crashpoint.scenarios.jobs import zoo

    seen: list[tuple[str, str, bool]] = []
    real = zoo.run_plan

    def spy(plan: Plan, factory: Any = None, **kw: Any) -> Any:
        seen.append((plan.kind, plan.target, plan.faults))
        return real(plan, factory, **kw)

    monkeypatch.setattr(zoo, "run_plan", spy)
    rows, _ = kill_matrix(
        targets=[MUTANTS["no-dir-fsync"]], workloads=[SCENARIOS["three-saves"]], jobs=1
    )
    assert seen == [("agent", "mutant:no-dir-fsync", False), ("agent", "mutant:no-dir-fsync", True)]
    assert rows[0].verdict == "killed"


def test_the_zoo_refuses_a_target_it_cannot_look_up() -> None:
    import dataclasses

    from crashpoint.scenarios import MUTANTS, kill_matrix

    stranger = dataclasses.replace(MUTANTS["no-dir-fsync"], name="mutant:stranger")
    with pytest.raises(KeyError):
        kill_matrix(targets=[stranger])


@pytest.mark.parametrize("kind", ["document", "state-storage"])
def test_a_plan_with_a_transport_is_handed_to_it(kind: str) -> None:
    """``--exec`` is a transport of the document and state-storage kinds, not a kind of
    its own: their front ends hand a plan carrying one to it (and the plan runner wraps
    it as any run: canary, run id)."""
    from crashpoint.scenarios.jobs.verdict import VerifyResult

    got: list[Plan] = []

    class Fake:
        def verify(self, plan: Plan) -> VerifyResult:
            got.append(plan)
            return VerifyResult("fake", plan.kind, "exec", [m.name for m in plan.models])

    plan = Plan(kind, "--exec", (get_model("ext4"),), options={"transport": Fake()})
    result = run_plan(plan)
    assert got == [plan] and result.target == "fake" and result.kind == kind
    assert result.run_id == plan.run_id() and len(result.run_id) == 16


def test_a_transport_is_refused_by_a_kind_that_takes_none() -> None:
    plan = Plan(KIND, "reference", (get_model("ext4"),), options={"transport": object()})
    with pytest.raises(ValueError, match="takes no option transport"):
        run_plan(plan)

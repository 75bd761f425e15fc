"""Issue 24, item 3: a sampling mode with a stated seed and a count of what was not
examined (``--sample RATE --sample-seed N``)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from crashpoint._cli import main
from crashpoint.faultfs import get_model, with_sample
from crashpoint.scenarios.jobs.plan import Plan, run_plan
from crashpoint.scenarios.targets.user import load_factory

STORE = Path(__file__).resolve().parents[2] / "examples" / "stores" / "jsonstore.py"
EXPLORE = ["explore", "--model", "posix", "--scenario", "three-saves", "--jobs", "1"]


def _digests(n: int) -> list[str]:
    return [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)]


def test_a_sample_is_its_seeds_and_its_rates() -> None:
    posix = get_model("posix")
    assert all(posix.examines(d) for d in _digests(50))  # no sample: every state
    half = with_sample(posix, 0.5, 7)
    chosen = {d for d in _digests(4000) if half.examines(d)}
    assert 1800 < len(chosen) < 2200
    assert chosen == {d for d in _digests(4000) if with_sample(posix, 0.5, 7).examines(d)}
    assert chosen != {d for d in _digests(4000) if with_sample(posix, 0.5, 8).examines(d)}
    # a smaller rate under the same seed examines a subset of a larger one
    tenth = {d for d in _digests(4000) if with_sample(posix, 0.1, 7).examines(d)}
    assert tenth < chosen
    assert half.options()["sample"] == 0.5 and half.options()["sample_seed"] == 7
    assert "sample" not in posix.options()  # a full run's options are unchanged
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ValueError, match="sample rate"):
            with_sample(posix, bad)


def _explore(tmp_path: Path, name: str, *extra: str) -> tuple[int, dict[str, Any], str]:
    out = tmp_path / name
    code = main([*EXPLORE, *extra, "--out", str(out)])
    report = json.loads((out / "report.json").read_text())
    return code, report, (out / "report.md").read_text()


def test_a_sampled_run_counts_what_it_did_not_examine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, full, _ = _explore(tmp_path, "full")
    assert code == 0 and full["exhaustive"] and full["totals"]["not_examined"] == 0
    assert full["scenarios"][0]["sample"] is None
    capsys.readouterr()
    code, part, md = _explore(tmp_path, "part", "--sample", "40%", "--sample-seed", "3")
    out = capsys.readouterr().out
    t = part["totals"]
    assert code == 0 and part["exhaustive"] is False
    assert 0 < t["distinct_states"] < full["totals"]["distinct_states"]
    assert t["distinct_states"] + t["not_examined"] == full["totals"]["distinct_states"]
    assert part["scenarios"][0]["sample"] == {"rate": 0.4, "seed": 3}
    line = f"sampled: {t['not_examined']:,} distinct crash states not examined (rate 0.4, seed 3)"
    assert line in out and line in md
    # the same seed judges the same states; --require-exhaustive refuses a sample
    code, again, _ = _explore(tmp_path, "again", "--sample", "0.4", "--sample-seed", "3")
    assert again["totals"] == t
    code, _, _ = _explore(tmp_path, "req", "--sample", "0.4", "--require-exhaustive")
    assert code == 1


def test_a_sample_that_leaves_out_every_state_verified_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report, _ = _explore(tmp_path, "none", "--sample", "1e-12")
    assert code == 1 and report["examined_nothing"] is True
    assert report["totals"]["distinct_states"] == 0 and report["totals"]["not_examined"] > 0
    assert "examined no crash state" in capsys.readouterr().err
    assert report["exhaustive"] is False


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        (["--sample", "1e-12"], "(the sample left out every one)"),
        (["--shard", "7/50"], "(shard 7/50 holds none of this run's)"),
    ],
)
def test_verify_that_examined_nothing_says_so_everywhere(
    extra: list[str], why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a new user's find: verify exited 1 but said nothing, its report "exhaustive": true
    out = tmp_path / "o"
    args = ["verify", f"{STORE}:JsonStore", "--workload", "first-save", *extra]
    assert main([*args, "--out", str(out)]) == 1
    captured = capsys.readouterr()
    assert f"crashpoint: examined no crash state {why}: nothing was verified" in captured.err
    assert "no crash state was examined: nothing was verified" in captured.out
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["examined_nothing"] is True and report["exhaustive"] is False
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "no crash state examined: nothing was verified" in md


@pytest.mark.parametrize(
    "args",
    [
        ["--sample", "0"],
        ["--sample", "1.5"],
        ["--sample", "x"],
        ["--sample", "150%"],
        ["--sample-seed", "4"],
        ["--sample", "0.5", "--sample-seed", "-1"],
    ],
)
@pytest.mark.parametrize("command", ["explore", "verify"])
def test_a_bad_sample_is_a_usage_error(
    command: str, args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head = EXPLORE if command == "explore" else ["verify", f"{STORE}:JsonStore"]
    assert main([*head, *args, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "--sample" in err and "Traceback" not in err
    assert not (tmp_path / "o" / "report.json").exists()


def test_a_sampled_verdict_finds_only_the_full_runs_findings_in_examined_states() -> None:
    factory = load_factory(f"{STORE}:InPlaceJsonStore")
    full_model = get_model("ext4")
    sampled_model = with_sample(full_model, 0.5, 11)

    def verdict(model: Any) -> Any:
        plan = Plan("document", f"{STORE}:InPlaceJsonStore", (model,), workloads=("resize",))
        return run_plan(plan, factory)

    full, part = verdict(full_model), verdict(sampled_model)
    whole = {(c.invariant, c.crash_point, c.state_digest) for c in full.counterexamples}
    some = {(c.invariant, c.crash_point, c.state_digest) for c in part.counterexamples}
    assert some and some < whole  # the broken store is still caught, and nothing new
    assert all(sampled_model.examines(d) for _, _, d in some)
    assert {x for x in whole if sampled_model.examines(x[2])} == some
    (f,), (p,) = full.results, part.results
    assert p.distinct_states + p.not_examined == f.distinct_states
    assert p.state_ids | p.unsampled == f.state_ids and not p.state_ids & p.unsampled
    assert not p.exhaustive and f.exhaustive == (f.cut == 0)

"""Issue 24, item 3, through ``--exec``: a crash state ``--sample`` leaves out is counted,
never loaded (the load processes are what a sample saves)."""

from __future__ import annotations

import os
import shutil
import sys

import pytest
from crashpoint.faultfs import parse_models, with_sample
from crashpoint.scenarios.jobs.exec import verify_exec

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STORE = f"{sys.executable} {ROOT}/examples/exec/pystore.py InPlaceJsonStore"

pytestmark = pytest.mark.exec


def _verify(rate: float | None):  # type: ignore[no-untyped-def]
    models = [with_sample(m, rate, 5) for m in parse_models("ext4")]
    return verify_exec(
        f"{STORE} save {{dir}} {{value}}",
        f"{STORE} load {{dir}}",
        models=models,
        workloads=["resize"],
        jobs=2,
        shrink=False,
    )


def test_a_sampled_exec_run_loads_fewer_states_and_counts_the_rest() -> None:
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed")
    full, full_facts = _verify(None)
    part, part_facts = _verify(0.3)
    (f,), (p,) = full.results, part.results
    assert p.not_examined > 0 and p.distinct_states + p.not_examined == f.distinct_states
    assert part_facts.processes < full_facts.processes
    whole = {(c.invariant, c.crash_point, c.state_digest) for c in full.counterexamples}
    some = {(c.invariant, c.crash_point, c.state_digest) for c in part.counterexamples}
    assert some == {x for x in whole if p.state_ids and x[2] in p.state_ids}
    assert some, "the in-place store's torn document is still caught"

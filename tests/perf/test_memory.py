"""Issue 11: memory that does not grow with the number of crash states.

A child process explores 64 saves of a 1,000-message state (about 140 KB each) under
``power-loss-reorder`` — thousands of distinct crash states, each holding one or two
such files — and reports its peak RSS (``ru_maxrss``). The bound is the issue's goal,
200 MiB; before the change the same exploration peaked at about 2.5 GiB (every
decoded state and every crash state's files were kept to the end). A memory bound,
not a timing assertion.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

PEAK_RSS_MIB = 200

_CHILD = """
import resource
from crashpoint.scenarios import Workload, explore
from crashpoint.scenarios.kinds.agent.catalogue import assistant, build_state, user

def run(s):
    history = [
        user(f"question {i}: " + "q" * 70) if i % 2 == 0 else assistant(f"answer {i}: " + "a" * 70)
        for i in range(1000)
    ]
    for i in range(SAVES):
        history += [user(f"more {i}"), assistant(f"reply {i}")]
        s.save(build_state(*history, running=i < SAVES - 1))

result = explore(Workload("big", "big saves", run), model="power-loss-reorder", target="reference")
print(result.distinct_states, len(result.counterexamples))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def peak_rss(saves: int) -> tuple[int, int, float]:
    """(distinct crash states, violations, peak RSS in MiB) of a fresh process exploring
    ``saves`` saves of 1,000 messages under power-loss-reorder on the reference target."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD.replace("SAVES", str(saves))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    distinct, violations = (int(x) for x in lines[0].split())
    return distinct, violations, float(lines[1])


@pytest.mark.long
def test_peak_rss_of_a_big_exploration_is_bounded() -> None:
    distinct, violations, rss = peak_rss(64)
    assert distinct > 4000  # thousands of states, each with ~140 KB files: not a toy run
    assert violations == 0  # the reference target survives it
    assert rss <= PEAK_RSS_MIB, f"peak RSS {rss:.0f} MiB > {PEAK_RSS_MIB} MiB ({distinct} states)"
